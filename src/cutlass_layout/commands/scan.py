"""Scan a CUTLASS tree (or one header) for shared-memory storage structs and TMA byte constants.

This is the fast, compiler-free view: it parses headers with tree-sitter-cpp and reports what
the source *says* (declarations, ``alignas``, extents, expressions), not sizes or offsets, which
need template arguments (the libclang engine computes those). Typical use::

    from cutlass_layout import scan
    from cutlass_layout.reports.scan import render_text
    result = scan("flashinfer-python==0.7.2.post1", grep="TensorStorage")
    print(render_text(result))
    json.dumps(result.to_dict())

The records are the model's (:class:`~cutlass_layout.model.ScanResult`,
:class:`~cutlass_layout.model.Struct`, ...; :data:`SCHEMA` is their JSON's); the headers are
parsed by :mod:`cutlass_layout.cpp.treesitter`. What is reported:

* every ``struct``/``union``/``class`` with a body whose name contains ``Storage``
  (``SharedStorage``, ``TensorStorage``, ``PipelineStorage``, ``TensorMapStorage``,
  ``CollectiveStorageWithC``, ...; not helpers ending in Calculator, Traits, Type, Helper,
  Policy) with its nested structs, bases, fields in declaration order
  (type, ``alignas``, array extent, guarding ``#if``), file and 1-based line;
* constants (``static constexpr`` members and namespace-scope ``constexpr``/``const``) named
  ``TmaTransactionBytes*``, ``*Stages``, ``*_smem_capacity_bytes`` or ``*SmemCapacity*``, with
  their expression text and, when it is a literal or a sum/difference/product of literals, the
  integer value;
* diagnostics: files cut off inside a struct, unmatched braces, parse errors inside a storage
  struct, storage structs lost in a parse error, constants whose value does not fit their
  declared type, and files not read (unreadable, over the size limit, a FIFO or device:
  ``not read: ...``, kept by ``grep`` too, since such a file may hold what was asked for).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..errors import BadInput
from ..model import SCAN_SCHEMA as SCHEMA  # noqa: F401 (re-exported)
from ..model import Diagnostic, Field, ScanConstant, ScanResult, Scope, Struct  # noqa: F401 (re-exported)
from ..core.pool import default_jobs
from ..engine.schedule import Schedule
from ..core.files import file_kind, read_file
from ..sources.digests import HEADER_SUFFIXES, header_files

#: A file is parsed only if its bytes match this (cheap prefilter, about 250 of 820 headers
#: of a CUTLASS 4.x tree).
_PREFILTER_WORDS = (b"Storage", b"TmaTransactionBytes", b"_smem_capacity_bytes", b"SmemCapacity", b"Stages")
_PREFILTER_RES = (
    re.compile(
        rb"(?:struct|union|class)\s+(?:(?:CUTE_ALIGNAS|alignas|__align__)\s*\([^)]*\)\s*)?"
        rb"\w*Storage"
    ),
    re.compile(rb"(?:TmaTransactionBytes|Stages|_smem_capacity_bytes|SmemCapacity)\w*\s*[={]"),
)


def _wanted(data: bytes) -> bool:
    """Cheap byte prefilter: may this file hold a storage struct or a wanted constant?"""
    return any(w in data for w in _PREFILTER_WORDS) and any(r.search(data) for r in _PREFILTER_RES)


_POOL_MIN_FILES = 24  # fewer files than this are scanned in-process
_WORKERS = 2  # at most (the tree-sitter work of a whole tree is small: docs/performance.md)


# --------------------------------------------------------------------------------------------
# scanning


def _check_text(data: bytes, where: str) -> str | None:
    """One-line reason why ``data`` is not a header's text, or None if it is."""
    if not data.strip():
        return f"empty file: {where}"
    nul = data.find(b"\0")
    if nul >= 0:
        return f"binary file (NUL byte at offset {nul}): {where}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}): {where}"
    return None


def _scan_file(path: str, rel: str, strict: bool = False):
    """Scan one file. Returns (structs, constants, diagnostics, parsed?).

    With ``strict`` (a single file named by the user) unreadable input raises BadInput;
    otherwise it becomes a diagnostic (binary, non-UTF-8) or is skipped (empty).
    """
    try:
        data = read_file(path, what="header")  # a regular file within the limit, else refused
    except BadInput as exc:
        if strict:
            raise
        return [], [], [Diagnostic(rel, 0, f"{_UNREAD}{getattr(exc, 'why', exc)}")], False
    if strict:
        why = _check_text(data, path)
        if why:
            raise BadInput(why)
    elif not _wanted(data):
        return [], [], [], False
    else:
        why = _check_text(data, rel)
        if why:
            return [], [], ([] if why.startswith("empty") else [Diagnostic(rel, 0, why.split(":")[0])]), False
    from ..cpp import treesitter

    try:
        structs, consts, diags = treesitter.scan_source(data, rel)
    except (RecursionError, ValueError, UnicodeError, AttributeError, TypeError) as exc:
        # A scanner bug on odd input must not cost the rest of the tree: say so and go on.
        return [], [], [Diagnostic(rel, 0, f"internal error, file skipped: {type(exc).__name__}: {exc}")], True
    return structs, consts, diags, True


#: How a diagnostic of a file that was not read starts (kept by ``--grep``: it may hold a match).
_UNREAD = "not read: "


def _scan_batch(job) -> list:
    root, rels = job
    return [(rel, _scan_file(os.path.join(root, rel), rel)) for rel in rels]


#: The largest line offset taken (no header is this long).
MAX_LINE_OFFSET = 1_000_000


def parse_line_offset(text: str | int | None) -> tuple[str | None, int]:
    """``N`` (the excerpt starts after N lines of the real file) or ``FILE:START`` (the real
    file's name and the excerpt's first line there) -> (file name or None, lines to add).

    Raises:
        BadInput: neither form, or a number out of range.
    """
    if text is None:
        return None, 0
    if isinstance(text, int) and not isinstance(text, bool):
        name, num, start = None, text, False
    else:
        t = str(text).strip()
        name, sep, tail = t.rpartition(":")
        if not sep:
            name, tail = None, t
        start = bool(sep)
        try:
            num = int(tail)
        except ValueError:
            raise BadInput(
                f"line offset {text!r}: give N (lines of the real file before the "
                "excerpt) or FILE:START (the real file and the excerpt's first line)"
            ) from None
        if sep and not name:
            raise BadInput(f"line offset {text!r}: FILE:START needs the file's name")
    offset = num - 1 if start else num
    if offset < 0 or (start and num < 1) or offset > MAX_LINE_OFFSET:
        raise BadInput(f"line offset {text!r}: give a line between {1 if start else 0} and {MAX_LINE_OFFSET}")
    return name, offset


def scan_text(
    data: bytes, name: str = "<stdin>", *, line_offset: int = 0, grep: str | None = None, root: str = "-"
) -> ScanResult:
    """Scan the text of one header (bytes, e.g. read from stdin or a ``sed -n 250,300p``
    excerpt), reported as file ``name``, its lines counted from ``line_offset + 1`` (the
    lines of the real file before the excerpt), so that every line number, in the records
    and in the diagnostics' words, is the real file's.

    Raises:
        BadInput: empty, binary or non-UTF-8 text, or a bad ``line_offset``.
    """
    t0 = time.perf_counter()
    if isinstance(line_offset, bool) or not isinstance(line_offset, int) or not (0 <= line_offset <= MAX_LINE_OFFSET):
        raise BadInput(f"line offset {line_offset!r}: give a number from 0 to {MAX_LINE_OFFSET}")
    why = _check_text(data, name)
    if why:
        raise BadInput(why)
    from ..cpp import treesitter

    # the lines before the excerpt, as empty lines: every line the parser reports is the real one
    try:
        structs, consts, diags = treesitter.scan_source(b"\n" * line_offset + data, name)
    except (RecursionError, ValueError, UnicodeError, AttributeError, TypeError) as exc:
        structs, consts = [], []
        diags = [Diagnostic(name, 0, f"internal error, text skipped: {type(exc).__name__}: {exc}")]
    result = ScanResult(root, structs, consts, diags, 1, 1)
    _sort(result)
    if grep:
        _apply_grep(result, grep)
    result.seconds = time.perf_counter() - t0
    return result


def scan(path, grep: str | None = None, *, line_offset: int = 0, as_cutlass: bool = False) -> ScanResult:
    """Scan a header, a directory of headers or a CUTLASS source.

    ``path`` is an existing file (scanned alone, whatever its suffix), an existing directory
    (its ``.h .hpp .cuh .inl .hxx`` files, recursively), or anything
    :func:`cutlass_layout.sources.trees.resolve_cutlass` accepts (wheel, ``name==version``,
    installed distribution), whose include root is scanned. ``grep`` keeps the storage
    structs whose name or qualified name (or a nested struct's) contains it, and the constants
    whose name or qualified name contains it (case-sensitive).

    Returns a :class:`ScanResult`; file paths in it are relative to the scanned root (the
    file's directory for a single file). ``line_offset`` (a single file only): the file is
    an excerpt that starts after that many lines of the real one (see :func:`scan_text`).
    ``as_cutlass`` (``scan --cutlass SRC``): ``path`` is a CUTLASS source, a folder too (a
    site-packages, a checkout): its CUTLASS include root is scanned, not every header below it.

    Raises:
        BadInput: missing path, empty/binary/non-UTF-8 single file, directory without
            headers, or a source ``resolve_cutlass`` rejects; a ``line_offset`` for more than
            one file. Damaged C++ never raises: it is reported in ``diagnostics`` and as
            ``cut`` structs.
    """
    t0 = time.perf_counter()
    text = os.fspath(path)
    p = Path(text).expanduser()
    source = None
    if line_offset:
        if as_cutlass or not p.is_file() or p.name.endswith(".whl"):
            raise BadInput(f"a line offset applies to one header (or stdin), not to {text}")
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise BadInput(f"cannot read {p}: {exc.strerror}") from None
        result = scan_text(data, p.name, line_offset=line_offset, grep=grep, root=str(p.parent))
        result.seconds = time.perf_counter() - t0
        return result
    if p.is_file() and not p.name.endswith(".whl") and not as_cutlass:
        root = p.parent
        rel = p.name
        structs, consts, diags, parsed = _scan_file(str(p), rel, strict=True)
        result = ScanResult(str(root), structs, consts, diags, 1, int(parsed))
    else:
        if p.is_dir() and not as_cutlass:
            root = p
        elif p.exists() and not p.is_dir() and not p.is_file():
            raise BadInput(f"not a file or directory: {text} is {file_kind(p)}")
        elif not p.exists() and (
            text.endswith(HEADER_SUFFIXES) or os.sep in text or text.startswith(".") or text.startswith("~")
        ):
            raise BadInput(f"path does not exist: {text}")
        else:
            from ..sources.trees import resolve_cutlass

            tree = resolve_cutlass(text)
            root = tree.include_root
            source = f"CUTLASS {tree.version} from {tree.origin}"
        special: list = []
        rels = header_files(root, special=special)
        if not rels and not special:
            raise BadInput(f"no headers ({' '.join(HEADER_SUFFIXES)}) under {root}")
        result = scan_files(root, rels)
        result.source = source
        result.files_scanned += len(special)
        result.diagnostics += [
            Diagnostic(rel, 0, _UNREAD + (kind if "folder" in kind else f"{kind}, not a regular file"))
            for rel, kind in special
        ]
    _sort(result)
    if grep:
        _apply_grep(result, grep)
    result.seconds = time.perf_counter() - t0
    return result


def scan_files(root, rels: list[str]) -> ScanResult:
    """Scan the headers ``rels`` (paths relative to ``root``) without the byte prefilter's
    rejects; results sorted by file and line. Many files are scanned by worker processes
    (:class:`~cutlass_layout.core.pool.Pool`), biggest first, dealt round-robin into small
    batches so the workers finish together and pickling stays cheap."""
    result = ScanResult(str(root), files_scanned=len(rels))
    jobs = min(_WORKERS, default_jobs()) if len(rels) >= _POOL_MIN_FILES else 1
    if jobs == 1:
        outs = _scan_batch((str(root), rels))
    else:
        sizes = {}
        for r in rels:
            try:
                sizes[r] = os.path.getsize(os.path.join(root, r))
            except OSError:
                sizes[r] = 0
        order = sorted(rels, key=lambda r: -sizes[r])
        nbatch = jobs * 8
        batches = [(str(root), order[i::nbatch]) for i in range(nbatch)]
        outs = []
        with Schedule(jobs) as s:
            for _, part in s.run((i, _scan_batch, (b,)) for i, b in enumerate(batches)):
                outs.extend(part)
    for _rel, (structs, consts, diags, parsed) in outs:
        result.structs += structs
        result.constants += consts
        result.diagnostics += diags
        result.files_parsed += int(parsed)
    _sort(result)
    return result


def _sort(result: ScanResult) -> None:
    result.structs.sort(key=lambda s: (s.file, s.line))
    result.constants.sort(key=lambda c: (c.file, c.line))
    result.diagnostics.sort(key=lambda d: (d.file, d.line))


def _apply_grep(result: ScanResult, grep: str) -> None:
    result.structs = [s for s in result.structs if any(grep in x.name or grep in x.qualified_name for x in s.walk())]
    result.constants = [c for c in result.constants if grep in c.name or grep in c.qualified_name]
    keep = {s.file for s in result.structs} | {c.file for c in result.constants}
    result.diagnostics = [
        d for d in result.diagnostics if d.file in keep or grep in d.message or d.message.startswith(_UNREAD)
    ]


# --------------------------------------------------------------------------------------------
# output


def to_json(result: ScanResult, file_only: bool = False) -> dict:
    """The result as a JSON-ready dict following :data:`SCHEMA` (``cutlass-layout/scan/1``):
    :meth:`ScanResult.to_dict <cutlass_layout.model.ScanResult.to_dict>`."""
    return result.to_dict(file_only=file_only)


__all__ = ["SCHEMA", "ScanResult", "Struct", "parse_line_offset", "scan", "scan_files", "scan_text", "to_json"]
