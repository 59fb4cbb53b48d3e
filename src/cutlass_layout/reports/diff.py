"""The readable report of a :class:`~cutlass_layout.model.DiffResult` (``cutlass-layout
diff``): both sides, the structural changes by file, then the numeric table with the rows
that differ flagged."""

from __future__ import annotations

from ..model import DiffResult, MemberSpan, NumericRecord, NumericRow, Side


def describe_grid(configs: list) -> str:
    """One line summarising a grid: the values of each config attribute that varies."""
    if not configs:
        return "(empty)"
    parts = []
    for attr in ("arch", "kernel", "a", "b", "preset", "stages", "c", "d"):
        seen = []
        for c in configs:
            v = c.to_dict()[attr]
            if v not in seen:
                seen.append(v)
        parts.append(f"{attr} {','.join(map(str, seen))}")
    tiles = []
    for c in configs:
        t = "x".join(map(str, c.tile))
        if t not in tiles:
            tiles.append(t)
    parts.append(f"tiles {' '.join(tiles)}")
    return f"{len(configs)} configs: " + "; ".join(parts)



def _verdict_text(v) -> str:
    return {"fits": "fits", "over_capacity": "over capacity",
            "does_not_compile": "does not compile"}.get(v, str(v))


def _get(rec: NumericRecord | None, key: str):
    return None if rec is None else rec.get(key)


def _cell(row: NumericRow, key: str) -> str:
    a, b = _get(row.old, key), _get(row.new, key)
    fmt = _verdict_text if key == "verdict" else (lambda x: "-" if x is None else str(x))
    return fmt(a) if a == b else f"{fmt(a)} -> {fmt(b)}"


def _side_line(name: str, side: Side) -> str:
    p = side.provenance
    return (f"{name}: {side.source}  CUTLASS {p.cutlass_version} (version.h), "
            f"tree {p.tree_hash}, {p.cutlass_root}")


_CHANGE_WORDS = {
    "struct_added": "struct added", "struct_removed": "struct removed",
    "struct_moved": "struct moved", "struct_realigned": "struct alignas changed",
    "struct_bases_changed": "bases changed", "struct_kind_changed": "kind changed",
    "struct_condition_changed": "#if changed", "field_added": "field added",
    "field_removed": "field removed", "field_renamed": "field renamed",
    "field_retyped": "field retyped", "field_realigned": "alignas changed",
    "field_condition_changed": "field #if changed", "fields_reordered": "fields reordered",
    "alias_added": "alias added", "alias_removed": "alias removed",
    "alias_changed": "alias changed", "constant_added": "constant added",
    "constant_removed": "constant removed", "constant_changed": "constant changed",
    "constant_retyped": "constant type changed", "constant_moved": "constant moved",
}


def _short(text: str | None, width: int = 160) -> str:
    if text is None:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def _excerpt(a: str, b: str, width: int = 150) -> tuple[str, str]:
    """Both texts, shortened around where they differ when they are long."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
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


def render_text(res: DiffResult, member_lines: int = 8) -> str:
    """The readable report: sides, structural changes by file, then the numeric table with
    the rows that differ flagged ``*`` (verdict changes first, flagged ``!``). Under each
    changed row: the kernel members whose size changed (at most ``member_lines``; ``offset``
    in bytes from the start of the kernel's SharedStorage) and how many only moved."""
    out = [_side_line("old", res.old), _side_line("new", res.new)]
    out += [f"note: {n}" for n in res.notes]
    if res.structural is not None:
        out.append("")
        if not res.structural:
            what = "identical trees" if res.identical else f"{res.files_compared} headers differ"
            out.append(f"Structural (tree-sitter scan): no changes to storage structs or "
                       f"constants ({what})")
        else:
            out.append(f"Structural (tree-sitter scan of the {res.files_compared} headers that "
                       f"differ): {len(res.structural)} changes")
            counts: dict[str, int] = {}
            for c in res.structural:
                counts[c.change] = counts.get(c.change, 0) + 1
            out.append("  " + ", ".join(f"{_CHANGE_WORDS.get(k, k)} {v}" for k, v in counts.items()))
            last_file = None
            for c in res.structural:
                f = c.new_file or c.old_file
                if f != last_file:
                    out.append(f"  {f}")
                    last_file = f
                if c.old_file and c.new_file and c.old_file == c.new_file:
                    where = f" line {c.old_line} -> {c.new_line}"
                else:
                    where = " " + (f"{c.old_file}:{c.old_line}" if c.old_file else "(none)") + \
                        " -> " + (f"{c.new_file}:{c.new_line}" if c.new_file else "(none)")
                what = c.struct + (f"::{c.field}" if c.field and c.change.startswith("constant")
                                   else f".{c.field}" if c.field else "")
                spec = f"  [{c.specialization}]" if c.specialization else ""
                out.append(f"    {_CHANGE_WORDS.get(c.change, c.change)}: {what}{spec}")
                if c.change not in ("struct_moved", "constant_moved"):
                    if c.old is not None and c.new is not None:
                        a, b = _excerpt(c.old, c.new)
                        out.append(f"        old: {a}")
                        out.append(f"        new: {b}")
                    elif c.change.endswith(("_added", "_removed")) and (c.old or c.new) \
                            and not c.change.startswith("struct"):
                        out.append(f"        {'old' if c.old else 'new'}: {_short(c.old or c.new)}")
                out.append(f"       {where}")
    if res.numeric is not None:
        out.append("")
        src = {"default": "default grid", "flags": "grid from flags", "file": "grid file",
               "python": "grid"}.get(res.grid_source, "grid")
        out.append(f"Numeric (exact engine, libclang), {src}: {describe_grid(res.grid)}")
        if not res.numeric:
            out.append("  nothing computed" + (" (identical trees)" if res.identical else
                                              " (empty grid)"))
        else:
            nchg = len(res.numeric_changes)
            out.append(f"  {nchg} of {len(res.numeric)} configs differ "
                       f"({sum(r.verdict_changed for r in res.numeric)} verdict changes)")
            cols = ["verdict", "stages", "kernel_bytes", "mainloop_bytes", "epilogue_bytes",
                    "tma_bytes.mk", "tma_bytes.nk", "tma_bytes.total"]
            heads = ["", "config", "verdict", "stages", "kernel", "mainloop", "epilogue",
                     "TMA MK", "TMA NK", "TMA total"]
            table = []
            for r in res.numeric:
                c = r.config.to_dict()
                flag = "!" if r.verdict_changed else "*" if r.changed else ""
                name = f"{c['kernel']} {c['a']} {'x'.join(map(str, c['tile']))}"
                if c["stages"] != "auto":
                    name += f" st{c['stages']}"
                if c["preset"] != "flashinfer":
                    name += f" {c['preset']}"
                table.append([flag, name] + [_cell(r, k) for k in cols])
            widths = [max(len(str(x)) for x in col) for col in zip(heads, *table)]
            out.append("  " + "  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip())
            for row, r in zip(table, res.numeric):
                out.append("  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
                if "capacity_bytes" in r.changed:
                    out.append(f"        capacity: {_cell(r, 'capacity_bytes')} B")
                resized = [m for m in r.members if m.old is None or m.new is None
                           or m.old.size != m.new.size]
                shifted = len(r.members) - len(resized)
                names = [m.name for m in resized]
                # leaves (smem_SFB) before the containers that grow with them (tensors)
                resized.sort(key=lambda m: any(n.startswith(m.name + ".") for n in names))
                for m in resized[:member_lines]:
                    out.append(f"        {m.name}: {_member_text(m.old)} -> {_member_text(m.new)}")
                if len(resized) > member_lines:
                    out.append(f"        ... {len(resized) - member_lines} more members change size")
                if shifted:
                    out.append(f"        ({shifted} more members only move: same size, new offset)")
                for side in ("old", "new"):
                    rec = getattr(r, side)
                    if r.verdict_changed and rec and rec.error:
                        out.append(f"        {side}: {rec.error}")
    if res.audit is not None:
        out += _audit_lines(res.audit, member_lines)
    out.append("")
    out.append("differences found" if res.has_differences else "no differences")
    return "\n".join(out) + "\n"


def _tactic_numbers(t) -> str:
    if t is None:
        return "-"
    r = t.report
    if r.error is not None:
        return f"does not compile ({r.error.message})"
    v = {"over_capacity": "over", "exact_fit": "exact fit"}.get(t.verdict, t.verdict)
    return f"{r.kernel.size} B, {r.stages} stages, {v}"


def _audit_lines(a, member_lines: int) -> list[str]:
    """The audit side: verdict changes (``!``), then tactics whose numbers changed (``*``) with
    the members that changed size, tactics only on one side (``+``/``-``), and the unchanged
    ones that are over capacity on both sides (``=``)."""
    fam = f", family {a.family}" if a.family else ""
    out = ["", f"Audit ({a.arch}{fam}): {a.old_tactics} tactics on the old side, {a.new_tactics} "
               f"on the new"]
    counts = {k: sum(r.change == k for r in a.rows) for k in ("verdict", "numbers", "added", "removed", "same")}
    out.append(f"  {counts['verdict']} verdict changes, {counts['numbers']} with other changes, "
               f"{counts['added']} only new, {counts['removed']} only old, {counts['same']} the same")
    flags = {"verdict": "!", "numbers": "*", "added": "+", "removed": "-"}
    for r in a.rows:
        if r.change == "same":
            continue
        if r.change in ("added", "removed"):
            t = r.new or r.old
            out.append(f"  {flags[r.change]} {r.id}: {_tactic_numbers(t)}")
            continue
        out.append(f"  {flags[r.change]} {r.id}: {_tactic_numbers(r.old)} -> {_tactic_numbers(r.new)}")
        resized = [m for m in r.members if m.old is None or m.new is None or m.old.size != m.new.size]
        names = [m.name for m in resized]
        resized.sort(key=lambda m: any(n.startswith(m.name + ".") for n in names))
        for m in resized[:member_lines]:
            out.append(f"        {m.name}: {_member_text(m.old)} -> {_member_text(m.new)}")
        if len(resized) > member_lines:
            out.append(f"        ... {len(resized) - member_lines} more members change size")
        if len(r.members) > len(resized):
            out.append(f"        ({len(r.members) - len(resized)} more members only move)")
    both = [r for r in a.rows if r.change == "same" and r.new.verdict == "over_capacity"]
    for r in both:  # unchanged, but what an upgrade does not fix
        out.append(f"  = {r.id}: over capacity on both sides, {_tactic_numbers(r.new)}")
    out += [f"  note: {n}" for n in a.notes]
    return out


__all__ = ["describe_grid", "render_text"]
