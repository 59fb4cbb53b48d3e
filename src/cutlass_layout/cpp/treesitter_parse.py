"""tree-sitter parsing of one header, steps 1 to 3 of :mod:`.treesitter`'s scan: macros blanked,
the text parsed, its braces counted for a repair.

:func:`blank_macros` replaces the CUDA/CUTLASS decorator macros that confuse a C++ parser
(``CUTLASS_HOST_DEVICE``, ``CUTE_UNROLL``, ``__launch_bounds__(...)``, ...; defined in
``cutlass/detail/helper_macros.hpp`` and ``cute/config.hpp``) by spaces of the same length;
:func:`parse` is tree-sitter-cpp (the parser set up once per process, no preprocessing);
:func:`brace_balance` counts braces outside comments, literals, directives and
``#else``/``#elif`` branches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tree_sitter
import tree_sitter_cpp


# --------------------------------------------------------------------------------------------
# 1. macro blanking

#: Object-like macros (and CUDA keywords) blanked to spaces. They decorate functions and
#: loops (cutlass/detail/helper_macros.hpp, cute/config.hpp) and carry no layout.
BLANKED_MACROS = (
    "CUTLASS_HOST_DEVICE",
    "CUTLASS_DEVICE",
    "CUTLASS_HOST",
    "CUTLASS_GLOBAL",
    "CUTE_HOST_DEVICE",
    "CUTE_DEVICE",
    "CUTE_HOST",
    "CUTE_HOST_RTC",
    "CUTLASS_PRAGMA_UNROLL",
    "CUTLASS_PRAGMA_NO_UNROLL",
    "CUTE_UNROLL",
    "CUTE_NO_UNROLL",
    "CUTLASS_GEMM_LOOP",
    "CUTE_INLINE_CONSTANT",
    "CUTLASS_CONSTEXPR_IF_CXX17",
    "CUTE_GRID_CONSTANT",
    "CUTLASS_LAMBDA_FUNC_INLINE",
    "CUTLASS_THREAD_LOCAL",
    "CUTE_GCC_UNREACHABLE",
    "CUTLASS_GCC_UNREACHABLE",
    "__host__",
    "__device__",
    "__global__",
    "__forceinline__",
    "__noinline__",
    "__grid_constant__",
    "__restrict__",
)
#: Function-like macros blanked with their argument list.
BLANKED_CALLS = ("__launch_bounds__", "__cluster_dims__")
#: Function-like alignment macros rewritten to ``alignas(...)`` (right-aligned in place).
ALIGN_MACROS = ("CUTE_ALIGNAS", "__align__")

PARENS = rb"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"  # up to three levels of nesting
_ARGS_RE = re.compile(rb"\s*" + PARENS)
_CANDIDATE_RE = re.compile(rb"(?:CUTLASS_|CUTE_|__)\w+")  # cheap: charset-prefixed scan
_OBJ = frozenset(m.encode() for m in BLANKED_MACROS)
_CALL = frozenset(m.encode() for m in BLANKED_CALLS)
_ALIGN = frozenset(m.encode() for m in ALIGN_MACROS)
_DIRECTIVE_NAME_RE = re.compile(rb"[ \t]*#[ \t]*(?:define|undef|ifdef|ifndef)[ \t]+$")
_DEFINED_RE = re.compile(rb"defined[ \t]*\(?[ \t]*$")


def blank_macros(src: bytes) -> bytes:
    """Return ``src`` with confusing macros replaced by spaces of equal length.

    Newlines inside a blanked argument list are kept, so lines and columns never move.
    ``CUTE_ALIGNAS(n)``/``__align__(n)`` become ``     alignas(n)``. Names right after
    ``#define``/``#undef``/``#ifdef``/``#ifndef``/``defined`` are left alone.
    """
    pieces: list[bytes] = []
    pos = 0
    for m in _CANDIDATE_RE.finditer(src):
        start, end = m.span()
        word = m.group(0)
        if start < pos or (start and (src[start - 1 : start].isalnum() or src[start - 1] == 95)):
            continue
        if word in _OBJ:
            repl_end = end
        elif word in _CALL or word in _ALIGN:
            am = _ARGS_RE.match(src, end)
            if am is None:
                continue
            repl_end = am.end()
        else:
            continue
        line_start = src.rfind(b"\n", 0, start) + 1
        prefix = src[line_start:start]
        if b"#" in prefix and (_DIRECTIVE_NAME_RE.match(prefix) or _DEFINED_RE.search(prefix)):
            continue
        text = src[start:repl_end]
        if word in _ALIGN:
            repl = b"alignas" + src[src.index(b"(", end) : repl_end]
            repl = _spaces(text[: len(text) - len(repl)]) + repl
        else:
            repl = _spaces(text)
        pieces.append(src[pos:start])
        pieces.append(repl)
        pos = repl_end
    if not pieces:
        return src
    pieces.append(src[pos:])
    return b"".join(pieces)


def _spaces(text: bytes) -> bytes:
    return re.sub(rb"[^\n]", b" ", text)


# --------------------------------------------------------------------------------------------
# 2./3. parsing, brace balance and repair

_LANGUAGE = tree_sitter.Language(tree_sitter_cpp.language())
_PARSER = tree_sitter.Parser(_LANGUAGE)

_TOKEN_RE = re.compile(
    rb"//[^\n]*"
    rb"|/\*.*?(?:\*/|\Z)"
    rb'|"(?:\\.|[^"\\\n])*"'
    rb"|(?<![\w'])'(?:\\.|[^'\\\n])*'"
    rb"|^[ \t]*#[ \t]*(?P<dir>\w*)(?:[^\n\\]|\\.)*"
    rb"|[{}]",
    re.S | re.M,
)


@dataclass
class Balance:
    """What :func:`brace_balance` found. Offsets are byte offsets into the text."""

    open_braces: list[int] = field(default_factory=list)  # still open at the end, outermost first
    unmatched_close: list[int] = field(default_factory=list)
    in_comment: bool = False  # the text ends inside a /* comment


def brace_balance(src: bytes) -> Balance:
    """Count ``{``/``}`` outside comments, literals, directives and ``#else``/``#elif`` branches."""
    bal = Balance()
    stack: list[int] = []
    pp: list[bool] = []  # per #if level: True while in a branch after the first
    skipping = 0
    for m in _TOKEN_RE.finditer(src):
        tok = m.group(0)
        c = tok[:1]
        if c == b"{" or c == b"}":
            if skipping:
                continue
            if c == b"{":
                stack.append(m.start())
            elif stack:
                stack.pop()
            else:
                bal.unmatched_close.append(m.start())
        elif m.group("dir") is not None:
            d = m.group("dir")
            if d in (b"if", b"ifdef", b"ifndef"):
                pp.append(False)
            elif d in (b"elif", b"else", b"elifdef", b"elifndef") and pp:
                if not pp[-1]:
                    pp[-1] = True
                    skipping += 1
            elif d == b"endif" and pp:
                if pp.pop():
                    skipping -= 1
        elif tok.startswith(b"/*") and not tok.endswith(b"*/"):
            bal.in_comment = True
    bal.open_braces = stack
    return bal


def parse(src: bytes) -> tree_sitter.Tree:
    """Parse bytes with tree-sitter-cpp (no preprocessing)."""
    return _PARSER.parse(src)
