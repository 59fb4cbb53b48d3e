"""A small C++ interpreter over libclang cursors: :class:`Eval` runs a function of a parsed
unit (bodies parsed) on given argument values, for the few constructs it follows, and raises
:class:`Unreadable` for any other: the answer is never guessed. Written for TensorRT-LLM's
candidate-config functions (``cutlass_heuristic.cpp``), which build ``std::vector``s of
``CutlassGemmConfig`` from enum constants; see :class:`Eval` for what it follows."""

from __future__ import annotations

from collections import ChainMap

import clang.cindex as ci


class Unreadable(Exception):
    """The code has a construct :class:`Eval` does not follow (the answer is then None)."""


class EnumValue(int):
    """An enum constant as the code names it: compares as its integer value, keeps its name."""

    name: str
    enum: str

    def __new__(cls, value: int, name: str, enum: str):
        out = super().__new__(cls, value)
        out.name, out.enum = name, enum
        return out


#: Binary operators :class:`Eval` follows (``||`` and ``&&`` short-circuit)
_BINARY = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "&": lambda a, b: int(a) & int(b),
    "|": lambda a, b: int(a) | int(b),
    "%": lambda a, b: int(a) % int(b),
    "/": lambda a, b: int(a) // int(b),
    "*": lambda a, b: a * b,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
}


#: What ``assert`` calls when it fails (glibc, BSD/macOS, MSVC)
_ASSERT_FAIL = ("__assert_fail", "__assert_rtn", "_wassert", "__assert")

#: Expression kinds a statement made only of has no effect (``((void)0)``)
_NO_EFFECT = ("PAREN_EXPR", "CXX_STATIC_CAST_EXPR", "CSTYLE_CAST_EXPR", "UNEXPOSED_EXPR", "INTEGER_LITERAL")


class Eval:
    """Runs a C++ function of the install (a libclang definition, bodies parsed) on given
    argument values, for the few constructs TensorRT-LLM's SM100 and SM90 candidate functions
    are written in: local variables (also a structured binding, and declared with a
    constructor's arguments), ``if``, ``?:``, range ``for`` (also over a braced list and with a
    structured binding), ``return``, integer, bool and enum values, ``std::vector``
    ``push_back`` / ``insert(end, v.begin(), v.end())`` / ``size()``, ``std::set`` of enum
    values (``insert``, iterated in ascending order), braced lists and pairs, ``std::get<N>``,
    ``std::make_tuple``, calls of other functions with a body, the constructor of
    ``CutlassGemmConfig`` (a dict keyed by its parameter names, default arguments taken; also
    through ``emplace_back``; ``reserve`` has no effect), assignment to a variable
    (``config = CutlassGemmConfig(...)``) or to a member of a config (``config.swap_ab =
    true``). ``assert`` statements and ``using`` aliases are skipped. Anything else raises :class:`Unreadable`: the answer is never
    guessed. At most :data:`STEPS` steps."""

    STEPS = 200000

    def __init__(self):
        self.steps = 0

    def call(self, fn, args: list):
        body = fn.get_definition() if not fn.is_definition() else fn
        if body is None:
            raise Unreadable(f"{fn.spelling} has no body here")
        params = [c for c in body.get_children() if c.kind == ci.CursorKind.PARM_DECL]
        if len(params) != len(args):
            raise Unreadable(f"{fn.spelling}: {len(args)} arguments for {len(params)} parameters")
        env = ChainMap({p.spelling: a for p, a in zip(params, args)})
        stmt = next((c for c in body.get_children() if c.kind == ci.CursorKind.COMPOUND_STMT), None)
        if stmt is None:
            raise Unreadable(f"{fn.spelling} has no body here")
        done = self.run(stmt, env)
        return None if done is None else done[1]

    def run(self, c, env):
        """Run a statement; ``("return", value)`` when it returns."""
        self.steps += 1
        if self.steps > self.STEPS:
            raise Unreadable("too many steps")
        k = c.kind
        if k == ci.CursorKind.COMPOUND_STMT:
            env = env.new_child()
            for s in c.get_children():
                done = self.run(s, env)
                if done is not None:
                    return done
            return None
        if k == ci.CursorKind.DECL_STMT:
            for d in c.get_children():
                if d.kind == ci.CursorKind.VAR_DECL:
                    env[d.spelling] = self.init_of(d, env)
                elif d.kind == ci.CursorKind.UNEXPOSED_DECL:  # auto [a, b, c] = ...;
                    self.bind(d, env)
                elif d.kind not in (
                    ci.CursorKind.STATIC_ASSERT,
                    ci.CursorKind.TYPE_ALIAS_DECL,
                    ci.CursorKind.TYPEDEF_DECL,
                ):
                    raise Unreadable(f"declaration {d.kind.name}")
            return None
        if k == ci.CursorKind.IF_STMT:
            kids = list(c.get_children())
            if len(kids) not in (2, 3):
                raise Unreadable("an if with an initializer")
            if self.value(kids[0], env):
                return self.run(kids[1], env)
            return self.run(kids[2], env) if len(kids) == 3 else None
        if k == ci.CursorKind.RETURN_STMT:
            kids = list(c.get_children())
            return ("return", self.value(kids[0], env) if kids else None)
        if k == ci.CursorKind.CXX_FOR_RANGE_STMT:
            kids = list(c.get_children())
            decl, items, body = kids[0], self.value(kids[-2], env), kids[-1]
            names = (
                [d.spelling for d in decl.get_children() if d.kind == ci.CursorKind.UNEXPOSED_DECL]
                if decl.kind == ci.CursorKind.UNEXPOSED_DECL
                else [decl.spelling]
            )
            for item in list(items):
                inner = env.new_child()
                if len(names) == 1:
                    inner[names[0]] = item
                else:
                    if len(item) != len(names):
                        raise Unreadable("a structured binding of another size")
                    inner.update(zip(names, item))
                done = self.run(body, inner)
                if done is not None:
                    return done
            return None
        if k == ci.CursorKind.NULL_STMT:
            return None
        if any(x.kind == ci.CursorKind.CALL_EXPR and x.spelling in _ASSERT_FAIL for x in c.walk_preorder()):
            return None  # assert(...) as the C library expands it
        if all(x.kind.name in _NO_EFFECT for x in c.walk_preorder()):
            return None  # ((void)0): assert(...) under NDEBUG
        if k in (ci.CursorKind.UNEXPOSED_EXPR, ci.CursorKind.CALL_EXPR, ci.CursorKind.BINARY_OPERATOR):
            self.value(c, env, statement=True)
            return None
        raise Unreadable(f"statement {k.name}: {_text(c)}")

    def bind(self, d, env):
        """A structured binding declaration (``auto const [a, b, c] = init;``)."""
        kids = list(d.get_children())
        names = [ch.spelling for ch in kids if ch.kind == ci.CursorKind.UNEXPOSED_DECL]
        inits = [ch for ch in kids if ch.kind != ci.CursorKind.UNEXPOSED_DECL]
        if not names or len(inits) != 1:
            raise Unreadable(f"a structured binding: {_text(d)}")
        value = self.value(inits[0], env)
        if not isinstance(value, (tuple, list)) or len(value) != len(names):
            raise Unreadable(f"a structured binding of another size: {_text(d)}")
        env.update(zip(names, value))

    def assign(self, target, value, env):
        """``target = value`` for a variable of an enclosing scope, or ``var.member = value``
        for a config (a dict) variable."""
        if isinstance(value, dict):
            value = dict(value)  # a copy, as C++ assigns
        if target.kind == ci.CursorKind.DECL_REF_EXPR:
            scope = next((m for m in env.maps if target.spelling in m), None)
            if scope is None:
                raise Unreadable(f"{target.spelling} is not known here")
            scope[target.spelling] = value
            return
        if target.kind == ci.CursorKind.MEMBER_REF_EXPR:
            obj = next(target.get_children(), None)
            name = obj.spelling if obj is not None and obj.kind == ci.CursorKind.DECL_REF_EXPR else None
            if name in env and isinstance(env[name], dict):
                env[name][target.spelling] = value
                return
        raise Unreadable(f"an assignment to {_text(target)}")

    def init_of(self, d, env):
        refs = (ci.CursorKind.TYPE_REF, ci.CursorKind.NAMESPACE_REF, ci.CursorKind.TEMPLATE_REF)
        kids = [ch for ch in d.get_children() if ch.kind not in refs]
        if not kids:
            raise Unreadable(f"{d.spelling} has no initializer")
        return self.value(kids[-1], env)

    def value(self, c, env, statement: bool = False):
        self.steps += 1
        if self.steps > self.STEPS:
            raise Unreadable("too many steps")
        k = c.kind
        kids = list(c.get_children())
        if k in (
            ci.CursorKind.UNEXPOSED_EXPR,
            ci.CursorKind.PAREN_EXPR,
            ci.CursorKind.CXX_STATIC_CAST_EXPR,
            ci.CursorKind.CSTYLE_CAST_EXPR,
        ):
            kids = [ch for ch in kids if ch.kind != ci.CursorKind.TYPE_REF]
            if len(kids) != 1:
                raise Unreadable(f"an expression of {len(kids)} parts: {_text(c)}")
            return self.value(kids[0], env, statement)
        if k == ci.CursorKind.INTEGER_LITERAL:
            return int(next(c.get_tokens()).spelling.rstrip("uUlL"), 0)
        if k == ci.CursorKind.FLOATING_LITERAL:
            return float(next(c.get_tokens()).spelling.rstrip("fFlL"))
        if k == ci.CursorKind.CXX_BOOL_LITERAL_EXPR:
            return next(c.get_tokens()).spelling == "true"
        if k == ci.CursorKind.DECL_REF_EXPR:
            ref = c.referenced
            if ref is not None and ref.kind == ci.CursorKind.ENUM_CONSTANT_DECL:
                return EnumValue(ref.enum_value, ref.spelling, ref.semantic_parent.spelling)
            if c.spelling in env:
                return env[c.spelling]
            raise Unreadable(f"{c.spelling} is not known here")
        if k == ci.CursorKind.BINARY_OPERATOR and c.spelling == "=" and statement:
            self.assign(kids[0], self.value(kids[1], env), env)
            return None
        if k == ci.CursorKind.BINARY_OPERATOR:
            op = c.spelling
            a = self.value(kids[0], env)
            if op == "||":
                return bool(a) or bool(self.value(kids[1], env))
            if op == "&&":
                return bool(a) and bool(self.value(kids[1], env))
            if op not in _BINARY:
                raise Unreadable(f"operator {op}")
            return _BINARY[op](a, self.value(kids[1], env))
        if k == ci.CursorKind.UNARY_OPERATOR:
            op = next(c.get_tokens()).spelling
            if op == "!":
                return not self.value(kids[0], env)
            if op == "-":
                return -self.value(kids[0], env)
            raise Unreadable(f"operator {op}")
        if k == ci.CursorKind.CONDITIONAL_OPERATOR:
            return self.value(kids[1] if self.value(kids[0], env) else kids[2], env)
        if k == ci.CursorKind.INIT_LIST_EXPR:
            return [self.value(ch, env) for ch in kids]
        if k == ci.CursorKind.CALL_EXPR:
            return self.call_expr(c, kids, env, statement)
        raise Unreadable(f"expression {k.name}: {_text(c)}")

    def config(self, ctor, args: list, env) -> dict:
        """A ``CutlassGemmConfig`` built by its constructor ``ctor`` from ``args``: a dict keyed by
        the constructor's parameter names, a parameter not given taking its default argument."""
        if (
            ctor is None
            or ctor.kind != ci.CursorKind.CONSTRUCTOR
            or ctor.semantic_parent.spelling != "CutlassGemmConfig"
        ):
            raise Unreadable("a config built by another constructor than CutlassGemmConfig's")
        params = list(ctor.get_arguments())
        if len(args) > len(params):
            raise Unreadable(f"CutlassGemmConfig: {len(args)} arguments for {len(params)} parameters")
        out = {p.spelling: self.value(a, env) for p, a in zip(params, args)}
        for p in params[len(args) :]:
            default = [
                ch for ch in p.get_children() if ch.kind not in (ci.CursorKind.TYPE_REF, ci.CursorKind.NAMESPACE_REF)
            ]
            if len(default) != 1:
                raise Unreadable(f"CutlassGemmConfig: no default argument for {p.spelling}")
            out[p.spelling] = self.value(default[0], env)
        return out

    def call_expr(self, c, kids, env, statement):
        ref = c.referenced
        name = c.spelling
        args = list(c.get_arguments())
        if ref is not None and ref.kind == ci.CursorKind.CONSTRUCTOR:
            if name == "vector":  # default arguments (the allocator) are not spelled
                args = [a for a in args if next(a.get_tokens(), None) is not None]
            if name == "vector":  # std::vector<...> v; v{...}; return {}
                if not args:
                    lists = [ch for ch in kids if ch.kind != ci.CursorKind.TYPE_REF]
                    return list(self.value(lists[0], env)) if lists else []
                if len(args) == 1:
                    return list(self.value(args[0], env))
                raise Unreadable(f"a vector built from {len(args)} arguments")
            if name == "set" and not args:  # std::set<...> s;
                return _Set()
            if name == "pair" and len(args) == 2:
                return tuple(self.value(a, env) for a in args)
            if name == "CutlassGemmConfig":
                return self.config(ref, args, env)
            raise Unreadable(f"constructor {name}")
        if name == "operator=" and statement and len(kids) == 3:  # config = CutlassGemmConfig(...);
            self.assign(_bare(kids[0]), self.value(kids[2], env), env)
            return None
        head = kids[0] if kids else None
        if head is not None and head.kind == ci.CursorKind.MEMBER_REF_EXPR:
            obj = next(head.get_children(), None)
            obj = _bare(obj) if obj is not None else None
            target = obj.spelling if obj is not None and obj.kind == ci.CursorKind.DECL_REF_EXPR else None
            if target in env and isinstance(env[target], _Set):
                if name == "insert" and len(args) == 1 and statement:
                    env[target].insert(self.value(args[0], env))
                    return None
                raise Unreadable(f"{name} of {target}")
            if target not in env or not isinstance(env[target], list):
                raise Unreadable(f"{name} of {_text(head)}")
            if name == "size" and not args:
                return len(env[target])
            if name == "reserve" and len(args) == 1 and statement:
                return None  # no effect on the values
            if name == "emplace_back" and args and statement:
                env[target].append(self.config(_element_constructor(obj, args), args, env))
                return None
            if name == "push_back" and len(args) == 1:
                item = self.value(args[0], env)
                env[target].append(
                    tuple(item) if isinstance(item, list) else dict(item) if isinstance(item, dict) else item
                )
                return None
            if name == "insert" and len(args) == 3:
                src = [[t.spelling for t in a.get_tokens()] for a in args[1:]]
                if (
                    len(src[0]) == 5
                    and src[0][1:] == [".", "begin", "(", ")"]
                    and src[1] == [src[0][0], ".", "end", "(", ")"]
                    and src[0][0] in env
                ):
                    env[target].extend(env[src[0][0]])
                    return None
            raise Unreadable(f"{name} of {target}")
        if name == "get" and len(args) == 1:
            n = [int(t.spelling) for t in head.get_tokens() if t.spelling.isdigit()] if head is not None else []
            if len(n) != 1:
                raise Unreadable(_text(c))
            return self.value(args[0], env)[n[0]]
        if name == "make_tuple":
            return tuple(self.value(a, env) for a in args)
        if ref is not None and ref.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE):
            return self.call(ref, [self.value(a, env) for a in args])
        raise Unreadable(f"call {name}: {_text(c)}")


class _Set:
    """A ``std::set`` of integer values (enum constants): iterated in ascending order, as
    ``std::less`` orders it."""

    def __init__(self):
        self.items: list = []

    def insert(self, value) -> None:
        if not isinstance(value, int):
            raise Unreadable(f"a set of {type(value).__name__}")
        if value not in self.items:
            self.items.append(value)
            self.items.sort(key=int)

    def __iter__(self):
        return iter(list(self.items))


def _element_constructor(obj, args: list):
    """The constructor of the element type of the ``std::vector`` variable ``obj`` refers to
    (``std::vector<CutlassGemmConfig> v``) that ``v.emplace_back(args...)`` calls: the one whose
    parameters take as many arguments (with their defaults) and whose first parameter has the
    first argument's type; None where there is no single such one."""
    var = obj.referenced if obj is not None else None
    element = var.type.get_canonical().get_template_argument_type(0) if var is not None else None
    decl = element.get_declaration() if element is not None else None
    if decl is None or decl.kind.is_invalid():
        return None
    first = args[0].type.get_canonical().spelling.replace("const ", "")
    fits = []
    for ctor in decl.get_children():
        if ctor.kind != ci.CursorKind.CONSTRUCTOR:
            continue
        params = list(ctor.get_arguments())
        required = sum(1 for p in params if not any(ch.kind.is_expression() for ch in p.get_children()))
        if (
            required <= len(args) <= len(params)
            and params[0].type.get_canonical().spelling.replace("const ", "") == first
        ):
            fits.append(ctor)
    return fits[0] if len(fits) == 1 else None


def _bare(c):
    """``c`` without the implicit casts libclang shows as unexposed expressions."""
    while c.kind == ci.CursorKind.UNEXPOSED_EXPR:
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _text(c) -> str:
    return " ".join(t.spelling for t in c.get_tokens())[:120]


__all__ = ["Eval", "EnumValue", "Unreadable"]
