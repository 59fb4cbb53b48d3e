"""The audit command: :func:`audit` of one arch as a page of named steps (what the install
builds, the plan of its sources, the results cache, the parses, the tactics, the tail, the fix
search), and :func:`audit_archs` of several."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from ...core.progress import audit_label, part
from ...errors import BadInput, Interrupted, NothingForArch
from ...model import AuditResult, AuditSet, Tactic
from ...subjects.archs import ALL, arch_list, audit_arch, every_arch
from ..shard import check_shard
from .filters import FILTER_KEYS, asked_of, filter_tests, unknown_family
from .finish import audit_parts, audit_provenance, find_tactic, finish_audit, shard_part
from .fixes import search_fixes, tactic_params
from .judge import judge_sources
from .plan import plan_sources, read_builds
from .run import cached_results, lay_out, lay_out_sm80
from .tactics import Streamer, name_tactics


def audit(
    src=None,
    arch: str = "sm120",
    *,
    family: str | None = None,
    grep: str | None = None,
    cuda_path=None,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
    strict_family: bool = True,
    cached_only: bool = False,
    executor=None,
    shard: tuple[int, int] | None = None,
    on_tactic: Callable[[str, Tactic], None] | None = None,
    params_for: str | None = None,
    **config_values,
) -> AuditResult | None:
    """Lay out every CUTLASS GEMM kernel that the flashinfer at ``src`` builds for ``arch``.

    Args:
        src: a flashinfer install: site-packages or package dir, ``.whl``,
            ``flashinfer-python==VERSION``, or None for the one installed here
            (:func:`cutlass_layout.sources.flashinfer.resolve_flashinfer`), or a resolved
            :class:`~cutlass_layout.sources.flashinfer.FlashinferInstall`.
        arch: ``sm120`` (default), ``sm121`` (SM120's builds: it shares their cached
            results), ``sm100``, ``sm103`` (each its own builders: flashinfer names them
            ``..._sm100_...`` and ``..._sm103_...``) or ``sm90``.
        family: keep only tactics of this family (``moe``, or a JIT module name); one the
            install does not build is refused, listing those it does (``strict_family=False``:
            no tactics instead, as a diff of two installs needs).
        grep: keep only tactics whose id, name, launcher or file contains this text
            (case-insensitive).
        cuda_path: CUDA headers (see :func:`cutlass_layout.sources.cuda.find_cuda`).
        jobs: worker processes (default: the CPUs, or the executor's worker threads);
            use_cache: read cached results.
        executor: where the parses run: None (this machine's forked workers) or an
            executor (:func:`cutlass_layout.core.dask.executor`: a Dask cluster); the
            results come back here and are cached here.
        progress: progress on stderr (the install's generator, the parses); without it,
            progress shows where it is turned on (:func:`cutlass_layout.core.progress.show_progress`).
        cached_only: run and parse nothing: the result from the results cache (the install's
            builders' answer, every source's layouts; the runtime candidates where cached),
            or None where any of it is not cached.
        config_values: ``kernel``, ``a``, ``b``, ``tile``, ``cluster``, ``stages``, ``d``,
            ``schedule`` as ``layout`` takes them (``tile="128x256x64B"``, lists allowed):
            keep only the tactics that match (:func:`tactic_filter`).
        shard: ``(i, n)``: lay out shard ``i`` of ``n`` of the work alone
            (:func:`~cutlass_layout.commands.shard.shard_of`): the install's sources for the
            arch in their order (those skipped or not read included, so each is in one shard)
            and the ``moe_sm80`` family as one unit after them, cut into ``n`` runs of about
            equal estimated kernels (:func:`~cutlass_layout.installs.kernels.estimate_kernels`; the
            family's kernel count), the same on every machine for the same install, arch and
            filters. The runtime's candidate list is read, and fixes searched, where the shard
            has tactics that need them. The result holds the shard's sources and tactics (its
            sources judged from what it parsed) and its
            :attr:`~cutlass_layout.model.AuditResult.shard`; an install that gives no kernel
            is not an error here (the merge says so, :func:`merge_shards`).
        on_tactic: called as ``on_tactic(arch, tactic)`` with each tactic the filters keep as
            soon as its source is laid out (or read from the cache: those first, where
            anything is parsed), in the order sources come in, not the table's: what
            ``audit --format jsonl`` streams (:func:`stream_row`). Its runtime candidate, fix
            and guard are not known yet (:data:`STREAM_LATER`); the result has them.
        params_for: a tactic id (or unique part, :func:`find_tactic`) whose kernel's ``Params``
            are read too (``layout --tactic``: one probe, :func:`tactic_params`): its report's
            ``params``, or its ``params_note`` says why not. No other tactic has them.

    What it loads from the results cache, and the tactics it builds, are frozen out of the
    garbage collector's passes (:func:`cutlass_layout.core.pool.gc_paused`).

    A source that another build of the arch family also compiles (:func:`twin_digests`: the
    SM103 MoE module's copies of the SM100 module's sources) is keyed by its
    :func:`~cutlass_layout.installs.equivalence.canonical_flags` where they prove the two
    builds read the same types: it is laid out once for both (an answer with an error stays
    the build's own).

    Every source is parsed with its module's flags, and the TVM FFI headers the bindings
    include (:func:`cutlass_layout.sources.tvm_ffi.tvm_ffi_headers`; fetched unless ``cached_only``)
    on the ``-isystem`` path, as flashinfer's ``get_system_includes`` puts them.

    Returns:
        An :class:`~cutlass_layout.model.AuditResult` (None only with ``cached_only``); a
        kernel that does not compile is a
        tactic with verdict ``does_not_compile`` and its first error (bytes throughout). Each
        tactic kept that is over capacity or an exact fit has its ``fix``: what fits instead
        (:func:`search_fixes`; with ``cached_only`` only where cached). ``stats`` says how many
        fixes were searched and their CPU seconds. A
        filter value (or ``grep``, or the family) that matched no tactic is a note naming it
        and the nearest values the tactics have (also in ``unmatched``).

    Raises:
        BadInput: a bad ``shard`` (:func:`~cutlass_layout.commands.shard.check_shard`); an
            arch other than sm120, sm121, sm100, sm103 or sm90; no flashinfer at
            ``src``, one too old to have JIT module builders for the arch, builders that could
            not run at all, unusable CUDA headers; a family the install does not build; a
            filter value no tactic could match (:func:`tactic_filter`); with no ``family``,
            an install whose builders give no kernel this reader lays out for the arch (the
            message says why, per kind of source: :func:`nothing_found`).

    Each entry of ``sources`` says what the source instantiates and what was found
    (:func:`judge_source`): ``instantiations``, ``kernels``, and for one without a kernel its
    ``reason``, or its ``error`` where it instantiates something that was not laid out.
    """
    t0 = time.perf_counter()
    arch = audit_arch(arch)
    asked = asked_of(config_values, archs=[arch], family=family, grep=grep)
    filter_tests(**asked["filters"])  # bad values: an error before any work
    shard = None if shard is None else check_shard(shard)
    build = read_builds(src, arch, cuda_path, use_cache=use_cache, cached_only=cached_only)
    if build is None:
        return None
    if family is not None and family not in build.families and strict_family:
        raise NothingForArch(unknown_family(family, build.families, build.install.version, arch))
    t_jit = time.perf_counter()
    plan = plan_sources(build, arch, family, shard, use_cache=use_cache, cached_only=cached_only)
    results, todo = cached_results(plan, use_cache)
    if todo and cached_only:
        return None
    stream = Streamer(plan, asked, on_tactic)
    if todo:  # what the cache has, before the parses
        for mod, source, key, _, _ in plan.work:
            if key in results:
                stream.source(mod, source, key, results[key])
    stats = {
        "sources": len(plan.work),
        "cached": len(plan.work) - len(todo),
        "parsed": 0,
        "parse_cpu_seconds": 0.0,
        "worker_peak_rss_mb": 0.0,
    }
    cand = lay_out(
        plan, todo, results, stats, stream, jobs=jobs, executor=executor, progress=progress, cached_only=cached_only
    )
    parsed = {plan.position[id(entry)]: results[key] for _, _, key, _, entry in plan.work}
    judge_sources(plan.sources, plan.facts, parsed)
    ranked, origins = name_tactics(plan, results, cand, stream, use_cache)
    sm80_notes = lay_out_sm80(plan, ranked, stream, use_cache=use_cache, cached_only=cached_only)
    parts = audit_parts(plan, parsed, cand, sm80_notes)
    result = finish_audit(
        audit_provenance(plan),
        arch,
        [plan.sources[i] for i in parts["positions"]],
        ranked,
        asked,
        parts,
        whole=shard is None,
    )
    stats.update(
        search_fixes(
            result.tactics,
            origins,
            plan.install,
            plan.tgt,
            plan.prov,
            plan.clang_arch,
            plan.pch_key,
            jobs=jobs,
            use_cache=use_cache,
            cached_only=cached_only,
            executor=executor,
            label=audit_label(arch, "searching fixes"),
        )
    )
    if params_for is not None:
        _read_params(result, params_for, origins, plan, arch, use_cache)
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    stats["jit_seconds"] = round(t_jit - t0, 2)
    result.stats, result.candidates, result.dense_runners = stats, cand, dict(plan.dense)
    if shard is not None:
        result.shard = shard_part(shard, asked, ranked, result, parts)
    return result


def _read_params(result: AuditResult, text: str, origins: dict, plan, arch: str, use_cache: bool) -> None:
    """The ``Params`` of the one tactic ``text`` names (none where it names none or several:
    :func:`find_tactic` raises that later), into its report."""
    try:
        t = find_tactic(result, text)
    except BadInput:
        return
    params, params_msvc, note = tactic_params(
        t, origins, plan.install, plan.tgt, plan.prov, plan.clang_arch, plan.pch_key, use_cache=use_cache
    )
    if (params or params_msvc) is not None and t.report is not None:
        t.report = replace(t.report, params=params, params_msvc=params_msvc)
        t.numbers = t.report.numbers()
    t.params_note = note


def audit_archs(src=None, archs=ALL, *, use_cache: bool = True, **kwargs) -> AuditSet:
    """:func:`audit` of several arches of the flashinfer at ``src``, resolved once; each arch
    is its own audit (its builders' run, sources, runtime candidates and capacity), in the
    order asked.

    Args:
        src: a flashinfer install, as :func:`audit` takes it.
        archs: arches of :data:`AUDIT_ARCHS`, or ``"all"`` (anywhere among them): every
            arch the install has JIT module builders for (those :func:`every_arch` tries
            whose :func:`~cutlass_layout.sources.flashinfer_jit.arch_builders` are not empty,
            ascending: sm90, sm100, sm103, sm120; sm121, the same builds as sm120, only
            where named).
        use_cache, kwargs: as :func:`audit` takes them (``family``, ``grep``, the filters,
            ``jobs``, ...), for every arch.

    Returns:
        An :class:`~cutlass_layout.model.AuditSet`: one
        :class:`~cutlass_layout.model.AuditResult` per arch. An arch that ``all`` brought
        in and that gives nothing of what was asked (:class:`NothingForArch`: its builders
        give no kernel, or not the family asked for) is left out, and so is an arch
        without builders; each is named in ``notes``.

    Raises:
        BadInput: no arch, an arch an audit does not take (before the install is read), a
            bad filter value; whatever :func:`audit` raises for an arch named (not brought in
            by ``all``); ``all`` where no arch gives anything (the first arch's reason, or
            that the install has no builder for any).
    """
    from ...sources.flashinfer_jit import arch_builders
    from ...sources.flashinfer import FlashinferInstall, resolve_flashinfer

    asked = arch_list(archs)
    named = [audit_arch(a) for a in asked if a != ALL]
    filter_tests(**{k: v for k, v in kwargs.items() if k in FILTER_KEYS})  # bad values: before any work
    if kwargs.get("shard") is not None:
        check_shard(kwargs["shard"])
    install = src if isinstance(src, FlashinferInstall) else resolve_flashinfer(src)
    notes: list[str] = []
    order: list[str] = []
    for a in asked:
        if a != ALL:
            order.append(a)
            continue
        built = {b: bool(arch_builders(install, b, use_cache=use_cache)) for b in every_arch()}
        order += [b for b, has in built.items() if has]
        none = [b for b, has in built.items() if not has]
        if none:
            notes.append(
                f"all: flashinfer {install.version} has no JIT module builder that builds a "
                f"CUTLASS GEMM for {', '.join(none)}: not audited"
            )
    if not order:
        raise NothingForArch(
            f"flashinfer {install.version} at {install.root} has no JIT module builder "
            f"that builds a CUTLASS GEMM for any of {', '.join(every_arch())}"
        )
    results: list[AuditResult] = []
    left: list[NothingForArch] = []
    todo = list(dict.fromkeys(order))
    t0 = time.monotonic()
    for i, a in enumerate(todo):
        try:
            with part(i, todo, f"auditing flashinfer {install.version} for {a}", t0):
                res = audit(install, a, use_cache=use_cache, **kwargs)
                assert res is not None  # None: only for cached_only, which api.audit does not pass
                results.append(res)
        except KeyboardInterrupt:
            if not results:
                raise
            raise interruption(results, todo[i:], notes) from None
        except NothingForArch as exc:
            if a in named:
                raise
            left.append(exc)
            notes.append(f"all: {a} not audited: {exc}")
        if results and results[-1].shard is not None:  # what its merge needs: which were named
            results[-1].shard.asked["archs"] = asked
    if not results:
        raise left[0]
    return AuditSet(results=results, notes=notes)


def interruption(done: list[AuditResult], left: list[str], notes: list[str]) -> Interrupted:
    """Ctrl-C in an audit of several arches, ``done`` finished, ``left[0]`` interrupted and the
    rest of ``left`` not begun: :class:`~cutlass_layout.errors.Interrupted` holding the finished
    arches' :class:`~cutlass_layout.model.AuditSet` (the command prints them, then exits 130)."""
    rest = f"{left[0]} was interrupted" + (f", {', '.join(left[1:])} not audited" if left[1:] else "")
    return Interrupted(f"interrupted: {rest}", AuditSet(results=done, notes=[*notes, f"{rest} (Ctrl-C)"]))


__all__ = ["audit", "audit_archs", "interruption"]
