"""C++ text with its comments and literals blanked (:func:`blank_comments`), and its brackets,
statements and scopes read from it: the bracket closing one (:func:`matching`), the end of a
statement (:func:`statement_end`), the scopes open at a point (:func:`open_scopes`) and what
closes them (:func:`closers`). The ground the other text readers of this folder stand on.
"""

from __future__ import annotations

import re
from functools import lru_cache


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
            out += [text[last : m.start()], NOT_NEWLINE.sub(" ", m.group())]
        elif strings:
            body = m.group(2)
            out += [text[last : m.start()], quote, NOT_NEWLINE.sub(" ", body), m.group()[1 + len(body) :]]
        else:
            out.append(text[last : m.end()])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


#: a comment, or a string or char literal (its quote, its body, its closing quote if any)
_SKIPPED = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|(["'])((?:\\.|\\\Z|(?!\1)[^\\\n])*)\1?""", re.S)
NOT_NEWLINE = re.compile(r"[^\n]")


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


def closers(kept: str) -> str:
    """What closes the scopes ``kept`` leaves open, innermost first: ``};`` for a class or an
    initializer, ``}`` for a block or function, ``#endif`` for an open ``#if``."""
    clean = blank_comments(kept)
    stack = [
        "};" if re.search(r"\b(struct|class|union|enum)\b[^()]*$", head) or "=" in head else "}"
        for head in open_scopes(clean, len(clean))
    ]
    ifs = 0
    for line in clean.split("\n"):
        s = line.strip()
        if re.match(r"#\s*if", s):
            ifs += 1
        elif re.match(r"#\s*endif", s):
            ifs -= 1
    return " ".join(reversed(stack)) + "".join("\n#endif" for _ in range(max(ifs, 0)))


def open_scopes(clean: str, pos: int) -> list[str]:
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
_BRACKETS = {
    "<": re.compile(r"[()<>]"),
    "(": re.compile(r"[()]"),
    "{": re.compile(r"[(){}]"),
    "[": re.compile(r"[()\[\]]"),
}
