"""The one scheduler (:mod:`cutlass_layout.engine.schedule`): tasks by tag, follow-ups, errors."""

from __future__ import annotations

import os

import pytest

from cutlass_layout.engine.schedule import Schedule


def _square(x):
    return x * x, os.getpid()


def _boom(x):
    raise ValueError(f"task {x} failed")


@pytest.mark.parametrize("jobs,parallel,threads", [(1, False, False), (2, True, False), (2, True, True)])
def test_results_by_tag_with_follow_ups(jobs, parallel, threads):
    """Every task's result comes back under its tag, those submitted while results come back
    too (a follow-up: here each even square asks for its successor's)."""
    got = {}
    with Schedule(jobs, parallel=parallel, threads=threads) as s:
        for x in (2, 3):
            s.submit(("first", x), _square, x)
        for (what, x), (sq, _) in s.results():
            got[what, x] = sq
            if what == "first" and sq % 2 == 0:
                s.submit(("follow-up", x + 10), _square, x + 10)
        assert s.busy == 0
    assert got == {("first", 2): 4, ("first", 3): 9, ("follow-up", 12): 144}


def test_forked_workers_and_this_process():
    """jobs > 1 runs in workers (other processes); parallel=False in this one."""
    with Schedule(2) as s:
        pids = {pid for _, (_, pid) in s.run(((x, _square, (x,)) for x in range(4)))}
        assert s.parallel
    assert os.getpid() not in pids
    with Schedule(2, parallel=False) as s:
        assert {pid for _, (_, pid) in s.run([(0, _square, (0,))])} == {os.getpid()}


def test_a_task_error_is_raised_and_the_workers_end():
    with pytest.raises(ValueError, match="task 1 failed"):
        with Schedule(2) as s:
            list(s.run([(1, _boom, (1,)), (2, _square, (2,))]))


def test_finished_hands_back_what_is_done_so_far():
    with Schedule(1, parallel=False) as s:
        s.submit("a", _square, 5)
        s.submit("b", _square, 6)
        first = s.finished()
        assert [t for t, _ in first] == ["a"] and s.busy == 1
        assert [t for t, _ in s.finished()] == ["b"] and s.finished() == []
