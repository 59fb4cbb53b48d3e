"""The readable listing of a :class:`~cutlass_layout.model.ScanResult` (``cutlass-layout
scan``): per file, each storage struct as C++-like text with line numbers, then the
constants, then the diagnostics."""

from __future__ import annotations

from typing import Any

from ..model import Field, ScanResult, Struct


def _render_struct(s: Struct, indent: int, lines: list[str], open_only: bool = False) -> None:
    pad = "  " * indent
    head = f"{s.kind} "
    if s.alignas:
        head += f"alignas({s.alignas}) "
    head += s.name or "(anonymous)"
    if s.bases:
        head += " : " + ", ".join(s.bases)
    note = f"  // #if {s.condition}" if s.condition else ""
    lines.append(f"{s.line:6d}  {pad}{head} {{{note}")
    items: list[tuple[int, int, Any]] = (
        [(f.line, 1, f) for f in s.fields]
        + [(c.line, 0, c) for c in s.children]
        + [(a.line, 2, ("alias", a)) for a in s.aliases]
    )
    items.sort(key=lambda t: (t[0], t[1]))
    merged: set[int] = set()
    for i, (_line, _k, item) in enumerate(items):
        if i in merged:
            continue
        if isinstance(item, Struct):
            _render_struct(item, indent + 1, lines, open_only=True)
            # "} tensors;": the fields declared with the inline struct
            decls = [
                j
                for j in range(i + 1, len(items))
                if isinstance(items[j][2], Field)
                and items[j][2].line == item.end_line
                and items[j][2].type == (item.name or f"{item.kind} (anonymous)")
            ]
            if item.cut:
                continue
            names = ", ".join(_declarator(items[j][2]) for j in decls)
            merged.update(decls)
            closing = f"}} {names};" if names else "};"
            lines.append(f"{item.end_line:6d}  {pad}  {closing}")
            continue
        if isinstance(item, tuple):
            a = item[1]
            cond = f"  // #if {a.condition}" if a.condition else ""
            lines.append(f"{a.line:6d}  {pad}  using {a.name} = {a.type};{cond}")
            continue
        f = item
        decl = (f"alignas({f.alignas}) " if f.alignas else "") + f"{f.type} {_declarator(f)}"
        cond = f"  // #if {f.condition}" if f.condition else ""
        lines.append(f"{f.line:6d}  {pad}  {decl};{cond}")
    if s.cut:
        lines.append(f"{s.end_line:6d}  {pad}  … CUT: the file ends here, inside {s.name or 'this struct'}")
    elif not open_only:
        lines.append(f"{s.end_line:6d}  {pad}}};")


def _declarator(f: Field) -> str:
    return f.name + (f"[{f.extent}]" if f.extent is not None else "")


def render_text(result: ScanResult, file_only: bool = False) -> str:
    """A readable listing: per file, each storage struct as C++-like text with line numbers,
    then the constants (``= value`` where known), then diagnostics as ``file:line: message``."""
    if file_only:
        return "\n".join(result.files()) + ("\n" if result.files() else "")
    lines: list[str] = []
    n_structs = sum(1 for s in result.structs for _ in s.walk())
    lines.append(f"root: {result.root}" + (f"  ({result.source})" if result.source else ""))
    lines.append(
        f"{result.files_scanned} headers, {result.files_parsed} parsed, "
        f"{len(result.structs)} storage structs ({n_structs} with nested), "
        f"{len(result.constants)} constants, {len(result.diagnostics)} diagnostics, "
        f"{result.seconds:.2f} s"
    )
    by_file: dict[str, list] = {}
    for s in result.structs:
        by_file.setdefault(s.file, []).append((s.line, 0, s))
    for c in result.constants:
        by_file.setdefault(c.file, []).append((c.line, 1, c))
    for f in sorted(by_file):
        lines.append("")
        lines.append(f)
        last_scope = None
        for _line, _k, item in sorted(by_file[f], key=lambda t: (t[0], t[1])):
            scope = "::".join(e.short_name for e in item.enclosing)
            if scope != last_scope:
                lines.append(f"  in {scope or '(global scope)'}")
                last_scope = scope
            if isinstance(item, Struct):
                _render_struct(item, 1, lines)
            else:
                val = f"  = {item.value}" if item.value is not None else ""
                typ = f"{item.type} " if item.type else ""
                lines.append(f"{item.line:6d}    {typ}{item.name} = {item.expression};{val}")
    if result.diagnostics:
        lines.append("")
        lines.append("diagnostics:")
        for d in result.diagnostics:
            lines.append(f"  {d.file}:{d.line}: {d.message}")
    if not result.structs and not result.constants:
        lines.append("")
        lines.append("no storage structs or constants found")
    return "\n".join(lines) + "\n"


__all__ = ["render_text"]
