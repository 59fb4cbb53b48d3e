"""TensorRT-LLM's MoE runners as the candidate reader names them: where their code is in a
flashinfer install, the config flags each runner passes to ``get_candidate_configs``, and
their operand types.

Mirrors TensorRT-LLM's ``CutlassGemmConfig::CandidateConfigTypeParam`` (``gemm_configs.h``),
``MoeGemmRunner<T, WeightType, ...>::getTmaWarpSpecializedConfigs``
(``moe_gemm/moe_gemm_template_dispatch.h``; ``use_fp8``, ``use_fp4``, ``use_wfp4afp8``,
``use_sm90_humming_pre_mma`` from ``include/moe_gemm_kernels.h``) and the SM90 mixed-input
launchers (``moe_gemm/launchers/moe_gemm_tma_ws_mixed_input_launcher.h``), as vendored in
flashinfer's ``csrc/nv_internal``. Read by :mod:`cutlass_layout.installs.candidates` and
:mod:`cutlass_layout.installs.candidate_lists`.
"""

from __future__ import annotations

KERNELS = "tensorrt_llm/kernels/cutlass_kernels"
HEURISTIC = f"{KERNELS}/cutlass_heuristic.cpp"
DISPATCH_TMA_WS = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch_tma_ws.h"
DISPATCH = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch.h"
TRAITS = f"{KERNELS}/moe_gemm/moe_tma_warp_specialized_traits.h"
#: arch -> (candidate function, tile enum, the config member the dispatch switches on)
ARCH = {
    "sm120": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120"),
    "sm121": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120"),
    "sm100": ("get_candidate_configs_sm100", "CutlassTileConfigSM100", "tile_config_sm100"),
    # CutlassTileConfigSM103 is an alias of CutlassTileConfigSM100 (gemm_configs.h), on the same member
    "sm103": ("get_candidate_configs_sm100", "CutlassTileConfigSM100", "tile_config_sm100"),
    "sm90": ("get_candidate_configs_sm90", "CutlassTileConfigSM90", "tile_config_sm90"),
}
#: the archs whose list is run over the install's code
#: (:func:`~cutlass_layout.installs.candidate_lists.sm100_lists`), with the ``sm`` it is run for
SM10X = {"sm100": 100, "sm103": 103}
#: element kinds that are FP8 activations (the ``FP8FP4_MIXED`` candidate flag)
FP8_KINDS = ("mxfp8", "e4m3", "e5m2")

#: FP4 element kinds (TensorRT-LLM's ``Fp4Type`` operands).
FP4_KINDS = ("nvfp4", "mxfp4", "e2m1")


#: TensorRT-LLM's ``CutlassGemmConfig::CandidateConfigTypeParam`` bits (``gemm_configs.h``)
CONFIG_BITS = {
    "WEIGHT_ONLY": 1 << 0,
    "SIMT_ONLY": 1 << 1,
    "HOPPER": 1 << 3,
    "BLACKWELL": 1 << 4,
    "GROUPED_GEMM": 1 << 5,
    "FP8_ONLY": 1 << 6,
    "FP4_ONLY": 1 << 7,
    "FP8FP4_MIXED": 1 << 8,
}
#: element kinds -> TensorRT-LLM's operand types (``Fp4Type``, ``__nv_fp8_e4m3``, ``cutlass::uint4b_t``, ...)
TLLM_TYPE = {
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "e2m1": "fp4",
    "mxfp8": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "bf16": "bf16",
    "f16": "f16",
    "f32": "f32",
    "u4": "uint4",
}


def runner_flags(activation: str | None, weight: str | None) -> int | None:
    """The config flags ``MoeGemmRunner<T, WeightType>::getTmaWarpSpecializedConfigs`` passes
    to ``get_candidate_configs`` on SM100 (``moe_gemm/moe_gemm_template_dispatch.h``; its
    ``use_fp8``, ``use_fp4``, ``use_wfp4afp8`` from ``include/moe_gemm_kernels.h``): grouped
    and Blackwell always, ``WEIGHT_ONLY`` for T != WeightType, ``SIMT_ONLY`` for float T,
    ``FP8_ONLY`` for FP8 x non-FP4, ``FP4_ONLY`` for FP4 activations or FP8 x FP4, and
    ``FP8FP4_MIXED`` for FP8 x FP4. None for other types."""
    t, w = TLLM_TYPE.get(str(activation)), TLLM_TYPE.get(str(weight))
    if t is None or w is None:
        return None
    return _runner_bits(t, w, "BLACKWELL", fp4_only=t == "fp4" or (t == "fp8" and w == "fp4"))


def _runner_bits(t: str, w: str, arch_bit: str, *, fp4_only: bool) -> int:
    """The flags both arches' runners pass (``GROUPED_GEMM``, ``arch_bit``, ``WEIGHT_ONLY``,
    ``SIMT_ONLY``, ``FP8_ONLY``, ``FP8FP4_MIXED``), ``FP4_ONLY`` where ``fp4_only``."""
    b = CONFIG_BITS
    flags = b["GROUPED_GEMM"] | b[arch_bit]
    if t != w:
        flags |= b["WEIGHT_ONLY"]
    if t == "f32":
        flags |= b["SIMT_ONLY"]
    if t == "fp8" and w not in ("fp4", "uint4"):
        flags |= b["FP8_ONLY"]
    if fp4_only:
        flags |= b["FP4_ONLY"]
    if t == "fp8" and w == "fp4":
        flags |= b["FP8FP4_MIXED"]
    return flags


def runner_flags_sm90(t: str, w: str, humming: bool = False) -> int | None:
    """The config flags ``MoeGemmRunner<T, WeightType, ..., Sm90Wfp4Afp8Mode>::
    getTmaWarpSpecializedConfigs(90, ...)`` passes to ``get_candidate_configs``
    (``moe_gemm/moe_gemm_template_dispatch.h``; ``use_fp8``, ``use_fp4``, ``use_wfp4afp8``,
    ``use_sm90_humming_pre_mma`` from ``include/moe_gemm_kernels.h``), for TensorRT-LLM's types
    as :data:`SM90_RUNNERS` names them (``fp8``: ``__nv_fp8_e4m3``): grouped and Hopper
    always, ``WEIGHT_ONLY`` for T != WeightType, ``SIMT_ONLY`` for float T, ``FP8_ONLY`` for
    FP8 x a weight neither ``uint4b_t`` nor FP4, ``FP4_ONLY`` for FP4 activations or FP8 x FP4
    other than in the Humming pre-MMA mode (``humming``), ``FP8FP4_MIXED`` for FP8 x FP4. None
    for other types."""
    known = ("fp8", "bf16", "f16", "f32", "fp4", "uint4")
    if t not in known or w not in known or t == "uint4":
        return None
    return _runner_bits(t, w, "HOPPER", fp4_only=t == "fp4" or (t == "fp8" and w == "fp4" and not humming))


#: The SM90 runners (activation, weight, ``Sm90Wfp4Afp8ScaleMode``)
#: :func:`~cutlass_layout.installs.candidate_lists.sm90_lists` reads, as TensorRT-LLM's types:
#: flashinfer's ``moe_gemm_kernels_*.cu`` instantiate these ``MoeGemmRunner``s (the FP8 x FP4 ones
#: in the Humming pre-MMA and both post-MMA modes)
SM90_RUNNERS = (
    ("fp8", "fp8", None),
    ("bf16", "bf16", None),
    ("f16", "f16", None),
    ("f32", "f32", None),
    ("fp8", "uint4", None),
    ("bf16", "uint4", None),
    ("f16", "uint4", None),
    ("bf16", "fp4", None),
    ("f16", "fp4", None),
    ("fp8", "fp4", "kHummingPreMmaE8M0"),
    ("fp8", "fp4", "kPostMmaFp8Act"),
    ("fp8", "fp4", "kPostMmaMxfp8Act"),
)


def sm90_runner(t: str | None, w: str | None, scale: str | None) -> str | None:
    """The key of :attr:`~cutlass_layout.installs.candidates.Candidates.sm90` for TensorRT-LLM types
    (:data:`SM90_RUNNERS`' names)
    and, for a mixed-input kernel, its scale mode (``PreMmaE8M0``, ``PostMma`` or None where
    its name gives none, the launcher's default ``kPostMma``): ``"fp8xfp8"``,
    ``"fp8xuint4"``, ``"fp8xfp4/humming"``, ``"fp8xfp4/post"``, ...; None for other types or
    scale modes."""
    if t is None or w is None:
        return None
    if t == "fp8" and w == "fp4":
        mode = {"PreMmaE8M0": "humming", "PostMma": "post", None: "post"}.get(scale)
        return None if mode is None else f"{t}x{w}/{mode}"
    return f"{t}x{w}" if scale in (None, "PostMma") else None


#: TensorRT-LLM's SM90 mixed-input MoE launchers (``moe_gemm/launchers/moe_gemm_tma_ws_mixed_input_launcher.h``)
SM90_MIXED_MOE = ("sm90_generic_mixed_moe_gemm_kernelLauncher", "sm90_generic_mixed_moe_small_k_kernelLauncher")
#: a launcher's template argument as written -> TensorRT-LLM's type (:data:`SM90_RUNNERS`' names)
CUDA_TLLM = {
    "__nv_fp8_e4m3": "fp8",
    "SafeFP8": "fp8",
    "cutlass::uint4b_t": "uint4",
    "SafeFP4": "fp4",
    "__nv_fp4_e2m1": "fp4",
    "__nv_bfloat16": "bf16",
    "SafeBF16": "bf16",
    "half": "f16",
    "float": "f32",
}


#: (activation, weight) kinds of the SM100 MoE runners flashinfer builds
SM100_RUNNERS = (
    ("nvfp4", "nvfp4"),
    ("mxfp8", "mxfp4"),
    ("e4m3", "e4m3"),
    ("bf16", "bf16"),
    ("f16", "f16"),
    ("f32", "f32"),
)
