"""Reports: tables keep every number at any terminal width, Markdown for GitHub, and the source
named as the user gave it. Structs and records are written by hand here (bytes)."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console

from cutlass_layout import Config
from cutlass_layout.commands.sweep import SweepRecord, SweepResult
from cutlass_layout.model import Constant, FieldLayout, LayoutReport, Provenance, StructLayout
from cutlass_layout.reports.common import Column, json_text, markdown_table, md_cell, source_name
from cutlass_layout.reports.layout import render, struct_table, to_markdown

LONG = (
    "cutlass::epilogue::fusion::Sm90EVT<"
    + "cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::ReLu, float, float>, " * 6
    + ">"
)


def _struct():
    inner = FieldLayout("fusion_storage_of_the_epilogue_visitor", LONG, 8192, 1, 1)
    coll = FieldLayout(
        "collective",
        "CollectiveStorage",
        0,
        8192,
        128,
        fields=[
            FieldLayout("smem_C", "cute::array<SmemElementC, 0>", 0, 1, 1),
            FieldLayout(
                "smem_D", "ArrayEngine<SmemElementD, cosize_v<SmemLayoutD>>", 0, 8192, 128, declared_alignas=128
            ),
        ],
    )
    tensors = FieldLayout("tensors", "struct TensorStorage", 0, 8704, 128, fields=[coll, inner], tail_padding=511)
    maps = FieldLayout("tensormaps", "struct TensorMapStorage", 8704, 384, 128)
    return StructLayout("SharedStorage", 9216, 512, 128, [tensors, maps])


def _print(table, width):
    buf = io.StringIO()
    from cutlass_layout.reports.common import print_table

    print_table(Console(file=buf, width=width, highlight=False), table)
    return buf.getvalue()


@pytest.mark.parametrize("width", [250, 120, 80, 60])
def test_table_keeps_numbers_at_every_width(width):
    out = _print(struct_table("epilogue SharedStorage", _struct(), None), width)
    for number in ("8704", "8192", "9216", "384", "511", "128"):
        assert number in out, (width, number)
    for header in ("offset", "size", "pad", "member", "alignas", "type"):
        assert header in out
    assert "fusion_storage_of_the_epilogue_visitor" in out  # member names are not cut either
    # the type folds onto more lines rather than taking the numbers' room
    assert "Sm90Compute" in out


def _report():
    s = _struct()
    return LayoutReport(
        config=Config(tile=(128, 128, 128)).to_dict(),
        provenance=Provenance(
            "/r/include",
            "4.5.0",
            "08074d1c7f6605c9",
            "flashinfer-python==0.7.2.post1 (wheel x.whl, cached)",
            "22.1",
            "/cuda",
            "pip",
            [],
        ),
        stages=4,
        capacity=Constant("sm120_smem_capacity_bytes", 101376, file="cutlass/arch/arch.h", line=45),
        kernel=s,
        epilogue=s,
    )


def test_layout_markdown():
    md = to_markdown(_report(), max_depth=None, structs=("epilogue",))
    assert md.startswith("#### sm120 grouped nvfp4 x nvfp4  tile 128x128x128")
    assert "flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0)" in md and "tree `08074d1c7f6605c9`" in md
    assert (
        "**Total 9216 B of 101376 B (sm120_smem_capacity_bytes, cutlass/arch/arch.h:45): fits, headroom 92160 B**"
    ) in md
    lines = md.splitlines()
    head = lines.index("| offset | size | pad | member | alignas | type |")
    assert lines[head + 1] == "|---:|---:|---:|---|---:|---|"
    # dotted member names, types as code so <...> is not HTML
    assert (
        "| 0 | 8192 |  | `tensors.collective.smem_D` | 128 | `ArrayEngine<SmemElementD, cosize_v<SmemLayoutD>>` |"
        in lines
    )
    assert "|  |  | 511 | `tensors (tail padding)` |  |  |" in lines
    assert "|  | 9216 |  | `= sizeof, align 512` |  |  |" in lines


def test_layout_text_report_at_a_narrow_terminal_keeps_the_numbers():
    buf = io.StringIO()
    render(_report(), Console(file=buf, width=70, highlight=False), max_depth=None, structs=("epilogue",))
    out = buf.getvalue()
    assert "fusion_storage_of_the_epilogue_visitor" in out and "8192" in out and "511" in out


def test_markdown_cells():
    assert md_cell("a|b") == "a\\|b"
    assert md_cell("x<int>", code=True) == "`x<int>`"
    assert md_cell("", code=True) == ""
    assert md_cell("a`b", code=True) == "``a`b``"
    t = markdown_table([Column("n", right=True), Column("t", code=True)], [["1", "T<2>"]])
    assert t == "| n | t |\n|---:|---|\n| 1 | `T<2>` |\n"


@pytest.mark.parametrize(
    "origin,version,name",
    [
        (
            "flashinfer-python==0.7.2.post1 (wheel flashinfer_python-0.7.2.post1-py3-none-any.whl, cached)",
            "4.5.0",
            "flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0)",
        ),
        (
            "default nvidia-cutlass==4.2.0.0 (wheel nvidia_cutlass-4.2.0.0-py3-none-any.whl, cached)",
            "4.2.0",
            "nvidia-cutlass 4.2.0.0 (CUTLASS 4.2.0)",
        ),
        ("wheel /tmp/w/flashinfer_python-0.6.8-py3-none-any.whl", "4.4.2", "flashinfer-python 0.6.8 (CUTLASS 4.4.2)"),
        ("directory /home/me/cutlass/include", "4.5.0", "CUTLASS 4.5.0"),
        ("installed flashinfer", "4.5.0", "flashinfer (CUTLASS 4.5.0)"),
    ],
)
def test_source_name(origin, version, name):
    assert source_name(origin, version) == name


def _rec(tile, kernel, verdict, stages=3, cfg=None):
    cap = 101376
    return SweepRecord(
        cfg or Config(tile=tile),
        stages,
        None,
        None,
        kernel,
        cap if kernel else None,
        (cap - kernel) if kernel else None,
        verdict,
        stages if kernel and kernel <= cap else None,
        kernel if kernel and kernel <= cap else None,
    )


def test_sweep_markdown_and_tiles_in_bytes():
    from cutlass_layout.reports.sweep import render, to_markdown

    prov = Provenance("/r", "4.5.0", "h", "flashinfer-python==0.7.2.post1 (wheel x.whl, cached)", "c", "p", "s", [])
    recs = [
        _rec((128, 128, 128), 84992, "fits", 4),
        _rec((128, 64, 128), 101376, "exact_fit", 3),
        _rec((128, 256, 256), None, "does_not_compile", None),
    ]
    res = SweepResult(prov, [r.config for r in recs], recs)
    md = to_markdown(res, tile_bytes=True)
    assert md.startswith("#### Sweep: flashinfer-python 0.7.2.post1 (CUTLASS 4.5.0), tree `h`")
    assert "| verdict | config | stages | mainloop | epilogue | kernel | headroom | max that fits |" in md
    assert "| fits | 128x128x64B | auto 4 | - | - | 84992 | 16384 | 4 (84992) |" in md
    assert "| fits (exact fit) | 128x64x64B | auto 3 | - | - | 101376 | 0 | 3 (101376) |" in md
    assert "| does not compile | 128x256x128B | - | - | - | - | - | none |" in md
    buf = io.StringIO()
    render(res, Console(file=buf, width=200, highlight=False), tile_bytes=False)
    assert "128x128x128" in buf.getvalue() and "128x128x64B" not in buf.getvalue()


def test_sweep_says_what_the_install_builds_once_per_config():
    """A sweep over stage counts of one preset config: the install's tactics of that config
    (the same for every stage count) are said once, the label once. The tactic is the seed
    case (tests/handed.md section E: FINALIZE 128x256x128, 3 stages, 102400 B, over by 1024)."""
    from cutlass_layout.model import Approximation
    from cutlass_layout.reports.sweep import approximation_notes

    seed = {
        "id": "moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize",
        "verdict": "over_capacity",
        "stages": 3,
        "kernel_bytes": 102400,
        "headroom_bytes": -1024,
        "runtime_candidate": True,
    }
    recs = []
    for stages in (None, 2, 3):
        cfg = Config(tile=(128, 256, 128), preset="trtllm-moe", d="bf16", stages=stages)
        r = _rec(cfg.tile, None, "does_not_compile", None, cfg=cfg)
        r.approximation = Approximation(
            preset="trtllm-moe",
            kernel="TensorRT-LLM's MoE grouped GEMM",
            install="flashinfer-python 0.7.2.post1",
            family="moe",
            arch="sm120",
            audited=True,
            tactics=[seed],
        )
        recs.append(r)
    prov = Provenance("/r", "4.5.0", "h", "flashinfer-python==0.7.2.post1 (wheel x.whl, cached)", "c", "p", "s", [])
    notes = approximation_notes(SweepResult(prov, [r.config for r in recs], recs))
    assert notes[1:] == [
        "128x256x128: flashinfer-python 0.7.2.post1 builds it as (its audit, cached):",
        "  moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize: 102400 B, 3 stages, over capacity by 1024 B "
        "(tried by the runtime)",
    ]


@pytest.mark.parametrize("kernel_bytes", [101376, 102400, None])
def test_every_row_is_the_one_projection_of_the_report(kernel_bytes):
    """The sweep's record, the diff's numeric record and the audit's tactic row read the same
    numbers of one report (:meth:`LayoutReport.numbers`): sizes written by hand, headroom the
    capacity minus the kernel's bytes (0: an exact fit, the verdict ``exact_fit``, which the
    sweep's JSON and the diff's record write ``fits``; 1024 over); a report that does not
    compile gives no number anywhere."""
    from cutlass_layout.commands.sweep import sweep_record, StageSearcher
    from cutlass_layout.model import CompileError, NumericRecord, Tactic

    prov = Provenance(
        cutlass_version="4.5.0", cutlass_root="/x", origin="dir", tree_hash="0", libclang_version="20", flags=[]
    )
    if kernel_bytes is None:
        rep = LayoutReport(
            config={},
            provenance=prov,
            error=CompileError(kind="static_assert", message="Stage count too large", file="f.h", line=1),
        )
        want = {
            "stages": None,
            "kernel_bytes": None,
            "mainloop_bytes": None,
            "epilogue_bytes": None,
            "capacity_bytes": None,
            "headroom_bytes": None,
            "verdict": "does_not_compile",
        }
    else:
        rep = LayoutReport(
            config={},
            provenance=prov,
            stages=3,
            capacity=Constant(name="sm120_smem_capacity_bytes", value=101376),
            kernel=StructLayout("SharedStorage", kernel_bytes, 1024, 0, []),
            mainloop=StructLayout("M", kernel_bytes - 2048, 1024, 0, []),
            epilogue=StructLayout("E", 1024, 128, 0, []),
        )
        want = {
            "stages": 3,
            "kernel_bytes": kernel_bytes,
            "mainloop_bytes": kernel_bytes - 2048,
            "epilogue_bytes": 1024,
            "capacity_bytes": 101376,
            "headroom_bytes": 101376 - kernel_bytes,
            "verdict": {101376: "exact_fit", 102400: "over_capacity"}[kernel_bytes],
        }
    sweep = sweep_record(Config(), rep, StageSearcher(Config()))
    numeric = NumericRecord.from_report(rep)
    tactic = Tactic(
        family="moe",
        name="t",
        a="e4m3",
        b="e4m3",
        out="bf16",
        fusion="none",
        swap_ab=False,
        tile=[128, 128, 128],
        cluster=[1, 1, 1],
        kernel="grouped",
        schedule=None,
        file="t.cu",
        line=1,
        launcher=None,
        report=rep,
    )
    schema = "fits" if want["verdict"] == "exact_fit" else want["verdict"]  # the sweep and diff JSON's
    for row in (sweep, tactic) + ((numeric,) if kernel_bytes is not None else ()):
        got = {k: getattr(row, k) for k in want}
        assert got == (want if row is not numeric else {**want, "verdict": schema}), type(row).__name__
    assert (numeric.verdict, numeric.kernel_bytes) == (schema, want["kernel_bytes"])
    exact = {101376: True, 102400: False, None: None}[kernel_bytes]
    assert (sweep.to_dict()["verdict"], sweep.to_dict()["exact_fit"]) == (schema, exact)
    assert tactic.to_dict()["headroom_bytes"] == want["headroom_bytes"]
    assert tactic.to_dict()["verdict"] == want["verdict"]


def test_a_diff_row_that_fails_on_both_sides_says_why_once():
    """A config that does not compile on either tree keeps its verdict, and its row still
    says why (once, ``both:``, where the errors are the same; each side's where they differ)."""
    from cutlass_layout.model import NumericRecord, NumericRow
    from cutlass_layout.reports.diff import row_details

    err = "static_assert: Stage count too large (cutlass/gemm/collective/builders/sm120.inl:42)"
    both = NumericRow(
        config=Config(),
        label="x",
        old=NumericRecord("does_not_compile", err),
        new=NumericRecord("does_not_compile", err),
    )
    assert row_details(both, 8) == [f"both: {err}"]
    other = NumericRow(
        config=Config(),
        label="x",
        old=NumericRecord("does_not_compile", err),
        new=NumericRecord("does_not_compile", "error: no type named 'X'"),
    )
    assert row_details(other, 8) == [f"old: {err}", "new: error: no type named 'X'"]
    fits = NumericRow(
        config=Config(),
        label="x",
        old=NumericRecord("does_not_compile", err),
        new=NumericRecord("fits", None, 3, 98304),
    )
    assert row_details(fits, 8) == [f"old: {err}"]


@pytest.mark.parametrize(
    "doc",
    [
        {
            "size": 102400,
            "over": -1024,
            "fraction": 0.25,
            "seconds": 0.0,
            "tile": [128, 256, 64],
            "empty": [],
            "none": {},
        },
        {"tiny": [3e-05, 1e-07, 9.99e-05, 1e-4, -1e-5], "huge": 1e16, "big": 2**70},  # orjson spells these otherwise
        {"path": "/home/jos\u00e9/site-packages", "dash": "\u2014", "quote": 'a "b" \\ c\n\t'},  # escaped by json
        {1: "int key", None: "none key"},
        {True: "bool key", 2.5: "float key"},
        [],
        "text",
        0.00003,
    ],
)
def test_json_text_is_json_dumps_indent_2_byte_for_byte(doc):
    import json

    assert json_text(doc) == json.dumps(doc, indent=2)


def test_json_text_of_a_whole_report_is_json_dumps():
    import json

    doc = _report().to_dict()
    assert json_text(doc) == json.dumps(doc, indent=2)


def test_a_tactic_row_holds_each_number_its_attribute_gives():
    """An audit row's numbers, read from one KernelNumbers, are each the Tactic attribute of
    that name (TACTIC_NUMBERS), for a kernel that fits, one that fits exactly and one over."""
    from cutlass_layout.model import TACTIC_NUMBERS, Tactic

    for extra in (0, 101376 - 9216, 101376):  # 9216 B by hand (_struct); then exactly 101376; then over
        rep = replace(_report(), kernel=StructLayout("SharedStorage", 9216 + extra, 512, 128, []))
        t = Tactic(
            family="moe",
            name="n",
            a=None,
            b=None,
            out=None,
            fusion=None,
            swap_ab=None,
            tile=None,
            cluster=None,
            kernel=None,
            schedule=None,
            file="f.cu",
            line=1,
            launcher="L",
            report=rep,
        )
        row = t.to_dict()
        assert [k for k in row if k in TACTIC_NUMBERS] == list(TACTIC_NUMBERS)
        assert {k: row[k] for k in TACTIC_NUMBERS} == {k: getattr(t, k) for k in TACTIC_NUMBERS}
        assert row["kernel_bytes"] == 9216 + extra and row["headroom_bytes"] == 101376 - 9216 - extra


def test_a_report_read_back_lazily_is_the_same_and_its_bad_members_are_a_miss():
    """load_report (the results cache's reader) makes members only when read: the report is
    equal to the one written, member for member; a member with an unknown key, or one outside
    its parent, still makes the whole report a miss when it is read back, not later."""
    import copy

    from cutlass_layout.engine.loop import load_report

    rep = _report()
    doc = rep.to_dict()
    back = load_report(copy.deepcopy(doc))
    assert "_members" in back.kernel.__dict__  # not made yet
    assert back.kernel.size == 9216 and back.to_dict() == doc and back.kernel == rep.kernel
    assert back.kernel.find("tensors.collective.smem_D").offset == 0
    for bad in ({"colour": "red"}, {"offset": 9000}):
        hostile = copy.deepcopy(doc)
        hostile["kernel"]["fields"][0]["fields"][0].update(bad)
        with pytest.raises((TypeError, ValueError)):
            load_report(hostile)


def test_the_tma_line_names_every_term_of_its_sum():
    """``TmaTransactionBytes`` of SM90's mixed-input mainloop is ``TmaTransactionBytesMK +
    TmaTransactionBytesNK + TmaTransactionBytesExtra``
    (``sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input.hpp``): the line shows the third
    term too, as the total minus MK and NK. Values: a tile of MK 32768 and NK 131072 bytes with
    2048 bytes of scales, 32768 + 131072 + 2048 = 165888; a collective whose sum is MK + NK
    alone shows two terms."""
    from cutlass_layout.model import Constant, LayoutReport, TmaBytes
    from cutlass_layout.reports.layout import tma_text

    def rep(mk, nk, total, expr):
        return LayoutReport(
            config={},
            provenance=None,
            tma_transaction_bytes=TmaBytes(
                Constant("TmaTransactionBytesMK", mk),
                Constant("TmaTransactionBytesNK", nk),
                Constant("TmaTransactionBytes", total, expr),
            ),
        )

    mixed = rep(32768, 131072, 165888, "TmaTransactionBytesMK + TmaTransactionBytesNK + TmaTransactionBytesExtra")
    assert tma_text(mixed) == "MK 32768 + NK 131072 + TmaTransactionBytesExtra 2048 = 165888"
    plain_sum = rep(16384, 16384, 32768, "TmaTransactionBytesMK + TmaTransactionBytesNK")
    assert tma_text(plain_sum) == "MK 16384 + NK 16384 = 32768"
    assert tma_text(rep(16384, 16384, 33792, None)) == "MK 16384 + NK 16384 + the rest 1024 = 33792"


def test_an_exact_fit_is_said_the_same_way_everywhere():
    """One statement of an exact fit (model.EXACT_FIT_MEANING): ``layout``'s verdict, the audit
    table's note, its GitHub notice, ``audit --help`` and the docs (the FAQ, the audit guide) say it in the same words.
    Its content, from the sources: CUDA accepts cudaFuncAttributeMaxDynamicSharedMemorySize up to
    the opt-in limit inclusive (232448 B on an H200: FACTS.md); TensorRT-LLM's
    compute_occupancy_for_kernel returns 0 for ``smem_size + attr.sharedSizeBytes >=
    max_smem_per_block``, so it rejects a kernel of exactly the limit."""
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from cutlass_layout.cli import cli
    from cutlass_layout.model import EXACT_FIT_MEANING, AuditResult, Tactic
    from cutlass_layout.reports.audit import tail_parts, to_github
    from cutlass_layout.reports.layout import total_text

    rep = replace(_report(), kernel=StructLayout("SharedStorage", 101376, 512, 128, []))  # headroom 0
    assert rep.exact_fit and EXACT_FIT_MEANING in total_text(rep)
    t = Tactic(
        family="moe",
        name="n",
        a=None,
        b=None,
        out=None,
        fusion=None,
        swap_ab=None,
        tile=None,
        cluster=None,
        kernel=None,
        schedule=None,
        file="f.cu",
        line=1,
        launcher="L",
        report=rep,
    )
    res = AuditResult(
        provenance={
            "library": "flashinfer-python",
            "version": "0.0.1",
            "origin": "x",
            "cutlass_version": "4.2.0",
            "tree_hash": "0",
        },
        arch="sm120",
        capacity=rep.capacity,
        tactics=[t],
        sources=[],
        notes=[],
    )
    assert f"note: 1 exact fit: {EXACT_FIT_MEANING}" in tail_parts(res)[1]
    assert any(EXACT_FIT_MEANING in line for line in to_github(res).splitlines() if line.startswith("::notice"))
    flat = " ".join(CliRunner().invoke(cli, ["audit", "--help"], terminal_width=1000).output.split())
    assert EXACT_FIT_MEANING in flat
    docs = Path(__file__).resolve().parent.parent / "docs"
    for page in ("faq.md", "guides/audit.md"):
        text = (docs / page).read_text()
        assert EXACT_FIT_MEANING in " ".join(text.split()), page
        assert not re.search(r"occupancy check\s+rejects\)", text)  # no other wording of it
