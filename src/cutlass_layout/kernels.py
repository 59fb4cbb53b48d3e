"""Lay out the kernels a real source file instantiates: the install's own code, not a probe.

An install's kernels are declared in its own sources, often where no name reaches them: the
TensorRT-LLM MoE launchers (``moe_gemm_tma_ws_launcher.inl``) declare the whole type chain
as local typedefs inside macro-generated function bodies, flashinfer's dense GEMMs inside
macro-generated structs. :func:`lay_out_source` reads them in two parses of the source, both
with the install's flags and a precompiled header of the source's leading ``#include`` lines
(built with function bodies skipped, so the headers' templates cost no body instantiation):

1. **find**: the source itself is parsed *with* function bodies; every type alias in it
   (function bodies, structs, namespaces) whose canonical type is
   ``cutlass::gemm::kernel::GemmUniversal<...>`` is a kernel the source builds. Errors are
   tied to the function or struct they occur in (its extent, or the outermost
   instantiation note inside it); an error tied to none marks every kernel of the source.
2. **lay out**: the same source without bodies, followed by one probe block per kernel that
   names the kernel by its canonical spelling (:func:`cutlass_layout.probe.subject_block`),
   read as :mod:`cutlass_layout.engine` reads a config. A block with an error gets no
   numbers; numbers only come from a parse without errors (blocks are split apart until
   each error is tied to its block).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import probe
from .model import CompileError, LayoutReport, Provenance

#: The CUTLASS 3.x kernel class every GEMM kernel type is an instance of.
KERNEL_PREFIX = "cutlass::gemm::kernel::GemmUniversal<"

#: Capacity constants per arch family (read from the headers being parsed).
CAPACITY = {
    "sm120": "cutlass::arch::sm120_smem_capacity_bytes",
    "sm100": "cutlass::arch::sm100_smem_capacity_bytes",
    "sm90": "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes",
}


def arch_family(sm: int) -> str | None:
    """``sm120`` for SM120/SM121, ``sm100`` for SM100-SM103, ``sm90`` for SM90, else None."""
    if sm in (120, 121):
        return "sm120"
    if 100 <= sm <= 103:
        return "sm100"
    if sm == 90:
        return "sm90"
    return None


@dataclass(frozen=True)
class Source:
    """One source file and the clang flags its build compiles it with.

    Attributes:
        path: the ``.cu`` file (generated, rendered or shipped by the install).
        flags: the complete clang command line (:func:`cutlass_layout.frontends.clang.clang_flags`
            plus the build's own ``-D``/``-I``/``-isystem`` flags).
        include_root: the CUTLASS include root (file names are reported relative to it).
        arch: the arch family the build targets (``sm120``): the capacity of a kernel whose
            dispatch policy names no arch.
    """

    path: Path
    flags: tuple[str, ...]
    include_root: Path
    arch: str


@dataclass
class FoundKernel:
    """A kernel type a source names (pass 1).

    Attributes:
        spelling: its canonical C++ type (``cutlass::gemm::kernel::GemmUniversal<...>``).
        alias: the alias that names it (``GemmKernel``).
        owner: the function or struct whose body declares the alias (``""`` at namespace scope).
        line: the line of the source where the declaration is expanded (for a
            macro-generated launcher: the macro's invocation).
        decl_file, decl_line: where the alias is written (a header, for macro code).
        macro: ``(name, [arguments])`` of the macro invocation at ``line``, or None.
        error: the first error of ``owner`` in pass 1 (the kernel does not compile as built).
    """

    spelling: str
    alias: str
    owner: str
    line: int | None
    decl_file: str | None = None
    decl_line: int | None = None
    macro: tuple[str, list[str]] | None = None
    error: CompileError | None = None

    def to_dict(self) -> dict:
        return {"alias": self.alias, "owner": self.owner, "line": self.line}


@dataclass
class SourceLayout:
    """What :func:`lay_out_source` found in one source: each kernel with its report (a
    :class:`LayoutReport` whose ``error`` is set when it does not compile), and an error that
    kept the source from being read at all (then ``kernels`` is empty)."""

    kernels: list[tuple[FoundKernel, LayoutReport]] = field(default_factory=list)
    error: str | None = None
    #: wall seconds of the two passes (``find``, ``lay_out``), and parses of pass 2
    seconds: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# C++ names
def template_args(spelling: str) -> list[str]:
    """The top-level template arguments of ``A<x, B<y, z>>`` -> ``["x", "B<y, z>"]``
    (of the first ``<...>``)."""
    start = spelling.find("<")
    if start < 0:
        return []
    out, depth, cur = [], 0, []
    for ch in spelling[start + 1:]:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return [a for a in out if a]


def kernel_core(spelling: str) -> str | None:
    """The ``GemmUniversal<...>`` a kernel type is: the type itself, or, for a kernel that
    wraps one (``Sm12xOnly<GemmUniversal<...>>``, a class template deriving from its argument,
    as flashinfer's SM120 MXFP8 GEMM does), that argument. None for anything else (device
    adapters such as ``GemmUniversalAdapter<...>`` hold a kernel but are not one)."""
    if spelling.startswith(KERNEL_PREFIX):
        return spelling
    if spelling.startswith(("cutlass::gemm::device::", "cutlass::device_kernel", "std::", "cute::")):
        return None
    return next((a for a in template_args(spelling) if a.startswith(KERNEL_PREFIX)), None)


def kernel_arch(spelling: str) -> str | None:
    """The arch family of a kernel, from its mainloop dispatch policy (``MainloopSm120...``)."""
    m = re.search(r"\bMainloopSm(\d+)", spelling)
    return arch_family(int(m.group(1))) if m else None


# ---------------------------------------------------------------------------------------
# the source's preamble
_LINE_COMMENT = re.compile(r"^\s*(//.*)?$")


def split_preamble(text: str) -> tuple[list[str], str]:
    """``(include lines, text)``: the ``#include`` lines before the source's first
    declaration (comments and ``#pragma once`` may come between them), and the text with
    those lines blanked (line numbers kept). The includes go into a precompiled header."""
    lines = text.split("\n")
    includes: list[int] = []
    in_comment = False
    for i, line in enumerate(lines):
        s = line.strip()
        if in_comment:
            if "*/" in s:
                in_comment = False
                rest = s.split("*/", 1)[1].strip()
                if rest and not rest.startswith("//"):
                    break
            continue
        if s.startswith("/*"):
            in_comment = "*/" not in s[2:]
            continue
        if _LINE_COMMENT.match(line) or s.startswith("#pragma once"):
            continue
        if s.startswith("#include"):
            includes.append(i)
            continue
        break
    inc = [lines[i] for i in includes]
    for i in includes:
        lines[i] = ""
    return inc, "\n".join(lines)


def pch_preamble(include_lines: list[str]) -> str:
    """What the precompiled header of a source holds: its leading includes and the probe's
    detection helpers."""
    return "\n".join(include_lines) + "\n#include <type_traits>\n" + probe._DETECT


# ---------------------------------------------------------------------------------------
# pass 1: find the kernels
def _macro_call(text: str, line: int | None) -> tuple[str, list[str]] | None:
    """The macro invocation starting on ``line`` (1-based) of ``text``: its name and its
    arguments as written, or None when the line holds none."""
    if not line:
        return None
    lines = text.split("\n")
    if line > len(lines):
        return None
    rest = "\n".join(lines[line - 1:])
    m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", rest)
    if not m or not m.group(1).isupper():
        return None
    depth, end = 0, m.end()
    for i, ch in enumerate(rest[m.end():], m.end()):
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                end = i
                break
            depth -= 1
    raw = rest[m.end():end]
    args = [a.strip() for a in _split_top(raw)]
    return m.group(1), args


def _split_top(raw: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in raw:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [" ".join(a.split()) for a in out]


def find_kernels(unit, text: str) -> tuple[list[FoundKernel], list[CompileError]]:
    """Pass 1 on a parsed source (a :class:`~cutlass_layout.frontends.clang.ProbeUnit` with
    bodies): the kernels its aliases name, each with its owner's first error, and the errors
    tied to no owner."""
    import clang.cindex as ci

    from .frontends.clang import spelling_location

    main = unit.filename
    kinds = (ci.CursorKind.TYPE_ALIAS_DECL, ci.CursorKind.TYPEDEF_DECL)
    owners_kinds = (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
                    ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_DECL,
                    ci.CursorKind.FUNCTION_TEMPLATE)
    found: list[FoundKernel] = []
    owners: list[tuple[str, int, int]] = []  # (name, first line, last line)

    def visit(cursor, owner: str):
        for c in cursor.get_children():
            loc = c.location
            if loc.file is None or loc.file.name != main:
                continue
            if c.kind in owners_kinds:
                name = c.displayname or c.spelling
                owners.append((name, c.extent.start.line, c.extent.end.line))
                if c.kind == ci.CursorKind.FUNCTION_TEMPLATE:
                    continue  # dependent: its instantiations are not visible here
                visit_body(c, name)
                continue
            if c.kind in kinds:
                add(c, owner)
            elif c.kind in (ci.CursorKind.NAMESPACE, ci.CursorKind.LINKAGE_SPEC):
                visit(c, owner)

    def visit_body(cursor, owner: str):
        for d in cursor.walk_preorder():
            if d.kind in kinds and d.location.file is not None and d.location.file.name == main:
                add(d, owner)

    def add(c, owner: str):
        t = c.underlying_typedef_type.get_canonical()
        spelling = t.spelling
        if kernel_core(spelling) is None or "type-parameter" in spelling:
            return
        if any(k.spelling == spelling and k.owner == owner for k in found):
            return  # another alias of the same kernel in the same owner
        file, line = spelling_location(c)
        found.append(FoundKernel(
            spelling=spelling, alias=c.spelling, owner=owner, line=c.location.line,
            decl_file=unit.rel(file) if file else None, decl_line=line,
            macro=_macro_call(text, c.location.line)))

    visit(unit.tu.cursor, "")
    loose: list[CompileError] = []
    owner_error: dict[str, CompileError] = {}
    for err, line in unit.errors_with_probe_lines():
        hits = [o for o in owners if line is not None and o[1] <= line <= o[2]]
        if not hits:
            loose.append(err)
            continue
        owner = min(hits, key=lambda o: o[2] - o[1])[0]  # innermost
        owner_error.setdefault(owner, err)
    for k in found:
        k.error = owner_error.get(k.owner) or (loose[0] if loose else None)
    return found, loose


# ---------------------------------------------------------------------------------------
# pass 2: lay them out
def _blocks(kernels: list[str], arch_of) -> str:
    out = []
    for i, spelling in enumerate(kernels):
        cap = CAPACITY.get(arch_of(spelling))
        out.append(f"\nnamespace {probe.NAMESPACE}{i} {{\n{probe.subject_block(spelling, cap)}}}"
                   f"  // namespace {probe.NAMESPACE}{i}\n")
    return "".join(out)


def _parse(source: Source, text: str, pch: Path | None, bodies: bool):
    from .frontends.clang import ProbeUnit

    flags = list(source.flags) + (["-include-pch", str(pch)] if pch else [])
    return ProbeUnit(text, flags, source.include_root, filename=str(source.path),
                     skip_bodies=not bodies)


def lay_out_source(source: Source, provenance: Provenance, *, pch: Path | None = None) -> SourceLayout:
    """Find and lay out every kernel ``source`` instantiates (the module docstring's two
    passes). ``pch``: a precompiled header of :func:`pch_preamble` of the source's includes,
    built with :func:`~cutlass_layout.frontends.clang.ensure_pch` and the same flags (without
    it the includes are parsed in the source, with their function bodies: much slower).

    Returns a :class:`SourceLayout`; bytes throughout. Never raises for a source that does
    not compile (its kernels carry the error); a source that cannot be read or parsed at all
    gives ``SourceLayout(error=...)``.
    """
    from .engine import _read
    from .errors import BadInput

    try:
        original = source.path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return SourceLayout(error=f"cannot read {source.path}: {exc}")
    includes, text = split_preamble(original)
    if pch is None:
        text, includes = original, []
    t0 = time.perf_counter()
    try:
        unit = _parse(source, text, pch, bodies=True)
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    if unit.pch_rejected():
        return SourceLayout(error="the precompiled header was refused")
    found, loose = find_kernels(unit, original)
    del unit
    if not found and loose:  # nothing to lay out, and the source does not compile
        return SourceLayout(error=loose[0].one_line())
    out = SourceLayout(seconds={"find": round(time.perf_counter() - t0, 2), "parses": 0})
    t1 = time.perf_counter()
    spellings = list(dict.fromkeys(k.spelling for k in found if k.error is None))

    def arch_of(s):
        return kernel_arch(s) or source.arch

    reports: dict[str, LayoutReport] = {}
    pending = [spellings] if spellings else []
    while pending:
        group = pending.pop()
        body = text + _blocks(group, arch_of)
        try:
            unit = _parse(source, body, pch, bodies=False)
        except BadInput as exc:
            return SourceLayout(error=str(exc))
        out.seconds["parses"] += 1
        base = body.count("\n") - _blocks(group, arch_of).count("\n") + 1
        ranges, line = [], base
        for s in group:
            n = _blocks([s], arch_of).count("\n")
            ranges.append((line, line + n - 1))
            line += n
        errors = unit.errors_with_probe_lines()
        if not errors:
            for i, s in enumerate(group):
                reports[s] = _read(unit, _Subject(s), i, provenance)
            continue
        failed: dict[int, CompileError] = {}
        for err, ln in errors:
            k = next((i for i, (a, b) in enumerate(ranges) if ln is not None and a <= ln <= b), None)
            if k is None:
                failed = {}
                break
            failed.setdefault(k, err)
        if not failed:  # an error tied to no block
            if len(group) == 1:
                reports[group[0]] = _failed(provenance, errors[0][0])
                continue
            half = len(group) // 2
            pending += [group[:half], group[half:]]
            continue
        for k, err in failed.items():
            if len(group) == 1 or k == min(failed):
                reports[group[k]] = _failed(provenance, err)
            else:
                pending.append([group[k]])  # may be a follow-up: confirm alone
        rest = [s for i, s in enumerate(group) if i not in failed]
        if rest:
            pending.append(rest)
    for k in found:
        rep = _failed(provenance, k.error) if k.error is not None else reports[k.spelling]
        out.kernels.append((k, rep))
    out.seconds["lay_out"] = round(time.perf_counter() - t1, 2)
    return out


class _Subject:
    """What :func:`cutlass_layout.engine._read` needs of a subject: its config dict."""

    def __init__(self, spelling: str):
        self.spelling = spelling

    def to_dict(self) -> dict:
        return {"type": self.spelling}


def _failed(provenance: Provenance, err: CompileError) -> LayoutReport:
    return LayoutReport(config={}, provenance=provenance, error=err)
