"""The readable table, the Markdown and the CSV of a :class:`~cutlass_layout.model.SweepResult`
(``cutlass-layout sweep``), and the short config labels the table and the plots share."""

from __future__ import annotations

import csv
import io
import json

from ..model import VERDICTS, CompileError, SweepRecord, SweepResult, Verdict, schema_verdict
from ..subjects.config import tile_text
from .common import (
    Column,
    approximation_head,
    audit_command,
    markdown_table,
    md_cell,
    print_table,
    rich_table,
    source_name,
    tactic_text,
    verdict_words,
)

CSV_COLUMNS = (
    "arch",
    "kernel",
    "a",
    "b",
    "tile",
    "cluster",
    "requested_stages",
    "c",
    "d",
    "preset",
    "schedule",
    "epilogue_schedule",
    "scales",
    "stages",
    "mainloop_bytes",
    "epilogue_bytes",
    "kernel_bytes",
    "capacity_bytes",
    "headroom_bytes",
    "verdict",
    "max_stages_that_fit",
    "max_stages_kernel_bytes",
    "stage_search",
    "exact_fit",
    "error",
    "launch_findings",
)


def to_csv(result: SweepResult) -> str:
    """CSV text: one row per config (:data:`CSV_COLUMNS`), tile and cluster as ``MxNxK``,
    empty cells for ``None``, ``stage_search`` the search's status (``found``, ``none fits``,
    ``could not run``, ``not searched``; the reason is in the JSON), the error as its
    one-line text, the launch findings joined by ``; `` (empty: none)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in result.records:
        c = r.config.to_dict()
        if "type" in c:  # a user type (sweep --header): its name in the kernel column
            c = {
                **c,
                "kernel": c["type"],
                "tile": [],
                "cluster": [],
                "stages": c.get("stages", "default"),
                "arch": r.arch_from_tag or c["arch"],
            }
        row = {
            **{k: c.get(k) for k in ("arch", "kernel", "a", "b", "c", "d", "preset", "schedule", "epilogue_schedule")},
            "tile": "x".join(map(str, c["tile"])),
            "cluster": "x".join(map(str, c["cluster"])),
            "requested_stages": c["stages"],
            "scales": "x".join(map(str, c["scales"])) if c.get("scales") else None,
            **{
                k: getattr(r, k)
                for k in (
                    "stages",
                    "mainloop_bytes",
                    "epilogue_bytes",
                    "kernel_bytes",
                    "capacity_bytes",
                    "headroom_bytes",
                    "max_stages_that_fit",
                    "max_stages_kernel_bytes",
                    "exact_fit",
                )
            },
            # the CSV's verdict is the sweep schema's three-valued one, with its own exact_fit column
            "verdict": schema_verdict(r.verdict),
            "stage_search": r.search().status,
            "error": error_text(r.error) if r.error else None,
            "launch_findings": "; ".join(r.launch_findings) or None,
        }
        w.writerow(["" if row[k] is None else row[k] for k in CSV_COLUMNS])
    return buf.getvalue()


def error_text(err: CompileError) -> str:
    """``static_assert failed: MESSAGE (FILE:LINE)``."""
    what = "static_assert failed" if err.kind == "static_assert" else "error"
    where = f" ({err.file}:{err.line})" if err.file else ""
    return f"{what}: {err.message}{where}"


def varying_keys(configs: list[dict]) -> list[str]:
    """Config keys (besides tile and stages) that differ between configs (their
    ``to_dict()``), leaving out B when it always equals A, and C/D when the preset alone
    decides them."""
    if any("type" in c for c in configs):  # user types (sweep --header)
        return [k for k in ("arch", "header", "type") if len({json.dumps(c.get(k)) for c in configs}) > 1]
    keys = ("arch", "kernel", "a", "b", "cluster", "c", "d", "preset", "schedule", "epilogue_schedule", "scales")
    out = [k for k in keys if len({json.dumps(c.get(k)) for c in configs}) > 1]
    if all(c["a"] == c["b"] for c in configs):
        out = [k for k in out if k != "b"]
    for k in ("c", "d"):
        by_preset: dict = {}
        for c in configs:
            by_preset.setdefault(c["preset"], set()).add(c[k])
        if k in out and "preset" in out and all(len(v) == 1 for v in by_preset.values()):
            out.remove(k)
    return out


def config_label(cfg: dict, varying: list[str], tile_bytes: bool = False) -> str:
    """The tile plus the config keys that vary in the sweep (``128x256x128 trtllm-moe``);
    with ``tile_bytes`` the tile's K in bytes of A's element (``128x256x64B``), the unit the
    user typed it in; a user type's name (with its arch and header where they vary)."""
    if "type" in cfg:
        return " ".join([cfg["type"]] + [str(cfg.get(k)) for k in varying if k != "type"])
    parts = [tile_text(cfg["tile"], cfg.get("a"), tile_bytes)]
    for k in varying:
        v = cfg[k]
        v = "x".join(map(str, v)) if isinstance(v, list) else str(v)
        parts.append(f"{k.upper()}={v}" if k in ("a", "b", "c", "d") else v)
    return " ".join(parts)


_STYLE = {
    Verdict.FITS: "green",
    Verdict.EXACT_FIT: "green",
    Verdict.OVER_CAPACITY: "red",
    Verdict.DOES_NOT_COMPILE: "yellow",
}
_COLUMNS = [
    Column("verdict"),
    Column("config", wrap=True),
    Column("stages", right=True),
    Column("mainloop", right=True, drop=5),
    Column("epilogue", right=True, drop=5),
    Column("kernel", right=True),
    Column("headroom", right=True),
    Column("max that fits", right=True),
]


def _table(result: SweepResult, tile_bytes: bool):
    """(records in report order, the line of what all configs share, rows, labels)."""
    recs = result.sorted_records()
    cfgs = {id(r): r.to_dict()["config"] for r in result.records}
    common = cfgs[id(result.records[0])]
    var = varying_keys(list(cfgs.values()))
    same = [
        k
        for k in ("arch", "kernel", "a", "b", "preset", "c", "d", "header")
        if k not in var and k in common and len({json.dumps(c.get(k)) for c in cfgs.values()}) == 1
    ]
    fixed = [f"{k} {'x'.join(map(str, common[k])) if isinstance(common[k], list) else common[k]}" for k in same]
    head = f"{len(recs)} configs: " + ", ".join(fixed)
    labels = {id(r): config_label(cfgs[id(r)], var, tile_bytes) for r in recs}

    def n(v):
        return "-" if v is None else str(v)

    rows = []
    for r in recs:
        st = r.config.stages
        stages = ("-" if r.stages is None else str(r.stages)) if st is None else f"{st} (set)"
        if st is None and r.stages is not None:
            stages = f"auto {r.stages}"
        mx = (
            "could not search"
            if r.search().status == "could not run"
            else "none"
            if r.max_stages_that_fit is None
            else f"{r.max_stages_that_fit} ({r.max_stages_kernel_bytes})"
        )
        verdict = verdict_words(schema_verdict(r.verdict)) + (" (exact fit)" if r.exact_fit else "")
        rows.append(
            [
                (verdict, _STYLE[r.verdict]),
                labels[id(r)],
                stages,
                n(r.mainloop_bytes),
                n(r.epilogue_bytes),
                n(r.kernel_bytes),
                n(r.headroom_bytes),
                mx,
            ]
        )
    return recs, head, rows, labels


def summary(record: SweepRecord) -> str:
    """One line about a sweep's ``record``, e.g. ``auto: 4 stages, 102400 B, over by 1024; max
    that fits: 3 stages, 79872 B``."""
    st = record.config.stages
    user = hasattr(record.config, "takes_stages")  # a user type (sweep --header)
    if user:
        head = "the header's default" if st is None else f"STAGES={st}"
    else:
        head = "auto" if st is None else f"StageCount<{st}>"
    if record.verdict == Verdict.DOES_NOT_COMPILE:
        err = record.error
        what = "static_assert" if err is not None and err.kind == "static_assert" else "error"
        first = f"{head}: does not compile ({what}: {err.message if err else '?'})"
    else:
        headroom, cap = record.headroom_bytes, record.capacity_bytes
        assert headroom is not None and cap is not None  # laid out: fits or over
        if record.verdict in (Verdict.FITS, Verdict.EXACT_FIT):
            how = f"fits, headroom {headroom}"
        else:
            how = f"over by {-headroom}"
        size = record.kernel_bytes if record.kernel_bytes is not None else cap - headroom
        first = f"{head}: {record.stages} stages, {size} B, {how}"
    search = record.search()
    if search.status == "not searched":
        return f"{first} (the type takes no STAGES: no stage count searched)"
    if search.status == "could not run":
        return f"{first}; could not search: {search.reason}"
    if record.max_stages_that_fit is None:
        return f"{first}; no stage count fits"
    return f"{first}; max that fits: {record.max_stages_that_fit} stages, {record.max_stages_kernel_bytes} B"


def _notes(recs, labels) -> list[tuple[str, str | None]]:
    """A line per config that does not fit or whose builder's choice is not the largest
    stage count that fits, and where its error is."""
    out: list[tuple[str, str | None]] = []
    for r in recs:
        if schema_verdict(r.verdict) != Verdict.FITS or r.max_stages_that_fit != r.stages:
            out.append((f"{labels[id(r)]}: {summary(r)}", None))
            if r.error and r.error.file:  # the summary has the message
                out.append((f"  at {r.error.file}:{r.error.line}", r.error.file))
    return out


_LEGEND = (
    "bytes throughout; 'max that fits' = largest StageCount<N> (with --header: "
    "STAGES=N) whose kernel fits (laid out, as is N+1)"
)


def _capacity_text(recs) -> str | None:
    """``capacity 101376 B per block``, or each arch's when a sweep spans several."""
    caps = sorted({r.capacity_bytes for r in recs if r.capacity_bytes})
    if not caps:
        return None
    if len(caps) == 1:
        return f"capacity {caps[0]} B per block"
    return "capacity per block " + ", ".join(f"{c} B" for c in caps) + " (per arch)"


_CHECKED = (
    "checked: types (the SharedStorage layouts; asserts inside kernel bodies were "
    "not instantiated: `layout --check-kernel` does, per config)"
)


def approximation_notes(result: SweepResult, tile_bytes: bool = False) -> list[str]:
    """What the preset configs' numbers approximate: a line per preset
    (:func:`~cutlass_layout.reports.common.approximation_head`); where the tree is a
    flashinfer install's, the tactics its cached audit has for a config (indented below the
    config's label; once for configs that differ only in their stage count, which the
    tactics do not depend on, and once for configs given the same tactics), one line naming
    the configs it has none for, or the audit to run when it is not cached (each config
    named once)."""
    recs = [r for r in result.sorted_records() if r.approximation is not None]
    if not recs:
        return []
    out = list(dict.fromkeys(approximation_head(r.approximation) for r in recs))
    cfgs = {id(r): r.to_dict()["config"] for r in result.records}
    var = varying_keys(list(cfgs.values()))
    todo: dict[str, list[str]] = {}
    none: dict[tuple, list[str]] = {}
    built: dict[tuple, list[str]] = {}
    for r in recs:
        appr = r.approximation
        assert appr is not None  # recs: those with one
        label = config_label(cfgs[id(r)], var, tile_bytes)
        if appr.audited is None:
            continue
        if not appr.audited:
            group = todo.setdefault(audit_command(appr), [])
        elif not appr.tactics:
            group = none.setdefault((appr.install, appr.family), [])
        else:  # the same tactics for each stage count of a config: said once
            group = built.setdefault((appr.install, tuple(tactic_text(t) for t in appr.tactics)), [])
        if label not in group:
            group.append(label)
    for (install, texts), labels in built.items():
        out.append(
            f"{', '.join(labels)}: {install} builds {'it' if len(labels) == 1 else 'them'} as (its audit, cached):"
        )
        out += [f"  {t}" for t in texts]
    for (install, family), labels in none.items():
        fam = f"{family} tactic" if family else "JIT-module tactic"
        out.append(
            f"{install} builds no {fam} of {', '.join(labels)} (same arch, kernel, A, B, D, "
            "tile, cluster; its audit, cached)"
        )
    for command, labels in todo.items():
        out.append(
            f"the install's own kernels of these configs are not audited here (nothing is "
            f"audited implicitly): `{command}` lays them out, and this report then names them"
        )
    return out


def render(result: SweepResult, console=None, *, tile_bytes: bool = False) -> None:
    """Print the table (sorted by verdict, then headroom), a line per config that does
    not fit, and what the presets approximate (:func:`approximation_notes`); tiles with K in
    bytes of A's element when ``tile_bytes``."""
    from .layout import default_console

    con = console or default_console()
    p = result.provenance
    con.print(f"CUTLASS {p.cutlass_version} at {p.cutlass_root} (tree {p.tree_hash}; {p.origin})", soft_wrap=True)
    recs, head, rows, labels = _table(result, tile_bytes)
    con.print(head, soft_wrap=True)
    print_table(con, rich_table(_COLUMNS, rows))
    cap = _capacity_text(recs)
    if cap:
        con.print(f"{cap}; {_LEGEND}", soft_wrap=True)
    con.print(_CHECKED, soft_wrap=True)
    for line, where in _notes(recs, labels):
        con.print(line, soft_wrap=True, style="dim" if where else None, markup=False)
    counts = {v: sum(schema_verdict(r.verdict) == v for r in recs) for v in VERDICTS}
    con.print(", ".join(f"{counts[v]} {verdict_words(v)}" for v in VERDICTS), soft_wrap=True)
    for line in approximation_notes(result, tile_bytes):
        con.print(line, soft_wrap=True, markup=False)


def to_markdown(result: SweepResult, *, tile_bytes: bool = False) -> str:
    """The sweep in GitHub Markdown: the source, what the configs share, the table, the
    configs that do not fit and the counts."""
    p = result.provenance
    recs, head, rows, labels = _table(result, tile_bytes)
    cap = _capacity_text(recs)
    out = [
        f"#### Sweep: {source_name(p.origin, p.cutlass_version)}, tree `{p.tree_hash}`",
        "",
        md_cell(head) + (f"; {cap}" if cap else ""),
        "",
        markdown_table(_COLUMNS, rows),
    ]
    notes = _notes(recs, labels)
    for line, where in notes:
        if where:  # the error's place, on its config's line
            out[-1] += f" (at `{line.strip()[3:]}`)"
        else:
            out.append(f"- {md_cell(line)}")
    if notes:
        out.append("")
    counts = {v: sum(schema_verdict(r.verdict) == v for r in recs) for v in VERDICTS}
    out += [", ".join(f"{counts[v]} {verdict_words(v)}" for v in VERDICTS) + f"; {_LEGEND}.", "", _CHECKED]
    approximations = approximation_notes(result, tile_bytes)
    if approximations:
        out += [""] + [
            f"- {md_cell(ln)}" if not ln.startswith("  ") else f"  - {md_cell(ln.strip())}" for ln in approximations
        ]
    return "\n".join(out) + "\n"


__all__ = [
    "CSV_COLUMNS",
    "approximation_notes",
    "config_label",
    "error_text",
    "render",
    "summary",
    "to_csv",
    "to_markdown",
    "varying_keys",
]
