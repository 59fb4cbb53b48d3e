"""Report of an audit: one table per family, the errors, and a count per verdict."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..config import tile_text
from .common import Column, markdown_table, md_cell, print_table, rich_table, source_name
from .layout import default_console

_VERDICT_STYLE = {"fits": "green", "exact_fit": "yellow", "over_capacity": "red",
                  "does_not_compile": "magenta"}
_VERDICT_TEXT = {"fits": "fits", "exact_fit": "exact fit", "over_capacity": "over capacity",
                 "does_not_compile": "does not compile"}


def _yes_no(v) -> str:
    return "?" if v is None else ("yes" if v else "no")


def fix_cell(x) -> str:
    """The table's ``fix`` cell: ``2 st 74752 B, carve-out 17617`` (the largest stage count
    that fits, its kernel bytes, the smallest carve-out that makes the builder choose it),
    ``none fits``, ``?`` where it could not be searched, ``-`` where none was needed."""
    f = x.fix
    if f is None:
        return "-"
    if f.stages is None:
        return "?" if f.error and not f.searched else "none fits"
    carve = "" if f.carveout_bytes is None else f", carve-out {f.carveout_bytes}"
    return f"{f.stages} st {f.kernel_bytes} B{carve}"


def fix_lines(t) -> list[str]:
    """What fits instead of tactic ``t`` in words (``layout --tactic``): the stage count, its
    kernel bytes and headroom, the carve-out that makes the builder choose it and by which
    formula, and the builder's own budget with the bytes it did not count; ``[]`` when the
    tactic has no fix."""
    f = t.fix
    if f is None:
        return []
    tried = ", ".join(f"{n}: {'does not compile' if b is None else f'{b} B'}" for n, b in sorted(f.searched.items()))
    if f.stages is None:
        why = f.error or f"no stage count fits ({tried})"
        return [f"What fits instead: nothing found: {why}"]
    out = [f"What fits instead: StageCount<{f.stages}> (the launcher with its mainloop builder's stage "
           f"count replaced, laid out): kernel {f.kernel_bytes} B, mainloop {f.mainloop_bytes} B, "
           f"headroom {f.headroom_bytes} B (searched {tried})"]
    b = f.builder
    if f.carveout_bytes is not None:
        nums = f" ({b.capacity.name} {b.capacity.value} B, {b.stage_bytes} B per stage)" if b is not None else ""
        out.append(f"  or StageCountAutoCarveout<{f.carveout_bytes}>: the smallest carve-out C with which the "
                   f"builder chooses {f.stages} stages{nums}; its formula: {f.formula}")
    if b is not None and f.uncounted_bytes is not None:
        gap = f.uncounted_bytes
        parts = ", ".join(f"{k.replace('_', ' ')} {v} B" for k, v in f.uncounted.items() if v)
        how = (f"{gap} B more than budgeted: {parts}" if gap > 0 else
               f"{-gap} B less than budgeted" if gap < 0 else "exactly as budgeted")
        out.append(f"  Builder budget as built: ({b.capacity.name} {b.capacity.value} B - carve-out "
                   f"{b.carveout_bytes} B) / {b.stage_bytes} B per stage = {b.stages} stages; it budgets "
                   f"{b.budgeted_bytes} B, the kernel takes {t.kernel_bytes} B ({how})")
    return out


def _columns_and_rows(tactics, tile_bytes: bool = False):
    """The columns that say something for these tactics, and their rows (bytes)."""
    def ok(x):
        return x.report.error is None

    def num(x, v):
        return "-" if v is None or not ok(x) else str(v)

    def tile(x):
        if not x.tile:
            return "-"
        # K in bytes of the activation, as TensorRT-LLM counts it (with swap_ab, B)
        return tile_text(x.tile, x.b if x.swap_ab else x.a, tile_bytes)

    columns = [  # (column, cell)
        (Column("verdict"), lambda x: (_VERDICT_TEXT[x.verdict], _VERDICT_STYLE[x.verdict])),
        (Column("tactic", wrap=True, code=True), lambda x: str(x.name or x.launcher)),
        (Column("A x B"), lambda x: f"{x.a or '?'} x {x.b or '?'}"),
        (Column("out"), lambda x: str(x.out or "-")),
        (Column("fusion"), lambda x: str(x.fusion or "-")),
        (Column("swap"), lambda x: "" if not x.swap_ab else "swap"),
        (Column("tile"), tile),
        (Column("stages", right=True), lambda x: num(x, x.report.stages)),
        (Column("mainloop", right=True), lambda x: num(x, x.report.mainloop and x.report.mainloop.size)),
        (Column("epilogue", right=True), lambda x: num(x, x.report.epilogue and x.report.epilogue.size)),
        (Column("kernel", right=True), lambda x: num(x, x.report.kernel and x.report.kernel.size)),
        (Column("headroom", right=True), lambda x: num(x, x.report.headroom_bytes)),
        (Column("tried"), lambda x: _yes_no(x.runtime_candidate)),
        (Column("fix"), fix_cell),
    ]
    optional = {"fusion": lambda x: x.fusion, "swap": lambda x: x.swap_ab is not None,
                "tried": lambda x: x.runtime_candidate is not None, "fix": lambda x: x.fix is not None}
    shown = [(c, f) for c, f in columns
             if c.header not in optional or any(optional[c.header](x) for x in tactics)]
    return [c for c, _ in shown], [[f(x) for _, f in shown] for x in tactics]


def audit_table(tactics, title: str | None = None, *, tile_bytes: bool = False):
    """One family's tactics: verdict, name, A x B, output, fusion, swap_ab, tile, stages, the
    three SharedStorage sizes, headroom, whether the runtime tries it and what fits instead
    (:func:`fix_cell`; bytes). Columns that say nothing for the family (no fusion, no swap_ab,
    no runtime list, no fix) are left out; the
    numeric ones never are, and the name is the one that wraps. ``tile_bytes``: K in bytes
    of A's element, as TensorRT-LLM's tile names count it."""
    columns, rows = _columns_and_rows(tactics, tile_bytes)
    return rich_table(columns, rows, title=title)


def _family_title(fam: str, n: int) -> str:
    what = " (TensorRT-LLM MoE grouped GEMM, moe_gemm_tma_ws_launcher.inl)" if fam == "moe" else ""
    return f"{fam}{what}: {n} tactics"


def _families(result) -> dict[str, list]:
    families: dict[str, list] = {}
    for x in result.tactics:
        families.setdefault(x.family, []).append(x)
    return families


def _head(result) -> list[str]:
    p = result.provenance
    cap = result.capacity
    where = f" ({cap.name}, {cap.file}:{cap.line})" if cap is not None and cap.file else ""
    parsed = [s for s in result.sources if not s.get("skipped")]
    return [f"{p['library']} {p['version']} ({p['origin']})",
            f"CUTLASS {p['cutlass_version']} at {p['cutlass_root']} (tree {p['tree_hash']})",
            f"{result.arch}: {len(result.tactics)} tactics from {len(parsed)} generated sources; "
            f"capacity {result.capacity_bytes if cap else '-'} B{where}"]


def _tail(result) -> tuple[list[str], list[str], str, str]:
    """(errors of tactics, sources not read and notes, the counts, what was checked)."""
    errors = [f"{x.id}: {x.report.error.one_line()}" for x in result.tactics
              if x.report.error is not None]
    unread: dict[str, list[str]] = {}
    for s in result.sources:
        if s.get("error"):
            unread.setdefault(s["error"], []).append(s["file"].rsplit("/", 1)[-1])
    notes = []
    for err, files in unread.items():
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        notes.append(f"{len(files)} source(s) not read ({shown}): {err}")
    told = {u["note"] for u in getattr(result, "unmatched", [])}  # the command says these on stderr
    notes += [f"note: {n}" for n in result.notes if n not in told]
    counts = {v: sum(x.verdict == v for x in result.tactics) for v in _VERDICT_TEXT}
    over = [x for x in result.tactics if x.verdict == "over_capacity"]
    tried = sum(1 for x in over if x.runtime_candidate)
    unknown = sum(1 for x in over if x.runtime_candidate is None)
    how = f"{tried} of them tried by the runtime" + (f", {unknown} unknown" if unknown else "")
    total = (f"{counts['over_capacity']} over capacity ({how}), "
             f"{counts['exact_fit']} exact fits, {counts['does_not_compile']} do not compile, "
             f"{counts['fits']} fit")
    checked = ("checked: types (each kernel's SharedStorage as its launcher builds it; asserts "
               "inside kernel bodies were not instantiated)")
    return errors, notes, total, checked


def render_audit(result, console: Console | None = None, *, tile_bytes: bool = False) -> None:
    """Print an :class:`~cutlass_layout.model.AuditResult`: provenance, one table per family
    (over capacity first, then exact fits), the errors, and a count per verdict."""
    con = console or default_console()
    first, *head = _head(result)
    con.print(f"[bold]{escape(first)}[/bold]", soft_wrap=True)
    for line in head:
        con.print(line, soft_wrap=True, markup=False)
    for fam, items in _families(result).items():
        print_table(con, audit_table(items, title=_family_title(fam, len(items)), tile_bytes=tile_bytes))
    errors, notes, total, checked = _tail(result)
    for line in errors:
        con.print(line, soft_wrap=True, markup=False)
    for line in notes:
        style = None if line.startswith("note: ") else "yellow"
        con.print(line, soft_wrap=True, markup=False, style=style)
    con.print(total)
    con.print(checked)


def to_markdown(result, *, tile_bytes: bool = False) -> str:
    """The audit in GitHub Markdown: the install, one table per family, errors, notes and
    the counts (bytes)."""
    p = result.provenance
    first, second, third = _head(result)
    out = [f"#### Audit: {source_name(p['origin'], p['cutlass_version'])}, {result.arch}", "",
           f"{md_cell(third)}; tree `{p['tree_hash']}`", ""]
    for fam, items in _families(result).items():
        columns, rows = _columns_and_rows(items, tile_bytes)
        out += [f"**{md_cell(_family_title(fam, len(items)))}**", "", markdown_table(columns, rows)]
    errors, notes, total, checked = _tail(result)
    out += [f"- `{md_cell(e.split(': ', 1)[0])}`: {md_cell(e.split(': ', 1)[1])}" for e in errors]
    out += [f"- {md_cell(n)}" for n in notes]
    if errors or notes:
        out.append("")
    out += [f"**{total}**", "", checked]
    return "\n".join(out) + "\n"
