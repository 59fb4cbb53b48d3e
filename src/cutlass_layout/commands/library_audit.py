"""audit of CUTLASS's own kernel library: every kernel its generator keeps for an arch, laid out.

``audit_library(src)`` enumerates what CUTLASS's profiler would build
(:func:`cutlass_layout.installs.kernel_library.enumerate_kernels`: the library's ``Manifest`` and
``Generate...`` functions, its own name filters), lays out each kernel's
``<name>_base::SharedStorage`` from the C++ the library's own emitter writes
(:func:`cutlass_layout.installs.kernel_library.lay_out_kernels`, batches on
:class:`cutlass_layout.core.pool.Pool`, each report cached), and sets beside each what the
generator assumed (``CalculateSmemUsage``: A and B tiles times its stage count, 0 for auto
stages; pruned only against ``SharedMemPerCC``, which has no SM120 entry). The kernels it keeps
that do not fit lead the table (:func:`cutlass_layout.commands.audit.sort_tactics`).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, replace
from typing import cast

from ..core.progress import part
from ..errors import BadInput
from ..installs.kernel_library import (
    BATCH_KERNELS,
    FAMILY,
    LIBRARY_ARCHS,
    LibraryKernel,
    Selection,
    batches,
    builder_args,
    cached_reports,
    emitted_shape,
    enumerate_kernels,
    generator_archs,
    lay_out_batch,
    missing_generators,
    stage_spec,
    store_report,
)
from ..model import AuditResult, AuditSet, Constant, LayoutReport, LibraryTactic
from ..installs.naming import element_kind
from ..subjects.archs import ALL, arch_list
from .audit.command import interruption
from .audit.filters import asked_of, filter_tests, tactic_filter, unmatched_filters
from .audit.finish import shard_part, sort_tactics
from .shard import check_shard, first_capacity, part_of, ranked_tactics, shard_capacities, shard_of


def tag_name(spelled: str) -> str:
    """A schedule tag's own name: ``cutlass::gemm::KernelTmaWarpSpecializedCooperative`` ->
    ``KernelTmaWarpSpecializedCooperative`` (namespaces and template arguments left out)."""
    return re.sub(r"<.*", "", spelled.strip()).rsplit("::", 1)[-1]


def tactic_of(k: LibraryKernel, generators: tuple[str, ...]) -> LibraryTactic:
    """The :class:`~cutlass_layout.model.LibraryTactic` of a kernel (no report yet): named by
    its procedural name, its types, tile and schedules read from the C++ its emitter wrote
    (:func:`cutlass_layout.installs.kernel_library.builder_args`), the library's own view beside."""
    main = builder_args(k.instance or "", "gemm")
    epi = builder_args(k.instance or "", "epilogue")
    get = lambda args, i: args[i] if len(args) > i else None  # noqa: E731
    tile = emitted_shape(get(main, 9) or "") or (list(k.tile) or None)
    cluster = list(k.cluster) if k.cluster and all(c > 0 for c in k.cluster) else None
    return LibraryTactic(
        family=FAMILY,
        name=k.name,
        a=element_kind(get(main, 2) or ""),
        b=element_kind(get(main, 5) or ""),
        out=element_kind(get(epi, 10) or ""),
        fusion=None,
        swap_ab=None,
        tile=tile,
        cluster=cluster,
        kernel=(
            "grouped"
            if str(k.gemm_kind).startswith("Grouped")
            else "sparse"
            if str(k.gemm_kind).startswith("Sparse")
            else "dense"
        ),
        schedule=tag_name(get(main, 12) or "") or k.kernel_schedule,
        epilogue_schedule=tag_name(get(epi, 13) or "") or k.epilogue_schedule,
        file="generator.py:" + ",".join(generators),
        line=None,
        launcher=k.base,
        gemm_kind=k.gemm_kind,
        stage_spec=stage_spec(k, get(main, 11)),
        library_stages=k.stages,
        tile_scheduler=k.tile_scheduler,
        estimate_kib=k.estimate_kib,
        estimate_error=k.estimate_error,
        estimate_capacity_kib=dict(k.capacity_kib or {}),
    )


def nothing_kept(version: str, arch: str, selection: Selection, generators) -> str:
    """The line for a selection the library's manifest keeps no kernel of."""
    how = selection.words()
    why = (
        " (--ignore-kernels takes effect only with --kernels set)"
        if selection.ignore_kernels and not selection.kernels
        else ""
    )
    return (
        f"CUTLASS {version}'s kernel generator ({', '.join(generators)}) keeps no kernel for {arch} "
        f"with {how}{why}: its Manifest.filter matched none of the names it generates (each filter "
        "is *-separated parts that must appear in the name in order, comma-separated filters are "
        "alternatives)"
    )


def audit_library(
    src,
    arch: str = "sm120",
    *,
    selection: Selection = Selection(),
    grep: str | None = None,
    cuda_path=None,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
    executor=None,
    strict: bool = True,
    shard: tuple[int, int] | None = None,
    **config_values,
) -> AuditResult:
    """Lay out every kernel CUTLASS's kernel library at ``src`` keeps for ``arch``.

    Args:
        src: ``nvidia-cutlass==VERSION``, its ``.whl``, a folder with ``cutlass_library``,
            or a CUTLASS checkout (:func:`cutlass_layout.sources.library.resolve_kernel_library`), or
            a resolved :class:`~cutlass_layout.sources.library.KernelLibrary`.
        arch: ``sm120`` (``--architectures 120a``, ``GenerateSM120``), ``sm121``, ``sm100``,
            ``sm103`` (``GenerateSM100``) or ``sm90`` (``GenerateSM90``).
        selection: the library's own name filters (:class:`~cutlass_layout.installs.kernel_library.Selection`).
        grep: keep the kernels whose name contains this (case-insensitive).
        cuda_path, jobs, use_cache, progress, executor: as for the flashinfer audit
            (:func:`cutlass_layout.commands.audit.audit`; the reports come back and are cached here).
        config_values: ``kernel`` (dense, grouped, sparse), ``a``, ``b``, ``tile``, ``cluster``,
            ``stages``, ``d``, ``schedule``, as the flashinfer audit takes them.
        strict: a selection the library keeps no kernel of (or a library with no generator
            for the arch) is bad input (the default); False: an audit with no tactics, the
            reason its first note (``diff --audit``: a side that
            keeps none has its kernels all added or removed).
        shard: ``(i, n)``: lay out shard ``i`` of ``n`` alone: the kernels the selection and
            filters keep, by procedural name (sorted), cut into ``n`` runs of about as many
            (:func:`~cutlass_layout.commands.shard.shard_of`); the result holds them and its
            :attr:`~cutlass_layout.model.AuditResult.shard` (:func:`merge_shards` joins them).

    Returns:
        An :class:`~cutlass_layout.model.AuditResult` whose tactics are
        :class:`~cutlass_layout.model.LibraryTactic` (bytes throughout; ``estimate_kib`` the
        generator's own figure); over capacity first. Kernels the library emits with an
        emitter other than the 3.x one (2.x kernels, convolutions on SM90) are counted in a
        note, not laid out.

    Raises:
        BadInput: a bad ``shard``; an arch the library is not audited for; no library at ``src``; a library
            whose ``generator.py`` has no generator for the arch (3.8.0 and ``GenerateSM120``);
            the generator failed or ran past its limits; a selection or filter that keeps no
            kernel (the message says why, unless ``strict`` is False); a bad filter value.
    """
    from ..engine import loop as engine
    from ..core.pool import default_jobs
    from ..engine.schedule import Schedule
    from ..sources.library import KernelLibrary, resolve_kernel_library

    t0 = time.perf_counter()
    arch = library_arch(arch)
    _, generators, clang_arch = LIBRARY_ARCHS[arch]
    tests = filter_tests(**config_values)  # bad values: an error before any work
    shard = None if shard is None else check_shard(shard)
    early = tactic_filter(**{k: v for k, v in config_values.items() if k != "stages"})
    lib = src if isinstance(src, KernelLibrary) else resolve_kernel_library(src)
    tgt = engine.target(lib.tree, cuda_path)
    notes: list[str] = []
    kernels, filters = _generated_kernels(lib, arch, selection, generators, tgt, use_cache, strict, notes)
    t_enum = time.perf_counter()
    chosen, ranks, unmatched = _chosen_kernels(kernels, generators, grep, tests, early, shard, notes)
    reps: list[LayoutReport | None] = (
        cached_reports(tgt, [k for k, _ in chosen], clang_arch, lib.util_include) if use_cache else [None] * len(chosen)
    )
    todo = [i for i, r in enumerate(reps) if r is None]
    stats = {
        "kernels": len(kernels),
        "laid_out": len(chosen),
        "cached": len(chosen) - len(todo),
        "parsed": 0,
        "batches": 0,
        "parse_cpu_seconds": 0.0,
        "enumerate_seconds": round(t_enum - t0, 2),
    }
    prov = tgt.provenance(clang_arch)
    if todo:
        with Schedule(
            min(default_jobs(jobs, executor), len(todo)),
            executor=executor,
            reads=[lib.tree.include_root, tgt.cuda.path, *filter(None, [lib.util_include])],
            label=f"audit {arch}: laying out CUTLASS library kernels",
            total=len(todo),
            progress=progress,
        ) as workers:
            # each batch settles its kernels that fail and those whose units had no error; the
            # ones that only looked clean beside a failing one are laid out again together,
            # those of all batches (numbers only come from a unit without errors)
            first = batches(todo, workers.jobs)
            tasks = (
                (
                    (True, group),
                    lay_out_batch,
                    (tgt, [asdict(chosen[i][0]) for i in group], clang_arch, lib.util_include, True),
                )
                for group in first
            )
            left, deferred = len(first), []
            for (was_first, group), (dicts, cpu) in workers.run(tasks):
                stats["batches"] += 1
                stats["parse_cpu_seconds"] += cpu
                left -= was_first
                for i, d in zip(group, dicts):
                    if d is None:
                        deferred.append(i)
                        continue
                    rep = replace(LayoutReport.from_dict(d), provenance=prov)
                    reps[i] = rep
                    store_report(tgt, chosen[i][0], clang_arch, rep, lib.util_include)
                    stats["parsed"] += 1
                    workers.advance(1)
                while len(deferred) >= BATCH_KERNELS or (deferred and not left):
                    again, deferred = deferred[:BATCH_KERNELS], deferred[BATCH_KERNELS:]
                    kernels_again = [asdict(chosen[i][0]) for i in again]
                    workers.submit((False, again), lay_out_batch, tgt, kernels_again, clang_arch, lib.util_include)
    stats["parse_cpu_seconds"] = round(stats["parse_cpu_seconds"], 2)
    ranked = [(rank, replace(t, report=rep)) for rank, (_, t), rep in zip(ranks, chosen, reps)]
    tree = asdict(prov)  # the library's origin is what the user named; the tree's is kept beside
    provenance = {
        **tree,
        "cutlass_origin": tree["origin"],
        "library": "cutlass_library",
        "version": lib.version,
        "origin": lib.origin,
        "root": str(lib.root),
        "fingerprint": lib.fingerprint,
        "generators": list(generators),
        "architectures": LIBRARY_ARCHS[arch][0],
        "selection": selection.request(),
        "manifest_filters": filters,
    }
    asked = asked_of(config_values, archs=[arch], selection=selection.request(), grep=grep)
    parts = {"notes": notes, "unmatched": unmatched}  # the same in every shard: read before the layouts
    result = finish_library(provenance, arch, ranked, asked, parts)
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    result.stats = stats
    if shard is not None:
        result.shard = shard_part(shard, asked, ranked, result, parts)
    return result


def _generated_kernels(
    lib, arch: str, selection: Selection, generators, tgt, use_cache: bool, strict: bool, notes: list[str]
) -> tuple[list, dict]:
    """``(kernels, manifest filters)``: what the library's generator keeps for ``arch``
    (:func:`~cutlass_layout.installs.kernel_library.enumerate_kernels`); none, with the reason
    in ``notes`` (or raised as :class:`BadInput` where ``strict``), for a library without the
    arch's generator or a selection that keeps nothing."""
    missing = missing_generators(lib, generators)
    known = generator_archs(lib)
    why = None
    if missing:  # an older library than the arch: its generator would fail on the arch's name
        why = (
            f"CUTLASS {lib.version}'s kernel library has no {', '.join(missing)} (its generator.py): it "
            f"emits no {arch} kernel"
        )
    elif known is not None and arch not in known:  # a generator that does not know the arch
        why = (
            f"arch {arch!r}: CUTLASS {lib.version}'s kernel generator does not take --architectures "
            f"{LIBRARY_ARCHS[arch][0]} (its generator.py's blackwell_arch_list); it takes "
            f"{', '.join(known) or 'none of ' + ', '.join(LIBRARY_ARCHS)}"
        )
    if why is not None:
        if strict:
            raise BadInput(why)
        kernels: list[LibraryKernel] = []
        filters: dict = {}
        notes.append(why)
    else:
        kernels, filters = enumerate_kernels(lib, arch, selection, cuda_version=tgt.cuda.version, use_cache=use_cache)
        if not kernels:
            if strict:
                raise BadInput(nothing_kept(lib.version, arch, selection, generators))
            notes.append(nothing_kept(lib.version, arch, selection, generators))
    return kernels, filters


def _chosen_kernels(
    kernels: list, generators, grep: str | None, tests: dict, early, shard, notes: list[str]
) -> tuple[list, list, list]:
    """``(chosen, ranks, unmatched)``: the CUTLASS 3.x GEMMs of ``kernels`` (the others
    counted in ``notes``) that the filters (``early``), ``grep`` and the ``shard`` keep, as
    ``(kernel, tactic)``; each one's place in the generator's list (``[i]``); and the filters
    that matched none of them."""
    layable = [k for k in kernels if k.layable]
    others = [k for k in kernels if not k.layable]
    if others:
        kinds = sorted({f"{k.operation_kind}/{k.gemm_kind} ({k.emitter})" for k in others})
        notes.append(
            f"{len(others)} of the {len(kernels)} kernels the generator keeps are not CUTLASS 3.x "
            f"GEMMs and were not laid out: {'; '.join(kinds)}"
        )
    pool = [tactic_of(k, generators) for k in layable]
    unmatched = unmatched_filters(pool, grep, {k: v for k, v in tests.items() if k != "stages"})
    numbered = [
        (i, k, t)
        for i, (k, t) in enumerate(zip(layable, pool))
        if early(t) and (not grep or grep.lower() in t.id.lower())
    ]
    if shard is not None:  # by procedural name
        names = sorted(range(len(numbered)), key=lambda j: numbered[j][2].id)
        mine = {names[p] for p in shard_of([1] * len(names), shard)}
        numbered = [c for j, c in enumerate(numbered) if j in mine]
    ranks = [[i] for i, _, _ in numbered]  # the kernel's place in the generator's list
    chosen = [(k, t) for _, k, t in numbered]
    return chosen, ranks, unmatched


def finish_library(
    provenance: dict,
    arch: str,
    ranked: list[tuple[list, LibraryTactic]],
    asked: dict,
    parts: dict,
    capacities: dict[int, Constant] | None = None,
) -> AuditResult:
    """The :class:`~cutlass_layout.model.AuditResult` of the kernels of CUTLASS's library laid
    out (``ranked``: ``(rank, kernel)``, rank its place in the generator's list) for an audit,
    a shard of one or the merge of all of them: ``--stages`` applied (it needs the layouts),
    the notes (``parts["notes"]``, read before the layouts; whether the generator's own
    pruning has a capacity for the arch, the kernels with the builder's stage count, the
    filters that matched nothing: ``parts["unmatched"]`` and ``--stages``'s), the capacity (the
    first kept kernel's, by rank: its report's, or for a merge ``capacities``',
    :func:`~cutlass_layout.commands.shard.shard_capacities`) and the order. The one tail of :func:`audit_library` and of
    its shards' merge (:func:`merge_shards`)."""
    tactics = [t for _, t in sorted(ranked, key=lambda x: x[0])]
    notes, unmatched = list(parts["notes"]), list(parts["unmatched"])
    stages = asked["filters"].get("stages")
    if stages:
        unmatched += unmatched_filters(tactics, None, {"stages": filter_tests(stages=stages)["stages"]})
        keep = tactic_filter(stages=stages)
        tactics = [t for t in tactics if keep(t)]
    if tactics and not any(t.estimate_capacity_kib for t in tactics):
        notes.append(
            f"the generator's own pruning (CalculateSmemUsage against SharedMemPerCC) has no "
            f"capacity for {arch}'s kernels: it dropped none of them"
        )
    auto = sum(1 for t in tactics if t.library_stages == 0)
    if auto:
        notes.append(
            f"{auto} kernel(s) let the builder choose the stage count: the generator's estimate "
            "for them is 0 KiB (CalculateSmemUsage multiplies by the library's stage count, 0)"
        )
    notes += [u["note"] for u in unmatched]
    capacity = first_capacity(tactics, capacities)
    return AuditResult(
        provenance=provenance,
        arch=arch,
        capacity=capacity,
        tactics=sort_tactics(tactics),
        sources=[],
        notes=notes,
        families=[FAMILY],
        unmatched=unmatched,
        asked=asked,
    )


def merge_shards(shards: list[AuditResult]) -> AuditResult:
    """The audit of CUTLASS's library from all its shards' results (read from their JSON, by
    index): their kernels, kept and dropped by ``--stages``, in the generator's order
    (:func:`~cutlass_layout.commands.shard.ranked_tactics`), finished as :func:`audit_library`
    finishes (:func:`finish_library`)."""
    first = shards[0]
    # a library audit's shards hold its tactics (LibraryTactic.from_dict, by their family)
    ranked = cast(list[tuple[list, LibraryTactic]], ranked_tactics(shards))
    return finish_library(
        first.provenance, first.arch, ranked, part_of(first).asked, part_of(first).parts, shard_capacities(shards)
    )


def library_arch(arch) -> str:
    """``arch`` as :data:`~cutlass_layout.installs.kernel_library.LIBRARY_ARCHS` names it.

    Raises:
        BadInput: an arch the library is not audited for; ``all``, which it does not take
            (its generator keeps tens of thousands of kernels across the arches: name them).
    """
    arch = str(arch).strip().lower()
    if arch == ALL:
        raise BadInput(
            f"arch {ALL!r}: CUTLASS's kernel library is audited for the arches named "
            f"(its generator keeps 26,164 kernels for SM100 alone, nvidia-cutlass 4.2.0.0's "
            f"default set): name them, of {', '.join(LIBRARY_ARCHS)}"
        )
    if arch not in LIBRARY_ARCHS:
        raise BadInput(f"arch {arch!r}: CUTLASS's library is audited for {', '.join(LIBRARY_ARCHS)}")
    return arch


def audit_library_archs(src, archs, **kwargs) -> AuditSet:
    """:func:`audit_library` of several named arches of the library at ``src``, resolved
    once; each arch its own audit, in the order asked.

    Args:
        src: as :func:`audit_library` takes it.
        archs: arches of :data:`~cutlass_layout.installs.kernel_library.LIBRARY_ARCHS` (a sequence, or
            one str); ``all`` is refused.
        kwargs: as :func:`audit_library` takes them, for every arch.

    Returns:
        An :class:`~cutlass_layout.model.AuditSet`, one result per arch.

    Raises:
        BadInput: no arch, ``all``, an arch the library is not audited for (each before the
            library is read); whatever :func:`audit_library` raises for an arch.
    """
    from ..sources.library import KernelLibrary, resolve_kernel_library

    asked = [library_arch(a) for a in arch_list(archs)]
    if kwargs.get("shard") is not None:
        check_shard(kwargs["shard"])
    lib = src if isinstance(src, KernelLibrary) else resolve_kernel_library(src)
    results: list[AuditResult] = []
    t0 = time.monotonic()
    for i, a in enumerate(asked):
        try:
            with part(i, asked, f"auditing CUTLASS {lib.version}'s kernel library for {a}", t0):
                results.append(audit_library(lib, a, **kwargs))
        except KeyboardInterrupt:
            if not results:
                raise
            raise interruption(results, asked[i:], []) from None
    for r in results:
        if r.shard is not None:  # what its merge needs: the arches asked
            part_of(r).asked["archs"] = asked
    return AuditSet(results=results)


__all__ = ["audit_library", "audit_library_archs", "finish_library", "library_arch", "merge_shards", "tactic_of"]
