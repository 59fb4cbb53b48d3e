"""What the reports share: one table written as a terminal table or as Markdown, and the name
of a source as the user gave it.

A table is a list of :class:`Column` and rows of plain text cells (or ``(text, style)``
pairs: a style such as ``"red"`` for the terminal, which Markdown leaves out). :func:`rich_table` never
narrows a numeric (or any non-wrapping) column below its widest cell: only the one column
marked ``wrap`` (a C++ type, a tactic's name) folds onto more lines when the terminal is
narrow. :func:`markdown_table` writes the same table in GitHub's Markdown, code-like cells in
backticks (so ``cute::array<T, 4>`` is not read as HTML) and ``|`` escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Attributes:
        header: its heading.
        right: right-aligned (numbers).
        wrap: the column that folds onto more lines when the table is too wide (at most one
            per table; the others keep the width of their widest cell).
        code: in Markdown, the cells are code (backticks): types, file names, member names.
    """

    header: str
    right: bool = False
    wrap: bool = False
    code: bool = False


def rich_table(columns: list[Column], rows: list[list[str]], *, title: str | None = None,
               styles: list[str | None] | None = None, last_bold: bool = False):
    """A :class:`rich.table.Table` of ``rows`` (cells are plain text, never markup, or
    ``(text, style)``).

    ``styles`` gives each row a style (``"red"``, ``None``); ``last_bold`` sets the last row
    in bold (a ``sizeof`` line). Every column but the ``wrap`` one is at least as wide as its
    widest cell, so a narrow terminal folds the wrapping column instead of dropping numbers.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for i, c in enumerate(columns):
        widest = max([len(c.header)] + [len(_text(r[i])) for r in rows])
        if c.wrap:
            t.add_column(c.header, overflow="fold", ratio=1, min_width=min(widest, 10))
        else:
            t.add_column(c.header, justify="right" if c.right else "left", no_wrap=True,
                         min_width=widest)
    for n, r in enumerate(rows):
        style = styles[n] if styles else None
        if last_bold and n == len(rows) - 1:
            style = "bold"
        t.add_row(*(Text(x[0], style=x[1] or "") if isinstance(x, tuple) else Text(x)
                    for x in r), style=style)
    return t


def print_table(console, table) -> None:
    """Print a table of :func:`rich_table` on ``console``: where the terminal is narrower
    than its narrowest form (every number whole, the wrapping column folded), the lines are
    printed whole (the terminal wraps them) rather than a column cut."""
    from rich.console import Console
    from rich.measure import Measurement

    need = Measurement.get(console, console.options.update_width(100_000), table).minimum
    if need <= console.width:
        console.print(table)
        return
    wide = Console(width=need, file=console.file, color_system=console.color_system,
                   force_terminal=console.is_terminal, highlight=False, soft_wrap=True)
    wide.print(table)


def _text(cell) -> str:
    return cell[0] if isinstance(cell, tuple) else cell


def md_cell(text: str, code: bool = False) -> str:
    """One Markdown table cell: ``|`` escaped, newlines as spaces; ``code`` cells in
    backticks (empty stays empty)."""
    text = " ".join(str(text).split()) if text is not None else ""
    if not text:
        return ""
    if code:
        ticks = "``" if "`" in text else "`"
        return f"{ticks}{text}{ticks}".replace("|", "\\|")
    return text.replace("|", "\\|")


def markdown_table(columns: list[Column], rows: list[list[str]]) -> str:
    """The table in GitHub-flavoured Markdown (numbers right-aligned), ending in a newline."""
    head = "| " + " | ".join(md_cell(c.header) for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.right else "---" for c in columns) + "|"
    body = ["| " + " | ".join(md_cell(_text(x), c.code) for x, c in zip(r, columns)) + " |"
            for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


_WHEEL = re.compile(r"(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*)-.*\.whl$")


def source_name(origin: str | None, cutlass_version: str | None = None) -> str:
    """The source as the user gave it, for a title: ``flashinfer-python 0.7.2.post1 (CUTLASS
    4.5.0)`` for ``flashinfer-python==0.7.2.post1`` or its wheel, the directory for a tree,
    the distribution for an installed one (``origin`` as
    :func:`cutlass_layout.sources.resolve_cutlass` writes it)."""
    origin = origin or ""
    name = origin
    m = re.match(r"(?:default )?([A-Za-z0-9_.-]+)==(\S+)", origin)
    if m:
        name = f"{m.group(1)} {m.group(2)}"
    elif origin.startswith("wheel "):
        w = _WHEEL.search(origin.split("/")[-1])
        name = f"{w.group('name').replace('_', '-')} {w.group('version')}" if w else origin[6:]
    elif origin.startswith("directory "):
        name = origin[len("directory "):]
    elif origin.startswith("installed "):
        name = origin[len("installed "):]
    cut = f"CUTLASS {cutlass_version}" if cutlass_version else ""
    if not name:
        return cut
    return f"{name} ({cut})" if cut else name


__all__ = ["Column", "markdown_table", "md_cell", "print_table", "rich_table", "source_name"]
