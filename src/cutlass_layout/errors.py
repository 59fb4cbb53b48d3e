"""Errors that the command line turns into one clear line and an exit code.

Exit codes (the README keeps the same table):

==== =====================================================================
0    computed (or scanned, swept, diffed)
1    computed and over capacity, when ``--check`` is given
2    bad input: a missing path, a tree without CUTLASS, a bad flag value
3    the config does not compile (no numbers are given)
==== =====================================================================
"""

from __future__ import annotations


class CutlassLayoutError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with; ``str(err)`` is one line."""

    exit_code = 2


class BadInput(CutlassLayoutError):
    """Unusable input: path, source, flag value or header. CLI exit code 2."""

    exit_code = 2


class DoesNotCompile(CutlassLayoutError):
    """The generated probe does not compile for this config. CLI exit code 3.

    ``error`` holds the first real compiler error (a :class:`cutlass_layout.model.CompileError`).
    """

    exit_code = 3

    def __init__(self, error):
        super().__init__(error.one_line())
        self.error = error
