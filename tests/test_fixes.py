"""What fits instead (audit's ``fix``): the stage count with which an over-capacity or
exact-fit tactic's kernel fits, laid out from its launcher with the mainloop builder's stage
count replaced.

Offline: the text transforms (launchers.py) on small launcher texts written here, and the
miniature install (its launcher names no CollectiveBuilder: nothing to replace). With the
package index and nvcc: flashinfer-python 0.7.2.post1's four FINALIZE 128x256x128 / 256x128x128
NVFP4 tactics, whose fixed launchers nvcc's front end compiles (the numbers are nvcc's), and
whose carve-out is worked out by hand from the builder's formula.
"""

from __future__ import annotations

import json
import re

import pytest

from cutlass_layout.commands.audit import audit
from cutlass_layout.cpp.macros import blank_calls, macro_definition
from cutlass_layout.cpp.declarations import enclosing_namespaces
from cutlass_layout.cpp.text import mainloop_builder, stage_count_macro, with_stage_count

LAUNCHER = r"""
#define LAUNCH(T, M)                                                                   \
  static void launch_##T##_##M(int x) {                                                \
    using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<             \
        A, B, Tile, C, /* a comment, with commas */ S, T>::CollectiveOp;               \
    using Carve = cutlass::gemm::collective::StageCountAutoCarveout<                    \
        static_cast<int>(sizeof(typename Epi::SharedStorage))>;                         \
    using Mainloop = typename cutlass::gemm::collective::                               \
        CollectiveBuilder<Arch, Op, EA, LA*, 32, EB, LB*, 32, float, cute::Shape<M, M>, \
                          Cluster, Carve, Auto>::CollectiveOp;                         \
    using GemmKernel = cutlass::gemm::kernel::GemmUniversal<P, Mainloop, Epi, void>;  \
    run<GemmKernel>(x);                                                                \
  }
"""


def test_the_stage_count_argument_alone_is_replaced():
    params, body, _ = macro_definition(LAUNCHER, "LAUNCH")
    (b0, b1), (s, e) = mainloop_builder(body)
    assert body[s:e] == "Carve"  # the 12th argument of the mainloop builder, not the epilogue's
    assert body[b0:b1].startswith("cutlass::gemm::collective::") and body[b0:b1].endswith("Auto>")
    fixed = with_stage_count(body, 2)
    assert fixed == body[:s] + "cutlass::gemm::collective::StageCount<2>" + body[e:]
    macro = stage_count_macro("LAUNCH", params, body, "CL_FIX_X")
    assert macro.splitlines()[1:3] == [
        "#ifndef CL_FIX_X",
        "#define CL_FIX_X(CL_STAGES, T, M) " + with_stage_count(body, "CL_STAGES"),
    ]
    # a kernel whose mainloop is written in place, and one that names no builder
    inline = (
        "using GemmKernel = cutlass::gemm::kernel::GemmUniversal<P, typename cutlass::gemm::"
        "collective::CollectiveBuilder<a, b, c, d, e, f, g, h, i, j, k, StageCountAuto, l>::"
        "CollectiveOp, E>;"
    )
    assert "StageCount<3>, l>" in with_stage_count(inline, 3)
    assert with_stage_count("using GemmKernel = cutlass::gemm::kernel::GemmUniversal<P, M, E>;", 2) is None


def test_namespaces_and_blanked_calls():
    src = (
        '#include "x.inl"\nnamespace a {\nnamespace b::c {\n#if 1\nLAUNCH(t,\n  m);\n#endif\n}\n}\n'
        "struct S {\nLAUNCH(u, v);\n};\n"
    )
    assert enclosing_namespaces(src, 5) == ["a", "b", "c"]
    assert enclosing_namespaces(src, 11) is None  # inside a class
    out = blank_calls(src, ["LAUNCH"])
    assert len(out) == len(src) and out.count("\n") == src.count("\n")
    assert "LAUNCH" not in out and "namespace b::c {" in out and "#endif" in out


@pytest.mark.mini_shared
def test_mini_over_capacity_tactic_says_why_it_has_no_fix(mini):
    """The miniature launcher builds its mainloop without a CollectiveBuilder (test_audit.py):
    no stage count to replace, so its over-capacity tactic's fix says so; fitting ones have none."""
    res = audit(str(mini), jobs=1, family="moe")
    over = next(t for t in res.tactics if t.verdict == "over_capacity")
    assert over.fix is not None and over.fix.stages is None
    assert "names no mainloop CollectiveBuilder" in over.fix.error
    assert over.to_dict()["fix"]["stages"] is None
    assert all(t.fix is None for t in res.tactics if t.verdict == "fits")


# -------------------------------------------------------------------------------------------
# flashinfer 0.7.2.post1 (network), against nvcc

#: flashinfer 0.7.2.post1's CUTLASS, SM120 grouped NVFP4 x NVFP4, by hand from the headers:
#: ``sm120_blockscaled_mma_builder.inl`` budgets ``ReducedSmemCapacityBytes`` = 101376 - 432
#: (scheduler pipeline, two TMA descriptors, tensormap-ready pipeline of a grouped kernel) =
#: 100944 B; ``sm100_compute_stage_count_or_override_blockscaled``
#: (``sm100_blockscaled_umma_builder.inl``) counts per stage A 128x128 e2m1 = 8192 + B 256x128 =
#: 16384 (or the other way round for 256x128) + round_up(16-byte pipeline, 128) = 128 + SFA
#: 128x128/16 = 1024 + SFB 256x128/16 = 2048: 27776 B, and gives (100944 - C) / 27776 stages.
REDUCED, STAGE_BYTES = 100944, 8192 + 16384 + 128 + 1024 + 2048
FINALIZE = [
    f"moe/CtaShape{tile}/nvfp4xnvfp4/{out}/finalize"
    for tile in ("128x256x64B", "256x128x64B")
    for out in ("bf16", "f16")
]


def least_carveout(stages: int) -> int:
    """The smallest C with (REDUCED - C) // STAGE_BYTES == stages: REDUCED - C must be below
    (stages + 1) x STAGE_BYTES, so C = REDUCED - (stages + 1) x STAGE_BYTES + 1."""
    return REDUCED - (stages + 1) * STAGE_BYTES + 1


def test_an_exact_fit_is_a_fix():
    """One rule for "fits" (headroom >= 0): the fix search takes a stage count whose kernel
    fills the capacity exactly, as ``layout``'s verdict and ``sweep``'s ``max that fits`` do.
    Bytes of 0.7.2.post1's exact-fit MXFP8 x MXFP4 128x32x128 tactic (4 stages, 101376 B) and
    its over-capacity FINALIZE 128x256x128 twin (102400 B), against SM120's 101376."""
    from cutlass_layout.installs.fixes import is_fix
    from cutlass_layout.model import CompileError, Constant, LayoutReport, Provenance, StructLayout

    cap = Constant(name="sm120_smem_capacity_bytes", value=101376)

    def rep(size, error=None):
        return LayoutReport(
            config={},
            provenance=Provenance("/r", "4.5.0", "h", "o"),
            capacity=cap,
            kernel=None if error else StructLayout("SharedStorage", size, 1024, 0),
            error=error,
        )

    exact = rep(101376)
    assert exact.fits and exact.exact_fit and is_fix(exact)
    assert not is_fix(rep(102400)) and is_fix(rep(74752))
    assert not is_fix(rep(0, CompileError(kind="static_assert", message="m")))


def test_least_carveout_by_hand():
    assert STAGE_BYTES == 27776 and least_carveout(2) == 17617
    assert (REDUCED - 17617) // STAGE_BYTES == 2 and (REDUCED - 17616) // STAGE_BYTES == 3
    # the launcher's own carve-out, sizeof(CollectiveEpilogue::SharedStorage) = 17408 B (FINALIZE,
    # tests/handed.md section E), gives 3 stages: budgeted 17408 + 3 x 27776 = 100736 B
    assert (REDUCED - 17408) // STAGE_BYTES == 3


def test_predicted_stages_by_hand():
    """The stage count to lay out next, from two sizes a stage apart. The sizes are made up
    around a mainloop stage of 18432 B, by hand: a 128x16 tile with 128 B of f32 K (32
    elements) stages A 128 x 32 x 4 = 16384 B and B 16 x 32 x 4 = 2048 B (flashinfer 0.7.4's
    SM90 f32 128x16x128B MoE tile). With S = 10 at 195584 B and 9 stages at 177152 B, 101376 B
    fit 4 stages at that rate (84992 B; 5 take 103424 B); one stage less that fits is S - 1;
    no prediction without the size of S - 1, or where it is not smaller."""
    from cutlass_layout.installs.fixes import predicted_stages

    assert 128 * 32 * 4 + 16 * 32 * 4 == 18432 == 195584 - 177152
    assert predicted_stages(195584, 177152, 10, 101376) == 4
    assert 177152 - 5 * 18432 == 84992 <= 101376 < 177152 - 4 * 18432 == 103424
    assert predicted_stages(232448, 214016, 12, 232448) == 11  # S - 1 fits: 18432 B under
    assert predicted_stages(232448, None, 12, 232448) is None
    assert predicted_stages(1000, 1000, 3, 500) is None


@pytest.fixture(scope="module")
def moe_072(audit_072):
    return audit_072


@pytest.mark.network
@pytest.mark.slow
def test_every_fix_fits_and_one_more_stage_does_not(moe_072):
    """Every over-capacity and exact-fit tactic has a fix (16 in 0.7.2.post1: 4 over, 12 exact):
    a stage count below the tactic's whose kernel fits (headroom >= 0; here all have headroom
    left), and the stage count above it is the tactic's own or was laid out and does not fit;
    tactics that fit have none."""
    needing = [t for t in moe_072.tactics if t.verdict in ("over_capacity", "exact_fit")]
    assert len(needing) == 16
    cap = moe_072.capacity_bytes
    for t in needing:
        f = t.fix
        assert f is not None and f.error is None and f.stages is not None, t.id
        assert f.headroom_bytes > 0 and f.headroom_bytes == cap - f.kernel_bytes
        above = f.searched.get(f.stages + 1, t.kernel_bytes if f.stages + 1 == t.stages else None)
        assert above is not None and (above > cap or f.stages + 1 == t.stages), t.id
        assert f.stages < t.stages and f.searched[f.stages] == f.kernel_bytes
        # the bytes the builder did not count add up, and its budget is its formula's
        b = f.builder
        assert b.stages == t.stages and b.stages == (b.capacity.value - b.carveout_bytes) // b.stage_bytes
        assert f.uncounted_bytes == t.kernel_bytes - b.budgeted_bytes == sum(f.uncounted.values())
        # the carve-out makes the same formula give the fix, and one byte less does not
        assert (b.capacity.value - f.carveout_bytes) // b.stage_bytes == f.stages
        assert (b.capacity.value - f.carveout_bytes + 1) // b.stage_bytes == f.stages + 1
    assert all(t.fix is None for t in moe_072.tactics if t.verdict == "fits")
    row = next(t for t in needing if t.id == FINALIZE[0]).to_dict()["fix"]
    assert {k: row[k] for k in ("stages", "kernel_bytes", "headroom_bytes", "carveout_bytes")} == {
        "stages": 2,
        "kernel_bytes": 74752,
        "headroom_bytes": 101376 - 74752,
        "carveout_bytes": 17617,
    }


def _invocation(text: str, line: int) -> list[str]:
    """The arguments of the macro invocation starting on ``line`` of a generated source."""
    rest = "\n".join(text.split("\n")[line - 1 :])
    m = re.match(r"\s*\w+\s*\(([^()]*)\)", rest)
    return [" ".join(a.split()) for a in m.group(1).split(",")]


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_finalize_fixes_against_nvcc(moe_072, nvcc, tmp_path):
    """The four FINALIZE tactics (102400 B at 3 stages, 1024 over): their launcher with
    ``StageCount<2>`` and ``StageCount<3>`` in the mainloop builder, and with
    ``StageCountAutoCarveout<C>`` for C = 17617 (by hand: :func:`least_carveout`) and 17616,
    compiled by nvcc's host pass (tests/test_audit_nvcc.py's way: TensorRT-LLM's check macro
    after ``GemmKernel`` names the numbers in an error): nvcc's kernel bytes and stage counts
    equal the fix's; 2 stages fit (74752 B by nvcc), 3 do not (102400 B); the carve-out 17617
    gives 2 stages and 17616 gives 3."""
    from test_audit_nvcc import nvcc_host_pass_sizes

    from cutlass_layout.checks.nvcc_probe import nvcc_flags
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer_jit import jit_modules
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer("flashinfer-python==0.7.2.post1")
    tgt = engine.target(install.tree)
    moe = next(
        m
        for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
        if m.name.startswith("fused_moe")
    )
    by = {t.id: t for t in moe_072.tactics}
    inl = install.root / by[FINALIZE[0]].launcher_file
    params, body, _ = macro_definition(
        inl.read_text(), "INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM", near_line=by[FINALIZE[0]].launcher_line
    )
    fix = stage_count_macro("INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM", params, body, "CL_FIX_STAGES")
    carve = fix.replace("CL_FIX_STAGES", "CL_FIX_CARVE").replace(
        "cutlass::gemm::collective::StageCount<CL_STAGES>",
        "cutlass::gemm::collective::StageCountAutoCarveout<CL_STAGES>",
    )
    (tmp_path / "cl_fix.h").write_text(fix + carve)
    lines, want = [], {}
    for tid in FINALIZE:
        t = by[tid]
        assert (t.stages, t.kernel_bytes, t.fix.stages) == (3, 102400, 2)
        source = next(p for p in moe.generated if str(p).endswith(t.file))
        text = source.read_text()
        args = ", ".join(_invocation(text, t.line))
        for macro, n, stages in (
            ("CL_FIX_STAGES", 2, 2),
            ("CL_FIX_STAGES", 3, 3),
            ("CL_FIX_CARVE", least_carveout(2), 2),
            ("CL_FIX_CARVE", 17616, 3),
        ):
            lines.append(f"namespace cl_{len(lines)} {{ {macro}({n}, {args}); }}")
            want[len(lines)] = (tid, macro, n, stages)
        head = text.split("\n")[0]
    assert head.startswith("#include")
    n_head = 6  # the lines before the first candidate
    src = tmp_path / "fixes.cu"
    src.write_text(
        "\n".join(
            [
                head,
                f'#include "{tmp_path / "cl_fix.h"}"',
                "namespace tensorrt_llm {",
                "namespace kernels {",
                "namespace cutlass_kernels_oss {",
                "",
                *lines,
                "}",
                "}",
                "}",
                "",
            ]
        )
    )
    got = nvcc_host_pass_sizes(src, nvcc_flags(moe, install.tree), tmp_path)
    assert len(got) == len(want) == 16, sorted(got)
    for k, (tid, macro, n, stages) in want.items():
        kernel, mainloop, _, nvcc_stages = got[n_head + k]
        assert nvcc_stages == stages, (tid, macro, n)
        assert kernel == (74752 if stages == 2 else 102400), (tid, macro, n)
        if macro == "CL_FIX_STAGES" and n == 2:  # the fix as the tool laid it out
            f = by[tid].fix
            assert (f.kernel_bytes, f.mainloop_bytes, f.carveout_bytes) == (kernel, mainloop, least_carveout(2))


@pytest.mark.network
@pytest.mark.slow
def test_layout_tactic_says_what_fits_instead(moe_072, capsys):
    """``layout --tactic`` (the audit cached by the module's fixture): the fix in words, and in
    its JSON; the numbers as test_finalize_fixes_against_nvcc checks them."""
    from cutlass_layout.cli import main

    spec = "flashinfer-python==0.7.2.post1"
    assert main(["layout", "--tactic", FINALIZE[0], "--cutlass", spec]) in (0, None)
    out = capsys.readouterr().out
    assert "What fits instead: StageCount<2> (" in out and "kernel 74752 B" in out
    assert "StageCountAutoCarveout<17617>" in out
    assert "(ReducedSmemCapacityBytes 100944 B - carve-out 17408 B) / 27776 B per stage = 3 stages" in out
    assert main(["layout", "--tactic", FINALIZE[0], "--cutlass", spec, "--json"]) in (0, None)
    fix = json.loads(capsys.readouterr().out)["tactic"]["fix"]
    assert (fix["stages"], fix["kernel_bytes"], fix["carveout_bytes"]) == (2, 74752, 17617)


def test_a_tactic_at_the_fewest_stages_has_nothing_to_search():
    """A tactic that already has 2 stages, the fewest the SM90 and SM120 collectives take
    (``static_assert(DispatchPolicy::Stages >= 2, ...)`` in
    ``sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp`` and the others): its fix says so
    (table, ``layout --tactic``, JSON) instead of "could not be searched"."""
    from types import SimpleNamespace

    from cutlass_layout.model import Fix
    from cutlass_layout.reports.audit import fix_cell, fix_lines

    fix = Fix(fewest_stages=2)
    assert Fix.from_dict(fix.to_dict()) == fix and fix.to_dict()["fewest_stages"] == 2
    t = SimpleNamespace(fix=fix)
    assert fix_cell(t) == "none: 2 st is the fewest"
    assert fix_lines(t) == [
        "What fits instead: nothing found: it has 2 stages, the fewest its collective "
        "takes (static_assert Stages >= 2): no stage count fits"
    ]
    assert fix_cell(SimpleNamespace(fix=Fix(error="not searched"))) == "?"


def test_one_groups_fix_search_is_dealt_to_every_worker():
    from cutlass_layout.commands.audit import FIX_PART_MIN, fix_parts

    # flashinfer 0.7.4 SM90: 60 tactics of one folder, flags and includes (one group)
    parts = fix_parts([("g", list(range(60)))], 2)
    assert [(k, items) for k, items in parts] == [("g", list(range(0, 60, 2))), ("g", list(range(1, 60, 2)))]
    assert fix_parts([("g", list(range(2 * FIX_PART_MIN - 1)))], 2) == [("g", list(range(2 * FIX_PART_MIN - 1)))]
    assert [len(items) for _, items in fix_parts([("a", list(range(8))), ("b", [0, 1])], 4)] == [4, 4, 2]
    assert fix_parts([("a", [0]), ("b", [1])], 2) == [("a", [0]), ("b", [1])]  # a worker each already
