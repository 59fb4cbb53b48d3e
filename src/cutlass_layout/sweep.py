"""Sweeps and budgets: which tiles and stage counts fit, for a whole grid of configs.

``sweep(grid)`` lays out every config of a grid (see :mod:`cutlass_layout.grid`) with the
exact engine, many configs per libclang translation unit, spread over a process pool, and
for each config also finds ``max_stages_that_fit``: the largest explicit ``StageCount<N>``
whose kernel ``SharedStorage`` fits the capacity, searched below and above the builder's
choice. Every number it reports comes from a layout of the engine:

* the search predicts candidates from the per-stage growth of the kernel, then lays out
  each candidate (in batches) and stops only when it holds a layout of ``N`` that fits and
  one of ``N + 1`` that does not (or does not compile); ``N`` must be at least 2 for the
  SM120 collectives (their static_assert), else 1. Its likely first candidate (one more
  than a guess of the builder's count, :func:`_first_candidate`) is laid out in the first
  round, next to the config: a right guess saves a round, a wrong one costs a layout;
* a ``StageCountAuto...`` config that chose ``S`` stages instantiates the same mainloop
  type as ``StageCount<S>`` (the builder computes ``S`` and then builds with it), so its
  layout counts as the layout of ``StageCount<S>``.

Every layout comes from the engine's results cache when it holds it (one entry per
config, shared with ``layout`` and ``diff``; see :mod:`cutlass_layout.engine`), so a
repeated sweep runs the whole search over cached layouts without starting libclang.

The ``sweep`` command (:data:`command`) prints a table, ``--json`` (schema
``cutlass-layout/sweep/1``), ``--csv``, and draws ``--plot FILE``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field

import click

from .config import Config
from .errors import BadInput
from .options import config_options, source_options
from .runner import Pool, Progress, default_jobs

#: Version of the ``sweep --json`` schema.
SWEEP_SCHEMA = "cutlass-layout/sweep/1"
#: Upper bound of the stage-count search.
MAX_STAGES = 32
#: Most configs in one translation unit (memory grows with it: peak 0.35 GB per worker
#: at 27 configs, 0.85 GB at 48).
MAX_CHUNK = 48
#: Fewest configs worth a worker process of its own.
MIN_CHUNK = 4

VERDICTS = ("fits", "over_capacity", "does_not_compile")


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------
@dataclass
class SweepRecord:
    """The answer for one config of a sweep. Bytes throughout; ``None`` where not computed.

    Attributes:
        config: the config as in the layout report (:meth:`Config.to_dict`).
        stages: the mainloop's stage count (the builder's choice for ``stages: "auto"``).
        mainloop_bytes, epilogue_bytes, kernel_bytes: ``sizeof`` of the three SharedStorage
            structs (``None`` when the config does not compile).
        capacity_bytes: the capacity read from the headers.
        headroom_bytes: capacity minus kernel bytes (negative when over).
        verdict: ``fits``, ``over_capacity`` or ``does_not_compile``.
        max_stages_that_fit: the largest N whose ``StageCount<N>`` kernel fits (layouts of
            N and N+1 both computed), or ``None`` when no stage count fits.
        max_stages_kernel_bytes: the kernel bytes with that many stages.
        error: for a config that does not compile, ``{kind, message, file, line}``.
        kernel_layout: the kernel's :class:`~cutlass_layout.model.StructLayout` (for
            plots; not part of the JSON).
    """

    config: dict
    stages: int | None
    mainloop_bytes: int | None
    epilogue_bytes: int | None
    kernel_bytes: int | None
    capacity_bytes: int | None
    headroom_bytes: int | None
    verdict: str
    max_stages_that_fit: int | None
    max_stages_kernel_bytes: int | None
    error: dict | None = None
    kernel_layout: object | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """The record as one entry of the JSON ``results`` list."""
        d = asdict(self)
        d.pop("kernel_layout")
        # headroom 0 fits, but TensorRT-LLM's occupancy check rejects it
        d["exact_fit"] = self.headroom_bytes == 0
        return d

    def summary(self) -> str:
        """One line, e.g. ``auto: 4 stages, 102400 B, over by 1024; max that fits: 3 stages,
        84992 B``."""
        st = self.config.get("stages", "auto")
        head = "auto" if st == "auto" else f"StageCount<{st}>"
        if self.verdict == "does_not_compile":
            err = self.error or {}
            what = "static_assert" if err.get("kind") == "static_assert" else "error"
            first = f"{head}: does not compile ({what}: {err.get('message', '?')})"
        else:
            if self.verdict == "fits":
                how = f"fits, headroom {self.headroom_bytes}"
            else:
                how = f"over by {-self.headroom_bytes}"
            first = f"{head}: {self.stages} stages, {self.kernel_bytes} B, {how}"
        if self.max_stages_that_fit is None:
            return f"{first}; no stage count fits"
        return (f"{first}; max that fits: {self.max_stages_that_fit} stages, "
                f"{self.max_stages_kernel_bytes} B")


@dataclass
class SweepResult:
    """A whole sweep.

    Attributes:
        provenance: where the numbers come from (as in the layout report; ``flags`` are
            those of the first config's arch).
        grid: the configs swept, in order.
        records: one :class:`SweepRecord` per config, in the grid's order.
        stats: how the sweep ran (not part of the JSON): ``configs``, ``cached``,
            ``laid_out`` (layouts computed, search candidates included), ``chunks``
            (translation units submitted), ``parse_cpu_seconds`` (CPU time of the
            layouts, all processes), ``seconds`` (wall), ``worker_peak_rss_mb`` (largest
            peak RSS of a process that parsed, MB; 0 when nothing was parsed).
    """

    provenance: dict
    grid: list[Config]
    records: list[SweepRecord]
    stats: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        """The documented ``sweep --json`` object (schema :data:`SWEEP_SCHEMA`)."""
        return {
            "schema": SWEEP_SCHEMA,
            "provenance": self.provenance,
            "checked": "types",
            "grid": [c.to_dict() for c in self.grid],
            "results": [r.to_dict() for r in self.records],
        }

    def sorted_records(self) -> list[SweepRecord]:
        """Records ordered by verdict (fits, over_capacity, does_not_compile), then by
        headroom, most room first."""
        def key(r: SweepRecord):
            h = r.headroom_bytes if r.headroom_bytes is not None else -math.inf
            return (VERDICTS.index(r.verdict), -h)
        return sorted(self.records, key=key)


# --------------------------------------------------------------------------------------
# running the engine in a pool
# --------------------------------------------------------------------------------------
def _chunk_worker(tgt, configs: list[Config]):
    """Lay out ``configs`` (not in the cache: the caller looked) in this process, and store
    them in the cache: (reports, peak RSS in MB, CPU seconds)."""
    import resource

    from .engine import layouts

    t = time.process_time()
    reps = layouts(configs, tgt, use_cache=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return reps, peak, time.process_time() - t


#: Capacity per family, only to guess which configs do not compile (chunk order); every
#: capacity reported is read from the headers.
_CAPACITY_GUESS = {"sm120": 101376, "sm90": 232448}
#: Guesses of the epilogue's carve-out and of the bytes a builder counts per stage besides
#: the A and B tiles (pipeline barriers), per family (same use): SM120's TMA epilogues take
#: about 9 KB; SM90's default (``EpilogueScheduleAuto``) takes none.
_CARVEOUT_GUESS = {"sm120": 9216, "sm90": 0}
_STAGE_EXTRA_GUESS = {"sm120": 128, "sm90": 32}


def _stage_bytes_guess(c: Config) -> int:
    """A rough per-stage byte count (A and B tiles and their block scale factors), only to
    order configs and guess which ones do not compile."""
    from .config import ELEMENTS

    m, n, k = c.tile
    sf = {"nvfp4": 16, "mxfp4": 32, "mxfp8": 32}
    scales = sum(rows * k // sf[e] for rows, e in ((m, c.a), (n, c.b)) if e in sf)
    return (m * ELEMENTS[c.a].bits + n * ELEMENTS[c.b].bits) * k // 8 + scales


def _stages_guess(c: Config) -> int:
    """A guess of the builder's auto stage count: (capacity - carve-out) / (stage bytes +
    the bytes the builder counts for a stage's pipeline barriers)."""
    room = _CAPACITY_GUESS.get(c.family, 1 << 62) - _CARVEOUT_GUESS.get(c.family, 0)
    return room // (_stage_bytes_guess(c) + _STAGE_EXTRA_GUESS.get(c.family, 128))


def _min_stages(c: Config) -> int:
    """The fewest stages the family's collectives accept (their static_assert)."""
    return 2 if c.family == "sm120" else 1


def _likely_fails(c: Config) -> bool:
    """Whether the builder's auto stage count is likely below the collective's minimum, so
    the config fails its static_assert. A guess: it only keeps such configs out of the
    translation units of configs that compile (a unit with an error gives no numbers, and
    the others in it must be parsed again)."""
    return c.stages is None and _stages_guess(c) < _min_stages(c)


def _first_candidate(c: Config) -> Config | None:
    """The stage count the search will most likely lay out after ``c`` (an auto config),
    to lay out in the same round: one more than the guessed auto count (to show that the
    builder's choice is the largest that fits), or the minimum when the auto config likely
    does not compile. A wrong guess costs one layout (still a point of the search), never
    a number."""
    if c.stages is not None:
        return None
    n = _min_stages(c) if _likely_fails(c) else _stages_guess(c) + 1
    return c.with_(stages=n) if _min_stages(c) <= n <= MAX_STAGES else None


def _mainloop_key(c: Config) -> tuple:
    """What the mainloop type depends on (the epilogue flavour does not change it)."""
    return (c.arch, c.kernel, c.a, c.b, c.tile, c.cluster, c.schedule)


def _chunks(configs: list[Config], jobs: int) -> list[list[Config]]:
    """Split into chunks of one arch each: a multiple of ``jobs`` chunks where there is
    enough work, each of at most :data:`MAX_CHUNK` configs.

    Configs that likely do not compile (:func:`_likely_fails`) get chunks of their own: a
    unit with an error gives numbers for none of its configs. Within that, by
    :func:`_stage_bytes_guess`, and configs that share a mainloop type (they differ in the
    epilogue only) next to each other, so they share a translation unit: clang
    instantiates the mainloop once, and the second config costs a fraction of the first.
    """
    groups: dict[tuple, list[Config]] = {}
    for c in sorted(configs, key=lambda c: (c.arch, _likely_fails(c), _stage_bytes_guess(c),
                                            repr(_mainloop_key(c)))):
        groups.setdefault((c.arch, _likely_fails(c)), []).append(c)
    out = []
    for group in groups.values():
        n = len(group)
        k = max(1, min(math.ceil(n / MIN_CHUNK), jobs * math.ceil(n / (jobs * MAX_CHUNK))))
        size = math.ceil(n / k)
        out += [group[i:i + size] for i in range(0, n, size)]
    return out


class _Layouts:
    """Lays out configs as a pipeline: each config is looked up in the engine's results
    cache first; the others go, in chunks, to a :class:`~cutlass_layout.runner.Pool` of
    ``jobs`` workers (or run in this process), and every report that comes back (from the
    cache or a worker) feeds the stage-count searches, whose next candidates are looked up
    and batched into new chunks as soon as a worker is free, without waiting for the rest
    of the grid.

    The workers are forked once, when the first round (the grid, the searches' likely first
    candidates, and whatever the cached ones lead to) leaves more than one chunk to lay
    out, after the precompiled header is built here and before the progress bar starts; a
    later round without workers runs in this process.
    """

    def __init__(self, tgt, jobs: int, *, use_cache: bool, progress: bool):
        self.tgt, self.jobs, self.use_cache, self.progress = tgt, jobs, use_cache, progress
        self.peak_mb = 0.0
        self.chunks = 0
        self.laid_out = 0
        self.cpu = 0.0
        self.hits: set[Config] = set()

    def run(self, configs: list[Config], follow_up) -> dict:
        """Lay out ``configs``; after each batch of reports, ``follow_up(reports_by_config)``
        returns more configs to lay out. Returns every report by config."""
        import resource

        from . import engine, probe
        from .frontends.clang import ensure_pch

        out: dict[Config, object] = {}
        seen = set(configs)
        fresh = list(configs)  # not looked up in the cache yet
        todo: list[Config] = []  # to lay out
        bar = None

        def more(reps: dict) -> None:
            out.update(reps)
            new = [c for c in follow_up(reps) if c not in seen]
            seen.update(new)
            fresh.extend(new)

        def look_up() -> None:
            while fresh:  # a cached report's follow-ups are looked up at once
                batch = fresh[:]
                fresh.clear()
                reps = engine.cached(batch, self.tgt) if self.use_cache else [None] * len(batch)
                hits = {c: r for c, r in zip(batch, reps) if r is not None}
                self.hits.update(hits)
                misses = [c for c in batch if c not in hits]
                todo.extend(misses)
                if bar is not None and misses:
                    bar.add(len(misses))
                if hits:
                    more(hits)

        look_up()
        if not todo:
            return out
        if self.tgt.pch:
            for arch in sorted({c.arch for c in todo}):
                ensure_pch(probe.pch_preambles(arch), self.tgt.flags(arch), self.tgt.tree.tree_hash)
        first = _chunks(todo, self.jobs)
        pool = Pool(self.jobs, parallel=len(first) > 1)
        try:
            if self.progress and len(todo) >= 4:
                bar = Progress("laying out", len(todo))
            if pool.parallel:
                todo.clear()
                for ch in first:
                    self._submit(pool, ch)
            while todo or pool.busy:
                self._feed(pool, todo)
                for _, (ch, (reps, peak, cpu)) in pool.next_done():
                    self.peak_mb = max(self.peak_mb, peak)
                    self.cpu += cpu
                    self.laid_out += len(ch)
                    if bar is not None:
                        bar.advance(len(ch))
                    more(dict(zip(ch, reps)))
                look_up()
        finally:
            pool.close()
            if bar is not None:
                bar.stop()
        if not pool.parallel:
            self.peak_mb = max(self.peak_mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return out

    def _submit(self, pool, ch: list[Config]) -> None:
        self.chunks += 1
        pool.submit(_tagged, ch, self.tgt)

    def _feed(self, pool, todo: list[Config]) -> None:
        """Free workers take what is left now; busy ones only full chunks (in this process:
        one chunk at a time)."""
        while todo:
            idle = pool.idle
            if idle <= 0 and (not pool.parallel or len(todo) < MAX_CHUNK):
                return
            n = MAX_CHUNK if idle <= 0 else max(1, math.ceil(len(todo) / idle))
            ch = _chunks(todo, 1)[0][:min(n, MAX_CHUNK)]
            taken = set(ch)
            todo[:] = [c for c in todo if c not in taken]
            self._submit(pool, ch)


def _tagged(ch: list[Config], tgt):
    """:func:`_chunk_worker`, returning its chunk too."""
    return ch, _chunk_worker(tgt, ch)


# --------------------------------------------------------------------------------------
# the stage-count search
# --------------------------------------------------------------------------------------
class _Search:
    """Largest fitting ``StageCount<N>`` of one base config (its stages set to auto)."""

    def __init__(self, base: Config):
        self.base = base
        self.min_n = 2 if base.family == "sm120" else 1
        #: N -> (kernel bytes, mainloop bytes), or None when StageCount<N> does not compile
        self.points: dict[int, tuple[int, int] | None] = {}
        self.capacity: int | None = None

    def add(self, n: int | None, rep) -> None:
        """Learn from a report of StageCount<n> (n None: an auto config)."""
        if rep.error is not None:
            if n is not None:
                self.points[n] = None
            return
        self.capacity = rep.capacity_bytes
        self.points[rep.stages] = (rep.kernel.size, rep.mainloop.size)

    def _fits(self, n: int) -> bool:
        p = self.points.get(n)
        return p is not None and self.capacity is not None and p[0] <= self.capacity

    def bounds(self) -> tuple[int, int]:
        """(lo, hi): lo the largest N known to fit (min_n - 1 if none), hi the smallest
        N > lo known not to (MAX_STAGES + 1 if none)."""
        fit = [n for n in self.points if self._fits(n)]
        lo = max(fit) if fit else self.min_n - 1
        over = [n for n in self.points if n > lo and not self._fits(n)]
        hi = min(over) if over else MAX_STAGES + 1
        return lo, hi

    def done(self) -> bool:
        lo, hi = self.bounds()
        return hi == lo + 1 or lo >= MAX_STAGES

    def result(self) -> tuple[int | None, int | None]:
        lo, _ = self.bounds()
        if lo < self.min_n:
            return None, None
        return lo, self.points[lo][0]

    def candidates(self) -> list[int]:
        """Stage counts to lay out next, inside the open interval (lo, hi): the predicted
        answer (from the per-stage growth of the kernel) and the count after it, leaving
        out what is already known."""
        lo, hi = self.bounds()
        compiled = sorted((n, p) for n, p in self.points.items() if p is not None)
        if not compiled or self.capacity is None:  # nothing compiled yet: the bottom
            n = lo + 1
            return [n] if n < hi else []
        else:
            # reference: the compiled point nearest the boundary
            ref_n, (ref_k, ref_m) = min(compiled, key=lambda t: abs(t[1][0] - self.capacity))
            others = [(n, p) for n, p in compiled if n != ref_n]
            if others:
                n2, (k2, _) = min(others, key=lambda t: abs(t[0] - ref_n))
                delta = (k2 - ref_k) / (n2 - ref_n)
            else:  # one point: the mainloop's bytes per stage overestimate the growth
                delta = ref_m / ref_n
            if delta <= 0:
                pred = lo + 1
            else:
                pred = ref_n + math.floor((self.capacity - ref_k) / delta)
        if pred <= lo:  # lo looks like the answer: lo + 1 must not fit
            cands = [lo + 1]
        elif pred >= hi - 1:  # hi - 1 looks like the answer, hi is known not to fit
            cands = [hi - 1]
        else:
            cands = [pred, pred + 1]
        return [n for n in cands if lo < n < hi and n <= MAX_STAGES]


def _record(cfg: Config, rep, search: _Search) -> SweepRecord:
    mx, mx_bytes = search.result()
    ok = rep.error is None
    return SweepRecord(
        config=cfg.to_dict(),
        stages=rep.stages,
        mainloop_bytes=rep.mainloop.size if ok else None,
        epilogue_bytes=rep.epilogue.size if ok else None,
        kernel_bytes=rep.kernel.size if ok else None,
        capacity_bytes=rep.capacity_bytes,
        headroom_bytes=rep.headroom_bytes,
        verdict=rep.verdict,
        max_stages_that_fit=mx,
        max_stages_kernel_bytes=mx_bytes,
        error=None if ok else asdict(rep.error),
        kernel_layout=rep.kernel if ok else None,
    )


# --------------------------------------------------------------------------------------
# the API
# --------------------------------------------------------------------------------------
def _as_configs(configs_or_grid) -> list[Config]:
    from .grid import grid_configs

    if isinstance(configs_or_grid, Config):
        return [configs_or_grid]
    if isinstance(configs_or_grid, dict):
        return grid_configs(configs_or_grid)
    out = list(configs_or_grid)
    if not all(isinstance(c, Config) for c in out):
        raise BadInput("sweep: give a grid dict or a list of Config")
    return out


def sweep(configs_or_grid, cutlass=None, *, cuda_path=None, jobs: int | None = None,
          use_cache: bool = True, progress: bool = False) -> SweepResult:
    """Lay out every config of a grid and find, for each, the largest stage count that fits.

    Args:
        configs_or_grid: a list of :class:`~cutlass_layout.config.Config`, or a grid dict
            (key -> value or list of values, braces allowed; see
            :func:`cutlass_layout.grid.grid_configs`).
        cutlass: the CUTLASS source (anything :func:`cutlass_layout.engine.target` takes,
            or a :class:`~cutlass_layout.engine.Target`).
        cuda_path: see :func:`cutlass_layout.cuda.find_cuda`.
        jobs: worker processes (default ``os.cpu_count()``); 1 parses in this process.
        use_cache: read layouts cached earlier (by any command: see
            :mod:`cutlass_layout.engine`); the stage-count search then runs over them
            without libclang. Fresh layouts are stored either way.
        progress: show a progress bar on stderr while configs are laid out.

    Returns:
        A :class:`SweepResult` with one :class:`SweepRecord` per config (bytes throughout).
        A config that does not compile is a record with verdict ``does_not_compile`` and
        its error; the sweep itself does not fail.

    Raises:
        BadInput: a bad grid, CUTLASS source or CUDA path.
    """
    from .engine import target

    t0 = time.perf_counter()
    grid = _as_configs(configs_or_grid)
    if not grid:
        raise BadInput("sweep: the grid is empty")
    tgt = target(cutlass, cuda_path)
    unique = list(dict.fromkeys(grid))
    searches: dict[Config, _Search] = {}
    waiting: dict[Config, int] = {}  # base -> its configs in flight
    # the search's likely first candidates go in the first round too
    grid_set = set(unique)
    guesses = [g for g in dict.fromkeys(map(_first_candidate, unique))
               if g is not None and g not in grid_set]
    for c in unique + guesses:
        base = c.with_(stages=None)
        searches.setdefault(base, _Search(base))
        waiting[base] = waiting.get(base, 0) + 1

    def follow_up(reps: dict) -> list[Config]:
        touched = []
        for c, rep in reps.items():
            base = c.with_(stages=None)
            searches[base].add(c.stages, rep)
            waiting[base] -= 1
            touched.append(base)
        want = []
        for base in dict.fromkeys(touched):
            s = searches[base]
            if waiting[base] == 0 and not s.done():
                new = [base.with_(stages=n) for n in s.candidates()]
                waiting[base] += len(new)
                want += new
        return want

    runner = _Layouts(tgt, default_jobs(jobs), use_cache=use_cache, progress=progress)
    reps = runner.run(unique + guesses, follow_up)
    found = {c: _record(c, reps[c], searches[c.with_(stages=None)]) for c in unique}
    stats = {"configs": len(grid), "cached": sum(c in runner.hits for c in unique),
             "laid_out": runner.laid_out, "chunks": runner.chunks,
             "parse_cpu_seconds": round(runner.cpu, 2),
             "worker_peak_rss_mb": round(runner.peak_mb, 1),
             "seconds": round(time.perf_counter() - t0, 3)}
    prov = asdict(tgt.provenance(grid[0].arch))
    return SweepResult(provenance=prov, grid=grid, records=[found[c] for c in grid], stats=stats)


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------
CSV_COLUMNS = ("arch", "kernel", "a", "b", "tile", "cluster", "requested_stages", "c", "d",
               "preset", "schedule", "epilogue_schedule", "stages", "mainloop_bytes",
               "epilogue_bytes", "kernel_bytes", "capacity_bytes", "headroom_bytes", "verdict",
               "max_stages_that_fit", "max_stages_kernel_bytes", "exact_fit", "error")


def to_csv(result: SweepResult) -> str:
    """CSV text: one row per config (:data:`CSV_COLUMNS`), tile and cluster as ``MxNxK``,
    empty cells for ``None``, the error as its one-line text."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in result.records:
        c = r.config
        row = {
            **{k: c.get(k) for k in ("arch", "kernel", "a", "b", "c", "d", "preset", "schedule",
                                     "epilogue_schedule")},
            "tile": "x".join(map(str, c["tile"])), "cluster": "x".join(map(str, c["cluster"])),
            "requested_stages": c["stages"],
            **{k: getattr(r, k) for k in ("stages", "mainloop_bytes", "epilogue_bytes",
                                           "kernel_bytes", "capacity_bytes", "headroom_bytes",
                                           "verdict", "max_stages_that_fit",
                                           "max_stages_kernel_bytes")},
            "exact_fit": r.headroom_bytes == 0 if r.headroom_bytes is not None else None,
            "error": _error_text(r.error) if r.error else None,
        }
        w.writerow(["" if row[k] is None else row[k] for k in CSV_COLUMNS])
    return buf.getvalue()


def _error_text(err: dict) -> str:
    what = "static_assert failed" if err.get("kind") == "static_assert" else "error"
    where = f" ({err['file']}:{err['line']})" if err.get("file") else ""
    return f"{what}: {err.get('message')}{where}"


def render(result: SweepResult, console=None) -> None:
    """Print the table (sorted by verdict, then headroom) and a line per config that does
    not fit."""
    from rich import box
    from rich.table import Table

    from .report import config_label, default_console, varying_keys

    con = console or default_console()
    recs = result.sorted_records()
    p = result.provenance
    con.print(f"CUTLASS {p['cutlass_version']} at {p['cutlass_root']} (tree {p['tree_hash']}; "
              f"{p['origin']})")
    common = {k: v for k, v in result.records[0].config.items()}
    var = varying_keys(result.records)
    same = [k for k in ("arch", "kernel", "a", "b", "preset", "c", "d")
            if k not in var and len({json.dumps(r.config[k]) for r in result.records}) == 1]
    fixed = [f"{k} {'x'.join(map(str, common[k])) if isinstance(common[k], list) else common[k]}"
             for k in same]
    con.print(f"{len(recs)} configs: " + ", ".join(fixed))
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("verdict", no_wrap=True)
    t.add_column("config", no_wrap=True)
    for name in ("stages", "mainloop", "epilogue", "kernel", "headroom"):
        t.add_column(name, justify="right", no_wrap=True)
    t.add_column("max that fits", justify="right", no_wrap=True)
    style = {"fits": "green", "over_capacity": "red", "does_not_compile": "yellow"}
    for r in recs:
        st = r.config["stages"]
        stages = ("-" if r.stages is None else str(r.stages)) if st == "auto" else f"{st} (set)"
        if st == "auto" and r.stages is not None:
            stages = f"auto {r.stages}"
        mx = ("none" if r.max_stages_that_fit is None
              else f"{r.max_stages_that_fit} ({r.max_stages_kernel_bytes})")

        def n(v):
            return "-" if v is None else str(v)
        exact = " (exact fit)" if r.headroom_bytes == 0 else ""
        t.add_row(f"[{style[r.verdict]}]{r.verdict}{exact}[/]", config_label(r.config, var), stages,
                  n(r.mainloop_bytes), n(r.epilogue_bytes), n(r.kernel_bytes),
                  n(r.headroom_bytes), mx)
    con.print(t)
    cap = next((r.capacity_bytes for r in recs if r.capacity_bytes), None)
    if cap is not None:
        con.print(f"capacity {cap} B per block; bytes throughout; 'max that fits' = largest "
                  f"StageCount<N> whose kernel fits (laid out, as is N+1)")
    con.print("checked: types (the SharedStorage layouts; asserts inside kernel bodies were "
              "not instantiated: `layout --check-kernel` does, per config)")
    for r in recs:
        if r.verdict != "fits" or r.max_stages_that_fit != r.stages:
            con.print(f"{config_label(r.config, var)}: {r.summary()}", soft_wrap=True)
            if r.error and r.error.get("file"):  # the summary has the message
                con.print(f"  at {r.error['file']}:{r.error['line']}", soft_wrap=True, style="dim")
    counts = {v: sum(r.verdict == v for r in recs) for v in VERDICTS}
    con.print(", ".join(f"{counts[v]} {v}" for v in VERDICTS))


# --------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------
@click.command("sweep")
@config_options(repeatable=True)
@click.option("--grid", "grid_file", default=None, metavar="FILE",
              help="TOML or JSON grid file (instead of config flags).")
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema cutlass-layout/sweep/1).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV, one row per config.")
@click.option("--plot", "plot_file", default=None, metavar="FILE",
              help="Draw an SVG or PNG: kernel bytes per config against the capacity "
                   "(a memory map when the sweep is one config).")
@click.option("--no-cache", is_flag=True, help="Recompute every config (results are still stored).")
@click.option("--jobs", type=int, default=None, metavar="N",
              help="Worker processes (default: the number of CPUs).")
def command(grid_file, cutlass_src, cuda_path, as_json, as_csv, plot_file, no_cache, jobs, **flags):
    """Lay out a grid of configs: which tiles and stage counts fit, and the largest stage
    count that fits for each. Exit 0 whatever the verdicts."""
    from .grid import grid_configs, load_grid_file

    given = {k: list(v) for k, v in flags.items() if v}
    if grid_file and given:
        raise BadInput("give either --grid FILE or config flags, not both")
    if as_json and as_csv:
        raise BadInput("give either --json or --csv, not both")
    if jobs is not None and jobs < 1:
        raise BadInput(f"--jobs {jobs}: give a positive number")
    if plot_file:
        from .plot import check_plot_path

        check_plot_path(plot_file)
    configs = load_grid_file(grid_file) if grid_file else grid_configs(given)
    if not configs:
        raise BadInput("the grid is empty")
    result = sweep(configs, cutlass_src, cuda_path=cuda_path, jobs=jobs,
                   use_cache=not no_cache, progress=sys.stderr.isatty())
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    elif as_csv:
        click.echo(to_csv(result), nl=False)
    else:
        render(result)
    if plot_file:
        from .plot import plot_sweep_result

        plot_sweep_result(result, plot_file)


__all__ = ["SWEEP_SCHEMA", "SweepRecord", "SweepResult", "command", "render", "sweep", "to_csv"]
