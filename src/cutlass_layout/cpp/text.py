"""Launchers cut down to the declarations their kernel type needs (a text transform of C++).

A launcher declares its kernel's type chain (collective builders, then ``using GemmKernel =
GemmUniversal<...>``) and then builds and runs it: arguments, ``GemmUniversalAdapter``,
``initialize``, ``run``. Parsing that second part costs most of a parse (measured on
TensorRT-LLM MoE launchers: docs/performance.md) and cannot change the kernel's type: a declaration
after the alias can neither change what the alias names nor the layout of the class it
names. So a launcher macro is redefined with its body cut right after its last kernel alias
(:func:`trimmed_macro`), with the braces it leaves open closed again.

A kernel declared in a function *template* that a source instantiates explicitly (flashinfer's
``CutlassGroupwiseScaledGEMMSM120<...>``) lies in a body libclang does not show instantiated;
:func:`rehost_template` copies the template's declarations up to the kernel alias into a
class template of the same parameters (local ``constexpr`` values become static members,
``using namespace`` goes to the enclosing scope), so the kernel of each instantiation is a
named type. TensorRT-LLM's SM90 mixed-input launchers need more of it: their kernel alias is
``GemmKernel`` naming a selector's ``::Type`` (no ``GemmUniversal<`` spelled), fpA_intB's
sits under ``if constexpr`` (:func:`declarations_only`), the MoE ones forward to an ``_impl``
template (:func:`forwarded_call`) and take a default argument only their header declares
(:func:`with_defaults`).

Both are text transforms of the install's own code; whatever they produce is compiled, and a
transform that does not compile is not used (:mod:`cutlass_layout.installs.source_layout` falls back to the
source as written, or reports the error).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

#: A type alias naming a GemmUniversal, possibly wrapped (``Sm12xOnly<GemmUniversal<...>>``).
KERNEL_ALIAS_RE = re.compile(
    r"\busing\s+(\w+)\s*=\s*(?:typename\s+)?(?:[\w:]+\s*<\s*)*?"
    r"(?:(?:::)?cutlass::)?(?:gemm::)?(?:kernel::)?(?<!device::)GemmUniversal\s*<")
#: An alias named ``GemmKernel``, whatever it names: what a function template re-hosted
#: (:func:`rehost_template`) declares its kernel as where no ``GemmUniversal<`` is spelled
#: (TensorRT-LLM's mixed-input MoE launcher: ``using GemmKernel = typename
#: GemmKernelSelector<...>::Type;``, a ``GemmUniversalPrecomputedScheduler`` or a
#: ``SingleWarpgroupPersistentGemm``). Whether it is a kernel, the parse says.
GEMM_KERNEL_ALIAS_RE = re.compile(r"\busing\s+(GemmKernel)\s*=")
#: Any alias declaration (:func:`adapter_alias` looks for the one whose ``GemmKernel`` a body reads).
ANY_ALIAS_RE = re.compile(r"\busing\s+(\w+)\s*=")
_OPEN, _CLOSE = "([{", ")]}"


@lru_cache(maxsize=8)
def blank_comments(text: str, strings: bool = True) -> str:
    """``text`` with comments, and (``strings``) the contents of string and char literals,
    replaced by spaces (same length, newlines kept), so that braces and semicolons in them
    are not counted. A literal ends at its closing quote or the end of its line (a
    backslash escapes the next character, a newline too). The last few answers are kept:
    each reader of a source's text here blanks it first."""
    out, last = [], 0
    for m in _SKIPPED.finditer(text):
        quote = m.group(1)
        if quote is None:  # a comment
            out += [text[last:m.start()], NOT_NEWLINE.sub(" ", m.group())]
        elif strings:
            body = m.group(2)
            out += [text[last:m.start()], quote, NOT_NEWLINE.sub(" ", body), m.group()[1 + len(body):]]
        else:
            out.append(text[last:m.end()])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


#: a comment, or a string or char literal (its quote, its body, its closing quote if any)
_SKIPPED = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|(["'])((?:\\.|\\\Z|(?!\1)[^\\\n])*)\1?""", re.S)
NOT_NEWLINE = re.compile(r"[^\n]")


def cut_after_last_kernel_alias(body: str, pattern: re.Pattern = KERNEL_ALIAS_RE) -> int | None:
    """The index just after the ``;`` ending the last kernel alias of ``body`` (a function or
    macro body), or None when it has none; ``pattern`` says what a kernel alias is
    (:data:`KERNEL_ALIAS_RE`, or :data:`GEMM_KERNEL_ALIAS_RE` for a re-hosted template)."""
    clean = blank_comments(body)
    last = None
    for m in pattern.finditer(clean):
        last = statement_end(clean, m.end()) or last
    return last


def statement_end(clean: str, start: int) -> int | None:
    """The index just after the ``;`` that ends the statement going on at ``start`` (brackets
    balanced), None where a closing bracket or the end comes first."""
    depth = 0
    for i in range(start, len(clean)):
        ch = clean[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";" and depth == 0:
            return i + 1
    return None


#: The kernel alias :func:`rehost_template` adds after a body's adapter alias (flashinfer's
#: SVDQuant ``run_tactic<Config>`` declares only ``using Gemm = typename Config::Gemm;``, a
#: ``GemmUniversalAdapter``, and then reads ``Gemm::GemmKernel``).
ADAPTER_KERNEL = "GemmKernel"


def adapter_alias(body: str) -> tuple[str, int, int] | None:
    """``(name, end, start)`` of the last alias of ``body`` (a function body) whose
    ``GemmKernel`` the body names after it (``Gemm::GemmKernel``: ``Gemm`` a device adapter such
    as ``GemmUniversalAdapter<...>``): ``end`` just after its ``;``, ``start`` where its
    ``using`` is; None when the body names no alias's ``GemmKernel``."""
    clean = blank_comments(body)
    found = None
    for m in ANY_ALIAS_RE.finditer(clean):
        name = m.group(1)
        end = statement_end(clean, m.end())
        if end is not None and re.search(rf"(?<![\w:]){name}\s*::\s*GemmKernel\b", clean[end:]):
            found = (name, end, m.start())
    return found


def closers(kept: str) -> str:
    """What closes the scopes ``kept`` leaves open, innermost first: ``};`` for a class or an
    initializer, ``}`` for a block or function, ``#endif`` for an open ``#if``."""
    clean = blank_comments(kept)
    stack = ["};" if re.search(r"\b(struct|class|union|enum)\b[^()]*$", head) or "=" in head
             else "}" for head in _open_scopes(clean, len(clean))]
    ifs = 0
    for line in clean.split("\n"):
        s = line.strip()
        if re.match(r"#\s*if", s):
            ifs += 1
        elif re.match(r"#\s*endif", s):
            ifs -= 1
    return " ".join(reversed(stack)) + "".join("\n#endif" for _ in range(max(ifs, 0)))


def macro_definition(text: str, name: str, near_line: int | None = None) -> tuple[str, str, int] | None:
    """``(parameters, body, line)`` of the ``#define name(...)`` in ``text``: the one that
    starts at or before ``near_line`` (the active one, where a file defines it twice under
    ``#if``), else the first. Continuation lines are joined."""
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines)
              if re.match(rf"\s*#\s*define\s+{re.escape(name)}\s*\(", ln)]
    if near_line is not None:
        before = [i for i in starts if i + 1 <= near_line]
        starts = before[-1:] or starts
    if not starts:
        return None
    i = starts[0]
    parts = []
    while i < len(lines):
        ln = lines[i]
        if not ln.rstrip().endswith("\\"):
            parts.append(ln)
            break
        parts.append(ln.rstrip()[:-1])  # a continuation line, its backslash dropped
        i += 1
    full = " ".join(parts)
    m = re.match(rf"\s*#\s*define\s+{re.escape(name)}\s*\(([^)]*)\)", full)
    if not m:
        return None
    return m.group(1), full[m.end():], starts[0] + 1


def _open_scopes(clean: str, pos: int) -> list[str]:
    """The scopes still open at position ``pos`` of ``clean`` (comments blanked), outermost
    first, each as the text between the statement's start and its ``{`` (``struct Foo``,
    ``X x =``, ``void f()``)."""
    stack: list[str] = []
    start = 0
    for i, ch in enumerate(clean[:pos]):
        if ch == "{":
            stack.append(clean[start:i])
            start = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
            start = i + 1
        elif ch == ";":
            start = i + 1
    return stack


def _in_class(clean: str, pos: int) -> bool:
    """Whether position ``pos`` of ``clean`` (comments blanked) lies directly in a class body."""
    stack = _open_scopes(clean, pos)
    return bool(stack and re.search(r"\b(struct|class|union)\b[^()=]*$", stack[-1]))


def trimmed_macro(name: str, params: str, body: str, probe=None) -> str | None:
    """``#undef``/``#define`` lines redefining launcher macro ``name`` with its body cut after
    its last kernel alias (see the module docstring), its selections among builders made after
    the selection (:func:`deferred_selections`); None when the body has no kernel alias.

    ``probe(index, alias, in_class)``, if given, returns declarations to put right after the
    ``index``-th kernel alias (``alias`` is its name; ``in_class`` whether it is a class member),
    so that one parse of the expanded source also lays the kernels out."""
    cut = cut_after_last_kernel_alias(body)
    if cut is None:
        return None
    kept = deferred_selections(blank_comments(body[:cut]))
    if probe is not None:
        inserts = []
        for i, m in enumerate(KERNEL_ALIAS_RE.finditer(kept)):
            end = cut_after_last_kernel_alias(kept[:m.end()] + kept[m.end():].split(";", 1)[0] + ";")
            if end is None:
                continue
            inserts.append((end, " " + probe(i, m.group(1), _in_class(kept, m.start())) + " "))
        for end, text in reversed(inserts):
            kept = kept[:end] + text + kept[end:]
    text = " ".join((kept + " " + closers(kept)).split())
    return f"#undef {name}\n#define {name}({params}) {text}\n"


#: ``using NAME = typename TEMPLATE<...>::MEMBER;`` (the template-id found by bracket matching).
_MEMBER_ALIAS_HEAD = re.compile(r"\busing\s+(\w+)\s*=\s*typename\s+((?:::)?[\w:\s]*?\w)\s*<")
#: ``using NAME = std::conditional_t<`` (or ``cute::conditional_t``, ``conditional_t``).
_SELECTION_HEAD = re.compile(r"\busing\s+(\w+)\s*=\s*((?:(?:::)?(?:std|cute|cutlass::platform)\s*::\s*)?"
                             r"conditional_t)\s*<")
_CONDITION = re.compile(r"\s*!?\s*\w+\s*")


def _selection_leaves(clean: str, lt: int, gt: int, spelled: str) -> list[str] | None:
    """The alternatives of ``spelled<COND, A, B>`` (its ``<`` at ``lt``, ``>`` at ``gt``),
    nested selections of the same spelling followed through: the names at its leaves, or None
    where the selection is anything else (a condition that is not a plain or negated name,
    whose commas and angle brackets could not be told apart; a leaf that is not a name)."""
    spans = _arg_spans(clean, lt, gt)
    if len(spans) != 3 or not _CONDITION.fullmatch(clean[spans[0][0]:spans[0][1]]):
        return None
    leaves: list[str] = []
    for a, b in spans[1:]:
        arg = clean[a:b].strip()
        if re.fullmatch(r"\w+", arg):
            leaves.append(arg)
            continue
        m = re.match(re.escape(spelled) + r"\s*<", arg)
        if m is None:
            return None
        inner_lt = a + (len(clean[a:b]) - len(clean[a:b].lstrip())) + m.end() - 1
        inner_gt = matching(clean, inner_lt, "<", ">")
        if inner_gt is None or clean[inner_gt + 1:b].strip():
            return None
        sub = _selection_leaves(clean, inner_lt, inner_gt, spelled)
        if sub is None:
            return None
        leaves += sub
    return leaves


def deferred_selections(body: str) -> str:
    """``body`` (a launcher's, cut after its kernel alias) with each selection among members
    of class templates made after the selection, not before it: where

        using A = typename Builder<...a...>::CollectiveOp;   // (and B, C alike)
        using E = std::conditional_t<IsFinalize, A, std::conditional_t<IsAct, B, C>>;

    and ``A``, ``B``, ``C`` are named nowhere else, it becomes ``using A = Builder<...a...>;``
    (naming a class template's specialization instantiates nothing) and ``using E = typename
    std::conditional_t<IsFinalize, A, std::conditional_t<IsAct, B, C>>::CollectiveOp;``. ``E``
    is the same type; only the builder chosen is instantiated. TensorRT-LLM's MoE TMA
    warp-specialized launcher (``moe_gemm_tma_ws_launcher.inl``) builds three epilogues per
    kernel this way (default, finalize, activation) and uses one. A selection whose condition
    is not a plain name, or whose alternatives are not all such aliases of one member, is
    left as written, and so is every alias named anywhere else (what is left compiles as the
    launcher does, but for an unused alternative that would not: its error is not seen).
    """
    clean = blank_comments(body)
    members: dict[str, tuple[int, int, int, str]] = {}  # name -> (decl start, '<', '>', member)
    for m in _MEMBER_ALIAS_HEAD.finditer(clean):
        lt = m.end() - 1
        gt = matching(clean, lt, "<", ">")
        if gt is None:
            continue
        tail = re.match(r"\s*::\s*(\w+)\s*;", clean[gt + 1:])
        if tail is not None:
            members[m.group(1)] = (m.start(), lt, gt, tail.group(1))
    edits: list[tuple[int, int, str]] = []
    for m in _SELECTION_HEAD.finditer(clean):
        lt = m.end() - 1
        gt = matching(clean, lt, "<", ">")
        if gt is None or not re.match(r"\s*;", clean[gt + 1:]):
            continue
        leaves = _selection_leaves(clean, lt, gt, m.group(2))
        if not leaves or len(set(leaves)) != len(leaves) or any(x not in members for x in leaves):
            continue
        member = {members[x][3] for x in leaves}
        if len(member) != 1 or any(len(re.findall(rf"\b{x}\b", clean)) != 2 for x in leaves):
            continue  # named elsewhere too (or twice here): left as written
        for x in leaves:
            start, x_lt, x_gt, _ = members[x]
            head = clean[start:x_lt]
            edits.append((start, x_gt + 1 + clean[x_gt + 1:].index(";"),
                          re.sub(r"=\s*typename\b", "=", head, count=1).rstrip() + body[x_lt:x_gt + 1]))
        rhs = clean.index("=", m.start()) + 1
        edits.append((rhs, gt + 1, f" typename {body[rhs:gt + 1].strip()}::{member.pop()}"))
    for start, end, text in sorted(edits, reverse=True):
        body = body[:start] + text + body[end:]
    return body


# ---------------------------------------------------------------------------------------
# argument lists

#: the characters :func:`arguments` reads: of a template's (or a call's) argument list, of a
#: macro call's
_ARGUMENT_PUNCT = re.compile(r"[()\[\]{}<>,]")
_MACRO_PUNCT = re.compile(r"[(),]")


def arguments(text: str, start: int = 0, end: int | None = None, *,
              macro: bool = False) -> Iterator[tuple[int, int, int | None]]:
    """The top-level arguments of the list that starts at ``start`` of ``text`` (just after its
    ``<`` or ``(``), one at a time, as ``(start, end, stop)``: the argument is ``text[start:end]``
    as written (spaces kept), ``stop`` the index of the ``,`` or closing bracket after it (None
    for the last argument of a list that is not closed).

    An argument runs to a ``,`` outside brackets: ``()``, ``[]`` and ``{}`` nest, and so does
    ``<>`` outside parentheses (there ``<`` and ``>`` are operators: ``A<(x > y), b>`` has two
    arguments); with ``macro``, parentheses alone nest, as the preprocessor splits a macro
    call's arguments (``M(A<x, y>)`` has two). Where ``end`` is given the list runs to it, a
    closing bracket it did not open read as an operator (``a > b``, ``p->q``); otherwise it ends
    at the first such bracket (a ``>``, or a ``)``, ``]``, ``}``). Read lazily: a caller that wants
    the first few arguments of a long spelling stops there."""
    limit = len(text) if end is None else end
    paren = angle = 0
    begin = start
    for m in (_MACRO_PUNCT if macro else _ARGUMENT_PUNCT).finditer(text, start, limit):
        ch, i = m.group(), m.start()
        if ch in "([{":
            paren += 1
        elif ch in ")]}":
            if paren == 0:
                if end is None:
                    yield begin, i, i
                    return
                continue
            paren -= 1
        elif ch == "<":
            if paren == 0:
                angle += 1
        elif ch == ">":
            if paren == 0:
                if angle == 0:
                    if end is None:
                        yield begin, i, i
                        return
                    continue
                angle -= 1
        elif paren == 0 and angle == 0:  # a comma
            yield begin, i, i
            begin = i + 1
    yield begin, limit, end


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved in past the whitespace at both ends of ``text[start:end]``."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def template_args(spelling: str, limit: int | None = None) -> list[str]:
    """The top-level template arguments of ``A<x, B<y, z>>`` -> ``["x", "B<y, z>"]``
    (of the first ``<...>``, :func:`arguments`; ``<`` and ``>`` inside parentheses are
    operators), empty ones left out. ``limit``: the first ``limit`` of them
    (``template_args(s)[:limit]``), read without scanning the rest (a kernel's ``TiledMma`` and
    smem layouts are most of its spelling)."""
    start = spelling.find("<")
    if start < 0 or (limit is not None and limit < 1):
        return []
    out = []
    for s, e, _ in arguments(spelling, start + 1):
        arg = spelling[s:e].strip()
        if arg:
            out.append(arg)
            if len(out) == limit:
                break
    return out


def matching(text: str, start: int, open_: str, close: str) -> int | None:
    """Index of the bracket closing the one at ``start`` (angle brackets inside parentheses
    are not counted)."""
    depth, paren = 0, 0
    angle = open_ == "<"
    for m in _BRACKETS[open_].finditer(text, start):  # only the characters that count
        ch = m.group()
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        if angle and paren > 0:
            continue
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return m.start()
    return None


def brace_pairs(clean: str) -> dict[int, int] | None:
    """Each ``{``'s offset in ``clean`` (comments blanked) -> its ``}``'s, or None where they do
    not balance (a ``}`` with no ``{`` open, or a ``{`` never closed)."""
    stack, pairs = [], {}
    for m in re.finditer(r"[{}]", clean):
        if m.group() == "{":
            stack.append(m.start())
        elif not stack:
            return None
        else:
            pairs[stack.pop()] = m.start()
    return None if stack else pairs


#: The characters :func:`matching` reads, by the bracket it matches.
_BRACKETS = {"<": re.compile(r"[()<>]"), "(": re.compile(r"[()]"), "{": re.compile(r"[(){}]"),
             "[": re.compile(r"[()\[\]]")}


def explicit_instantiations(text: str) -> list[tuple[str, str, int]]:
    """``(function name, template arguments as written, line)`` of each explicit instantiation
    ``template R name<args>(params);`` in a source (comments ignored)."""
    clean = blank_comments(text)
    out = []
    for m in re.finditer(r"\btemplate\s+(?!<)[^;{}<>]*?\b(\w+)\s*<", clean):
        lt = m.end() - 1
        gt = matching(clean, lt, "<", ">")
        if gt is None:
            continue
        after = clean[gt + 1:gt + 200].lstrip()
        if not after.startswith("("):
            continue
        args = " ".join(text[lt + 1:gt].split())
        out.append((m.group(1), args, clean.count("\n", 0, m.start()) + 1))
    return out


def template_parameters(definition: str) -> tuple[str, int] | None:
    """``(parameter list as written, index after its ``>``)`` of a template declaration's
    ``template <...>`` (comments ignored), or None when ``definition`` starts otherwise."""
    clean = blank_comments(definition)
    m = re.match(r"\s*template\s*<", clean)
    if not m:
        return None
    gt = matching(clean, m.end() - 1, "<", ">")
    if gt is None:
        return None
    return definition[m.end():gt], gt + 1


def with_defaults(params: str, declared: str) -> str:
    """A template parameter list ``params`` (a definition's) with the default arguments that
    another declaration of the same template (``declared``, its parameter list) gives and
    ``params`` lacks: TensorRT-LLM declares ``ScaleMode = MixedInputScaleMode::kPostMma`` in
    ``moe_gemm_tma_ws_mixed_input_launcher.h`` and defines the template in the ``.inl``
    without it, and sources instantiate it with one argument fewer. A list of another length
    is returned unchanged."""
    def split(text: str) -> list[str]:
        clean = blank_comments(text)
        return [text[s - 1:e - 1] for s, e in _arg_spans("<" + clean + ">", 0, len(clean) + 1)] if clean.strip() else []

    mine, theirs = split(params), split(declared)
    if len(mine) != len(theirs):
        return params
    out = []
    for p, d in zip(mine, theirs):
        clean_d = blank_comments(d)
        eq = _top_level_equals(clean_d)
        if _top_level_equals(blank_comments(p)) is None and eq is not None:
            p = p + " = " + d[eq + 1:].strip()
        out.append(p)
    return ", ".join(out)


def _top_level_equals(clean: str) -> int | None:
    """Index of the first ``=`` of ``clean`` outside brackets (a parameter's default)."""
    depth = 0
    for i, ch in enumerate(clean):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == "=" and depth == 0 and clean[i + 1:i + 2] != "=" and clean[i - 1:i] not in "=!<>":
            return i
    return None


def _body(definition: str) -> tuple[str, str] | None:
    """``(template parameters, body after its ``{``)`` of a function template's definition."""
    found = template_parameters(definition)
    if found is None:
        return None
    params, after = found
    clean = blank_comments(definition)
    paren = clean.find("(", after)
    close = matching(clean, paren, "(", ")") if paren >= 0 else None
    if close is None:
        return None
    brace = clean.find("{", close)
    if brace < 0:
        return None
    return params, definition[brace + 1:]


#: the message of the ``static_assert`` an ``if constexpr`` around the kernel becomes
HOISTED_IF = ("cutlass-layout: the launcher declares no kernel with these template arguments "
              "(the if constexpr around its kernel alias is false)")


#: a statement that starts with a (qualified) name and a ``(``: a call, where ``);`` ends it
_CALL_STATEMENT = re.compile(r"(?:^|(?<=[;{}]))(\s*)((?:::)?[A-Za-z_]\w*(?:\s*(?:::|\.|->)\s*[A-Za-z_]\w*)*)\s*\(")
#: what starts such a statement without being a call (kept), or is a statement
#: :func:`rehost_template` refuses (``return(x);``)
_NOT_CALLS = {"static_assert", "decltype", "sizeof", "alignof", "alignas", "noexcept", "typeid", "return",
              "if", "for", "while", "switch", "throw", "co_return", "co_yield", "co_await"}


def declarations_only(kept: str) -> str:
    """The part of a function body before its kernel alias (``kept``, comments blanked) as
    class members: statements that are calls blanked (upper-case macro calls,
    ``TLLM_LOG_DEBUG(...);``: logging, no declaration; function calls, flashinfer's
    ``CutlassGroupwiseScaledGEMMSM100LowLatency`` starts with ``std::swap(m, n);``: run-time
    values, no type), and an ``if constexpr (C) {`` still open at the end
    (the kernel declared inside it, as fpA_intB's ``fpA_intB_launcher_sm90.inl`` does under
    ``!should_filter_tma_warp_specialized_gemm_problem_shape_v<...>``) replaced by
    ``static_assert((C), "...")``: the declarations inside it are the class's, and an
    instantiation where ``C`` is false, for which the launcher declares no kernel, fails with
    that message instead of being laid out. Anything else is kept as written."""
    out = kept
    for m in reversed(list(_CALL_STATEMENT.finditer(kept))):
        if m.group(2) in _NOT_CALLS:
            continue
        close = matching(kept, m.end() - 1, "(", ")")
        semi = re.match(r"\s*;", kept[close + 1:]) if close is not None else None
        if semi is None:
            continue
        stop = close + 1 + semi.end()
        out = out[:m.end(1)] + NOT_NEWLINE.sub(" ", out[m.end(1):stop]) + out[stop:]
    for m in reversed(list(re.finditer(r"\bif\s+constexpr\s*\(", out))):
        close = matching(out, m.end() - 1, "(", ")")
        if close is None:
            continue
        brace = re.match(r"\s*\{", out[close + 1:])
        if brace is None or matching(out, close + brace.end(), "{", "}") is not None:
            continue  # a statement, or a block closed before the alias
        cond = out[m.end():close]
        out = (out[:m.start()] + f'static_assert(({cond}), "{HOISTED_IF}");'
               + out[close + 1 + brace.end():])
    return out


def _no_statements(kept: str) -> bool:
    code = blank_comments("\n".join(ln for ln in kept.split("\n") if not ln.lstrip().startswith("#")))
    return re.search(r"\b(if|for|while|return|switch)\b\s*[(\w]", code) is None


def rehost_template(definition: str, index: int, *, name: str | None = None,
                    declared: str | None = None) -> tuple[str, str, str] | None:
    """A class template holding a function template's declarations up to its last kernel
    alias: returns ``(using-directives, class template text, kernel alias name)``; the class is
    named ``name`` (``cl_rehost_<index>`` by default). The kernel alias is the last
    :data:`KERNEL_ALIAS_RE` of the body, else its last ``using GemmKernel = ...``
    (:data:`GEMM_KERNEL_ALIAS_RE`), else the ``GemmKernel`` of the last alias whose
    ``GemmKernel`` the body reads (:func:`adapter_alias`: a device adapter), declared after it
    as :data:`ADAPTER_KERNEL`. The body before it becomes members
    (:func:`declarations_only`; local ``constexpr`` values static members, ``using namespace``
    moved out); ``declared``, another declaration's parameter list, gives the parameters'
    default arguments (:func:`with_defaults`). None when the body has no kernel alias or
    statements other than declarations come before it."""
    found = _body(definition)
    if found is None:
        return None
    params, body = found
    if declared is not None:
        params = with_defaults(params, declared)
    pattern = KERNEL_ALIAS_RE
    cut = cut_after_last_kernel_alias(body)
    if cut is None:
        pattern = GEMM_KERNEL_ALIAS_RE
        cut = cut_after_last_kernel_alias(body, pattern)
    adapter = adapter_alias(body) if cut is None else None
    if adapter is not None:
        cut = adapter[1]
    if cut is None:
        return None
    kept = declarations_only(blank_comments(body[:cut]))
    if adapter is not None:  # the kernel the body reads through the adapter, named
        kept += f"\nusing {ADAPTER_KERNEL} = typename {adapter[0]}::GemmKernel;"
        alias = ADAPTER_KERNEL
    else:
        alias = pattern.findall(kept)[-1]
    usings = re.findall(r"\busing\s+namespace\s+[\w:]+\s*;", kept)
    kept = re.sub(r"\busing\s+namespace\s+[\w:]+\s*;", " ", kept)
    # a local constant becomes a static data member
    kept = re.sub(r"(^\s*|[;{}]\s*)(?:static\s+)?constexpr(\s+static)?\b", r"\1static constexpr", kept)
    if not _no_statements(kept):
        return None  # statements: not a list of declarations
    struct = (f"template <{params}>\nstruct {name or f'cl_rehost_{index}'} {{\n{kept}\n{closers(kept)}\n}};\n")
    return "\n".join(usings), struct, alias


def forwarded_call(definition: str) -> tuple[str, str, str] | None:
    """What a function template that only forwards to another does: ``(callee as written,
    its template arguments as written, the declarations before the call)`` where the body is,
    apart from ``static_assert``\\ s and upper-case macro statements, one call
    ``callee<args>(...);`` (or ``return callee<args>(...);``). TensorRT-LLM's
    ``sm90_generic_mixed_moe_gemm_kernelLauncher`` and ``..._small_k_kernelLauncher`` call
    ``sm90_generic_mixed_moe_gemm_kernelLauncher_impl<..., KernelType>``, which declares the
    kernel. None for any other body."""
    found = _body(definition)
    if found is None:
        return None
    _, body = found
    clean = blank_comments(body)
    end = matching("{" + clean, 0, "{", "}")
    if end is None:
        return None
    inner = declarations_only(clean[:end - 1])
    asserts = []
    for m in reversed(list(re.finditer(r"\bstatic_assert\s*\(", inner))):
        close = matching(inner, m.end() - 1, "(", ")")
        semi = re.match(r"\s*;", inner[close + 1:]) if close is not None else None
        if semi is None:
            return None
        stop = close + 1 + semi.end()
        asserts.insert(0, inner[m.start():stop])
        inner = inner[:m.start()] + " " * (stop - m.start()) + inner[stop:]
    m = re.fullmatch(r"\s*(?:return\s+)?((?:::)?[A-Za-z_][\w:]*)\s*(<.*)", inner, re.S)
    if m is None:
        return None
    rest = m.group(2)
    gt = matching(rest, 0, "<", ">")
    if gt is None:
        return None
    call = re.match(r"\s*\(", rest[gt + 1:])
    if call is None:
        return None
    close = matching(rest, gt + 1 + call.end() - 1, "(", ")")
    if close is None or not re.fullmatch(r"\s*;\s*", rest[close + 1:]):
        return None
    return m.group(1), " ".join(rest[1:gt].split()), "\n".join(asserts)


# ---------------------------------------------------------------------------------------
# the same launcher with another stage count

#: What replaces the mainloop builder's stage-count argument (:func:`with_stage_count`).
STAGE_COUNT = "cutlass::gemm::collective::StageCount<{}>"
#: A mainloop (not an epilogue) CollectiveBuilder, as a launcher spells it.
_MAINLOOP_BUILDER_RE = re.compile(r"\bgemm\s*::\s*collective\s*::\s*CollectiveBuilder\s*<")
#: The index of the stage-count argument of a mainloop ``CollectiveBuilder``
#: (``collective_builder_decl.hpp``: ArchTag, OpClass, ElementA, GmemLayoutA, AlignmentA,
#: ElementB, GmemLayoutB, AlignmentB, ElementAccumulator, TileShape, ClusterShape,
#: StageCountType, KernelScheduleType[, Enable]).
STAGE_ARGUMENT = 11


def _arg_spans(clean: str, lt: int, gt: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level template argument between ``lt`` (its ``<``) and
    ``gt`` (its ``>``) of ``clean``, whitespace trimmed (:func:`arguments`)."""
    return [trimmed(clean, s, e) for s, e, _ in arguments(clean, lt + 1, gt)]


def mainloop_builder(body: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Where the mainloop ``CollectiveBuilder`` of ``body``'s last kernel alias is written:
    ``((start, end) of the builder from ``cutlass::`` (or ``gemm::``) to its closing ``>``,
    (start, end) of its stage-count argument)``, indices into ``body``; None when the alias's
    mainloop (``GemmUniversal``'s second argument) is neither a builder's ``CollectiveOp``
    nor a name declared, before the alias, as one.

    ``body`` is a launcher's text (a macro or function body); comments and literals are
    skipped (:func:`blank_comments`)."""
    clean = blank_comments(body)
    hits = list(KERNEL_ALIAS_RE.finditer(clean))
    if not hits:
        return None
    alias = hits[-1]
    lt = alias.end() - 1
    gt = matching(clean, lt, "<", ">")
    if gt is None:
        return None
    args = _arg_spans(clean, lt, gt)
    if len(args) < 2:
        return None
    s, e = args[1]
    where = (s, e)
    name = re.fullmatch(r"(?:typename\s+)?(\w+)", clean[s:e])
    if name is not None:  # a name: the last alias of it before the kernel alias
        decls = list(re.finditer(rf"\busing\s+{name.group(1)}\s*=", clean[:alias.start()]))
        if not decls:
            return None
        start = decls[-1].end()
        end = clean.find(";", start)
        where = (start, end if end >= 0 else alias.start())
    m = _MAINLOOP_BUILDER_RE.search(clean, *where)
    if m is None:
        return None
    blt = m.end() - 1
    bgt = matching(clean, blt, "<", ">")
    if bgt is None or bgt > where[1]:
        return None
    if not re.match(r"\s*::\s*CollectiveOp\b", clean[bgt + 1:]):
        return None
    bargs = _arg_spans(clean, blt, bgt)
    if len(bargs) <= STAGE_ARGUMENT + 1:  # through the kernel schedule
        return None
    first = m.start()
    q = re.search(r"(?:::\s*)?cutlass\s*::\s*$", clean[:first])
    return ((q.start() if q else first, bgt + 1), bargs[STAGE_ARGUMENT])


def with_stage_count(body: str, stages) -> str | None:
    """``body`` with only the stage-count argument of the mainloop builder of its last kernel
    alias (:func:`mainloop_builder`) replaced by ``cutlass::gemm::collective::StageCount<stages>``
    (``stages``: a number or a macro parameter's name); None when there is no such builder."""
    found = mainloop_builder(body)
    if found is None:
        return None
    _, (s, e) = found
    return body[:s] + STAGE_COUNT.format(stages) + body[e:]


def stage_count_macro(name: str, params: str, body: str, new_name: str,
                      stages_param: str = "CL_STAGES") -> str | None:
    """``#define new_name(stages_param, params) body`` with the mainloop builder's stage count
    replaced by ``StageCount<stages_param>`` (:func:`with_stage_count`), guarded by ``#ifndef
    new_name`` (a cut-down definition included before it wins); None when the body has no
    mainloop builder. ``name`` is the original macro (unused but in the comment line)."""
    fixed = with_stage_count(body, stages_param)
    if fixed is None:
        return None
    return (f"// {name} with the mainloop builder's stage count a parameter\n"
            f"#ifndef {new_name}\n#define {new_name}({stages_param}, {params}) {fixed}\n#endif\n")


def enclosing_namespaces(text: str, line: int) -> list[str] | None:
    """The namespaces open at the start of ``line`` (1-based) of ``text``, outermost first
    (``["tensorrt_llm", "kernels", "cutlass_kernels_oss"]``); None when a scope other than a
    named namespace (a class, a function, an anonymous namespace) is open there."""
    clean = blank_comments(text)
    lines = clean.split("\n")
    pos = sum(len(ln) + 1 for ln in lines[:max(0, line - 1)])
    out = []
    for head in _open_scopes(clean, pos):
        m = re.fullmatch(r"\s*(?:#[^\n]*\n\s*)*(?:inline\s+)?namespace\s+([\w:]+)\s*", head)
        if m is None:
            return None
        out += m.group(1).split("::")
    return out


def blank_calls(text: str, names) -> str:
    """``text`` with every invocation of the macros ``names`` (``NAME(...)`` and a ``;``
    after it) replaced by spaces, newlines kept."""
    clean = blank_comments(text)
    out = list(text)
    for m in re.finditer(r"\b(" + "|".join(re.escape(n) for n in names) + r")\s*\(", clean):
        close = matching(clean, m.end() - 1, "(", ")")
        if close is None:
            continue
        end = close + 1
        rest = re.match(r"\s*;", clean[end:])
        if rest:
            end += rest.end()
        for i in range(m.start(), end):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


# ---------------------------------------------------------------------------------------
# what a source instantiates, and what it only declares

#: a preprocessor directive with its continuation lines
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
#: what starts a namespace-scope statement that declares no function
_NOT_A_FUNCTION = re.compile(r"\s*(?:using|typedef|namespace|struct|class|union|enum|static_assert|"
                             r"friend|return|extern\s+\"C\"\s*$)\b")


def _blank(m: re.Match) -> str:
    return NOT_NEWLINE.sub(" ", m.group())


def declared_functions(text: str) -> list[tuple[str, int, bool]]:
    """``(name, line, defined)`` of each function (or function template) a source declares at
    namespace scope: ``defined`` when the declaration has a body, False for a declaration
    ending in ``;`` (what another file defines: flashinfer's dispatch sources declare
    ``CutlassGroupwiseScaledGEMMSM120<...>`` and call it). The name is unqualified, without
    template arguments; explicit instantiations (``template R f<...>(...);``,
    :func:`explicit_instantiations`), macro calls (no return type before the name), variables
    and class members are not declarations of this list. Comments and preprocessor lines are
    ignored."""
    clean = _DIRECTIVE.sub(_blank, blank_comments(text))
    out = []
    stack: list[bool] = []  # per open brace: whether it opens a namespace (or extern "C")
    start = 0
    for m in re.finditer(r"[{};]", clean):
        ch, i = m.group(), m.start()
        at_namespace = all(stack)
        if ch == "}":
            if stack:
                stack.pop()
            start = i + 1
            continue
        head = clean[start:i]
        start = i + 1
        if ch == "{":
            opens = bool(re.fullmatch(r"\s*(?:inline\s+)?namespace\b[\w:\s]*|\s*extern\s+\"C\"\s*", head))
            stack.append(opens)
            if opens:
                continue
        if not at_namespace:
            continue
        name = _function_name(head)
        if name is not None:
            pos = start - 1 - len(head) + (len(head) - len(head.lstrip()))
            out.append((name, clean.count("\n", 0, pos) + 1, ch == "{"))
    return out


def _function_name(head: str) -> str | None:
    """The name a namespace-scope statement ``head`` (up to its ``;`` or ``{``) declares as a
    function, or None when it declares none."""
    s = head.strip()
    if s.startswith("template"):
        m = re.match(r"template\s*<", s)
        if m is None:
            return None  # an explicit instantiation
        gt = matching(s, m.end() - 1, "<", ">")
        if gt is None:
            return None
        s = s[gt + 1:].strip()
    if not s or _NOT_A_FUNCTION.match(s):
        return None
    # the first parenthesis outside template arguments: the parameter list
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            return None  # a variable with an initializer
        elif ch == "(" and depth == 0:
            before = s[:i].rstrip()
            if before.endswith(">"):  # an explicit specialization's arguments
                lt = _matching_back(before, len(before) - 1)
                before = before[:lt].rstrip() if lt is not None else before
            m = re.search(r"(?:^|[\s*&:])([A-Za-z_]\w*)$", before)
            if m is None or not before[:m.start(1)].strip(" \t\n*&:"):
                return None  # no return type before the name: a macro call, a constructor
            if m.group(1) in ("operator", "if", "while", "for", "switch", "sizeof", "decltype"):
                return None
            return m.group(1)
    return None


def _matching_back(text: str, close: int) -> int | None:
    depth = 0
    for i in range(close, -1, -1):
        if text[i] == ">":
            depth += 1
        elif text[i] == "<":
            depth -= 1
            if depth == 0:
                return i
    return None


def macro_calls(text: str, names=None) -> list[tuple[str, int]]:
    """``(name, line)`` of each call of an upper-case macro (of ``names``, where given) at the
    start of a line of ``text`` (comments ignored): how TensorRT-LLM's and flashinfer's
    generated sources call their launcher macros (``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(...)``)."""
    clean = blank_comments(text)
    return [(m.group(1), clean.count("\n", 0, m.start(1)) + 1)
            for m in re.finditer(r"^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*\(", clean, re.M)
            if names is None or m.group(1) in names]


def kernel_aliases(text: str) -> list[tuple[str, int]]:
    """``(alias, line)`` of each kernel alias (:data:`KERNEL_ALIAS_RE`) a source writes itself,
    outside comments and preprocessor lines (a launcher macro's definition is not one)."""
    clean = _DIRECTIVE.sub(_blank, blank_comments(text))
    return [(m.group(1), clean.count("\n", 0, m.start()) + 1) for m in KERNEL_ALIAS_RE.finditer(clean)]


# ---------------------------------------------------------------------------------------
# kernels under branches: one re-hosted class per path to a kernel alias

def call_args(clean: str, paren: int) -> tuple[list[str], int] | None:
    """``([argument, ...], index of the closing paren)`` of the macro call whose ``(`` is at
    ``paren``: split at commas outside parentheses, as the preprocessor splits them (braces and
    angle brackets do not protect a comma; :func:`arguments`), each as written; None where the
    call is not closed."""
    args = list(arguments(clean, paren + 1, macro=True))
    close = args[-1][2]
    if close is None or clean[close] != ")":
        return None
    return [clean[s:e] for s, e, _ in args], close


def substituted(params: str, body: str, args: list[str]) -> str | None:
    """A function-like macro's ``body`` (comments blanked, no ``#`` or ``##``) with its
    ``params`` (as written between its parentheses) replaced token by token by the call's
    ``args`` (``__VA_ARGS__``, or a named variadic parameter, by the rest); None where the
    arguments do not fit the parameters."""
    names = [p.strip() for p in params.split(",")] if params.strip() else []
    mapping, variadic = {}, names[-1].endswith("...") if names else False
    fixed = names[:-1] if variadic else names
    if not names and len(args) == 1 and not args[0].strip():
        args = []  # NAME() of a macro without parameters
    if len(args) < len(fixed) or (not variadic and len(args) != len(fixed)):
        return None
    for p, a in zip(fixed, args):
        mapping[p] = a.strip()
    if variadic:
        mapping[names[-1][:-3].strip() or "__VA_ARGS__"] = ",".join(args[len(fixed):]).strip()
    return re.sub(r"\b\w+\b", lambda t: mapping.get(t.group(0), t.group(0)), body)


def expand_macro_calls(body: str, defining: str, depth: int = 4) -> str | None:
    """``body`` (comments blanked) with each upper-case function-like macro call whose
    arguments hold a kernel alias (:data:`KERNEL_ALIAS_RE`, else :data:`GEMM_KERNEL_ALIAS_RE`)
    replaced by the macro's expansion, its definition read from ``defining`` (the text of the
    file the function is defined in): flashinfer's ``group_gemm_sm90.cuh`` declares its kernel
    inside ``DISPATCH_WEIGHT_LAYOUT(is_column_major, WEIGHT_LAYOUT, { ... })``, which expands to
    a runtime ``if`` declaring ``WEIGHT_LAYOUT`` in each branch. Parameters and ``__VA_ARGS__``
    (or a named variadic parameter) are substituted token by token, calls in the expansion
    expanded again (up to ``depth`` levels). None where such a call cannot be expanded: its
    definition is not in ``defining``, uses ``#`` or ``##``, or takes other arguments."""
    clean = blank_comments(body)
    out, last = [], 0
    for m in re.finditer(r"(?<![\w:.>])([A-Z][A-Z0-9_]*)\s*\(", clean):
        if m.start() < last:
            continue
        found = call_args(clean, m.end() - 1)
        if found is None:
            return None
        args, close = found
        inside = clean[m.end():close]
        if not (KERNEL_ALIAS_RE.search(inside) or GEMM_KERNEL_ALIAS_RE.search(inside)):
            continue
        if depth == 0:
            return None
        definition = macro_definition(defining, m.group(1))
        if definition is None:
            return None
        params, mbody, _ = definition
        mbody = blank_comments(mbody)
        if "#" in mbody:
            return None
        expansion = substituted(params, mbody, args)
        if expansion is None:
            return None
        expansion = expand_macro_calls(expansion, defining, depth - 1)
        if expansion is None:
            return None
        out += [body[last:m.start()], expansion]
        last = close + 1
    out.append(body[last:])
    return "".join(out)


#: a statement kept as a class member on a path (:func:`kernel_paths`): declarations only
_MEMBER_STMT = re.compile(r"\s*(?:using\b|typedef\b|static_assert\b|(?:static\s+)?constexpr\b|enum\b|"
                          r"struct\b|class\b|union\b)")
#: a block header whose block is a local type (kept whole where it is not on the path)
_TYPE_HEAD = re.compile(r"\s*(?:template\s*<.*>\s*)?(?:struct|class|union|enum)\b", re.S)
_IF_HEAD = re.compile(r"\s*(else\s+)?if\s*(constexpr\s*)?\((.*)\)\s*$", re.S)
_ELSE_HEAD = re.compile(r"\s*else\s*$")


def _next_stop(clean: str, i: int) -> tuple[int, str] | None:
    """The next ``;``, ``{`` or ``}`` of ``clean`` from ``i`` outside parentheses and brackets."""
    depth = 0
    for j in range(i, len(clean)):
        ch = clean[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in ";{}":
            return j, ch
    return None


def _negated(cond: str) -> str:
    cond = " ".join(cond.split())
    return f"!{cond}" if re.fullmatch(r"[\w:.]+", cond) else f"!({cond})"


def _path_to(clean: str, start: int, target: int, pieces: list, labels: list) -> bool:
    """Fill ``pieces`` (``("decl", text)`` and ``("cond", C)``, in order) and ``labels`` (the
    runtime conditions) along the path from ``start`` to the statement at ``target``; False
    where a block on the path is one this reader does not follow (a loop, ``switch``, lambda)."""
    i = start
    chain: tuple[str, list[str]] | None = None  # ("constexpr" | "runtime", conditions so far)
    while True:
        stop = _next_stop(clean, i)
        if stop is None:
            return False
        j, ch = stop
        if ch == "}":
            return False
        if ch == ";":
            stmt = clean[i:j + 1]
            if i <= target < j:
                pieces.append(("decl", stmt))
                return True
            if _MEMBER_STMT.match(stmt):
                pieces.append(("decl", stmt))
            chain = None
            i = j + 1
            continue
        close = matching(clean, j, "{", "}")
        if close is None:
            return False
        head = clean[i:j]
        m_if, m_else = _IF_HEAD.match(head), _ELSE_HEAD.match(head)
        conds: list[tuple[str, str]] = []
        if m_if:
            kind = "constexpr" if m_if.group(2) else "runtime"
            cond = " ".join(m_if.group(3).split())
            before = chain[1] if (m_if.group(1) and chain and chain[0] == kind) else []
            if m_if.group(1) and not (chain and chain[0] == kind) and j < target < close:
                return False  # an else-if whose if this reader did not see
            conds = [(kind, _negated(c)) for c in before] + [(kind, cond)]
            chain = (kind, before + [cond])
        elif m_else:
            if chain is None and j < target < close:
                return False
            conds = [(chain[0], _negated(c)) for c in chain[1]] if chain else []
            chain = None
        elif head.strip():
            if not (j < target < close) and _TYPE_HEAD.match(head):
                end = _next_stop(clean, close + 1)
                stop_at = end[0] + 1 if end and end[1] == ";" else close + 1
                pieces.append(("decl", clean[i:stop_at]))
                i = stop_at
                chain = None
                continue
            if j < target < close:
                return False  # a loop, switch, lambda or initializer around the kernel
            chain = None
        if j < target < close:
            for kind, c in conds:
                (pieces.append(("cond", c)) if kind == "constexpr" else labels.append(c))
            return _path_to(clean, j + 1, target, pieces, labels)
        i = close + 1


def kernel_paths(body: str) -> list[tuple[list[tuple[str, str]], list[str], str]] | None:
    """Each path through a function body (comments blanked, after its ``{``) to a kernel alias
    (:data:`KERNEL_ALIAS_RE`, else :data:`GEMM_KERNEL_ALIAS_RE`), as ``(pieces, labels,
    alias)``: ``pieces`` the declarations on the way (those of enclosing blocks before the
    block the path enters; statements, blocks off the path and the kernel's siblings after it
    left out) and the ``if constexpr`` conditions the path needs (``("cond", C)``, ``!(C)`` for
    an ``else``), in order; ``labels`` the runtime ``if`` conditions it takes (what tells two
    kernels of one function apart). None where a kernel alias lies in a block this reader
    does not follow; ``[]`` where the body has no kernel alias."""
    pattern = KERNEL_ALIAS_RE if KERNEL_ALIAS_RE.search(body) else GEMM_KERNEL_ALIAS_RE
    out = []
    for m in pattern.finditer(body):
        pieces: list = []
        labels: list = []
        if not _path_to(body, 0, m.start(), pieces, labels):
            return None
        out.append((pieces, labels, m.group(1)))
    return out


_NOT_NAMES = {"typename", "class", "int", "bool", "unsigned", "long", "short", "char", "auto", "size_t"}


def parameter_names(params: str) -> list[str] | None:
    """The names of a template parameter list as template arguments (``Ts...`` for a pack);
    None where a parameter has no name."""
    clean = blank_comments(params)
    if not clean.strip():
        return []
    out = []
    for s, e in _arg_spans("<" + clean + ">", 0, len(clean) + 1):
        p = clean[s - 1:e - 1]
        eq = _top_level_equals(p)
        p = p[:eq] if eq is not None else p
        words = re.findall(r"\w+", p)
        if not words or words[-1] in _NOT_NAMES:
            return None
        out.append(words[-1] + ("..." if "..." in p else ""))
    return out


def _defaults_dropped(params: str) -> str:
    clean = blank_comments(params)
    parts = []
    for s, e in _arg_spans("<" + clean + ">", 0, len(clean) + 1):
        p = params[s - 1:e - 1]
        eq = _top_level_equals(blank_comments(p))
        parts.append(p[:eq].rstrip() if eq is not None else p)
    return ", ".join(parts)


def _members(decls: list[str]) -> tuple[list[str], str]:
    """(``using namespace`` directives, the declarations as class members: local constants
    static)."""
    kept = " ".join(decls)
    usings = re.findall(r"\busing\s+namespace\s+[\w:]+\s*;", kept)
    kept = re.sub(r"\busing\s+namespace\s+[\w:]+\s*;", " ", kept)
    kept = re.sub(r"(^|[;{}]\s*)(?:static\s+)?constexpr(\s+static)?\b", r"\1static constexpr", kept)
    return usings, kept


def rehost_paths(definition: str, index: int, defining: str, *, name: str | None = None,
                 declared: str | None = None, none_type: str = "void") -> list[tuple[str, str, str, str]] | None:
    """The kernels of a function template whose body :func:`rehost_template` cannot re-host
    (statements before the kernel alias, or several kernel aliases under branches):
    ``[(using-directives, class templates text, kernel alias name, runtime label), ...]``, one
    per :func:`kernel_paths` path, after :func:`expand_macro_calls` (``defining``: the text of
    the template's file). Path ``j`` is class template ``{name}_p{j}`` (``name``:
    ``cl_rehost_<index>``) of the template's parameters, whose member ``alias`` is the path's
    kernel. A path under ``if constexpr`` conditions checks each with the declarations before
    it (class ``..._w<i>``, member ``cl_when``) and declares the kernel's chain only where all
    hold; elsewhere ``alias`` is ``none_type`` (the function builds no kernel there, and so none
    is laid out). The label joins the path's runtime ``if`` conditions (``weight_column_major``,
    ``!weight_column_major``). None where the body cannot be followed this way."""
    found = _body(definition)
    if found is None:
        return None
    params, body = found
    if declared is not None:
        params = with_defaults(params, declared)
    body = expand_macro_calls(blank_comments(body), defining)
    if body is None:
        return None
    paths = kernel_paths(body)
    names = parameter_names(params)
    if not paths or names is None:
        return None
    plain = _defaults_dropped(params)
    args = ", ".join(names)
    base = name or f"cl_rehost_{index}"
    out = []
    for j, (pieces, labels, alias) in enumerate(paths):
        me = f"{base}_p{j}"
        decls, conds, text = [], [], ""
        usings: list[str] = []
        for kind, piece in pieces:
            if kind == "decl":
                decls.append(piece)
            else:
                u, kept = _members(decls)
                usings += u
                text += (f"template <{plain}>\nstruct {me}_w{len(conds)} {{\n{kept}\n"
                         f"static constexpr bool cl_when = ({piece});\n}};\n")
                conds.append(piece)
        u, kept = _members(decls)
        usings += u
        if not conds:
            text += f"template <{params}>\nstruct {me} {{\n{kept}\n}};\n"
        else:
            for i in range(len(conds)):
                stage = f"{me}_s{i}"
                text += (f"template <bool, {plain}>\nstruct {stage} {{ using {alias} = {none_type}; }};\n")
            for i in reversed(range(len(conds))):
                stage = f"{me}_s{i}"
                inner = (f"\n{kept}\n" if i == len(conds) - 1 else
                         f" using {alias} = typename {me}_s{i + 1}<{me}_w{i + 1}<{args}>::cl_when, {args}>::{alias}; ")
                text += f"template <{plain}>\nstruct {stage}<true, {args}> {{{inner}}};\n"
            text += (f"template <{params}>\nstruct {me} {{ using {alias} = typename "
                     f"{me}_s0<{me}_w0<{args}>::cl_when, {args}>::{alias}; }};\n")
        label = " && ".join(" ".join(c.split()) for c in labels)
        out.append(("\n".join(dict.fromkeys(usings)), text, alias, label))
    return out
