"""The kernels a real source file instantiates: what a source is, what is found in it, and
pass 1, which finds them.

:class:`Source` (a file and its build's flags), :class:`FoundKernel` (a kernel type a source
names, where and by what alias), the C++ names of a kernel (``cutlass::gemm::kernel::
GemmUniversal<...>``, TensorRT-LLM's ``cutlass_extensions`` kernels, wrappers deriving from
one: :func:`kernel_core`, :func:`kernel_arch`), the source's leading ``#include`` lines that
go into a precompiled header (:func:`split_preamble`, :func:`pch_preamble`), and pass 1
(:func:`find_kernels`): the source parsed with bodies, every alias naming a kernel, errors
tied to the function or struct they occur in. The passes as a whole (0: the prelude,
:mod:`cutlass_layout.installs.preludes`; 2: the layout) run in
:mod:`cutlass_layout.installs.source_layout`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..cpp.arguments import arguments, template_args
from ..cpp.brackets import matching
from ..model import CompileError
from ..subjects import aliases
from ..subjects.archs import ARCHS, arch_family  # the arch table's (one definition)

if TYPE_CHECKING:
    from .preludes import Prelude

#: The CUTLASS 3.x kernel class every GEMM kernel type is an instance of.
KERNEL_PREFIX = "cutlass::gemm::kernel::GemmUniversal<"

#: Prefix of the probe declarations put after a kernel alias inside a launcher.
PROBE_PREFIX = "cl_k"
#: probe blocks after re-hosted kernel aliases are numbered from here (those in launcher
#: macros from 0), and found under this owner
REHOST_PROBE = 9000
REHOSTED = "<re-hosted>"

#: Capacity constants per arch family (read from the headers being parsed): those of
#: :data:`cutlass_layout.subjects.archs.ARCHS`.
CAPACITY = {f: ARCHS[f].capacity for f in ("sm120", "sm100", "sm90")}


@dataclass(frozen=True)
class Source:
    """One source file and the clang flags its build compiles it with.

    Attributes:
        path: the ``.cu`` file (generated, rendered or shipped by the install).
        flags: the complete clang command line (:func:`cutlass_layout.cpp.clang.clang_flags`
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
    #: the alias's qualified name (``::ns::Struct::GemmKernel``) where C++ can name it from
    #: namespace scope (not inside a function); pass 2 names the kernel by it
    qualified: str | None = None


# ---------------------------------------------------------------------------------------
# C++ names
#: Kernel classes of ``cutlass::gemm::kernel`` other than ``GemmUniversal`` that take its
#: first three arguments (problem shape, mainloop collective, epilogue collective) and hold a
#: ``SharedStorage``: TensorRT-LLM's ``cutlass_extensions`` (flashinfer's
#: ``csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions/gemm/kernel/``)
#: ``sm90_gemm_array_tma_warpspecialized_{cooperative,pingpong}_precomputed.hpp`` and
#: ``sm90_gemm_array_tma_single_warpgroup_persistent.hpp``, which its SM90 mixed-input MoE
#: launcher builds (``moe_gemm_tma_ws_mixed_input_launcher.inl``, ``GemmKernelSelector``).
#: Also flashinfer's SM120 SVDQuant kernel (0.7.4's
#: ``include/flashinfer/gemm/nvfp4_svdquant_gemm_collective_sm120.h``:
#: ``GemmUniversalLoRaSm120<ProblemShape, CollectiveMainloop, CollectiveEpilogue,
#: TileSchedulerTag>``, whose ``SharedStorageSize`` is ``sizeof(SharedStorage)``).
OTHER_KERNELS = (
    "cutlass::gemm::kernel::GemmUniversalPrecomputedScheduler<",
    "cutlass::gemm::kernel::SingleWarpgroupPersistentGemm<",
    "flashinfer::gemm::svdquant_sm120::GemmUniversalLoRaSm120<",
)


def kernel_core(spelling: str) -> str | None:
    """The ``GemmUniversal<...>`` a kernel type is: the type itself, or, for a kernel that
    wraps one (``Sm12xOnly<GemmUniversal<...>>``, a class template deriving from its argument,
    as flashinfer's SM120 MXFP8 GEMM does), that argument; a kernel of
    :data:`OTHER_KERNELS` is its own core. None for anything else (device adapters such as
    ``GemmUniversalAdapter<...>`` hold a kernel but are not one)."""
    if spelling.startswith(KERNEL_PREFIX) or spelling.startswith(OTHER_KERNELS):
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
    return "\n".join(include_lines) + "\n#include <type_traits>\n" + aliases.DETECT


# ---------------------------------------------------------------------------------------
# pass 1: find the kernels
def macro_call(text: str, line: int | None) -> tuple[str, list[str]] | None:
    """The macro invocation starting on ``line`` (1-based) of ``text``: its name and its
    arguments as written, or None when the line holds none."""
    if not line:
        return None
    lines = text.split("\n")
    if line > len(lines):
        return None
    rest = "\n".join(lines[line - 1 :])
    m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", rest)
    if not m or not m.group(1).isupper():
        return None
    close = matching(rest, m.end() - 1, "(", ")")
    end = m.end() if close is None else close  # not closed: no arguments
    return m.group(1), [" ".join(rest[s:e].split()) for s, e, _ in arguments(rest, m.end(), end)]


_PROBE_RE = re.compile(rf"^{PROBE_PREFIX}(\d+(?:p\d+)?)_(\w+)$")


def find_kernels(
    unit, text: str, prelude: Prelude | None = None, probes: dict | None = None, segments: list[int] | None = None
) -> tuple[list[FoundKernel], list[CompileError]]:
    """Pass 1 on a parsed source (a :class:`~cutlass_layout.cpp.clang.ProbeUnit` with
    bodies): the kernels its aliases name, each with its owner's first error, and the errors
    tied to no owner. Kernels the ``prelude`` re-hosts are named as their instantiation is.

    ``probes``, if given, is filled with the in-place probe declarations (see
    :func:`~cutlass_layout.installs.preludes.in_place_probe`) of each kernel: ``{(owner, spelling): {name: cursor}}``, those
    after re-hosted kernel aliases under the owner :data:`REHOSTED`. ``segments``: the first
    line of each source in a unit of several (:func:`~cutlass_layout.installs.source_layout.lay_out_sources`): the same kernel in
    the same owner is one kernel per source."""
    from ..cpp.clang import spelling_location
    from ..cpp.cursors import (
        aliased_type,
        body_declarations,
        is_alias,
        is_function_template,
        is_scope_owner,
        is_variable,
        namespace_scope,
        qualified_name,
    )

    main = unit.filename
    extra = str(prelude.path) if prelude is not None and prelude.path else None
    found: list[FoundKernel] = []
    owners: list[tuple[str, int, int]] = []  # (name, first line, last line)

    rehosted: dict[str, dict] = {}

    def visit_body(cursor, owner: str):
        mine: dict[str, dict] = {}
        for d in body_declarations(cursor):
            if d.location.file is None or d.location.file.name != main:
                continue
            m = _PROBE_RE.match(d.spelling) if probes is not None else None
            if m and (is_alias(d) or is_variable(d)):
                mine.setdefault(m.group(1), {})[m.group(2)] = d
            elif is_alias(d):
                add(d, owner)
        for names in mine.values():
            subject = names.get("Subject")
            if subject is not None and probes is not None:  # (mine: only when probes are read)
                probes.setdefault((owner, aliased_type(subject)), names)

    def add(c, owner: str):
        spelling = aliased_type(c)
        if kernel_core(spelling) is None or "type-parameter" in spelling:
            return
        seg = segment(segments, c.location.line)
        if any(k.spelling == spelling and k.owner == owner and segment(segments, k.line) == seg for k in found):
            return  # another alias of the same kernel in the same owner
        file, line = spelling_location(c)
        k = FoundKernel(
            spelling=spelling,
            alias=c.spelling,
            owner=owner,
            line=c.location.line,
            qualified=qualified_name(c),
            decl_file=unit.rel(file) if file else None,
            decl_line=line,
            macro=macro_call(text, c.location.line) if c.location.file.name == main else None,
        )
        if prelude is not None:
            prelude.restore(k, file)
        found.append(k)

    for _, c in namespace_scope(unit.tu.cursor, (main, extra)):
        m = _PROBE_RE.match(c.spelling) if probes is not None and c.location.file.name == extra else None
        if m and int(m.group(1).split("p")[0]) >= REHOST_PROBE and (is_alias(c) or is_variable(c)):
            rehosted.setdefault(m.group(1), {})[m.group(2)] = c
            continue
        if is_scope_owner(c):
            name = c.displayname or c.spelling
            owners.append((name, c.extent.start.line, c.extent.end.line))
            if not is_function_template(c):  # a template's body is dependent: not walked
                visit_body(c, name)
        elif is_alias(c):
            add(c, "")
    for names in rehosted.values():
        if "Subject" in names and probes is not None:  # (rehosted: only when probes are read)
            probes.setdefault((REHOSTED, aliased_type(names["Subject"])), names)
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


def segment(segments: list[int] | None, line: int | None) -> int:
    """The index of the source holding ``line`` of a unit of several (0 for one)."""
    if not segments or line is None:
        return 0
    return max(0, bisect_right(segments, line) - 1)


#: an upper-case macro call at the start of a line (its name)
UPPER_CALL = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*\(", re.M)


def estimate_kernels(clean: str) -> int:
    """How many kernels a source (its text with comments blanked) likely instantiates: its
    upper-case macro calls and its ``template`` keywords (only a batch's size depends on it)."""
    return len(UPPER_CALL.findall(clean)) + clean.count("template ")
