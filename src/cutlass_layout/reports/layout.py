"""The readable table, the Markdown and the JSON text of one
:class:`~cutlass_layout.model.LayoutReport` (``cutlass-layout layout``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..model import EXACT_FIT_MEANING, FieldLayout, LayoutReport, StructLayout
from ..model.launch import ABI_NAMES, occupancy_findings
from ..subjects import shapes
from .common import (
    Column,
    approximation_head,
    approximation_lines,
    json_text,
    markdown_table,
    md_cell,
    print_table,
    rich_table,
    source_name,
)


def to_json(rep: LayoutReport, indent: int | None = 2) -> str:
    """The documented ``layout --json`` text (schema ``cutlass-layout/layout/1``)."""
    return json_text(rep.to_dict()) if indent == 2 else json.dumps(rep.to_dict(), indent=indent)


_STRUCT_COLUMNS = [
    Column("offset", right=True),
    Column("size", right=True),
    Column("pad", right=True),
    Column("member", code=True),
    Column("alignas", right=True, drop=2),
    Column("type", wrap=True, code=True),
]


def struct_rows(s: StructLayout, max_depth: int | None = None, *, dotted: bool = False) -> list[list[str]]:
    """The rows of a struct's table (bytes): offset, size, padding before, member (indented
    by depth, or its dotted path with ``dotted``), ``alignas``, type; a ``(tail padding)`` row
    after each member with tail padding, and a last ``= sizeof, align N`` row."""
    rows = []

    def walk(fields: list[FieldLayout], depth: int, prefix: str):
        for f in fields:
            name = (prefix + f.name) if dotted else "  " * depth + f.name
            rows.append(
                [
                    str(f.offset),
                    str(f.size),
                    str(f.padding_before or ""),
                    name,
                    str(f.declared_alignas) if f.declared_alignas else "",
                    f.type,
                ]
            )
            if f.fields and (max_depth is None or depth + 1 < max_depth):
                walk(f.fields, depth + 1, prefix + f.name + ".")
                if f.tail_padding:
                    pad = f"{prefix}{f.name} (tail padding)" if dotted else "  " * (depth + 1) + "(tail padding)"
                    rows.append(["", "", str(f.tail_padding), pad, "", ""])

    walk(s.fields, 0, "")
    if s.tail_padding:
        rows.append([str(s.size - s.tail_padding), "", str(s.tail_padding), "(tail padding)", "", ""])
    rows.append(["", str(s.size), "", f"= sizeof, align {s.align}", "", ""])
    return rows


def struct_table(title: str, s: StructLayout, max_depth: int | None = None) -> Table:
    """A table of one struct: offset, size, padding before, member tree, alignas, type
    (bytes). The numbers keep their width at any terminal width; the type column folds."""
    return rich_table(_STRUCT_COLUMNS, struct_rows(s, max_depth), title=title, last_bold=True)


def default_console(wide: bool = False) -> Console:
    """A console for stdout: the terminal's width (tables too wide for it leave columns out,
    :func:`~cutlass_layout.reports.common.print_table`), every column where ``wide`` (the
    lines whole: the terminal wraps them), or 160 columns when piped (a table wider than that
    is printed whole, every column)."""
    probe = Console()
    if probe.is_terminal:
        return Console(highlight=False, width=100_000, soft_wrap=True) if wide else Console(highlight=False)
    # piped or redirected: long lines stay whole (grep, copy and paste)
    return Console(highlight=False, width=160, soft_wrap=True)


_KERNEL2X_NOTE = (
    "a CUTLASS 2.x kernel: its SharedStorage holds the mainloop's (Mma) and the "
    "epilogue's storage, in a union where the kernel overlaps them"
)
_DIRECT_CONV_NOTE = (
    "a CUTLASS 2.x direct convolution: it launches with Params::get_smem_size(), not sizeof(SharedStorage)"
)


def _sizes_note(rep: LayoutReport) -> str:
    """What the sizes line says about how the parts compose, or ``""``."""
    if rep.subject_kind == "kernel2x":
        return _KERNEL2X_NOTE
    if rep.subject_kind == "direct_conv":
        return _DIRECT_CONV_NOTE
    if rep.kernel is not None:
        return "the kernel composes the collectives' storage with pipelines and alignment"
    return ""


def storage_title(rep: LayoutReport) -> str:
    """``SharedStorage of <type>: <what it is>`` for a type of no GEMM shape
    (:mod:`cutlass_layout.subjects.shapes`)."""
    assert rep.storage is not None
    return f"SharedStorage of {rep.config.get('type', '?')}: {shapes.describe(rep.subject_kind, rep.storage)}"


def launch_text(rep: LayoutReport) -> str:
    """``Launch size: Params::get_smem_size() = <expression> = N B (file:line)``."""
    c = rep.launch
    assert c is not None
    where = f" ({c.file}:{c.line}; the device wrapper passes it to the launch)" if c.file else ""
    return f"Launch size: {c.name} = {c.expression} = {c.value} B{where}"


def shown_header(path: str) -> str:
    """Where a header lies, as a report shows it: inside a flashinfer install from its
    ``flashinfer/`` folder (``flashinfer/data/cccl/libcudacxx/include/cuda/__device/arch_traits.h``),
    else from its include root (``cuda/__device/arch_traits.h``): no cache or site-packages path."""
    parts = Path(path).parts
    if "flashinfer" in parts and "data" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("flashinfer") :])
    if "cuda" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("cuda") :])
    return Path(path).name


def occupancy_lines(rep: LayoutReport) -> list[str]:
    """A 3.x kernel's occupancy in full: the CTA count and its limiting factors, then each
    factor's sum (bytes, registers, threads) and where the per-SM limits come from; none for
    a report without :attr:`~LayoutReport.occupancy`."""
    o = rep.occupancy
    if o is None:
        return []
    out = [f"Occupancy: {o.one_line()}"]
    lim, r = o.limits, o.registers
    split = (
        "not declared"
        if r is None
        else f"{r.per_cta} per CTA (128 x {r.load_registers} x {r.load_warp_groups} load + "
        f"128 x {r.mma_registers} x {r.mma_warp_groups} MMA warp groups)"
    )
    if lim is not None:
        out += [
            f"  shared memory: {lim.smem_per_sm} B per SM // ({o.dynamic_smem_bytes} B dynamic + "
            f"{lim.reserved_smem_per_block} B reserved per CTA) = {o.by_shared_memory}",
            "  registers: "
            + (f"{lim.registers_per_sm} per SM // {split} = {o.by_registers}" if r is not None else split),
            f"  threads: {lim.max_threads_per_sm} per SM // {o.threads_per_block} per CTA "
            f"(MaxThreadsPerBlock) = {o.by_threads}",
            f"  blocks: {lim.max_blocks_per_sm} per SM",
            f"  per-SM limits: cuda::arch_traits<arch_id::{lim.arch_id}>() ({shown_header(lim.header)})",
        ]
    else:
        out += [
            f"  threads per CTA (MaxThreadsPerBlock): {o.threads_per_block}; dynamic shared memory "
            f"{o.dynamic_smem_bytes} B; registers: {split}"
        ]
    if o.min_blocks_per_sm is not None:
        out.append(f"  MinBlocksPerMultiprocessor: {o.min_blocks_per_sm}")
    if o.note:
        out.append(f"  note: {o.note}")
    return out


def params_lines(rep: LayoutReport) -> list[str]:
    """A 3.x kernel's ``Params`` on each host ABI read (Linux x86-64, then MSVC x64): size and
    alignment (against the parameter limit), each TMA descriptor's offset and member path, then
    each finding (``finding: ...``); where one ABI's was not read, why; none for a report
    without :attr:`~LayoutReport.params`."""
    out: list[str] = []
    for p in (rep.params, rep.params_msvc):
        if p is None:
            continue
        msvc = p.abi == "msvc-x64"
        abi = ABI_NAMES.get(p.abi, p.abi)
        out.append(
            f"Params on {abi}, cl.exe's default __cplusplus: sizeof {p.size} B, align {p.align}; "
            f"{len(p.descriptors)} TMA descriptor(s)"
            if msvc
            else f"Params: sizeof {p.size} B, align {p.align}; kernel parameter limit {p.limit_bytes} B "
            f"(CUDA {p.cuda_version}); {len(p.descriptors)} TMA descriptor(s); on {abi}"
        )
        out += [
            f"  {d.offset:>6}  {d.path}" + ("" if d.offset % 64 == 0 else "  (not 64-byte aligned)")
            for d in p.descriptors
        ]
        out += [f"  finding: {f}" for f in p.findings()]
    if out and rep.params_msvc is None:
        out.append(
            f"Params on {ABI_NAMES['msvc-x64']}: not read" + (f" ({rep.params_note})" if rep.params_note else "")
        )
    elif rep.params_note:
        out.append(f"  note: {rep.params_note}")
    return out


def cluster_lines(rep: LayoutReport) -> list[str]:
    """A 3.x kernel's cluster (read from its ``ClusterShape``) and its legality on the arch,
    then each launch finding that is not the occupancy's or the Params' (those are in their own
    lines): none for a report without :attr:`~LayoutReport.cluster`."""
    c = rep.cluster
    if c is None:
        return []
    shape = "x".join("?" if e is None else str(e) for e in c.shape)
    mma = "" if c.mma_ctas is None else f", MMA over {c.mma_ctas} CTA(s)"
    out = [f"Cluster: {shape}{mma}: {c.verdict.replace('_', '-')}" + (f" on {c.family}" if c.family else "")]
    out += [f"  finding: {f}" for f in c.findings()]
    if c.verdict in ("run_time", "not_checked") and c.reason:
        out.append(f"  note: {c.reason}")
    return out


def launch_finding_lines(rep: LayoutReport) -> list[str]:
    """``finding: 0 CTAs/SM ...`` where the occupancy is 0 (the Params' and the cluster's
    findings are in their own lines)."""
    return [f"  finding: {f}" for f in occupancy_findings(rep.occupancy)]


def tma_lines(rep: LayoutReport) -> list[str]:
    """The mainloop's TMA transaction bytes against its TMA-filled stage buffers
    (:class:`~cutlass_layout.model.launch.TmaCheck`): the status, each declared count with
    its buffers, the rule's CUTLASS source, then each finding (``finding: ...``); none for a
    report without :attr:`~LayoutReport.tma_check`."""
    t = rep.tma_check
    if t is None:
        return []
    head = {"agrees": "agrees", "mismatch": "mismatch", "no TMA": "no TMA"}.get(t.status, t.one_line())
    out = [f"TMA transaction bytes vs stage buffers ({t.collective}): {head}"]
    for p in t.parts:
        terms = (
            " + ".join(
                f"{b.member} {b.size} / {b.stages} = {b.stage_bytes}"
                + (f" ({b.why()}: {b.counted_bytes})" if b.counted_bytes != b.stage_bytes else "")
                for b in p.buffers
            )
            or "none"
        )
        times = f"{p.factor} x ({terms})" if p.factor != 1 else terms
        mark = "==" if p.agrees else "!="
        out.append(f"  {p.constant} {p.declared} B {mark} {times} = {p.buffer_bytes} B")
    if t.rule:
        out.append(f"  rule: {t.rule}")
    if t.note and t.status != "not verified":
        out.append(f"  note: {t.note}")
    out += [f"  finding: {f}" for f in t.findings()]
    return out


def approximation_text(rep: LayoutReport, tile_bytes: bool = False) -> list[str]:
    """The lines on what a preset config's numbers approximate
    (:func:`~cutlass_layout.reports.common.approximation_head`), and what the install builds
    for the config where its audit is cached (or the audit to run); none for a user type or
    a tactic. ``tile_bytes``: the tile as typed with K in bytes."""
    appr = rep.approximation
    if appr is None:
        return []
    from ..subjects.config import tile_text

    tile = tile_text(rep.config["tile"], rep.config.get("a"), tile_bytes)
    return [approximation_head(appr), *approximation_lines(appr, tile)]


def render(
    rep: LayoutReport,
    console: Console | None = None,
    *,
    max_depth: int | None = 3,
    structs: tuple[str, ...] = ("kernel",),
    tile_bytes: bool = False,
) -> None:
    """Print the readable report: provenance, stages, TMA bytes, member tables, verdict, and
    for a preset what it approximates (:func:`approximation_text`)."""
    con = console or default_console()
    cfg = rep.config
    p = rep.provenance
    con.print(f"[bold]{_label(cfg)}[/bold]", soft_wrap=True)
    con.print(f"CUTLASS {p.cutlass_version} at {p.cutlass_root} (tree {p.tree_hash}; {p.origin})", soft_wrap=True)
    if rep.error is not None:
        con.print(f"[red]{rep.error.one_line()}[/red]", soft_wrap=True)
        con.print(_checked_text(rep), soft_wrap=True)
        for line in approximation_text(rep, tile_bytes):
            con.print(line, soft_wrap=True, markup=False)
        return
    if rep.storage is not None:  # no GEMM shape: no stages, TMA bytes or parts to name
        con.print(escape(storage_title(rep)), soft_wrap=True)
        print_table(con, struct_table(f"SharedStorage: {escape(rep.storage.type)}", rep.storage, max_depth))
    else:
        con.print(f"Stages: {stages_text(rep)}   TMA transaction bytes per stage: {tma_text(rep)}", soft_wrap=True)
        parts = [
            f"{n} {getattr(rep, n).size} B" for n in ("kernel", "mainloop", "epilogue") if getattr(rep, n) is not None
        ]
        note = _sizes_note(rep)
        con.print("SharedStorage sizes: " + ", ".join(parts) + (f"  ({note})" if note else ""), soft_wrap=True)
        if rep.mainloop_class is not None:
            con.print(
                mainloop_text(rep),
                soft_wrap=True,
                markup=False,
                style=None if rep.mainloop_class.staged_as_loaded else "yellow",
            )
    for name in structs:
        s = getattr(rep, name)
        if s is not None:
            print_table(con, struct_table(f"{name} SharedStorage: {escape(s.type)}", s, max_depth))
    if rep.launch is not None:
        con.print(escape(launch_text(rep)), soft_wrap=True)
    if rep.builder_budget is not None:
        con.print(budget_text(rep), soft_wrap=True)
    launch = occupancy_lines(rep) + launch_finding_lines(rep) + params_lines(rep) + cluster_lines(rep) + tma_lines(rep)
    for line in launch:
        con.print(line, soft_wrap=True, markup=False, style="yellow" if "finding:" in line else None)
    con.print(total_text(rep, markup=True), soft_wrap=True)
    if rep.capacity is not None and rep.capacity.source:  # total_text: a report past its error has one
        con.print(f"  capacity: {rep.capacity.source}", soft_wrap=True)
    con.print(_checked_text(rep), soft_wrap=True)
    for e in rep.clang_only:
        where_e = f" ({e.file}:{e.line})" if e.file else ""
        con.print(
            f"  clang-only diagnostic, not a compile error (nvcc's front end accepts it): {e.message}{where_e}",
            soft_wrap=True,
        )
    for line in approximation_text(rep, tile_bytes):
        con.print(line, soft_wrap=True, markup=False)


def mainloop_text(rep: LayoutReport) -> str:
    """A 2.x mainloop's line: ``Mainloop (the kernel's Mma): cutlass::gemm::threadblock::
    MmaPipelined<...>; A and B staged as cutlass::half_t in shared memory, the kernel's A and B
    are float: CUTLASS's DefaultMma ... (file:line)``, or ``...; A float and B float in shared
    memory, as the kernel loads them``."""
    m = rep.mainloop_class
    assert m is not None
    what = "the kernel's Mma" if rep.subject_kind == "kernel2x" else "the type itself"
    if m.staged_as_loaded:
        return f"Mainloop ({what}): {m.type}; A {m.smem_a} and B {m.smem_b} in shared memory, as the kernel loads them"
    return f"Mainloop ({what}): {m.type}; {m.note}"


def total_text(rep: LayoutReport, markup: bool = False) -> str:
    """``Total 84992 B of 101376 B (sm120_smem_capacity_bytes, cutlass/arch/arch.h:45): fits,
    headroom 16384 B`` (over capacity by N B; an exact fit says so); ``markup`` colors the
    verdict for the terminal."""

    def color(text, c):
        return f"[{c}]{text}[/{c}]" if markup else text

    cap = rep.capacity
    assert cap is not None and rep.headroom_bytes is not None
    where = f"{cap.name}, {cap.file}:{cap.line}" if cap.file else cap.name
    if rep.fits:
        verdict = color("fits", "green")
        if rep.exact_fit:
            verdict += " " + color(f"({EXACT_FIT_MEANING})", "yellow")
        else:
            verdict += f", headroom {rep.headroom_bytes} B"
    else:
        verdict = color(f"over capacity by {-rep.headroom_bytes} B", "red")
    if rep.launch is not None:
        what = "Launch size"
    elif rep.storage is not None:
        what = f"SharedStorage of {rep.config.get('type', rep.storage.type)}"
    elif rep.kernel is not None:
        what = "Total"
    else:
        what = f"{rep.subject_kind or 'Collective'} alone (no kernel around it)"
    return f"{what[0].upper()}{what[1:]} {rep.smem_bytes} B of {cap.value} B ({where}): {verdict}"


def to_markdown(
    rep: LayoutReport, *, max_depth: int | None = 3, structs: tuple[str, ...] = ("kernel",), tile_bytes: bool = False
) -> str:
    """The report in GitHub Markdown, for an issue or a PR: the config as a heading, the
    source, the verdict, stages and TMA bytes, one member table per struct (dotted member
    names, bytes), the builder budget, what was checked, and for a preset what it
    approximates (:func:`approximation_text`)."""
    p = rep.provenance
    out = [f"#### {_label(rep.config)}", "", f"{source_name(p.origin, p.cutlass_version)}, tree `{p.tree_hash}`", ""]
    if rep.error is not None:
        out += [f"**does not compile**: {md_cell(rep.error.one_line())}", "", _checked_text(rep)]
        return "\n".join(out + _approximation_md(rep, tile_bytes)) + "\n"
    out += [f"**{md_cell(total_text(rep))}**", ""]
    if rep.storage is not None:
        out += [
            md_cell(storage_title(rep)),
            "",
            f"SharedStorage: `{rep.storage.type}`",
            "",
            markdown_table(_STRUCT_COLUMNS, struct_rows(rep.storage, max_depth, dotted=True)),
        ]
    else:
        out += [
            f"Stages: {stages_text(rep)}; TMA transaction bytes per "
            f"stage: {tma_text(rep)}; SharedStorage sizes: "
            + ", ".join(
                f"{n} {getattr(rep, n).size} B"
                for n in ("kernel", "mainloop", "epilogue")
                if getattr(rep, n) is not None
            ),
            "",
        ]
    if rep.subject_kind in ("kernel2x", "direct_conv"):
        out += [_sizes_note(rep), ""]
    if rep.mainloop_class is not None:
        out += [md_cell(mainloop_text(rep)), ""]
    for name in structs:
        st = getattr(rep, name)
        if st is not None:
            out += [
                f"{name} SharedStorage: `{st.type}`",
                "",
                markdown_table(_STRUCT_COLUMNS, struct_rows(st, max_depth, dotted=True)),
            ]
    if rep.launch is not None:
        out += [md_cell(launch_text(rep)), ""]
    if rep.builder_budget is not None:
        out += [md_cell(budget_text(rep)), ""]
    for block in (
        occupancy_lines(rep) + launch_finding_lines(rep),
        params_lines(rep),
        cluster_lines(rep),
        tma_lines(rep),
    ):
        if block:
            out += [md_cell(block[0]), ""] + [f"- {md_cell(line.strip())}" for line in block[1:]] + [""]
    if rep.capacity is not None and rep.capacity.source:  # total_text: a report past its error has one
        out += [f"capacity: {md_cell(rep.capacity.source)}", ""]
    out.append(_checked_text(rep))
    out += [
        f"- clang-only diagnostic, not a compile error (nvcc's front end accepts it): "
        f"{md_cell(e.message)}" + (f" (`{e.file}:{e.line}`)" if e.file else "")
        for e in rep.clang_only
    ]
    return "\n".join(out + _approximation_md(rep, tile_bytes)) + "\n"


def _approximation_md(rep: LayoutReport, tile_bytes: bool) -> list[str]:
    lines = approximation_text(rep, tile_bytes)
    if not lines:
        return []
    return ["", lines[0], *[f"- {md_cell(ln.strip())}" if ln.startswith("  ") else ln for ln in lines[1:]]]


def budget_text(rep: LayoutReport) -> str:
    """One paragraph: how the builder chose the stage count, and what it left out."""
    b = rep.builder_budget
    assert b is not None and rep.smem_bytes is not None
    cap = b.capacity
    where = f", {cap.file}:{cap.line}" if cap.file else ""
    size = rep.smem_bytes
    gap = size - b.budgeted_bytes
    if gap > 0:
        why = (
            f"{gap} B more than budgeted: the builder does not count the kernel's own "
            "pipelines, scheduler, descriptors and alignment"
        )
    elif gap < 0:
        why = f"{-gap} B less than budgeted: the builder over-counts some per-stage pieces"
    else:
        why = "exactly as budgeted"
    return (
        f"Builder budget: ({cap.name} {cap.value} B{where} - carve-out {b.carveout_bytes} B) / "
        f"{b.stage_bytes} B per stage as the builder counts it = {b.stages} stages; it budgets "
        f"{b.budgeted_bytes} B, the {'kernel' if rep.kernel is not None else 'mainloop'} takes {size} B ({why})"
    )


def stages_text(rep: LayoutReport) -> str:
    """``4``, or a sparse mainloop's ``A 3, B 3, E 3`` (``-`` when there is no stage count)."""
    if rep.stage_counts:
        return ", ".join(f"{k} {'-' if v is None else v}" for k, v in rep.stage_counts.items())
    return "-" if rep.stages is None else str(rep.stages)


def _checked_text(rep: LayoutReport) -> str:
    if rep.checked == "kernel":
        if rep.clang_only:
            return (
                "checked: kernel (the device entry point was instantiated too; clang reported "
                f"{len(rep.clang_only)} diagnostic(s) that nvcc does not, below)"
            )
        return "checked: kernel (the device entry point was instantiated too)"
    return "checked: types (asserts inside kernel bodies were not instantiated; --check-kernel does)"


def tma_text(rep: LayoutReport) -> str:
    """``MK a + NK b = total``, every term of the sum: where ``TmaTransactionBytes`` adds more
    than its MK and NK parts (SM90 mixed input's ``+ TmaTransactionBytesExtra``, the scales and
    zeros), the rest, named as the expression names it, is the total minus MK and NK (each
    value the compiler's)."""
    t = rep.tma_transaction_bytes
    if t is None or t.total is None:
        return "(the mainloop defines none)"
    if t.mk is None or t.nk is None:
        return f"{t.total.value}"
    terms = [f"MK {t.mk.value}", f"NK {t.nk.value}"]
    rest = t.total.value - t.mk.value - t.nk.value
    if rest:
        others = [
            n
            for n in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", t.total.expression or ""))
            if n not in (t.mk.name, t.nk.name, "TmaTransactionBytesMK", "TmaTransactionBytesNK")
        ]
        terms.append(f"{' + '.join(others) if others else 'the rest'} {rest}")
    return f"{' + '.join(terms)} = {t.total.value}"


def _label(cfg: dict) -> str:
    if "tactic" in cfg:
        tile = "x".join(map(str, cfg["tile"] or [])) or "?"
        return f"tactic {cfg['tactic']}  tile {tile}  ({cfg['file']}:{cfg['line']}, {cfg['launcher']})"
    if "type" in cfg:
        arch = cfg["arch"] or "arch of its tag"
        if cfg.get("arch_from") == "tag":
            arch += ", from the type's arch tag; --arch for another GPU"
        st = f", STAGES={cfg['stages']}" if cfg.get("stages") is not None else ""
        return f"{cfg['type']} from {cfg['header']} ({arch}{st})"
    t = "x".join(map(str, cfg["tile"]))
    sched = "" if cfg.get("schedule", "auto") == "auto" else f"  schedule {cfg['schedule']}"
    epi = cfg.get("epilogue_schedule", "auto")
    epi = "" if epi == "auto" else f", epilogue {epi}"
    if cfg.get("scales"):
        sched += f"  scales {'x'.join(map(str, cfg['scales']))}"
    return (
        f"{cfg['arch']} {cfg['kernel']} {cfg['a']} x {cfg['b']}  tile {t}  "
        f"cluster {'x'.join(map(str, cfg['cluster']))}  stages {cfg['stages']}{sched}  "
        f"preset {cfg['preset']} (C {cfg['c']}, D {cfg['d']}{epi})"
    )
