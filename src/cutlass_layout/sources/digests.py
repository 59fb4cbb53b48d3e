"""A tree's identity: the files below a folder (:func:`tree_files`, the headers among them),
the SHA-256 of each (:func:`file_digests`) and of the whole (:func:`tree_hash`), and the cheaper
path, size and mtime hash of an install (:func:`stat_fingerprint`).

The cache's own markers beside an unpacked tree (:data:`MARKERS`, written by
:mod:`.wheels`, :mod:`.flashinfer` and :mod:`.tvm_ffi`) are not part of the tree: they are
left out of its digests.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..errors import BadInput
from ..core.files import file_kind, kind_of, walk


#: The cache's markers: beside an unpacked tree (:mod:`.wheels`), beside an unpacked install
#: (:mod:`.flashinfer`); neither is part of the tree.
MARKER = ".cutlass-layout-complete"  # written beside an unpacked tree, not part of it
INSTALL_MARKER = ".cutlass-layout-install-complete"
#: beside an unpacked install: what its metadata requires of apache-tvm-ffi
#: (:func:`~cutlass_layout.sources.tvm_ffi.tvm_ffi_headers`)
REQUIREMENT_FILE = ".cutlass-layout-tvm-ffi-requirement"
MARKERS = (MARKER, INSTALL_MARKER, REQUIREMENT_FILE)


#: File name endings of C++ headers (the files ``scan`` and ``diff`` read).
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl", ".hxx")


def tree_files(top, *, hidden: bool = True, special: list | None = None) -> list[str]:
    """Every regular file below ``top`` (or link to one), as paths relative to it
    (``/``-separated), sorted. Links to directories are not followed; with ``hidden=False``
    directories whose name starts with ``.`` (``.git``) are not entered. FIFOs, sockets,
    devices and broken links are left out (never opened), and appended to ``special`` as
    ``(relative path, what it is)`` when a list is given. The walk behind :func:`file_digests`
    (tree hashes, ``diff``'s changed headers) and :func:`header_files` (``scan``)."""

    def unreadable(rel, exc):
        if special is not None and rel:
            special.append((rel, f"an unreadable folder ({exc.strerror or exc})"))

    out = []
    for rel, e in walk(top, enter=lambda rel, e: hidden or not e.name.startswith("."), unreadable=unreadable):
        try:
            regular = e.is_file()  # follows a link
        except OSError:
            regular = False
        if regular:
            out.append(rel)
        elif special is not None and not (e.is_symlink() and os.path.isdir(e.path)):
            special.append((rel, file_kind(e.path) or "not a regular file"))
    out.sort()
    return out


def is_header(rel: str) -> bool:
    """Whether a relative path from :func:`tree_files` is a header (:data:`HEADER_SUFFIXES`)
    outside hidden directories."""
    return rel.endswith(HEADER_SUFFIXES) and not any(p.startswith(".") for p in rel.split("/")[:-1])


def header_files(top, *, special: list | None = None) -> list[str]:
    """The headers below ``top`` (see :func:`is_header`), as :func:`tree_files` gives them;
    header-named entries that are not regular files go to ``special`` (as there)."""
    found: list = []
    out = [r for r in tree_files(top, hidden=False, special=found) if is_header(r)]
    if special is not None:
        special += [(r, k) for r, k in found if is_header(r) or "folder" in k]
    return out


#: Per process: a root's tree hash (keyed by the root as given, and resolved), and its
#: file digests (keyed by ``(resolved root, "files")``).
TREE_HASHES: dict = {}


def file_digests(root) -> dict[str, bytes]:
    """SHA-256 of every file below ``root`` (but the cache's own markers beside an unpacked
    tree), by path relative to it, in :func:`tree_files` order. Read once per process.

    Raises:
        BadInput: a file cannot be read, or the tree holds a FIFO, socket or device (which a
            parse could block on): the message names it.
    """
    root = Path(root).resolve()
    if (root, "files") not in TREE_HASHES:
        out = {}
        special: list = []
        rels = tree_files(root, special=special)
        special = [(rel, kind) for rel, kind in special if kind != "a broken link"]
        if special:
            rel, kind = special[0]
            more = f" (and {len(special) - 1} more)" if len(special) > 1 else ""
            if "folder" in kind:
                raise BadInput(f"{root / rel} is {kind}{more}: every file of a CUTLASS tree must be readable")
            raise BadInput(
                f"{root / rel} is {kind}, not a regular file{more}: a CUTLASS tree "
                "must hold regular files only (a parse could block on it); remove it"
            )
        top = str(root)
        for rel in rels:
            if rel.rsplit("/", 1)[-1] in MARKERS:
                continue
            try:
                with open(os.path.join(top, rel), "rb") as fh:
                    out[rel] = hashlib.file_digest(fh, "sha256").digest()
            except OSError as exc:
                raise BadInput(
                    f"cannot read {root / rel}: {exc.strerror or exc} (every file of a CUTLASS tree must be readable)"
                ) from None
        TREE_HASHES[root, "files"] = out
    return TREE_HASHES[root, "files"]


def tree_hash(root: Path) -> str:
    """Content hash of a tree: SHA-256 over every file's relative path and the SHA-256 of its
    bytes (:func:`file_digests`), in path order. Returns the first 16 hex digits. Memoised
    per process."""
    if root not in TREE_HASHES:  # keyed as given too: resolving a path costs system calls
        h = hashlib.sha256()
        for rel, digest in file_digests(root).items():
            h.update(rel.encode() + b"\0")
            h.update(digest)
        TREE_HASHES[root] = h.hexdigest()[:16]
    return TREE_HASHES[root]


def stat_fingerprint(root: Path) -> str:
    """A hash of every file's path, size and mtime under ``root``.

    Raises:
        BadInput: a FIFO, socket or device there (the install's code, read and run, could
            block on it).
    """
    rows = []
    for rel, e in walk(root, enter=lambda rel, e: e.name != "__pycache__"):
        try:
            st = os.stat(e.path)
        except OSError:
            continue
        kind = kind_of(st.st_mode)
        if kind is not None:
            raise BadInput(
                f"{e.path} is {kind}, not a regular file: a flashinfer install must hold "
                "regular files only (its code is read and run); remove it"
            )
        if stat.S_ISDIR(st.st_mode):  # a link to a folder: named, not entered
            continue
        rows.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n")
    h = hashlib.sha256()
    for row in sorted(rows):
        h.update(row.encode())
    return h.hexdigest()[:16]
