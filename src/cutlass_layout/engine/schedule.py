"""The one scheduler: every command's parse (or nvcc) work runs through a :class:`Schedule`.

A command says *what* to run: tasks, each a function and its arguments under a tag the
command knows its result by. The schedule runs them on the one pool
(:class:`~cutlass_layout.core.pool.Pool`: forked workers, threads for tasks that wait on a
child, or another executor such as a Dask cluster), shows progress (a count of units, or one
spinner line), and hands each result back as it finishes, so the command can store it, count
it, and submit what it was waiting for (a unit that needed a precompiled header, the next
stage counts of a search). Closing the schedule ends the workers, at once when the block it
runs in raised (Ctrl-C, an error), and stops the progress display.

Use::

    with Schedule(jobs, label="audit sm120: laying out sources", total=len(units)) as s:
        for unit in units:
            s.submit(unit, lay_out_unit, unit)
        for unit, result in s.results():
            ...  # store it; s.submit(...) follow-ups; s.advance(n)

The pool is forked before the progress display starts its thread (a fork copies no thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

from ..core.pool import Pool
from ..core.progress import Progress, progress_shown, step


class Schedule:
    """Tasks run on the one pool, with progress; results come back by their tags.

    ``jobs`` workers (at least 1); ``parallel=False`` runs every task in this process, in
    :meth:`results`; ``threads``: threads of this process, for tasks that wait on a child
    process; ``executor``: another ``concurrent.futures``-style executor (a Dask client's),
    told which folders the tasks read (``reads``). Progress: ``label`` counts ``total`` units
    (:meth:`advance`, :meth:`add`), shown where ``progress`` is asked for or progress is on
    (:func:`~cutlass_layout.core.progress.show_progress`); ``spinner`` instead says one line
    for the whole run (:func:`~cutlass_layout.core.progress.step`).
    """

    def __init__(
        self,
        jobs: int,
        *,
        parallel: bool = True,
        threads: bool = False,
        executor=None,
        reads=(),
        label: str | None = None,
        total: int = 0,
        progress: bool = False,
        spinner: str | None = None,
        unit: str = "",
    ):
        self._args = dict(parallel=parallel, threads=threads, executor=executor, reads=list(reads))
        self._jobs, self._label, self._total, self._progress = jobs, label, total, progress
        self._spinner, self._unit = spinner, unit
        self._tags: dict[int, object] = {}
        self._stack = ExitStack()
        self.pool: Pool | None = None
        self.bar: Progress | None = None

    def __enter__(self) -> Schedule:
        self.pool = self._stack.enter_context(Pool(self._jobs, **self._args))
        if self._label is not None:  # after the fork: the bar's thread is not copied
            self.bar = Progress(self._label, self._total, enabled=self._progress or progress_shown(), unit=self._unit)
            self._stack.callback(self.bar.stop)
        if self._spinner is not None:
            self._stack.enter_context(step(self._spinner))
        return self

    def __exit__(self, *exc) -> bool | None:
        return self._stack.__exit__(*exc)

    @property
    def _pool(self) -> Pool:
        """The pool, inside the ``with`` block."""
        assert self.pool is not None, "a Schedule runs inside its with block"
        return self.pool

    @property
    def jobs(self) -> int:
        """Workers the pool has."""
        return self._pool.jobs

    @property
    def parallel(self) -> bool:
        """Whether tasks run in workers (or on another executor), not in this process."""
        return self._pool.parallel

    @property
    def busy(self) -> int:
        """Tasks submitted whose results :meth:`results` has not handed back yet."""
        return self._pool.busy

    @property
    def idle(self) -> int:
        """Workers without a task (in this process: 1 while nothing waits)."""
        return self._pool.idle

    def submit(self, tag, fn: Callable, *args) -> None:
        """Run ``fn(*args)``; its result comes back from :meth:`results` as ``(tag, result)``."""
        self._tags[self._pool.submit(fn, *args)] = tag

    def results(self) -> Iterator[tuple[Any, Any]]:
        """(Any: the tags and results are the caller's own.) ``(tag, result)`` of every task as it finishes, those submitted meanwhile too, until
        none is left (a task's exception is raised here)."""
        while self._pool.busy:
            for ticket, result in self._pool.next_done(self._wait()):
                yield self._tags.pop(ticket), result
            self.tick()

    def _wait(self) -> float | None:
        """How long to wait for a result before the progress display says where it is."""
        return None if self.bar is None or not self.bar.enabled else max(0.5, self.bar.due())

    def tick(self) -> None:
        """The progress display says where it is, when it is due (off a terminal, a line every
        few seconds while no unit finishes: a long wait is not silent)."""
        if self.bar is not None:
            self.bar.tick()

    def finished(self) -> list[tuple[Any, Any]]:
        """Wait for at least one task (none: nothing is busy); ``(tag, result)`` of those that
        finished by then, so that the caller can feed idle workers before it waits again."""
        while True:
            done = self._pool.next_done(self._wait())
            self.tick()
            if done or not self._pool.busy:
                return [(self._tags.pop(ticket), result) for ticket, result in done]

    def run(self, tasks) -> Iterator[tuple[Any, Any]]:
        """Submit every ``(tag, fn, args)`` of ``tasks``, then :meth:`results`."""
        for tag, fn, args in tasks:
            self.submit(tag, fn, *args)
        return self.results()

    def advance(self, n: int = 1) -> None:
        """``n`` units of the progress count done."""
        if self.bar is not None:
            self.bar.advance(n)

    def add(self, n: int) -> None:
        """The progress count's total grows by ``n`` units."""
        if self.bar is not None:
            self.bar.add(n)

    def note(self, line: str) -> None:
        """A line said beside the progress display (what a long run found so far)."""
        if self.bar is not None:
            self.bar.note(line)
