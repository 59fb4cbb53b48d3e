"""audit on SM100: TensorRT-LLM's MoE grouped GEMM tactics, named from their launcher lines.

flashinfer 0.7.2.post1's generator (``generate_kernels.py``, ``generate_sm100_operations``)
writes ``cutlass_instantiations/100/gemm_grouped/100/*.generated.cu``: one
``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(ArchTag_, DataType_, WeightType_, OutputType_,
EpilogueSchedule_, EpilogueTag_, FUSION_, CTA_M_, CTA_N_, CTA_K_, CGA_M_, CGA_N_, CGA_K_,
MXFPX_, DYNAMIC_CGA_, BIAS_, SWAP_AB_)`` per kernel (``moe_gemm_tma_ws_launcher.inl`` 215-217).
The launcher derives from them: ``Is2SM = IsSM10x && CGA_M_ == 2`` (the MMA tile is then
``2*CTA_M_``), a runtime ``Shape<int32_t, int32_t, _1>`` cluster when ``DYNAMIC_CGA_``, and the
epilogue schedule from ``EpilogueSchedule_`` (``PtrArrayTmaWarpSpecialized`` or
``PtrArrayNoSmemWarpSpecialized``, 1Sm/2Sm picked by Is2SM). The tile enum of the dispatch
(``moe_gemm_template_dispatch_tma_ws.h`` ``SHAPE_CASE``: ``KtileBytes = K*8/bits``) names K in
bytes of the activation. The offline test below holds launcher lines copied from those files
and the names they must get, worked out by hand from those rules.
"""

from __future__ import annotations

import pytest

from cutlass_layout.commands.audit import kernel_parts, tactic_of
from cutlass_layout.installs.kernels import FoundKernel
from cutlass_layout.model import LayoutReport

MACRO = "INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM"
#: the macro's parameters as moe_gemm_tma_ws_launcher.inl (0.7.2.post1, lines 215-217) declares them
PARAMS = (
    "ArchTag_, DataType_, WeightType_, OutputType_, EpilogueSchedule_, EpilogueTag_, FUSION_, "
    "CTA_M_, CTA_N_, CTA_K_, CGA_M_, CGA_N_, CGA_K_, MXFPX_, DYNAMIC_CGA_, BIAS_, SWAP_AB_"
)

#: (launcher arguments copied from the generated sources, expected identity)
LINES = [
    # M128_BS_group22: NVFP4 x NVFP4, FINALIZE, CTA 128x256x256 (256 FP4 = 128 bytes), 2SM, dynamic
    (
        "Sm100, SafeFP4, SafeFP4, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, FINALIZE, "
        "128, 256, 256, 2, 1, 1, false, true, false, true",
        dict(
            name="CtaShape128x256x128B",
            a="nvfp4",
            b="nvfp4",
            out="f16",
            fusion="finalize",
            swap_ab=True,
            tile=[128, 256, 256],
            cluster=None,
            mma_sms=2,
            dynamic_cluster=True,
            epilogue_schedule="tma",
            id="moe/CtaShape128x256x128B/nvfp4xnvfp4/f16/finalize/swap_ab/2sm/dynamic_cluster",
        ),
    ),
    # M128_BS_group0: MXFP8 x MXFP8 (MXFPX_ true), 128 FP8 = 128 bytes, 1SM, dynamic
    (
        "Sm100, __nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 64, 128, 1, 1, 1, true, true, false, false",
        dict(
            name="CtaShape128x64x128B",
            a="mxfp8",
            b="mxfp8",
            out="bf16",
            fusion="none",
            swap_ab=False,
            tile=[128, 64, 128],
            cluster=None,
            mma_sms=1,
            dynamic_cluster=True,
            epilogue_schedule="tma",
            id="moe/CtaShape128x64x128B/mxfp8xmxfp8/bf16/none/1sm/dynamic_cluster",
        ),
    ),
    # M128_BS_group24: FP8 activations x FP4 weights, MX scales (W4A8-MXFP4), swap_ab: A is the weight
    (
        "Sm100, __nv_fp8_e4m3, SafeFP4, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 64, 128, 2, 1, 1, true, false, false, true",
        dict(
            name="CtaShape128x64x128B",
            a="mxfp4",
            b="mxfp8",
            out="f16",
            fusion="none",
            swap_ab=True,
            tile=[128, 64, 128],
            cluster=[2, 1, 1],
            mma_sms=2,
            dynamic_cluster=False,
            epilogue_schedule="tma",
            id="moe/CtaShape128x64x128B/mxfp4xmxfp8/f16/none/swap_ab/2sm",
        ),
    ),
    # M64_group0 / M128_group27: 16- and 32-bit MoE without a shared-memory epilogue, static cluster
    (
        "Sm100, half, half, half, PtrArrayNoSmemWarpSpecialized, EpilogueOpDefault, NONE, "
        "64, 32, 64, 1, 1, 1, false, false, false, false",
        dict(
            name="CtaShape64x32x128B",
            a="f16",
            b="f16",
            out="f16",
            fusion="none",
            swap_ab=False,
            tile=[64, 32, 64],
            cluster=[1, 1, 1],
            mma_sms=1,
            dynamic_cluster=False,
            epilogue_schedule="nosmem",
            id="moe/CtaShape64x32x128B/f16xf16/f16/none/1sm/nosmem",
        ),
    ),
    (
        "Sm100, float, float, float, PtrArrayNoSmemWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 32, 32, 1, 1, 1, false, true, false, true",
        dict(
            name="CtaShape128x32x128B",
            a="f32",
            b="f32",
            out="f32",
            fusion="none",
            swap_ab=True,
            tile=[128, 32, 32],
            cluster=None,
            mma_sms=1,
            dynamic_cluster=True,
            epilogue_schedule="nosmem",
            id="moe/CtaShape128x32x128B/f32xf32/f32/none/swap_ab/1sm/dynamic_cluster/nosmem",
        ),
    ),
    # M128_BS_group36: the activation fusion (GEMM1 with its gating), FP8
    (
        "Sm100, __nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, "
        "ACTIVATION, 128, 64, 128, 1, 1, 1, true, true, false, false",
        dict(
            name="CtaShape128x64x128B",
            fusion="activation",
            mma_sms=1,
            dynamic_cluster=True,
            id="moe/CtaShape128x64x128B/mxfp8xmxfp8/bf16/activation/1sm/dynamic_cluster",
        ),
    ),
    # SM120 (cutlass_instantiations/120): no 1SM/2SM, cluster or epilogue choice; its id as before
    (
        "Sm120, SafeFP4, SafeFP4, half, void, EpilogueOpDefault, NONE, "
        "128, 128, 128, 1, 1, 1, false, false, false, true",
        dict(
            name="CtaShape128x128x64B",
            a="nvfp4",
            b="nvfp4",
            cluster=[1, 1, 1],
            mma_sms=None,
            dynamic_cluster=None,
            epilogue_schedule=None,
            id="moe/CtaShape128x128x64B/nvfp4xnvfp4/f16/none/swap_ab",
        ),
    ),
]


def _tactic(tmp_path, args: str, spelling: str = "X"):
    inl = tmp_path / "launcher.inl"
    inl.write_text(f"#define {MACRO}(  \\\n    {PARAMS})  \\\n  static void f() {{}}\n")
    k = FoundKernel(
        spelling=spelling,
        alias="GemmKernel",
        owner="launcher(int)",
        line=11,
        decl_file=str(inl),
        decl_line=3,
        macro=(MACRO, [a.strip() for a in args.split(",")]),
    )
    src = tmp_path / "gen" / "x.generated.cu"
    return tactic_of("fused_moe_100", src, tmp_path / "gen", k, LayoutReport(config={}, provenance=None), tmp_path)


@pytest.mark.parametrize("args, want", LINES, ids=[w["id"] for _, w in LINES])
def test_sm100_launcher_lines_name_their_tactics(tmp_path, args, want):
    t = _tactic(tmp_path, args)
    got = {k: (t.id if k == "id" else getattr(t, k)) for k in want}
    assert got == want


def test_the_ids_of_all_sm100_variants_differ(tmp_path):
    """The 16 launchers of one tile, types and fusion the generator may write (1SM/2SM x
    dynamic/static cluster x TMA/no-smem epilogue x swap_ab) are 16 tactics."""
    ids = set()
    for cga in (1, 2):
        for dyn in ("true", "false"):
            for sched in ("PtrArrayTmaWarpSpecialized", "PtrArrayNoSmemWarpSpecialized"):
                for swap in ("true", "false"):
                    args = (
                        f"Sm100, half, half, half, {sched}, EpilogueOpDefault, NONE, 128, 64, 64, "
                        f"{cga}, 1, 1, false, {dyn}, false, {swap}"
                    )
                    ids.add(_tactic(tmp_path, args).id)
    assert len(ids) == 16


def test_sm100_kernel_parts():
    """An SM100 kernel's canonical type (shortened from libclang's spelling of a 0.7.2.post1
    launcher): the dispatch policy ``MainloopSm100ArrayTmaUmmaWarpSpecializedBlockScaled<Stages,
    SchedulerPipelineStageCount, AccumulatorPipelineStageCount, ClusterShape>`` has no schedule
    tag (``gemm/dispatch_policy.hpp``): the schedule is the policy's name, the cluster a runtime
    ``tuple<int, int, C<1>>`` (None)."""
    spelled = (
        "cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, long>>, "
        "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm100ArrayTmaUmmaWarpSpecializedBlockScaled"
        "<8, 8, 2, cute::tuple<int, int, cute::C<1>>>, cute::tuple<cute::C<128>, cute::C<64>, cute::C<128>>, "
        "cute::tuple<cutlass::float_e4m3_t, cutlass::float_ue8m0_t>, S, "
        "cute::tuple<cutlass::float_e4m3_t, cutlass::float_ue8m0_t>, S, T>, "
        "cutlass::epilogue::collective::CollectiveEpilogue<cutlass::epilogue::Sm100PtrArrayTmaWarpSpecialized"
        "<2, 2, 32, false, false>, T2, E2, void, SC, cutlass::half_t, SD, F>, void>"
    )
    parts = kernel_parts(spelled)
    assert parts["schedule"] == "MainloopSm100ArrayTmaUmmaWarpSpecializedBlockScaled"
    assert parts["cluster"] is None and parts["tile"] == [128, 64, 128]
    assert parts["a"] == parts["b"] == "mxfp8" and parts["d"] == "f16"
    static = spelled.replace("cute::tuple<int, int, cute::C<1>>", "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1>>")
    assert kernel_parts(static)["cluster"] == [2, 1, 1]
    assert kernel_parts(static)["schedule"] == "MainloopSm100ArrayTmaUmmaWarpSpecializedBlockScaled"


# -------------------------------------------------------------------------------------------
# against nvcc (network: the wheel; nvcc: its host pass)
SPEC = "flashinfer-python==0.7.2.post1"
CAPACITY = 232448  # cutlass::arch::sm100_smem_capacity_bytes (cutlass/arch/arch.h)
#: NVFP4 FINALIZE 128x256x256 1SM (8 launchers); f16 FINALIZE 128x256x64 2SM and bf16 no-smem
#: 128x32x64 1SM (8 launchers): static and dynamic clusters, swap_ab and not, both outputs
SAMPLE = (
    "cutlass_kernel_file_gemm_grouped_sm100_M128_BS_group22.generated.cu",
    "cutlass_kernel_file_gemm_grouped_sm100_M128_group13.generated.cu",
)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_sm100_moe_tactics_against_nvcc(nvcc, tmp_path, only_sources):
    """Two of the 242 generated sources, audited (the install's builders run, then only these
    two are kept, so that the test parses two sources) and compiled by nvcc's host pass for
    sm_100a with the module's flags: every launcher's kernel, mainloop and epilogue
    ``sizeof(SharedStorage)`` and stage count as nvcc computes them (``cl_show``, see
    tests/test_audit_nvcc.py) equal the audit's, and each launcher line is one tactic."""
    from test_audit_nvcc import moe_sizes_against_nvcc

    from cutlass_layout.commands.audit import audit
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    some = only_sources(lambda name: name in SAMPLE)
    res = audit(SPEC, "sm100", family="moe")
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    moe = next(
        m for m in some(install, "sm100", cuda_version=tgt.cuda.version).modules if m.name.startswith("fused_moe")
    )
    assert sorted(p.name for p in moe.generated) == sorted(SAMPLE)
    assert len({t.id for t in res.tactics}) == len(res.tactics) == 16
    assert moe_sizes_against_nvcc(res, moe, install.tree, "sm_100a", tmp_path, CAPACITY) == 16
    # each is in its runner's list (get_candidate_configs_sm100, by hand: NVFP4 128x256 1SM TMA,
    # f16 128x256 2SM TMA and bf16 128x32 1SM NO_SMEM, each with every dynamic cluster and
    # Undefined; FINALIZE and swap_ab copies of the TMA ones)
    assert all(t.runtime_candidate is True for t in res.tactics), [t.id for t in res.tactics]


def test_sm100_runtime_candidates_match_config_fields(tmp_path):
    """A tactic is tried where a config of its runner's list has its tile enum, 1SM/2SM
    ``cluster_shape``, static or dynamic cluster and epilogue schedule; FINALIZE copies of
    NO_SMEM configs are erased (``getTmaWarpSpecializedConfigs``). The list here is written by
    hand in the shape ``get_candidate_configs_sm100`` gives (one row per config)."""
    from cutlass_layout.installs.candidates import Candidates
    from cutlass_layout.installs.moe_runners import CONFIG_BITS, runner_flags

    b = CONFIG_BITS
    assert runner_flags("nvfp4", "nvfp4") == b["GROUPED_GEMM"] | b["BLACKWELL"] | b["FP4_ONLY"]
    assert runner_flags("mxfp8", "mxfp4") == (
        b["GROUPED_GEMM"] | b["BLACKWELL"] | b["WEIGHT_ONLY"] | b["FP4_ONLY"] | b["FP8FP4_MIXED"]
    )
    assert runner_flags("e4m3", "e4m3") == b["GROUPED_GEMM"] | b["BLACKWELL"] | b["FP8_ONLY"]
    assert runner_flags("f32", "f32") == b["GROUPED_GEMM"] | b["BLACKWELL"] | b["SIMT_ONLY"]
    f16 = str(runner_flags("f16", "f16"))
    cand = Candidates(
        dispatched=["CtaShape64x32x128B", "CtaShape128x64x128B"],
        duplicated=True,
        finalize_needs_tma=True,
        sm100={
            f16: [
                ["CtaShape64x32x128B", "ClusterShape_1x1x1", False, "NO_SMEM"],
                ["CtaShape128x64x128B", "ClusterShape_2x1x1", True, "TMA"],
            ]
        },
    )
    line = "Sm100, half, half, half, {s}, EpilogueOpDefault, {f}, {m}, {n}, 64, {c}, 1, 1, false, {d}, false, {w}"

    def tried(**kw):
        return cand.get(_tactic(tmp_path, line.format(**kw)))

    nosmem, tma = "PtrArrayNoSmemWarpSpecialized", "PtrArrayTmaWarpSpecialized"
    assert tried(s=nosmem, f="NONE", m=64, n=32, c=1, d="false", w="false") is True
    assert tried(s=nosmem, f="NONE", m=64, n=32, c=1, d="false", w="true") is True  # swap_ab copy
    assert tried(s=nosmem, f="FINALIZE", m=64, n=32, c=1, d="false", w="false") is False  # erased
    assert tried(s=tma, f="NONE", m=64, n=32, c=1, d="false", w="false") is False  # other epilogue
    assert tried(s=nosmem, f="NONE", m=64, n=32, c=1, d="true", w="false") is False  # dynamic
    assert tried(s=tma, f="FINALIZE", m=128, n=64, c=2, d="true", w="true") is True
    assert tried(s=tma, f="NONE", m=128, n=64, c=1, d="true", w="false") is False  # 1SM
    assert tried(s=tma, f="ACTIVATION", m=128, n=64, c=2, d="true", w="false") is None
