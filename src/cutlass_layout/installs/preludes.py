"""Pass 0 of laying out a source's kernels: the prelude put before it (an ``-include`` file).

The source parsed without bodies gives the launcher macros it expands and the function
templates it instantiates explicitly (written in it, or expanded from a macro call:
:func:`macro_instantiations`); :mod:`cutlass_layout.cpp.text` cuts each macro down after its
last kernel alias, with a probe block after each alias
(:func:`cutlass_layout.subjects.aliases.subject_block`), and re-hosts each function template as
a class template (one that only forwards to another through the one it calls: TensorRT-LLM's
mixed-input MoE launchers, ``moe_gemm_tma_ws_mixed_input_launcher.inl``). Sources that only
call launcher macros share their prelude through the ``preludes`` cache
(:func:`prelude_key`). The passes as a whole: :mod:`cutlass_layout.installs.source_layout`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.cache import KINDS, cache_dir, write_atomic
from ..cpp.text import ADAPTER_KERNEL, KERNEL_ALIAS_RE, adapter_alias, trimmed_macro
from ..cpp.brackets import blank_comments, matching
from ..cpp.arguments import call_args, template_parameters, with_defaults
from ..cpp.declarations import explicit_instantiations
from ..cpp.rehost import forwarded_call, rehost_paths, rehost_template
from ..cpp.macros import macro_definition, substituted
from ..errors import BadInput
from ..subjects import aliases
from .kernels import PROBE_PREFIX, REHOST_PROBE, UPPER_CALL, FoundKernel, Source, macro_call

if TYPE_CHECKING:
    from ..cpp.clang import ProbeUnit


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


def in_place_probe(capacity: str, params: bool = False):
    """The ``probe`` argument of :func:`~cutlass_layout.cpp.text.trimmed_macro`: a probe block
    (:func:`cutlass_layout.subjects.aliases.subject_block`) after the ``i``-th kernel alias, its names
    prefixed ``cl_k<i>_``; ``params``: with the kernel's ``Params`` completed (one tactic's
    ``layout --tactic``; off in audits, as ``subject_block`` says why)."""

    def block(i: int, alias: str, in_class: bool) -> str:
        return aliases.subject_block(alias, capacity, prefix=f"{PROBE_PREFIX}{i}_", member=in_class, params=params)

    return block


def prelude(
    unit, text: str, capacity: str | None = None, instantiations: list[tuple[str, str, int, str | None]] | None = None
) -> Prelude:
    """Pass 0 (the source parsed without bodies): the :class:`Prelude` for it: every macro the
    source expands into declarations, whose active definition (the one the expanded
    declarations are spelled in) has a kernel alias, cut down; and every function template the
    source explicitly instantiates whose body has one, re-hosted (its definition found among
    its declarations, another declaration giving default arguments); one whose body only
    calls another template (:func:`~cutlass_layout.cpp.rehost.forwarded_call`) re-hosts that
    one, and names its kernel through a class of its own parameters.

    ``instantiations``: ``(function, template arguments, line, macro or None)`` of the explicit
    instantiations to re-host (:func:`source_instantiations`, with the macro a call expands
    from); default: those written in ``text``. The macros go into :attr:`Prelude.expanded`."""
    r = _Reading(unit, Prelude(), capacity)
    _cut_down_launchers(r, text)
    # explicit instantiations of function templates (their bodies are not visible)
    if instantiations is None:
        instantiations = [(*x, None) for x in explicit_instantiations(text)]
    r.out.expanded = sorted({x[3] for x in instantiations if x[3]})
    for n, (name, args, line, _macro) in enumerate(instantiations):
        _rehost_instantiation(r, n, name, args, line)
    return r.out


@dataclass
class _Reading:
    """What the steps of :func:`prelude` share: the unit parsed without bodies, the prelude
    they fill, the capacity constant of its probe blocks (None: no probes), the files read
    (path -> text), the function templates' declarations looked up by name, and the
    namespaces (as paths of names) of the source's namespace scope they are looked for in."""

    unit: ProbeUnit
    out: Prelude
    capacity: str | None
    memo: dict[str, str] = field(default_factory=dict)
    templates: dict[str, list] = field(default_factory=dict)
    namespaces: set[tuple] = field(default_factory=lambda: {()})


def _cut_down_launchers(r: _Reading, text: str) -> None:
    """Each macro the source's namespace-scope declarations expand from (defined in another
    file), cut down after its last kernel alias (into :attr:`Prelude.macros`, its origin into
    :attr:`Prelude.origins`); the namespaces met on the way go into ``r.namespaces``."""
    from ..cpp.clang import spelling_location
    from ..cpp.cursors import is_namespace, is_namespace_scope, namespace_scope

    main = r.unit.filename
    seen: set[str] = set()
    for path, c in namespace_scope(r.unit.tu.cursor, (main,)):
        if is_namespace_scope(c):
            r.namespaces.add(path + ((c.spelling,) if is_namespace(c) else ()))
            continue
        call = macro_call(text, c.location.line)
        if call is None or call[0] in seen:
            continue
        file, line = spelling_location(c)
        if not file or file == main:
            continue
        seen.add(call[0])
        found = macro_definition(_read_text(file, r.memo), call[0], near_line=line)
        if found is None:
            continue
        params, body, start = found
        trimmed = trimmed_macro(call[0], params, body, probe=in_place_probe(r.capacity) if r.capacity else None)
        if trimmed is None:
            continue
        r.out.macros += trimmed
        r.out.origins[call[0]] = (r.unit.rel(file), _last_alias_line(_read_text(file, r.memo), start))


def _last_alias_line(src: str, start: int) -> int | None:
    """The line of the last kernel alias of the macro defined on line ``start`` of ``src`` (its
    continuation lines joined), in the file as written; None when it has none."""
    lines = []
    for ln in src.split("\n")[start - 1 :]:
        cont = ln.rstrip().endswith("\\")
        lines.append(ln.rstrip()[:-1] if cont else ln)
        if not cont:
            break
    joined = blank_comments("\n".join(lines))
    hits = list(KERNEL_ALIAS_RE.finditer(joined))
    return start + joined.count("\n", 0, hits[-1].start()) if hits else None


def _templates_named(r: _Reading, name: str, namespaces: set[tuple]) -> list:
    """The declarations of the function template ``name`` in ``namespaces`` (looked up once)."""
    from ..cpp.cursors import function_templates

    if name not in r.templates:
        r.templates[name] = function_templates(r.unit.tu.cursor, name, namespaces, r.unit.filename)
    return r.templates[name]


def _rehost_instantiation(r: _Reading, n: int, name: str, args: str, line: int) -> None:
    """Re-host the ``n``-th explicit instantiation, ``name<args>`` on ``line``: its template's
    kernel paths one class each (:func:`_host_paths`), else the template as one class, else
    the template it forwards to (:func:`_forwarded`); nothing when none of these has a kernel."""
    from ..cpp.cursors import enclosing_namespaces

    found = _template_definition(_templates_named(r, name, r.namespaces), r.memo)
    if found is None:
        return
    template, definition, declared = found
    file = template.extent.start.file.name
    src = _read_text(file, r.memo)
    ns = enclosing_namespaces(template)
    hosted = rehost_template(definition, n, declared=declared)
    alias_at = (file, src, template.extent.start.offset, definition)
    paths = (
        rehost_paths(definition, n, src, declared=declared, none_type="cl_detail::cl_none") if hosted is None else None
    )
    if paths:
        _host_paths(r, n, f"{name}<{args}>", args, line, ns, paths, alias_at)
        return
    if hosted is None:
        forwarded = _forwarded(r, n, definition, declared, ns)
        if forwarded is None:
            return
        hosted, alias_at = forwarded
    _host(r, n, f"{name}<{args}>", args, line, ns, hosted, alias_at)


def _around(ns: list[str]) -> tuple[str, str]:
    """The text opening and closing the namespaces ``ns`` (outermost first)."""
    return "".join(f"namespace {x} {{ " for x in ns), "".join("} " for _ in ns)


def _host_paths(
    r: _Reading, n: int, owner: str, args: str, line: int, ns: list[str], paths: list, alias_at: tuple
) -> None:
    """Several kernels under branches (or statements before the kernel): one class per path
    (:func:`~cutlass_layout.cpp.rehost.rehost_paths`), each named ``cl_rehosted_<n>_p<j>``."""
    file, src, offset, definition = alias_at
    opening, closing = _around(ns)
    for j, (usings, struct, alias, label) in enumerate(paths):
        name_alias = f"cl_rehosted_{n}_p{j}"
        hit = re.search(rf"\busing\s+{re.escape(alias)}\s*=", blank_comments(definition))
        alias_line = (src.count("\n", 0, offset) + 1 + definition[: hit.start()].count("\n")) if hit else None
        r.out.rehosts += (
            f"{opening}\nnamespace cl_rehost_ns_{n}_p{j} {{\n{usings}\n{struct}}}\n"
            f"using {name_alias} = typename cl_rehost_ns_{n}_p{j}::cl_rehost_{n}_p{j}"
            f"<{args}>::{alias};\n{closing}\n"
        )
        shown = f"{alias} [{label}]" if label else (f"{alias} [path {j}]" if len(paths) > 1 else alias)
        r.out.hosted[name_alias] = (owner, line, r.unit.rel(file), alias_line, shown)
        if r.capacity:
            block = aliases.subject_block(name_alias, r.capacity, prefix=f"{PROBE_PREFIX}{REHOST_PROBE + n}p{j}_")
            r.out.rehost_probes += f"{opening}\n{block}{closing}\n"


def _forwarded(
    r: _Reading, n: int, definition: str, declared: str | None, ns: list[str]
) -> tuple[tuple[str, str, str], tuple] | None:
    """A template that only forwards to another (TensorRT-LLM's mixed-input MoE launchers call
    ``..._impl<..., KernelType>``): that one re-hosted, named through a class of the
    forwarder's parameters. ``((usings, struct, alias), (file, text, offset, definition of
    the alias))``, or None."""
    fwd = forwarded_call(definition)
    if fwd is None:
        return None
    callee, callee_args, asserts = fwd
    inner = _template_definition(_templates_named(r, callee.split("::")[-1], {tuple(ns)} | r.namespaces), r.memo)
    if inner is None:
        return None
    target, inner_def, inner_declared = inner
    hosted_inner = rehost_template(inner_def, n, name=f"cl_rehost_{n}_callee", declared=inner_declared)
    params = template_parameters(definition)
    if hosted_inner is None or params is None:
        return None
    usings, inner_struct, alias = hosted_inner
    wrapper_params = with_defaults(params[0], declared) if declared is not None else params[0]
    struct = (
        f"{inner_struct}template <{wrapper_params}>\nstruct cl_rehost_{n} {{\n{asserts}\n"
        f"using {alias} = typename cl_rehost_{n}_callee<{callee_args}>::{alias};\n}};\n"
    )
    file = target.extent.start.file.name
    return (usings, struct, alias), (file, _read_text(file, r.memo), target.extent.start.offset, inner_def)


def _host(
    r: _Reading, n: int, owner: str, args: str, line: int, ns: list[str], hosted: tuple[str, str, str], alias_at: tuple
) -> None:
    """The re-hosted class ``cl_rehost_<n>`` (``hosted``: its usings, struct and kernel alias)
    and its alias ``cl_rehosted_<n>``, with its probe block; the alias's line found in the
    definition ``alias_at`` gives (the adapter's, for an adapter's ``GemmKernel``)."""
    usings, struct, alias = hosted
    name_alias = f"cl_rehosted_{n}"
    file, src, offset, text_of = alias_at
    hit = re.search(rf"\busing\s+{re.escape(alias)}\s*=", blank_comments(text_of))
    at = hit.start() if hit else None
    if at is None and alias == ADAPTER_KERNEL:  # the adapter's alias, whose GemmKernel it is
        adapter = adapter_alias(text_of)
        at = adapter[2] if adapter else None
    alias_line = src.count("\n", 0, offset) + 1 + text_of[:at].count("\n") if at is not None else None
    opening, closing = _around(ns)
    r.out.rehosts += (
        f"{opening}\nnamespace cl_rehost_ns_{n} {{\n{usings}\n{struct}}}\n"
        f"using {name_alias} = typename cl_rehost_ns_{n}::cl_rehost_{n}<{args}>::{alias};\n"
        f"{closing}\n"
    )
    r.out.hosted[name_alias] = (owner, line, r.unit.rel(file), alias_line, alias)
    if r.capacity:
        block = aliases.subject_block(name_alias, r.capacity, prefix=f"{PROBE_PREFIX}{REHOST_PROBE + n}_")
        r.out.rehost_probes += f"{opening}\n{block}{closing}\n"


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
        close = matching(clean, brace, "{", "}") if brace >= 0 and not clean[end:brace].strip(" \n\t;") else None
        if close is None:
            others.append(src[c.extent.start.offset : end])
            continue
        if found is None:
            found = (c, src[c.extent.start.offset : close + 1])
    if found is None:
        return None
    declared = next((p[0] for p in map(template_parameters, others) if p is not None), None)
    return found[0], found[1], declared


# ---------------------------------------------------------------------------------------
# explicit instantiations a source writes or its macro calls expand to; the shared prelude
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
    (``flashinfer/gemm/fp8_gemm_template_sm100.h``). Calls of macros of those headers in the
    expansion are expanded in turn (up to :data:`MACRO_DEPTH` levels): 0.7.4's SM120 SVDQuant
    ``INSTANTIATE_NVFP4_SVDQUANT_GEMM_SM120_STATIC_TACTIC(Config)`` is
    ``INSTANTIATE_NVFP4_SVDQUANT_GEMM_SM120_TACTIC(Config)``. ``line``: the call's. A macro
    whose body uses ``#`` or ``##``, or a call whose arguments do not fit, gives nothing."""

    clean = blank_comments(text)
    calls = {m.group(1) for m in UPPER_CALL.finditer(clean)}
    if not calls:
        return []
    dirs = _include_dirs(source)
    headers = []
    for inc in _INCLUDE.findall(blank_comments(text, strings=False)):
        path = next((d / inc for d in dirs if (d / inc).is_file()), None)
        try:
            headers.append(path.read_text(errors="replace") if path is not None else "")
        except OSError:
            continue
    known: dict[str, tuple[str, str] | None] = {}  # macro -> (params, body), None: not usable

    def definition(name: str) -> tuple[str, str] | None:
        if name not in known:
            known[name] = None
            for header in headers:
                if f"define {name}" in header or f"define\t{name}" in header:
                    found = macro_definition(header, name)
                    if found is not None and "#" not in (body := blank_comments(found[1])):
                        known[name] = (found[0], body)
                        break
        return known[name]

    out = []
    for m in _MACRO_CALL.finditer(clean):
        if m.group(1) not in calls or definition(m.group(1)) is None:
            continue
        expansion = _expanded(clean, m, definition, MACRO_DEPTH)
        if expansion is None or not _EXPLICIT_IN_BODY.search(expansion):
            continue
        line = clean.count("\n", 0, m.start()) + 1
        out += [(name, args, line, m.group(1)) for name, args, _ in explicit_instantiations(expansion)]
    return out


#: How deep :func:`macro_instantiations` follows macros whose expansion calls another
MACRO_DEPTH = 4
_MACRO_CALL = re.compile(r"(?<![\w:.>])([A-Z][A-Z0-9_]*)\s*\(")


def _expanded(text: str, m: re.Match, definition, depth: int) -> str | None:
    """The expansion of the macro call ``m`` of ``text`` (its arguments substituted), with the
    calls in it of macros ``definition`` knows expanded in turn, ``depth`` levels down; None
    where the arguments do not fit."""
    found = call_args(text, m.end() - 1)
    if found is None:
        return None
    params, body = definition(m.group(1))
    expansion = substituted(params, body, found[0])
    if expansion is None or depth <= 0:
        return expansion
    parts, last = [], 0
    for inner in _MACRO_CALL.finditer(expansion):
        if inner.start() < last or definition(inner.group(1)) is None:
            continue
        got = _expanded(expansion, inner, definition, depth - 1)
        args = call_args(expansion, inner.end() - 1)
        if got is None or args is None:
            continue
        parts += [expansion[last : inner.start()], got]
        last = args[1] + 1
    return "".join(parts) + expansion[last:]


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


def prelude_key(source: Source, original: str, pch: Path | None, capacity) -> str | None:
    """The key under which sources can share pass 0's prelude, or None when they cannot.

    A source that explicitly instantiates function templates itself gets re-hosted
    templates of its own (their arguments are the source's); one that only calls launcher
    macros gets the cut-down definitions of those macros, which depend on nothing but the
    macros' names and the headers and flags they are read with (the precompiled header's
    name is a digest of both, and of the tree)."""

    if pch is None or source_instantiations(source, original):
        return None
    calls = sorted(set(UPPER_CALL.findall(blank_comments(original))))
    if not calls:
        return None
    return KINDS["preludes"].key(subject=[list(source.flags), calls, capacity], target=[pch.name])


def shared_prelude(key: str | None) -> "Prelude | None":
    """The prelude stored under ``key`` (:func:`prelude_key`) by an earlier source, if any."""

    def load(hit) -> Prelude:  # raises (a miss) for a payload that is not one
        return Prelude(macros=hit["macros"], rehosts="", origins={k: tuple(v) for k, v in hit["origins"].items()})

    return KINDS["preludes"].get(key, load) if key else None


def share_prelude(key: str | None, pre: "Prelude") -> None:

    if key and not pre.rehosts and not pre.hosted:
        KINDS["preludes"].put(key, {"macros": pre.macros, "origins": pre.origins})
