"""Preprocessor conditionals read from text: which ``#if`` branches a set of defines keeps.

The one place this package evaluates ``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/
``#endif`` over text (TensorRT-LLM's MoE dispatch and traits headers, read for what a runner
instantiates, are tested against it). It follows the C preprocessor (C11 6.10.1, C++
[cpp.cond]):

* :func:`directives` finds each directive, its continuation lines spliced;
* :func:`evaluate` computes a controlling expression: integer literals, ``defined(X)`` and
  ``defined X``, unary ``! ~ - +``, the binary operators by their C precedence, ``?:``,
  parentheses, the alternative tokens ``and or not bitand bitor xor compl not_eq``, C++'s
  ``true``/``false``; an identifier that is not a macro counts as 0;
* :func:`active_text` keeps the lines of the branches taken: in a group, the first branch
  whose condition holds (``#elif`` only when no earlier branch of its group was taken,
  ``#else`` when none was), inside an active enclosing group.

:func:`evaluate` with ``strict=True`` is also what reads a C++ condition already reduced to
literals (``std::is_same`` tests replaced by ``true``/``false``): there, an identifier left
means the condition cannot be told here, and the answer is None.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

__all__ = ["Directive", "active_text", "command_line_defines", "directives", "evaluate"]

#: a directive's name and the rest of its (first) line
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)(.*)$")
#: the directives that open, continue and close a conditional group
_OPENS = {"if", "ifdef", "ifndef"}
_BRANCHES = {"elif", "elifdef", "elifndef", "else"}
_CONDITIONALS = _OPENS | _BRANCHES | {"endif"}


@dataclass(frozen=True)
class Directive:
    """One preprocessor directive of a text: ``start``/``end`` its offsets (from its ``#`` line's
    start to the end of its last continuation line, the newline after it excluded), ``kind``
    its name (``if``, ``ifdef``, ``define``...) and ``rest`` what follows the name, its
    continuation lines joined by spaces (backslashes dropped), ``line`` its first line (1-based)
    and ``lines`` how many lines it spans."""

    start: int
    end: int
    kind: str
    rest: str
    line: int
    lines: int


def directives(text: str, clean: str | None = None) -> list[Directive]:
    """Each preprocessor directive of ``text``, in order. ``clean`` is the same text with
    comments blanked (same length, :func:`cutlass_layout.cpp.brackets.blank_comments`), where given:
    the lines are spliced as ``text`` writes them (a backslash at the end of a line inside a
    comment splices it too, as the preprocessor's phase 2 comes before comments are removed),
    and the kind and the rest are read from ``clean``."""
    clean = text if clean is None else clean
    out, pos = [], 0
    raw, lines = text.split("\n"), clean.split("\n")
    i = 0
    while i < len(raw):
        start = pos
        j = i
        while raw[j].rstrip(" \t\r").endswith("\\") and j + 1 < len(raw):
            j += 1
        end = start + sum(len(x) + 1 for x in raw[i : j + 1]) - 1
        m = _DIRECTIVE.match(lines[i])
        if m:
            rest = " ".join(x.rstrip(" \t\r").rstrip("\\") for x in [m.group(2)] + lines[i + 1 : j + 1])
            out.append(Directive(start, end, m.group(1), rest, i + 1, j - i + 1))
        pos = end + 1
        i = j + 1
    return out


# ---------------------------------------------------------------------------------------
# controlling expressions

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|[0-9]+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)?(?![\w.])|"
    r"(?P<name>[A-Za-z_]\w*)|"
    r"(?P<op>&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>!~&|^?:(),]))"
)
#: C++'s alternative tokens, as the operators they spell
_ALTERNATIVES = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
    "not_eq": "!=",
}
#: binary operators by precedence, loosest first (``?:`` below them, unary above)
_BINARY = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)


class _Unreadable(Exception):
    """The expression is not one :func:`evaluate` reads (or, strict, names an identifier)."""


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            if expr[pos:].strip():
                raise _Unreadable(expr[pos:])
            break
        pos = m.end()
        if m.group("num") is not None:
            out.append(("num", m.group("num")))
        elif m.group("name") is not None:
            name = m.group("name")
            out.append(("op", _ALTERNATIVES[name]) if name in _ALTERNATIVES else ("name", name))
        else:
            out.append(("op", m.group("op")))
    return out


def _integer(spelled: str) -> int:
    if spelled[:2] in ("0x", "0X"):
        return int(spelled, 16)
    if spelled != "0" and spelled.startswith("0"):
        return int(spelled, 8)
    return int(spelled)


class _Parser:
    """A recursive-descent reading of one controlling expression. Comparisons, ``!``, ``&&``
    and ``||`` give Python bools (C's 0 and 1), literals and arithmetic ints, so that a caller
    can tell a number from a truth value (:func:`evaluate`)."""

    def __init__(self, tokens, defined: Mapping[str, int], strict: bool):
        self.tokens, self.pos = tokens, 0
        self.defined, self.strict = defined, strict

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, op: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (op is not None and tok != ("op", op)):
            raise _Unreadable(op or "end")
        self.pos += 1
        return tok

    def conditional(self):
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take("?")
            yes = self.conditional()
            self.take(":")
            no = self.conditional()
            return yes if cond else no
        return cond

    def binary(self, level: int):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while (tok := self.peek()) is not None and tok[0] == "op" and tok[1] in _BINARY[level]:
            op = self.take()[1]
            if op == "&&":  # both sides are read; C would not evaluate the right one, but it parses it
                right = self.binary(level + 1)
                left = bool(left) and bool(right)
            elif op == "||":
                right = self.binary(level + 1)
                left = bool(left) or bool(right)
            else:
                left = _apply(op, left, self.binary(level + 1))
        return left

    def unary(self):
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] in ("!", "~", "-", "+"):
            op = self.take()[1]
            v = self.unary()
            return {"!": lambda: not v, "~": lambda: ~int(v), "-": lambda: -int(v), "+": lambda: int(v)}[op]()
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            return _integer(text)
        if kind == "op" and text == "(":
            v = self.conditional()
            self.take(")")
            return v
        if kind != "name":
            raise _Unreadable(text)
        if text == "defined":
            paren = self.peek() == ("op", "(")
            if paren:
                self.take("(")
            kind, name = self.take()
            if kind != "name":
                raise _Unreadable(name)
            if paren:
                self.take(")")
            return name in self.defined
        if text in ("true", "false"):
            return text == "true"
        if text in self.defined:
            return self.defined[text]
        if self.strict or self.peek() == ("op", "("):
            raise _Unreadable(text)  # strict: not known here; a call: not a macro we know
        return 0


def _apply(op: str, a, b):
    a, b = int(a), int(b)
    if op in ("/", "%"):
        if b == 0:
            raise _Unreadable("division by zero")
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
        return q if op == "/" else a - b * q
    return {
        "*": lambda: a * b,
        "+": lambda: a + b,
        "-": lambda: a - b,
        "<<": lambda: a << b,
        ">>": lambda: a >> b,
        "<": lambda: a < b,
        ">": lambda: a > b,
        "<=": lambda: a <= b,
        ">=": lambda: a >= b,
        "==": lambda: a == b,
        "!=": lambda: a != b,
        "&": lambda: a & b,
        "^": lambda: a ^ b,
        "|": lambda: a | b,
    }[op]()


def _as_values(defined: Collection[str] | Mapping[str, object]) -> dict[str, int]:
    """Macro name -> its value: 1 for a name given alone (as ``-DNAME`` defines it), a mapping's
    value where it is an integer literal (``-DNAME=2``), else 0."""
    if not isinstance(defined, Mapping):
        return {name: 1 for name in defined}
    out = {}
    for name, value in defined.items():
        if isinstance(value, (bool, int)):
            out[name] = int(value)
            continue
        try:
            out[name] = _integer(str(value).strip().rstrip("uUlL"))
        except ValueError:
            out[name] = 0
    return out


def evaluate(
    expr: str, defined: Collection[str] | Mapping[str, object] = (), *, strict: bool = False
) -> int | bool | None:
    """The value of the controlling expression ``expr`` (an ``#if``'s, comments blanked) where
    the macros ``defined`` are defined (names, each as ``1``, or name -> value); None where it
    cannot be read (a syntax this reader does not follow, a function-like macro call, a
    division by zero). An identifier that is not defined counts as 0, as in the preprocessor;
    with ``strict`` it makes the answer None instead (for a C++ condition reduced to literals,
    where a name left is one this reader does not know). The value is a bool where the outermost
    operation is a comparison, ``!``, ``&&``, ``||`` or ``true``/``false``, else an int."""
    try:
        parser = _Parser(_tokens(expr), _as_values(defined), strict)
        if not parser.tokens:
            return None
        v = parser.conditional()
        if parser.pos != len(parser.tokens):
            return None
        return v
    except (_Unreadable, ValueError, OverflowError):
        return None


def _holds(d: Directive, values: dict[str, int]) -> bool:
    """Whether the condition of a conditional directive holds (one that cannot be read counts
    as holding: its branch is kept, as this package always did with an ``#if`` it cannot tell)."""
    if d.kind in ("ifdef", "ifndef", "elifdef", "elifndef"):
        m = re.match(r"\s*(\w+)", d.rest)
        on = m is not None and m.group(1) in values
        return on if d.kind in ("ifdef", "elifdef") else not on
    v = evaluate(d.rest, values)
    return True if v is None else bool(v)


def active_text(text: str, defined: Collection[str] | Mapping[str, object]) -> str:
    """``text`` (comments blanked) with each line the preprocessor would not keep for the macros
    ``defined`` (:func:`evaluate`) emptied: the lines of branches not taken, and every line of
    every conditional directive (``#if``...``#endif``, continuation lines included). Other
    directives (``#define``, ``#include``) are left as written. Lines are kept (line numbers do
    not move), their lengths are not. An ``#elif``/``#else``/``#endif`` with no open group is
    emptied and otherwise ignored."""
    values = _as_values(defined)
    lines = text.split("\n")
    stack: list[tuple[bool, bool]] = []  # each open group: (its enclosing text kept, a branch taken)
    line = 0  # 0-based index of the next line not yet decided
    keep = True
    for d in directives(text):
        if d.kind not in _CONDITIONALS:
            continue  # another directive: kept or emptied with the lines around it
        first = d.line - 1
        if not keep:
            for i in range(line, first):
                lines[i] = ""
        if d.kind in _OPENS:
            on = keep and _holds(d, values)
            stack.append((keep, on))
            keep = on
        elif d.kind in _BRANCHES and stack:
            outer, taken = stack[-1]
            on = outer and not taken and (d.kind == "else" or _holds(d, values))
            stack[-1] = (outer, taken or on)
            keep = on
        elif d.kind == "endif" and stack:
            keep = stack.pop()[0]
        for i in range(first, first + d.lines):
            lines[i] = ""
        line = first + d.lines
    if not keep:
        for i in range(line, len(lines)):
            lines[i] = ""
    return "\n".join(lines)


def command_line_defines(flags) -> set[str]:
    """The macro names a clang/nvcc command line defines (``-DNAME``, ``-DNAME=V``, ``-D NAME``)."""
    out, flags = set(), list(flags)
    for i, f in enumerate(flags):
        if f == "-D" and i + 1 < len(flags):
            out.add(flags[i + 1].split("=", 1)[0])
        elif f.startswith("-D") and len(f) > 2:
            out.add(f[2:].split("=", 1)[0])
    return out
