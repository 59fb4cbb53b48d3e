"""The fix search of an audit: what fits instead, for each tactic over capacity or an exact
fit (:func:`search_fixes`), read from the results cache or searched in worker processes
(:mod:`cutlass_layout.installs.fixes`), one folder, flags and includes a unit, the largest
dealt in two (:func:`fix_parts`)."""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import BadInput
from ...core.cache import KINDS
from ...model import Fix, ParamsLayout, Provenance, Tactic, Verdict
from .run import reads

#: How a fix's error starts where it says nothing lasting of the launcher (not cached).
_PASSING = ("cannot read", "cannot search", "libclang", "the precompiled", "cannot write")
#: The verdicts whose tactics get a fix searched (:mod:`cutlass_layout.installs.fixes`).
FIX_VERDICTS = (Verdict.OVER_CAPACITY, Verdict.EXACT_FIT)


def search_fixes(
    tactics: list[Tactic],
    origins: dict,
    install,
    tgt,
    prov: dict,
    arch: str,
    pch_key: str,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cached_only: bool = False,
    executor=None,
    label: str = "searching fixes",
) -> dict:
    """Fill in :attr:`~cutlass_layout.model.Tactic.fix` of every tactic of ``tactics`` over
    capacity or an exact fit (:data:`FIX_VERDICTS`): read from the results cache (kind
    ``fixes``, :func:`cutlass_layout.installs.fixes.fix_key`), else searched
    (:func:`cutlass_layout.installs.fixes.search_fixes`), the tactics of one folder, flags and includes
    together, in worker processes; with ``cached_only`` nothing is searched (a fix not cached
    stays None). ``origins``: ``id(tactic) -> (Source, preamble, FoundKernel)``;
    ``executor``: as :func:`audit` takes it (the fixes come back and are cached here).
    Where any is searched, progress counts the tactics under ``label`` where progress is shown
    (``audit sm90: searching fixes: 30/60 tactics (41 s)``, a line every few seconds off a
    terminal).

    Returns stats: ``fixes`` (searched), ``fixes_cached``, ``fix_cpu_seconds``."""
    from ...cpp.clang import libclang_version
    from ...installs.fixes import FORMULAS, MIN_STAGES, Want, fix_key
    from ...installs.kernels import CAPACITY
    from ...core.pool import default_jobs
    from ...engine.schedule import Schedule

    stats = {"fixes": 0, "fixes_cached": 0, "fix_cpu_seconds": 0.0}
    if arch not in FORMULAS:  # said, not left blank (a blank fix reads as "none needed")
        for t in tactics:
            if t.verdict in FIX_VERDICTS and t.fix is None:
                t.fix = Fix(
                    error=f"not searched: the fix search reads the stage formulas of "
                    f"{' and '.join(sorted(FORMULAS))}'s builders, not {arch}'s"
                )
        return stats
    cache = KINDS["fixes"]  # searched in a pool, stored as they come back: get and put
    target = [install.fingerprint, install.tree.tree_hash, libclang_version(), str(tgt.cuda.path)]
    groups: dict[tuple, list] = {}
    for t in tactics:
        if t.verdict not in FIX_VERDICTS:
            continue
        if id(t) not in origins:
            if t.fix is None:
                t.fix = Fix(
                    error="not searched: its kernel is not declared in a launcher of the "
                    "install's generated or JIT sources"
                )
            continue
        source, pre, k = origins[id(t)]
        if t.stages is not None and t.stages <= MIN_STAGES:
            t.fix = Fix(fewest_stages=MIN_STAGES)  # the collective takes no fewer: nothing to search
            continue
        if k.macro is None or not k.decl_file or not Path(k.decl_file).is_absolute() or not k.line:
            t.fix = Fix(error="not searched: its kernel is not declared in a launcher macro")
            continue
        assert t.report is not None  # a tactic of FIX_VERDICTS was laid out
        want = Want(
            key=t.id,
            source=source,
            line=k.line,
            macro=(k.macro[0], list(k.macro[1])),
            launcher_file=k.decl_file,
            launcher_line=k.decl_line,
            report=t.report,
        )
        want.cache_key = fix_key(want, target)
        hit = cache.get(want.cache_key, Fix.from_dict) if use_cache else None
        if hit is not None:
            t.fix = hit
            stats["fixes_cached"] += 1
        elif not cached_only:
            groups.setdefault((source.path.parent, source.flags, pre), []).append((t, want))
    if not groups:
        return stats
    parts = fix_parts(list(groups.items()), default_jobs(jobs, executor))
    with Schedule(
        min(default_jobs(jobs, executor), len(parts)),
        executor=executor,
        reads=reads(install, tgt, None, None) + [folder for folder, _, _ in groups],
        label=label,
        total=sum(len(items) for _, items in parts),
        unit="tactics",
    ) as s:
        tasks = (
            (items, _fixes, ([w for _, w in items], prov, pre, list(flags), pch_key, arch, CAPACITY[arch]))
            for (_, flags, pre), items in parts
        )
        for items, (payload, cpu) in s.run(tasks):
            stats["fix_cpu_seconds"] += cpu
            for (t, want), d in zip(items, payload):
                t.fix = Fix.from_dict(d)
                stats["fixes"] += 1
                if not (t.fix.error or "").startswith(_PASSING):
                    cache.put(want.cache_key, d)  # an answer of the launcher's own
            s.advance(len(items))
    stats["fix_cpu_seconds"] = round(stats["fix_cpu_seconds"], 2)
    return stats


def tactic_params(t: Tactic, origins: dict, install, tgt, prov: dict, arch: str, pch_key: str, *, use_cache=True):
    """``(params, params_msvc, note)``: the :class:`~cutlass_layout.model.ParamsLayout` of
    tactic ``t``'s kernel on Linux x86-64 and on MSVC x64 (what ``layout --tactic`` shows; an
    audit reads none), each None where not read, and why not (``note``). Read from the results
    cache (kind ``tactic-params``, keyed as the tactic's fix is,
    :func:`cutlass_layout.installs.fixes.fix_key`, plus ``params``: a layout without ``Params``
    is never served for one with them, and an audit's layouts are not read again for it), else
    laid out again here, one probe per ABI (:func:`cutlass_layout.installs.fixes.lay_out_again`,
    the MSVC one with :func:`cutlass_layout.cpp.clang.msvc_flags` and a precompiled header of
    its own). Taken only where the kernel laid out again is the tactic's: the same
    SharedStorage size and stage count (on MSVC too: the shared memory's layout is the
    device's, whichever host ABI)."""
    from ...cpp.clang import libclang_version
    from ...installs.fixes import FORMULAS, Want, fix_key

    if t.report is None or t.report.error is not None or t.report.kernel is None:
        return None, None, "Params not read: the tactic has no kernel layout"
    if arch not in FORMULAS or id(t) not in origins:
        return None, None, "Params not read: its kernel is not declared in a launcher of the install's sources"
    source, pre, k = origins[id(t)]
    if k.macro is None or not k.decl_file or not Path(k.decl_file).is_absolute() or not k.line:
        return None, None, "Params not read: its kernel is not declared in a launcher macro"
    want = Want(t.id, source, k.line, (k.macro[0], list(k.macro[1])), k.decl_file, k.decl_line, t.report)
    target = [install.fingerprint, install.tree.tree_hash, libclang_version(), str(tgt.cuda.path)]
    key = fix_key(want, target + ["params"], kind="tactic-params")
    cache = KINDS["tactic-params"]
    hit = cache.get(key, _both) if use_cache else None
    if hit is not None:
        return hit
    got = [_params_of(t, want, source, pre, prov, arch, pch_key, msvc) for msvc in (False, True)]
    linux, msvc = (p if isinstance(p, ParamsLayout) else None for p in got)
    note = "; ".join(f"Params{abi} not read: {n}" for abi, n in zip(("", " (MSVC x64)"), got) if isinstance(n, str))
    if linux is not None and msvc is not None:
        cache.put(key, {"linux": linux.to_dict(), "msvc": msvc.to_dict()})
    return linux, msvc, note or None


def _both(d: dict) -> tuple:
    """A cached ``tactic-params`` payload as :func:`tactic_params` returns it."""
    return ParamsLayout.from_dict(d["linux"]), ParamsLayout.from_dict(d["msvc"]), None


def _params_of(t: Tactic, want, source, pre, prov: dict, arch: str, pch_key: str, msvc: bool) -> ParamsLayout | str:
    """Tactic ``t``'s ``Params`` on one host ABI (``msvc``), laid out again, or why not."""
    from ...cpp.clang import ensure_pch, msvc_flags
    from ...errors import BadInput
    from ...installs.fixes import lay_out_again
    from ...installs.kernels import CAPACITY

    assert t.report is not None and t.report.kernel is not None  # tactic_params checked
    capacity = CAPACITY.get(arch)
    if capacity is None:
        return f"no capacity constant for {arch}"
    try:
        flags = msvc_flags(list(source.flags)) if msvc else list(source.flags)
        pch = ensure_pch(pre, flags, pch_key) if pre else None
        rep = lay_out_again([want], Provenance(**prov), str(pch) if pch else None, arch, capacity, msvc=msvc)[0]
    except BadInput as exc:
        return str(exc)
    if isinstance(rep, str) or rep.error is not None:
        return rep if isinstance(rep, str) else rep.error.one_line()
    same = rep.kernel is not None and (rep.kernel.size, rep.stages) == (t.report.kernel.size, t.report.stages)
    if not same or rep.params is None:
        return "the launcher laid out again is not the tactic's kernel (not verified)"
    return rep.params


#: The fewest tactics a part of one group's fix search holds (:func:`fix_parts`): a unit
#: pays a fixed cost before its first kernel (docs/performance.md), so smaller parts would
#: cost more than they save.
FIX_PART_MIN = 4


def fix_parts(groups: list[tuple], jobs: int) -> list[tuple]:
    """``groups`` (``(key, items)``, each one translation unit of the fix search) cut so that
    every worker has one where there are enough tactics: the largest dealt in two until there are
    ``jobs`` parts or none holds 2 x :data:`FIX_PART_MIN` (flashinfer 0.7.4's 60 SM90 tactics
    over capacity or exact fits are one folder's, one group: undealt, one worker searched them
    all while the other waited; measured: docs/performance.md)."""
    parts = list(groups)
    while len(parts) < jobs:
        i = max(range(len(parts)), key=lambda j: len(parts[j][1]))
        key, items = parts[i]
        if len(items) < 2 * FIX_PART_MIN:
            break
        parts[i : i + 1] = [(key, items[0::2]), (key, items[1::2])]  # alike tactics lie together: dealt
    return parts


def _fixes(wants, provenance: dict, preamble, flags, pch_key, arch, capacity):
    """:func:`cutlass_layout.installs.fixes.search_fixes` in a worker: ``([fix as a dict], CPU seconds)``,
    with the precompiled header of the sources' includes (built when it is not there)."""
    from ...cpp.clang import ensure_pch
    from ...installs.fixes import search_fixes as search

    def pch():
        path = ensure_pch(preamble, flags, pch_key) if preamble else None
        return str(path) if path else None

    t0 = time.process_time()
    try:
        fixes = search(wants, Provenance(**provenance), pch, arch, capacity)
    except (BadInput, OSError) as exc:  # a header missing, a cache that cannot be written: not cached
        what = str(exc) if isinstance(exc, BadInput) else (exc.strerror or str(exc))
        fixes = [Fix(error=f"cannot search: {what}") for _ in wants]
    return [f.to_dict() for f in fixes], round(time.process_time() - t0, 2)


__all__ = ["FIX_PART_MIN", "FIX_VERDICTS", "fix_parts", "search_fixes", "tactic_params"]
