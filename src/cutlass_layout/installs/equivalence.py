"""When two builds of one source are the same parse: the flags an audit keys a source by.

flashinfer 0.7.4's SM103 MoE module (``gen_cutlass_fused_moe_sm103_module``) compiles the 242
sources the SM100 module generates again, byte for byte, with three differences on the command
line: one more define (``-DCOMPILE_BLACKWELL_SM103_TMA_GROUPED_GEMMS``), its own folder of
generated sources on the include path, and ``--cuda-gpu-arch=sm_103a``. Laying them out again
was a large share of a whole-install audit's CPU (measured: docs/performance.md).
:func:`canonical_flags` gives a source's flags with each difference taken out where it provably
cannot change what clang reads into a type, so both builds key the source alike and the second
reads the first's answer:

* ``--cuda-gpu-arch``: a host-only parse (``--cuda-host-only``) runs no device compile, and
  clang defines ``__CUDA_ARCH__`` and the ``__CUDA_ARCH_FEAT_SM*`` macros only for one
  (clang/lib/Basic/Targets/NVPTX.cpp, ``NVPTXTargetInfo::getTargetDefines``). It is kept as
  the arch family (an SM103 build's capacity constant is SM100's: ``kernels.capacity_of``).
* a define is dropped when it is *inert* for the source (:func:`inert_reason` is None): in
  every file the source can include (:func:`include_closure`: every ``#include`` followed,
  whatever its condition), every mention of it is in the condition of a conditional group
  (``#if``...``#endif``) that holds no directive but nested conditionals and lies in the body
  of a function that is not ``constexpr``/``consteval`` and has no deduced return type, a body
  that declares no alias (``using X =``, ``typedef``) and names no ``GemmKernel``, itself or in
  a macro it uses. Such a group changes what the function does at run time and which
  templates its instantiation instantiates, never the layout of a type (a function body
  declares nothing outside itself) nor which kernels an audit finds (it finds them as aliases,
  :func:`cutlass_layout.installs.kernels.find_kernels`).
* the folder of generated sources (``-I<cache>/flashinfer-jit/<build>/generated/...``): named
  by its place, and every file the source's include closure reads in it is digested, path
  relative to the folder and bytes (the closure is resolved under each build's own include
  path, so an include one folder answers and the other does not changes the digest).

Anything this reader cannot follow (an ``#include`` of a macro, a file it cannot read, braces
that do not balance) gives None: the source keeps its own flags.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..cpp.preprocessor import directives
from ..cpp.brackets import NOT_NEWLINE, blank_comments, brace_pairs

_INCLUDE = re.compile(r"""^[ \t]*#[ \t]*(include|include_next|import)[ \t]*([<"])([^>"\n]*)[>"]""", re.M)
_COMPUTED_INCLUDE = re.compile(r"^[ \t]*#[ \t]*(include|include_next|import)[ \t]+([A-Za-z_][^\n]*)$", re.M)
_HAS_INCLUDE = re.compile(r"""__has_include(?:_next)?\s*\(\s*([<"])([^>"\n]*)[>"]""")
_CONDITIONS = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef"}
_CONDITIONALS = _CONDITIONS | {"else", "endif"}
#: what in a function body could make a kernel the audit finds
_DECLARES = re.compile(r"\busing\s+\w+\s*=|\btypedef\b|\bGemmKernel\b")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
#: what may follow a function's parameter list before its body (a trailing return type aside)
_QUALIFIER_TAIL = re.compile(
    r"(?:\b(?:const|volatile|noexcept|override|final|mutable)\b|&&?|"
    r"\bnoexcept\s*\([^(){};]*\))\s*$"
)


@dataclass
class SearchPath:
    """Where clang looks for an included file (clang's order: the includer's folder for a
    quoted name, ``-iquote``, ``-I``, ``-isystem``, ``-idirafter``)."""

    quote: list[Path] = field(default_factory=list)
    angled: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, flags: list[str]) -> "SearchPath":
        """The search path of a clang command line (``--cuda-path``'s include/ last, as clang
        adds it for CUDA)."""
        into: dict[str, list[Path]] = {"-iquote": [], "-I": [], "-isystem": [], "-idirafter": [], "--cuda-path": []}
        skip = False
        for f, nxt in zip(flags, flags[1:] + [None]):
            if skip:
                skip = False
            elif f in into and f != "--cuda-path" and nxt is not None:
                into[f].append(Path(nxt))
                skip = True
            elif f.startswith("-I") and len(f) > 2:
                into["-I"].append(Path(f[2:]))
            elif f.startswith("--cuda-path="):
                into["--cuda-path"].append(Path(f.split("=", 1)[1]) / "include")
        return cls(
            quote=into["-iquote"],
            angled=into["-I"]
            + into["-isystem"]
            + into["-idirafter"]
            + into["--cuda-path"]
            + list(_system_dirs(_is_cuda(flags))),
        )


def _is_cuda(flags: list[str]) -> bool:
    return any(a == "-x" and b == "cuda" for a, b in zip(flags, flags[1:]))


@lru_cache(maxsize=2)
def _system_dirs(cuda: bool) -> tuple[Path, ...]:
    """The folders clang searches after the command line's on this machine (its own headers,
    with CUDA's wrappers first for a CUDA parse; libstdc++; /usr/include), as far as they
    exist: their files are read too, so that a define they test is seen."""
    from ..cpp.clang import resource_include

    resource = resource_include()
    cxx = sorted(Path("/usr/include/c++").glob("*"), reverse=True)[:1]
    dirs = (
        ([resource / "cuda_wrappers"] if cuda else [])
        + cxx
        + [Path("/usr/include/x86_64-linux-gnu/c++") / d.name for d in cxx]
        + [d / "backward" for d in cxx]
        + [resource, Path("/usr/local/include"), Path("/usr/include/x86_64-linux-gnu"), Path("/usr/include")]
    )
    return tuple(d for d in dirs if d.is_dir())


def implicit_includes(flags: list[str]) -> list[Path]:
    """What clang includes before a source without a directive: for CUDA, its runtime wrapper
    (``-include __clang_cuda_runtime_wrapper.h``)."""
    if not _is_cuda(flags):
        return []
    from ..cpp.clang import resource_include

    wrapper = resource_include() / "__clang_cuda_runtime_wrapper.h"
    return [wrapper] if wrapper.is_file() else []


def _resolve(name: str, quoted: bool, includer: Path, search: SearchPath, after: Path | None = None) -> Path | None:
    dirs = ([includer.parent] + search.quote if quoted else []) + search.angled
    if after is not None:  # #include_next: the folders after the includer's
        dirs = search.angled[search.angled.index(after) + 1 :] if after in search.angled else search.angled
    for d in dirs:
        p = d / name
        if p.is_file():
            return p
    return None


def _found_in(path: Path, search: SearchPath) -> Path | None:
    return next((d for d in search.angled if d in path.parents), None)


class Closure:
    """Every file a source can include (:func:`include_closure`), the text of each, and what
    each name resolved to: ``files`` in order of discovery, ``names`` ``(includer, name,
    target or None)`` (None: no folder of the search path has it: clang's own or the system's
    headers)."""

    def __init__(self):
        self.files: list[Path] = []
        self.texts: dict[Path, str] = {}
        self.names: list[tuple[str, str, Path | None]] = []
        self.defines: dict[str, list[tuple[list[str] | None, str]]] = {}


class _File:
    """What :func:`include_closure` reads of one file, once: its text, its ``#include`` and
    ``__has_include`` names ``(next, quoted, name)``, its computed includes ``(next,
    tokens)``, its definitions."""

    def __init__(self, text: str):
        self.text = text
        clean = blank_comments(text, strings=False)
        self.names = (
            [(m.group(1) == "include_next", m.group(2) == '"', m.group(3)) for m in _INCLUDE.finditer(clean)]
            if "include" in clean or "import" in clean
            else []
        )
        self.names += [(False, m.group(1) == '"', m.group(2)) for m in _HAS_INCLUDE.finditer(clean)]
        self.computed = (
            [(m.group(1) == "include_next", m.group(2).strip()) for m in _COMPUTED_INCLUDE.finditer(clean)]
            if "include" in clean
            else []
        )
        self.definitions = _definitions(text, clean) if "define" in clean else []


#: What was read of each file in this process, with the (mtime, size) it was read at: an
#: audit's SM100 and SM103 builds, and their modules, read the same 1,500 headers, each once here
_READ: dict[Path, tuple[tuple[int, int], "_File"]] = {}
_READ_MAX = 20000


def _file(path: Path, memo: dict) -> "_File | None":
    f = memo.get(path)
    if f is None:
        try:
            st = path.stat()
            seen = _READ.get(path)
            if seen is not None and seen[0] == (st.st_mtime_ns, st.st_size):
                f = seen[1]
            else:
                f = _File(path.read_text(errors="replace"))
                if len(_READ) >= _READ_MAX:
                    _READ.clear()
                _READ[path] = ((st.st_mtime_ns, st.st_size), f)
        except OSError:
            return None
        memo[path] = f
    return f


def include_closure(source: Path, flags: list[str], memo: dict | None = None) -> Closure | None:
    """The files ``source`` can read through ``#include`` with ``flags``, every directive
    followed whatever its condition (more than one preprocessing reads, never less), and each
    ``__has_include`` name resolved. A computed include (``#include CUDA_STD_HEADER(cstdint)``,
    cutlass/cutlass.h) is followed to every name it can expand to with the definitions of the
    closure's files (:func:`computed_names`, each definition and none at once). None where one
    expands to nothing usable, or a file cannot be read. ``memo`` (a dict): what was read of
    each file and where each name was found, kept between calls (one search path's closures
    share nearly every header)."""
    memo = {} if memo is None else memo
    search = SearchPath.of(flags)
    found_at = memo.setdefault(("resolved", tuple(search.quote), tuple(search.angled)), {})
    roots = [source] + [p for p in implicit_includes(flags) if p != source]
    out, todo, seen, computed, done = Closure(), roots[::-1], set(roots), [], set()

    def follow(path: Path, nxt: bool, quoted: bool, name: str) -> None:
        where = (path.parent if quoted else None, nxt and _found_in(path, search), quoted, name)
        if where not in found_at:
            found_at[where] = _resolve(name, quoted, path, search, _found_in(path, search) if nxt else None)
        target = found_at[where]
        out.names.append((str(path), name, target))
        if target is not None and target not in seen:
            seen.add(target)
            todo.append(target)

    while todo:
        while todo:
            path = todo.pop()
            f = _file(path, memo)
            if f is None:
                return None
            out.files.append(path)
            out.texts[path] = f.text
            for name, definition in f.definitions:
                out.defines.setdefault(name, []).append(definition)
            for nxt, quoted, name in f.names:
                follow(path, nxt, quoted, name)
            computed += [(path, nxt, expr) for nxt, expr in f.computed]
        # the closure's files are all read: expand what the computed includes can name
        pending, computed = computed, []
        for path, nxt, expr in pending:
            names = computed_names(expr, out.defines)
            if not names:
                return None
            for name in sorted(names):
                if (path, name) not in done:
                    done.add((path, name))
                    follow(path, nxt, name[0] == '"', name[1:-1])
            computed.append((path, nxt, expr))  # again, should later files define more
        if not todo:
            break
    return out


def _definitions(text: str, clean: str) -> list[tuple[str, tuple[list[str] | None, str]]]:
    """``(name, (parameters or None, replacement))`` of each ``#define`` of a file (``clean``:
    its text with comments blanked)."""
    out = []
    for d in directives(text, clean):
        kind, rest = d.kind, d.rest
        if kind != "define":
            continue
        m = re.match(r"[ \t]*(\w+)(\(([^)]*)\))?(.*)$", rest, re.S)
        if m:
            params = None if m.group(2) is None else [p.strip() for p in m.group(3).split(",") if p.strip()]
            out.append((m.group(1), (params, m.group(4).strip())))
    return out


#: how many names a computed include may expand to before it counts as unknown
_MAX_NAMES = 256


def computed_names(expr: str, defines: dict[str, list]) -> set[str]:
    """Every header name (``<a/b>`` or ``"a/b"``) the tokens of a computed ``#include`` can
    expand to: each macro replaced by each of its definitions, or left as it is (a macro
    defined only under some condition), as the preprocessor expands them (C++ [cpp.include]/4);
    an empty set (not known) where none is a header name, a definition uses ``#`` or ``##``,
    the expansion does not end, or there are more than :data:`_MAX_NAMES`."""
    forms, names = {expr}, set()
    for _ in range(16):
        grown = set()
        for form in forms:
            m = next(
                (m for m in _WORD.finditer(form) if m.group() in defines and form[m.start() - 1 : m.start()] != "\x00"),
                None,
            )
            if m is None:
                text = re.sub(r"\s+", "", form.replace("\x00", ""))
                if re.fullmatch(r'<[^<>"]+>|"[^<>"]+"', text):
                    names.add(text)
                continue
            grown.add(form[: m.start()] + "\x00" + m.group() + form[m.end() :])  # left as it is
            for params, body in defines[m.group()]:
                if "#" in body:
                    return set()  # # and ## are not followed: what it names is not known
                if params is None:
                    grown.add(form[: m.start()] + body + form[m.end() :])
                    continue
                call = re.match(r"\s*\(([^()]*)\)", form[m.end() :])
                if call is None:
                    continue
                args = [a.strip() for a in call.group(1).split(",")]
                if len(args) != len(params):
                    continue
                sub = {p: a for p, a in zip(params, args)}
                grown.add(
                    form[: m.start()]
                    + _WORD.sub(lambda w: sub.get(w.group(), w.group()), body)
                    + form[m.end() + call.end() :]
                )
        forms = grown
        if len(forms) + len(names) > _MAX_NAMES:
            return set()
        if not forms:
            return names
    return set()  # still expanding (a macro that names itself): not known


def _is_function_header(header: str) -> bool:
    """Whether the text before a ``{`` ends as a function's declarator does: a parameter
    list, then qualifiers and a trailing return type if any."""
    tail = header.rstrip()
    if "->" in tail and ")" in tail[: tail.rfind("->")]:
        tail = tail[: tail.rfind("->")].rstrip()
    while True:
        m = _QUALIFIER_TAIL.search(tail)
        if not m or m.start() == len(tail):
            break
        tail = tail[: m.start()].rstrip()
    return tail.endswith(")")


def _function_body(code: str, pairs: dict[int, int], start: int, end: int) -> tuple[int, int, str] | str:
    """The outermost function body holding ``code[start:end]``: ``(open, close, header)``,
    or why there is none (the span is in no function, or in one whose body a constant
    expression or return type deduction reads)."""
    enclosing = sorted(o for o, c in pairs.items() if o < start and end <= c)
    for o in enclosing:
        head_start = max(code.rfind(ch, 0, o) for ch in ";{}") + 1
        header = code[head_start:o]
        if re.search(r"\b(namespace|extern)\b", header) and "(" not in header:
            continue
        if not _is_function_header(header):
            if re.search(r"\b(class|struct|union)\b", header):
                continue  # a class body: its member functions are further in
            return "outside any function body"
        if re.search(r"\b(constexpr|consteval)\b", header):
            return "in a constexpr function"
        if re.search(r"\bauto\b|\bdecltype\s*\(\s*auto\b", header) and "->" not in header:
            return "in a function whose return type is deduced"
        if re.search(r"\]\s*(?:<[^{;]*>\s*)?\(", header):
            return "in a lambda"
        return o, pairs[o], header
    return "outside any function body"


def _declares(body: str, defines: dict[str, list]) -> bool:
    """Whether ``body`` (or a macro it names, and so on) declares an alias or names ``GemmKernel``."""
    todo, seen = [body], set[str]()
    while todo:
        text = todo.pop()
        if _DECLARES.search(text):
            return True
        for w in set(_WORD.findall(text)) - seen:
            seen.add(w)
            todo += [replacement for _, replacement in defines.get(w, [])]
    return False


@dataclass
class _Group:
    """One ``#if``...``#endif`` of a file: where it starts and ends, whether it holds a
    directive other than a conditional (``#define``, ``#include``...), each of its
    conditional directives' spans, and where its first branch ends."""

    start: int
    end: int = -1
    other_directives: bool = False
    spans: list[tuple[int, int]] = field(default_factory=list)
    first_end: int | None = None


class _Structure:
    """What :func:`inert_reason` reads of a file: its text with comments and literals
    blanked (``clean``), its directives, its code (``clean`` without directives, and without
    the ``#else``/``#elif`` branches, so that alternative openings of one block are counted
    once), the ``{``/``}`` pairs of that code (None: they do not balance) and its conditional
    groups (:class:`_Group`)."""

    def __init__(self, text: str):
        self.clean = clean = blank_comments(text)
        self.directives = directives(text, clean)
        code = list(clean)
        stack: list[_Group] = []
        self.groups: list[_Group] = []
        for d in self.directives:
            s, e, kind = d.start, d.end, d.kind
            code[s:e] = " " * (e - s)
            if kind in ("if", "ifdef", "ifndef"):
                stack.append(_Group(start=s, spans=[(s, e)]))
            elif kind in _CONDITIONALS and stack:
                g = stack[-1]
                if g.first_end is None:  # the first branch ends here
                    g.first_end = e
                g.spans.append((s, e))
                if kind == "endif":
                    stack.pop()
                    g.end = e
                    code[g.first_end : s] = NOT_NEWLINE.sub(" ", "".join(code[g.first_end : s]))  # other branches
                    self.groups.append(g)
                    if stack:
                        stack[-1].other_directives |= g.other_directives
            elif stack:
                stack[-1].other_directives = True
        self.code = "".join(code)
        self.pairs = brace_pairs(self.code)


def inert_reason(macro: str, closure: Closure, memo: dict | None = None) -> str | None:
    """None when defining ``macro`` or not cannot change a layout or a kernel found in a
    parse of ``closure`` (the module docstring's rule), else where and why it can
    (``file:line: why``). ``memo``: as :func:`include_closure`'s."""
    word = re.compile(rf"\b{re.escape(macro)}\b")
    memo = {} if memo is None else memo
    for path, text in closure.texts.items():
        if macro not in text:
            continue
        st = memo.get(("structure", path))
        if st is None:
            st = memo[("structure", path)] = _Structure(text)
        spots = [m.start() for m in word.finditer(st.clean)]
        if spots and st.pairs is None:
            return f"{path}: braces that do not balance"
        for spot in spots:
            line = st.clean.count("\n", 0, spot) + 1
            group = next((g for g in st.groups if any(s <= spot < e for s, e in g.spans)), None)
            kind = next((d.kind for d in st.directives if d.start <= spot < d.end), None)
            if group is None or kind not in _CONDITIONS:
                return f"{path}:{line}: outside the condition of an #if"
            if group.other_directives:
                return f"{path}:{line}: its #if group holds other directives"
            assert st.pairs is not None  # spots: checked above
            body = _function_body(st.code, st.pairs, group.start, group.end)
            if isinstance(body, str):
                return f"{path}:{line}: {body}"
            if _declares(st.clean[body[0] : body[1]], closure.defines):
                return f"{path}:{line}: the function's body declares an alias or names GemmKernel"
    return None


def _define_name(flag: str) -> str | None:
    m = re.match(r"-[DU](\w+)", flag)
    return m.group(1) if m else None


def place_names(flags: list[str], generated: Path | None) -> list[tuple[str, str]]:
    """``(folder, its name in a key)`` of the folder of generated sources and of each folder of
    the search path inside it (``<generated 0>``...), the longest first: how :func:`named`
    and :func:`unnamed` write a path of this build's generated folders and read it back."""
    if generated is None:
        return []
    search = SearchPath.of(flags)
    inside = [d for d in search.quote + search.angled if d == generated or generated in d.parents]
    out = [(str(generated), "<generated>")] + [(str(d), f"<generated {i}>") for i, d in enumerate(inside)]
    return sorted(out, key=lambda x: -len(x[0]))


def unnamed(path: str, places: list) -> str:
    """``path`` as named by :func:`canonical_flags` (``<generated 0>/x.cu``) in this build's folders."""
    for folder, name in places:
        if path == name or path.startswith(name + "/"):
            return folder + path[len(name) :]
    return path


def named(path: str, places: list[tuple[str, str]]) -> str:
    """``path`` with a generated folder of ``places`` (:func:`place_names`) put as its name."""
    for folder, name in places:
        if path == folder or path.startswith(folder + "/"):
            return name + path[len(folder) :]
    return path


def canonical_flags(
    source: Path, flags: list[str], generated: Path | None, arch_family: str, memo: dict | None = None
) -> list[str] | None:
    """``flags`` as a key of ``source``'s layouts (module docstring): each define inert for
    the source left out; the folder of generated sources (``generated``) and each folder of
    the search path in it named by their place (``<generated 0>``), followed by a digest of
    the files the source's include closure reads in them and of where each included name was
    found, and the source's own place; ``--cuda-gpu-arch`` of a host-only parse named by
    ``arch_family`` (``sm100`` for an SM103 build). None where the closure cannot be followed.

    Two builds of one source (the same bytes) whose canonical flags are equal read the same
    types: their kernels and every size and offset are the same. ``memo`` (a dict) keeps what
    was read of each file between calls."""
    memo = {} if memo is None else memo
    root = _file(source, memo)
    if root is None:
        return None
    places = place_names(flags, generated)
    # sources of one folder that include the same names read the same headers: what those
    # give is worked out once (a generated MoE source's closure is some 900 files)
    shape = (
        "canonical",
        tuple(flags),
        str(generated),
        str(source.parent),
        tuple(root.names),
        tuple(root.computed),
        repr(root.definitions),
    )
    rest = memo.get(shape)
    if rest is None:
        rest = memo[shape] = _rest_of(source, flags, places, memo)
    if rest is None:
        return None
    inert, digest, defines = rest
    alone = Closure()
    alone.files, alone.texts, alone.defines = [source], {source: root.text}, defines
    out = []
    for f in flags:
        name = _define_name(f)
        if name is not None and inert.get(name) and inert_reason(name, alone, memo) is None:
            continue
        if f.startswith("--cuda-gpu-arch=") and "--cuda-host-only" in flags:
            f = f"--cuda-gpu-arch=<{arch_family}>"
        out.append(named(f[2:], places).join(("-I", "")) if f.startswith("-I") else named(f, places))
    return out + [f"<generated files {digest}>", f"<source {named(str(source), places)}>"]


def _rest_of(source: Path, flags: list[str], places: list[tuple[str, str]], memo: dict):
    """What :func:`canonical_flags` needs of ``source``'s include closure but the source
    itself: ``({define: inert in the other files}, digest of the generated files and of where
    each name was found, the closure's definitions)``; None where the closure cannot be followed."""
    closure = include_closure(source, flags, memo)
    if closure is None:
        return None
    own = str(source)
    others = Closure()
    others.files = [p for p in closure.files if p != source]
    others.texts = {p: t for p, t in closure.texts.items() if p != source}
    others.defines = closure.defines
    inert = {
        name: inert_reason(name, others, memo) is None for name in (_define_name(f) for f in flags) if name is not None
    }
    h = hashlib.sha256()
    for path in others.files:
        place = named(str(path), places)
        if place != str(path):
            h.update(f"{place}\0".encode())
            h.update(hashlib.sha256(others.texts[path].encode()).digest())
    for includer, name, target in closure.names:  # what each name resolved to, as the key sees it
        where = "-" if target is None else named(str(target), places)
        includer = "<source>" if includer == own else named(includer, places)
        h.update(f"{includer}\0{name}\0{where}\n".encode())
    return inert, h.hexdigest()[:32], closure.defines
