"""The readable report of a :class:`~cutlass_layout.model.DiffResult` (``cutlass-layout
diff``): both sides, the structural changes by file, then the numeric table with the rows
that differ flagged."""

from __future__ import annotations

from collections import Counter

from ..commands.diff_audit import common_affixes
from ..model import DiffResult, MemberSpan, NumericRecord, NumericRow, ReleaseGate, Side, Verdict
from ..subjects.config import tile_text
from .common import Column, markdown_table, md_cell, source_name, verdict_words


def describe_grid(configs: list) -> str:
    """One line summarising a grid: the values of each config attribute that varies."""
    if not configs:
        return "(empty)"
    parts = []
    for attr in ("arch", "kernel", "a", "b", "preset", "stages", "c", "d", "scales"):
        seen = []
        for c in configs:
            v = c.to_dict().get(attr)
            v = "x".join(map(str, v)) if isinstance(v, (list, tuple)) else v
            if v not in seen:
                seen.append(v)
        if attr == "scales" and seen == [None]:
            continue  # no blockwise configs in the grid
        parts.append(f"{attr} {','.join(map(str, seen))}")
    tiles = []
    for c in configs:
        t = "x".join(map(str, c.tile))
        if t not in tiles:
            tiles.append(t)
    parts.append(f"tiles {' '.join(tiles)}")
    return f"{len(configs)} configs: " + "; ".join(parts)


def _get(rec: NumericRecord | None, key: str):
    return None if rec is None else rec.get(key)


def _cell(row: NumericRow, key: str) -> str:
    a, b = _get(row.old, key), _get(row.new, key)
    fmt = verdict_words if key == "verdict" else (lambda x: "-" if x is None else str(x))
    return fmt(a) if a == b else f"{fmt(a)} -> {fmt(b)}"


def _side_line(name: str, side: Side) -> str:
    p = side.provenance
    return f"{name}: {side.source}  CUTLASS {p.cutlass_version} (version.h), tree {p.tree_hash}, {p.cutlass_root}"


_CHANGE_WORDS = {
    "struct_added": "struct added",
    "struct_removed": "struct removed",
    "struct_moved": "struct moved",
    "struct_realigned": "struct alignas changed",
    "struct_bases_changed": "bases changed",
    "struct_kind_changed": "kind changed",
    "struct_condition_changed": "#if changed",
    "field_added": "field added",
    "field_removed": "field removed",
    "field_renamed": "field renamed",
    "field_retyped": "field retyped",
    "field_realigned": "alignas changed",
    "field_condition_changed": "field #if changed",
    "fields_reordered": "fields reordered",
    "alias_added": "alias added",
    "alias_removed": "alias removed",
    "alias_changed": "alias changed",
    "constant_added": "constant added",
    "constant_removed": "constant removed",
    "constant_changed": "constant changed",
    "constant_retyped": "constant type changed",
    "constant_moved": "constant moved",
}


def _short(text: str | None, width: int = 160) -> str:
    if text is None:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def _excerpt(a: str, b: str, width: int = 150) -> tuple[str, str]:
    """Both texts, shortened around where they differ when they are long."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre, suf = common_affixes(a, b)
    start = max(0, pre - 40)

    def cut(t: str) -> str:
        end = min(len(t), max(len(t) - suf + 40, start + 60))
        core = t[start:end]
        if len(core) > width:
            core = core[: width - 1] + "…"
        return ("…" if start > 0 else "") + core + ("…" if end < len(t) else "")

    return cut(a), cut(b)


def _member_text(x: MemberSpan | None) -> str:
    return "absent" if x is None else f"{x.size} B @ {x.offset}"


def _others_line(res: DiffResult) -> str | None:
    """What the arch filter left out, in one line (None when nothing was)."""
    if not res.structural_others:
        return None
    n = sum(res.structural_others.values())
    per = ", ".join(f"{k} {v}" for k, v in res.structural_others.items())
    return (
        f"{n} changes in headers of other arch families not shown ({per}); "
        f"kept: {', '.join(res.structural_arch or [])} and the headers of no arch"
    )


def _structural_head(res: DiffResult) -> list[str]:
    if not res.structural:
        what = "identical trees" if res.identical else f"{res.files_compared} headers differ"
        return [
            f"Structural (tree-sitter scan): no changes to storage structs or constants "
            f"({what})" + (" that concern this arch" if res.structural_others else "")
        ]
    counts: dict[str, int] = {}
    for c in res.structural:
        counts[c.change] = counts.get(c.change, 0) + 1
    return [
        f"Structural (tree-sitter scan of the {res.files_compared} headers that differ): {len(res.structural)} changes",
        ", ".join(f"{_CHANGE_WORDS.get(k, k)} {v}" for k, v in counts.items()),
    ]


def _by_file(changes):
    """Each change with its file where the file changes from the one before (else None): the
    structural listing is grouped by file, in both renderings."""
    last = None
    for c in changes:
        f = c.new_file or c.old_file
        yield (f if f != last else None), c
        last = f


def _change_lines(c) -> tuple[str, list[str], str]:
    """(what changed, its old/new texts, where) of one structural change."""
    if c.old_file and c.new_file and c.old_file == c.new_file:
        where = f"line {c.old_line} -> {c.new_line}"
    else:
        where = (
            (f"{c.old_file}:{c.old_line}" if c.old_file else "(none)")
            + " -> "
            + (f"{c.new_file}:{c.new_line}" if c.new_file else "(none)")
        )
    what = c.struct + (
        f"::{c.field}" if c.field and c.change.startswith("constant") else f".{c.field}" if c.field else ""
    )
    spec = f"  [{c.specialization}]" if c.specialization else ""
    texts = []
    if c.change not in ("struct_moved", "constant_moved"):
        if c.old is not None and c.new is not None:
            a, b = _excerpt(c.old, c.new)
            texts += [f"old: {a}", f"new: {b}"]
        elif c.change.endswith(("_added", "_removed")) and (c.old or c.new) and not c.change.startswith("struct"):
            texts.append(f"{'old' if c.old else 'new'}: {_short(c.old or c.new)}")
    return f"{_CHANGE_WORDS.get(c.change, c.change)}: {what}{spec}", texts, where


_NUMERIC_COLS = [
    "verdict",
    "stages",
    "kernel_bytes",
    "mainloop_bytes",
    "epilogue_bytes",
    "tma_bytes.mk",
    "tma_bytes.nk",
    "tma_bytes.total",
]
_NUMERIC_HEADS = ["", "config", "verdict", "stages", "kernel", "mainloop", "epilogue", "TMA MK", "TMA NK", "TMA total"]


def _row_name(r: NumericRow, tile_bytes: bool) -> str:
    c = r.config.to_dict()
    name = "" if c["arch"] == "sm120" else f"{c['arch']} "
    ab = c["a"] if c["a"] == c["b"] else f"{c['a']}x{c['b']}"
    name += f"{c['kernel']} {ab} {tile_text(c['tile'], c['a'], tile_bytes)}"
    if c["stages"] != "auto":
        name += f" st{c['stages']}"
    if c["preset"] != "flashinfer":
        name += f" {c['preset']}"
    for k in ("schedule", "epilogue_schedule"):
        if c.get(k, "auto") != "auto":
            name += f" {c[k]}"
    if c.get("scales"):
        name += f" scales {'x'.join(map(str, c['scales']))}"
    return name


def _numeric_rows(res: DiffResult, tile_bytes: bool) -> list[list[str]]:
    assert res.numeric is not None  # a diff with its numeric part
    return [
        ["!" if r.verdict_changed else "*" if r.changed else "", _row_name(r, tile_bytes)]
        + [_cell(r, k) for k in _NUMERIC_COLS]
        for r in res.numeric
    ]


def row_details(r: NumericRow, member_lines: int) -> list[str]:
    """Under a changed row: the capacity where both sides have one and it changed, the
    members whose size changed, how many only moved, and the first error of a side that does
    not compile (once, as ``both:``, where the two sides fail alike)."""
    out = []
    if "capacity_bytes" in r.changed and None not in (_get(r.old, "capacity_bytes"), _get(r.new, "capacity_bytes")):
        out.append(f"capacity: {_cell(r, 'capacity_bytes')} B")
    resized = [m for m in r.members if m.old is None or m.new is None or m.old.size != m.new.size]
    shifted = len(r.members) - len(resized)
    names = [m.name for m in resized]
    # leaves (smem_SFB) before the containers that grow with them (tensors)
    resized.sort(key=lambda m: any(n.startswith(m.name + ".") for n in names))
    for m in resized[:member_lines]:
        out.append(f"{m.name}: {_member_text(m.old)} -> {_member_text(m.new)}")
    if len(resized) > member_lines:
        out.append(f"... {len(resized) - member_lines} more members change size")
    if shifted:
        out.append(f"({shifted} more members only move: same size, new offset)")
    errors = {side: rec.error for side in ("old", "new") if (rec := getattr(r, side)) and rec.error}
    if len(errors) == 2 and errors["old"] == errors["new"]:
        out.append(f"both: {errors['old']}")  # does not compile on either side: why, once
    else:
        out += [f"{side}: {error}" for side, error in errors.items()]
    return out


def _numeric_head(res: DiffResult) -> str:
    src = {"default": "default grid", "flags": "grid from flags", "file": "grid file", "python": "grid"}.get(
        res.grid_source, "grid"
    )
    return f"Numeric (exact engine, libclang), {src}: {describe_grid(res.grid)}"


def render_text(res: DiffResult, member_lines: int = 8, *, tile_bytes: bool = False) -> str:
    """The readable report: sides, structural changes by file, then the numeric table with
    the rows that differ flagged ``*`` (verdict changes first, flagged ``!``). Under each
    changed row: the kernel members whose size changed (at most ``member_lines``; ``offset``
    in bytes from the start of the kernel's SharedStorage) and how many only moved. With an
    audit diff (``diff --audit``), its section last (:func:`_audit_lines`).
    ``tile_bytes``: tiles with K in bytes of A's element."""
    out = [_side_line("old", res.old), _side_line("new", res.new)]
    out += [f"note: {n}" for n in res.notes]
    if res.structural is not None:
        out.append("")
        head = _structural_head(res)
        out.append(head[0])
        out += [f"  {x}" for x in head[1:]]
        others = _others_line(res)
        if others:
            out.append(f"  {others}")
        for f, c in _by_file(res.structural):
            if f is not None:
                out.append(f"  {f}")
            what, texts, where = _change_lines(c)
            out.append(f"    {what}")
            out += [f"        {t}" for t in texts]
            out.append(f"        {where}")
    if res.numeric is not None:
        out.append("")
        out.append(_numeric_head(res))
        if not res.numeric:
            out.append("  nothing computed" + (" (identical trees)" if res.identical else " (empty grid)"))
        else:
            out.append(
                f"  {len(res.numeric_changes)} of {len(res.numeric)} configs differ "
                f"({sum(r.verdict_changed for r in res.numeric)} verdict changes)"
            )
            table = _numeric_rows(res, tile_bytes)
            widths = [max(len(str(x)) for x in col) for col in zip(_NUMERIC_HEADS, *table)]
            out.append("  " + "  ".join(h.ljust(w) for h, w in zip(_NUMERIC_HEADS, widths)).rstrip())
            for row, r in zip(table, res.numeric):
                out.append("  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
                out += [f"        {x}" for x in row_details(r, member_lines)]
    if res.audit is not None:
        out += _audit_lines(res.audit, member_lines)
    out.append("")
    out.append("differences found" if res.has_differences else "no differences")
    return "\n".join(out) + "\n"


def _tactic_numbers(t) -> str:
    if t is None:
        return "-"
    if t.error is not None:
        return f"does not compile ({t.error.message})"
    v = {Verdict.OVER_CAPACITY: "over", Verdict.EXACT_FIT: "exact fit"}.get(t.verdict, t.verdict)
    stages = "" if t.stages is None else f"{t.stages} stages, "
    # the bytes compared with the capacity (a launch size, a storage's): from the report, which
    # every tactic of an audit diff has (both audits are laid out, not read back from JSON)
    return f"{t.report.smem_bytes} B, {stages}{v}"


#: How a renamed pair was made, where the report says it (:attr:`TacticChange.paired_by
#: <cutlass_layout.model.TacticChange.paired_by>`)
_PAIRED_BY = {
    "name": "; paired by name: several tactics share its configuration",
    "core_name": "; CUTLASS 4.x's name for it (no accumulator letter or MMA instruction shape)",
}


def _rename_line(r) -> str:
    """Under a renamed row: what the install renamed, the old id, and how the pair was made."""
    how = _PAIRED_BY.get(r.paired_by, "")
    return f"renamed: {r.rename.old or '(nothing)'} -> {r.rename.new or '(nothing)'}, was {r.old_id}{how}"


def _delta_text(r) -> str:
    return "" if r.kernel_bytes_delta is None else f" ({r.kernel_bytes_delta:+d} B)"


def _audit_head(a) -> str:
    """The audit side's first line: the arch, what was audited, how many on each side."""
    if a.kind == "cutlass_library":
        sel = " ".join(f"--{k.replace('_', '-')} {v!r}" for k, v in a.selection.items())
        return (
            f"Audit ({a.arch}, CUTLASS's kernel library, {sel or 'the default kernel filter'}, paired by "
            f"procedural name): {a.old_tactics} kernels on the old side, {a.new_tactics} on the new"
        )
    fam = f", family {a.family}" if a.family else ""
    return f"Audit ({a.arch}{fam}): {a.old_tactics} tactics on the old side, {a.new_tactics} on the new"


def _audit_counts(a) -> str:
    """The audit side's counts: each kind of row, the verdict changes by verdict."""
    counts = a.summary()
    moves = ", ".join(
        f"{m['count']} {verdict_words(m['old'])} -> {verdict_words(m['new'])}" for m in counts["verdict_changes"]
    )
    also = sum(r.rename is not None and r.change in ("verdict", "numbers") for r in a.rows)
    return (
        f"{counts['verdict']} verdict changes"
        + (f" ({moves})" if moves else "")
        + f", {counts['numbers']} with changed numbers, {counts['renamed']} renamed, {counts['added']} only new, "
        f"{counts['removed']} only old, {counts['same']} the same"
        + (f"; {also} of the changed ones renamed too" if also else "")
    )


def gate_line(g: ReleaseGate) -> str:
    """The release gate's counts in one line (:class:`~cutlass_layout.model.ReleaseGate`)."""
    return (
        f"gate: {g.paired} paired, {g.only_old + g.only_new} only on one side ({g.only_old} old, "
        f"{g.only_new} new), {g.newly_over_capacity} newly over capacity, {g.newly_not_compiling} newly "
        f"not compiling, {g.stage_changes} stage changes, {g.byte_changes} byte changes"
    )


_FLAGS = {"verdict": "!", "numbers": "*", "renamed": "~", "added": "+", "removed": "-"}


def _row_lines(r, member_lines: int) -> list[str]:
    """One row of the audit diff: its flag, id and both sides' numbers, then what was renamed
    and the members that changed size (at most ``member_lines``) or only moved."""
    if r.change in ("added", "removed"):
        return [f"{_FLAGS[r.change]} {r.id}: {_tactic_numbers(r.new or r.old)}"]
    nums = (
        f"{_tactic_numbers(r.new)} on both sides"
        if r.change in ("renamed", "same")
        else f"{_tactic_numbers(r.old)} -> {_tactic_numbers(r.new)}"
    )
    out = [f"{_FLAGS.get(r.change, '=')} {r.id}: {nums}{_delta_text(r)}"]
    if r.rename is not None:
        out.append(f"      {_rename_line(r)}")
    resized = [m for m in r.members if m.old is None or m.new is None or m.old.size != m.new.size]
    names = [m.name for m in resized]
    resized.sort(key=lambda m: any(n.startswith(m.name + ".") for n in names))
    out += [f"      {m.name}: {_member_text(m.old)} -> {_member_text(m.new)}" for m in resized[:member_lines]]
    if len(resized) > member_lines:
        out.append(f"      ... {len(resized) - member_lines} more members change size")
    if len(r.members) > len(resized):
        out.append(f"      ({len(r.members) - len(resized)} more members only move)")
    return out


def audit_sections(a, member_lines: int = 8) -> list[tuple[str | None, list[str]]]:
    """The audit diff's kernels, as ``(title, lines)`` sections: the release gate's first (those
    newly over capacity, newly not compiling, then the other paired kernels whose stages or
    bytes changed: :attr:`TacticChange.gate <cutlass_layout.model.TacticChange.gate>`), each
    kernel once, then the other changes (``!`` verdict, ``*`` numbers, ``~`` renamed, ``+``/``-``
    on one side) and, untitled, the unchanged kernels over capacity on both sides (``=``) and
    the notes. Kernel-library kernels renamed only by CUTLASS 4.x's naming, numbers the same,
    are one line (``--json`` lists them). Sections with no kernel are left out."""
    failing = {"newly_over_capacity", "newly_not_compiling"}
    gate = [
        ("newly over capacity", [r for r in a.rows if "newly_over_capacity" in r.gate]),
        ("newly not compiling", [r for r in a.rows if "newly_not_compiling" in r.gate]),
        ("stage or byte changes, not listed above", [r for r in a.rows if r.gate and not failing & set(r.gate)]),
    ]
    shown = {id(r) for _, rows in gate for r in rows}
    by_core = [r for r in a.rows if r.change == "renamed" and r.paired_by == "core_name"]
    rest = [r for r in a.rows if r.change != "same" and id(r) not in shown and r not in by_core]
    out: list[tuple[str | None, list[str]]] = [
        (f"{title} ({len(rows)}):", [x for r in rows for x in _row_lines(r, member_lines)])
        for title, rows in gate
        if rows
    ]
    lines = [x for r in rest for x in _row_lines(r, member_lines)]
    if by_core:
        parts = sorted({f"{r.rename.old} -> {r.rename.new}" for r in by_core})
        shown_parts = ", ".join(parts[:3]) + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")
        lines.append(
            f"~ {len(by_core)} kernels renamed by CUTLASS 4.x's naming only, numbers the same "
            f"({shown_parts}; --json lists them)"
        )
    if lines:
        kinds = Counter(r.change for r in rest)
        kinds["renamed"] += len(by_core)
        words = {"verdict": "verdict", "numbers": "numbers", "renamed": "renamed", "added": "only new"}
        kind_words = ", ".join(f"{kinds[k]} {w}" for k, w in (*words.items(), ("removed", "only old")) if kinds[k])
        out.append((f"the other kernels that differ ({len(rest) + len(by_core)}: {kind_words}):", lines))
    both = [r for r in a.rows if r.change == "same" and r.new.verdict == Verdict.OVER_CAPACITY]
    tail = [f"= {r.id}: over capacity on both sides, {_tactic_numbers(r.new)}" for r in both]
    tail += [f"note: {n}" for n in a.notes]
    if tail:
        out.append((None, tail))
    return out


def _audit_lines(a, member_lines: int) -> list[str]:
    """The audit side as text: a blank line, its head, the release gate's counts, the other
    counts, then :func:`audit_sections` (titles and lines indented under them)."""
    out = ["", _audit_head(a), f"  {gate_line(a.gate())}", f"  {_audit_counts(a)}"]
    for title, lines in audit_sections(a, member_lines):
        if title is not None:
            out.append(f"  {title}")
        out += [f"    {x}" if title is not None else f"  {x}" for x in lines]
    return out


def to_markdown(res: DiffResult, member_lines: int = 8, *, tile_bytes: bool = False) -> str:
    """The diff in GitHub Markdown: both sides, the structural changes (folded in a
    ``<details>`` block, by file), the numeric table and, under it, what changed in each row
    that differs (bytes), and the audit diff's lines where there is one."""

    def side(name, s):
        p = s.provenance
        return f"- {name}: {md_cell(source_name(p.origin, p.cutlass_version))}, tree `{p.tree_hash}`"

    out = [
        f"#### Diff: {md_cell(source_name(res.old.provenance.origin, res.old.provenance.cutlass_version))} -> "
        f"{md_cell(source_name(res.new.provenance.origin, res.new.provenance.cutlass_version))}",
        "",
        side("old", res.old),
        side("new", res.new),
    ]
    out += [f"- note: {md_cell(n)}" for n in res.notes]
    out.append("")
    if res.structural is not None:
        head = _structural_head(res)
        out += [f"**{md_cell(head[0])}**", ""]
        others = _others_line(res)
        if others:
            out += [md_cell(others), ""]
        if res.structural:
            out += ["<details><summary>" + md_cell(head[1]) + "</summary>", ""]
            for f, c in _by_file(res.structural):
                if f is not None:
                    out.append(f"- `{f}`")
                what, texts, where = _change_lines(c)
                kind, name = what.split(": ", 1)
                out.append(f"  - {md_cell(kind)}: `{md_cell(name)}` ({md_cell(where)})")
                out += [f"    - {t[:5]}`{md_cell(t[5:])}`" for t in texts]
            out += ["", "</details>", ""]
    if res.numeric is not None:
        out += [f"**{md_cell(_numeric_head(res))}**", ""]
        if not res.numeric:
            out += ["nothing computed" + (" (identical trees)" if res.identical else " (empty grid)"), ""]
        else:
            out += [
                f"{len(res.numeric_changes)} of {len(res.numeric)} configs differ "
                f"({sum(r.verdict_changed for r in res.numeric)} verdict changes)",
                "",
            ]
            cols = [Column(h or "Δ") for h in _NUMERIC_HEADS[:3]] + [Column(h, right=True) for h in _NUMERIC_HEADS[3:]]
            out.append(markdown_table(cols, _numeric_rows(res, tile_bytes)))
            for r in res.numeric:
                details = row_details(r, member_lines)
                if details:
                    out.append(f"- {md_cell(_row_name(r, tile_bytes))}: " + "; ".join(md_cell(d) for d in details))
            out.append("")
    if res.audit is not None:
        a = res.audit
        out += [f"**{md_cell(_audit_head(a))}**", "", md_cell(gate_line(a.gate())), "", md_cell(_audit_counts(a)), ""]
        for title, lines in audit_sections(a, member_lines):
            if title is not None:
                out += [f"*{md_cell(title)}*", ""]
            out += [f"- `{md_cell(x.strip())}`" for x in lines]
            out.append("")
    out.append("**differences found**" if res.has_differences else "no differences")
    return "\n".join(out) + "\n"


__all__ = ["describe_grid", "render_text", "to_markdown", "gate_line", "audit_sections"]
