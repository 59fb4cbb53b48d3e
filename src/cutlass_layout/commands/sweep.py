"""Sweeps and budgets: which tiles and stage counts fit, for a whole grid of configs.

``sweep(grid)`` lays out every config of a grid (see :mod:`cutlass_layout.subjects.grid`) with the
exact engine, many configs per libclang translation unit, spread over a process pool, and
for each config also finds ``max_stages_that_fit``: the largest explicit ``StageCount<N>``
whose kernel ``SharedStorage`` fits the capacity, searched below and above the builder's
choice. Every number it reports comes from a layout of the engine:

* the search predicts candidates from the per-stage growth of the kernel, then lays out
  each candidate (in batches) and stops only when it holds a layout of ``N`` that fits and
  one of ``N + 1`` that does not (or does not compile); ``N`` must be at least 2 for the
  SM120 collectives (their static_assert), else 1. Its likely first candidate (one more
  than a guess of the builder's count, :func:`first_candidate`) is laid out in the first
  round, next to the config: a right guess saves a round, a wrong one costs a layout;
* a ``StageCountAuto...`` config that chose ``S`` stages instantiates the same mainloop
  type as ``StageCount<S>`` (the builder computes ``S`` and then builds with it), so its
  layout counts as the layout of ``StageCount<S>``.

A grid may also be user types (``sweep --header``, :class:`~cutlass_layout.subjects.user_type.UserType`):
each is laid out as the header defines it, and where the header takes its stage count from
the ``STAGES`` macro, the same search runs over ``STAGES=N`` (N from 2: every pipelined
mainloop needs two stages); a type that does not take it gets no search.

Every layout comes from the engine's results cache when it holds it (one entry per
config, shared with ``layout`` and ``diff``; see :mod:`cutlass_layout.engine.loop`), so a
repeated sweep runs the whole search over cached layouts without starting libclang.

The result is a :class:`~cutlass_layout.model.SweepResult` (its ``to_dict()`` is the
``sweep --json`` object, schema ``cutlass-layout/sweep/1``); the table and the CSV are in
:mod:`cutlass_layout.reports.sweep`, the plots in :mod:`cutlass_layout.reports.plot`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence

from ..errors import BadInput
from ..model import SWEEP_SCHEMA, CompileError, SweepRecord, SweepResult  # noqa: F401 (SWEEP_SCHEMA re-exported)
from ..core.pool import check_jobs, default_jobs
from ..core.progress import step
from ..engine.schedule import Schedule
from ..subjects.config import Config
from ..subjects.user_type import UserType

#: Upper bound of the stage-count search.
MAX_STAGES = 32
#: Most configs in one translation unit (memory grows with it: measured peaks per worker in
#: docs/performance.md).
MAX_CHUNK = 48
#: Fewest configs worth a worker process of its own.
MIN_CHUNK = 4


# --------------------------------------------------------------------------------------
# running the engine in a pool
# --------------------------------------------------------------------------------------
def _chunk_worker(tgt, configs: list[Config]):
    """Lay out ``configs`` (not in the cache: the caller looked) in this process, and store
    them in the cache: (reports, peak RSS in MB, CPU seconds)."""
    import resource

    from ..engine.loop import layouts

    t = time.process_time()
    reps = layouts(configs, tgt, use_cache=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return reps, peak, time.process_time() - t


#: Capacity per family, only to guess which configs do not compile (chunk order); every
#: capacity reported is read from the headers.
_CAPACITY_GUESS = {"sm120": 101376, "sm90": 232448, "sm100": 232448}
#: Guesses of the epilogue's carve-out and of the bytes a builder counts per stage besides
#: the A and B tiles (pipeline barriers), per family (same use): SM120's TMA epilogues take
#: about 9 KB; SM90's default (``EpilogueScheduleAuto``) takes none; SM100's 1SM/2SM TMA
#: epilogues tens of KB (a guess: a wrong one costs a layout, never a number).
_CARVEOUT_GUESS = {"sm120": 9216, "sm90": 0, "sm100": 32768}
_STAGE_EXTRA_GUESS = {"sm120": 128, "sm90": 32, "sm100": 32}


def _arch(c) -> str:
    """The arch whose flags parse ``c`` (see :func:`cutlass_layout.engine.loop.parse_arch`)."""
    return c.parse_arch if isinstance(c, UserType) else c.arch


def _stage_bytes_guess(c: Config) -> int:
    """A rough per-stage byte count (A and B tiles and their block scale factors), only to
    order configs and guess which ones do not compile (0 for a user type)."""
    from ..subjects.config import ELEMENTS

    if isinstance(c, UserType):
        return 0
    m, n, k = c.mnk
    assert c.a is not None and c.b is not None  # a config of a known arch: __post_init__ sets them
    sf = {"nvfp4": 16, "mxfp4": 32, "mxfp8": 32}
    scales = sum(rows * k // sf[e] for rows, e in ((m, c.a), (n, c.b)) if e in sf)
    return (m * ELEMENTS[c.a].bits + n * ELEMENTS[c.b].bits) * k // 8 + scales


def _stages_guess(c: Config) -> int:
    """A guess of the builder's auto stage count: (capacity - carve-out) / (stage bytes +
    the bytes the builder counts for a stage's pipeline barriers)."""
    room = _CAPACITY_GUESS.get(c.family, 1 << 62) - _CARVEOUT_GUESS.get(c.family, 0)
    return room // (_stage_bytes_guess(c) + _STAGE_EXTRA_GUESS.get(c.family, 128))


def _min_stages(c: Config) -> int:
    """The fewest stages the family's collectives accept (their static_assert); 2 for a user
    type (every pipelined mainloop needs two)."""
    return 2 if isinstance(c, UserType) or c.family == "sm120" else 1


def likely_fails(c: Config) -> bool:
    """Whether the builder's auto stage count is likely below the collective's minimum, so
    the config fails its static_assert. A guess: it only keeps such configs out of the
    translation units of configs that compile (a unit with an error gives no numbers, and
    the others in it must be parsed again)."""
    if isinstance(c, UserType):
        return False
    return c.stages is None and _stages_guess(c) < _min_stages(c)


def first_candidate(c: Config) -> Config | None:
    """The stage count the search will most likely lay out after ``c`` (an auto config),
    to lay out in the same round: one more than the guessed auto count (to show that the
    builder's choice is the largest that fits), or the minimum when the auto config likely
    does not compile. A wrong guess costs one layout (still a point of the search), never
    a number."""
    if c.stages is not None or isinstance(c, UserType):
        return None
    n = _min_stages(c) if likely_fails(c) else _stages_guess(c) + 1
    return c.with_(stages=n) if _min_stages(c) <= n <= MAX_STAGES else None


def _mainloop_key(c: Config) -> tuple:
    """What the mainloop type depends on (the epilogue flavour does not change it)."""
    if isinstance(c, UserType):
        return c.unit_key()
    return (c.arch, c.kernel, c.a, c.b, c.tile, c.cluster, c.schedule)


def chunks(configs: list[Config], jobs: int) -> list[list[Config]]:
    """Split into chunks of one arch each: a multiple of ``jobs`` chunks where there is
    enough work, each of at most :data:`MAX_CHUNK` configs.

    Configs that likely do not compile (:func:`likely_fails`) get chunks of their own: a
    unit with an error gives numbers for none of its configs. Within that, by
    :func:`_stage_bytes_guess`, and configs that share a mainloop type (they differ in the
    epilogue only) next to each other, so they share a translation unit: clang
    instantiates the mainloop once, and the second config costs a fraction of the first.
    """
    groups: dict[tuple, list[Config]] = {}
    for c in sorted(configs, key=lambda c: (_arch(c), likely_fails(c), _stage_bytes_guess(c), repr(_mainloop_key(c)))):
        groups.setdefault((_arch(c), likely_fails(c)), []).append(c)
    out = []
    for group in groups.values():
        n = len(group)
        k = max(1, min(math.ceil(n / MIN_CHUNK), jobs * math.ceil(n / (jobs * MAX_CHUNK))))
        size = math.ceil(n / k)
        out += [group[i : i + size] for i in range(0, n, size)]
    return out


class _Layouts:
    """Lays out configs as a pipeline: each config is looked up in the engine's results
    cache first; the others go, in chunks, to a :class:`~cutlass_layout.core.pool.Pool` of
    ``jobs`` workers (or run in this process), and every report that comes back (from the
    cache or a worker) feeds the stage-count searches, whose next candidates are looked up
    and batched into new chunks as soon as a worker is free, without waiting for the rest
    of the grid.

    On an ``executor`` (a Dask cluster, :mod:`cutlass_layout.core.dask`) the chunks run
    there instead of in forked workers, and the reports that come back are stored here.

    The workers are forked once, when the first round (the grid, the searches' likely first
    candidates, and whatever the cached ones lead to) leaves more than one chunk to lay
    out, after the precompiled header is built here and before the progress bar starts; a
    later round without workers runs in this process.
    """

    def __init__(self, tgt, jobs: int, *, use_cache: bool, progress: bool, executor=None):
        self.tgt, self.jobs, self.use_cache, self.progress = tgt, jobs, use_cache, progress
        self.executor = executor
        self.peak_mb = 0.0
        self.chunks = 0
        self.laid_out = 0
        self.cpu = 0.0
        self.hits: set[Config] = set()

    def run(self, configs: list[Config], follow_up) -> dict:
        """Lay out ``configs``; after each batch of reports, ``follow_up(reports_by_config)``
        returns more configs to lay out. Returns every report by config."""
        import resource

        from ..cpp.clang import ensure_pch
        from ..engine import loop as engine
        from ..subjects import probe

        out: dict[Config, object] = {}
        seen = set(configs)
        fresh = list(configs)  # not looked up in the cache yet
        todo: list[Config] = []  # to lay out
        sched: list[Schedule] = []  # the schedule, once there is one

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
                if sched and misses:
                    sched[0].add(len(misses))
                if hits:
                    more(hits)

        look_up()
        if not todo:
            return out
        if self.tgt.pch:
            for arch in sorted({_arch(c) for c in todo}):
                pre = probe.pch_preambles(arch)
                if not any(isinstance(c, Config) and c.arch == arch for c in todo):
                    pre = pre[-1:]  # user types alone: the includes (as the engine parses them)
                ensure_pch(pre, self.tgt.flags(arch), self.tgt.tree.tree_hash, building=step)
        first = chunks(todo, self.jobs)
        remote = self.executor if len(first) > 1 else None
        try:
            with Schedule(
                self.jobs,
                parallel=len(first) > 1,
                executor=remote,
                reads=[self.tgt.tree.include_root, self.tgt.cuda.path],
                label="laying out",
                total=len(todo),
                progress=self.progress,
            ) as s:
                sched.append(s)
                parallel = s.parallel
                if parallel:
                    todo.clear()
                    for ch in first:
                        self._submit(s, ch)
                while todo or s.busy:
                    self._feed(s, todo)
                    for ch, (reps, peak, cpu) in s.finished():
                        self.peak_mb = max(self.peak_mb, peak)
                        self.cpu += cpu
                        self.laid_out += len(ch)
                        s.advance(len(ch))
                        if remote is not None:  # stored there, in the worker's own cache: here too
                            for c, rep in zip(ch, reps):
                                engine.store_report(self.tgt, c, rep)
                        more(dict(zip(ch, reps)))
                    look_up()
        except KeyboardInterrupt:
            if self.progress and self.laid_out:
                print(
                    f"sweep interrupted: the {self.laid_out} layouts it finished are kept in the "
                    "results cache; the same sweep again starts from them",
                    file=sys.stderr,
                )
            raise
        if not parallel:  # the parses ran here
            self.peak_mb = max(self.peak_mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return out

    def _submit(self, s: Schedule, ch: list[Config]) -> None:
        self.chunks += 1
        s.submit(ch, _chunk_worker, self.tgt, ch)

    def _feed(self, s: Schedule, todo: list[Config]) -> None:
        """Free workers take what is left now; busy ones only full chunks (in this process:
        one chunk at a time)."""
        while todo:
            idle = s.idle
            if idle <= 0 and (not s.parallel or len(todo) < MAX_CHUNK):
                return
            n = MAX_CHUNK if idle <= 0 else max(1, math.ceil(len(todo) / idle))
            ch = chunks(todo, 1)[0][: min(n, MAX_CHUNK)]
            taken = set(ch)
            todo[:] = [c for c in todo if c not in taken]
            self._submit(s, ch)


# --------------------------------------------------------------------------------------
# the stage-count search
# --------------------------------------------------------------------------------------
class StageSearcher:
    """Largest fitting ``StageCount<N>`` of one base config (its stages set to auto).

    Explicit counts are its points; the auto config's layout stands for ``StageCount<S>``
    (S its stage count) where ``StageCount<S>`` itself was not laid out. A builder can
    accept its own count and refuse every explicit one (CUTLASS's SM120 block-scaled sparse
    builder, tags v3.9.0 to v4.7.0:
    ``sm120_compute_stage_count_or_override_blockscaled_sparse(StageCount<stages>)``
    returns an ``int``, ``sm120_blockscaled_sparse_mma_builder.inl`` ~57, and the builder
    takes ``get<1>`` of it, ~310: cute's ``get<I>(Integral)`` asserts "Index out of
    range"), so until some explicit count compiled, an answer resting on the auto config's
    layout is laid out as ``StageCount<S>`` too, and a search in which nothing explicit
    compiled lays out the auto config: it tells a search that found nothing (``none
    fits``) from one that could not run (the auto config compiles).
    """

    def __init__(self, base: Config):
        self.base = base
        self.min_n = _min_stages(base)
        #: a user type that does not take STAGES: no stage count to search
        self.fixed = isinstance(base, UserType) and not base.takes_stages
        #: N -> (kernel bytes, mainloop bytes), or None when StageCount<N> does not compile
        self.points: dict[int, tuple[int, int] | None] = {}
        #: N -> the error of StageCount<N> (those that do not compile)
        self.errors: dict[int, CompileError] = {}
        #: the auto config: None not laid out, False did not compile, else (S, kernel, mainloop)
        self.auto: tuple[int, int, int] | bool | None = None
        self.capacity: int | None = None

    def add(self, n: int | None, rep) -> None:
        """Learn from a report of StageCount<n> (n None: an auto config)."""
        if rep.error is not None:
            if n is None:
                self.auto = False
            else:
                self.points[n] = None
                self.errors[n] = rep.error
            return
        self.capacity = rep.capacity_bytes
        mainloop = rep.mainloop.size if rep.mainloop is not None else rep.subject.size
        if n is None:
            self.auto = (rep.stages, rep.smem_bytes, mainloop) if rep.stages is not None else False
        elif rep.stages is not None:  # a user type may have none
            self.points[rep.stages] = (rep.smem_bytes, mainloop)

    def _all(self) -> dict[int, tuple[int, int] | None]:
        """The points, with the auto config's where its count was not laid out explicitly."""
        if isinstance(self.auto, tuple) and self.auto[0] not in self.points:
            return {**self.points, self.auto[0]: self.auto[1:]}
        return self.points

    def _fits(self, n: int) -> bool:
        p = self._all().get(n)
        return p is not None and self.capacity is not None and p[0] <= self.capacity

    def bounds(self) -> tuple[int, int]:
        """(lo, hi): lo the largest N known to fit (min_n - 1 if none), hi the smallest
        N > lo known not to (MAX_STAGES + 1 if none)."""
        pts = self._all()
        fit = [n for n in pts if self._fits(n)]
        lo = max(fit) if fit else self.min_n - 1
        over = [n for n in pts if n > lo and not self._fits(n)]
        hi = min(over) if over else MAX_STAGES + 1
        return lo, hi

    def _closed(self) -> bool:
        lo, hi = self.bounds()
        return hi == lo + 1 or lo >= MAX_STAGES

    def _explicit_compiled(self) -> bool:
        return any(p is not None for p in self.points.values())

    def _to_confirm(self) -> list[int | None]:
        """With the interval closed but no explicit count compiled: what is left to lay out
        (the auto config, or ``StageCount<lo>`` where lo is the auto config's count)."""
        if self._explicit_compiled():
            return []
        if self.auto is None:
            return [None]
        lo, _ = self.bounds()
        if isinstance(self.auto, tuple) and lo == self.auto[0] and lo not in self.points:
            return [lo]
        return []

    def done(self) -> bool:
        if self.fixed:
            return True
        return self._closed() and not self._to_confirm()

    def status(self):
        """How the search ended (:class:`~cutlass_layout.model.StageSearch`)."""
        from ..model import StageSearch

        if self.fixed:
            return StageSearch("not searched")
        if self.errors and not self._explicit_compiled() and isinstance(self.auto, tuple):
            tried = sorted(self.errors)
            # the auto config's own count tells the most: it compiles, StageCount<S> does not
            n = self.auto[0] if self.auto[0] in self.errors else tried[0]
            what = (
                "STAGES=N does not compile for this type"
                if isinstance(self.base, UserType)
                else "StageCount<N> does not compile for this builder"
            )
            err = self.errors[n]
            kind = "static_assert failed" if err.kind == "static_assert" else "error"
            where = f" ({err.file}:{err.line})" if err.file else ""
            return StageSearch(
                "could not run", f"{what} (N = {', '.join(map(str, tried))}; {kind}: {err.message}{where})"
            )
        return StageSearch("none fits" if self.result()[0] is None else "found")

    def result(self) -> tuple[int | None, int | None]:
        if self.fixed:
            return None, None
        lo, _ = self.bounds()
        if lo < self.min_n:
            return None, None
        point = self._all()[lo]
        assert point is not None  # lo: a count known to fit, laid out
        return lo, point[0]

    def candidates(self) -> list[int | None]:
        """Stage counts to lay out next, inside the open interval (lo, hi): the predicted
        answer (from the per-stage growth of the kernel) and the count after it, leaving
        out what is already known; once the interval is closed, :meth:`_to_confirm` (``None``:
        the auto config)."""
        lo, hi = self.bounds()
        if self._closed():  # nothing explicit compiled: confirm (see _to_confirm)
            return self._to_confirm()
        compiled = sorted((n, p) for n, p in self._all().items() if p is not None)
        cap = self.capacity
        if not compiled or cap is None:  # nothing compiled yet: the bottom
            n = lo + 1
            return [n] if n < hi else []
        else:
            # reference: the compiled point nearest the boundary
            ref_n, (ref_k, ref_m) = min(compiled, key=lambda t: abs(t[1][0] - cap))
            others = [(n, p) for n, p in compiled if n != ref_n]
            if others:
                n2, (k2, _) = min(others, key=lambda t: abs(t[0] - ref_n))
                delta = (k2 - ref_k) / (n2 - ref_n)
            else:  # one point: the mainloop's bytes per stage overestimate the growth
                delta = ref_m / ref_n
            if delta <= 0:
                pred = lo + 1
            else:
                pred = ref_n + math.floor((cap - ref_k) / delta)
        if pred <= lo:  # lo looks like the answer: lo + 1 must not fit
            cands = [lo + 1]
        elif pred >= hi - 1:  # hi - 1 looks like the answer, hi is known not to fit
            cands = [hi - 1]
        else:
            cands = [pred, pred + 1]
        return [n for n in cands if lo < n < hi and n <= MAX_STAGES]


def sweep_record(cfg: Config, rep, search: StageSearcher) -> SweepRecord:
    """The sweep's row of ``rep``: its :meth:`~cutlass_layout.model.LayoutReport.numbers` and
    the stage search's answer."""
    mx, mx_bytes = search.result()
    n = rep.numbers()
    return SweepRecord(
        config=cfg,
        stages=n.stages,
        mainloop_bytes=n.mainloop_bytes,
        epilogue_bytes=n.epilogue_bytes,
        kernel_bytes=n.kernel_bytes,
        capacity_bytes=n.capacity_bytes,
        headroom_bytes=n.headroom_bytes,
        verdict=n.verdict,
        max_stages_that_fit=mx,
        max_stages_kernel_bytes=mx_bytes,
        stage_search=search.status(),
        occupancy=n.occupancy,
        launch_findings=n.launch_findings,
        error=n.error,
        kernel_layout=rep.kernel if n.error is None else None,
        arch_from_tag=rep.config.get("arch") if rep.config.get("arch_from") == "tag" else None,
    )


# --------------------------------------------------------------------------------------
# the API
# --------------------------------------------------------------------------------------
def _as_configs(grid, values: dict) -> Sequence[Config | UserType]:
    from ..subjects.config import config_from
    from ..subjects.grid import grid_configs

    if values:
        if grid is not None and not isinstance(grid, dict):
            raise BadInput("give either configs or grid values, not both")
        return grid_configs({**(grid or {}), **values})
    if grid is None:
        raise BadInput("give a grid: configs, a dict of grid values, or grid values such as tile='128x{32,64}x128'")
    if isinstance(grid, dict):
        return grid_configs(grid)
    if isinstance(grid, (Config, UserType, str)):
        grid = [grid]
    try:
        items = list(grid)
    except TypeError:
        raise BadInput(f"grid {grid!r}: give configs, a dict of grid values, or grid values") from None
    return [c if isinstance(c, UserType) else config_from(c) for c in items]


def sweep(
    grid=None,
    cutlass=None,
    *,
    cuda_path=None,
    jobs: int | None = None,
    executor=None,
    use_cache: bool = True,
    progress: bool = False,
    **values,
) -> SweepResult:
    """Lay out every config of a grid and find, for each, the largest stage count that fits.

    Args:
        grid: the configs: a list of :class:`~cutlass_layout.subjects.config.Config` (or of tile
            strings, or of dicts of config values), or a grid dict (key -> value or list
            of values, braces allowed; see :func:`cutlass_layout.subjects.grid.grid_configs`).
        cutlass: the CUTLASS source (anything :func:`cutlass_layout.engine.loop.target` takes,
            or a :class:`~cutlass_layout.engine.loop.Target`).
        cuda_path: see :func:`cutlass_layout.sources.cuda.find_cuda`.
        jobs: worker processes (default: the number of CPUs, or the executor's worker
            threads); 1 parses in this process.
        executor: None (forked workers here) or an executor
            (:func:`cutlass_layout.core.dask.executor`: a Dask cluster) for the chunks;
            the reports come back and are stored here.
        use_cache: read layouts cached earlier (by any command: see
            :mod:`cutlass_layout.engine.loop`); the stage-count search then runs over them
            without libclang. Fresh layouts are stored either way.
        progress: show progress on stderr while configs are laid out (a bar on a terminal,
            else a line every few seconds: :class:`~cutlass_layout.core.progress.Progress`).
        values: grid values as the ``sweep`` command's repeatable flags take them, instead
            of (or added to a dict) ``grid``: ``tile="128x{32,64,128,256}x{128,256}"``,
            ``preset=["flashinfer", "trtllm-moe"]``, ``stages=["auto", 3]``, ...

    Returns:
        A :class:`~cutlass_layout.model.SweepResult` with one
        :class:`~cutlass_layout.model.SweepRecord` per config (bytes throughout). A config
        that does not compile is a record with verdict ``does_not_compile`` and its error;
        the sweep itself does not fail. Each preset config's record has its
        ``approximation`` (:func:`cutlass_layout.commands.audit.approximations`: the
        install's cached tactics of the same config, where the tree is a flashinfer's).

    Every layout is stored in the results cache as soon as its parse gives it, so an
    interrupted sweep keeps what it computed and the same sweep again starts from it.

    Raises:
        BadInput: a bad grid, CUTLASS source, CUDA path or number of jobs.
        OverLimit: a grid of more configs than :data:`~cutlass_layout.core.files.LIMITS` allows.
    """
    from ..engine.loop import target
    from ..subjects.grid import check_size

    t0 = time.perf_counter()
    grid = _as_configs(grid, values)
    if not grid:
        raise BadInput("the grid is empty")
    check_size(len(grid))
    check_jobs(jobs)
    tgt = target(cutlass, cuda_path)
    unique = list(dict.fromkeys(grid))
    searches: dict[Config, StageSearcher] = {}
    waiting: dict[Config, int] = {}  # base -> its configs in flight
    # the search's likely first candidates go in the first round too
    grid_set = set(unique)
    guesses = [g for g in dict.fromkeys(map(first_candidate, unique)) if g is not None and g not in grid_set]
    for c in unique + guesses:
        base = c.with_(stages=None)
        searches.setdefault(base, StageSearcher(base))
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

    runner = _Layouts(tgt, default_jobs(jobs, executor), use_cache=use_cache, progress=progress, executor=executor)
    reps = runner.run(unique + guesses, follow_up)
    found = {c: sweep_record(c, reps[c], searches[c.with_(stages=None)]) for c in unique}
    from .audit.presets import approximations

    for c, appr in zip(unique, approximations(unique, tgt.tree, cuda_path=tgt.cuda.path)):
        found[c].approximation = appr
    stats = {
        "configs": len(grid),
        "cached": sum(c in runner.hits for c in unique),
        "laid_out": runner.laid_out,
        "chunks": runner.chunks,
        "parse_cpu_seconds": round(runner.cpu, 2),
        "worker_peak_rss_mb": round(runner.peak_mb, 1),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return SweepResult(
        provenance=tgt.provenance(_arch(grid[0])), grid=grid, records=[found[c] for c in grid], stats=stats
    )


__all__ = ["MAX_CHUNK", "MAX_STAGES", "SWEEP_SCHEMA", "SweepRecord", "SweepResult", "sweep"]
