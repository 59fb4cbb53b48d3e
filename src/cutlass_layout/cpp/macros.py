"""Function-like macros read from C++ text: a ``#define``'s parameters and body
(:func:`macro_definition`), the upper-case macro calls a source makes (:func:`macro_calls`),
calls blanked (:func:`blank_calls`), and calls expanded, their arguments substituted token by
token as the preprocessor does (:func:`substituted`, :func:`expand_macro_calls`: flashinfer's
``DISPATCH_*`` macros around a kernel alias).
"""

from __future__ import annotations

import re

from .arguments import call_args
from .brackets import blank_comments, matching
from .text import GEMM_KERNEL_ALIAS_RE, KERNEL_ALIAS_RE


def macro_definition(text: str, name: str, near_line: int | None = None) -> tuple[str, str, int] | None:
    """``(parameters, body, line)`` of the ``#define name(...)`` in ``text``: the one that
    starts at or before ``near_line`` (the active one, where a file defines it twice under
    ``#if``), else the first. Continuation lines are joined."""
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if re.match(rf"\s*#\s*define\s+{re.escape(name)}\s*\(", ln)]
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
    return m.group(1), full[m.end() :], starts[0] + 1


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


def macro_calls(text: str, names=None) -> list[tuple[str, int]]:
    """``(name, line)`` of each call of an upper-case macro (of ``names``, where given) at the
    start of a line of ``text`` (comments ignored): how TensorRT-LLM's and flashinfer's
    generated sources call their launcher macros (``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(...)``)."""
    clean = blank_comments(text)
    return [
        (m.group(1), clean.count("\n", 0, m.start(1)) + 1)
        for m in re.finditer(r"^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*\(", clean, re.M)
        if names is None or m.group(1) in names
    ]


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
        mapping[names[-1][:-3].strip() or "__VA_ARGS__"] = ",".join(args[len(fixed) :]).strip()
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
        inside = clean[m.end() : close]
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
        out += [body[last : m.start()], expansion]
        last = close + 1
    out.append(body[last:])
    return "".join(out)
