"""A config's type chain in the probe (:func:`config_block`): CUTLASS's epilogue and mainloop
``CollectiveBuilder``\\ s (``cutlass/epilogue/collective/collective_builder.hpp``,
``cutlass/gemm/collective/collective_builder.hpp``) and ``GemmUniversal``, with the schedule
tags (``cutlass/gemm/dispatch_policy.hpp``, ``cutlass/epilogue/dispatch_policy.hpp``),
operator class and fusion the config's family and preset choose.
"""

from __future__ import annotations

from .aliases import NAMESPACE, subject_block
from .config import ELEMENTS, OUTPUTS, SCALED_OUTPUTS, Config


#: Per family: arch tag, operator class, capacity constant (read from the headers).
FAMILIES = {
    "sm120": (
        "cutlass::arch::Sm120",
        "cutlass::arch::OpClassBlockScaledTensorOp",
        "cutlass::arch::sm120_smem_capacity_bytes",
    ),
    "sm90": (
        "cutlass::arch::Sm90",
        "cutlass::arch::OpClassTensorOp",
        "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes",
    ),
    "sm100": ("cutlass::arch::Sm100", "cutlass::arch::OpClassTensorOp", "cutlass::arch::sm100_smem_capacity_bytes"),
}

_GEMM = "cutlass::gemm::"
_EPI = "cutlass::epilogue::"


def kernel_schedule(cfg: Config) -> str:
    """The mainloop schedule tag for ``cfg`` (``cutlass/gemm/dispatch_policy.hpp``).

    SM90 grouped kernels need a ptr-array schedule, so ``auto`` means cooperative there.
    SM120: ``KernelScheduleAuto`` (block-scaled), ``KernelScheduleSm120Blockwise`` (blockwise
    FP8, flashinfer's ``gemm_groupwise_sm120.cuh``; vLLM's takes ``KernelScheduleAuto``),
    ``KernelSparseTmaWarpSpecialized{Nvf4,Mxf4,Mxf8f6f4}Sm120`` (sparse, CUTLASS example
    80b). SM100: ``Kernel[PtrArray]TmaWarpSpecialized{1,2}Sm[Nvf4|Mxf4|Mxf8f6f4]Sm100`` (as
    flashinfer's ``*_gemm_template_sm100.h`` and CUTLASS example 75 name them).
    """
    fam = cfg.family
    if fam == "sm120":
        if cfg.kernel == "sparse":
            kind = {"nvfp4": "Nvf4", "mxfp4": "Mxf4"}.get(cfg.a or "", "Mxf8f6f4")
            return f"{_GEMM}KernelSparseTmaWarpSpecialized{kind}Sm120"
        if cfg.blockwise and cfg.preset != "vllm":
            return f"{_GEMM}KernelScheduleSm120Blockwise"
        return f"{_GEMM}collective::KernelScheduleAuto"
    if fam == "sm100":
        sm = "2Sm" if cfg.two_sm else "1Sm"
        ptr = "PtrArray" if cfg.kernel == "grouped" else ""
        kind = ""
        if cfg.block_scaled:
            kind = (
                "Nvf4"
                if (cfg.a, cfg.b) == ("nvfp4", "nvfp4")
                else "Mxf4"
                if (cfg.a, cfg.b) == ("mxfp4", "mxfp4")
                else "Mxf8f6f4"
            )
        return f"{_GEMM}Kernel{ptr}TmaWarpSpecialized{sm}{kind}Sm100"
    if cfg.schedule == "auto" and cfg.kernel == "dense":
        return f"{_GEMM}collective::KernelScheduleAuto"
    kind = "Pingpong" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped":
        return f"{_GEMM}KernelPtrArrayTmaWarpSpecialized{kind}"
    return f"{_GEMM}KernelTmaWarpSpecialized{kind}"


def epilogue_schedule(cfg: Config) -> str:
    """The epilogue schedule tag for ``cfg`` (``cutlass/epilogue/dispatch_policy.hpp``).

    ``auto`` is the preset's: ``EpilogueScheduleAuto`` (flashinfer; on SM90 the builder then
    picks an epilogue without shared memory), ``TmaWarpSpecialized`` on SM120 for trtllm-moe;
    the sparse SM120 kernel's is ``SparseTmaWarpSpecializedCooperativeSm120`` (example 80b). On
    SM100 every schedule names the MMA's 1SM/2SM: ``[PtrArray]TmaWarpSpecialized{1,2}Sm``
    (``auto`` and ``tma``) or ``[PtrArray]NoSmemWarpSpecialized{1,2}Sm``.
    """
    sched = cfg.epilogue_schedule
    ptr = "PtrArray" if cfg.kernel == "grouped" else ""
    if cfg.family == "sm100":
        sm = "2Sm" if cfg.two_sm else "1Sm"
        kind = "NoSmem" if sched == "nosmem" else "Tma"
        return f"{_EPI}{ptr}{kind}WarpSpecialized{sm}"
    if cfg.kernel == "sparse" and sched != "nosmem":
        return f"{_EPI}SparseTmaWarpSpecializedCooperativeSm120"
    if sched == "auto":
        if cfg.preset == "trtllm-moe":
            sched = "tma"
        else:
            return f"{_EPI}collective::EpilogueScheduleAuto"
    if sched == "nosmem":
        return f"{_EPI}{ptr}NoSmemWarpSpecialized"
    if cfg.family == "sm120":
        return f"{_EPI}TmaWarpSpecialized"
    suffix = "" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped" and cfg.schedule == "pingpong":
        suffix = "Pingpong"
    return f"{_EPI}{ptr}TmaWarpSpecialized{suffix}"


def operator_class(cfg: Config) -> str:
    """``cutlass::arch::OpClass...`` of both builders: block-scaled kinds
    ``OpClassBlockScaledTensorOp`` (sparse: ``OpClassBlockScaledSparseTensorOp``), every other
    kind (SM90, SM100 BF16/FP8, SM120 blockwise FP8) ``OpClassTensorOp``."""
    if cfg.kernel == "sparse":
        return "cutlass::arch::OpClassBlockScaledSparseTensorOp"
    if cfg.block_scaled:
        return "cutlass::arch::OpClassBlockScaledTensorOp"
    return "cutlass::arch::OpClassTensorOp"


def _fusion(cfg: Config, layout_d: str) -> str:
    """The epilogue's fusion operation argument (``, ...``), or ``""`` for the builder's
    default (``LinearCombination``). A block-scaled D is
    ``LinCombBlockScaleFactor<SFVecSize, ElementD, float, ElementSF, LayoutD, ElementC>``
    (``cutlass/epilogue/fusion/operations.hpp``; CUTLASS example 79d)."""
    if cfg.element_d not in SCALED_OUTPUTS:
        return ""
    vec, sf = SCALED_OUTPUTS[cfg.element_d]
    el_c = OUTPUTS[cfg.element_c][0]
    el_d = OUTPUTS[cfg.element_d][0]
    return f",\n    cutlass::epilogue::fusion::LinCombBlockScaleFactor<{vec}, {el_d}, float, {sf}, {layout_d}, {el_c}>"


def config_block(cfg: Config, index: int) -> str:
    """C++ declarations for one config in ``namespace cl_probe_<index>``: the type chain of
    the config's family (see :func:`kernel_schedule`, :func:`epilogue_schedule`,
    :func:`operator_class`), then :func:`subject_block`."""
    m, n, k = cfg.mnk
    assert cfg.a is not None and cfg.b is not None  # a config of a known arch: __post_init__ set them
    grouped = cfg.kernel == "grouped"
    ptr = "*" if grouped else ""
    arch, _, capacity = FAMILIES[cfg.family]
    op_class = operator_class(cfg)
    el_a, el_b = ELEMENTS[cfg.a].cpp, ELEMENTS[cfg.b].cpp
    el_c, el_d = OUTPUTS[cfg.element_c][0], OUTPUTS[cfg.element_d][0]
    if grouped:
        idx = "int64_t" if cfg.preset == "trtllm-moe" else "int"
        problem = f"cutlass::gemm::GroupProblemShape<cute::Shape<{idx}, {idx}, {idx}>>"
    else:
        problem = "cute::Shape<int, int, int, int>"
    if cfg.stages is None:
        stages = (
            "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>("
            "sizeof(typename CollectiveEpilogue::SharedStorage))>"
        )
    else:
        stages = f"cutlass::gemm::collective::StageCount<{cfg.stages}>"
    cm, cn, ck = cfg.cluster
    # C and D: RowMajor, except the sparse kernel's (ColumnMajor, as example 80b)
    lay_cd = "cutlass::layout::ColumnMajor" if cfg.kernel == "sparse" else "cutlass::layout::RowMajor"
    layout_a, layout_b = f"cutlass::layout::RowMajor{ptr}", f"cutlass::layout::ColumnMajor{ptr}"
    scale_config = ""
    if cfg.blockwise:  # Sm120BlockwiseScaleConfig (cutlass/detail/blockwise_scale_layout.hpp)
        assert cfg.scales is not None  # blockwise: scales given
        gm, gn, gk = cfg.scales
        major_a = "MN" if cfg.preset == "vllm" else "K"
        scale_config = (
            f"using ScaleConfig = cutlass::detail::Sm120BlockwiseScaleConfig<{gm}, {gn}, {gk}, "
            f"cute::UMMA::Major::{major_a}, cute::UMMA::Major::K>;\n"
            "using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());\n"
            "using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());\n"
        )
        layout_a = f"cute::tuple<{layout_a}, LayoutSFA{ptr}>"
        layout_b = f"cute::tuple<{layout_b}, LayoutSFB{ptr}>"
    return f"""
// {cfg.label()}
namespace {NAMESPACE}{index} {{
using TileShape = cute::Shape<cute::Int<{m}>, cute::Int<{n}>, cute::Int<{k}>>;
using ClusterShape = cute::Shape<cute::Int<{cm}>, cute::Int<{cn}>, cute::Int<{ck}>>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    {arch}, {op_class}, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    {el_c}, {lay_cd}{ptr}, {cfg.alignment("c")},
    {el_d}, {lay_cd}{ptr}, {cfg.alignment("d")},
    {epilogue_schedule(cfg)}{_fusion(cfg, lay_cd)}>::CollectiveOp;
{scale_config}using MainloopBuilder = cutlass::gemm::collective::CollectiveBuilder<
    {arch}, {op_class},
    {el_a}, {layout_a}, {cfg.alignment("a")},
    {el_b}, {layout_b}, {cfg.alignment("b")},
    float, TileShape, ClusterShape,
    {stages},
    {kernel_schedule(cfg)}>;
using CollectiveMainloop = typename MainloopBuilder::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    {problem}, CollectiveMainloop, CollectiveEpilogue, void>;
{subject_block("GemmKernel", capacity)}}}  // namespace {NAMESPACE}{index}
"""
