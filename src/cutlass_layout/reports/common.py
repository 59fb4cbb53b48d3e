"""What the reports share: one table written as a terminal table or as Markdown, and the name
of a source as the user gave it.

A table is a list of :class:`Column` and rows of plain text cells (or ``(text, style)``
pairs: a style such as ``"red"`` for the terminal, which Markdown leaves out). :func:`rich_table` never
narrows a numeric (or any non-wrapping) column below its widest cell: only the one column
marked ``wrap`` (a C++ type, a tactic's name) folds onto more lines when the terminal is
narrow. :func:`json_text` writes a result's JSON as ``json.dumps(doc, indent=2)`` does, fast.
:func:`markdown_table` writes the same table in GitHub's Markdown, code-like cells in
backticks (so ``cute::array<T, 4>`` is not read as HTML) and ``|`` escaped. The lines that
say what a preset's numbers approximate (:func:`approximation_head`,
:func:`approximation_lines`) are shared by the layout and sweep reports.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..model import Verdict

#: Where a JSON number orjson may spell otherwise than ``json.dumps`` can begin or go on:
#: one under 1e-4 (orjson writes ``0.00003`` and ``1e-7``; ``json.dumps``, ``3e-05`` and
#: ``1e-07``) or one with an exponent (both write ``1e+16``, but the one test covers all).
_SPELLED_OTHERWISE = (re.compile(rb"e[-+][0-9]"), re.compile(rb"0\.0000"))
_NUMBER_BYTES = frozenset(b"0123456789.-")


def _has_such_number(out: bytes) -> bool:
    """Whether indented JSON text ``out`` has a number that :data:`_SPELLED_OTHERWISE` finds:
    the match's token (digits, ``.``, ``-`` before it) starts the text, follows ``": "`` or
    an indented line's spaces. Text inside a string that only looks like one counts too
    (the caller then writes the document the slow way, which is the same text)."""
    for pattern in _SPELLED_OTHERWISE:
        for m in pattern.finditer(out):  # a literal first: a fast scan
            start = m.start()
            while start and out[start - 1] in _NUMBER_BYTES:
                start -= 1
            if (
                start == 0
                or out[start - 2 : start] == b": "
                or out[start - 1] == 0x20
                and out[out.rfind(b"\n", 0, start) + 1 : start].strip(b" ") == b""
            ):
                return True
    return False


def json_text(doc) -> str:
    """``json.dumps(doc, indent=2)``, byte for byte, without the standard library's pure-Python
    encoder (it is the one ``indent`` picks), which was a visible share of writing a whole
    install's audit JSON (measured: docs/performance.md).

    orjson (``OPT_INDENT_2``) writes the same text wherever the document is ASCII and has no
    number under 1e-4 or with an exponent; anything else (non-ASCII text, which ``json.dumps``
    escapes; such a number, which the two spell differently; an integer past 64 bits; a key
    orjson refuses) is written by ``json.dumps``, which also raises what it raises
    (``TypeError``, ``ValueError``) for what JSON cannot hold. One difference is left: a NaN or infinite float is ``null``
    (``json.dumps`` writes ``NaN``, which is not JSON); no result of this tool holds one.
    """
    try:
        import orjson

        out = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except (ImportError, TypeError, ValueError):
        return json.dumps(doc, indent=2)
    if not out.isascii() or _has_such_number(out):
        return json.dumps(doc, indent=2)
    return out.decode()


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Attributes:
        header: its heading.
        right: right-aligned (numbers).
        wrap: the column that folds onto more lines when the table is too wide (at most one
            per table; the others keep the width of their widest cell).
        code: in Markdown, the cells are code (backticks): types, file names, member names.
        drop: how early a terminal too narrow for the table leaves the column out (0: never;
            a higher one goes first; :func:`print_table`).
    """

    header: str
    right: bool = False
    wrap: bool = False
    code: bool = False
    drop: int = 0


VERDICT_TEXT = {
    Verdict.FITS: "fits",
    Verdict.EXACT_FIT: "exact fit",
    Verdict.OVER_CAPACITY: "over capacity",
    Verdict.DOES_NOT_COMPILE: "does not compile",
}


def verdict_words(verdict: Verdict) -> str:
    """A verdict (``over_capacity``) in the tables' words (``over capacity``): every table
    (audit, library audit, sweep, diff) spells it so; JSON and CSV keep the value."""
    return VERDICT_TEXT.get(verdict, str(verdict))


#: The width a wrapping column (a tactic's name, a C++ type) keeps while columns are left
#: out to fit a terminal: narrower than this, a column goes before the name folds further.
WRAP_KEEP = 20


def rich_table(
    columns: list[Column],
    rows: list[list[str]],
    *,
    title: str | None = None,
    styles: list[str | None] | None = None,
    last_bold: bool = False,
    wrap_max: int | None = None,
):
    """A :class:`rich.table.Table` of ``rows`` (cells are plain text, never markup, or
    ``(text, style)``).

    ``styles`` gives each row a style (``"red"``, ``None``); ``last_bold`` sets the last row
    in bold (a ``sizeof`` line). Every column but the ``wrap`` one is at least as wide as its
    widest cell, so a narrow terminal folds the wrapping column instead of dropping numbers;
    ``wrap_max`` caps the wrapping column's width (it folds there). The table keeps
    ``fit_spec`` (its columns, rows and options), which :func:`print_table` remakes it from
    with columns left out.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for i, c in enumerate(columns):
        widest = max([len(c.header)] + [len(_text(r[i])) for r in rows])
        if c.wrap:
            t.add_column(
                c.header,
                overflow="fold",
                ratio=1,
                min_width=min(widest, 10),
                max_width=None if wrap_max is None else max(wrap_max, min(widest, 10)),
            )
        else:
            t.add_column(c.header, justify="right" if c.right else "left", no_wrap=True, min_width=widest)
    for n, r in enumerate(rows):
        style = styles[n] if styles else None
        if last_bold and n == len(rows) - 1:
            style = "bold"
        t.add_row(*(Text(x[0], style=x[1] or "") if isinstance(x, tuple) else Text(x) for x in r), style=style)
    setattr(t, "fit_spec", (columns, rows, {"title": title, "styles": styles, "last_bold": last_bold}))
    return t


def _without(spec, gone: set[str], wrap_max: int | None):
    """The table of ``spec`` (a table's ``fit_spec``) without the columns headed ``gone``."""
    columns, rows, options = spec
    keep = [i for i, c in enumerate(columns) if c.header not in gone]
    return rich_table([columns[i] for i in keep], [[r[i] for i in keep] for r in rows], wrap_max=wrap_max, **options)


def _fitted(console, table, need) -> tuple[object, list[str]]:
    """``table`` made to fit ``console.width``: columns left out by their ``drop`` (highest
    first) while the table, its wrapping column at :data:`WRAP_KEEP`, is wider than the
    terminal; then the wrapping column folded to what is left. Returns the table and the
    headers left out (where even all of them out do not make it fit, the narrowest table
    there is: the terminal wraps its lines)."""
    spec = getattr(table, "fit_spec", None)
    if spec is None:
        return table, []
    columns = spec[0]
    order = sorted((c for c in columns if c.drop), key=lambda c: -c.drop)
    gone: list[str] = []
    wraps = any(c.wrap for c in columns)
    cap = WRAP_KEEP if wraps else None
    while order and need(_without(spec, set(gone), cap)) > console.width:
        gone.append(order.pop(0).header)
    t = _without(spec, set(gone), None)
    if wraps:  # fold the name into what the other columns leave
        full = need(t)
        if full > console.width:
            t = _without(spec, set(gone), max(1, _wrap_width(spec) - (full - console.width)))
    return t, gone


def _wrap_width(spec) -> int:
    columns, rows, _ = spec
    i = next(i for i, c in enumerate(columns) if c.wrap)
    return max([len(columns[i].header)] + [len(_text(r[i])) for r in rows])


#: An end of line's spaces, before the terminal's style codes that may close it.
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.M)


def print_table(console, table) -> None:
    """Print a table of :func:`rich_table` on ``console``, no line ending in a space.

    On a terminal narrower than the table, columns are left out by their ``drop`` (lowest
    value last) and the wrapping column folds, and a line under the table names the columns
    left out and that ``--wide`` shows them all. Where nothing makes it fit (every number
    whole, the wrapping column folded), the narrowest table is printed, its lines whole (the
    terminal wraps them), and the line says it is still wider; on a console that is no
    terminal (a pipe, a file: whoever reads it gets every column) the whole table."""
    from rich.console import Console
    from rich.measure import Measurement

    def need(t) -> int:
        return Measurement.get(console, console.options.update_width(100_000), t).minimum

    gone: list[str] = []
    if console.is_terminal and need(table) > console.width:
        table, gone = _fitted(console, table, need)
    width = max(need(table), console.width)
    buf = io.StringIO()
    out = Console(
        width=width,
        color_system=console.color_system,
        force_terminal=console.is_terminal,
        highlight=False,
        soft_wrap=True,
        record=False,
        file=buf,
    )
    out.print(table)
    console.file.write(_TRAILING.sub(r"\1", buf.getvalue()))
    if gone:
        still = need(table) > console.width
        what = (
            f"left out, and still wider than {console.width} columns"
            if still
            else f"left out to fit {console.width} columns"
        )
        console.print(f"({what}: {', '.join(gone)}; --wide shows all)", highlight=False, soft_wrap=True)


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
    body = ["| " + " | ".join(md_cell(_text(x), c.code) for x, c in zip(r, columns)) + " |" for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


_WHEEL = re.compile(r"(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*)-.*\.whl$")


def source_name(
    origin: str | None, cutlass_version: str | None = None, *, library: str | None = None, version: str | None = None
) -> str:
    """The source by distribution and version, for a title; never a local path (a report is
    pasted into a PR): ``flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0)`` for
    ``flashinfer-python==0.7.2.post1`` or its wheel; ``library version`` where the caller
    knows them (an audit's provenance: a site-packages folder's flashinfer-python, a
    checkout's version); the distribution for an installed one; for a directory or checkout
    with no distribution named, ``CUTLASS <version>`` (from the tree's headers) alone.
    ``origin`` is as :func:`cutlass_layout.sources.trees.resolve_cutlass` writes it."""
    origin = origin or ""
    name = ""
    m = re.match(r"(?:default )?([A-Za-z0-9_.-]+)==(\S+)", origin)
    if m:
        name = f"{m.group(1)} {m.group(2)}"
    elif origin.startswith("wheel "):
        w = _WHEEL.search(origin.split("/")[-1])
        name = f"{w.group('name').replace('_', '-')} {w.group('version')}" if w else PurePosixPath(origin[6:]).name
    elif library:
        name = f"{library} {version}" if version and version != "unknown" else f"{library} (version unknown)"
    elif origin.startswith("installed "):
        name = origin[len("installed ") :]
    cut = f"CUTLASS {cutlass_version}" if cutlass_version else ""
    if not name:
        return cut or "CUTLASS (version unknown)"
    return f"{name} ({cut})" if cut else name


def origin_words(origin: str | None) -> str:
    """How a source was found, in words without a local path: ``a directory`` (was
    ``directory /home/me/site-packages``), ``a git checkout``, ``wheel NAME.whl``; an origin
    that names no path (``flashinfer-python==0.7.4 (wheel ..., cached)``, ``installed
    flashinfer-python 0.7.4``) as it is."""
    origin = origin or ""
    for kind, words in (("directory ", "a directory"), ("checkout ", "a git checkout")):
        if origin.startswith(kind):
            return words
    if origin.startswith("wheel "):
        return f"wheel {PurePosixPath(origin[6:]).name}"
    return origin


# ------------------------------------------------------------------------------------------
# what a preset approximates (layout and sweep reports)


def _shell(word: str) -> str:
    import shlex

    return shlex.quote(word)


def audit_command(appr, tile: str | None = None) -> str:
    """The ``cutlass-layout audit`` line that lays out what ``appr`` (an
    :class:`~cutlass_layout.model.Approximation`) approximates: its install, arch and family,
    and the tile when given."""
    words = ["cutlass-layout", "audit"]
    if appr.source:
        words.append(_shell(appr.source))
    if appr.arch and appr.arch != "sm120":
        words += ["--arch", appr.arch]
    if appr.family:
        words += ["--family", appr.family]
    if tile:
        words += ["--tile", tile]
    return " ".join(words)


def approximation_head(appr) -> str:
    """One line: the preset's numbers are an approximation of the kernel it names, and what
    lays out the real one."""
    if appr.install is None:
        real = (
            "`cutlass-layout audit` of a flashinfer install lays out the real one"
            if appr.preset in ("trtllm-moe", "flashinfer")
            else "the library may build it differently"
        )
        return f"approximation of the {appr.preset} preset's kernel, {appr.kernel}: {real}"
    if appr.arch is None:
        return (
            f"approximation of the {appr.preset} preset's kernel, {appr.kernel}, which "
            f"{appr.install} may build differently (`cutlass-layout audit` reads its sm120, "
            "sm121, sm100, sm103 and sm90 builds, not this arch's)"
        )
    src = f" --cutlass {_shell(appr.source)}" if appr.source else ""
    return (
        f"approximation of the {appr.preset} preset's kernel, {appr.kernel}, which "
        f"{appr.install} may build differently: `{audit_command(appr)}` / "
        f"`cutlass-layout layout --tactic ID{src}` lay out the real one"
    )


def tactic_text(t: dict) -> str:
    """``ID: 102400 B, 3 stages, over capacity by 1024 B (tried by the runtime)`` of a tactic
    of an approximation (its JSON row's numbers)."""
    v = t["verdict"]
    if v == Verdict.DOES_NOT_COMPILE:
        return f"{t['id']}: does not compile"
    if v == Verdict.OVER_CAPACITY:
        how = f"over capacity by {-t['headroom_bytes']} B"
    elif v == Verdict.EXACT_FIT:
        how = "exact fit (headroom 0)"
    else:
        how = f"fits, headroom {t['headroom_bytes']} B"
    runtime: dict[object, str] = {True: " (tried by the runtime)", False: " (not a runtime candidate)"}
    tried = runtime.get(t.get("runtime_candidate"), "")
    return f"{t['id']}: {t['kernel_bytes']} B, {t['stages']} stages, {how}{tried}"


def approximation_lines(appr, tile: str, what: str = "this config") -> list[str]:
    """What the install builds for a preset config: the tactics its cached audit has for it
    (each :func:`tactic_text`, indented), that it has none, or the audit to run; nothing
    where there is no install to audit. ``tile`` is the config's tile as the user typed it."""
    if appr.audited is None:
        return []
    if not appr.audited:
        return [
            f"{appr.install}'s own kernels of {what} are not audited here (nothing is audited "
            f"implicitly): `{audit_command(appr, tile)}` lays them out, and this report then "
            "names them"
        ]
    fam = f"{appr.family} tactic" if appr.family else "JIT-module tactic"
    if not appr.tactics:
        return [
            f"{appr.install} builds no {fam} of {what} (same arch, kernel, A, B, D, tile, cluster; its audit, cached)"
        ]
    return [f"{appr.install} builds {what} as (its audit, cached):"] + [f"  {tactic_text(t)}" for t in appr.tactics]


__all__ = [
    "Column",
    "approximation_head",
    "approximation_lines",
    "audit_command",
    "markdown_table",
    "md_cell",
    "origin_words",
    "print_table",
    "rich_table",
    "source_name",
    "tactic_text",
]
