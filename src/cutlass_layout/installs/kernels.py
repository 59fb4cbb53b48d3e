"""Lay out the kernels a real source file instantiates: the install's own code, not a probe.

An install's kernels are declared in its own sources, often where no name reaches them: the
TensorRT-LLM MoE launchers (``moe_gemm_tma_ws_launcher.inl``) declare the whole type chain
as local typedefs inside macro-generated function bodies, flashinfer's dense GEMMs inside
macro-generated structs, its groupwise GEMMs in function templates. :func:`lay_out_source`
reads them with the install's flags and a precompiled header of the source's leading
``#include`` lines (built with function bodies skipped, so the headers' templates cost no
body instantiation):

0. **prelude**: the source parsed without bodies: the launcher macros it expands and the
   function templates it instantiates explicitly; :mod:`cutlass_layout.cpp.text` cuts each
   macro down after its last kernel alias, with a probe block after each alias
   (:func:`cutlass_layout.subjects.probe.subject_block`), and re-hosts each function template as a
   class template (one that only forwards to another through the one it calls). The result
   is an ``-include`` file of the next parses.
1. **find** (and lay out): the source parsed *with* bodies: every type alias in it (function
   bodies, structs, namespaces) naming a ``cutlass::gemm::kernel::GemmUniversal<...>`` (or a
   kernel wrapping one) is a kernel the source builds. Errors are tied to the function or
   struct they occur in (its extent, or the outermost instantiation note inside it); an error
   tied to none marks every kernel of the source. Where the unit has no error, the in-place
   probe blocks give each kernel's layout; a cut-down source with an error is parsed again as
   written (no probes), so an error is always the install's own.
2. **lay out** what has no in-place probe (re-hosted kernels, sources as written): the source
   without bodies, followed by one probe block per kernel that names it by its alias where
   namespace scope reaches it, else by its canonical spelling, through the engine's one
   layout loop (:func:`cutlass_layout.engine.loop.lay_out`): numbers only come from a parse
   without errors, and each error is tied to its block.

:func:`lay_out_sources` runs these passes once for several sources of one folder, flags and
includes, their texts one after another in one translation unit (what their kernels
instantiate alike is instantiated once); a unit with an error falls back to each source
alone.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.cache import KINDS, cache_dir, write_atomic
from ..core.files import read_text
from ..cpp.text import (
    ADAPTER_KERNEL,
    KERNEL_ALIAS_RE,
    adapter_alias,
    arguments,
    blank_comments,
    call_args,
    explicit_instantiations,
    forwarded_call,
    macro_definition,
    matching,
    rehost_paths,
    rehost_template,
    substituted,
    template_args,
    template_parameters,
    trimmed_macro,
    with_defaults,
)
from ..errors import BadInput
from ..model import CompileError, LayoutReport, Provenance
from ..subjects import probe
from ..subjects.archs import ARCHS, arch_family, capacity_of  # the arch table's (one definition)

if TYPE_CHECKING:
    from ..cpp.clang import ProbeUnit

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



@dataclass
class SourceLayout:
    """What :func:`lay_out_source` found in one source: each kernel with its report (a
    :class:`LayoutReport` whose ``error`` is set when it does not compile), and an error that
    kept the source from being read at all (then ``kernels`` is empty)."""

    kernels: list[tuple[FoundKernel, LayoutReport]] = field(default_factory=list)
    error: str | None = None
    #: the error is the source's own (it does not compile with these flags and headers), so
    #: the same inputs give it again and it may be cached; unreadable files and refused
    #: precompiled headers may not
    lasting: bool = False
    #: wall seconds of the two passes (``find``, ``lay_out``), and parses of pass 2
    seconds: dict = field(default_factory=dict)
    #: the launcher macros the source expands: those whose active definition declares a
    #: kernel alias (pass 0's :attr:`Prelude.origins`) and those a kernel was found in,
    #: sorted; None where the source was not read that far
    launcher_macros: list[str] | None = None


# ---------------------------------------------------------------------------------------
# C++ names
#: Kernel classes of ``cutlass::gemm::kernel`` other than ``GemmUniversal`` that take its
#: first three arguments (problem shape, mainloop collective, epilogue collective) and hold a
#: ``SharedStorage``: TensorRT-LLM's ``cutlass_extensions`` (flashinfer's
#: ``csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions/gemm/kernel/``)
#: ``sm90_gemm_array_tma_warpspecialized_{cooperative,pingpong}_precomputed.hpp`` and
#: ``sm90_gemm_array_tma_single_warpgroup_persistent.hpp``, which its SM90 mixed-input MoE
#: launcher builds (``moe_gemm_tma_ws_mixed_input_launcher.inl``, ``GemmKernelSelector``).
OTHER_KERNELS = ("cutlass::gemm::kernel::GemmUniversalPrecomputedScheduler<",
                 "cutlass::gemm::kernel::SingleWarpgroupPersistentGemm<")


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
    close = matching(rest, m.end() - 1, "(", ")")
    end = m.end() if close is None else close  # not closed: no arguments
    return m.group(1), [" ".join(rest[s:e].split()) for s, e, _ in arguments(rest, m.end(), end)]


_PROBE_RE = re.compile(rf"^{PROBE_PREFIX}(\d+(?:p\d+)?)_(\w+)$")


def find_kernels(unit, text: str, prelude: Prelude | None = None, probes: dict | None = None,
                 segments: list[int] | None = None) -> tuple[list[FoundKernel], list[CompileError]]:
    """Pass 1 on a parsed source (a :class:`~cutlass_layout.cpp.clang.ProbeUnit` with
    bodies): the kernels its aliases name, each with its owner's first error, and the errors
    tied to no owner. Kernels the ``prelude`` re-hosts are named as their instantiation is.

    ``probes``, if given, is filled with the in-place probe declarations (see
    :func:`in_place_probe`) of each kernel: ``{(owner, spelling): {name: cursor}}``, those
    after re-hosted kernel aliases under the owner :data:`REHOSTED`. ``segments``: the first
    line of each source in a unit of several (:func:`lay_out_sources`): the same kernel in
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
            if subject is not None:
                probes.setdefault((owner, aliased_type(subject)), names)

    def add(c, owner: str):
        spelling = aliased_type(c)
        if kernel_core(spelling) is None or "type-parameter" in spelling:
            return
        seg = _segment(segments, c.location.line)
        if any(k.spelling == spelling and k.owner == owner and _segment(segments, k.line) == seg
               for k in found):
            return  # another alias of the same kernel in the same owner
        file, line = spelling_location(c)
        k = FoundKernel(spelling=spelling, alias=c.spelling, owner=owner, line=c.location.line,
                        qualified=qualified_name(c),
                        decl_file=unit.rel(file) if file else None, decl_line=line,
                        macro=_macro_call(text, c.location.line) if c.location.file.name == main else None)
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
        if "Subject" in names:
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


def _segment(segments: list[int] | None, line: int | None) -> int:
    """The index of the source holding ``line`` of a unit of several (0 for one)."""
    if not segments or line is None:
        return 0
    return max(0, bisect_right(segments, line) - 1)


# ---------------------------------------------------------------------------------------
# pass 0: the prelude (launcher macros cut down, function templates re-hosted)
@dataclass
class Prelude:
    """What :func:`prelude` puts before a source (an ``-include`` file in the cache): launcher
    macros redefined with their bodies cut after the kernel alias, and the re-hosted kernels of
    explicitly instantiated function templates (:mod:`cutlass_layout.cpp.text`).

    Attributes:
        macros: ``#undef``/``#define`` lines; rehosts: re-hosted declarations.
        rehost_probes: a probe block after each re-hosted kernel alias (names
            ``cl_k<REHOST_PROBE + n>_*``), so pass 1 lays those kernels out in place.
        origins: macro name -> (its file, the line of its last kernel alias there).
        hosted: re-hosted alias -> (owner as written, source line, file, alias line, alias).
        head: the source's own leading ``#include`` lines, put first when no precompiled
            header holds them (the cut-down launchers and re-hosted templates name their types).
        path: the file written (None until :meth:`write`).
        expanded: the macros whose calls in the source expand to explicit instantiations
            (:func:`macro_instantiations`): launchers too.
    """

    macros: str = ""
    rehosts: str = ""
    rehost_probes: str = ""
    origins: dict = field(default_factory=dict)
    hosted: dict = field(default_factory=dict)
    head: str = ""
    path: Path | None = None
    expanded: list = field(default_factory=list)

    def text(self, trimmed: bool = True, probes: bool = True) -> str:
        """The prelude's text: the cut-down macros (with ``trimmed``), the re-hosted
        templates and (with ``probes``) their probe blocks, after :attr:`head` when it has
        one; ``""`` when there is nothing to put before the source."""
        body = (self.macros if trimmed else "") + self.rehosts + (self.rehost_probes if probes else "")
        return (self.head + "\n" + body) if body and self.head else body

    def write(self, trimmed: bool = True, probes: bool = True) -> Path | None:
        """The prelude's file in the cache (named by its text's hash; one whose bytes are not
        that text, cut short or altered, is written again). Raises :class:`BadInput` when the
        cache cannot be written."""
        import hashlib


        text = self.text(trimmed, probes)
        if not text:
            self.path = None
            return None
        data = ("// cutlass-layout: launchers cut down and function templates re-hosted\n" + text).encode()
        path = cache_dir("preludes") / (hashlib.sha256(text.encode()).hexdigest()[:24] + ".h")
        try:
            same = path.read_bytes() == data
        except OSError:
            same = False
        if not same:
            try:
                write_atomic(path, data)
            except OSError as exc:
                raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
        self.path = path
        return path

    def restore(self, k: "FoundKernel", spelled_in: str | None) -> None:
        """Name a kernel found through the prelude as the install's code names it."""
        if k.alias in self.hosted:
            owner, line, file, alias_line, alias = self.hosted[k.alias]
            k.owner, k.line, k.alias, k.decl_file, k.decl_line = owner, line, alias, file, alias_line
            k.macro = None
        elif self.path is not None and spelled_in == str(self.path) and k.macro is not None:
            origin = self.origins.get(k.macro[0])
            if origin is not None:
                k.decl_file, k.decl_line = origin


def _read_text(path: str, memo: dict) -> str:
    if path not in memo:
        try:
            memo[path] = Path(path).read_text(errors="replace")
        except OSError:
            memo[path] = ""
    return memo[path]


def in_place_probe(capacity: str):
    """The ``probe`` argument of :func:`~cutlass_layout.cpp.text.trimmed_macro`: a probe block
    (:func:`cutlass_layout.subjects.probe.subject_block`) after the ``i``-th kernel alias, its names
    prefixed ``cl_k<i>_``."""
    def block(i: int, alias: str, in_class: bool) -> str:
        return probe.subject_block(alias, capacity, prefix=f"{PROBE_PREFIX}{i}_", member=in_class)
    return block


def prelude(unit, text: str, capacity: str | None = None,
            instantiations: list[tuple[str, str, int, str | None]] | None = None) -> Prelude:
    """Pass 0 (the source parsed without bodies): the :class:`Prelude` for it: every macro the
    source expands into declarations, whose active definition (the one the expanded
    declarations are spelled in) has a kernel alias, cut down; and every function template the
    source explicitly instantiates whose body has one, re-hosted (its definition found among
    its declarations, another declaration giving default arguments); one whose body only
    calls another template (:func:`~cutlass_layout.cpp.text.forwarded_call`) re-hosts that
    one, and names its kernel through a class of its own parameters.

    ``instantiations``: ``(function, template arguments, line, macro or None)`` of the explicit
    instantiations to re-host (:func:`source_instantiations`, with the macro a call expands
    from); default: those written in ``text``. The macros go into :attr:`Prelude.expanded`."""
    from ..cpp.clang import spelling_location
    from ..cpp.cursors import (
        enclosing_namespaces,
        function_templates,
        is_namespace,
        is_namespace_scope,
        namespace_scope,
    )

    main = unit.filename
    out = Prelude()
    memo: dict[str, str] = {}
    seen: set[str] = set()
    namespaces: set[tuple] = {()}

    for path, c in namespace_scope(unit.tu.cursor, (main,)):
        if is_namespace_scope(c):
            namespaces.add(path + ((c.spelling,) if is_namespace(c) else ()))
            continue
        call = _macro_call(text, c.location.line)
        if call is None or call[0] in seen:
            continue
        file, line = spelling_location(c)
        if not file or file == main:
            continue
        seen.add(call[0])
        found = macro_definition(_read_text(file, memo), call[0], near_line=line)
        if found is None:
            continue
        params, body, start = found
        trimmed = trimmed_macro(call[0], params, body,
                                probe=in_place_probe(capacity) if capacity else None)
        if trimmed is None:
            continue
        out.macros += trimmed
        # the line of the last kernel alias, in the file as written
        lines = []
        for ln in _read_text(file, memo).split("\n")[start - 1:]:
            cont = ln.rstrip().endswith("\\")
            lines.append(ln.rstrip()[:-1] if cont else ln)
            if not cont:
                break
        joined = blank_comments("\n".join(lines))
        hits = list(KERNEL_ALIAS_RE.finditer(joined))
        alias_line = start + joined.count("\n", 0, hits[-1].start()) if hits else None
        out.origins[call[0]] = (unit.rel(file), alias_line)

    # explicit instantiations of function templates (their bodies are not visible)
    templates: dict[str, list] = {}
    if instantiations is None:
        instantiations = [(*x, None) for x in explicit_instantiations(text)]
    out.expanded = sorted({x[3] for x in instantiations if x[3]})
    for n, (name, args, line, _macro) in enumerate(instantiations):
        if name not in templates:
            templates[name] = function_templates(unit.tu.cursor, name, namespaces, unit.filename)
        found = _template_definition(templates[name], memo)
        if found is None:
            continue
        template, definition, declared = found
        file = template.extent.start.file.name
        src = _read_text(file, memo)
        ns = enclosing_namespaces(template)
        hosted = rehost_template(definition, n, declared=declared)
        alias_at = (file, src, template.extent.start.offset, definition)
        paths = rehost_paths(definition, n, src, declared=declared, none_type="cl_detail::cl_none") \
            if hosted is None else None
        if paths:
            # several kernels under branches (or statements before the kernel): one class per path
            opening = "".join(f"namespace {x} {{ " for x in ns)
            closing = "".join("} " for _ in ns)
            for j, (usings, struct, alias, label) in enumerate(paths):
                name_alias = f"cl_rehosted_{n}_p{j}"
                hit = re.search(rf"\busing\s+{re.escape(alias)}\s*=", blank_comments(definition))
                alias_line = (src.count("\n", 0, template.extent.start.offset) + 1
                              + definition[:hit.start()].count("\n")) if hit else None
                out.rehosts += (f"{opening}\nnamespace cl_rehost_ns_{n}_p{j} {{\n{usings}\n{struct}}}\n"
                                f"using {name_alias} = typename cl_rehost_ns_{n}_p{j}::cl_rehost_{n}_p{j}"
                                f"<{args}>::{alias};\n{closing}\n")
                shown = f"{alias} [{label}]" if label else (f"{alias} [path {j}]" if len(paths) > 1 else alias)
                out.hosted[name_alias] = (f"{name}<{args}>", line, unit.rel(file), alias_line, shown)
                if capacity:
                    block = probe.subject_block(name_alias, capacity,
                                                prefix=f"{PROBE_PREFIX}{REHOST_PROBE + n}p{j}_")
                    out.rehost_probes += f"{opening}\n{block}{closing}\n"
            continue
        if hosted is None:
            # a template that only forwards to another (TensorRT-LLM's mixed-input MoE
            # launchers call ``..._impl<..., KernelType>``): that one re-hosted, named through
            # a class of the forwarder's parameters
            fwd = forwarded_call(definition)
            if fwd is None:
                continue
            callee, callee_args, asserts = fwd
            callee_name = callee.split("::")[-1]
            if callee_name not in templates:
                templates[callee_name] = function_templates(unit.tu.cursor, callee_name, {tuple(ns)} | namespaces,
                                                             unit.filename)
            inner = _template_definition(templates[callee_name], memo)
            if inner is None:
                continue
            target, inner_def, inner_declared = inner
            hosted_inner = rehost_template(inner_def, n, name=f"cl_rehost_{n}_callee", declared=inner_declared)
            params = template_parameters(definition)
            if hosted_inner is None or params is None:
                continue
            usings, inner_struct, alias = hosted_inner
            wrapper_params = with_defaults(params[0], declared) if declared is not None else params[0]
            struct = (f"{inner_struct}template <{wrapper_params}>\nstruct cl_rehost_{n} {{\n{asserts}\n"
                      f"using {alias} = typename cl_rehost_{n}_callee<{callee_args}>::{alias};\n}};\n")
            file = target.extent.start.file.name
            alias_at = (file, _read_text(file, memo), target.extent.start.offset, inner_def)
        else:
            usings, struct, alias = hosted
        name_alias = f"cl_rehosted_{n}"
        file, src, offset, text_of = alias_at
        hit = re.search(rf"\busing\s+{re.escape(alias)}\s*=", blank_comments(text_of))
        at = hit.start() if hit else None
        if at is None and alias == ADAPTER_KERNEL:  # the adapter's alias, whose GemmKernel it is
            adapter = adapter_alias(text_of)
            at = adapter[2] if adapter else None
        alias_line = src.count("\n", 0, offset) + 1 + text_of[:at].count("\n") if at is not None else None
        opening = "".join(f"namespace {x} {{ " for x in ns)
        closing = "".join("} " for _ in ns)
        out.rehosts += (f"{opening}\nnamespace cl_rehost_ns_{n} {{\n{usings}\n{struct}}}\n"
                        f"using {name_alias} = typename cl_rehost_ns_{n}::cl_rehost_{n}<{args}>::{alias};\n"
                        f"{closing}\n")
        out.hosted[name_alias] = (f"{name}<{args}>", line, unit.rel(file), alias_line, alias)
        if capacity:
            block = probe.subject_block(name_alias, capacity, prefix=f"{PROBE_PREFIX}{REHOST_PROBE + n}_")
            out.rehost_probes += f"{opening}\n{block}{closing}\n"
    return out


def _template_definition(cursors: list, memo: dict) -> tuple | None:
    """``(cursor, definition text, parameter list of another declaration or None)`` of the
    function template among ``cursors`` (its declarations,
    :func:`~cutlass_layout.cpp.cursors.function_templates`) that has a
    body; None when none has. A skipped body is not in the cursor's extent: it is the braces
    right after the signature. The other declaration (a header's, which may give the default
    arguments the definition leaves out) is the first that is not the definition."""

    found = None
    others = []
    for c in cursors:
        file = c.extent.start.file.name
        src = _read_text(file, memo)
        end = c.extent.end.offset
        clean = blank_comments(src)
        brace = clean.find("{", end)
        close = (matching(clean, brace, "{", "}")
                 if brace >= 0 and not clean[end:brace].strip(" \n\t;") else None)
        if close is None:
            others.append(src[c.extent.start.offset:end])
            continue
        if found is None:
            found = (c, src[c.extent.start.offset:close + 1])
    if found is None:
        return None
    declared = next((p[0] for p in map(template_parameters, others) if p is not None), None)
    return found[0], found[1], declared


# ---------------------------------------------------------------------------------------
# pass 2: lay them out
def _parse(source: Source, text: str, pch: Path | None, bodies: bool, include: Path | None = None):
    from ..cpp.clang import ProbeUnit

    flags = list(source.flags) + (["-include-pch", str(pch)] if pch else [])
    flags += ["-iquote", str(source.path.parent)]  # the source's quoted includes, from the prelude too
    flags += ["-include", str(include)] if include else []
    return ProbeUnit(text, flags, source.include_root, filename=str(source.path),
                     skip_bodies=not bodies)


_UPPER_CALL = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*\(", re.M)


def estimate_kernels(clean: str) -> int:
    """How many kernels a source (its text with comments blanked) likely instantiates: its
    upper-case macro calls and its ``template`` keywords (only a batch's size depends on it)."""
    return len(_UPPER_CALL.findall(clean)) + clean.count("template ")


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^">\n]+)[">]', re.M)
#: an explicit instantiation in a macro's body (``template R name<...>(...);``)
_EXPLICIT_IN_BODY = re.compile(r"\btemplate\s+(?!<)")


def _include_dirs(source: Source) -> list[Path]:
    """Where the source's ``#include`` lines are looked for: its folder, then its flags'
    ``-I``, ``-isystem`` and ``-iquote`` folders, in order, then the CUTLASS include root."""
    dirs, flags = [source.path.parent], list(source.flags)
    for i, f in enumerate(flags):
        if f in ("-I", "-isystem", "-iquote") and i + 1 < len(flags):
            dirs.append(Path(flags[i + 1]))
        elif f.startswith("-I") and len(f) > 2:
            dirs.append(Path(f[2:]))
    return dirs + [Path(source.include_root)]


def macro_instantiations(source: Source, text: str) -> list[tuple[str, str, int, str]]:
    """``(function, template arguments, line, macro)`` of each explicit instantiation of a
    function template that a macro call in ``text`` (a source's) expands to, the macro defined
    in a header the text includes itself: flashinfer 0.7.4's dense SM100 FP8 and BF16 GEMMs
    (``fp8_gemm_cutlass_half_128_128_128.cu``) are five
    ``INSTANCE_FP8_GEMM_TEMPLATE_SM100(half, 128, 128, 128, 1, 1, 1, _1SM);`` lines, each
    ``template size_t genericFp8GemmKernelLauncherSm100<...>(...);``
    (``flashinfer/gemm/fp8_gemm_template_sm100.h``). ``line``: the call's. A macro whose body
    uses ``#`` or ``##``, or a call whose arguments do not fit, gives nothing."""

    clean = blank_comments(text)
    calls = {m.group(1) for m in _UPPER_CALL.finditer(clean)}
    if not calls:
        return []
    defined: dict[str, tuple[str, str]] = {}  # macro -> (params, body) of those that instantiate
    dirs = _include_dirs(source)
    for inc in _INCLUDE.findall(blank_comments(text, strings=False)):
        path = next((d / inc for d in dirs if (d / inc).is_file()), None)
        try:
            header = path.read_text(errors="replace") if path is not None else ""
        except OSError:
            header = ""
        for name in calls - defined.keys():
            if f"define {name}" in header or f"define\t{name}" in header:
                found = macro_definition(header, name)
                if found is not None and _EXPLICIT_IN_BODY.search(blank_comments(found[1])):
                    defined[name] = (found[0], blank_comments(found[1]))
    out = []
    for m in re.finditer(r"(?<![\w:.>])([A-Z][A-Z0-9_]*)\s*\(", clean):
        if m.group(1) not in defined:
            continue
        found = call_args(clean, m.end() - 1)
        params, body = defined[m.group(1)]
        expansion = substituted(params, body, found[0]) if found is not None and "#" not in body else None
        if expansion is None:
            continue
        line = clean.count("\n", 0, m.start()) + 1
        out += [(name, args, line, m.group(1)) for name, args, _ in explicit_instantiations(expansion)]
    return out


def instantiations_of(source: Source, text: str) -> list[tuple[str, str, int, str | None]]:
    """:func:`source_instantiations` with the macro each comes from (None: written in ``text``)."""

    both = [(*x, None) for x in explicit_instantiations(text)] + macro_instantiations(source, text)
    return sorted(both, key=lambda x: x[2])


def source_instantiations(source: Source, text: str) -> list[tuple[str, str, int]]:
    """``(function, template arguments, line)`` of each explicit instantiation of a function
    template in ``text`` (a source's, or several sources' one after another): those written
    in it and those its macro calls expand to (:func:`macro_instantiations`), by line. What
    :func:`prelude` re-hosts, numbered in this order."""
    return [x[:3] for x in instantiations_of(source, text)]


def _prelude_key(source: Source, original: str, pch: Path | None, capacity) -> str | None:
    """The key under which sources can share pass 0's prelude, or None when they cannot.

    A source that explicitly instantiates function templates itself gets re-hosted
    templates of its own (their arguments are the source's); one that only calls launcher
    macros gets the cut-down definitions of those macros, which depend on nothing but the
    macros' names and the headers and flags they are read with (the precompiled header's
    name is a digest of both, and of the tree)."""

    if pch is None or source_instantiations(source, original):
        return None
    calls = sorted(set(_UPPER_CALL.findall(blank_comments(original))))
    if not calls:
        return None
    return KINDS["preludes"].key(subject=[list(source.flags), calls, capacity], target=[pch.name])


def _shared_prelude(key: str | None) -> "Prelude | None":
    """The prelude stored under ``key`` (:func:`_prelude_key`) by an earlier source, if any."""

    def load(hit) -> Prelude:  # raises (a miss) for a payload that is not one
        return Prelude(macros=hit["macros"], rehosts="", origins={k: tuple(v) for k, v in hit["origins"].items()})

    return KINDS["preludes"].get(key, load) if key else None


def _share_prelude(key: str | None, pre: "Prelude") -> None:

    if key and not pre.rehosts and not pre.hosted:
        KINDS["preludes"].put(key, {"macros": pre.macros, "origins": pre.origins})


def lay_out_source(source: Source, provenance: Provenance, *, pch: Path | None = None,
                   trim: bool = True) -> SourceLayout:
    """Find and lay out every kernel ``source`` instantiates (the module docstring's passes).

    Args:
        source: the file and its flags.
        provenance: put in each report.
        pch: a precompiled header of :func:`pch_preamble` of the source's includes, built
            with :func:`~cutlass_layout.cpp.clang.ensure_pch` and the same flags
            (without it the includes are parsed in the source, bodies and all: much slower).
        trim: cut launcher macros after their kernel alias (:func:`prelude`); a cut-down
            source that does not compile is parsed again as written.

    Returns:
        A :class:`SourceLayout`; bytes throughout. Never raises for a source that does not
        compile (its kernels carry the error); a source that cannot be read or parsed at all
        gives ``SourceLayout(error=...)``.
    """

    try:
        original = read_text(source.path, what="source", limit=False)
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    includes, text = split_preamble(original)
    return _lay_out_text(source, original, includes, original if pch is None else text,
                         provenance, pch, trim)


def _lay_out_text(source: Source, original: str, includes: list[str], text: str,
                  provenance: Provenance, pch: Path | None, trim: bool,
                  segments: list[int] | None = None) -> SourceLayout:
    """:func:`lay_out_source` of a source's text (``original`` as written, ``text`` as parsed:
    its leading includes blanked where ``pch`` holds them); ``segments``: see
    :func:`find_kernels`."""
    from ..engine.loop import Batch, lay_out
    from ..engine.numbers import read_report

    t0 = time.perf_counter()
    capacity = capacity_of(source.arch)  # an SM103 build's kernels too are laid out in place
    probes: dict = {}
    try:
        key = _prelude_key(source, original, pch, capacity)
        pre = _shared_prelude(key)
        if pre is None:
            head = _parse(source, text, pch, bodies=False)
            first = next(iter(head.errors()), None)
            if first is not None and first.message.endswith("file not found"):
                # a missing header stops clang: parsing with bodies would give the same error
                included = first.file not in (None, head.rel(str(source.path)))
                return SourceLayout(error=first.one_line(), lasting=True,
                                    seconds={"missing_header": included})
            pre = prelude(head, original, capacity, instantiations=instantiations_of(source, original))
            del head
            _share_prelude(key, pre)
        if pch is None:  # the includes are not in a header before the prelude: put them first
            pre.head = pch_preamble(includes)
        trimmed = trim and bool(pre.macros)
        unit = _parse(source, text, pch, bodies=True, include=pre.write(trimmed))
        if (trimmed or pre.rehost_probes) and unit.errors():
            # the cut-down launchers or the probes do not compile: the source as written
            trimmed = False
            unit = _parse(source, text, pch, bodies=True, include=pre.write(False, probes=False))
            probes = None
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    if unit.pch_rejected():
        return SourceLayout(error="the precompiled header was refused")
    found, loose = find_kernels(unit, original, pre, probes, segments)
    launchers = sorted(set(pre.origins) | set(pre.expanded) | {k.macro[0] for k in found if k.macro})
    if not found and loose:  # nothing to lay out, and the source does not compile
        return SourceLayout(error=loose[0].one_line(), lasting=True, launcher_macros=launchers)
    out = SourceLayout(seconds={"find": round(time.perf_counter() - t0, 2), "parses": 0,
                                "trimmed": trimmed, "rehosted": len(pre.hosted)},
                       launcher_macros=launchers)
    reports: dict[str, LayoutReport] = {}
    if probes and not unit.errors():  # the kernels laid out in place: no second parse
        from ..engine.numbers import read_subject

        for k in found:
            names = probes.get((k.owner, k.spelling)) or probes.get((REHOSTED, k.spelling))
            if names is not None and k.spelling not in reports:
                reports[k.spelling] = read_subject(unit, names, _Subject(k.spelling), provenance)
    del unit
    t1 = time.perf_counter()
    spellings = list(dict.fromkeys(k.spelling for k in found
                                   if k.error is None and k.spelling not in reports))
    # what names each kernel in pass 2: its alias where namespace scope reaches it (a
    # canonical spelling does not always parse again), else that spelling
    names = {}
    for k in found:
        if k.error is None and (names.get(k.spelling) is None or k.qualified):
            names[k.spelling] = k.qualified or names.get(k.spelling)

    def block(spelling: str, index: int, _budget: bool) -> tuple[str, str]:
        cap = CAPACITY.get(kernel_arch(spelling)) or capacity_of(source.arch)
        return (f"\nnamespace {probe.NAMESPACE}{index} {{\n"
                f"{probe.subject_block(names.get(spelling) or spelling, cap)}}}"
                f"  // namespace {probe.NAMESPACE}{index}\n"), ""

    def parse(body: str, _members) -> "ProbeUnit":
        out.seconds["parses"] += 1
        return _parse(source, body, pch, bodies=False, include=pre.path)

    batch = Batch(head=text, parse=parse, block=block,
                  read=lambda unit, s, i: read_report(unit, _Subject(s), i, provenance),
                  failed=lambda _s, err: _failed(provenance, err), where=f"source {source.path}")
    try:
        for s, rep in zip(spellings, lay_out(batch, spellings)):
            reports[s] = rep
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    for k in found:
        rep = _failed(provenance, k.error) if k.error is not None else reports[k.spelling]
        out.kernels.append((k, rep))
    out.seconds["lay_out"] = round(time.perf_counter() - t1, 2)
    return out


_REHOSTED_RE = re.compile(r"cl_rehosted_(\d+)(?:_p\d+)?$")


def lay_out_sources(sources: list[Source], provenance: Provenance, *, pch: Path | None = None,
                    trim: bool = True) -> list[SourceLayout]:
    """:func:`lay_out_source` of each of ``sources`` (the same flags, folder and leading
    includes, so the same ``pch``), from as few parses as their errors allow: their texts
    follow each other in one translation unit, whose kernels share what they instantiate
    alike (a mainloop for two output types, cute's layouts for every tile), so sources laid out
    together cost a fraction of the CPU they cost apart (measured: docs/performance.md). Each
    source's kernels
    are named by its own lines and file. Where that unit has any error (or a kernel it
    cannot tie to one source), each source is laid out alone, so an error is always the
    source's own.

    Returns:
        One :class:`SourceLayout` per source, in order, as :func:`lay_out_source` gives it.
    """
    if len(sources) < 2:
        return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
    originals, includes, texts = [], None, []
    for s in sources:
        try:
            original = read_text(s.path, what="source", limit=False)
        except BadInput:
            return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
        inc, text = split_preamble(original)
        if includes is None:
            includes = inc
        if inc != includes or s.flags != sources[0].flags or s.path.parent != sources[0].path.parent:
            raise ValueError("lay_out_sources: sources with other flags, folders or includes")
        originals.append(original)
        texts.append(original if pch is None else text)
    segments, line = [], 1
    for original in originals:
        segments.append(line)
        line += original.count("\n") + 1
    combined = _lay_out_text(sources[0], "\n".join(originals), includes, "\n".join(texts),
                             provenance, pch, trim, segments)
    if combined.seconds.get("missing_header"):
        # a header their common includes include is missing: each source alone stops there too
        return [SourceLayout(error=combined.error, lasting=True) for _ in sources]
    if combined.error is not None or any(rep.error is not None or k.line is None
                                         for k, rep in combined.kernels):
        return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
    # re-hosted templates are numbered through the whole unit: name them as alone
    rehosted_before = [0]
    for s, original in zip(sources[:-1], originals[:-1]):
        rehosted_before.append(rehosted_before[-1] + len(source_instantiations(s, original)))
    own = str(sources[0].path)
    out = [SourceLayout(seconds=dict(combined.seconds, batched=len(sources)),
                        launcher_macros=combined.launcher_macros) for _ in sources]
    for k, rep in combined.kernels:
        i = _segment(segments, k.line)
        first = segments[i]
        if k.decl_file == own and k.decl_line is not None:  # declared in the source itself
            k.decl_file, k.decl_line = str(sources[i].path), k.decl_line - (first - 1)
        k.line -= first - 1
        m = _REHOSTED_RE.search(k.qualified or "")
        if m:
            k.qualified = f"{k.qualified[:m.start(1)]}{int(m.group(1)) - rehosted_before[i]}{k.qualified[m.end(1):]}"
        out[i].kernels.append((k, rep))
    return out


class _Subject:
    """What :func:`cutlass_layout.engine.numbers.read_report` needs of a subject: its config dict."""

    def __init__(self, spelling: str):
        self.spelling = spelling

    def to_dict(self) -> dict:
        return {"type": self.spelling}


def _failed(provenance: Provenance, err: CompileError) -> LayoutReport:
    return LayoutReport(config={}, provenance=provenance, error=err)
