"""The one runner: forked or in-process pools give the same results; leaving the pool on an
error (or Ctrl-C) ends its workers at once; progress on a non-terminal is plain lines, from
the moment a step or a count starts."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from cutlass_layout.core import pool as runner
from cutlass_layout.core import progress
from cutlass_layout.core.pool import Pool
from cutlass_layout.core.progress import (
    Progress,
    is_progress_line,
    part,
    progress_shown,
    say,
    show_progress,
    showing,
    stage,
    step,
    time_left,
)


def _square(x):
    return x * x


def _long_task(x):
    """A task that would keep its worker busy for ``x`` seconds (were it not ended)."""
    time.sleep(x)
    return x


@pytest.mark.parametrize("parallel", [False, True])
def test_map_gives_every_result(parallel):
    with Pool(2, parallel=parallel) as pool:
        assert pool.parallel is parallel
        assert sorted(pool.map(_square, range(6))) == [(i, i * i) for i in range(6)]
        assert pool.busy == 0


class _Executor:
    """A ``concurrent.futures``-style executor (threads) that says how many cores it has and
    which paths its tasks were said to read, and keeps the futures it gave out."""

    def __init__(self, cores):
        from concurrent.futures import ThreadPoolExecutor

        self.cores, self.read, self.futures = cores, [], []
        self._threads = ThreadPoolExecutor(cores)

    def submit(self, fn, *args):
        future = self._threads.submit(fn, *args)
        self.futures.append(future)
        return future

    def require_paths(self, paths):
        self.read += list(paths)


def _pid_and(x):
    import os

    return os.getpid(), x


#: Armed by the test below: the next fork's handler in the parent sends this process a Ctrl-C.
_CTRL_C_AT_FORK: list = []


def _ctrl_c_at_fork() -> None:
    if _CTRL_C_AT_FORK:
        _CTRL_C_AT_FORK.clear()
        os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_while_the_workers_fork_is_not_lost():
    """A Ctrl-C that comes while a worker is being forked, inside fork's own handlers in the
    parent (logging's; here one of the test's), was printed as "Exception ignored" and lost
    (the sweep went on to the end: tests/test_hostile.py's Ctrl-C test, on a loaded machine).
    It is held back and raised once the workers are there, which are then stopped."""
    os.register_at_fork(after_in_parent=_ctrl_c_at_fork)  # a no-op unless armed
    _CTRL_C_AT_FORK.append(True)
    try:
        with pytest.raises(KeyboardInterrupt):
            Pool(2)
    finally:
        _CTRL_C_AT_FORK.clear()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("kind", ["in-process", "forked", "threads"])
def test_run_tags_every_result_and_threads_fork_nothing(kind):
    """``Pool.run`` gives each task's result under its tag; a threaded pool (nvcc's) runs its
    tasks in this process, a forked one in others; a task's error reaches the caller."""
    import os

    opts = {"in-process": {"parallel": False}, "forked": {}, "threads": {"threads": True}}[kind]
    with Pool(2, **opts) as pool:
        got = dict(pool.run((f"t{i}", _pid_and, (i,)) for i in range(5)))
        assert {tag: x for tag, (_, x) in got.items()} == {f"t{i}": i for i in range(5)}
        pids = {pid for pid, _ in got.values()}
        assert (pids == {os.getpid()}) is (kind != "forked")
        with pytest.raises(ZeroDivisionError):
            list(pool.run([("bad", divmod, (1, 0))]))


def test_a_pool_on_another_executor():
    import threading

    ex = _Executor(3)
    assert runner.default_jobs(None, ex) == 3 and runner.default_jobs(2, ex) == 2 and runner.default_jobs(None) >= 1
    gate = threading.Event()
    with Pool(runner.default_jobs(None, ex), executor=ex, reads=["/a", "/b"]) as pool:
        assert ex.read == ["/a", "/b"] and pool.parallel and pool.jobs == 3
        assert sorted(pool.map(_square, range(6))) == [(i, i * i) for i in range(6)]
        assert pool.idle == 3
        pool.submit(gate.wait)
        assert pool.idle == 2 and pool.busy == 1
        gate.set()
        assert pool.next_done()[0][1] is True
    ex._threads.shutdown()
    # leaving it cancels what did not start (one thread: two of three wait), and leaves the
    # executor open
    one = _Executor(1)
    with Pool(1, executor=one) as pool:
        gate.clear()
        for _ in range(3):
            pool.submit(gate.wait)
        waiting = list(one.futures)  # what the pool submitted, as the executor saw it
    assert len(waiting) == 3
    gate.set()
    assert pool.busy == 0 and sum(f.cancelled() for f in waiting) == 2
    assert one.submit(_square, 4).result() == 16
    one._threads.shutdown()


def test_an_error_stops_the_workers_at_once():
    """The workers are terminated (SIGTERM), not left to finish their tasks: a pool that
    waited for them would see each worker exit normally (exit code 0) after 600 s."""
    import multiprocessing as mp

    before = set(mp.active_children())
    with pytest.raises(KeyboardInterrupt):
        with Pool(2) as pool:
            assert pool.parallel
            workers = [w for w in mp.active_children() if w not in before]  # the pool's forks
            assert len(workers) == 2 and all(w.is_alive() for w in workers)
            pool.submit(_long_task, 600)
            pool.submit(_long_task, 600)
            raise KeyboardInterrupt
    assert not pool.parallel and pool.busy == 0
    for w in workers:
        w.join(timeout=60)  # bounded: returns at once, close() has joined them
        assert not w.is_alive() and w.exitcode == -signal.SIGTERM, w.exitcode


def test_progress_lines_when_not_a_terminal(capsys):
    p = Progress("laying out", 3, every=0.0)
    p.advance()
    p.add(1)
    p.advance(3)
    p.stop()
    lines = capsys.readouterr().err.splitlines()
    # a line the moment it starts, then as it goes
    assert lines[0] == "laying out: 0/3 (0 s)" and lines[1].startswith("laying out: 1/3")
    assert lines[-1].startswith("laying out: 4/4")
    assert all(is_progress_line(ln) for ln in lines)


def test_parts_say_where_and_the_time_left(monkeypatch, capsys):
    """A run over several arches (:func:`part`): each part's first line says which of how many,
    from the second on the time so far and an estimate at the rate of the parts done; the lines
    inside name the part. By hand: part 2 of 3 starts at 120 s, one part took 120 s, two left:
    240 s, "about 4 min left"; part 3 at 150 s (2.5 min, "3 min" half up), 75 s a part, one left:
    75 s, "about 1 min left".
    A run of one part says nothing."""
    clock = _Clock()
    monkeypatch.setattr(progress, "time", clock)
    names, t0 = ["sm90", "sm100", "sm120"], clock.now
    before = show_progress(True)
    try:
        for i, (a, spent) in enumerate(zip(names, (120, 30, 0))):
            with part(i, names, f"auditing x for {a}", t0):
                with step("running x's builders"):
                    pass
            clock.now += spent
        with part(0, ["sm90"], "auditing x for sm90", clock.now):
            say("alone")
    finally:
        show_progress(before)
    assert capsys.readouterr().err.splitlines() == [
        "arch 1 of 3 (sm90): auditing x for sm90 ...",
        "arch 1 of 3 (sm90): running x's builders ...",
        "arch 2 of 3 (sm100): auditing x for sm100 (2 min so far, about 4 min left) ...",
        "arch 2 of 3 (sm100): running x's builders ...",
        "arch 3 of 3 (sm120): auditing x for sm120 (3 min so far, about 1 min left) ...",
        "arch 3 of 3 (sm120): running x's builders ...",
        "alone",
    ]


def test_steps_say_when_they_start_only_where_progress_is_shown(capsys):
    """Off a terminal a step prints ``what ...`` as it starts, nested steps too, in order;
    nothing while progress is not shown, and nothing in another process than the one that
    turned it on (a forked worker)."""
    with step("not shown"):
        pass
    before = show_progress(True)
    try:
        with step("downloading x (pip download)"):
            with step("unpacking x"):
                print("work", file=sys.stderr)
        progress.SHOWN["pid"] = -1  # as a forked worker sees it
        with step("in a worker"):
            pass
        assert not progress_shown()
    finally:
        show_progress(before)
    with showing(True):
        with step("asked for by a call"):
            pass
    with step("after the call"):
        pass
    assert capsys.readouterr().err.splitlines() == [
        "downloading x (pip download) ...",
        "unpacking x ...",
        "work",
        "asked for by a call ...",
    ]


def test_a_long_step_says_it_still_runs(monkeypatch, capsys):
    """Off a terminal a step that runs longer than the beat says so again while it runs
    (``what (N s so far) ...``), the innermost step alone where they nest; none after it ends."""
    import re

    monkeypatch.setattr(progress, "BEAT", 0.1)
    with showing(True):
        with step("outer"):
            with step("inner"):
                time.sleep(0.55)
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == ["outer ...", "inner ..."]
    assert len(lines) >= 4 and all(re.fullmatch(r"inner \(\d+ s so far\) \.\.\.", ln) for ln in lines[2:]), lines
    assert all(is_progress_line(ln) for ln in lines)


def test_progress_lines_are_told_from_errors_and_notes():
    assert is_progress_line("laying out 1 config for sm120 with libclang ...")
    assert is_progress_line("audit sm120: laying out sources: 5/11 (38 s)")
    assert not is_progress_line("error: no wheel for x==1 on the package index (...)")
    assert not is_progress_line("note: --tile 128x128x32: matched no tactic; nearest ...")
    assert not is_progress_line("check failed: 4 tactic(s) the runtime would try are over capacity")


def test_time_left_once_a_tenth_is_done():
    """The rate so far, by hand: 4 of 20 units in 20 s is 5 s a unit, 16 left: 80 s, "about
    1 min" (1.33); 50 of 100 in 40 s: 40 s left; 10 of 100 in 10 s: 90 s, 1.5 min, rounded half
    up: "2 min"; 1 of 2 in 4000 s: 4000 s = 66.7 min, "1 h 7 min"; 45 of 100 in 45 s: 55 s,
    rounded to minutes: "1 min"; nothing before a tenth is done (9 of 100), with nothing done, or
    when all are done."""
    assert time_left(4, 20, 20.0) == "about 1 min left"
    assert time_left(50, 100, 40.0) == "about 40 s left"
    assert time_left(99, 100, 99.0) == "about 10 s left"  # 1 s: said as the least, 10 s
    assert time_left(1, 2, 4000.0) == "about 1 h 7 min left"
    assert time_left(9, 100, 9.0) is None and time_left(10, 100, 10.0) == "about 2 min left"
    assert time_left(45, 100, 45.0) == "about 1 min left" and time_left(46, 100, 46.0) == "about 50 s left"  # 54 s
    assert time_left(0, 10, 5.0) is None and time_left(10, 10, 5.0) is None and time_left(0, 0, 1.0) is None


class _Clock:
    """``time`` as the progress module reads it, moved by hand."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def test_count_lines_in_a_stage_say_unit_detail_and_time_left(monkeypatch, capsys):
    """Off a terminal, inside a stage: every line names the stage first; a line when the count
    starts, then when ten seconds have passed since the last (:meth:`advance` or, while no unit
    finishes, :meth:`tick`), none sooner; the unit and detail follow the count, the estimate
    (from a tenth done) the seconds. By hand: 4 of 20 done at 20 s, 5 s a unit, 16 left: 80 s,
    "about 1 min"; at 30 s, 7.5 s a unit: 120 s, "about 2 min"."""
    clock = _Clock()
    monkeypatch.setattr(progress, "time", clock)
    before = show_progress(True)
    try:
        with stage("arch 2 of 4 (sm100)"):
            say("arch 2 of 4 (sm100): auditing x for sm100 ...")
            with step("running x's builders"):
                pass
            p = Progress("laying out sources", 20, unit="sources")
            clock.now += 5
            p.advance(1)  # 5 s since the first line: none
            clock.now += 5
            p.tick()  # 10 s: one, 1 of 20 is under a tenth: no estimate
            clock.now += 10
            p.detail = "40 kernels laid out"
            p.advance(3)
            clock.now += 5
            p.tick()
            clock.now += 5
            p.tick()
            p.stop()  # the last line printed is the final count's: none more
        Progress("outside", 1, every=10.0).stop()
    finally:
        show_progress(before)
    say("not shown now")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "arch 2 of 4 (sm100): auditing x for sm100 ...",
        "arch 2 of 4 (sm100): running x's builders ...",
        "arch 2 of 4 (sm100): laying out sources: 0/20 sources (0 s)",
        "arch 2 of 4 (sm100): laying out sources: 1/20 sources (10 s)",
        "arch 2 of 4 (sm100): laying out sources: 4/20 sources, 40 kernels laid out (20 s, about 1 min left)",
        "arch 2 of 4 (sm100): laying out sources: 4/20 sources, 40 kernels laid out (30 s, about 2 min left)",
        "outside: 0/1 (0 s)",
    ]
    assert all(is_progress_line(ln) for ln in lines)


def test_a_schedule_says_where_it_is_while_no_unit_finishes(capsys):
    """A count whose one unit takes longer than its line interval: off a terminal the count
    line comes again while the unit runs (the wait is not silent), then the final count."""
    from cutlass_layout.engine.schedule import Schedule

    with Schedule(2, threads=True, label="waiting", total=1, progress=True) as s:
        assert s.parallel
        s.bar.every = 0.2  # a line at most every 0.2 s; the schedule waits 0.5 s at least
        s.submit("slow", _long_task, 2)
        for tag, _ in s.results():
            assert tag == "slow"
            s.advance()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "waiting: 0/1 (0 s)" and lines[-1].startswith("waiting: 1/1 (")
    assert len([ln for ln in lines if ln.startswith("waiting: 0/1 (")]) >= 2, lines
    assert all(is_progress_line(ln) for ln in lines)


def _gc_enabled(_):
    import gc

    return gc.isenabled()


def test_gc_paused_restores_the_collector_and_workers_collect():
    """The collector is off inside ``gc_paused`` and as before after it (off stays off);
    ``freeze`` moves what is alive out of its passes; a pool forked inside the block has
    workers that collect."""
    import gc

    from cutlass_layout.core.pool import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with Pool(2, parallel=True) as pool:
            assert [r for _, r in pool.map(_gc_enabled, range(2))] == [True, True]
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    kept = [[i] for i in range(1000)]
    before = gc.get_freeze_count()
    try:
        with gc_paused(freeze=True):
            kept.append([])
        assert gc.get_freeze_count() >= before + len(kept) and gc.isenabled()
    finally:
        gc.unfreeze()


class _Node:
    pass


def _leave_a_cycle():
    """A task that leaves garbage in a reference cycle (as a libclang translation unit can)."""
    import weakref

    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def _mark(folder):
    import os

    (folder / str(os.getpid())).write_text("released")


def test_workers_free_what_each_task_left(tmp_path, monkeypatch):
    """A worker process collects what its task left in reference cycles (and trims the C
    heap) when the task ends: ``release_memory`` runs after every task, in the worker."""
    import gc
    import os

    gc.disable()
    try:
        assert runner.run_task(_leave_a_cycle)() is None  # collected as the task ended
    finally:
        gc.enable()
    monkeypatch.setattr(runner, "release_memory", lambda: _mark(tmp_path))
    with Pool(2) as pool:
        pids = {pid for _, (pid, _) in pool.map(_pid_and, range(4))}
    marked = {int(p.name) for p in tmp_path.iterdir()}
    assert marked == pids and os.getpid() not in marked


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_task_memory_is_the_peak_of_the_block():
    """``task_memory`` gives the resident memory when the block starts and its peak inside:
    a block that writes 200 MB peaks at least 150 MB above where it started."""
    with runner.task_memory() as mem:
        start = mem["start_rss_mb"]
        data = b"\1" * (200 << 20)
        del data
    assert mem["peak_rss_mb"] >= start + 150
