"""The one process pool: worker processes for parse work.

A libclang parse holds the GIL and hundreds of MB of memory (docs/performance.md), so parallel
work means processes.
:class:`Pool` forks its workers at once, before any progress thread runs, so they inherit
what the parent prepared (precompiled headers in the cache, resolved trees) and re-import
nothing; with one job, or where ``fork`` is not available, the same calls run in this
process. Tasks are submitted one at a time and collected as they finish, so a caller can
feed follow-up work (the sweep's stage-count search) to whichever worker is free.

A :class:`Pool` may run on another ``concurrent.futures``-style executor instead (one whose
``submit`` returns a ``concurrent.futures.Future``: a Dask cluster's,
:mod:`cutlass_layout.core.dask`): its tasks are then pickled whole, so they must depend on
nothing the workers would have inherited from a fork.

:func:`gc_paused` pauses Python's cyclic garbage collector while a caller builds many objects
at once (a warm audit of a whole install loads about a million objects, its reports and their
members: the collector's passes over them are most of the time such a load takes; measured:
docs/performance.md). A worker process frees what each task left (:func:`release_memory`: the
translation units a task's reference cycles kept, and the C heap's free pages), so a task's
peak is its own, not the sum of what the tasks before it left.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import lru_cache

from ..errors import BadInput


def check_jobs(jobs, name: str = "jobs"):
    """``jobs`` as given, checked: ``None`` (the default) or a positive ``int`` (not a
    ``bool``). The one check of a job count (``sweep``, ``audit``, ``diff`` and their
    ``--jobs``); ``name`` is what the message calls it (``"--jobs"`` on the command line).

    Raises:
        BadInput: anything else (``0``, ``-1``, ``2.0``, ``True``).
    """
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise BadInput(f"{name} {jobs!r}: give a positive number")
    return jobs


def default_jobs(jobs: int | None = None, executor=None) -> int:
    """``jobs`` if given (at least 1), else the ``executor``'s ``cores`` (the worker threads
    of a cluster, :class:`cutlass_layout.core.dask.DaskExecutor`), else this machine's CPUs."""
    if jobs:
        return max(1, int(jobs))
    if executor is not None and hasattr(executor, "cores"):
        return max(1, int(executor.cores))
    return os.cpu_count() or 1


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback per worker), and
    collect garbage (a parent forking inside :func:`gc_paused` has it off)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.enable()


@contextmanager
def ctrl_c_held():
    """Ctrl-C (SIGINT) held back while the block runs, then raised (the handler that was in
    place runs: ``KeyboardInterrupt`` by default). For forking: a ``KeyboardInterrupt``
    raised inside fork's own handlers (logging's, run in the parent after each fork) is
    printed as "Exception ignored" and lost, so a Ctrl-C at that moment was not seen at all.
    In the main thread only (the one Python runs signal handlers in); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if caught and callable(before):
        before(signal.SIGINT, None)


@contextmanager
def gc_paused(freeze: bool = False):
    """Python's cyclic garbage collector off for the ``with`` block, then as it was before.
    Reference counting still frees what the block drops; only cycles wait for the next
    collection. For a block that builds many long-lived objects and forks nothing.

    ``freeze``: then move every object alive to the collector's permanent generation
    (``gc.freeze()``), so that its later passes never scan them again (the first pass after
    the block would scan all it built, and the next generation's again). They are still
    freed when dropped; a cycle among them is kept until ``gc.unfreeze()``."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


def _status_mb(field: str) -> float | None:
    """A ``kB`` line of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MB, or None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@contextmanager
def task_memory():
    """The memory of one task in a worker: yields a dict whose ``start_rss_mb`` (the resident
    memory when the task started: what earlier tasks left) is set at once and ``peak_rss_mb``
    (the largest resident memory while the task ran) when the block ends. The peak is the
    process's high-water mark, reset first where Linux allows it (``/proc/self/clear_refs``),
    so that it is this task's, not the worker's lifetime's; elsewhere the lifetime's."""
    import resource

    out: dict = {}
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    out["start_rss_mb"] = round(_status_mb("VmRSS") or 0.0, 1)
    try:
        yield out
    finally:
        peak = _status_mb("VmHWM")
        if peak is None:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["peak_rss_mb"] = round(peak, 1)


def release_memory() -> None:
    """Free what the last task left: collect garbage (a libclang translation unit caught in a
    reference cycle lives, with its hundreds of MB, until a full collection) and give the C
    heap's free memory back to the system (glibc's ``malloc_trim(0)``; nothing elsewhere).

    A :class:`Pool`'s workers call it after every task, so a task starts without what the
    tasks before it left and a worker's peak is the largest task's, not their sum, for the
    same CPU time (measured: docs/performance.md)."""
    gc.collect()  # a translation unit in a reference cycle is disposed here, not at the next pass
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (found once: looking a
    library up may start a child process)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def run_task(fn, *args):
    """``fn(*args)`` in a worker, then :func:`release_memory`."""
    try:
        return fn(*args)
    finally:
        release_memory()


class Pool:
    """Run ``fn(*args)`` tasks in ``jobs`` forked worker processes (or in this process).

    Use as a context manager; :meth:`submit` returns a ticket, :meth:`next_done` waits for at
    least one task and returns ``[(ticket, result), ...]``. A task's exception is raised by
    :meth:`next_done`. Results come back by pickling: keep them plain (dataclasses, dicts).
    Leaving the ``with`` block on an exception (Ctrl-C included) stops the workers at once
    instead of waiting for their tasks; workers ignore Ctrl-C themselves.

    With ``executor`` (an object whose ``submit(fn, *args)`` returns a
    ``concurrent.futures.Future``, such as :class:`cutlass_layout.core.dask.DaskExecutor`)
    the tasks run there, ``jobs`` at a time at most as far as :attr:`idle` counts; ``reads``
    (paths the tasks read) are checked first with the executor's ``require_paths`` where it
    has one, and while no task returns, its ``check(waiting)`` is called every ``poll_s``
    seconds where it has those (it raises when the tasks can no longer finish). Closing the
    pool cancels what has not returned; the executor stays open (its owner closes it).

    With ``threads`` the workers are threads of this process: for tasks that wait on a child
    process (nvcc) rather than parse, so that nothing is forked or pickled.
    """

    def __init__(self, jobs: int, *, parallel: bool = True, executor=None, reads=(), threads: bool = False):
        self.jobs = max(1, jobs)
        self._tickets = 0
        self._futures: dict = {}
        self._local: deque = deque()
        self._pool: Executor | None = None
        self._remote = executor
        self._threads = threads and executor is None
        if executor is not None:
            if hasattr(executor, "require_paths"):
                executor.require_paths(reads)
        elif parallel and self.jobs > 1 and threads:
            self._pool = ThreadPoolExecutor(max_workers=self.jobs)
        elif parallel and self.jobs > 1 and "fork" in mp.get_all_start_methods():
            try:
                with ctrl_c_held():  # a Ctrl-C while forking is raised once the workers are there
                    self._pool = ProcessPoolExecutor(
                        max_workers=self.jobs, mp_context=mp.get_context("fork"), initializer=_worker_init
                    )
                    # the first submits fork every worker now, while this process runs no other thread
                    for f in [self._pool.submit(os.getpid) for _ in range(self.jobs)]:
                        f.result()
            except BaseException:
                self.close(stop=True)
                raise

    @property
    def parallel(self) -> bool:
        """Whether tasks run in worker processes (or on another executor)."""
        return self._pool is not None or self._remote is not None

    @property
    def busy(self) -> int:
        """Tasks submitted and not yet returned by :meth:`next_done`."""
        return len(self._futures) + len(self._local)

    @property
    def idle(self) -> int:
        """Workers without a task (0 in-process while a task waits)."""
        return max(0, self.jobs - self.busy) if self.parallel else (0 if self._local else 1)

    def submit(self, fn, *args) -> int:
        """Queue ``fn(*args)`` (in-process: run later, by :meth:`next_done`); returns its ticket."""
        self._tickets += 1
        if not self.parallel:
            self._local.append((self._tickets, fn, args))
        else:
            if not self._threads:  # a worker process frees what the task left
                fn, args = run_task, (fn, *args)
            runner = self._remote or self._pool
            assert runner is not None  # parallel: an executor or a pool
            self._futures[runner.submit(fn, *args)] = self._tickets
        return self._tickets

    def next_done(self, timeout: float | None = None) -> list[tuple[int, object]]:
        """Wait for at least one task; return ``[(ticket, result)]`` of those that finished.
        ``timeout``: wait no longer than this many seconds (then ``[]``, tasks still busy);
        a task run in this process is never cut short."""
        if not self.parallel:
            if not self._local:
                return []
            ticket, fn, args = self._local.popleft()
            return [(ticket, fn(*args))]
        if not self._futures:
            return []
        # another executor may say every so often (its poll_s) whether it can still finish
        check = getattr(self._remote, "check", None)
        poll = getattr(self._remote, "poll_s", None) if check is not None else None
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            waits = [w for w in (poll, None if end is None else max(0.0, end - time.monotonic())) if w is not None]
            done, _ = wait(list(self._futures), timeout=min(waits, default=None), return_when=FIRST_COMPLETED)
            if done:
                return [(self._futures.pop(f), f.result()) for f in done]
            if end is not None and time.monotonic() >= end:
                return []
            if check is not None:
                check(len(self._futures))

    def map(self, fn, items):
        """``fn(item)`` for every item, in any order: yields ``(item, result)`` as they finish."""
        items = list(items)
        return self.run((it, fn, (it,)) for it in items)

    def run(self, tasks):
        """``fn(*args)`` for every ``(tag, fn, args)`` of ``tasks``, all submitted at once, in any
        order: yields ``(tag, result)`` as they finish (a task's exception is raised here)."""
        tags = {self.submit(fn, *args): tag for tag, fn, args in tasks}
        while tags:
            for ticket, result in self.next_done():
                yield tags.pop(ticket), result

    def close(self, *, stop: bool = False) -> None:
        """Shut the workers down; with ``stop``, end them without waiting for their tasks. On
        another executor: cancel the tasks that have not returned (it stays open)."""
        for f in self._futures if self._remote is not None else ():
            f.cancel()
        if self._pool is not None:
            if stop:
                for proc in list(getattr(self._pool, "_processes", {}).values()):
                    proc.terminate()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()
        self._local.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(stop=exc_type is not None)
        return False
