"""audit on SM90: the ids of TensorRT-LLM's MoE grouped GEMM launcher-macro tactics.

flashinfer 0.7.2.post1's SM90 MoE module writes ``cutlass_instantiations/90/gemm_grouped/90/
cutlass_kernel_file_gemm_grouped_sm90_M128_group*.generated.cu``: 360
``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(Sm90, ...)`` lines. Unlike SM120's (cluster always
1x1x1) and SM10x's (``CGA_M_`` is the 1SM/2SM choice), one tile enum, types, fusion and swap_ab
come with up to four static clusters (``CGA_M_, CGA_N_, CGA_K_``: 1x1x1, 2x1x1, 1x2x1, 2x2x1), each
its own kernel: the id names the cluster where it is not 1x1x1. The lines below are copied from
``..._group0`` and ``..._group28`` (line numbers in the comments).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_audit_sm100_moe import _tactic

#: group0 lines 11 and 25: half, NONE, CTA 128x16x64, swap_ab, clusters 1x1x1 and 2x1x1
NONE_1 = "Sm90, half, half, half, void, EpilogueOpDefault, NONE, 128, 16, 64, 1, 1, 1, false, false, false, true"
NONE_2 = "Sm90, half, half, half, void, EpilogueOpDefault, NONE, 128, 16, 64, 2, 1, 1, false, false, false, true"
#: group28 lines 11 and 39: FP8, FINALIZE, CTA 128x16x128 (128 FP8 = 128 bytes), f16 out, swap_ab
FIN = (
    "Sm90, __nv_fp8_e4m3, __nv_fp8_e4m3, half, void, EpilogueOpDefault, FINALIZE, 128, 16, 128, "
    "{m}, {n}, 1, false, false, false, true"
)


def test_sm90_ids_name_a_cluster_other_than_1x1x1(tmp_path):
    assert _tactic(tmp_path, NONE_1).id == "moe/CtaShape128x16x128B/f16xf16/f16/none/swap_ab"
    two = _tactic(tmp_path, NONE_2)
    assert (two.id, two.cluster) == ("moe/CtaShape128x16x128B/f16xf16/f16/none/swap_ab/cluster2x1x1", [2, 1, 1])
    ids = {_tactic(tmp_path, FIN.format(m=m, n=n)).id for m, n in ((1, 1), (2, 1), (1, 2), (2, 2))}
    assert ids == {
        "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab",
        "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x1x1",
        "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster1x2x1",
        "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x2x1",
    }


def test_sm120_and_sm100_ids_have_no_cluster_part(tmp_path):
    """SM120's launchers (cluster 1x1x1) and SM100's (2x1x1 is the ``2sm`` part) keep their ids."""
    sm120 = "Sm120, SafeFP4, SafeFP4, half, void, EpilogueOpDefault, NONE, 128, 128, 128, 1, 1, 1, false, false, false, true"
    assert _tactic(tmp_path, sm120).id == "moe/CtaShape128x128x64B/nvfp4xnvfp4/f16/none/swap_ab"
    sm100 = (
        "Sm100, half, half, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 64, 64, 2, 1, 1, false, false, false, false"
    )
    assert _tactic(tmp_path, sm100).id == "moe/CtaShape128x64x128B/f16xf16/f16/none/2sm"


def test_the_cluster_column_tells_the_sm90_twins_apart(tmp_path):
    from test_audit_sm103_moe import _result

    from cutlass_layout.reports.audit import columns_and_rows

    twins = [_tactic(tmp_path, FIN.format(m=m, n=n)) for m, n in ((1, 1), (2, 1), (1, 2), (2, 2))]
    cols, rows = columns_and_rows(_result(tmp_path, twins).tactics)
    heads = [c.header for c in cols]
    assert [r[heads.index("cluster")] for r in rows] == ["1x1x1", "2x1x1", "1x2x1", "2x2x1"]
    assert not {"arch tag", "MMA", "epi"} & set(heads)  # no SM10x choices on SM90
    # one cluster: no column
    cols, _ = columns_and_rows(_result(tmp_path, [_tactic(tmp_path, NONE_1)]).tactics)
    assert "cluster" not in [c.header for c in cols]


def _macro_calls(text: str) -> list[str]:
    """The argument lists of the macro calls of a generated source (each call spans 4 lines)."""
    return [
        " ".join(m.group(1).split())
        for m in re.finditer(r"INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM\(([^;]*?)\)\s*;", text, re.S)
    ]


@pytest.mark.network
def test_the_360_sm90_moe_launchers_have_360_ids(tmp_path):
    """Every macro call of the SM90 module's generated sources (the install's generator run, no
    parse) named as the audit names it: 360 calls, 360 ids (120 of them with cluster 1x1x1,
    no cluster part)."""
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources import flashinfer_jit
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer("flashinfer-python==0.7.2.post1")
    builds = flashinfer_jit.jit_modules(install, "sm90", cuda_version=engine.target(install.tree).cuda.version)
    moe = next(m for m in builds.modules if m.name.startswith("fused_moe"))
    calls = [
        args
        for p in moe.generated
        if "/gemm_grouped/90/" in p.as_posix() and "_Mixed_" not in p.name
        for args in _macro_calls(p.read_text())
    ]
    assert len(calls) == 360
    ids = [_tactic(tmp_path, args).id for args in calls]
    assert len(set(ids)) == 360
    assert sum("/cluster" not in i for i in ids) == 120


# ---------------------------------------------------------------------------------------
# runtime candidates: the SM90 list, run over the install's code
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "sm90_moe"


def _read(root: Path, defines=("ENABLE_FP4", "CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED")):
    """:func:`read_candidates` for SM90 of ``moe_sm90.hpp`` below ``root`` (parsed with
    bodies, the given macros defined, as the audit's candidates unit is)."""
    from cutlass_layout.cpp.clang import ProbeUnit
    from cutlass_layout.installs.candidates import PROBE_MACROS, read_candidates

    flags = ["-x", "c++", "-std=c++17", f"-I{root}"] + [f"-D{d}" for d in defines]
    unit = ProbeUnit(
        '#include "moe_sm90.hpp"\n' + PROBE_MACROS,
        flags,
        root,
        filename=str(root / "cutlass_layout_candidates.cpp"),
        skip_bodies=False,
    )
    assert unit.errors() == []
    return read_candidates(unit, "sm90", root)


def _configs(rows):
    """``[(tile, cluster, schedule, swap_ab only)]`` of :attr:`Candidates.sm90` rows, short."""
    return [(t.removeprefix("CtaShape"), c.removeprefix("ClusterShape_"), s, swap) for t, c, s, swap in rows]


#: the fixture's lists, by hand: get_candidate_configs_sm90 with GROUPED_GEMM | HOPPER
#: (| FP8_ONLY): the three tiles, AUTO, 1x1x1, then 2x1x1 where sm90_supports_mcast_along_m
#: (M 128 with N 16..256, or 256x128), 1x2x1 where ..._along_n (N 128 or 256), 2x2x1 where both
GROUPED = [
    ("128x16x128B", "1x1x1", "AUTO", False),
    ("128x16x128B", "2x1x1", "AUTO", False),
    ("128x128x128B", "1x1x1", "AUTO", False),
    ("128x128x128B", "2x1x1", "AUTO", False),
    ("128x128x128B", "1x2x1", "AUTO", False),
    ("128x128x128B", "2x2x1", "AUTO", False),
    ("256x128x128B", "1x1x1", "AUTO", False),
    ("256x128x128B", "2x1x1", "AUTO", False),
    ("256x128x128B", "1x2x1", "AUTO", False),
    ("256x128x128B", "2x2x1", "AUTO", False),
]
#: with WEIGHT_ONLY too (has_w4afp8): the four weight-only tiles, each with the one schedule of
#: its std::set (COOPERATIVE where sm90_supports_coop: 128x16 for every K, 256x128 for K 128;
#: not 64x16 nor 128x128x512B, PINGPONG) and the four clusters in the order the code pushes them
WEIGHT_ONLY = [
    (tile, cluster, sched, False)
    for tile, sched in (
        ("64x16x128B", "PINGPONG"),
        ("128x16x128B", "COOPERATIVE"),
        ("128x128x512B", "PINGPONG"),
        ("256x128x128B", "COOPERATIVE"),
    )
    for cluster in ("1x1x1", "2x1x1", "1x2x1", "2x2x1")
]
#: the Humming pre-MMA block of getTmaWarpSpecializedConfigs: its two tiles x two schedules,
#: 1x1x1, swap_ab set
HUMMING = [
    (tile, "1x1x1", sched, True)
    for tile in ("128x8x128B", "128x16x128B")
    for sched in ("SINGLE_WARPGROUP_PREFILL", "SINGLE_WARPGROUP_ROLLING")
]


def test_sm90_candidate_lists_run_over_the_code():
    """The fixture (fixtures/headers/sm90_moe/moe_sm90.hpp: 0.7.4's functions with fewer tiles)
    run for each runner's flags: FP8 x FP8 and the 16-bit and float runners get the grouped
    list; W4A8 (e4m3 x uint4b_t) and W4A16 with FP4 weights the weight-only one; the Humming
    FP8 x FP4 runner the weight-only one and its block's configs; the post-MMA FP8 x FP4
    runners nothing (FP4_ONLY without BLACKWELL: get_candidate_configs returns {}); bf16 x
    uint4b_t nothing (isValidHopperMOESpecialisation refuses it). The dispatch: the TMA
    warp-specialized switch maps 128x16 and 128x128 with clusters 1x1x1, 1x2x1, 2x1x1; the
    mixed-input one four tiles with all four clusters."""
    cand = _read(FIXTURE)
    assert cand.note is None
    got = {k: _configs(v) for k, v in cand.sm90.items()}
    for runner in ("fp8xfp8", "bf16xbf16", "f16xf16", "f32xf32"):
        assert got[runner] == GROUPED
    for runner in ("fp8xuint4", "bf16xfp4", "f16xfp4"):
        assert got[runner] == WEIGHT_ONLY
    assert got["fp8xfp4/humming"] == WEIGHT_ONLY + HUMMING
    assert got["fp8xfp4/post"] == [] and got["bf16xuint4"] == [] and got["f16xuint4"] == []
    assert cand.dispatched == ["CtaShape128x16x128B", "CtaShape128x128x128B"]
    assert cand.dispatched_clusters == ["ClusterShape_1x1x1", "ClusterShape_1x2x1", "ClusterShape_2x1x1"]
    assert cand.mixed_dispatched == [
        "CtaShape64x16x128B",
        "CtaShape128x8x128B",
        "CtaShape128x16x128B",
        "CtaShape128x128x512B",
    ]
    assert cand.mixed_clusters == [f"ClusterShape_{c}" for c in ("1x1x1", "2x1x1", "1x2x1", "2x2x1")]
    assert cand.duplicated and cand.duplication == ["finalize", "swap_ab"]


def test_sm90_hopper_types_follow_the_macros():
    """isValidHopperMOESpecialisation's ``#ifdef ENABLE_FP4`` branches: without it an FP4
    weight is not a Hopper type (W4A16 with FP4 weights gets nothing); without
    CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED no runner gets anything."""
    no_fp4 = _read(FIXTURE, ("CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED",))
    assert no_fp4.note is None and no_fp4.sm90["bf16xfp4"] == []
    assert _configs(no_fp4.sm90["fp8xuint4"]) == WEIGHT_ONLY
    none = _read(FIXTURE, ("ENABLE_FP4",))
    assert none.note is None and all(rows == [] for rows in none.sm90.values())


@pytest.mark.parametrize(
    "old, new",
    [
        # a set member function _Eval does not follow
        (
            "mainloop_schedules.insert(MainloopScheduleType::PINGPONG);",
            "mainloop_schedules.emplace(MainloopScheduleType::PINGPONG);",
        ),
        # a statement after the Humming block
        (
            "  return tma_ws_configs;\n}\n}  // namespace tensorrt_llm",
            "  tma_ws_configs.push_back(tma_ws_configs[0]);\n  return tma_ws_configs;\n}\n}  // namespace tensorrt_llm",
        ),
    ],
)
def test_sm90_code_of_another_shape_is_a_note(tmp_path, old, new):
    """Code this reader does not follow: a note saying so, and no answer for any tactic."""
    import shutil

    root = tmp_path / "sm90_moe"
    shutil.copytree(FIXTURE, root)
    text = (root / "moe_sm90.hpp").read_text()
    assert old in text
    (root / "moe_sm90.hpp").write_text(text.replace(old, new))
    cand = _read(root)
    assert cand.note is not None and cand.note.startswith("runtime candidates: ") and cand.sm90 == {}
    line = "Sm90, __nv_fp8_e4m3, __nv_fp8_e4m3, half, void, EpilogueOpDefault, NONE, 128, 16, 128, 1, 1, 1, false, false, false, false"
    assert cand.get(_tactic(tmp_path, line)) is None


def _mixed(tmp_path, owner: str):
    """The tactic of a kernel re-hosted from the mixed-input launcher instantiation ``owner``."""
    from cutlass_layout.commands.audit import tactic_of
    from cutlass_layout.installs.kernels import FoundKernel
    from cutlass_layout.model import LayoutReport

    k = FoundKernel(spelling="X", alias="GemmKernel", owner=owner, line=3, decl_file=None, decl_line=None)
    src = tmp_path / "gen" / "x.generated.cu"
    return tactic_of("fused_moe_90", src, tmp_path / "gen", k, LayoutReport(config={}, provenance=None), tmp_path)


def _owner(launcher, act, weight, m, n, k, cluster, schedule, extra=""):
    c = ", ".join(f"cute::Int<{x}>" for x in cluster)
    return (
        f"{launcher}<{act}, {weight}, __nv_bfloat16, tensorrt_llm::cutlass_extensions::EpilogueOpDefault, "
        f"cute::Shape<cute::Int<{m}>, cute::Int<{n}>, cute::Int<{k}>>, cute::Shape<{c}>, "
        f"cutlass::gemm::{schedule}, cutlass::epilogue::TmaWarpSpecializedCooperative, "
        f"cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY{extra}>"
    )


MOE = "sm90_generic_mixed_moe_gemm_kernelLauncher"
SMALL_K = "sm90_generic_mixed_moe_small_k_kernelLauncher"
PRE = ", cutlass::gemm::collective::MixedInputScaleMode::kPreMmaE8M0"
COOP, PING = "KernelTmaWarpSpecializedCooperative", "KernelTmaWarpSpecializedPingpong"


def test_sm90_tactics_tried_where_a_config_matches(tmp_path):
    """Candidates.get on the fixture's lists: a macro launcher's kernel by its tile enum and
    static cluster (its configs' schedule is AUTO), FINALIZE and swap_ab copies; a mixed-input
    launcher's by the launcher's T and WeightType, tile, cluster and schedule, its scale mode
    picking the FP8 x FP4 runner; each only where the dispatch maps its tile and cluster."""
    cand = _read(FIXTURE)
    line = (
        "Sm90, __nv_fp8_e4m3, __nv_fp8_e4m3, half, void, EpilogueOpDefault, {f}, {m}, {n}, 128, "
        "{c}, 1, false, false, false, {s}"
    )

    def macro(f="NONE", m=128, n=16, c="1, 1", s="false"):
        return cand.get(_tactic(tmp_path, line.format(f=f, m=m, n=n, c=c, s=s)))

    assert macro() is True
    assert macro(f="FINALIZE", c="2, 1", s="true") is True  # a FINALIZE copy's swap_ab copy
    assert macro(c="1, 2") is False  # 128x16 has no N multicast
    assert macro(m=128, n=128, c="1, 2") is True
    assert macro(m=128, n=128, c="2, 2") is False  # the dispatch's cluster switch has no 2x2x1
    assert macro(m=256, n=128) is False  # the dispatch's tile switch has no 256x128
    assert macro(f="ACTIVATION") is None

    def mixed(*args, **kw):
        return cand.get(_mixed(tmp_path, _owner(*args, **kw)))

    w4a8 = (MOE, "__nv_fp8_e4m3", "cutlass::uint4b_t")
    assert mixed(*w4a8, 128, 16, 128, (1, 1, 1), COOP) is True
    assert mixed(*w4a8, 128, 16, 128, (2, 2, 1), COOP) is True
    assert mixed(*w4a8, 128, 16, 128, (1, 1, 1), PING) is False  # its set holds COOPERATIVE
    assert mixed(*w4a8, 128, 128, 512, (1, 1, 1), PING) is True
    assert mixed(*w4a8, 256, 128, 128, (1, 1, 1), COOP) is False  # not in the mixed dispatch
    assert mixed(MOE, "__nv_bfloat16", "cutlass::uint4b_t", 64, 16, 128, (1, 1, 1), PING) is False
    assert mixed(MOE, "__nv_bfloat16", "SafeFP4", 64, 16, 128, (1, 1, 1), PING) is True
    fp8fp4 = (MOE, "__nv_fp8_e4m3", "SafeFP4")
    assert mixed(*fp8fp4, 64, 16, 128, (1, 1, 1), PING, extra=PRE) is True  # Humming
    assert mixed(*fp8fp4, 64, 16, 128, (1, 1, 1), PING) is False  # post-MMA: an empty list
    small = (SMALL_K, "__nv_fp8_e4m3", "SafeFP4")
    for sched in ("SINGLE_WARPGROUP_PREFILL", "SINGLE_WARPGROUP_ROLLING"):
        kind = f", tensorrt_llm::cutlass_extensions::MainloopScheduleType::{sched}"
        assert mixed(*small, 128, 8, 128, (1, 1, 1), PING, extra=PRE + kind) is True
        assert mixed(*small, 128, 8, 128, (2, 1, 1), PING, extra=PRE + kind) is False
    # fpA_intB's dense GEMM launcher: not the MoE runner's list
    dense = (
        "sm90_generic_mixed_gemm_kernelLauncher<__nv_bfloat16, cutlass::uint4b_t, __nv_bfloat16, "
        "__nv_bfloat16, __nv_bfloat16, cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY, "
        "tensorrt_llm::cutlass_extensions::EpilogueOpBias, cute::Shape<cute::Int<64>, cute::Int<16>, "
        "cute::Int<64>>, cute::Shape<cute::Int<1>, cute::Int<1>, cute::Int<1>>, "
        f"cutlass::gemm::{PING}, cutlass::epilogue::TmaWarpSpecializedCooperative>"
    )
    assert cand.get(_mixed(tmp_path, dense)) is None


#: 0.7.4's cutlass_heuristic.cpp by hand (get_candidate_tiles_sm90, sm90_supports_mcast_along_m/n,
#: sm90_supports_coop, get_candidate_configs_sm90), ``(tile, cluster, schedule, swap_ab only)``:
#: GROUPED_GEMM without WEIGHT_ONLY: six tiles, AUTO; 2x1x1 for M 128 (N 16..256) and 256x128,
#: 1x2x1 and 2x2x1 also for N 128 and 256
FULL = ("1x1x1", "2x1x1", "1x2x1", "2x2x1")
GROUPED_074 = [
    (f"{t}x128B", c, "AUTO", False)
    for t, clusters in (
        ("128x16", FULL[:2]),
        ("128x32", FULL[:2]),
        ("128x64", FULL[:2]),
        ("128x128", FULL),
        ("128x256", FULL),
        ("256x128", FULL),
    )
    for c in clusters
]
#: GROUPED_GEMM | WEIGHT_ONLY: 29 tiles, each with all four clusters and one schedule:
#: COOPERATIVE where sm90_supports_coop (M 128 with N 16/32/64 for K 128..512, N 128/256 for
#: K 128/256; 256x128 for K 128/256; 256x256x128), else PINGPONG (every M 64, 128x128x512B)
WEIGHT_ONLY_074 = [
    (t, c, "PINGPONG" if t.startswith("64x") or t == "128x128x512B" else "COOPERATIVE", False)
    for t in (
        "64x16x128B",
        "64x16x256B",
        "64x16x512B",
        "64x32x128B",
        "64x32x256B",
        "64x32x512B",
        "64x64x128B",
        "64x64x256B",
        "64x64x512B",
        "64x128x128B",
        "64x128x256B",
        "64x128x512B",
        "128x16x128B",
        "128x16x256B",
        "128x16x512B",
        "128x32x128B",
        "128x32x256B",
        "128x32x512B",
        "128x64x128B",
        "128x64x256B",
        "128x64x512B",
        "128x128x128B",
        "128x128x256B",
        "128x128x512B",
        "128x256x128B",
        "128x256x256B",
        "256x128x128B",
        "256x128x256B",
        "256x256x128B",
    )
    for c in FULL
]
#: moe_gemm_template_dispatch.h, the Humming pre-MMA block: five tiles x two schedules, 1x1x1
HUMMING_074 = [
    (f"{t}x128B", "1x1x1", s, True)
    for t in ("128x8", "128x16", "128x32", "128x40", "128x64")
    for s in ("SINGLE_WARPGROUP_PREFILL", "SINGLE_WARPGROUP_ROLLING")
]


#: one source of each kind of flashinfer 0.7.4's SM90 MoE module: macro launchers, W4A8 and
#: BF16 x FP4 mixed-input ones (half of each in the runner's list), FP8 x FP4 Humming ones (both
#: launchers), M64 mixed ones, fpA_intB dense ones
SAMPLE_074 = tuple(
    f"cutlass_kernel_file_{s}.generated.cu"
    for s in (
        "gemm_grouped_sm90_M128_group0",
        "gemm_grouped_sm90_M128_Mixed_group0",
        "gemm_grouped_sm90_M128_Mixed_group28",
        "gemm_grouped_sm90_M128_Mixed_group42",
        "gemm_grouped_sm90_M128_Mixed_group70",
        "gemm_grouped_sm90_M64_Mixed_group0",
        "gemm_sm90_M128_group0",
    )
)


@pytest.mark.network
@pytest.mark.slow
def test_sm90_runtime_candidates_of_0_7_4(only_sources):
    """flashinfer 0.7.4's SM90 MoE (its builders run, then only :data:`SAMPLE_074`'s sources
    are parsed: the whole module is about ten minutes cold): the lists read from its code are
    the ones worked out by hand above (FP8 x FP8 and BF16 x BF16: the grouped list; W4A8
    e4m3 x uint4b_t: the weight-only one; FP8 x FP4 Humming: the weight-only one and the
    block's; FP8 x FP4 post-MMA: none); every macro launcher's kernel is tried (its tile,
    cluster, fusion and swap_ab are in its runner's list, the dispatch maps all six tiles and
    four clusters); a mixed-input MoE kernel is tried exactly where its (tile, cluster,
    schedule) is in its runner's list; fpA_intB's dense kernels get no answer."""
    from cutlass_layout.commands.audit import audit

    only_sources(lambda name: name in SAMPLE_074)
    res = audit("flashinfer-python==0.7.4", "sm90", family="moe")
    assert sorted({t.file.rsplit("/", 1)[-1] for t in res.tactics}) == sorted(SAMPLE_074)
    cand = res.candidates
    assert cand is not None and cand.note is None
    got = {k: _configs(v) for k, v in cand.sm90.items()}
    assert got["fp8xfp8"] == got["bf16xbf16"] == GROUPED_074
    assert got["fp8xuint4"] == got["bf16xfp4"] == WEIGHT_ONLY_074
    assert got["fp8xfp4/humming"] == WEIGHT_ONLY_074 + HUMMING_074
    assert got["fp8xfp4/post"] == []
    lists = {
        "__nv_fp8_e4m3, cutlass::uint4b_t": WEIGHT_ONLY_074,
        "__nv_bfloat16, SafeFP4": WEIGHT_ONLY_074,
        "__nv_fp8_e4m3, SafeFP4": WEIGHT_ONLY_074 + HUMMING_074,
    }
    macro = [t for t in res.tactics if t.launcher.startswith("tma_warp_specialized_generic_moe_gemm_kernelLauncher")]
    assert len(macro) == 8 and all(t.runtime_candidate is True for t in macro)
    tried = [t.runtime_candidate for t in res.tactics if t not in macro]
    assert (tried.count(True), tried.count(False), tried.count(None)) == (
        28,
        12,
        8,
    )  # 4+4+4+8+8 in the list, 4+4+4 not, fpA_intB 8
    for t in res.tactics:
        launcher = t.launcher.split("<")[0]
        if launcher == "sm90_generic_mixed_gemm_kernelLauncher":
            assert t.runtime_candidate is None, t.id
        elif launcher in (MOE, SMALL_K):
            types = ", ".join(t.launcher.split("<", 1)[1].split(", ")[:2])
            m = re.fullmatch(r"CtaShape(\w+B)_ClusterShape_(\w+?)_([A-Z_]+?)(_PreMmaE8M0)?", t.name)
            assert m.group(4) or types != "__nv_fp8_e4m3, SafeFP4", t.id  # 0.7.4 builds Humming ones only
            want = (m.group(1), m.group(2), m.group(3)) in {r[:3] for r in lists[types]}
            assert t.runtime_candidate is want, t.id
