"""Reading what a user names: regular files only, and limits on what input may cost.

Every file a command reads because a user named it (a header, a grid file, the files of a
tree, the members of a wheel) goes through here:

* only regular files (or links to them) are opened: a FIFO, socket or device is refused
  (:func:`read_file`) or skipped (:func:`file_kind` tells what it is), never read, so a FIFO
  in a tree cannot hang a command;
* :data:`LIMITS` bounds what an archive may unpack, what one file may weigh and how many
  configs a grid may hold (docs/exit-codes.md, "Limits"); ``--no-limits`` (:func:`lift_limits`)
  lifts them. Going over one raises :class:`OverLimit`, a :class:`BadInput`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput

MiB = 1 << 20


@dataclass
class Limits:
    """What input may cost; ``None`` is no limit.

    Attributes:
        archive_bytes: bytes one wheel may unpack into the cache (the largest real ones unpack
            under 50 MB: flashinfer 0.7.2.post1's CUTLASS tree 47 MB, its JIT parts 48 MB).
        file_bytes: bytes one header (or other file of a tree or wheel) may weigh to be
            unpacked or scanned (the largest real header, a generated flashinfer source, is
            4.2 MB; tree-sitter takes a large multiple of a file's size in memory:
            docs/performance.md).
        grid_configs: configs one sweep or diff grid may hold (a cold sweep parses every
            config, so 1024 are already a long run: docs/performance.md).
    """

    archive_bytes: int | None = 512 * MiB
    file_bytes: int | None = 8 * MiB
    grid_configs: int | None = 1024


#: The limits in force (the command line's ``--no-limits`` calls :func:`lift_limits`).
LIMITS = Limits()


class OverLimit(BadInput):
    """Input over one of :data:`LIMITS` (the command line adds how to lift them)."""


def lift_limits() -> None:
    """No limits (``--no-limits``) for the rest of this process."""
    LIMITS.archive_bytes = LIMITS.file_bytes = LIMITS.grid_configs = None


def size_text(n: int) -> str:
    """``8 MiB``, ``47.7 MiB``, ``512 B``: a byte count for a message."""
    if n % MiB == 0:
        return f"{n // MiB} MiB"
    return f"{n / MiB:.1f} MiB" if n >= MiB // 10 else f"{n} B"


def check_limit(value: int, limit: int | None, what: str, unit=size_text) -> None:
    """Raise :class:`OverLimit` when ``value`` is over ``limit`` (``what``: the subject)."""
    if limit is not None and value > limit:
        raise OverLimit(f"{what} is {unit(value)}, over the limit of {unit(limit)}")


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def kind_of(mode: int) -> str | None:
    """``None`` for a regular file, else what it is (``a FIFO``, ``a directory``, ...)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def file_kind(path) -> str | None:
    """``None`` when ``path`` is a regular file (or a link to one), else what it is; links
    that lead nowhere are ``a broken link``. Opens nothing."""
    try:
        return kind_of(os.stat(path).st_mode)
    except FileNotFoundError:
        return "a broken link" if os.path.islink(path) else "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"


def _refuse(cls, message: str, why: str) -> BadInput:
    exc = cls(message)
    exc.why = why  # the reason alone, for a diagnostic that names the file elsewhere
    return exc


def read_file(path, *, what: str = "file", limit: int | None | bool = True) -> bytes:
    """The bytes of the regular file ``path``.

    The file is opened without blocking and checked after opening (a FIFO swapped in after a
    check is still refused). ``limit``: ``True`` for :data:`LIMITS`'s ``file_bytes``, an int,
    or ``None``/``False`` for none.

    Raises:
        BadInput: missing, not a regular file, unreadable (one line naming ``path``; the
            exception's ``why`` holds the reason alone).
        OverLimit: bigger than the limit.
    """
    if limit is True:
        limit = LIMITS.file_bytes
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise _refuse(BadInput, f"cannot read {what} {path}: {why}", why) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        kind = kind_of(st.st_mode)
        if kind is not None:
            raise _refuse(BadInput, f"{what} {path} is {kind}, not a regular file", f"{kind}, not a regular file")
        if limit and st.st_size > limit:
            why = f"{size_text(st.st_size)}, over the limit of {size_text(limit)} on one file"
            raise _refuse(OverLimit, f"{what} {path} is {why}", why)
        try:
            return fh.read()
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise _refuse(BadInput, f"cannot read {what} {path}: {why}", why) from None


def read_text(path, *, what: str = "file", limit: int | None | bool = True, errors: str = "strict") -> str:
    """:func:`read_file` decoded as UTF-8 (``errors`` as for :meth:`bytes.decode`).

    Raises:
        BadInput: as :func:`read_file`, or not UTF-8 text (with ``errors="strict"``).
    """
    data = read_file(path, what=what, limit=limit)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None


__all__ = [
    "LIMITS",
    "Limits",
    "OverLimit",
    "check_limit",
    "file_kind",
    "kind_of",
    "lift_limits",
    "read_file",
    "read_text",
    "size_text",
]


def output_path(path, what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` a command can write its ``what`` to (a blocklist, an
    exclude list): its folder exists, checked before the work that fills it.

    Raises:
        BadInput: the folder does not exist (``cannot write the {what} {path}: no folder F``)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BadInput(f"cannot write the {what} {path}: no folder {folder}")
    return path


def walk(top, *, enter=None, unreadable=None):
    """Every entry below ``top`` that is not a directory (files, links, FIFOs, ...), as
    ``(relative path, os.DirEntry)`` (``/``-separated), in no particular order: the one walk
    of the package over a tree. Links to directories are not followed; a directory is entered
    where ``enter(relative path, entry)`` says so (every one without ``enter``);
    ``unreadable(relative path, OSError)`` hears of a folder that cannot be listed (the top's
    relative path is ``""``), which is otherwise skipped. An entry whose type cannot be read
    counts as a file."""
    stack = [("", os.fspath(top))]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            if unreadable is not None:
                unreadable(prefix.rstrip("/"), exc)
            continue
        for e in entries:
            rel = prefix + e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if not is_dir:
                yield rel, e
            elif enter is None or enter(rel, e):
                stack.append((rel + "/", e.path))
