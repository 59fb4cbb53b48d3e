"""Report of an audit: one table per family, the errors, and a count per verdict."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from .layout import default_console

_VERDICT_STYLE = {"fits": "green", "exact_fit": "yellow", "over_capacity": "red",
                  "does_not_compile": "magenta"}
_VERDICT_TEXT = {"fits": "fits", "exact_fit": "exact fit", "over_capacity": "over capacity",
                 "does_not_compile": "does not compile"}


def _yes_no(v) -> str:
    return "?" if v is None else ("yes" if v else "no")


def audit_table(tactics, title: str | None = None) -> Table:
    """One family's tactics: verdict, name, A x B, output, fusion, swap_ab, tile, stages, the
    three SharedStorage sizes, headroom and whether the runtime tries it (bytes). Columns that
    say nothing for the family (no fusion, no swap_ab, no runtime list) are left out; the
    numeric ones never are, and the name is the one that wraps."""
    def ok(x):
        return x.report.error is None

    def num(x, v):
        return "-" if v is None or not ok(x) else str(v)

    columns = [  # (header, cell, right-aligned, min width)
        ("verdict", lambda x: f"[{_VERDICT_STYLE[x.verdict]}]{_VERDICT_TEXT[x.verdict]}[/]", False, 9),
        ("tactic", lambda x: str(x.name or x.launcher), False, None),
        ("A x B", lambda x: f"{x.a or '?'} x {x.b or '?'}", False, 13),
        ("out", lambda x: str(x.out or "-"), False, 4),
        ("fusion", lambda x: str(x.fusion or "-"), False, 8),
        ("swap", lambda x: "" if not x.swap_ab else "swap", False, 4),
        ("tile", lambda x: "x".join(map(str, x.tile)) if x.tile else "-", False, 11),
        ("stages", lambda x: num(x, x.report.stages), True, 6),
        ("mainloop", lambda x: num(x, x.report.mainloop and x.report.mainloop.size), True, 8),
        ("epilogue", lambda x: num(x, x.report.epilogue and x.report.epilogue.size), True, 8),
        ("kernel", lambda x: num(x, x.report.kernel and x.report.kernel.size), True, 6),
        ("headroom", lambda x: num(x, x.report.headroom_bytes), True, 8),
        ("tried", lambda x: _yes_no(x.runtime_candidate), False, 5),
    ]
    optional = {"fusion": lambda x: x.fusion, "swap": lambda x: x.swap_ab is not None,
                "tried": lambda x: x.runtime_candidate is not None}
    shown = [c for c in columns if c[0] not in optional or any(optional[c[0]](x) for x in tactics)]
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for name, _, right, width in shown:
        if width is None:
            t.add_column(name, overflow="fold", ratio=1)
        else:
            t.add_column(name, justify="right" if right else "left", no_wrap=True, min_width=width)
    for x in tactics:
        t.add_row(*(cell(x) for _, cell, _, _ in shown))
    return t


def render_audit(result, console: Console | None = None) -> None:
    """Print an :class:`~cutlass_layout.model.AuditResult`: provenance, one table per family
    (over capacity first, then exact fits), the errors, and a count per verdict."""
    con = console or default_console()
    p = result.provenance
    con.print(f"[bold]{p['library']} {p['version']}[/bold] ({p['origin']})")
    con.print(f"CUTLASS {p['cutlass_version']} at {p['cutlass_root']} (tree {p['tree_hash']})")
    cap = result.capacity
    where = f" ({cap.name}, {cap.file}:{cap.line})" if cap is not None and cap.file else ""
    parsed = [s for s in result.sources if not s.get("skipped")]
    con.print(f"{result.arch}: {len(result.tactics)} tactics from {len(parsed)} generated sources; "
              f"capacity {result.capacity_bytes if cap else '-'} B{where}")
    families: dict[str, list] = {}
    for x in result.tactics:
        families.setdefault(x.family, []).append(x)
    for fam, items in families.items():
        what = " (TensorRT-LLM MoE grouped GEMM, moe_gemm_tma_ws_launcher.inl)" if fam == "moe" else ""
        con.print(audit_table(items, title=f"{fam}{what}: {len(items)} tactics"))
    for x in result.tactics:
        if x.report.error is not None:
            con.print(f"{x.id}: {x.report.error.one_line()}", soft_wrap=True)
    unread: dict[str, list[str]] = {}
    for s in result.sources:
        if s.get("error"):
            unread.setdefault(s["error"], []).append(s["file"].rsplit("/", 1)[-1])
    for err, files in unread.items():
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        con.print(f"[yellow]{len(files)} source(s) not read ({shown}): {err}[/yellow]", soft_wrap=True)
    for note in result.notes:
        con.print(f"note: {note}", soft_wrap=True)
    counts = {v: sum(x.verdict == v for x in result.tactics) for v in _VERDICT_TEXT}
    over = [x for x in result.tactics if x.verdict == "over_capacity"]
    tried = sum(1 for x in over if x.runtime_candidate)
    unknown = sum(1 for x in over if x.runtime_candidate is None)
    how = f"{tried} of them tried by the runtime" + (f", {unknown} unknown" if unknown else "")
    con.print(f"{counts['over_capacity']} over capacity ({how}), "
              f"{counts['exact_fit']} exact fits, {counts['does_not_compile']} do not compile, "
              f"{counts['fits']} fit")
    con.print("checked: types (each kernel's SharedStorage as its launcher builds it; asserts "
              "inside kernel bodies were not instantiated)")
