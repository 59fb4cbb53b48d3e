"""Argument lists read from C++ text: a template's or a call's top-level arguments
(:func:`arguments`, :func:`template_args`), a macro call's as the preprocessor splits them
(:func:`call_args`), and a template's parameter list (:func:`template_parameters`, its
defaults from another declaration, :func:`with_defaults`, its names as arguments,
:func:`parameter_names`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .brackets import blank_comments, matching


#: the characters :func:`arguments` reads: of a template's (or a call's) argument list, of a
#: macro call's
_ARGUMENT_PUNCT = re.compile(r"[()\[\]{}<>,]")
_MACRO_PUNCT = re.compile(r"[(),]")


def arguments(
    text: str, start: int = 0, end: int | None = None, *, macro: bool = False
) -> Iterator[tuple[int, int, int | None]]:
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
    return definition[m.end() : gt], gt + 1


def with_defaults(params: str, declared: str) -> str:
    """A template parameter list ``params`` (a definition's) with the default arguments that
    another declaration of the same template (``declared``, its parameter list) gives and
    ``params`` lacks: TensorRT-LLM declares ``ScaleMode = MixedInputScaleMode::kPostMma`` in
    ``moe_gemm_tma_ws_mixed_input_launcher.h`` and defines the template in the ``.inl``
    without it, and sources instantiate it with one argument fewer. A list of another length
    is returned unchanged."""

    def split(text: str) -> list[str]:
        clean = blank_comments(text)
        return (
            [text[s - 1 : e - 1] for s, e in arg_spans("<" + clean + ">", 0, len(clean) + 1)] if clean.strip() else []
        )

    mine, theirs = split(params), split(declared)
    if len(mine) != len(theirs):
        return params
    out = []
    for p, d in zip(mine, theirs):
        clean_d = blank_comments(d)
        eq = _top_level_equals(clean_d)
        if _top_level_equals(blank_comments(p)) is None and eq is not None:
            p = p + " = " + d[eq + 1 :].strip()
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
        elif ch == "=" and depth == 0 and clean[i + 1 : i + 2] != "=" and clean[i - 1 : i] not in "=!<>":
            return i
    return None


def arg_spans(clean: str, lt: int, gt: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level template argument between ``lt`` (its ``<``) and
    ``gt`` (its ``>``) of ``clean``, whitespace trimmed (:func:`arguments`)."""
    return [trimmed(clean, s, e) for s, e, _ in arguments(clean, lt + 1, gt)]


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


_NOT_NAMES = {"typename", "class", "int", "bool", "unsigned", "long", "short", "char", "auto", "size_t"}


def parameter_names(params: str) -> list[str] | None:
    """The names of a template parameter list as template arguments (``Ts...`` for a pack);
    None where a parameter has no name."""
    clean = blank_comments(params)
    if not clean.strip():
        return []
    out = []
    for s, e in arg_spans("<" + clean + ">", 0, len(clean) + 1):
        p = clean[s - 1 : e - 1]
        eq = _top_level_equals(p)
        p = p[:eq] if eq is not None else p
        words = re.findall(r"\w+", p)
        if not words or words[-1] in _NOT_NAMES:
            return None
        out.append(words[-1] + ("..." if "..." in p else ""))
    return out


def defaults_dropped(params: str) -> str:
    clean = blank_comments(params)
    parts = []
    for s, e in arg_spans("<" + clean + ">", 0, len(clean) + 1):
        p = params[s - 1 : e - 1]
        eq = _top_level_equals(blank_comments(p))
        parts.append(p[:eq].rstrip() if eq is not None else p)
    return ", ".join(parts)
