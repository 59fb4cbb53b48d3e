"""The one runner: forked or in-process pools give the same results; leaving the pool on an
error (or Ctrl-C) ends its workers at once; progress on a non-terminal is plain lines."""

from __future__ import annotations

import signal
import time

import pytest

from cutlass_layout.runner import Pool, Progress


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


def test_an_error_stops_the_workers_at_once():
    """The workers are terminated (SIGTERM), not left to finish their tasks: a pool that
    waited for them would see each worker exit normally (exit code 0) after 600 s."""
    with pytest.raises(KeyboardInterrupt):
        with Pool(2) as pool:
            assert pool.parallel
            workers = list(pool._pool._processes.values())
            assert len(workers) == 2 and all(w.is_alive() for w in workers)
            pool.submit(_long_task, 600)
            pool.submit(_long_task, 600)
            raise KeyboardInterrupt
    assert pool._pool is None and pool.busy == 0
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
    assert lines[0].startswith("laying out: 1/3") and lines[-1].startswith("laying out: 4/4")
