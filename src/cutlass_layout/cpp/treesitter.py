"""tree-sitter front end of :mod:`cutlass_layout.commands.scan`: blank macros, repair cut files, extract.

Nothing here compiles or preprocesses anything. One header is handled in four steps:

1. :func:`~cutlass_layout.cpp.treesitter_parse.blank_macros` replaces the CUDA/CUTLASS
   decorator macros that confuse a C++ parser (``CUTLASS_HOST_DEVICE``, ``CUTE_UNROLL``,
   ``__launch_bounds__(...)``, ...) by spaces of the same length, so every line and column stays where it was. ``CUTE_ALIGNAS(n)`` and
   ``__align__(n)`` become ``alignas(n)`` padded on the left, so the alignment is kept.
2. The blanked text is parsed with tree-sitter-cpp (:mod:`.treesitter_parse` holds steps 1 to 3).
3. If the tree has errors, :func:`~cutlass_layout.cpp.treesitter_parse.brace_balance` counts
   braces (skipping comments, strings, ``#`` lines and the ``#else``/``#elif`` branches, as the first branch is the one parsed).
   A file that ends with open braces is *cut*: closers are appended after the end of the text
   (so no line number moves) and the text is parsed again; every struct whose ``}`` had to be
   made up is marked ``cut``.
4. :func:`scan_source` (its ``_Extractor``) finds structs and unions whose name contains
   ``Storage`` and the transaction-byte / stage / capacity constants by a byte search, then
   reads each hit from the tree (no walk over the whole tree in Python); a constant's value
   is computed as the compiler computes it (:mod:`.int_constants`).
"""

from __future__ import annotations

import re

from ..model import Diagnostic, Field, ScanConstant, Scope, Struct
from .int_constants import typed_value
from .treesitter_parse import PARENS, blank_macros, brace_balance, parse


# --------------------------------------------------------------------------------------------
# 4. extraction

#: Struct/union/class names kept: any name containing "Storage" (SharedStorage, TensorStorage,
#: PipelineStorage, TensorMapStorage, CollectiveStorageWithC, ...) except helpers ending in
#: Calculator, Traits, Type, Helper or Policy.
_STORAGE_RE = re.compile(rb"Storage\w*")
#: Helper metafunctions whose name merely contains "Storage" (StorageContainerCalculator).
_NOT_STORAGE_SUFFIXES = ("Calculator", "Traits", "Type", "Helper", "Policy")
_STRUCT_BEFORE_RE = re.compile(rb"\b(?P<kw>struct|union|class)\s+(?:alignas\s*" + PARENS + rb"\s*)?\w*$")
#: Constant names kept (class members and namespace-scope constants, not function locals).
CONSTANT_NAME_RE = re.compile(r"^(?:TmaTransactionBytes\w*|\w*Stages|\w*_smem_capacity_bytes|\w*SmemCapacity\w*)$")
_CONST_HIT_RE = re.compile(rb"(?:TmaTransactionBytes|Stages|_smem_capacity_bytes|SmemCapacity)\w*\s*(?:=(?!=)|\{)")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_PREPROC = {"preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef", "preproc_else"}
_SPECIFIERS = {"struct_specifier", "union_specifier", "class_specifier"}
_MAX_ERRORS_PER_STRUCT = 3


def scan_source(src: bytes, relpath: str) -> tuple[list[Struct], list[ScanConstant], list[Diagnostic]]:
    """Scan the text of one header. Returns (storage structs, constants, diagnostics).

    ``relpath`` is only copied into the results. Never raises on bad C++; damaged input shows
    up as ``cut`` structs and diagnostics.
    """
    diags: list[Diagnostic] = []
    text = blank_macros(src)
    orig_len = len(text)
    tree = parse(text)
    cut_at = None
    if tree.root_node.has_error and (
        text.count(b"{") != text.count(b"}")
        or _error_at_end(tree.root_node)
        or any(c.is_error for c in tree.root_node.children)
    ):
        bal = brace_balance(text)
        for off in bal.unmatched_close[:3]:
            diags.append(Diagnostic(relpath, _line_of(text, off), "unmatched '}' (no '{' left open to close)"))
        if bal.open_braces or bal.in_comment:
            cut_at = _last_content_line(text)
            closers = b"\n*/" if bal.in_comment else b""
            closers += b"\n;" + b"};" * len(bal.open_braces) + b"\n"
            tree = parse(text + closers)
            if not bal.open_braces:
                diags.append(Diagnostic(relpath, cut_at, "file ends inside a /* comment"))
    ex = _Extractor(text, orig_len, relpath, cut_at, diags)
    structs = ex.structs(tree.root_node)
    constants = ex.constants(tree.root_node)
    if cut_at is not None and text.rstrip():
        open_names = ex.open_struct_names
        if open_names:
            diags.append(
                Diagnostic(
                    relpath,
                    cut_at,
                    f"cut: file ends at line {cut_at} inside {open_names[-1]}; "
                    f"still open: {', '.join(open_names)}; members after this line are missing",
                )
            )
        elif bal.open_braces:
            inner = bal.open_braces[-1]
            ls = text.rfind(b"\n", 0, inner) + 1
            le = text.find(b"\n", inner)
            snippet = norm(text[ls : le if le >= 0 else len(text)])[:60]
            diags.append(
                Diagnostic(
                    relpath,
                    cut_at,
                    f"{len(bal.open_braces)} '{{' never closed (innermost at line "
                    f"{_line_of(text, inner)}: {snippet}); a '}}' is missing or the file is cut",
                )
            )
    return structs, constants, diags


def _error_at_end(root) -> bool:
    """True if an ERROR or MISSING node lies on the tree's rightmost path (a cut-off file)."""
    n = root
    while n is not None and n.child_count:
        kids = [c for c in n.children if c.type != "comment"]
        if not kids:
            return False
        n = kids[-1]
        if n.is_error or n.is_missing:
            return True
    return False


def _word_start(text: bytes, i: int) -> int:
    while i > 0 and text[i - 1] in _WORD:
        i -= 1
    return i


def _line_of(text: bytes, off: int) -> int:
    return text.count(b"\n", 0, off) + 1


def _last_content_line(text: bytes) -> int:
    end = len(text.rstrip())
    return text.count(b"\n", 0, end) + 1 if end else 1


_WS_RE = re.compile(r"\s+")
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def norm(raw: bytes) -> str:
    """Source text on one line: comments dropped, whitespace runs collapsed to one space."""
    s = raw.decode("utf-8", "replace")
    if "/" in s:
        s = _COMMENT_RE.sub(" ", s)
    s = _WS_RE.sub(" ", s).strip()
    return s.replace("( ", "(").replace(" )", ")")


class _Extractor:
    def __init__(self, text: bytes, orig_len: int, relpath: str, cut_at, diags):
        self.text = text
        self.orig_len = orig_len
        self.relpath = relpath
        self.cut_at = cut_at
        self.diags = diags
        self.open_struct_names: list[str] = []

    # -- structs ------------------------------------------------------------------------------
    def structs(self, root) -> list[Struct]:
        out: list[Struct] = []
        seen: set[int] = set()
        text = self.text
        for m in _STORAGE_RE.finditer(text):
            if m.start() >= self.orig_len:
                break
            s, e = _word_start(text, m.start()), m.end()
            before = _STRUCT_BEFORE_RE.search(text, max(0, s - 160), e)
            if before is None or before.end() != e:
                continue
            kw = before.group("kw").decode()
            name = text[s:e].decode()
            if name.endswith(_NOT_STORAGE_SUFFIXES):
                continue
            node = root.named_descendant_for_byte_range(s, e)
            if node is None:
                continue
            spec = node.parent
            if node.type == "template_type" or (spec is not None and spec.type == "template_type"):
                spec = node.parent if node.type == "template_type" else spec.parent
            if spec is None or spec.type not in _SPECIFIERS or spec.child_by_field_name("body") is None:
                self._maybe_lost(node, kw, name, e)
                continue
            if spec.start_byte in seen:
                continue
            seen.add(spec.start_byte)
            if _has_storage_ancestor(spec):
                continue  # reported as a child of the outer storage struct
            scopes = _scopes(spec, allow_function=True)
            assert scopes is not None  # allow_function: never None
            st = self._struct(spec, scopes)
            out.append(st)
            self._report_errors(spec, st)
        return out

    def _maybe_lost(self, node, kw: str, name: str, end: int) -> None:
        """A ``struct XStorage ... {`` the tree does not hold as a struct: say so, if real code."""
        if node.type in (
            "comment",
            "string_literal",
            "raw_string_literal",
            "preproc_arg",
            "char_literal",
            "system_lib_string",
            "string_content",
        ):
            return
        rest = self.text[end : end + 400]
        brace = re.match(rb"\s*(?:final\s*)?(?::[^;{}()]*(?:\([^;{}]*\)[^;{}]*)*)?\{", rest)
        if not brace:
            return  # forward declaration or elaborated type (struct X& s)
        anc, in_err = node, False
        while anc is not None:
            if anc.type == "ERROR":
                in_err = True
                break
            if anc.type in ("preproc_arg", "preproc_def", "preproc_function_def"):
                return
            anc = anc.parent
        if in_err:
            line = node.start_point[0] + 1
            self.diags.append(
                Diagnostic(
                    self.relpath,
                    line,
                    f"{kw} {name} not recovered: it lies inside a parse error",
                )
            )

    def _struct(self, spec, scopes: list[Scope], condition: str | None = None) -> Struct:
        name_node = spec.child_by_field_name("name")
        name, _args = _name_and_args(name_node)
        body = spec.child_by_field_name("body")
        kind = spec.type.split("_")[0]
        bases: list[str] = []
        alignas = None
        for ch in spec.named_children:
            if ch.type == "base_class_clause":
                for b in ch.named_children:
                    if b.type not in ("access_specifier", "virtual", "comment"):
                        bases.append(norm(b.text))
            elif ch.type == "alignas_qualifier":
                alignas = _alignas_arg(ch)
            elif ch.type == "attribute_declaration" or ch.type == "type_qualifier":
                a = _find_alignas(ch)
                if a is not None:
                    alignas = a
        qual = "::".join([sc.name for sc in scopes] + [name or "(anonymous)"])
        cut = self._is_cut(body)
        st = Struct(
            name=name,
            qualified_name=qual,
            file=self.relpath,
            line=spec.start_point[0] + 1,
            end_line=(self.cut_at if cut else body.end_point[0] + 1),
            kind=kind,
            bases=bases,
            alignas=alignas,
            cut=cut,
            condition=condition,
            enclosing=scopes,
        )
        if cut:
            self.open_struct_names.append(qual)
        inner = scopes + [Scope(kind, name or "(anonymous)", None)]
        self._members(body, st, inner, [])
        return st

    def _is_cut(self, body) -> bool:
        if body.end_byte > self.orig_len:
            return True
        last = body.child(body.child_count - 1) if body.child_count else None
        return last is not None and last.type == "}" and last.is_missing

    def _members(self, node, st: Struct, scopes, conds: list[str]) -> None:
        for ch in node.children:
            if ch.start_byte >= self.orig_len:
                break
            self._member(ch, st, scopes, conds)

    def _preproc(self, node, st: Struct, scopes, base: list[str]) -> None:
        """One #if/#ifdef/#elif/#else branch; ``base`` holds the conditions outside the chain."""
        terms = base + _branch_terms(node, own=True)
        alternative = node.child_by_field_name("alternative")
        for ch in node.children:
            if ch.start_byte >= self.orig_len:
                break
            if alternative is not None and ch.start_byte == alternative.start_byte and ch.type == alternative.type:
                self._preproc(ch, st, scopes, base)
            else:
                self._member(ch, st, scopes, terms)

    def _member(self, ch, st: Struct, scopes, conds: list[str]) -> None:
        t = ch.type
        if t == "field_declaration" or t == "declaration":  # "declaration" shows up in #if branches
            self._field_decl(ch, st, scopes, conds)
        elif t in _PREPROC:
            self._preproc(ch, st, scopes, conds)
        elif t == "alias_declaration":
            n, ty = ch.child_by_field_name("name"), ch.child_by_field_name("type")
            if n is not None and ty is not None:
                st.aliases.append(
                    Field(
                        n.text.decode(),
                        norm(ty.text),
                        line=ch.start_point[0] + 1,
                        condition=" && ".join(conds) if conds else None,
                    )
                )
        elif t == "type_definition":
            ty = ch.child_by_field_name("type")
            for d in ch.children_by_field_name("declarator"):
                name, extent, ptr, _fn = _unwrap_declarator(d)
                if name is not None and ty is not None:
                    st.aliases.append(
                        Field(
                            name,
                            norm(ty.text) + ptr,
                            extent=extent,
                            line=ch.start_point[0] + 1,
                            condition=" && ".join(conds) if conds else None,
                        )
                    )

    def _field_decl(self, decl, st: Struct, scopes, conds: list[str]) -> None:
        specs_text: list[str] = []
        alignas = None
        typ = decl.child_by_field_name("type")
        is_static = False
        for ch in decl.children:
            t = ch.type
            if t == "storage_class_specifier":
                if ch.text in (b"static", b"extern", b"typedef"):
                    is_static = True
            elif t == "type_qualifier":
                a = _find_alignas(ch)
                if a is not None:
                    alignas = a
                else:
                    specs_text.append(norm(ch.text))
            elif t == "alignas_qualifier":
                alignas = _alignas_arg(ch)
            elif t == "attribute_declaration":
                a = _find_alignas(ch)
                if a is not None:
                    alignas = a
        if is_static or typ is None:
            return
        condition = " && ".join(conds) if conds else None
        declarators = decl.children_by_field_name("declarator")
        if typ.type in _SPECIFIERS and typ.child_by_field_name("body") is not None:
            child = self._struct(typ, scopes, condition)
            st.children.append(child)
            kw = typ.type.split("_")[0]
            type_text = child.name if child.name else f"{kw} (anonymous)"
        else:
            type_text = norm(typ.text)
        if specs_text:
            type_text = " ".join(specs_text + [type_text])
        for d in declarators:
            name, extent, ptr, is_fn = _unwrap_declarator(d)
            if is_fn or name is None:
                continue
            st.fields.append(
                Field(
                    name=name,
                    type=type_text + ptr,
                    alignas=alignas,
                    extent=extent,
                    line=d.start_point[0] + 1,
                    condition=condition,
                )
            )

    def _report_errors(self, spec, st: Struct) -> None:
        if not spec.has_error:
            return
        found: list[int] = []
        stack = [spec]
        while stack and len(found) < _MAX_ERRORS_PER_STRUCT:
            n = stack.pop()
            if n.start_byte >= self.orig_len:
                continue
            if n.is_error or (
                n.is_missing and n.start_byte < self.orig_len and not (self.cut_at is not None and n.type in ("}", ";"))
            ):
                line = n.start_point[0] + 1
                if line not in found:
                    found.append(line)
                continue
            stack.extend(c for c in reversed(n.children) if c.has_error or c.is_missing)
        for line in sorted(found):
            self.diags.append(
                Diagnostic(
                    self.relpath,
                    line,
                    f"parse error inside {st.kind} {st.qualified_name} (opened at line {st.line}); "
                    "fields there may be missing",
                )
            )

    # -- constants ----------------------------------------------------------------------------
    def constants(self, root) -> list[ScanConstant]:
        out: list[ScanConstant] = []
        seen: set[int] = set()
        text = self.text
        for m in _CONST_HIT_RE.finditer(text):
            s = _word_start(text, m.start())
            e = m.start()
            while e < len(text) and text[e] in _WORD:
                e += 1
            if s >= self.orig_len:
                break
            if not CONSTANT_NAME_RE.match(text[s:e].decode("ascii", "replace")):
                continue
            node = root.named_descendant_for_byte_range(s, e)
            if node is None or node.type not in ("identifier", "field_identifier"):
                continue
            c = self._constant(node)
            if c is not None and node.start_byte not in seen:
                seen.add(node.start_byte)
                out.append(c)
        return out

    def _constant(self, ident) -> ScanConstant | None:
        holder = ident.parent
        if holder is None:
            return None
        if holder.type == "init_declarator":
            value = holder.child_by_field_name("value")
            decl = holder.parent
        elif holder.type == "field_declaration":
            value = holder.child_by_field_name("default_value")
            decl = holder
        else:
            return None
        if value is None or decl is None or decl.type not in ("declaration", "field_declaration"):
            return None
        if not any(ch.type == "type_qualifier" and ch.text in (b"constexpr", b"const") for ch in decl.children):
            return None
        scopes = _scopes(decl)
        if scopes is None:
            return None  # a function-local constant
        braced = value.type == "initializer_list"
        if braced and value.named_child_count == 1:
            value = value.named_children[0]
        name = ident.text.decode()
        typ = decl.child_by_field_name("type")
        typ_text = norm(typ.text) if typ is not None else None
        number, problem = typed_value(value, typ_text, braced)
        line = ident.start_point[0] + 1
        if problem is not None:
            self.diags.append(Diagnostic(self.relpath, line, f"constant {name} = {norm(value.text)}: {problem}"))
        return ScanConstant(
            name=name,
            qualified_name="::".join([sc.name for sc in scopes] + [name]),
            file=self.relpath,
            line=line,
            type=typ_text,
            expression=norm(value.text),
            value=number,
            enclosing=scopes,
        )


def _name_and_args(name_node) -> tuple[str, str | None]:
    if name_node is None:
        return "", None
    if name_node.type == "template_type":
        n = name_node.child_by_field_name("name")
        a = name_node.child_by_field_name("arguments")
        args = None
        if a is not None:
            args = norm(a.text)
            if args.startswith("<") and args.endswith(">"):
                args = "<" + args[1:-1].strip() + ">"
        return (n.text.decode() if n is not None else norm(name_node.text), args)
    return norm(name_node.text), None


def _alignas_arg(node) -> str | None:
    raw = node.text
    i, j = raw.find(b"("), raw.rfind(b")")
    if i < 0 or j <= i:
        return None
    return norm(raw[i + 1 : j])


def _find_alignas(node) -> str | None:
    if node.type == "alignas_qualifier":
        return _alignas_arg(node)
    for ch in node.named_children:
        if ch.type == "alignas_qualifier":
            return _alignas_arg(ch)
    return None


def _unwrap_declarator(d) -> tuple[str | None, str | None, str, bool]:
    """(name, extent, pointer suffix, is a function) of a member declarator."""
    sizes: list[str] = []
    ptr = ""
    while d is not None:
        t = d.type
        if t == "field_identifier" or t == "identifier":
            extent = "][".join(reversed(sizes)) if sizes else None
            return d.text.decode(), extent, ptr, False
        if t == "function_declarator":
            return None, None, "", True
        if t == "array_declarator":
            size = d.child_by_field_name("size")
            sizes.append(norm(size.text) if size is not None else "")
            d = d.child_by_field_name("declarator")
        elif t == "pointer_declarator":
            ptr += "*"
            d = d.child_by_field_name("declarator")
        elif t == "reference_declarator":
            ptr += "&"
            d = d.named_children[-1] if d.named_child_count else None
        elif t in ("parenthesized_declarator", "attributed_declarator", "init_declarator"):
            d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_child_count else None)
        else:
            return None, None, "", False
    return None, None, "", False


def _cond_text(node) -> str:
    """Condition of one #if/#ifdef/#ifndef/#elif branch header, as text."""
    if node.type in ("preproc_ifdef", "preproc_elifdef"):
        name = node.child_by_field_name("name")
        neg = node.child(0) is not None and node.child(0).type in ("#ifndef", "#elifndef")
        n = name.text.decode() if name is not None else "?"
        return f"!defined({n})" if neg else f"defined({n})"
    cond = node.child_by_field_name("condition")
    return norm(cond.text) if cond is not None else "?"


def _branch_terms(node, own: bool) -> list[str]:
    """Conjunction terms selecting branch ``node`` of an #if chain (``own=False``: the terms
    saying that neither ``node`` nor an earlier branch of its chain was taken)."""
    t = node.type
    parent = node.parent
    if t in ("preproc_if", "preproc_ifdef"):
        return [_cond_text(node) if own else f"!({_cond_text(node)})"]
    if t in ("preproc_elif", "preproc_elifdef"):
        prior = _branch_terms(parent, own=False) if parent is not None else []
        return prior + [_cond_text(node) if own else f"!({_cond_text(node)})"]
    if t == "preproc_else":
        return _branch_terms(parent, own=False) if parent is not None else []
    return []


def _scopes(node, allow_function: bool = False) -> list[Scope] | None:
    """Enclosing namespaces, classes (and functions), outermost first.

    Returns None for a node inside a function body unless ``allow_function``; then the
    function shows up as a scope of kind ``function`` named ``name()``.
    """
    out: list[Scope] = []
    p = node.parent
    while p is not None:
        t = p.type
        if t == "namespace_definition":
            n = p.child_by_field_name("name")
            out.append(Scope("namespace", norm(n.text) if n is not None else "(anonymous namespace)", None))
        elif t in _SPECIFIERS:
            name, args = _name_and_args(p.child_by_field_name("name"))
            out.append(Scope(t.split("_")[0], name or "(anonymous)", args))
        elif t in ("function_definition", "lambda_expression"):
            if not allow_function:
                return None
            d = p.child_by_field_name("declarator")
            while d is not None and d.type != "function_declarator":
                d = d.child_by_field_name("declarator")
            fn = d.child_by_field_name("declarator") if d is not None else None
            out.append(Scope("function", (norm(fn.text) if fn is not None else "(lambda)") + "()", None))
        elif t == "compound_statement" and not allow_function:
            return None
        p = p.parent
    out.reverse()
    return out


def _has_storage_ancestor(spec) -> bool:
    p = spec.parent
    while p is not None:
        if p.type in _SPECIFIERS:
            n = p.child_by_field_name("name")
            if n is not None and b"Storage" in n.text and p.child_by_field_name("body") is not None:
                return True
        p = p.parent
    return False
