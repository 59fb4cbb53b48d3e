"""Scans (tree-sitter, declarations as the headers write them; no sizes, no compiler):
:class:`Scope`, :class:`Field`, :class:`Struct`, :class:`ScanConstant`, :class:`Diagnostic`,
:class:`ScanResult`, whose ``to_dict`` is ``scan --json`` (schema :data:`SCAN_SCHEMA`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .serde import plain

#: Version of the ``scan --json`` schema. Bumped on incompatible changes.
SCAN_SCHEMA = "cutlass-layout/scan/1"


@dataclass
class Scope:
    """One enclosing scope: ``kind`` is namespace, struct, class, union or function.

    ``template_args`` is the text of a partial specialization's argument list
    (``<MainloopSm90TmaGmmaWarpSpecialized<...>, ...>``), which tells the many
    ``CollectiveMma``/``GemmUniversal`` specializations apart; None otherwise.
    """

    kind: str
    name: str
    template_args: str | None = None

    @property
    def short_name(self) -> str:
        """The name with its template arguments abbreviated (:func:`abbrev_args`)."""
        return self.name + abbrev_args(self.template_args)


def short_name(spelling: str) -> str:
    """Shorten a C++ type's template arguments: ``A<x, B<y>>::S`` -> ``A<...>::S``."""
    out, depth = [], 0
    for ch in spelling:
        if ch == "<":
            if depth == 0:
                out.append("<...>")
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def abbrev_args(args: str | None) -> str:
    """``<Mainloop<A, B>, X, Y>`` -> ``<Mainloop<…>, …>``; ``""`` for none."""
    if not args:
        return ""
    inner = args.strip()[1:-1].strip()
    depth, first = 0, inner
    for i, ch in enumerate(inner):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            first = inner[:i] + ", …"
            break
    head, rest = first.split(", …")[0], ", …" if first.endswith(", …") else ""
    if "<" in head:
        head = head[: head.index("<")] + "<…>"
    return f"<{head}{rest}>"


@dataclass
class Field:
    """A data member, in declaration order.

    ``type`` is the declared type as written (whitespace collapsed; the struct's name for a
    member declared with an inline struct, ``union (anonymous)`` for an unnamed one);
    ``alignas`` the text inside ``alignas(...)``/``CUTE_ALIGNAS(...)``; ``extent`` the text
    between the brackets of an array (``"3][4"`` for ``[3][4]``); ``condition`` the ``#if``
    condition(s) guarding it, joined with ``&&``; ``line`` is 1-based.
    """

    name: str
    type: str
    alignas: str | None = None
    extent: str | None = None
    line: int = 0
    condition: str | None = None


@dataclass
class Struct:
    """A storage struct or union (or a struct nested in one).

    ``line``/``end_line`` are the 1-based lines of the keyword and of the closing brace (for a
    ``cut`` struct: the last line of the file). ``qualified_name`` joins the enclosing
    namespaces and classes with ``::`` without template arguments
    (``cutlass::gemm::collective::CollectiveMma::SharedStorage``); ``enclosing`` keeps them with
    their arguments. ``cut`` is True when the file ends before the closing brace.
    ``aliases`` holds the member ``using``/``typedef`` declarations (as :class:`Field` with
    ``name``, ``type`` = the aliased type, ``line``), which say what a field's type stands
    for (``using MainloopTensorStorage = typename CollectiveMainloop::TensorStorage``).
    """

    name: str
    qualified_name: str
    file: str
    line: int
    end_line: int
    kind: str = "struct"
    bases: list[str] = field(default_factory=list)
    alignas: str | None = None
    cut: bool = False
    condition: str | None = None
    enclosing: list[Scope] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    children: list[Struct] = field(default_factory=list)
    aliases: list[Field] = field(default_factory=list)

    def walk(self):
        """Yield this struct and every nested struct, depth first."""
        yield self
        for c in self.children:
            yield from c.walk()

    def to_dict(self) -> dict:
        """The struct as one entry of the scan JSON's ``structs`` (aliases without
        ``alignas``/``extent``)."""
        d = {n: plain(getattr(self, n)) for n in _STRUCT_OWN}
        d["children"] = [c.to_dict() for c in self.children]
        d["aliases"] = [
            {"name": a.name, "type": a.type, "line": a.line, "condition": a.condition} for a in self.aliases
        ]
        return d


#: :class:`Struct`'s fields but its children and aliases, which :meth:`Struct.to_dict` adds.
_STRUCT_OWN = tuple(f.name for f in fields(Struct) if f.name not in ("children", "aliases"))


@dataclass
class ScanConstant:
    """A transaction-byte, stage-count or capacity constant.

    ``expression`` is the initializer text (whitespace collapsed); ``value`` its integer value
    (bytes for ``*_smem_capacity_bytes`` and ``TmaTransactionBytes*``) when the expression is
    a literal or a sum/difference/product of literals, else None.
    """

    name: str
    qualified_name: str
    file: str
    line: int
    expression: str
    value: int | None = None
    type: str | None = None
    enclosing: list[Scope] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The constant as one entry of the scan JSON's ``constants``."""
        d = plain(self)
        return {k: d[k] for k in ("name", "qualified_name", "file", "line", "type", "expression", "value", "enclosing")}


@dataclass
class Diagnostic:
    """Something the scan could not read cleanly: ``file`` (relative), 1-based ``line``."""

    file: str
    line: int
    message: str


@dataclass(repr=False)
class ScanResult:
    """Everything found under ``root``, sorted by file and line.

    ``files_scanned`` counts headers looked at, ``files_parsed`` those that passed the byte
    prefilter and were parsed; ``seconds`` is the wall time of the scan.
    """

    root: str
    structs: list[Struct] = field(default_factory=list)
    constants: list[ScanConstant] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_scanned: int = 0
    files_parsed: int = 0
    source: str | None = None
    seconds: float = 0.0

    def files(self) -> list[str]:
        """Relative paths of the files holding a struct, constant or diagnostic, sorted."""
        return sorted(
            {s.file for s in self.structs} | {c.file for c in self.constants} | {d.file for d in self.diagnostics}
        )

    def __repr__(self) -> str:
        return (
            f"<ScanResult {self.root}: {self.files_scanned} headers, {len(self.structs)} "
            f"storage structs, {len(self.constants)} constants, {len(self.diagnostics)} "
            "diagnostics>"
        )

    def to_dict(self, file_only: bool = False) -> dict:
        """The documented ``scan --json`` object (schema :data:`SCAN_SCHEMA`): ``schema``,
        ``root``, ``source``, ``files_scanned``, ``files_parsed``, then ``structs``,
        ``constants`` and ``diagnostics`` (or only ``files`` with ``file_only``). Lines are
        1-based; paths relative to ``root``; ``value`` an integer or null."""
        out: dict[str, Any] = {
            "schema": SCAN_SCHEMA,
            "root": self.root,
            "source": self.source,
            "files_scanned": self.files_scanned,
            "files_parsed": self.files_parsed,
        }
        if file_only:
            out["files"] = self.files()
            return out
        out["structs"] = [s.to_dict() for s in self.structs]
        out["constants"] = [c.to_dict() for c in self.constants]
        out["diagnostics"] = [plain(d) for d in self.diagnostics]
        return out
