"""Report of an audit of CUTLASS's own kernel library: one row per kernel its generator keeps,
the exact bytes beside the generator's own estimate, those that do not fit first."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..model import Verdict
from ..subjects.config import tile_text
from .audit import Finding, github_lines, launch_finding, shard_words, verdict_cell, verdict_counts
from .common import Column, markdown_table, md_cell, origin_words, print_table, rich_table, source_name
from .layout import default_console

#: A directory's cutlass_library in a title (what its Markdown names instead of the path).
_LIBRARY = "CUTLASS's kernel library"


def estimate_cell(t) -> str:
    """The generator's own figure (``CalculateSmemUsage``, KiB): ``0 KiB (auto)`` where the
    builder chooses the stage count (the estimate multiplies by the library's 0), ``?``
    where it raised."""
    if t.estimate_kib is None:
        return "?"
    return f"{t.estimate_kib} KiB" + (" (auto)" if t.library_stages == 0 else "")


def _shape(v) -> str:
    return "x".join(map(str, v)) if v else "-"


def columns_and_rows(tactics):
    """The table's columns and rows: verdict, procedural name, kind, A x B, out, tile, cluster,
    kernel schedule, stages, the three SharedStorage sizes, headroom (bytes) and the
    generator's estimate."""

    def num(t, v):
        return "-" if v is None or t.verdict == Verdict.DOES_NOT_COMPILE else str(v)

    columns = [
        (Column("verdict"), verdict_cell),
        (Column("kernel (procedural name)", wrap=True, code=True), lambda t: t.id),
        (Column("kind", drop=3), lambda t: str(t.gemm_kind or "-")),
        (Column("A x B"), lambda t: f"{t.a or '?'} x {t.b or '?'}"),
        (Column("out", drop=2), lambda t: str(t.out or "-")),
        (Column("tile"), lambda t: tile_text(t.tile) if t.tile else "-"),
        (Column("cluster", drop=3), lambda t: _shape(t.cluster)),
        (Column("schedule", code=True, drop=3), lambda t: str(t.schedule or "-")),
        (Column("stages", right=True, drop=2), lambda t: num(t, t.stages)),
        (Column("mainloop", right=True, drop=5), lambda t: num(t, t.mainloop_bytes)),
        (Column("epilogue", right=True, drop=5), lambda t: num(t, t.epilogue_bytes)),
        (Column("kernel", right=True), lambda t: num(t, t.kernel_bytes)),
        (Column("headroom", right=True), lambda t: num(t, t.headroom_bytes)),
        (Column("generator's estimate", right=True, drop=4), estimate_cell),
    ]
    return [c for c, _ in columns], [[f(t) for _, f in columns] for t in tactics]


def head_lines(result) -> list[str]:
    """The library, the tree, and what was enumerated with the capacity it is compared with."""
    p = result.provenance
    cap = result.capacity
    where = f" ({cap.name}, {cap.file}:{cap.line})" if cap is not None and cap.file else ""
    sel = {k: v for k, v in (p.get("selection") or {}).items() if v}
    how = " ".join(f"--{k.replace('_', '-')} {v!r}" for k, v in sel.items()) or "the default kernel filter"
    return [
        f"CUTLASS's kernel library {p['version']} ({origin_words(p['origin'])}){shard_words(result)}",
        f"CUTLASS {p['cutlass_version']} at {p['cutlass_root']} (tree {p['tree_hash']})",
        f"{result.arch}: {len(result.tactics)} kernels the generator keeps ({', '.join(p['generators'])}, "
        f"--architectures {p['architectures']}, {how}); capacity "
        f"{result.capacity_bytes if cap else '-'} B{where}",
    ]


def tail_lines(result) -> tuple[list[str], list[str], str, str]:
    """(errors of kernels, notes, the counts, what was checked)."""
    errors = [f"{t.id}: {t.error.one_line()}" for t in result.tactics if t.error is not None]
    told = {u["note"] for u in result.unmatched}  # the command says these on stderr
    notes = [f"note: {n}" for n in result.notes if n not in told]
    counts = verdict_counts(result.tactics)
    total = (
        f"{counts[Verdict.OVER_CAPACITY]} over capacity (kept by the generator), {counts[Verdict.EXACT_FIT]} "
        f"exact fits, {counts[Verdict.DOES_NOT_COMPILE]} do not compile, {counts[Verdict.FITS]} fit"
    )
    checked = (
        "checked: types (each kernel's SharedStorage as the library's emitter writes it, "
        "<name>_base; asserts inside kernel bodies were not instantiated)"
    )
    return errors, notes, total, checked


def render_library_audit(result, console: Console | None = None) -> None:
    """Print an audit of CUTLASS's kernel library: the head, one table (over capacity first),
    the errors, the notes and the counts."""
    con = console or default_console()
    first, *head = head_lines(result)
    con.print(f"[bold]{escape(first)}[/bold]", soft_wrap=True)
    for line in head:
        con.print(line, soft_wrap=True, markup=False)
    if result.tactics:
        columns, rows = columns_and_rows(result.tactics)
        print_table(con, rich_table(columns, rows, title=f"cutlass_library: {len(result.tactics)} kernels"))
    errors, notes, total, checked = tail_lines(result)
    for line in errors + notes:
        con.print(line, soft_wrap=True, markup=False)
    con.print(total, soft_wrap=True)
    con.print(checked, soft_wrap=True)


def to_markdown(result) -> str:
    """The audit of CUTLASS's kernel library in GitHub Markdown (bytes)."""
    p = result.provenance
    _, _, third = head_lines(result)
    out = [
        f"#### Audit: {source_name(p['origin'], p['cutlass_version'], library=_LIBRARY, version=p['version'])}, "
        f"{result.arch}{shard_words(result)}",
        "",
        f"{md_cell(third)}; tree `{p['tree_hash']}`",
        "",
    ]
    if result.tactics:
        out += [markdown_table(*columns_and_rows(result.tactics))]
    errors, notes, total, checked = tail_lines(result)
    out += [f"- `{md_cell(e.split(': ', 1)[0])}`: {md_cell(e.split(': ', 1)[1])}" for e in errors]
    out += [f"- {md_cell(n)}" for n in notes]
    if errors or notes:
        out.append("")
    out += [f"**{total}**", "", checked]
    return "\n".join(out) + "\n"


def findings(result) -> list[Finding]:
    """The findings of an audit of CUTLASS's kernel library: an ``error`` per kernel over
    capacity (what ``audit --check`` fails on), a ``warning`` per kernel that does not compile,
    one ``notice`` for the exact fits, one per kernel with launch findings
    (:func:`~cutlass_layout.reports.audit.launch_finding`; bytes; no file: the kernels are the
    generator's, not a line of a file)."""
    out: list[Finding] = []
    exact = []
    for t in result.tactics:
        launch = launch_finding(t, result.arch, True)  # the generator keeps every kernel
        if launch is not None:
            out.append(launch)
        if t.verdict == Verdict.OVER_CAPACITY:
            over = -t.headroom_bytes
            out.append(
                Finding(
                    "error",
                    "over-capacity",
                    f"{t.id}: SharedStorage {t.kernel_bytes} B, over the {t.capacity_bytes} B {result.arch} "
                    f"capacity by {over} B ({t.stages} stages; the generator's estimate {estimate_cell(t)}); "
                    f"kept by {t.file}",
                    f"cutlass-layout: over capacity by {over} B: {t.id}",
                    tactics=(t.id,),
                )
            )
        elif t.verdict == Verdict.DOES_NOT_COMPILE:
            out.append(
                Finding(
                    "warning",
                    "does-not-compile",
                    f"{t.id}: {t.error.one_line()}",
                    f"cutlass-layout: does not compile: {t.id}",
                    tactics=(t.id,),
                )
            )
        elif t.verdict == Verdict.EXACT_FIT:
            exact.append(t)
    if exact:
        out.append(
            Finding(
                "notice",
                "exact-fit",
                f"{len(exact)} kernel(s) fill the {exact[0].capacity_bytes} B {result.arch} "
                f"capacity exactly (0 B headroom): " + ", ".join(t.id for t in exact),
                f"cutlass-layout: {len(exact)} exact fit(s)",
                tactics=tuple(t.id for t in exact),
            )
        )
    return out


def summary_line(result) -> str:
    """``cutlass-layout: CUTLASS's kernel library <version> (<origin>), <arch>: <the counts>``."""
    p = result.provenance
    _, _, total, _ = tail_lines(result)
    return (
        f"cutlass-layout: CUTLASS's kernel library {p['version']} ({origin_words(p['origin'])}), "
        f"{result.arch}{shard_words(result)}: {total}"
    )


def to_github(result) -> str:
    """The audit of CUTLASS's kernel library as GitHub Actions workflow commands
    (:func:`findings`), then one summary line (:func:`summary_line`)."""
    return "\n".join([*github_lines(findings(result)), summary_line(result)]) + "\n"
