"""Progress on stderr, off unless asked for (:func:`show_progress`; the command line turns it
on for every command, a library call with ``progress=True`` for its own duration), and only
in the process that asked (a forked worker shows nothing):

* :func:`step` says that one slow step starts (a download, unpacking a wheel, an install's
  generator, building a precompiled header, a libclang parse, nvcc): off a terminal one
  line, ``downloading flashinfer-python==0.7.2.post1 (pip download) ...``, the moment the
  step starts, and every ten seconds while it runs ``... (20 s so far) ...`` (the innermost
  step's); on a terminal a spinner, removed when the step ends;
* :class:`Progress` counts units of work: off a terminal a line when it starts,
  ``audit sm120: laying out sources: 0/11 (0 s)``, then one every few seconds (at most
  every ten, also while no unit finishes: a long run in CI or under ``nohup`` still says
  where it is, and no more often), with an estimate of the time left once a tenth of the
  units are done (:func:`time_left`, ``(38 s, about 3 min left)``); on a terminal a bar;
* :func:`stage` names the part of a longer run that every line and display inside it
  belongs to (an audit of several arches: ``arch 2 of 4 (sm100): laying out sources:
  40/219 ...``), and :func:`say` prints a line of it (off a terminal as on one).

On a terminal one display at a time: a step inside another step or a :class:`Progress`
(the parse a sweep runs in this process) shows nothing of its own; off a terminal every
step prints its line.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from typing import Any

#: A progress line as printed off a terminal: a step's ``what ...``, a count's
#: ``what: 5/11 (38 s)``, or what a long audit found so far (``audit sm90: found: ...``).
PROGRESS_LINE = re.compile(
    r"^(?!error:|warning:|note:|check)(\S.* \.\.\.|\S.*: \d+/\d+\b.* \(\d+ s(, [^)]*)?\)"
    r"|audit \S+: found: .*)$"
)


def is_progress_line(line: str) -> bool:
    """Whether a line of stderr is a progress line (:data:`PROGRESS_LINE`), for whoever reads
    a command's stderr for its errors and notes."""
    return bool(PROGRESS_LINE.match(line.rstrip("\n")))


#: Whether progress is shown, and by which process (workers forked from it show none).
SHOWN: dict[str, Any] = {"on": False, "pid": None}
#: Terminal displays (spinners, bars) showing now: on a terminal, a step or bar inside
#: another display shows nothing.
_ACTIVE = [0]
#: The stages the lines shown now belong to, innermost last (:func:`stage`).
_STAGE: list[str] = []
#: The share of a count's units done before it estimates the time left (:func:`time_left`).
BASIS = 0.1


def show_progress(enabled: bool = True) -> bool:
    """Show (or stop showing) progress on stderr in this process; returns whether it was
    shown before, to put back."""
    before = progress_shown()
    SHOWN.update(on=bool(enabled), pid=os.getpid())
    return before


def progress_shown() -> bool:
    """Whether this process shows progress (never a forked worker)."""
    return bool(SHOWN["on"]) and SHOWN["pid"] == os.getpid()


@contextmanager
def showing(enabled: bool = True):
    """Show progress inside the ``with`` block when ``enabled`` (what was set before is put
    back after it); ``enabled=False`` leaves the setting as it is."""
    before = show_progress(True) if enabled else None
    try:
        yield
    finally:
        if before is not None:  # (enabled)
            show_progress(before)


@contextmanager
def stage(text: str):
    """Inside the ``with`` block every step line, count line and display is named after the
    stage ``text`` first (``arch 2 of 4 (sm100): running ... ...``): the overall place of a run
    of several parts. Stages nest (the innermost names the lines)."""
    _STAGE.append(text)
    try:
        yield
    finally:
        _STAGE.pop()


@contextmanager
def part(i: int, names: list[str], doing: str, t0: float, *, kind: str = "arch"):
    """Part ``i`` (from 0) of a run over ``names`` that began at ``t0`` (``time.monotonic()``):
    :func:`say` ``arch 2 of 4 (sm100): auditing flashinfer 0.7.4 for sm100 (3 min so far,
    about 9 min left) ...`` (``doing`` is ``auditing flashinfer 0.7.4 for sm100``; the time
    left at the rate of the parts done, :func:`time_left`), then name every line inside the
    ``with`` block after ``arch 2 of 4 (sm100)`` (:func:`stage`). A run of one part says
    nothing and names nothing."""
    if len(names) < 2:
        yield
        return
    where = f"{kind} {i + 1} of {len(names)} ({names[i]})"
    spent = time.monotonic() - t0
    left = time_left(i, len(names), spent)
    so_far = f" ({took(spent)} so far{', ' + left if left else ''})" if i else ""
    say(f"{where}: {doing}{so_far} ...")
    with stage(where):
        yield


def took(seconds: float) -> str:
    """``40 s``, ``3 min``: how long a run of several parts has run, for its next part's line
    (minutes from 90 s, rounded half up as :func:`time_left` rounds)."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{int(seconds / 60 + 0.5)} min"


def staged(what: str) -> str:
    """``what`` as the lines shown now say it: after the current :func:`stage`, if any."""
    return f"{_STAGE[-1]}: {what}" if _STAGE else what


def in_stage() -> bool:
    """Whether a :func:`stage` names the lines shown now (a caller can then leave out of its
    labels what the stage says)."""
    return bool(_STAGE)


def audit_label(arch: str, what: str) -> str:
    """The label of an audit's step or count: ``audit sm90: laying out sources``, or inside a
    :func:`stage` (an audit of several arches, which names the arch) ``laying out sources``."""
    return what if in_stage() else f"audit {arch}: {what}"


def say(line: str) -> None:
    """Print ``line`` on stderr when progress is shown (on a terminal too: it stays there, above
    any display): what a run of several parts says as a part starts."""
    if progress_shown():
        print(line, file=sys.stderr, flush=True)


def time_left(done: int, total: int, seconds: float) -> str | None:
    """An estimate of the time left for ``total`` units when ``done`` of them took ``seconds``,
    at the rate so far, rounded half up (to ten seconds under 55 s, else to minutes): ``about 40 s
    left``, ``about 3 min left``, ``about 1 h 10 min left``;
    None before there is a basis (fewer than :data:`BASIS` of the units done, or none) and when
    all are done."""
    if total <= 0 or done <= 0 or done >= total or done < BASIS * total:
        return None
    left = seconds / done * (total - done)
    if left < 55:  # to ten seconds, half up (55 s and more: a minute)
        return f"about {max(10, int(left / 10 + 0.5) * 10)} s left"
    minutes = int(left / 60 + 0.5)
    if minutes < 60:
        return f"about {minutes} min left"
    return f"about {minutes // 60} h {minutes % 60} min left"


#: Seconds between the lines a step off a terminal prints while it runs (:func:`step`).
BEAT = 10.0
#: The steps running off a terminal, innermost last: only the innermost says it still runs.
_STEPS: list[str] = []


@contextmanager
def _beating(what: str):
    """While the block runs, ``what (20 s so far) ...`` every :data:`BEAT` seconds on stderr,
    from a thread of this process, when ``what`` is the innermost step (a long step off a
    terminal is not silent)."""
    import threading

    done, t0 = threading.Event(), time.monotonic()

    def beat():
        while not done.wait(BEAT):
            if _STEPS and _STEPS[-1] is what:
                print(f"{what} ({time.monotonic() - t0:.0f} s so far) ...", file=sys.stderr, flush=True)

    _STEPS.append(what)
    thread = threading.Thread(target=beat, name="progress-beat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        _STEPS.remove(what)


@contextmanager
def step(what: str):
    """Say on stderr that the slow step ``what`` starts (see the module docstring), when
    progress is shown: the line ``what ...`` at once, or on a terminal a transient spinner
    (unless another display shows). Use it around work that may take more than a second,
    only where the work is really done (not around a cache hit). Inside a :func:`stage` the
    line names the stage first."""
    what = staged(what)
    if not progress_shown():
        yield
        return
    if not sys.stderr.isatty():
        print(f"{what} ...", file=sys.stderr, flush=True)
        with _beating(what):
            yield
        return
    if _ACTIVE[0]:
        yield
        return
    from rich.console import Console

    _ACTIVE[0] += 1
    status = Console(stderr=True).status(what)
    status.start()
    try:
        yield
    finally:
        status.stop()
        _ACTIVE[0] -= 1


class Progress:
    """Progress of ``total`` units of work (the total may grow) on stderr.

    On a terminal: a rich bar, removed when done. Otherwise: a line such as
    ``audit sm120: laying out sources: 0/11 (0 s)`` at once, then one every ``every`` seconds
    while the work goes on (:meth:`advance` prints it when units finish, :meth:`tick` while
    none does), and one at the end (when the run took that long). The count is followed by
    ``unit`` (``30/60 tactics``) and by :attr:`detail` where set (``, 412 kernels``), the
    seconds by the time left (:func:`time_left`). Inside a :func:`stage` the label names it
    first. ``enabled=False`` shows nothing, and so does a bar in a forked worker or, on a
    terminal, inside another display.
    """

    def __init__(self, what: str, total: int = 0, *, enabled: bool = True, every: float = 10.0, unit: str = ""):
        what = staged(what)
        self.what, self.total, self.done, self.unit, self.detail = what, total, 0, unit, ""
        tty = sys.stderr.isatty()
        enabled = enabled and not (tty and _ACTIVE[0]) and SHOWN["pid"] in (None, os.getpid())
        self.enabled, self.every = enabled, every
        self.t0 = self._last = time.monotonic()
        self._bar = None
        if enabled and tty:
            _ACTIVE[0] += 1
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn(what),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[more]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task(what, total=total, more=self._more())
            self._bar.start()
        elif enabled:
            self._line()

    def add(self, n: int) -> None:
        """Grow the total by ``n`` units (follow-up work found on the way)."""
        self.total += n
        if self._bar is not None:
            self._bar.update(self._task, total=self.total, more=self._more())

    def advance(self, n: int = 1) -> None:
        """Count ``n`` units done: the bar moves, or a line when ``every`` seconds have passed
        since the last one."""
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n, more=self._more())
        else:
            self.tick()

    def tick(self) -> None:
        """Off a terminal, a line when ``every`` seconds have passed since the last one (call it
        while waiting for units: a long wait is not silent); on a terminal the bar's clock runs
        by itself."""
        if self._bar is None and self.enabled and self.due() <= 0:
            self._line()

    def due(self) -> float:
        """Seconds until :meth:`tick` prints the next line (how long a caller may wait)."""
        return self.every - (time.monotonic() - self._last)

    def note(self, text: str) -> None:
        """Print ``text`` on its own line now, above the bar (what a long run found so far;
        nothing when the bar is not shown)."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
        elif self.enabled:
            print(text, file=sys.stderr, flush=True)

    def _more(self) -> str:
        """What the count line says after ``done/total``: the unit, the detail, the time left."""
        left = time_left(self.done, self.total, time.monotonic() - self.t0)
        return "".join(
            [
                f" {self.unit}" if self.unit else "",
                f", {self.detail}" if self.detail else "",
                f" ({left})" if left and self._bar is not None else "",
            ]
        )

    def _line(self) -> None:
        self._last = time.monotonic()
        self._shown = (self.done, self.total)
        seconds = self._last - self.t0
        left = time_left(self.done, self.total, seconds)
        print(
            f"{self.what}: {self.done}/{self.total}{self._more()} ({seconds:.0f} s{', ' + left if left else ''})",
            file=sys.stderr,
            flush=True,
        )

    def stop(self) -> None:
        """Remove the bar, or print a last line (when the run took ``every`` seconds or more and
        the last line printed is not already the final count); then show nothing more."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            _ACTIVE[0] -= 1
        elif (
            self.enabled
            and self.done
            and time.monotonic() - self.t0 >= self.every
            and getattr(self, "_shown", None) != (self.done, self.total)
        ):
            self._line()
        self.enabled = False
