"""Errors that the command line turns into one clear line and an exit code.

Exit codes (the README keeps the same table; :func:`cutlass_layout.cli.main` sets them):

==== =====================================================================
0    computed (or scanned, swept, diffed, audited, resolved)
1    ``layout --check``: computed and over capacity; ``audit --check``: a tactic the runtime
     would (or may) try is over capacity, or a filter matched nothing; ``audit --blocklist``:
     the file leaves out such a tactic (its id could not be read); ``diff --exit-code``:
     differences
2    bad input (:class:`BadInput`): a missing path, a tree without CUTLASS, a bad value
3    the config does not compile (:class:`DoesNotCompile`; no numbers are given)
4    ``--verify nvcc``: nvcc disagrees; ``--verify gpu``: the launch does not bear the
     verdict out
5    an internal error (a bug: an unexpected exception): one ``error: internal error: ...``
     line (``CUTLASS_LAYOUT_DEBUG=1`` lets the traceback out instead)
130  interrupted (Ctrl-C; :class:`Interrupted` where an audit of several arches finished some)
==== =====================================================================

In Python these are plain exceptions: ``str(err)`` is one line that names values, not
command-line flags.
"""

from __future__ import annotations


#: The CLI's exit code for an unexpected exception (a bug), apart from every verdict's.
INTERNAL_ERROR_EXIT = 5


class CutlassLayoutError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with; ``str(err)`` is one line."""

    exit_code = 2


class BadInput(CutlassLayoutError):
    """Unusable input: path, source, config or grid value, or header. CLI exit code 2."""

    exit_code = 2


class NothingForArch(BadInput):
    """An audit's arch gives nothing of what was asked: the install has no builder for it,
    its builders give no kernel this reader lays out, or it does not build the family asked
    for. CLI exit code 2, as any :class:`BadInput`; an audit of every arch (``arch="all"``)
    leaves such an arch out instead, with this line as a note."""


class DoesNotCompile(CutlassLayoutError):
    """The generated probe does not compile for this config. CLI exit code 3.

    ``error`` holds the first real compiler error (a :class:`cutlass_layout.model.CompileError`).
    """

    exit_code = 3

    def __init__(self, error):
        super().__init__(error.one_line())
        self.error = error


class Interrupted(CutlassLayoutError):
    """Ctrl-C during an audit of several arches after at least one was finished. CLI exit code
    130, after the finished arches are printed.

    ``partial`` holds their results (a :class:`cutlass_layout.model.AuditSet`, the arch that was
    interrupted and those after it named in its ``notes``); ``str(err)`` names what was left.
    """

    exit_code = 130

    def __init__(self, message: str, partial):
        super().__init__(message)
        self.partial = partial
