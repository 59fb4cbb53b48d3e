"""Scan a CUTLASS tree (or one header) for shared-memory storage structs and TMA byte constants.

This is the fast, compiler-free view: it parses headers with tree-sitter-cpp and reports what
the source *says* (declarations, ``alignas``, extents, expressions), not sizes or offsets, which
need template arguments (the libclang engine computes those). Typical use::

    result = scan("flashinfer-python==0.7.2.post1", grep="TensorStorage")
    print(render_text(result))
    json.dumps(to_json(result))

What is reported (see :data:`SCHEMA` for the JSON form):

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
  struct, storage structs lost in a parse error, unreadable files.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

from .errors import BadInput
from .model import SCAN_SCHEMA as SCHEMA  # noqa: F401 (re-exported)
from .model import Diagnostic, Field, ScanConstant, ScanResult, Scope, Struct  # noqa: F401 (re-exported)
from .runner import Pool, default_jobs
from .sources import HEADER_SUFFIXES, header_files

#: A file is parsed only if its bytes match this (cheap prefilter, about 250 of 820 headers
#: of a CUTLASS 4.x tree).
_PREFILTER_WORDS = (b"Storage", b"TmaTransactionBytes", b"_smem_capacity_bytes", b"SmemCapacity",
                    b"Stages")
_PREFILTER_RES = (
    re.compile(rb"(?:struct|union|class)\s+(?:(?:CUTE_ALIGNAS|alignas|__align__)\s*\([^)]*\)\s*)?"
               rb"\w*Storage"),
    re.compile(rb"(?:TmaTransactionBytes|Stages|_smem_capacity_bytes|SmemCapacity)\w*\s*[={]"),
)


def _wanted(data: bytes) -> bool:
    """Cheap byte prefilter: may this file hold a storage struct or a wanted constant?"""
    return (any(w in data for w in _PREFILTER_WORDS)
            and any(r.search(data) for r in _PREFILTER_RES))


_POOL_MIN_FILES = 24  # fewer files than this are scanned in-process
_WORKERS = 2  # at most (the tree-sitter work of a whole tree is about 1 s)


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
        data = Path(path).read_bytes()
    except OSError as exc:
        if strict:
            raise BadInput(f"cannot read {path}: {exc.strerror}") from None
        return [], [], [Diagnostic(rel, 0, f"cannot read: {exc.strerror}")], False
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
    from .frontends import treesitter

    try:
        structs, consts, diags = treesitter.scan_source(data, rel)
    except (RecursionError, ValueError, UnicodeError, AttributeError, TypeError) as exc:
        # A scanner bug on odd input must not cost the rest of the tree: say so and go on.
        return [], [], [Diagnostic(rel, 0, f"internal error, file skipped: {type(exc).__name__}: {exc}")], True
    return structs, consts, diags, True


def _scan_batch(job) -> list:
    root, rels = job
    return [(rel, _scan_file(os.path.join(root, rel), rel)) for rel in rels]


def scan(path, grep: str | None = None) -> ScanResult:
    """Scan a header, a directory of headers or a CUTLASS source.

    ``path`` is an existing file (scanned alone, whatever its suffix), an existing directory
    (its ``.h .hpp .cuh .inl .hxx`` files, recursively), or anything
    :func:`cutlass_layout.sources.resolve_cutlass` accepts (wheel, ``name==version``,
    installed distribution), whose include root is scanned. ``grep`` keeps the storage
    structs whose name or qualified name (or a nested struct's) contains it, and the constants
    whose name or qualified name contains it (case-sensitive).

    Returns a :class:`ScanResult`; file paths in it are relative to the scanned root (the
    file's directory for a single file).

    Raises:
        BadInput: missing path, empty/binary/non-UTF-8 single file, directory without
            headers, or a source ``resolve_cutlass`` rejects. Damaged C++ never raises: it is
            reported in ``diagnostics`` and as ``cut`` structs.
    """
    t0 = time.perf_counter()
    text = os.fspath(path)
    p = Path(text).expanduser()
    source = None
    if p.is_file() and not p.name.endswith(".whl"):
        root = p.parent
        rel = p.name
        structs, consts, diags, parsed = _scan_file(str(p), rel, strict=True)
        result = ScanResult(str(root), structs, consts, diags, 1, int(parsed))
    else:
        if p.is_dir():
            root = p
        elif p.exists() and not p.name.endswith(".whl"):
            raise BadInput(f"not a file or directory: {text}")
        elif not p.exists() and (text.endswith(HEADER_SUFFIXES) or os.sep in text
                                 or text.startswith(".") or text.startswith("~")):
            raise BadInput(f"path does not exist: {text}")
        else:
            from .sources import resolve_cutlass

            tree = resolve_cutlass(text)
            root = tree.include_root
            source = f"CUTLASS {tree.version} from {tree.origin}"
        rels = header_files(root)
        if not rels:
            raise BadInput(f"no headers ({' '.join(HEADER_SUFFIXES)}) under {root}")
        result = scan_files(root, rels)
        result.source = source
    _sort(result)
    if grep:
        _apply_grep(result, grep)
    result.seconds = time.perf_counter() - t0
    return result


def scan_files(root, rels: list[str]) -> ScanResult:
    """Scan the headers ``rels`` (paths relative to ``root``) without the byte prefilter's
    rejects; results sorted by file and line. Many files are scanned by worker processes
    (:class:`~cutlass_layout.runner.Pool`), biggest first, dealt round-robin into small
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
        with Pool(jobs) as pool:
            for _, part in pool.map(_scan_batch, batches):
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
    result.structs = [s for s in result.structs
                      if any(grep in x.name or grep in x.qualified_name for x in s.walk())]
    result.constants = [c for c in result.constants if grep in c.name or grep in c.qualified_name]
    keep = {s.file for s in result.structs} | {c.file for c in result.constants}
    result.diagnostics = [d for d in result.diagnostics if d.file in keep or grep in d.message]


# --------------------------------------------------------------------------------------------
# output


def to_json(result: ScanResult, file_only: bool = False) -> dict:
    """The result as a JSON-ready dict following :data:`SCHEMA` (``cutlass-layout/scan/1``):
    :meth:`ScanResult.to_dict <cutlass_layout.model.ScanResult.to_dict>`."""
    return result.to_dict(file_only=file_only)


def _abbrev_args(args: str | None) -> str:
    """``<Mainloop<A, B>, X, Y>`` -> ``<Mainloop<…>, …>``."""
    if not args:
        return ""
    inner = args.strip()[1:-1].strip()
    depth, first = 0, inner
    for i, ch in enumerate(inner):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            first = inner[:i] + ", …"
            break
    head, rest = first.split(", …")[0], ", …" if first.endswith(", …") else ""
    if "<" in head:
        head = head[: head.index("<")] + "<…>"
    return f"<{head}{rest}>"


def _render_struct(s: Struct, indent: int, lines: list[str], open_only: bool = False) -> None:
    pad = "  " * indent
    head = f"{s.kind} "
    if s.alignas:
        head += f"alignas({s.alignas}) "
    head += s.name or "(anonymous)"
    if s.bases:
        head += " : " + ", ".join(s.bases)
    note = f"  // #if {s.condition}" if s.condition else ""
    lines.append(f"{s.line:6d}  {pad}{head} {{{note}")
    items = ([(f.line, 1, f) for f in s.fields] + [(c.line, 0, c) for c in s.children]
             + [(a.line, 2, ("alias", a)) for a in s.aliases])
    items.sort(key=lambda t: (t[0], t[1]))
    merged: set[int] = set()
    for i, (_line, _k, item) in enumerate(items):
        if i in merged:
            continue
        if isinstance(item, Struct):
            _render_struct(item, indent + 1, lines, open_only=True)
            # "} tensors;": the fields declared with the inline struct
            decls = [j for j in range(i + 1, len(items))
                     if isinstance(items[j][2], Field) and items[j][2].line == item.end_line
                     and items[j][2].type == (item.name or f"{item.kind} (anonymous)")]
            if item.cut:
                continue
            names = ", ".join(_declarator(items[j][2]) for j in decls)
            merged.update(decls)
            closing = f"}} {names};" if names else "};"
            lines.append(f"{item.end_line:6d}  {pad}  {closing}")
            continue
        if isinstance(item, tuple):
            a = item[1]
            cond = f"  // #if {a.condition}" if a.condition else ""
            lines.append(f"{a.line:6d}  {pad}  using {a.name} = {a.type};{cond}")
            continue
        f = item
        decl = (f"alignas({f.alignas}) " if f.alignas else "") + f"{f.type} {_declarator(f)}"
        cond = f"  // #if {f.condition}" if f.condition else ""
        lines.append(f"{f.line:6d}  {pad}  {decl};{cond}")
    if s.cut:
        lines.append(f"{s.end_line:6d}  {pad}  … CUT: the file ends here, inside {s.name or 'this struct'}")
    elif not open_only:
        lines.append(f"{s.end_line:6d}  {pad}}};")


def _declarator(f: Field) -> str:
    return f.name + (f"[{f.extent}]" if f.extent is not None else "")


def render_text(result: ScanResult, file_only: bool = False) -> str:
    """A readable listing: per file, each storage struct as C++-like text with line numbers,
    then the constants (``= value`` where known), then diagnostics as ``file:line: message``."""
    if file_only:
        return "\n".join(result.files()) + ("\n" if result.files() else "")
    lines: list[str] = []
    n_structs = sum(1 for s in result.structs for _ in s.walk())
    lines.append(f"root: {result.root}" + (f"  ({result.source})" if result.source else ""))
    lines.append(f"{result.files_scanned} headers, {result.files_parsed} parsed, "
                 f"{len(result.structs)} storage structs ({n_structs} with nested), "
                 f"{len(result.constants)} constants, {len(result.diagnostics)} diagnostics, "
                 f"{result.seconds:.2f} s")
    by_file: dict[str, list] = {}
    for s in result.structs:
        by_file.setdefault(s.file, []).append((s.line, 0, s))
    for c in result.constants:
        by_file.setdefault(c.file, []).append((c.line, 1, c))
    for f in sorted(by_file):
        lines.append("")
        lines.append(f)
        last_scope = None
        for _line, _k, item in sorted(by_file[f], key=lambda t: (t[0], t[1])):
            scope = "::".join(e.name + _abbrev_args(e.template_args) for e in item.enclosing)
            if scope != last_scope:
                lines.append(f"  in {scope or '(global scope)'}")
                last_scope = scope
            if isinstance(item, Struct):
                _render_struct(item, 1, lines)
            else:
                val = f"  = {item.value}" if item.value is not None else ""
                typ = f"{item.type} " if item.type else ""
                lines.append(f"{item.line:6d}    {typ}{item.name} = {item.expression};{val}")
    if result.diagnostics:
        lines.append("")
        lines.append("diagnostics:")
        for d in result.diagnostics:
            lines.append(f"  {d.file}:{d.line}: {d.message}")
    if not result.structs and not result.constants:
        lines.append("")
        lines.append("no storage structs or constants found")
    return "\n".join(lines) + "\n"


def run_scan_cli(path, json_out: bool = False, grep: str | None = None,
                 file_only: bool = False) -> int:
    """``cutlass-layout scan PATH [--json] [--grep NAME] [--file-only]``.

    Prints the result to stdout (text, or JSON with ``json_out``) and returns the exit code:
    0 when the scan ran (diagnostics included), 2 for bad input, after printing
    ``error: <one line>`` to stderr. Never lets a traceback out for bad input.
    """
    import json

    try:
        result = scan(path, grep=grep)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (OSError, RecursionError) as exc:  # e.g. permission denied deep in a tree
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if json_out:
        sys.stdout.write(json.dumps(to_json(result, file_only=file_only), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result, file_only=file_only))
    return 0
