"""Running an audit's units: the sources the results cache has (:func:`cached_results`), then
the others laid out in worker processes (:func:`lay_out`: a precompiled header per module's
includes built in the pool first, each source submitted once its header is there, the
runtime's candidate list beside them once the MoE header is), stored back as they come in;
and the ``moe_sm80`` family (:func:`lay_out_sm80`)."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from ...core.cache import KINDS
from ...core.pool import gc_paused, task_memory
from ...core.progress import audit_label
from ...installs.candidates import store_candidates
from ...installs.equivalence import named, unnamed
from ...installs.kernels import Source
from ...installs.source_layout import lay_out_sources
from ...installs.moe_sm80 import FAMILY as SM80_FAMILY
from ...installs.moe_sm80 import audit_sm80_path
from ...cpp.preprocessor import command_line_defines
from ...model import Provenance, Verdict
from .plan import BATCH_WEIGHT
from .tactics import found_from, over_so_far

#: The per-source results (kind ``audit``; keys: :mod:`~cutlass_layout.commands.audit.plan`), laid out
#: in a pool and stored as they come back: got and put, not memoized.
_RESULTS = KINDS["audit"]


# ---------------------------------------------------------------------------------------
# the work of one source (also run in worker processes)
def lay_out_batch(sources: list[Source], provenance: dict, pch: tuple | None) -> list[dict]:
    """The per-source payloads of ``sources`` (one folder, flags and includes), laid out
    together (:func:`cutlass_layout.installs.source_layout.lay_out_sources`); the CPU time is shared out
    by kernels. ``pch``: ``(preamble, flags, key)`` of the precompiled header of their
    includes (:func:`_pch`; this machine's cache has it unless the task runs on another
    machine, which builds its own), or None."""
    from ...cpp.clang import ensure_pch

    path = ensure_pch(pch[0], list(pch[1]), pch[2]) if pch else None
    t0 = time.process_time()
    with task_memory() as mem:  # this task's peak (the pool frees what it leaves)
        results = lay_out_sources(sources, Provenance(**provenance), pch=path)
    cpu = time.process_time() - t0
    weights = [max(1, len(r.kernels)) for r in results]
    peak = mem["peak_rss_mb"]
    return [
        {
            "error": res.error,
            "lasting": res.lasting,
            "launcher_macros": res.launcher_macros,
            "kernels": [{"found": {**asdict(k), "error": None}, "report": rep.to_dict()} for k, rep in res.kernels],
            "cpu_seconds": round(cpu * w / sum(weights), 2),
            "seconds": res.seconds,
            "peak_rss_mb": peak,
        }
        for res, w in zip(results, weights)
    ]


def batches(items: list[tuple], jobs: int, estimates: dict) -> list[list[tuple]]:
    """``items`` (``(source, key)`` of one folder, flags and includes) in groups of at most
    :data:`BATCH_WEIGHT` (``estimates``: by source path, its estimated kernels,
    :func:`cutlass_layout.installs.kernels.estimate_kernels`, times :func:`kernel_weight`), and in as
    many groups as ``jobs`` where there are enough sources (so that every worker has one)."""
    est = [max(1, estimates.get(source.path, 1)) for source, _ in items]
    per = min(BATCH_WEIGHT, max(1, -(-sum(est) // max(1, jobs))))
    out: list[list[tuple]] = []
    load = 0
    for item, n in zip(items, est):
        if not out or load + n > per:
            out.append([])
            load = 0
        out[-1].append(item)
        load += n
    return out


def load_source(payload: dict) -> dict:
    """A cached per-source payload if it is whole (each kernel's report loads, see
    :func:`cutlass_layout.engine.loop.load_report`; kept as its item's ``loaded``, so that it is
    read once); raises for one that is not (a miss)."""
    from ...engine.loop import load_report

    if not isinstance(payload["kernels"], list) or not isinstance(payload.get("error"), (str, type(None))):
        raise TypeError("kernels")
    if not isinstance(payload["launcher_macros"], (list, type(None))):
        raise TypeError("launcher_macros")
    for item in payload["kernels"]:
        found_from(item["found"])
        item["loaded"] = load_report(item["report"])  # read once: the audit uses it
    return payload


def clean_payload(payload: dict) -> bool:
    """Whether a source's payload has no error of its own or of a kernel (what a twin build
    may share: an error names the files of the build that met it)."""
    return payload.get("error") is None and all(
        (item["report"].get("error") if isinstance(item.get("report"), dict) else None) is None
        for item in payload.get("kernels") or []
    )


def placed(payload: dict, places: list, *, back: bool, copy: bool = False) -> dict:
    """``payload`` with each kernel's ``decl_file`` in a generated folder named by its place
    (``back=False``: what a twin build reads) or by this build's folder (``back=True``)."""
    if copy:
        payload = dict(payload, kernels=[dict(item, found=dict(item["found"])) for item in payload["kernels"]])
    for item in payload.get("kernels") or []:
        f = item["found"]
        decl = f.get("decl_file")
        if isinstance(decl, str):
            f["decl_file"] = unnamed(decl, places) if back else named(decl, places)
    return payload


def _pch(preamble: str, flags: list[str], key: str) -> tuple[str | None, float]:
    """:func:`~cutlass_layout.cpp.clang.ensure_pch` in a worker: (its path or None, seconds)."""
    from ...cpp.clang import ensure_pch

    t = time.perf_counter()
    path = ensure_pch(preamble, flags, key)
    return (str(path) if path else None), round(time.perf_counter() - t, 2)


def _candidates(install, arch, flags, preamble, pch_key, use_cache, cached_only=False):
    """:func:`~cutlass_layout.installs.candidates.runtime_candidates` (also run in a worker process)."""
    from ...installs.candidates import runtime_candidates

    return runtime_candidates(
        install, arch, flags, pch_preamble=preamble, pch_key=pch_key, use_cache=use_cache, cached_only=cached_only
    )


def reads(install, tgt, gen_root, tvm) -> list[Path]:
    """The folders a worker's task reads (checked on a Dask cluster's workers): the install,
    its CUTLASS tree, the CUDA headers, the generated sources, the TVM FFI headers."""
    return [
        p
        for p in (
            install.root,
            install.tree.include_root,
            tgt.cuda.path,
            gen_root,
            tvm.include if tvm is not None else None,
        )
        if p is not None
    ]


# ---------------------------------------------------------------------------------------
# the units of one audit


def cached_results(plan, use_cache: bool) -> tuple[dict, list]:
    """``(results, todo)``: the payload of each source of ``plan.work`` the results cache has,
    by key (a twin's placed back in this build's folders; a twin's answer with an error is
    this build's own), and the work items of the others."""
    results: dict[str, dict] = {}
    todo = []
    places = plan.places
    with gc_paused(freeze=True):  # thousands of reports: no collector passes over them
        for mod, source, key, pre, entry in plan.work:
            hit = _RESULTS.get(key, load_source) if use_cache else None
            if hit is not None and key in places:
                placed(hit, places[key][0], back=True)
            elif hit is None and key in places and use_cache:  # an answer with an error: this build's own
                hit = _RESULTS.get(places[key][1], load_source)
            if hit is not None:
                results[key] = hit
            else:
                todo.append((mod, source, key, pre, entry))
    return results, todo


def lay_out(plan, todo: list, results: dict, stats: dict, stream, *, jobs, executor, progress: bool, cached_only: bool):
    """Lay out the sources of ``todo`` into ``results`` (and the results cache), counting into
    ``stats``; the runtime's candidate list (``plan.cand_args``: read beside them, or alone
    where nothing is parsed), returned (None where not read)."""
    cand = None
    if todo:
        cand = _lay_out_todo(plan, todo, results, stats, stream, jobs, executor, progress)
    elif plan.cand_args:
        install, arch, flags, preamble, pch_key, use_cache = plan.cand_args
        cand = _candidates(
            install, arch, flags, preamble, pch_key, use_cache, cached_only=cached_only
        )  # says its parse as a step
    stats["parse_cpu_seconds"] = round(stats["parse_cpu_seconds"], 2)
    return cand


def _lay_out_todo(plan, todo, results, stats, stream, jobs, executor, progress):
    """:func:`lay_out` of sources to parse: the one scheduler runs every unit (:class:`_Units`)."""
    from ...core.pool import default_jobs
    from ...engine.schedule import Schedule

    stats["pch_seconds"] = 0.0
    with Schedule(
        default_jobs(jobs, executor),
        executor=executor,
        reads=reads(plan.install, plan.tgt, plan.gen_root, plan.tvm),
        label=audit_label(plan.arch, "laying out sources"),
        total=len(todo),
        progress=progress,
    ) as s:
        units = _Units(plan, s, executor, todo, results, stats, stream)
        for (what, key), payload in s.results():
            units.done(what, key, payload)
    stats["pch_seconds"] = round(stats["pch_seconds"], 2)
    return units.cand


class _Units:
    """The units of an audit's parses on the scheduler: precompiled headers are built there too
    (one per module's includes), each source submitted once its header is there; the
    candidate list waits for the MoE one. Submits all on creation; :meth:`done` takes each
    result as it comes back (and submits what waited for it)."""

    def __init__(self, plan, schedule, executor, todo, results, stats, stream):
        self.plan, self.schedule, self.executor = plan, schedule, executor
        self.results, self.stats, self.stream = results, stats, stream
        self.cand, self.kernels = None, 0
        self.entry_of = {key: entry for _, _, key, _, entry in todo}
        self.mod_of = {key: (mod, source) for mod, source, key, _, _ in todo}
        pch_of = {(pre, source.flags) for _, source, _, pre, _ in todo if pre is not None}
        self.waiting: dict[tuple, list] = {pk: [] for pk in pch_of}
        moe = plan.moe
        self.cand_pk = (moe[1], moe[0].flags) if moe and moe[1] is not None else None
        for pk in sorted(pch_of, key=lambda x: (x[0], x[1])):
            schedule.submit(("pch", pk), _pch, pk[0], list(pk[1]), plan.pch_key)
        for _, source, key, pre, _ in todo:
            if pre is None:
                self.submit_sources([(source, key)], None)
            else:
                self.waiting[(pre, source.flags)].append((source, key))
        if plan.cand_args and (self.cand_pk is None or self.cand_pk not in pch_of):
            self.submit_candidates()  # the runtime's candidate list, beside the sources (docs/performance.md)

    def submit_sources(self, items, pch) -> None:
        by_folder: dict = {}
        for item in items:  # one unit holds sources of one folder (quoted includes)
            by_folder.setdefault(item[0].path.parent, []).append(item)
        for batch in (
            b for group in by_folder.values() for b in batches(group, self.schedule.jobs, self.plan.estimates)
        ):
            self.schedule.submit(
                ("sources", [k for _, k in batch]), lay_out_batch, [s for s, _ in batch], self.plan.prov, pch
            )

    def submit_candidates(self) -> None:
        self.schedule.submit(("candidates", None), _candidates, *self.plan.cand_args)

    def done(self, what: str, key, payload) -> None:
        """The result of one task: a source unit's, a precompiled header's or the candidate list's."""
        plan = self.plan
        if what == "candidates":
            self.cand = payload
            if payload is not None and self.executor is not None:  # cached here too
                store_candidates(plan.install, plan.clang_arch, plan.cand_args[2], payload)
        elif what == "pch":
            path, seconds = payload
            self.stats["pch_seconds"] += seconds
            self.submit_sources(self.waiting.pop(key), (key[0], key[1], plan.pch_key) if path else None)
            if plan.cand_args and key == self.cand_pk:
                self.submit_candidates()
        else:
            self.stats["batches"] = self.stats.get("batches", 0) + 1
            for skey, one in zip(key, payload):
                self.source_done(skey, one)
            self.schedule.advance(len(key))

    def source_done(self, skey: str, one: dict) -> None:
        """A source's payload: counted, cached (a twin's placed for both builds), its kernels
        over capacity noted on the progress display, its tactics streamed."""
        stats, places = self.stats, self.plan.places
        self.results[skey] = one
        stats["parsed"] += 1
        stats["parse_cpu_seconds"] += one.get("cpu_seconds", 0.0)
        stats["worker_peak_rss_mb"] = max(stats["worker_peak_rss_mb"], one.get("peak_rss_mb", 0.0))
        if skey in places and clean_payload(one):  # shared with the twin build
            _RESULTS.put(skey, placed(one, places[skey][0], back=False, copy=True))
        elif one.get("error") is None or one.get("lasting"):
            # a source's own compile error is an answer too (a twin's: not shared)
            _RESULTS.put(places[skey][1] if skey in places else skey, one)
        self.kernels += len(one.get("kernels") or ())
        if self.schedule.bar is not None:  # what the count line says beside the sources
            self.schedule.bar.detail = f"{self.kernels} kernels laid out"
        for line in over_so_far(self.plan.arch, self.entry_of[skey]["file"], one, self.plan.arch_fam):
            self.schedule.note(line)  # what a long audit found, as it finds it
        mod, source = self.mod_of[skey]
        self.stream.source(mod, source, skey, one)


def lay_out_sm80(plan, ranked: list, stream, *, use_cache: bool, cached_only: bool) -> list[str] | None:
    """The ``moe_sm80`` unit's tactics into ``ranked`` (after every source; over capacity with
    its runtime guard), where it is laid out here; its notes (None where it is not)."""
    if not plan.with_sm80:
        return None
    sm80 = audit_sm80_path(
        plan.install, plan.tgt, command_line_defines(plan.mflags), use_cache=use_cache, cached_only=cached_only
    )
    if sm80 is None:  # cached_only, not cached: the rest of the audit stands
        return [f"{SM80_FAMILY}: not in the results cache (run the audit once to lay it out)"]
    for i, t in enumerate(sm80.tactics):
        if sm80.guard and t.verdict == Verdict.OVER_CAPACITY:
            t.runtime_guard = sm80.guard
        ranked.append(([len(plan.sources), i], t))
        stream.tactic(t)
    return sm80.notes + ([f"{SM80_FAMILY}: over capacity is {sm80.guard}"] if sm80.guard else [])


__all__ = ["cached_results", "lay_out", "lay_out_sm80", "reads"]
