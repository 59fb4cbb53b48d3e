"""Integer constants as the compiler computes them, read from tree-sitter nodes: what
:mod:`.treesitter`'s scan reports as a constant's value.

C++17 on an LP64 host, as nvcc's host compilers build CUTLASS: ``int`` 32 bits, ``long`` and
``long long`` 64. A literal takes the first of its candidate types that holds it ([lex.icon]),
the usual arithmetic conversions apply, unsigned arithmetic wraps, and signed overflow, a
shift out of range or a division by zero is not a constant expression (:func:`typed_value`
says so); :func:`int_value` is the exact, mathematical value.
"""

from __future__ import annotations

import re


def int_value(node) -> int | None:
    """Exact (mathematical) value of a literal or a sum/difference/product of literals, else
    None; :func:`typed_value` gives the value the compiler computes."""
    try:
        return _int_value(node)
    except RecursionError:
        return None


def _int_value(node) -> int | None:
    t = node.type
    if t == "number_literal":
        sign, raw = _sign(node.text)
        try:
            lit = _literal(raw)
        except _Invalid:
            return None
        return None if lit is None else sign * lit[0]
    if t == "parenthesized_expression" and node.named_child_count == 1:
        return _int_value(node.named_children[0])
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        v = _int_value(arg) if arg is not None else None
        if v is None or op is None:
            return None
        return -v if op.type == "-" else v if op.type == "+" else None
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        a = _int_value(node.child_by_field_name("left"))
        b = _int_value(node.child_by_field_name("right"))
        if a is None or b is None or op is None:
            return None
        return {"+": a + b, "-": a - b, "*": a * b}.get(op.type)
    return None


#: (bits, signed) of the integer types by name; ``bool`` is (1, False).
_INT_TYPES = {
    "bool": (1, False),
    "char": (8, True),
    "signed char": (8, True),
    "unsigned char": (8, False),
    "short": (16, True),
    "unsigned short": (16, False),
    "int": (32, True),
    "unsigned int": (32, False),
    "long": (64, True),
    "unsigned long": (64, False),
    "long long": (64, True),
    "unsigned long long": (64, False),
    **{f"int{b}_t": (b, True) for b in (8, 16, 32, 64)},
    **{f"uint{b}_t": (b, False) for b in (8, 16, 32, 64)},
    "size_t": (64, False),
    "ssize_t": (64, True),
    "ptrdiff_t": (64, True),
    "intptr_t": (64, True),
    "uintptr_t": (64, False),
    "intmax_t": (64, True),
    "uintmax_t": (64, False),
}
_TYPE_NAMES = {(32, True): "int", (32, False): "unsigned int", (64, True): "long", (64, False): "unsigned long"}
_BOOL = (1, False)


def declared_int_type(text: str | None) -> tuple[int, int] | None:
    """(bits, signed) of a declared integer type (``uint32_t``, ``std::size_t``, ``unsigned``,
    ``long long int``), or None for another type (``auto``, ``cute::Int<4>``, a template
    parameter)."""
    if not text:
        return None
    words = [
        w
        for w in text.replace("std::", "").split()
        if w not in ("const", "constexpr", "static", "volatile", "inline", "constinit")
    ]
    name = " ".join(words)
    if name in _INT_TYPES:
        return _INT_TYPES[name]
    if not words or not set(words) <= {"signed", "unsigned", "short", "long", "int", "char"}:
        return None
    signed = "unsigned" not in words
    base = "char" if "char" in words else "short" if "short" in words else "long" if "long" in words else "int"
    if "char" in words and "signed" not in words and "unsigned" not in words:
        return _INT_TYPES["char"]
    bits = {"char": 8, "short": 16, "int": 32, "long": 64}[base]
    return bits, signed


class _Unknown(Exception):
    """Not an expression this reader evaluates (a name, a call, a float)."""


class _Invalid(Exception):
    """Not a constant expression: the compiler refuses it (the message says why)."""


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _fits(v: int, bits: int, signed: bool) -> bool:
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1)) if signed else 0 <= v < (1 << bits)


def _promote(t: tuple) -> tuple:
    return (32, True) if t[0] < 32 else t  # bool, char, short: int


def _common(a: tuple, b: tuple) -> tuple:
    """The usual arithmetic conversions of two integer types."""
    a, b = _promote(a), _promote(b)
    if a[1] == b[1]:
        return max(a[0], b[0]), a[1]
    u, s = (b, a) if a[1] else (a, b)
    return (u[0], False) if u[0] >= s[0] else s


_LITERAL_RE = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)")


def _literal(raw: bytes) -> tuple[int, tuple] | None:
    """(value, type) of an integer literal by C++'s rules ([lex.icon]: the first of its
    candidate types that holds the value), None for other literals. A literal no type holds
    raises :class:`_Invalid`."""
    text = raw.decode("ascii", "replace").replace("'", "")
    m = _LITERAL_RE.fullmatch(text)
    if not m:
        return None
    digits, suffix = m.groups()
    low = suffix.lower()
    if low not in ("", "u", "l", "ul", "lu", "ll", "ull", "llu") or suffix in ("lL", "Ll"):
        return None
    if digits[:2] in ("0x", "0X"):
        v, decimal = int(digits, 16), False
    elif digits[:2] in ("0b", "0B"):
        v, decimal = int(digits[2:], 2), False
    elif len(digits) > 1 and digits[0] == "0":
        v, decimal = int(digits, 8), False
    else:
        v, decimal = int(digits), True
    unsigned, longs = "u" in low, low.count("l")
    sizes = [b for b in (32, 64) if b >= (64 if longs else 32)]
    kinds = [False] if unsigned else [True] if decimal else [True, False]
    for bits in sizes:
        for signed in kinds:
            if _fits(v, bits, signed):
                return v, (bits, signed)
    if _fits(v, 64, False):  # too large for a signed type: compilers take it as unsigned long long
        return v, (64, False)
    raise _Invalid(f"the literal {text} is too large for any integer type")


def _name(t: tuple) -> str:
    return "bool" if t == _BOOL else _TYPE_NAMES.get(t, f"{'' if t[1] else 'u'}int{t[0]}_t")


def _eval(node) -> tuple[int, tuple]:
    """(value, type) of an integer constant expression of literals, computed as the compiler
    does: unsigned arithmetic wraps; signed overflow, a shift out of range and a division by
    zero are not constant expressions (:class:`_Invalid`)."""
    t = node.type
    if t == "number_literal":
        sign, raw = _sign(node.text)
        lit = _literal(raw)
        if lit is None:
            raise _Unknown()
        if raw == node.text:
            return lit
        return _negate(*lit) if sign < 0 else (lit[0], _promote(lit[1]))
    if t in ("true", "false"):
        return int(t == "true"), _BOOL
    if t == "parenthesized_expression" and node.named_child_count == 1:
        return _eval(node.named_children[0])
    if t == "unary_expression":
        op, arg = node.child_by_field_name("operator"), node.child_by_field_name("argument")
        if op is None or arg is None:
            raise _Unknown()
        v, vt = _eval(arg)
        pt = _promote(vt)
        if op.type == "+":
            return v, pt
        if op.type == "-":
            return _negate(v, vt)
        if op.type == "~":
            return _wrap(~v, *pt), pt
        raise _Unknown()
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op is None or left is None or right is None:
            raise _Unknown()
        return _binary(op.type, _eval(left), _eval(right))
    raise _Unknown()


def _sign(raw: bytes) -> tuple[int, bytes]:
    """tree-sitter reads ``-1`` as one literal: its sign, and the literal."""
    if raw[:1] in (b"-", b"+"):
        return (-1 if raw[:1] == b"-" else 1), raw[1:].lstrip()
    return 1, raw


def _negate(v: int, t: tuple) -> tuple[int, tuple]:
    pt = _promote(t)
    if not pt[1]:
        return _wrap(-v, *pt), pt
    if not _fits(-v, *pt):
        raise _Invalid(f"-({v}) overflows {_name(pt)}")
    return -v, pt


def _binary(op: str, a: tuple[int, tuple], b: tuple[int, tuple]) -> tuple[int, tuple]:
    (va, ta), (vb, tb) = a, b
    if op in ("<<", ">>"):
        t = _promote(ta)
        if vb < 0 or vb >= t[0]:
            raise _Invalid(f"a shift by {vb} of {_name(t)} ({t[0]} bits)")
        if op == ">>":
            return va >> vb, t
        if not t[1]:
            return _wrap(va << vb, *t), t
        if va < 0 or va << vb >= 1 << t[0]:
            raise _Invalid(f"{va} << {vb} overflows {_name(t)}")
        return _wrap(va << vb, *t), t
    if op not in ("+", "-", "*", "/", "%", "&", "|", "^"):
        raise _Unknown()
    t = _common(ta, tb)
    x, y = _wrap(va, *t), _wrap(vb, *t)
    if op in ("/", "%"):
        if y == 0:
            raise _Invalid("a division by zero")
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # C++ truncates toward zero
        r = q if op == "/" else x - y * q
    else:
        r = {"+": x + y, "-": x - y, "*": x * y, "&": x & y, "|": x | y, "^": x ^ y}[op]
    if not t[1]:
        return _wrap(r, *t), t
    if not _fits(r, *t):
        raise _Invalid(f"{x} {op} {y} overflows {_name(t)}")
    return r, t


def typed_value(node, declared: str | None, braced: bool = False) -> tuple[int | None, str | None]:
    """The value of a constant's initializer as the compiler gives it, and what is wrong with
    it (None when nothing is): the expression is computed in C++'s types (:func:`_eval`), then
    converted to the declared type (``declared``'s width and signedness: an out-of-range value
    wraps, and is reported; a brace initializer refuses it). The value is None where the
    expression is not one this reader evaluates or does not compile."""
    try:
        v, t = _eval(node)
    except _Unknown:
        return None, None
    except _Invalid as exc:
        return None, f"{exc}: not a constant expression (it does not compile)"
    except RecursionError:
        return None, None
    target = declared_int_type(declared) or t
    shown = declared if declared_int_type(declared) else _name(t)
    if target == _BOOL:
        return int(v != 0), None
    r = _wrap(v, *target)
    exact = int_value(node)
    if braced and r != v:
        return None, f"{v} does not fit {shown}: a narrowing brace initializer does not compile"
    if exact is not None and exact != r:
        return r, f"{exact} does not fit {shown}: the compiler makes it {r}"
    if r != v:
        return r, f"{v} does not fit {shown}: the compiler makes it {r}"
    return r, None
