"""The MoE runner's SM80 path on SM120 (moe_sm80.py): the kernel set read from text shaped like
TensorRT-LLM's dispatch, and a sample of flashinfer 0.7.2.post1's kernels against nvcc compiling
the install's own launcher (``genericMoeGemmKernelLauncher``, explicitly instantiated).

The offline texts below are written for the test in the shape of
``moe_gemm_template_dispatch.h``, ``moe_tma_warp_specialized_traits.h`` and
``cutlass_heuristic.cpp`` (no code of theirs); every expected value is read off these texts by
hand. The nvcc numbers come from nvcc's host pass (the ``TLLM_CHECK_WITH_INFO`` after the
launcher's ``using GemmKernel`` is redefined to spell the sizes in an error message).
"""

from __future__ import annotations

import re

import pytest

from cutlass_layout.installs import moe_sm80 as m

DISPATCH = """
namespace tensorrt_llm::kernels::cutlass_kernels_oss {
template <typename T, typename WeightType, typename GemmOutputType, typename arch,
          cutlass::WeightOnlyQuantOp QuantOp, typename EpilogueTag, typename ThreadblockShape,
          typename WarpShape, int Stages>
struct genericMoeGemmKernelLauncher {
  static void call(GroupedGemmInput<T, WeightType, GemmOutputType, GemmOutputType> inputs, int sm) {
    using ElementType = typename cutlass_kernels::TllmToCutlassTypeAdapter<T>::type;
    if (!inputs.use_fused_moe) {
      using GemmKernel_ = typename cutlass::gemm::kernel::DefaultGemmGrouped<ElementType, Stages>::GemmKernel;
      using GemmKernel = cutlass::gemm::kernel::MoeFCGemm<typename GemmKernel_::Mma, arch>;
      using GemmGrouped = cutlass::gemm::device::GemmGrouped<GemmKernel>;
      int occupancy = std::min(2, GemmGrouped::maximum_active_blocks());
      TLLM_CHECK_WITH_INFO(occupancy > 0, "GPU lacks the shared memory resources to run GroupedGEMM kernel");
    }
  }
};

template <typename T, typename WeightType, typename arch, typename ThreadblockShape,
          typename std::enable_if<(std::is_same<T, __nv_fp8_e4m3>::value) &&
                                  !std::is_same<T, WeightType>::value>::type* = nullptr>
void dispatchGemmConfig(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  switch (inputs.gemm_config.stages) {
    case 2: dispatch<T, WeightType, arch, ThreadblockShape, 3>(inputs, sm_count_); break;
    case 3: dispatch<T, WeightType, arch, ThreadblockShape, 3>(inputs, sm_count_); break;
  }
}

template <typename T, typename WeightType, typename arch, typename ThreadblockShape,
          typename std::enable_if<(!std::is_same<T, __nv_fp8_e4m3>::value) ||
                                  std::is_same<T, WeightType>::value>::type* = nullptr>
void dispatchGemmConfig(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  switch (inputs.gemm_config.stages) {
    case 2: dispatch<T, WeightType, arch, ThreadblockShape, 2>(inputs, sm_count_); break;
    case 3: dispatch<T, WeightType, arch, ThreadblockShape, 3>(inputs, sm_count_); break;
  }
}

template <typename T, typename WeightType, typename arch,
          typename std::enable_if<!std::is_same<T, float>::value
#if defined(ENABLE_FP8)
                                  && !std::is_same<T, __nv_fp8_e4m3>::value
#endif
                                  && std::is_same<T, WeightType>::value>::type* = nullptr>
void dispatchMoeGemmToCutlass(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  switch (inputs.gemm_config.tile_config_sm80) {
    case cutlass_extensions::CutlassTileConfig::CtaShape32x128x64_WarpShape32x32x64:
      dispatchGemmConfig<T, WeightType, arch, cutlass::gemm::GemmShape<32, 128, 64>,
                         cutlass::gemm::GemmShape<32, 32, 64>>(inputs, sm_count_);
      break;
    case cutlass_extensions::CutlassTileConfig::CtaShape128x128x64_WarpShape64x32x64:
      dispatchGemmConfig<T, WeightType, arch, cutlass::gemm::GemmShape<128, 128, 64>,
                         cutlass::gemm::GemmShape<64, 32, 64>>(inputs, sm_count_);
      break;
    case cutlass_extensions::CutlassTileConfig::Undefined:
      TLLM_THROW("GEMM config undefined.");
      break;
  }
}

template <typename T, typename WeightType, typename arch,
          typename std::enable_if<!std::is_same<T, float>::value &&
                                  !std::is_same<T, WeightType>::value>::type* = nullptr>
void dispatchMoeGemmToCutlass(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  constexpr int tile_shape_k = 128 * 8 / cutlass::sizeof_bits<T>::value;
  switch (inputs.gemm_config.tile_config_sm80) {
    case cutlass_extensions::CutlassTileConfig::CtaShape16x128x64_WarpShape16x32x64:
      dispatchGemmConfig<T, WeightType, arch, cutlass::gemm::GemmShape<16, 128, tile_shape_k>,
                         cutlass::gemm::GemmShape<16, 32, tile_shape_k>>(inputs, sm_count_);
      break;
  }
}

template <typename T, typename WeightType, typename arch, typename ThreadblockShape, int Stages>
static void dispatch(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  auto* launcher = genericMoeGemmKernelLauncher<T, WeightType, arch, cutlass::WeightOnlyQuantOp::UNDEFINED,
                                                ThreadblockShape, Stages>::call;
  if (!std::is_same_v<WeightType, T> && inputs.groupwise_quant_group_size > 0) {
    launcher = genericMoeGemmKernelLauncher<T, WeightType, arch,
                                            cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY,
                                            ThreadblockShape, Stages>::call;
  }
  launcher(inputs, sm_count_);
}

template <typename GemmOutputType, typename arch, typename ThreadblockShape, int Stages>
struct genericMoeGemmKernelLauncher<__nv_bfloat16, __nv_fp8_e4m3, GemmOutputType, arch, ThreadblockShape, Stages> {
  static void call(GroupedGemmInput<__nv_bfloat16, __nv_fp8_e4m3> inputs, int sm_count_) {}
};

#if defined(ENABLE_FP8)
template <typename T, typename WeightType, typename arch,
          typename std::enable_if<std::is_same<T, __nv_fp8_e4m3>::value &&
                                  std::is_same<T, WeightType>::value>::type* = nullptr>
void dispatchMoeGemmToCutlass(GroupedGemmInput<T, WeightType> inputs, int sm_count_) {
  switch (inputs.gemm_config.tile_config_sm80) {
    case cutlass_extensions::CutlassTileConfig::CtaShape16x256x128_WarpShape16x64x128:
      dispatchGemmConfig<T, WeightType, arch, cutlass::gemm::GemmShape<16, 256, 128>,
                         cutlass::gemm::GemmShape<16, 64, 128>>(inputs, sm_count_);
      break;
  }
}
#endif
}  // namespace tensorrt_llm::kernels::cutlass_kernels_oss

namespace tensorrt_llm::kernels::cutlass_kernels {
template <typename T, typename WeightType>
std::vector<CutlassGemmConfig> MoeGemmRunner<T, WeightType>::getAmpereConfigs(int sm) {
  if (!isValidAmpereMOESpecialisation<T, WeightType>() || (use_w4afp8 && sm != 89)) {
    return {};
  }
  return get_candidate_configs(sm, 1, config_type_param);
}

template <typename T, typename WeightType>
template <typename EpilogueTag>
void MoeGemmRunner<T, WeightType>::dispatchToArch(GroupedGemmInput<T, WeightType> inputs) {
  if (sm_ >= 90) {
    if constexpr (use_fp8 && !use_wfp4afp8) {
      if (sm_ >= 120) {
        cutlass_kernels_oss::dispatchMoeGemmToCutlass<T, WeightType, cutlass::arch::Sm89, EpilogueTag>(
            inputs, multi_processor_count_);
        return;
      }
    }
    if constexpr (isValidAmpereMOESpecialisation<T, WeightType, EpilogueTag>()) {
      if constexpr (use_fp8) {
        cutlass_kernels_oss::dispatchMoeGemmToCutlass<T, WeightType, cutlass::arch::Sm89, EpilogueTag>(
            inputs, multi_processor_count_);
      } else {
        cutlass_kernels_oss::dispatchMoeGemmToCutlass<T, WeightType, cutlass::arch::Sm80, EpilogueTag>(
            inputs, multi_processor_count_);
      }
    }
  }
}
}  // namespace tensorrt_llm::kernels::cutlass_kernels
"""

TRAITS = """
template <typename T, typename WeightType, typename EpilogueTag = void>
constexpr bool isValidAmpereMOESpecialisation() {
#ifdef ENABLE_FP4
  return !std::is_same_v<T, Fp4Type> && !std::is_same_v<WeightType, Fp4Type>;
#else
  return true;
#endif
}
"""

HEURISTIC = """
std::vector<CutlassTileConfig> get_candidate_tiles(
    int const sm, CutlassGemmConfig::CandidateConfigTypeParam const config_type_param) {
  CutlassGemmType gemm_type = CutlassGemmType::Default;
  std::vector<CutlassTileConfig> base_configs{
      CutlassTileConfig::CtaShape32x128x64_WarpShape32x32x64};
  if (sm >= 75) {
    base_configs.push_back(CutlassTileConfig::CtaShape128x128x64_WarpShape64x32x64);
  }
  switch (gemm_type) {
    case CutlassGemmType::Fp8:
      if (config_type_param & CutlassGemmConfig::GROUPED_GEMM) {
        if (sm == 89 || sm == 120 || sm == 121) {
          return {CutlassTileConfig::CtaShape16x256x128_WarpShape16x64x128};
        } else {
          return {};
        }
      } else {
        return {};
      }
    default:
      return base_configs;
  }
}
std::vector<CutlassGemmConfig> get_candidate_configs(int sm, int const max_split_k,
    CutlassGemmConfig::CandidateConfigTypeParam const config_type_param) {
  int const min_stages = (sm == 89) ? 3 : int8_configs_only ? 3 : 2;
  int const max_stages = int8_configs_only ? 6 : (sm >= 80 ? 3 : 2);
}
"""

RUNNER_HEADER = """
template <typename T, typename WeightType>
class MoeGemmRunner {
#if defined(ENABLE_FP8)
  static constexpr bool use_fp8 = std::is_same_v<T, __nv_fp8_e4m3> && !std::is_same_v<WeightType, cutlass::uint4b_t>;
  static constexpr bool use_w4afp8 = std::is_same_v<T, __nv_fp8_e4m3> && std::is_same_v<WeightType, cutlass::uint4b_t>;
#else
  static constexpr bool use_fp8 = false;
  static constexpr bool use_w4afp8 = false;
#endif
};
"""

RUNNERS = """
namespace tensorrt_llm::kernels::cutlass_kernels {
template class MoeGemmRunner<half, half, half>;
#ifdef ENABLE_FP8
template class MoeGemmRunner<__nv_fp8_e4m3, __nv_fp8_e4m3, half>;
template class MoeGemmRunner<__nv_fp8_e4m3, __nv_fp8_e4m3, half, half, true>;
#endif
#ifdef ENABLE_FP4
template class MoeGemmRunner<Fp4Type, Fp4Type, half>;
#endif
// template class MoeGemmRunner<__nv_fp8_e5m2, __nv_fp8_e5m2>;
template class MoeGemmRunner<half, uint8_t, half>;
template class MoeGemmRunner<__nv_fp8_e4m3, cutlass::uint4b_t, half>;
template class MoeGemmRunner<__nv_bfloat16, __nv_fp8_e4m3, __nv_bfloat16>;
}
"""

DEFINED = {"ENABLE_FP8", "ENABLE_FP4"}


def _reading():
    found = m.runners(RUNNERS, "moe_gemm_kernels_x.cu", DEFINED)
    return found, m.sm80_kernels(DISPATCH, TRAITS, HEURISTIC, found, DEFINED, runner_text=RUNNER_HEADER)


def test_runners_follow_the_defines():
    found = m.runners(RUNNERS, "x.cu", DEFINED)
    assert [r.args for r in found] == [
        ("half", "half", "half"),
        ("__nv_fp8_e4m3", "__nv_fp8_e4m3", "half"),
        ("__nv_fp8_e4m3", "__nv_fp8_e4m3", "half", "half", "true"),
        ("Fp4Type", "Fp4Type", "half"),
        ("half", "uint8_t", "half"),
        ("__nv_fp8_e4m3", "cutlass::uint4b_t", "half"),
        ("__nv_bfloat16", "__nv_fp8_e4m3", "__nv_bfloat16"),
    ]
    assert [r.line for r in found] == [3, 5, 6, 9, 12, 13, 14]
    no_fp8 = m.runners(RUNNERS, "x.cu", {"ENABLE_FP4"})
    assert [r.t for r in no_fp8] == ["half", "Fp4Type", "half", "__nv_fp8_e4m3", "__nv_bfloat16"]


def test_conditions_pick_one_overload():
    text = m.active_text(DISPATCH, DEFINED)
    tiles = m.overloads(text, "dispatchMoeGemmToCutlass")
    assert len(tiles) == 3
    assert m.pick(tiles, {"T": "half", "WeightType": "half"}) is tiles[0]
    assert m.pick(tiles, {"T": "half", "WeightType": "uint8_t"}) is tiles[1]
    assert m.pick(tiles, {"T": "__nv_fp8_e4m3", "WeightType": "__nv_fp8_e4m3"}) is tiles[2]
    assert m.pick(tiles, {"T": "float", "WeightType": "float"}) is None
    # without ENABLE_FP8 the FP8 overload is gone and the first no longer excludes FP8
    bare = m.overloads(m.active_text(DISPATCH, set()), "dispatchMoeGemmToCutlass")
    assert len(bare) == 2 and m.pick(bare, {"T": "__nv_fp8_e4m3", "WeightType": "__nv_fp8_e4m3"}) is bare[0]
    assert m.pick(bare, {"T": "__nv_fp8_e4m3", "WeightType": "__nv_fp8_e4m3"}) is bare[0]
    assert (
        m.holds("std::is_same_v<T, WeightType> && !std::is_same<T, float>::value", {"T": "half", "WeightType": "half"})
        is True
    )
    assert m.holds("sizeof(T) == 2", {"T": "half"}) is None


def test_switches_read_as_written():
    text = m.active_text(DISPATCH, DEFINED)
    first = m.overloads(text, "dispatchMoeGemmToCutlass")[0]
    cases = m.tile_cases(first.body, first.line)
    assert [(c.enum, c.threadblock, c.warp) for c in cases] == [
        ("CtaShape32x128x64_WarpShape32x32x64", (32, 128, 64), (32, 32, 64)),
        ("CtaShape128x128x64_WarpShape64x32x64", (128, 128, 64), (64, 32, 64)),
    ]
    assert [text.split("\n")[c.line - 1].strip().startswith("case") for c in cases] == [True, True]
    stages = [m.stage_cases(o.body) for o in m.overloads(text, "dispatchGemmConfig")]
    assert stages == [{2: 3, 3: 3}, {2: 2, 3: 3}]
    mixed = m.overloads(text, "dispatchMoeGemmToCutlass")[1]
    consts = m.body_constants(mixed.body, {"T": "half"})
    assert consts == {"tile_shape_k": 64}  # 128 * 8 / 16
    assert [(c.threadblock, c.warp) for c in m.tile_cases(mixed.body, mixed.line, consts)] == [
        ((16, 128, 64), (16, 32, 64))
    ]
    assert m.tile_cases(mixed.body, mixed.line) == []  # K not known: left out
    assert m.quant_ops(text) == ["UNDEFINED", "FINEGRAINED_SCALE_ONLY"]
    assert m.empty_launchers(text) == {("__nv_bfloat16", "__nv_fp8_e4m3")}
    w4 = m.runner_flags(RUNNER_HEADER, {"T": "__nv_fp8_e4m3", "WeightType": "cutlass::uint4b_t"}, DEFINED)
    assert w4 == {"use_fp8": False, "use_w4afp8": True}
    assert m.ampere_configs_empty(text, w4, True, 120) is True
    assert m.ampere_configs_empty(text, w4, True, 89) is False
    assert m.arch_on_sm120(text, True) == "Sm89"
    assert m.arch_on_sm120(text, False) == "Sm80"


def test_candidates_for_sm120():
    assert m.candidate_tiles(HEURISTIC, 120, {"GROUPED_GEMM", "FP8_ONLY"}) == ["CtaShape16x256x128_WarpShape16x64x128"]
    assert m.candidate_tiles(HEURISTIC, 90, {"GROUPED_GEMM", "FP8_ONLY"}) == []
    assert m.candidate_tiles(HEURISTIC, 120, {"GROUPED_GEMM"}) == [
        "CtaShape32x128x64_WarpShape32x32x64",
        "CtaShape128x128x64_WarpShape64x32x64",
    ]
    assert m.candidate_tiles(HEURISTIC, 70, {"GROUPED_GEMM"}) == ["CtaShape32x128x64_WarpShape32x32x64"]
    assert m.candidate_stages(HEURISTIC, 120, {"GROUPED_GEMM"}) == range(2, 4)
    assert m.candidate_stages(HEURISTIC, 89, {"GROUPED_GEMM"}) == range(3, 4)


def test_the_kernel_set():
    _, reading = _reading()
    got = sorted(
        (k.t, k.arch, k.case.threadblock, k.stages, k.config_stages, k.tried, len(k.runners)) for k in reading.kernels
    )
    assert got == sorted(
        [
            ("half", "Sm80", (32, 128, 64), 2, (2,), True, 1),
            ("half", "Sm80", (32, 128, 64), 3, (3,), True, 1),
            ("half", "Sm80", (128, 128, 64), 2, (2,), True, 1),
            ("half", "Sm80", (128, 128, 64), 3, (3,), True, 1),
            # the FP8 runner and its MXFP8 twin build the same kernels; FP4 has no SM80 path
            ("__nv_fp8_e4m3", "Sm89", (16, 256, 128), 2, (2,), True, 2),
            ("__nv_fp8_e4m3", "Sm89", (16, 256, 128), 3, (3,), True, 2),
            # weight-only: K from tile_shape_k, one kernel per quantization the dispatch names;
            # not in the heuristic's default list
            ("half", "Sm80", (16, 128, 64), 2, (2,), False, 1),
            ("half", "Sm80", (16, 128, 64), 2, (2,), False, 1),
            ("half", "Sm80", (16, 128, 64), 3, (3,), False, 1),
            ("half", "Sm80", (16, 128, 64), 3, (3,), False, 1),
        ]
    )
    assert sorted({k.quant for k in reading.kernels if k.weight == "uint8_t"}) == [
        "FINEGRAINED_SCALE_ONLY",
        "UNDEFINED",
    ]
    assert len(reading.notes) == 1 and "2 runner(s) with no SM80 path on sm 120" in reading.notes[0]
    assert "<__nv_fp8_e4m3, cutlass::uint4b_t, half> (getAmpereConfigs" in reading.notes[0]
    assert "<__nv_bfloat16, __nv_fp8_e4m3, __nv_bfloat16> (its genericMoeGemmKernelLauncher" in reading.notes[0]
    k = next(k for k in reading.kernels if k.t == "half" and k.stages == 3 and k.case.threadblock[0] == 128)
    assert m.tactic_name(k) == "CtaShape128x128x64_WarpShape64x32x64_Stages3_Sm80"
    w = next(k for k in reading.kernels if k.weight == "uint8_t" and k.quant != "UNDEFINED" and k.stages == 2)
    assert m.tactic_name(w) == "CtaShape16x128x64_WarpShape16x32x64_Stages2_Sm80_FINEGRAINED_SCALE_ONLY"
    assert "cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY" in w.type_name("cl_k")


def test_kernel_header_rehosts_the_type_chain():
    text = m.kernel_header(DISPATCH, "cl_k")
    assert "struct cl_k {" in text and "namespace tensorrt_llm::kernels::cutlass_kernels_oss {" in text
    assert "typename WarpShape, int Stages>\nstruct cl_k" in text
    usings = re.findall(r"using (\w+) =", text)
    assert usings == ["ElementType", "GemmKernel_", "GemmKernel"]  # not GemmGrouped, after it
    assert m.kernel_header("struct Other {};", "cl_k") is None


def test_defines_of_a_command_line():
    from cutlass_layout.cpp.preprocessor import command_line_defines

    assert command_line_defines(["-DENABLE_BF16", "-D", "ENABLE_FP8", "-DX=1", "-I/x"]) == {
        "ENABLE_BF16",
        "ENABLE_FP8",
        "X",
    }


# ---------------------------------------------------------------------------------------
# flashinfer 0.7.2.post1 against nvcc

#: the sample: (A, out, tile enum, stages): the over-capacity FP8 and 16-bit tiles, fits of
#: each kind (the f16 and bf16 epilogues differ), the SIMT float kernel
SAMPLE = [
    ("e4m3", "bf16", "CtaShape16x256x128_WarpShape16x64x128", 4),
    ("e4m3", "f16", "CtaShape256x128x64_WarpShape64x64x64", 4),
    ("bf16", "bf16", "CtaShape128x128x64_WarpShape64x32x64", 4),
    ("f16", "f16", "CtaShape128x128x64_WarpShape64x32x64", 3),
    ("f16", "f16", "CtaShape16x256x64_WarpShape16x64x64", 3),
    ("f32", "f32", "CtaShape128x128x8_WarpShape64x64x8", 2),
    ("bf16", "bf16", "CtaShape128x128x64_WarpShape128x32x64", 4, "u8", "FINEGRAINED_SCALE_AND_ZEROS"),
    ("f16", "f16", "CtaShape16x256x64_WarpShape16x64x64", 3, "u4", "UNDEFINED"),
]


@pytest.fixture(scope="module")
def audited():
    from cutlass_layout.commands.audit import audit

    return audit("flashinfer-python==0.7.2.post1", family="moe_sm80")


@pytest.mark.network
@pytest.mark.slow
def test_audit_reports_the_family(audited):
    assert audited.tactics and {t.family for t in audited.tactics} == {m.FAMILY}
    # 7 tiles x 3 stages x {f16, bf16} FP8; 5 x 3 per 16-bit runner; 1 x 3 float; the four
    # weight-only runners (bf16/f16 x u4/u8): 5 x 3 x 3 quantizations each
    assert len(audited.tactics) == 42 + 15 + 15 + 3 + 4 * 45
    assert any("MoeGemmRunner<__nv_fp8_e4m3, cutlass::uint4b_t, half> (getAmpereConfigs" in n for n in audited.notes)
    assert audited.capacity.value == 101376
    from cutlass_layout.reports.audit import head_lines  # the head line says where they come from

    assert head_lines(audited)[2].startswith(
        "sm120: 255 tactics from the MoE runner's SM80-path headers (no generated source); capacity 101376 B"
    )
    from cutlass_layout.reports.audit import tail_parts  # the 10 over capacity: why their fix cell says "?"

    assert (
        "note: fix ?: 10 tactics not searched: its kernel is not declared in a launcher of the install's "
        "generated or JIT sources" in tail_parts(audited)[1]
    )
    assert any("rejected at run time" in n and "maximum_active_blocks" in n for n in audited.notes)
    # the head count: 10 over 101376 B, 6 of them in the runners' candidate lists (FP8 16x256x128
    # at 3 and 4 stages...: README), and every one of those 6 rejected by the occupancy check
    # first (runtime_guard), so none launches: counted apart from tactics the runtime launches
    assert tail_parts(audited)[2].startswith(
        "10 over capacity (0 of them tried by the runtime, 6 more tried but rejected by the runner's "
        "own check before launch), "
    )
    by = {(t.a, t.b, t.out, t.name): t for t in audited.tactics}
    assert len(by) == len(audited.tactics)
    t = by[("bf16", "bf16", "bf16", "CtaShape128x128x64_WarpShape64x32x64_Stages4_Sm80")]
    assert t.verdict == "over_capacity" and t.runtime_candidate is True
    # the occupancy check rejects it before launch: --check does not fail on it
    assert "maximum_active_blocks" in t.runtime_guard and t not in audited.check_failures()
    assert not audited.check_failures() and all(
        u.runtime_guard is None for u in audited.tactics if u.verdict != "over_capacity"
    )
    # not in get_candidate_tiles' default list: compiled, never tried
    assert by[("f16", "f16", "f16", "CtaShape16x256x64_WarpShape16x64x64_Stages3_Sm80")].runtime_candidate is False
    # the weight-only runners' list (WEIGHT_ONLY) has it
    assert by[("f16", "u4", "f16", "CtaShape16x256x64_WarpShape16x64x64_Stages3_Sm80")].runtime_candidate is True
    # a part of the id naming a 2.x tile enum picks this family's tactic (layout --tactic)
    from cutlass_layout.api import tactic

    one = tactic("CtaShape128x128x64_WarpShape64x32x64_Stages4_Sm80/bf16xbf16", "flashinfer-python==0.7.2.post1")
    assert one.id == t.id and one.report.kernel.size == t.report.kernel.size


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_sample_against_nvcc(audited, nvcc, tmp_path):
    from cutlass_layout.checks.nvcc_probe import nvcc_flags, show_header, unit_sizes
    from cutlass_layout.commands.audit_nvcc import sm80_instantiations
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer_jit import jit_modules
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer("flashinfer-python==0.7.2.post1")
    tgt = engine.target(install.tree)
    moe = next(
        mod
        for mod in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
        if mod.name.startswith("fused_moe")
    )
    sample = []
    for a, out, enum, stages, *weight in SAMPLE:
        b, quant = weight or (a, "UNDEFINED")
        sample.append(
            next(
                t
                for t in audited.tactics
                if t.a == a
                and t.b == b
                and t.out == out
                and t.name.startswith(f"{enum}_Stages{stages}_")
                and t.report.config["quant"] == quant
            )
        )
    text, tactics = sm80_instantiations(sample)  # the launcher instantiated as the runners do
    src = tmp_path / "cl_sm80.cu"
    src.write_text(text)
    # a 2.x kernel: Mma, Epilogue, Mma::kStages; the launcher's line is the instantiation's
    got, out = unit_sizes(
        [src], nvcc_flags(moe, install.tree), tmp_path, by_instantiation=True, show=show_header(cutlass2=True)
    )
    got = got[src]
    assert set(got) == set(tactics), out[-3000:]
    for line, (kernel, mainloop, epilogue, stages) in got.items():
        r = tactics[line].report
        assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == (kernel, mainloop, epilogue, stages)
