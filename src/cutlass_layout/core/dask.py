"""Where a :class:`~cutlass_layout.core.pool.Pool` runs its tasks: this machine's forked workers,
or a Dask cluster.

An executor is named by a string: ``None`` (the environment's ``DASK_SCHEDULER_ADDRESS``
where it is set, else this machine), ``"local"`` (this machine, whatever the environment
says), ``"dask://HOST:PORT"`` (a Dask scheduler; ``tcp://`` and ``tls://`` addresses, as
Dask writes them, are taken as they are). :func:`executor` turns it into ``None`` (the
local pool) or a :class:`DaskExecutor`, which connects on its first task only (a run whose
results are all cached needs no cluster) and is closed by its user (:func:`session`).

A Dask cluster runs ``distributed`` (the ``dask`` extra: ``pip install distributed``, or ``pip install -e '.[dask]'`` in the clone).
Its workers unpickle each task (a module-level function and plain arguments: paths,
flags, dataclasses) and import this package themselves, so they need it installed, and
they read the CUTLASS tree, the generated sources and the CUDA headers at the paths this
process names (one filesystem shared by the machines, or the same paths on each):
:meth:`DaskExecutor.require_paths` checks that before any task is sent. What a task
returns comes back here; the caller stores it in its own results cache, so a result that
came back is never computed again, and a task whose worker is lost before it returned is
run again by Dask on another worker.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import BadInput

if TYPE_CHECKING:
    from distributed import Client

#: The environment variable Dask itself reads for a scheduler's address.
ENV_ADDRESS = "DASK_SCHEDULER_ADDRESS"
#: Seconds to wait for the scheduler to answer and for a first worker to join
#: (``CUTLASS_LAYOUT_DASK_TIMEOUT_S`` overrides).
TIMEOUT_S = 20.0
_ADDRESS = re.compile(r"(?:(dask|tcp|tls)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def scheduler_address(spec: str | None) -> str | None:
    """The Dask scheduler address (``tcp://HOST:PORT``) that ``spec`` names, or None for the
    local pool: ``spec`` as the module docstring says (None reads ``DASK_SCHEDULER_ADDRESS``).

    Raises:
        BadInput: a spec that is neither ``local`` nor a ``dask://HOST:PORT`` address (or a
            ``tcp://``/``tls://`` one), or a port outside 1-65535.
    """
    where = "executor"
    if spec is None:
        spec = os.environ.get(ENV_ADDRESS) or None
        where = ENV_ADDRESS
        if spec is None:
            return None
    text = str(spec).strip()
    if text == "local":
        return None
    m = _ADDRESS.fullmatch(text)
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise BadInput(f"{where} {text!r}: give local or dask://HOST:PORT (a Dask scheduler's address)")
    scheme = "tcp" if m.group(1) in (None, "dask") else m.group(1)
    return f"{scheme}://{m.group(2)}:{int(m.group(3))}"


def timeout_s() -> float:
    """Seconds to wait for a scheduler and its first worker (:data:`TIMEOUT_S`, or
    ``CUTLASS_LAYOUT_DASK_TIMEOUT_S``).

    Raises:
        BadInput: a value of ``CUTLASS_LAYOUT_DASK_TIMEOUT_S`` that is not a positive number.
    """
    raw = os.environ.get("CUTLASS_LAYOUT_DASK_TIMEOUT_S")
    if not raw:
        return TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise BadInput(f"CUTLASS_LAYOUT_DASK_TIMEOUT_S={raw!r}: give a positive number of seconds")
    return value


def executor(spec: str | None) -> "DaskExecutor | None":
    """The executor ``spec`` names (see the module docstring): None for this machine's
    forked pool, else a :class:`DaskExecutor`, not connected yet.

    Raises:
        BadInput: a bad spec (:func:`scheduler_address`); a Dask address where
            ``distributed`` is not installed (the message names the ``dask`` extra).
    """
    address = scheduler_address(spec)
    if address is None:
        return None
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise BadInput(
            f"executor {address}: Dask's distributed is not installed "
            "(the dask extra: pip install distributed, or pip install -e '.[dask]' in the clone)"
        ) from None
    return DaskExecutor(address, timeout_s())


@contextmanager
def session(spec: str | None):
    """``with session(spec) as ex:`` the executor ``spec`` names (:func:`executor`; None:
    the local pool), closed when the block ends.

    Raises:
        BadInput: as :func:`executor`, when the block is entered.
    """
    ex = executor(spec)
    try:
        yield ex
    finally:
        if ex is not None:
            ex.close()


def _missing(paths: list[str]) -> list[str]:
    """Those of ``paths`` that this process cannot see (run on every Dask worker)."""
    return [p for p in paths if not os.path.exists(p)]


class DaskExecutor:
    """Tasks on the Dask cluster whose scheduler is at ``address`` (``tcp://HOST:PORT``),
    submitted through its client (tasks are not ``pure``: each submit runs), each relayed to a
    ``concurrent.futures.Future`` (:func:`_relay`; not through the client's own
    ``get_executor()``, whose ``cfexecutor._cascade_future`` reads a result and then the
    future's status, and fails with "not enough values to unpack" where a worker that held the
    result dies in between and the scheduler computes it again). Connects on first use, waiting ``timeout`` seconds at most for the
    scheduler and for a first worker, and failing a run whose cluster has had no worker for
    that long (:meth:`check`)."""

    #: Seconds between :meth:`check` calls while no task returns (:class:`~cutlass_layout.core.pool.Pool`).
    poll_s = 2.0

    def __init__(self, address: str, timeout: float):
        self.address, self.timeout = address, timeout
        self._client: Client | None = None
        self._pending: set = set()  # Dask futures submitted and not done
        self._no_worker_since: float | None = None

    def _connect(self):
        if self._client is not None:
            return self._client
        from distributed import Client

        try:
            client = Client(self.address, timeout=self.timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise BadInput(
                f"Dask scheduler {self.address}: no answer within {self.timeout:g} s ({_first_line(exc)})"
            ) from None
        try:
            client.wait_for_workers(1, timeout=self.timeout)
        except (OSError, TimeoutError) as exc:
            client.close()
            raise BadInput(
                f"Dask scheduler {self.address}: no worker joined within {self.timeout:g} s ({_first_line(exc)})"
            ) from None
        self._client = client
        return client

    @property
    def cores(self) -> int:
        """Worker threads in the cluster now (each runs one task at a time); connects."""
        return max(1, sum(self._connect().nthreads().values()))

    def submit(self, fn, *args):
        """Send ``fn(*args)`` to the cluster; returns a ``concurrent.futures.Future`` (cancelling
        it cancels the task) whose exception, where the cluster failed the task rather than
        the task itself (a worker that died running it every time it was tried, the
        scheduler gone), is a :class:`~cutlass_layout.errors.BadInput` saying so."""
        inner = self._connect().submit(fn, *args, pure=False)
        self._pending.add(inner)
        return _relay(inner, self.address, self._pending.discard)

    def check(self, waiting: int) -> None:
        """Called while ``waiting`` tasks have not returned: fine while the cluster has a
        worker (Dask sends the tasks there, those of a lost worker again).

        Raises:
            BadInput: the cluster has had no worker for :attr:`timeout` seconds.
        """
        import time

        if sum(self._connect().nthreads().values()):
            self._no_worker_since = None
            return
        now = time.monotonic()
        if self._no_worker_since is None:
            self._no_worker_since = now
        elif now - self._no_worker_since >= self.timeout:
            raise BadInput(
                f"Dask scheduler {self.address}: no worker left for {self.timeout:g} s, {waiting} task(s) not done"
            )

    def require_paths(self, paths) -> None:
        """Check that every worker sees each of ``paths`` (files or folders) where this
        process does.

        Raises:
            BadInput: a worker that does not, naming it and the first path it lacks.
        """
        want = sorted({str(p) for p in paths if p is not None})
        if not want:
            return
        missing = self._connect().run(_missing, want)
        for worker, lacks in sorted(missing.items()):
            if lacks:
                raise BadInput(
                    f"Dask worker {worker} cannot see {lacks[0]}: the workers read the "
                    "install, the cache and the CUDA headers at the paths this machine "
                    "names (share one filesystem, or lay them out alike on each)"
                )

    def close(self) -> None:
        """Disconnect (the cluster keeps running); tasks not returned yet are cancelled."""
        if self._client is not None:
            if self._pending:
                self._client.cancel(list(self._pending))
            self._client.close()
            self._client, self._pending = None, set()


def _relay(inner, address: str, done=None) -> cf.Future:
    """A ``concurrent.futures.Future`` with the outcome of the Dask future ``inner``, the
    cluster's own failures said in one line; cancelling it cancels ``inner``. ``done(inner)``
    is called once ``inner`` is done. The outcome is read with ``inner.result()``, which waits
    again where a worker holding the result died and the scheduler computes it anew."""
    from distributed import KilledWorker

    outer: cf.Future = cf.Future()
    outer.add_done_callback(lambda f: f.cancelled() and inner.cancel())

    def copy(f) -> None:
        if done is not None:
            done(f)
        result: Any = None
        exc: BaseException | None = None
        try:
            result = f.result()
        except KilledWorker as e:
            exc = BadInput(f"Dask scheduler {address}: every worker that ran a task died running it ({_first_line(e)})")
        except cf.CancelledError:  # distributed raises concurrent.futures.CancelledError (and subclasses)
            exc = BadInput(
                f"Dask scheduler {address}: the task was cancelled there (the scheduler "
                "or the connection to it was lost)"
            )
        except BaseException as e:  # the task's own exception
            exc = e
        try:
            if exc is not None:
                outer.set_exception(exc)
            else:
                outer.set_result(result)
        except cf.InvalidStateError:  # cancelled here meanwhile
            pass

    inner.add_done_callback(copy)
    return outer


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
