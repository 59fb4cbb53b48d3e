"""What a source declares and instantiates, read from its text: functions declared or defined
at namespace scope (:func:`declared_functions`), explicit instantiations of function
templates (:func:`explicit_instantiations`), the kernel aliases it writes itself
(:func:`kernel_aliases`) and the namespaces open at a line (:func:`enclosing_namespaces`).
"""

from __future__ import annotations

import re

from .brackets import NOT_NEWLINE, blank_comments, matching, open_scopes
from .text import KERNEL_ALIAS_RE


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
        after = clean[gt + 1 : gt + 200].lstrip()
        if not after.startswith("("):
            continue
        args = " ".join(text[lt + 1 : gt].split())
        out.append((m.group(1), args, clean.count("\n", 0, m.start()) + 1))
    return out


def enclosing_namespaces(text: str, line: int) -> list[str] | None:
    """The namespaces open at the start of ``line`` (1-based) of ``text``, outermost first
    (``["tensorrt_llm", "kernels", "cutlass_kernels_oss"]``); None when a scope other than a
    named namespace (a class, a function, an anonymous namespace) is open there."""
    clean = blank_comments(text)
    lines = clean.split("\n")
    pos = sum(len(ln) + 1 for ln in lines[: max(0, line - 1)])
    out: list[str] = []
    for head in open_scopes(clean, pos):
        m = re.fullmatch(r"\s*(?:#[^\n]*\n\s*)*(?:inline\s+)?namespace\s+([\w:]+)\s*", head)
        if m is None:
            return None
        out += m.group(1).split("::")
    return out


#: a preprocessor directive with its continuation lines
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
#: what starts a namespace-scope statement that declares no function
_NOT_A_FUNCTION = re.compile(
    r"\s*(?:using|typedef|namespace|struct|class|union|enum|static_assert|"
    r"friend|return|extern\s+\"C\"\s*$)\b"
)


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
        s = s[gt + 1 :].strip()
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
            if m is None or not before[: m.start(1)].strip(" \t\n*&:"):
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


def kernel_aliases(text: str) -> list[tuple[str, int]]:
    """``(alias, line)`` of each kernel alias (:data:`KERNEL_ALIAS_RE`) a source writes itself,
    outside comments and preprocessor lines (a launcher macro's definition is not one)."""
    clean = _DIRECTIVE.sub(_blank, blank_comments(text))
    return [(m.group(1), clean.count("\n", 0, m.start()) + 1) for m in KERNEL_ALIAS_RE.finditer(clean)]
