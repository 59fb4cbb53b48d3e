"""Report of an audit: one table per family, the errors, and a count per verdict."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from ..model import EXACT_FIT_MEANING, Verdict
from ..sources.flashinfer import checkout_path
from ..subjects.config import tile_text
from .common import (
    VERDICT_TEXT,
    Column,
    markdown_table,
    md_cell,
    origin_words,
    print_table,
    rich_table,
    source_name,
    verdict_words,
)
from .layout import default_console

_VERDICT_STYLE = {
    Verdict.FITS: "green",
    Verdict.EXACT_FIT: "yellow",
    Verdict.OVER_CAPACITY: "red",
    Verdict.DOES_NOT_COMPILE: "magenta",
}


def verdict_cell(x) -> tuple[str, str]:
    """A tactic's (or library kernel's) verdict cell: its words and their style."""
    return verdict_words(x.verdict), _VERDICT_STYLE[x.verdict]


def verdict_counts(tactics) -> dict[Verdict, int]:
    """``{verdict: how many of tactics have it}``, every verdict, in the table's order."""
    return {v: sum(x.verdict == v for x in tactics) for v in VERDICT_TEXT}


def _yes_no(v) -> str:
    return "?" if v is None else ("yes" if v else "no")


def fix_cell(x) -> str:
    """The table's ``fix`` cell: ``2 st 74752 B, carve-out 17617`` (the largest stage count
    that fits, its kernel bytes, the smallest carve-out that makes the builder choose it),
    ``none fits`` (none searched fits), ``none: 2 st is the fewest`` (the tactic already has the
    fewest stages its collective takes), ``?`` where it could not be searched, ``-`` where none
    was needed."""
    f = x.fix
    if f is None:
        return "-"
    if f.stages is None:
        if f.fewest_stages:
            return f"none: {f.fewest_stages} st is the fewest"
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
        why = f.error or (
            f"it has {f.fewest_stages} stages, the fewest its collective takes "
            f"(static_assert Stages >= {f.fewest_stages}): no stage count fits"
            if f.fewest_stages
            else f"no stage count fits ({tried})"
        )
        return [f"What fits instead: nothing found: {why}"]
    out = [
        f"What fits instead: StageCount<{f.stages}> (the launcher with its mainloop builder's stage "
        f"count replaced, laid out): kernel {f.kernel_bytes} B, mainloop {f.mainloop_bytes} B, "
        f"headroom {f.headroom_bytes} B (searched {tried})"
    ]
    b = f.builder
    if f.carveout_bytes is not None:
        nums = f" ({b.capacity.name} {b.capacity.value} B, {b.stage_bytes} B per stage)" if b is not None else ""
        out.append(
            f"  or StageCountAutoCarveout<{f.carveout_bytes}>: the smallest carve-out C with which the "
            f"builder chooses {f.stages} stages{nums}; its formula: {f.formula}"
        )
    if b is not None and f.uncounted_bytes is not None:
        gap = f.uncounted_bytes
        parts = ", ".join(f"{k.replace('_', ' ')} {v} B" for k, v in f.uncounted.items() if v)
        how = (
            f"{gap} B more than budgeted: {parts}"
            if gap > 0
            else f"{-gap} B less than budgeted"
            if gap < 0
            else "exactly as budgeted"
        )
        out.append(
            f"  Builder budget as built: ({b.capacity.name} {b.capacity.value} B - carve-out "
            f"{b.carveout_bytes} B) / {b.stage_bytes} B per stage = {b.stages} stages; it budgets "
            f"{b.budgeted_bytes} B, the kernel takes {t.kernel_bytes} B ({how})"
        )
    return out


def columns_and_rows(tactics, tile_bytes: bool = False):
    """The columns that say something for these tactics, and their rows (bytes)."""

    def ok(x):
        return x.error is None

    def num(x, v):
        return "-" if v is None or not ok(x) else str(v)

    def tile(x):
        if not x.tile:
            return "-"
        # K in bytes of the activation, as TensorRT-LLM counts it (with swap_ab, B)
        return tile_text(x.tile, x.b if x.swap_ab else x.a, tile_bytes)

    def cluster(x):
        if x.dynamic_cluster:
            return "dynamic"
        return "-" if not x.cluster else "x".join(map(str, x.cluster))

    columns = [  # (column, cell)
        (Column("verdict"), verdict_cell),
        (Column("tactic", wrap=True, code=True), lambda x: str(x.name or x.launcher)),
        (Column("A x B"), lambda x: f"{x.a or '?'} x {x.b or '?'}"),
        (Column("out", drop=1), lambda x: str(x.out or "-")),
        (Column("fusion"), lambda x: str(x.fusion or "-")),  # never left out: FINALIZE rows differ by it
        (Column("swap"), lambda x: "" if not x.swap_ab else "swap_ab"),  # as the id writes it
        (Column("arch tag", drop=2), lambda x: "-" if x.sm_version is None else f"Sm{x.sm_version}"),
        (Column("MMA", drop=2), lambda x: "-" if x.mma_sms is None else f"{x.mma_sms}SM"),
        (Column("cluster", drop=2), cluster),
        (Column("epi", drop=2), lambda x: str(x.epilogue_schedule or "-")),
        (Column("tile"), tile),
        (Column("stages", right=True, drop=3), lambda x: num(x, x.stages)),
        (Column("mainloop", right=True, drop=5), lambda x: num(x, x.mainloop_bytes)),
        (Column("epilogue", right=True, drop=5), lambda x: num(x, x.epilogue_bytes)),
        (Column("kernel", right=True), lambda x: num(x, x.kernel_bytes)),
        (Column("headroom", right=True), lambda x: num(x, x.headroom_bytes)),
        (Column("CTAs/SM", right=True, drop=4), ctas_cell),
        (Column("TMA bytes", drop=4), tma_cell),
        (Column("tried"), lambda x: _yes_no(x.runtime_candidate)),
        (Column("fix", drop=4), fix_cell),
    ]
    optional = {
        "CTAs/SM": lambda x: x.occupancy is not None,
        # shown where a row's TMA counts disagree with its stage buffers, or were not verified
        "TMA bytes": lambda x: x.tma_check is not None and x.tma_check.status in ("mismatch", "not verified"),
        "fusion": lambda x: x.fusion,
        "swap": lambda x: x.swap_ab is not None,
        "tried": lambda x: x.runtime_candidate is not None,
        "fix": lambda x: x.fix is not None,
    }
    # shown only where the table's rows differ in them (an SM103 build's Sm100 and Sm103 twins,
    # SM100's 1SM and 2SM ones, SM90's clusters): what tells such twin rows apart
    varying = ("arch tag", "MMA", "cluster", "epi")
    shown = [
        (c, f)
        for c, f in columns
        if (c.header not in optional or any(optional[c.header](x) for x in tactics))
        and (c.header not in varying or len({f(x) for x in tactics}) > 1)
    ]
    return [c for c, _ in shown], [[f(x) for _, f in shown] for x in tactics]


def ctas_cell(x) -> str:
    """A tactic's CTAs per SM (:class:`~cutlass_layout.model.launch.Occupancy`): ``1`` (the
    count), ``<=6`` (a bound: no register split declared), ``?`` where the per-SM limits were not
    found, ``-`` for a kernel without one."""
    o = x.occupancy
    if o is None:
        return "-"
    if o.at_most is not None:
        return f"<={o.at_most}"
    return "?" if o.ctas_per_sm is None else str(o.ctas_per_sm)


def tma_cell(x) -> str:
    """A tactic's :class:`~cutlass_layout.model.launch.TmaCheck`: ``agrees``, ``mismatch``,
    ``not verified``, ``no TMA``; ``-`` for a kernel without one."""
    return "-" if x.tma_check is None else x.tma_check.status


def audit_table(tactics, title: str | None = None, *, tile_bytes: bool = False):
    """One family's tactics: verdict, name, A x B, output, fusion, swap_ab, the launcher's arch
    tag (``Sm103``), 1SM/2SM, cluster (``dynamic`` for a runtime one), epilogue schedule
    (``tma``, ``nosmem``), tile, stages, the three SharedStorage sizes, headroom, whether the
    runtime tries it and what fits instead (:func:`fix_cell`; bytes). Columns that say nothing
    for the family (no fusion, no swap_ab, no runtime list, no fix) are left out, and so are
    arch tag, 1SM/2SM, cluster and epilogue schedule where every row has the same (so an SM120
    table has none of them, while twin rows that differ only there, an SM103 build's Sm100 and
    Sm103 kernels of one tile enum, are told apart); the numeric ones never are, and the name
    is the one that wraps. ``tile_bytes``: K in bytes of A's element, as TensorRT-LLM's tile
    names count it."""
    columns, rows = columns_and_rows(tactics, tile_bytes)
    return rich_table(columns, rows, title=title)


def _family_title(fam: str, n: int) -> str:
    what = {
        "moe": " (TensorRT-LLM MoE grouped GEMM, moe_gemm_tma_ws_launcher.inl)",
        "moe_sm80": " (TensorRT-LLM MoE runner's SM80 path, CUTLASS 2.x MoeFCGemm, moe_gemm_template_dispatch.h)",
    }.get(fam, "")
    return f"{fam}{what}: {n} tactics"


def _families(result) -> dict[str, list]:
    families: dict[str, list] = {}
    for x in result.tactics:
        families.setdefault(x.family, []).append(x)
    return families


def built_elsewhere(result) -> str:
    """`` (1476 of them Sm100 kernels, which an sm103 build compiles too)``: how many tactics'
    launchers have the arch tag (``sm_version``) of another arch than the one audited, per tag
    (an SM103 build compiles SM100's MoE kernels beside its own 96 Sm103 ones; they run on SM103
    too, against the same capacity); nothing where there are none."""
    own = re.sub(r"\D", "", result.arch)
    counts: dict[int, int] = {}
    for t in result.tactics:
        if t.sm_version is not None and str(t.sm_version) != own:
            counts[t.sm_version] = counts.get(t.sm_version, 0) + 1
    if not counts:
        return ""
    (v, n), *more = sorted(counts.items())
    what = " and ".join([f"{n} of them Sm{v}"] + [f"{m} Sm{w}" for w, m in more])
    return f" ({what} kernels, which an {result.arch} build compiles too)"


def shard_words(result) -> str:
    """``, shard 1/2`` for one shard of an audit (``audit --shard I/N``); nothing for a whole one."""
    sh = getattr(result, "shard", None)
    return "" if sh is None else f", shard {sh.index}/{sh.count}"


def install_name(p: dict) -> str:
    """The install of an audit's provenance ``p`` by distribution and version and how it was
    found, never a local path (:func:`~cutlass_layout.reports.common.origin_words`), the
    distribution and version said once: ``flashinfer-python 0.7.4 (a directory)``,
    ``flashinfer-python 0.7.4 (wheel flashinfer_python-0.7.4-py3-none-any.whl, cached)``."""
    words = origin_words(p["origin"])
    for named in (f"{p['library']}=={p['version']} (", f"default {p['library']}=={p['version']} ("):
        if words.startswith(named) and words.endswith(")"):  # the spec again: its parentheses only
            words = words[len(named) : -1]
    if words == f"installed {p['library']} {p['version']}":
        words = "installed"
    return f"{p['library']} {p['version']} ({words})"


def head_lines(result) -> list[str]:
    p = result.provenance
    cap = result.capacity
    where = f" ({cap.name}, {cap.file}:{cap.line})" if cap is not None and cap.file else ""
    parsed = [s for s in result.sources if not s.get("skipped")]
    capacity = f"; capacity {cap.value} B{where}" if cap is not None else ""
    return [
        f"{install_name(p)}{shard_words(result)}",
        f"CUTLASS {p['cutlass_version']} at {p['cutlass_root']} (tree {p['tree_hash']})",
        f"{result.arch}: {len(result.tactics)} tactics{built_elsewhere(result)} {_origins(result, parsed)}{capacity}",
    ] + modules_line(result)


def modules_line(result) -> list[str]:
    """``modules: 5 of 19 JIT module builders for sm120 give kernels; 14 give none (the notes
    say why)`` where some builder of the arch gives no kernel (its module's, or not run); none
    where every one gives kernels, or none is known (a shard, JSON written before
    ``modules``). With a family asked, its modules only."""
    mods = [
        m for m in getattr(result, "modules", None) or [] if m.get("kernels") is not None or m.get("module") is None
    ]
    if (result.asked or {}).get("family") is not None:
        mods = [m for m in mods if m.get("module") is not None]
    none = [m for m in mods if not m.get("kernels")]
    if not none:
        return []
    return [
        f"modules: {len(mods) - len(none)} of {len(mods)} JIT module builders for {result.arch} give "
        f"kernels; {len(none)} give{'s' if len(none) == 1 else ''} none (the notes say why)"
    ]


def _origins(result, parsed: list) -> str:
    """Where the tactics come from: ``from 61 generated sources``, and the SM80-path MoE
    kernels apart (``moe_sm80``: read from the MoE runner's headers, in no generated source)."""
    n = sum(t.family == "moe_sm80" for t in result.tactics)
    if not n:
        return f"from {len(parsed)} generated sources"
    if n == len(result.tactics) and not parsed:
        return "from the MoE runner's SM80-path headers (no generated source)"
    return (
        f"({len(result.tactics) - n} from {len(parsed)} generated sources, {n} from the MoE runner's SM80-path headers)"
    )


#: the location an error ends with where it is the source itself (an absolute path:
#: ``(/path/to/source.cu:18)``; a header's is relative to its include root and stays)
_WHERE = re.compile(r" \(/[^()]*:\d+\)$")


def source_groups(result, kind: str = "error") -> list[tuple[str, str, list[str]]]:
    """The sources with an ``error`` (``kind="error"``: not read, or instantiating what was
    not laid out), read without error and giving no kernel (``kind="reason"``) or not parsed
    (``kind="skipped"``: why), as ``(family, the error or reason, [file names])``: one group
    per family and message, in the order of the sources, every source named; an error's
    location (the source's path and line) is left out, so that sources that fail alike are
    one group."""
    groups: dict[tuple[str, str], list[str]] = {}
    for s in result.sources:
        text = (
            s.get("error")
            if kind == "error"
            else s.get("skipped")
            if kind == "skipped"
            else None
            if s.get("error")
            else s.get("reason")
        )
        if text:
            text = _WHERE.sub("", text)  # the source's own path and line: its name says it
            fam = s.get("family") or s.get("module") or "?"
            groups.setdefault((fam, text), []).append(s["file"].rsplit("/", 1)[-1])
    return [(fam, text, files) for (fam, text), files in groups.items()]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def sources_line(result) -> str:
    """The summary of the sources, per family: ``sources: moe 88 kernels of 88 instantiations
    in 11 sources; gemm_sm120 16 kernels of 16 instantiations in 11 sources, 2 without a
    kernel, 57 skipped`` (``with an error``: not read, or instantiating what was not laid out)."""
    parts = []
    for fam, c in result.source_summary().items():
        read = c["sources"] - c["skipped"]
        text = (
            f"{fam} {_plural(c['kernels'], 'kernel')} of {_plural(c['instantiations'], 'instantiation')} "
            f"in {_plural(read, 'source')}"
        )
        extra = [
            f"{c['errors']} with an error" if c["errors"] else "",
            f"{c['without_kernel']} without a kernel" if c["without_kernel"] else "",
            f"{c['skipped']} skipped ({_skipped_why(result, fam)})" if c["skipped"] else "",
        ]
        parts.append(", ".join([text] + [e for e in extra if e]))
    return "sources: " + ("; ".join(parts) if parts else "none")


def _skipped_why(result, fam: str) -> str:
    """Why a family's sources were skipped: ``names no sm120 symbol`` (each), or each reason
    with its count (``50 names no sm90 symbol, 7 not a C++ source``)."""
    why = [(text, len(files)) for f, text, files in source_groups(result, "skipped") if f == fam]
    if len(why) == 1:
        return f"each {why[0][0]}" if why[0][1] > 1 else why[0][0]
    return ", ".join(f"{n} {text}" for text, n in why)


def tail_parts(result) -> tuple[list[str], list[str], str, str]:
    """(errors of tactics, sources with an error and notes, the counts, what was checked)."""
    errors = [f"{x.id}: {x.error.one_line()}" for x in result.tactics if x.error is not None]
    notes = [
        f"{fam}: {_plural(len(files), 'source')} with an error ({', '.join(files)}): {err}"
        for fam, err, files in source_groups(result)
    ]
    notes += [
        f"note: {fam}: {_plural(len(files), 'source')} without a kernel ({', '.join(files)}): {why}"
        for fam, why, files in source_groups(result, "reason")
    ]
    unsearched = Counter(
        x.fix.error
        for x in result.tactics  # why a fix cell says "?"
        if x.fix is not None and fix_cell(x) == "?"
    )
    notes += [
        f"note: fix ?: {_plural(n, 'tactic')} {why if why.startswith('not searched') else 'not searched: ' + why}"
        for why, n in unsearched.items()
    ]
    told = {u["note"] for u in getattr(result, "unmatched", [])}  # the command says these on stderr
    notes += [f"note: {n}" for n in result.notes if n not in told]
    counts = verdict_counts(result.tactics)
    if counts[Verdict.EXACT_FIT]:
        notes.append(f"note: {_plural(counts[Verdict.EXACT_FIT], 'exact fit')}: {EXACT_FIT_MEANING}")
    over = [x for x in result.tactics if x.verdict == Verdict.OVER_CAPACITY]
    # tried and launched (nothing stops it: "Error Internal"), or stopped first by the
    # runner's own check (runtime_guard: the SM80-path launcher's occupancy check)
    tried = sum(1 for x in over if x.runtime_candidate and x.runtime_guard is None)
    guarded = sum(1 for x in over if x.runtime_candidate is not False and x.runtime_guard is not None)
    unknown = sum(1 for x in over if x.runtime_candidate is None and x.runtime_guard is None)
    how = (
        f"{tried} of them tried by the runtime"
        + (f", {guarded} more tried but rejected by the runner's own check before launch" if guarded else "")
        + (f", {unknown} unknown" if unknown else "")
    )
    total = (
        f"{counts[Verdict.OVER_CAPACITY]} over capacity ({how}), "
        f"{counts[Verdict.EXACT_FIT]} exact fits, {counts[Verdict.DOES_NOT_COMPILE]} do not compile, "
        f"{counts[Verdict.FITS]} fit"
    )
    checked = (
        "checked: types (each kernel's SharedStorage as its launcher builds it; asserts "
        "inside kernel bodies were not instantiated)"
    )
    return errors, notes, total, checked


def _source_table(groups):
    """Columns and rows of the sources with an error: family, the sources (every one named),
    the first error."""
    columns = [Column("family"), Column("sources", wrap=True, code=True), Column("first error", wrap=True)]
    rows = [[fam, ", ".join(files), err] for fam, err, files in groups]
    return columns, rows


def render_audit(result, console: Console | None = None, *, tile_bytes: bool = False) -> None:
    """Print an :class:`~cutlass_layout.model.AuditResult`: provenance, one table per family
    (over capacity first, then exact fits), the errors, and a count per verdict."""
    con = console or default_console()
    first, *head = head_lines(result)
    con.print(f"[bold]{escape(first)}[/bold]", soft_wrap=True)
    for line in head:
        con.print(line, soft_wrap=True, markup=False)
    for fam, items in _families(result).items():
        print_table(con, audit_table(items, title=_family_title(fam, len(items)), tile_bytes=tile_bytes))
    errors, notes, total, checked = tail_parts(result)
    for line in errors:
        con.print(line, soft_wrap=True, markup=False)
    groups = source_groups(result)
    if groups:
        n = sum(len(files) for _, _, files in groups)
        print_table(con, rich_table(*_source_table(groups), title=f"sources with an error: {n}"))
    for line in notes:
        if line.startswith("note: "):
            con.print(line, soft_wrap=True, markup=False)
    con.print(sources_line(result), soft_wrap=True, markup=False)
    con.print(total, soft_wrap=True)
    con.print(checked, soft_wrap=True)
    pick = id_line(result)
    if pick:
        con.print(pick, soft_wrap=True, markup=False)


def id_line(result) -> str:
    """How to lay out one row: ``layout --tactic ID``, the ID built from the row's cells
    (:attr:`~cutlass_layout.model.Tactic.id`), with the first row over capacity (else the
    first row) as the example; nothing for an audit without tactics."""
    if not result.tactics:
        return ""
    t = next((x for x in result.tactics if x.verdict == Verdict.OVER_CAPACITY), result.tactics[0])
    return (
        "one row in full: layout --tactic ID (ID: family/tactic/AxB/out, then fusion, swap_ab and the "
        f"varying columns where a row has them, e.g. {t.id}; --json lists every row's id)"
    )


def to_markdown(result, *, tile_bytes: bool = False) -> str:
    """The audit in GitHub Markdown: the install, one table per family, errors, notes and
    the counts (bytes)."""
    p = result.provenance
    first, second, third, *more = head_lines(result)
    out = [
        f"#### Audit: {source_name(p['origin'], p['cutlass_version'], library=p['library'], version=p['version'])}, "
        f"{result.arch}{shard_words(result)}",
        "",
        f"{md_cell(third)}; tree `{p['tree_hash']}`",
        "",
    ]
    for line in more:  # the modules that give no kernel (modules_line)
        out += [md_cell(line), ""]
    for fam, items in _families(result).items():
        columns, rows = columns_and_rows(items, tile_bytes)
        out += [f"**{md_cell(_family_title(fam, len(items)))}**", "", markdown_table(columns, rows)]
    errors, notes, total, checked = tail_parts(result)
    out += [f"- `{md_cell(e.split(': ', 1)[0])}`: {md_cell(e.split(': ', 1)[1])}" for e in errors]
    groups = source_groups(result)
    if groups:
        if errors:
            out.append("")
        n = sum(len(files) for _, _, files in groups)
        out += [f"**sources with an error: {n}**", "", markdown_table(*_source_table(groups))]
    out += [f"- {md_cell(n)}" for n in notes if n.startswith("note: ")]
    if errors or notes:
        out.append("")
    out += [md_cell(sources_line(result)), "", f"**{total}**", "", checked]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------
# GitHub Actions workflow commands (annotations)


def github_data(text: str | int) -> str:
    """A workflow command's message escaped as GitHub's toolkit does (``escapeData`` in
    actions/toolkit ``packages/core/src/command.ts``): ``%`` ``\\r`` ``\\n`` as ``%25``
    ``%0D`` ``%0A``."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str | int) -> str:
    """A workflow command's property value (``file``, ``title``) escaped as the toolkit's
    ``escapeProperty``: :func:`github_data`'s, and ``:`` ``,`` as ``%3A`` ``%2C``."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(
    kind: str, message: str, *, file: str | None = None, line: int | None = None, title: str | None = None
) -> str:
    """One workflow command line, ``::KIND file=F,line=L,title=T::MESSAGE`` (properties that
    are None left out), each part escaped (:func:`github_property`, :func:`github_data`)."""
    props = [
        f"{k}={github_property(v)}" for k, v in (("file", file), ("line", line), ("title", title)) if v is not None
    ]
    return f"::{kind}{' ' + ','.join(props) if props else ''}::{github_data(message)}"


def _where(t) -> tuple[str | None, int | None]:
    """The file and line an annotation of tactic ``t`` points at: where its launcher writes the
    kernel type (``launcher_file``, relative to the flashinfer package), as the path in a
    flashinfer git checkout (``data/csrc/...`` -> ``csrc/...``,
    :func:`cutlass_layout.sources.flashinfer.checkout_path`). (None, None) when the launcher is outside
    the package; the generated source is named in the message instead (it lives in the cache)."""
    f = t.launcher_file
    if not f or f.startswith("/"):
        return None, None
    return checkout_path(f), t.launcher_line


def _built_by(t) -> str:
    line = f":{t.line}" if t.line else ""
    return f"instantiated at {t.file}{line} (generated by the JIT)"


def _fix_words(t) -> str:
    """``fits with StageCount<2> (74752 B) or StageCountAutoCarveout<17617>; `` from a
    tactic's fix, or nothing where none was found."""
    f = t.fix
    if f is None or f.stages is None:
        return ""
    carve = "" if f.carveout_bytes is None else f" or StageCountAutoCarveout<{f.carveout_bytes}>"
    return f"fits with StageCount<{f.stages}> ({f.kernel_bytes} B){carve}; "


@dataclass(frozen=True)
class Finding:
    """One annotation of an audit, as CI systems take it (:func:`to_github`'s workflow
    commands, :func:`cutlass_layout.reports.sarif.to_sarif`'s results).

    Attributes:
        level: ``error``, ``warning`` or ``notice`` (GitHub's words; SARIF's ``note`` for the last).
        rule: what it is: ``over-capacity``, ``over-capacity-not-tried``, ``does-not-compile``,
            ``exact-fit``, ``launch``, ``launch-not-tried`` or ``incomplete`` (sources with an
            error), the keys of :data:`RULES`.
        message: the whole finding in one line (bytes).
        title: a short title.
        file, line: where the kernel type is written (:func:`_where`), None where not known.
        tactics: the tactic ids it is about.
    """

    level: str
    rule: str
    message: str
    title: str
    file: str | None = None
    line: int | None = None
    tactics: tuple[str, ...] = ()


#: What each :attr:`Finding.rule` means (SARIF's rule descriptions).
RULES = {
    "over-capacity": "A kernel the runtime tries (or may try) needs more shared memory (sizeof its SharedStorage) "
    "than a block of the arch gets: it fails at launch.",
    "over-capacity-not-tried": "A kernel is built whose SharedStorage is over the arch's capacity; the runtime "
    "never tries it.",
    "does-not-compile": "A kernel the install instantiates does not compile.",
    "exact-fit": f"Kernels whose SharedStorage fills the arch's capacity exactly (0 B headroom; {EXACT_FIT_MEANING}).",
    "launch": "A kernel the runtime tries (or may try) cannot launch for another reason than its shared memory: "
    "0 CTAs per SM, a TMA descriptor in its Params not 64-byte aligned, Params over the kernel parameter limit, "
    "or an illegal (or non-portable) cluster for the arch; audit --checks launch fails on it.",
    "launch-not-tried": "A kernel is built that cannot launch (a launch finding); the runtime never tries it.",
    "incomplete": "Sources the audit could not read or lay out: the audit is incomplete.",
}


def launch_finding(t, arch: str, tried: bool, file=None, line=None) -> Finding | None:
    """The one annotation of a tactic's launch findings (:attr:`~cutlass_layout.model.Tactic.launch_findings`),
    or None where it has none: an ``error`` (rule ``launch``) where the runtime tries (or may
    try) it, a ``warning`` where its only finding is a non-portable cluster, a ``notice`` (rule
    ``launch-not-tried``) where the runtime never tries it."""
    found = t.launch_findings
    if not found:
        return None
    level = "error" if tried else "notice"
    if tried and all("(non-portable)" in f for f in found):
        level = "warning"
    return Finding(
        level,
        "launch" if tried else "launch-not-tried",
        f"{t.id}: cannot launch on {arch}: {'; '.join(found)}",
        f"cutlass-layout: launch: {t.id}",
        file,
        line,
        (t.id,),
    )


def findings(result) -> list[Finding]:
    """The findings of a flashinfer audit (bytes):

    * an ``error`` per tactic ``audit --check`` fails on (over capacity, and the runtime tries it
      or may try it): its id, kernel bytes, the capacity, by how much it is over and what fits
      instead (its :attr:`~cutlass_layout.model.Tactic.fix`, where one was found);
    * a ``warning`` per tactic that does not compile (its first error);
    * a ``notice`` per tactic over capacity that the runtime never tries, and one per launcher
      for the tactics that fit exactly (0 B headroom: any growth puts them over);
    * one per tactic with launch findings (:func:`launch_finding`);
    * a ``warning`` per family and error of the sources with one (not read, or instantiating
      what was not laid out: the audit is incomplete)."""
    out: list[Finding] = []
    exact: dict[tuple, list] = {}
    failing = {t.id for t in result.check_failures()}
    launch_failing = {t.id for t in result.launch_failures()}
    for t in result.tactics:
        file, line = _where(t)
        launch = launch_finding(t, result.arch, t.id in launch_failing, file, line)
        if launch is not None:
            out.append(launch)
        if t.verdict == Verdict.OVER_CAPACITY:
            over = -t.headroom_bytes
            tried = t.id in failing
            why = (
                "tried by the runtime"
                if t.runtime_candidate
                else "the runtime may try it: its candidate list could not be read"
                if tried
                else "built, never tried by the runtime"
            )
            out.append(
                Finding(
                    "error" if tried else "notice",
                    "over-capacity" if tried else "over-capacity-not-tried",
                    f"{t.id}: SharedStorage {t.kernel_bytes} B, over the {t.capacity_bytes} B "
                    f"{result.arch} capacity by {over} B ({why}; {t.stages} stages); {_fix_words(t)}"
                    f"{_built_by(t)}",
                    f"cutlass-layout: over capacity by {over} B: {t.id}",
                    file,
                    line,
                    (t.id,),
                )
            )
        elif t.verdict == Verdict.DOES_NOT_COMPILE:
            out.append(
                Finding(
                    "warning",
                    "does-not-compile",
                    f"{t.id}: {t.error.one_line()}; {_built_by(t)}",
                    f"cutlass-layout: does not compile: {t.id}",
                    file,
                    line,
                    (t.id,),
                )
            )
        elif t.verdict == Verdict.EXACT_FIT:
            exact.setdefault((file, line), []).append(t)
    for (file, line), ts in exact.items():
        out.append(
            Finding(
                "notice",
                "exact-fit",
                f"{len(ts)} tactic(s) fill the {ts[0].capacity_bytes} B {result.arch} capacity "
                f"exactly (0 B headroom; {EXACT_FIT_MEANING}): " + ", ".join(t.id for t in ts),
                f"cutlass-layout: {len(ts)} exact fit(s)",
                file,
                line,
                tuple(t.id for t in ts),
            )
        )
    _, notes, _, _ = tail_parts(result)
    for n in notes:
        if not n.startswith("note: ") and " with an error (" in n:  # the audit is incomplete
            out.append(Finding("warning", "incomplete", n, "cutlass-layout: sources with an error"))
    return out


def summary_line(result) -> str:
    """``cutlass-layout: <install>, <arch>: <the counts>``: the last line of the GitHub output."""
    _, _, total, _ = tail_parts(result)
    return f"cutlass-layout: {install_name(result.provenance)}, {result.arch}{shard_words(result)}: {total}"


def github_lines(found: list[Finding]) -> list[str]:
    """The findings as GitHub Actions workflow commands (:func:`github_command`)."""
    return [github_command(f.level, f.message, file=f.file, line=f.line, title=f.title) for f in found]


def to_github(result) -> str:
    """The audit as GitHub Actions workflow commands (:func:`findings`, annotations on the file
    a flashinfer contributor edits, :func:`_where`), then one plain summary line
    (:func:`summary_line`). Messages are in bytes; properties and messages escaped as GitHub's
    toolkit does."""
    return "\n".join([*github_lines(findings(result)), summary_line(result)]) + "\n"
