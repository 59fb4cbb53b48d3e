"""Walks over libclang cursors: the declarations of a scope, a function's body, the
namespaces around a declaration, function templates by name, switches and their case labels,
enum constants. Each function reads C++ as the parse (:class:`~cutlass_layout.cpp.clang.ProbeUnit`)
shows it and knows nothing of any install: which names to look for, and what they mean, are
the caller's.

Files are compared by the names libclang gives them (``cursor.location.file.name``), as the
caller passes them. A walk never enters what it does not need to: walking a whole translation
unit with its CUTLASS headers costs tens of seconds in Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import clang.cindex as ci

K = ci.CursorKind

#: What a type alias is declared with (``using A = ...;``, ``typedef ... A;``)
ALIASES = (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL)
#: Declarations whose bodies :func:`body_declarations` walks (a function template's body is dependent)
SCOPE_OWNERS = (K.FUNCTION_DECL, K.CXX_METHOD, K.STRUCT_DECL, K.CLASS_DECL, K.FUNCTION_TEMPLATE)
#: What a namespace scope holds namespace scope in (``namespace a {}``, ``extern "C++" {}``)
NAMESPACE_SCOPES = (K.NAMESPACE, K.LINKAGE_SPEC)
#: Scopes :func:`scope_declarations` walks into: namespaces and classes
_CLASS_SCOPES = NAMESPACE_SCOPES + (
    K.CLASS_DECL,
    K.STRUCT_DECL,
    K.CLASS_TEMPLATE,
    K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
)


# ---------------------------------------------------------------------------------------
# what a cursor is
def is_alias(c) -> bool:
    """``using A = T;`` or ``typedef T A;``."""
    return c.kind in ALIASES


def is_variable(c) -> bool:
    """A variable declaration (``constexpr int x = 1;``)."""
    return c.kind == K.VAR_DECL


def is_namespace(c) -> bool:
    """``namespace a { ... }`` (not an ``extern "C++"`` block)."""
    return c.kind == K.NAMESPACE


def is_namespace_scope(c) -> bool:
    """A namespace or an ``extern "C"``/``"C++"`` block: what holds namespace-scope declarations."""
    return c.kind in NAMESPACE_SCOPES


def is_scope_owner(c) -> bool:
    """A function, member function, struct, class or function template: what owns the
    declarations of its body (:func:`body_declarations`)."""
    return c.kind in SCOPE_OWNERS


def is_function_template(c) -> bool:
    """``template <...> R f(...)``."""
    return c.kind == K.FUNCTION_TEMPLATE


def definition_kind(c) -> str | None:
    """``"function"``, ``"function template"`` or ``"method"`` for the definition (a
    declaration with its body) of a function, function template or member function; None for
    anything else (a declaration without body too)."""
    kind = {K.FUNCTION_DECL: "function", K.FUNCTION_TEMPLATE: "function template", K.CXX_METHOD: "method"}.get(c.kind)
    return kind if kind is not None and c.is_definition() else None


def tokens(c) -> list[str]:
    """The spellings of the tokens of ``c``'s extent, in order."""
    return [t.spelling for t in c.get_tokens()]


def aliased_type(c) -> str:
    """The canonical spelling of the type a type alias ``c`` names (``A`` of ``using X = A;``,
    every alias and default argument in it resolved)."""
    return c.underlying_typedef_type.get_canonical().spelling


def written_type(c) -> str:
    """The type a type alias ``c`` names as written (``typename B<int>::Op`` of ``using X =
    typename B<int>::Op;``), no alias resolved."""
    return c.underlying_typedef_type.spelling


def aliased_declaration(c) -> list[str]:
    """The name of the declaration of the type a type alias ``c`` names (canonical: through
    every alias), then the names of its semantic parents, innermost first, up to the
    translation unit (``using B = cutlass::gemm::collective::CollectiveBuilder<...>;`` ->
    ``["CollectiveBuilder", "collective", "gemm", "cutlass"]``; ``[""]`` for a builtin)."""
    d = c.underlying_typedef_type.get_canonical().get_declaration()
    out = []
    while d is not None and d.kind != K.TRANSLATION_UNIT:
        out.append(d.spelling)
        d = d.semantic_parent
    return out


# ---------------------------------------------------------------------------------------
# names
def qualified_name(c) -> str | None:
    """``::a::B::name`` of a declaration reachable from namespace scope (through named
    namespaces, structs and classes), else None (an unnamed scope, a function's body)."""
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind != K.TRANSLATION_UNIT:
        if p.kind not in (K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL) or not p.spelling:
            return None
        parts.insert(0, p.spelling)
        p = p.semantic_parent
    return "::" + "::".join(parts)


def enclosing_namespaces(c) -> list[str]:
    """The named namespaces right around ``c`` (its semantic parents while they are
    namespaces), outermost first."""
    ns: list[str] = []
    p = c.semantic_parent
    while p is not None and p.kind == K.NAMESPACE:
        ns.insert(0, p.spelling)
        p = p.semantic_parent
    return ns


# ---------------------------------------------------------------------------------------
# scopes
def namespace_scope(root: ci.Cursor, files) -> Iterator[tuple[tuple[str, ...], ci.Cursor]]:
    """``(namespaces, cursor)`` of every declaration at namespace scope below ``root`` (a
    translation unit's cursor) spelled in one of ``files``, in source order, with the names of
    the namespaces it is in, outermost first. A namespace or ``extern`` block is yielded
    itself, then walked into (an ``extern`` block adds no name); nothing else is walked into."""
    for c in root.get_children():
        f = c.location.file
        if f is None or f.name not in files:
            continue
        yield (), c
        if c.kind in NAMESPACE_SCOPES:
            for path, inner in namespace_scope(c, files):
                yield ((c.spelling,) if c.kind == K.NAMESPACE else ()) + path, inner


def file_aliases(root: ci.Cursor, path) -> Iterator[tuple[tuple[str, ...], ci.Cursor]]:
    """``(namespaces, alias)`` of the type aliases at namespace scope of the file at ``path``
    (compared as resolved paths: a symbolic link names the same file), in source order, with
    the names of the namespaces they are in, outermost first; only that file's named
    namespaces are walked into (not ``extern`` blocks)."""
    path = str(Path(path).resolve())

    def in_file(c) -> bool:
        f = c.location.file
        return f is not None and str(Path(f.name).resolve()) == path

    def visit(cursor, ns: tuple[str, ...]):
        for c in cursor.get_children():
            if c.kind == K.NAMESPACE and in_file(c):
                yield from visit(c, ns + (c.spelling,))
            elif c.kind in ALIASES and in_file(c):
                yield ns, c

    yield from visit(root, ())


def scope_declarations(cursor, roots: tuple[str, ...]):
    """Declarations at namespace and class scope below ``cursor`` in files whose names start
    with one of ``roots``, in source order, a scope before what it holds; function bodies and
    scopes spelled in other files are not entered."""
    for c in cursor.get_children():
        f = c.location.file
        if f is None or not f.name.startswith(roots):
            continue
        yield c
        if c.kind in _CLASS_SCOPES:
            yield from scope_declarations(c, roots)


def function_definitions(cursor: ci.Cursor, roots: tuple[str, ...]) -> Iterator[tuple[str, ci.Cursor]]:
    """``(kind, cursor)`` of the definitions of functions, function templates and member
    functions among :func:`scope_declarations` (``kind``: :func:`definition_kind`)."""
    for c in scope_declarations(cursor, roots):
        kind = definition_kind(c)
        if kind is not None:
            yield kind, c


def body_declarations(cursor):
    """The declarations in a function body (and in the lambdas and nested scopes in it), in
    order, without walking into what a declaration names: a kernel's type chain is
    thousands of type and template references per alias, which cost seconds in Python. A type
    alias is yielded but not walked into; another declaration is walked into after it."""
    stack = list(reversed(list(cursor.get_children())))
    while stack:
        c = stack.pop()
        k = c.kind
        if k.is_declaration():
            yield c
            if k in ALIASES:
                continue
        elif k.is_reference() or k in _leaf_exprs():
            continue
        stack.extend(reversed(list(c.get_children())))


@lru_cache(maxsize=1)
def _leaf_exprs() -> frozenset:
    """Expression kinds without declarations below them."""
    return frozenset(
        {
            K.DECL_REF_EXPR,
            K.INTEGER_LITERAL,
            K.STRING_LITERAL,
            K.CXX_BOOL_LITERAL_EXPR,
            K.FLOATING_LITERAL,
            K.CHARACTER_LITERAL,
        }
    )


def statement_declarations(cursor: ci.Cursor) -> Iterator[ci.Cursor]:
    """The aliases and variables declared in the statements below ``cursor`` (a function:
    its body, nested blocks and declaration statements; not in lambdas or classes), in no
    promised order (the last written first)."""
    stack = list(cursor.get_children())
    while stack:
        c = stack.pop()
        if c.kind in ALIASES or c.kind == K.VAR_DECL:
            yield c
            continue
        if c.kind.is_statement() or c.kind == K.DECL_STMT:
            stack.extend(c.get_children())


def namespace_functions(root: ci.Cursor, file: str, namespace: str) -> Iterator[ci.Cursor]:
    """The functions (not templates) spelled in ``file`` in the namespaces named
    ``namespace`` below ``root`` (at any depth, and in any namespace inside them)."""

    def visit(cursor, inside: bool):
        for c in cursor.get_children():
            if c.location.file is None or c.location.file.name != file:
                continue
            if c.kind == K.NAMESPACE:
                yield from visit(c, inside or c.spelling == namespace)
            elif inside and c.kind == K.FUNCTION_DECL:
                yield c

    yield from visit(root, False)


def function_templates(root, name: str, paths, outside: str) -> list:
    """The declarations of function template ``name`` not spelled in ``outside`` (a header's,
    not the main file's) in one of the namespaces ``paths`` (``("flashinfer", "gemm")``; ``()``
    the global one): those of the longest path that has any, in the order of the unit (a
    header's declaration, then the definition); ``[]`` where none has."""

    def walk(cursors, rest, out):
        for ns in cursors:
            kids = list(ns.get_children())
            if not rest:
                out += [
                    c
                    for c in kids
                    if c.kind == K.FUNCTION_TEMPLATE
                    and c.spelling == name
                    and c.location.file is not None
                    and c.location.file.name != outside
                ]
                continue
            walk([k for k in kids if k.kind == K.NAMESPACE and k.spelling == rest[0]], rest[1:], out)
        return out

    for path in sorted(paths, key=len, reverse=True):
        hits = walk([root], path, [])
        if hits:
            return hits
    return []


def declared_enums(root, prefix: str) -> list[str]:
    """The names of the enums declared right below ``root`` (a translation unit's cursor)
    that start with ``prefix``, in order."""
    return [c.spelling for c in root.get_children() if c.kind == K.ENUM_DECL and c.spelling.startswith(prefix)]


def variable_tokens(cursor, name: str) -> list[str] | None:
    """The tokens of the first declaration of variable ``name`` in the function (or member
    function) around ``cursor`` (``cursor`` itself where none is around it); None where there
    is none."""
    fn = cursor.semantic_parent
    while fn is not None and fn.kind not in (K.FUNCTION_DECL, K.CXX_METHOD):
        fn = fn.semantic_parent
    scope = fn if fn is not None else cursor
    for c in scope.walk_preorder():
        if c.kind == K.VAR_DECL and c.spelling == name:
            return tokens(c)
    return None


def body_statements(fn) -> list:
    """The statements of a function's body (its ``{}`` block), in order; ``[]`` without body."""
    body = next((c for c in fn.get_children() if c.kind == K.COMPOUND_STMT), None)
    return list(body.get_children()) if body is not None else []


def is_if(c) -> bool:
    """An ``if`` statement."""
    return c.kind == K.IF_STMT


# ---------------------------------------------------------------------------------------
# enums
def enum_constant(cursor, enum: str) -> str | None:
    """The name of the constant of the enum named ``enum`` that ``cursor`` (a reference)
    refers to; None where it refers to no such constant."""
    ref = cursor.referenced
    if ref is None or ref.kind != K.ENUM_CONSTANT_DECL:
        return None
    parent = ref.semantic_parent
    return ref.spelling if parent is not None and parent.spelling == enum else None


def enumerators_referenced(cursor, enum: str) -> dict[str, int]:
    """``{name: value}`` of every constant of the enum named ``enum``, in declaration order,
    read from the first reference below ``cursor`` (preorder) to one of its constants; ``{}``
    where none is referenced."""
    for c in cursor.walk_preorder():
        ref = c.referenced if c.kind == K.DECL_REF_EXPR else None
        if ref is not None and ref.kind == K.ENUM_CONSTANT_DECL and ref.semantic_parent.spelling == enum:
            return {
                e.spelling: e.enum_value for e in ref.semantic_parent.get_children() if e.kind == K.ENUM_CONSTANT_DECL
            }
    return {}


def enum_references(cursor, enum: str) -> tuple[list[str], list]:
    """``(names, lambdas)``: the constants of enum ``enum`` referenced below ``cursor`` outside
    lambdas, in preorder with repeats, and the lambda expressions below it (not walked into),
    in order."""
    names: list[str] = []
    lambdas: list = []

    def walk(c):
        for ch in c.get_children():
            if ch.kind == K.LAMBDA_EXPR:
                lambdas.append(ch)
                continue
            if ch.kind == K.DECL_REF_EXPR:
                name = enum_constant(ch, enum)
                if name:
                    names.append(name)
            walk(ch)

    walk(cursor)
    return names, lambdas


def type_qualifiers(ref) -> list[str]:
    """The spellings of the types the nested-name qualifier of a reference names
    (``Alias::X`` -> ``["Alias"]``; ``""`` for one libclang does not resolve)."""
    out = []
    for c in ref.get_children():
        if c.kind == K.TYPE_REF:
            target = c.referenced
            out.append(target.spelling if target is not None else "")
    return out


# ---------------------------------------------------------------------------------------
# switches
def switches(cursor, guard_word: str, guard: str | None = None):
    """``(switch statement, guard)`` of every ``switch`` below ``cursor``, in order, with the
    tokens (spaces between) of the condition of the innermost ``if`` it is in whose condition
    names ``guard_word`` (None where it is in none; an ``else`` branch is outside its ``if``)."""
    for c in cursor.get_children():
        yield from _switches_at(c, guard_word, guard)


def _switches_at(c, guard_word: str, guard: str | None):
    """:func:`switches` of ``c`` itself and what is below it."""
    if c.kind == K.SWITCH_STMT:
        yield c, guard
    if c.kind == K.IF_STMT:
        kids = list(c.get_children())
        words = tokens(kids[0]) if kids else []
        if guard_word in words and len(kids) >= 2:
            yield from _switches_at(kids[0], guard_word, guard)
            yield from _switches_at(kids[1], guard_word, " ".join(words))
            for k in kids[2:]:  # the else branch (an `else if` is an if of its own)
                yield from _switches_at(k, guard_word, guard)
            return
    yield from switches(c, guard_word, guard)


def condition_names(switch, word: str) -> bool:
    """Whether the condition of ``switch`` (a ``switch`` or ``if``) has the token ``word``."""
    cond = next(switch.get_children(), None)
    return cond is not None and word in tokens(cond)


def case_constants(switch: ci.Cursor, enum: str) -> list[tuple[str, ci.Cursor]]:
    """``(name, reference)`` of each ``case`` label below ``switch`` (nested switches'
    included, in preorder) that names a constant of enum ``enum``: the first reference to one
    in the label (``case A::X:`` -> ``"X"``)."""
    out = []
    for case in (c for c in switch.walk_preorder() if c.kind == K.CASE_STMT):
        label = next(case.get_children(), None)
        if label is None:
            continue
        for r in [label] + list(label.walk_preorder()):
            name = enum_constant(r, enum) if r.kind == K.DECL_REF_EXPR else None
            if name:
                out.append((name, r))
                break
    return out


def case_statements(switch: ci.Cursor, enum: str) -> list[tuple[str, ci.Cursor]]:
    """``(name, statement)`` of each ``case`` label below ``switch`` (preorder) that names a
    constant of enum ``enum`` (the first reference in its label), with the statement it labels."""
    out = []
    for case in (c for c in switch.walk_preorder() if c.kind == K.CASE_STMT):
        kids = list(case.get_children())
        if len(kids) < 2:
            continue
        name = next((enum_constant(r, enum) for r in kids[0].walk_preorder() if r.kind == K.DECL_REF_EXPR), None)
        if name:
            out.append((name, kids[-1]))
    return out


def integer_literals(cursor) -> list[int]:
    """The values of the integer literals below ``cursor``, in preorder (a macro's arguments
    where it expands one: each literal's own token)."""
    out = []
    for c in cursor.walk_preorder():
        if c.kind == K.INTEGER_LITERAL:
            spelled = [t.spelling for t in c.get_tokens()]
            if len(spelled) == 1:
                out.append(int(spelled[0].rstrip("uUlL"), 0))
    return out


def switch_returns(cursor, enum: str) -> list[tuple[list[str], list[str]]] | None:
    """The arms of the first ``switch`` below ``cursor`` (preorder) written ``case X: case Y:
    ... return E;``: ``(labels, tokens of the return statement)`` each, the labels the
    constants of enum ``enum`` that the first reference in each ``case`` label names;
    ``default:`` arms skipped. None where there is no switch, or an arm of another shape (a
    statement other than a ``case``, a label whose first reference is not to a constant of
    ``enum``, a last statement other than ``return``)."""
    switch = next((c for c in cursor.walk_preorder() if c.kind == K.SWITCH_STMT), None)
    if switch is None:
        return None
    body = list(switch.get_children())[-1]
    out = []
    for stmt in body.get_children():
        if stmt.kind == K.DEFAULT_STMT:
            continue
        if stmt.kind != K.CASE_STMT:
            return None
        labels: list[str] = []
        while stmt is not None and stmt.kind == K.CASE_STMT:
            kids = list(stmt.get_children())
            label = next((enum_constant(r, enum) for r in kids[0].walk_preorder() if r.kind == K.DECL_REF_EXPR), None)
            if label is None:
                return None
            labels.append(label)
            stmt = kids[-1]
        if stmt.kind != K.RETURN_STMT:
            return None
        out.append((labels, tokens(stmt)))
    return out


__all__ = [
    "ALIASES",
    "NAMESPACE_SCOPES",
    "SCOPE_OWNERS",
    "aliased_declaration",
    "aliased_type",
    "body_declarations",
    "body_statements",
    "case_constants",
    "case_statements",
    "condition_names",
    "integer_literals",
    "declared_enums",
    "definition_kind",
    "enclosing_namespaces",
    "enum_constant",
    "enum_references",
    "enumerators_referenced",
    "file_aliases",
    "function_definitions",
    "function_templates",
    "is_alias",
    "is_function_template",
    "is_if",
    "is_namespace",
    "is_namespace_scope",
    "is_scope_owner",
    "is_variable",
    "namespace_functions",
    "namespace_scope",
    "qualified_name",
    "scope_declarations",
    "statement_declarations",
    "switch_returns",
    "switches",
    "tokens",
    "type_qualifiers",
    "variable_tokens",
    "written_type",
]
