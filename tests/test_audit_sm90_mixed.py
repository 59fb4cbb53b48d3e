"""audit on SM90: TensorRT-LLM's mixed-input MoE and fpA_intB launchers (function templates).

flashinfer's generator (``generate_kernels.py``, ``instantiate_operation_tma_warp_specialized``)
writes explicit instantiations of launcher function templates, not macro calls:
``template void sm90_generic_mixed_moe_gemm_kernelLauncher<act, weight, out, EpilogueTag,
CTAShape, ClusterShape, MainloopSchedule, EpilogueSchedule, QuantOp[, ScaleMode]>(...);`` (and
``..._small_k_kernelLauncher<..., ScaleMode, KernelType>``) in ``gemm_grouped/90/``, and
``template void sm90_generic_mixed_gemm_kernelLauncher<act, weight, scale_zero, bias, out,
QuantOp, EpilogueTag, CTAShape, ClusterShape, MainloopSchedule, EpilogueSchedule>(...);`` in
``gemm/90/``. What the launchers do (0.7.2.post1, ``.../cutlass_kernels/``):

* ``moe_gemm_tma_ws_mixed_input_launcher.h`` declares the MoE launcher with ``ScaleMode =
  kPostMma`` (the generator leaves it out for post-MMA kernels); the ``.inl`` defines it without
  the default, as one call ``sm90_generic_mixed_moe_gemm_kernelLauncher_impl<..., ScaleMode,
  tkc::MainloopScheduleType::AUTO>(...)``; the small-K one asserts its ``KernelType`` and calls
  the same ``_impl``. ``_impl`` starts with ``TLLM_LOG_DEBUG(__PRETTY_FUNCTION__);`` and declares
  ``using GemmKernel = typename mixed_input_detail::GemmKernelSelector<...>::Type;``: a
  ``GemmUniversalPrecomputedScheduler`` or a ``SingleWarpgroupPersistentGemm``, no
  ``GemmUniversal<`` spelled.
* ``fpA_intB_launcher_sm90.inl`` declares its kernel (a ``GemmUniversal``) inside ``#ifdef
  COMPILE_HOPPER_TMA_GEMMS`` and ``if constexpr (!should_filter_..._v<...>) {``.

The offline tests below run the text transforms on short launchers written here in those shapes
and compile what they give (libclang, C++ only, no CUTLASS); the names expected are worked out
by hand from the template arguments as the generator writes them. The nvcc test compares a few
real kernels of one generated source of each launcher with nvcc's host pass.
"""

from __future__ import annotations

import re

import pytest

from cutlass_layout.commands.audit import element_kind, kernel_parts, mixed_identity
from cutlass_layout.installs.kernels import kernel_core
from cutlass_layout.cpp.rehost import HOISTED_IF, declarations_only, forwarded_call, rehost_template
from cutlass_layout.cpp.arguments import template_parameters, with_defaults

#: the shapes of the launchers above, cut short (types stand in for CUTLASS's)
LAUNCHERS = r"""
#define COMPILE_HOPPER_TMA_GEMMS
#define TLLM_LOG_DEBUG(...) do {} while (0)
namespace k { template <class P, class M, class E, class S = void> struct GemmUniversal {};
              template <class P, class M, class E> struct Precomputed {}; }
template <bool B, class P, class M, class E> struct Selector { using Type = k::Precomputed<P, M, E>; };
template <class T> constexpr bool filtered_v = sizeof(T) == 3;
enum class Mode { kPostMma, kPreMma };
enum class Kind { AUTO, SMALL };

template <typename T, typename CTA, Mode ScaleMode = Mode::kPostMma>
void wrapper(int inputs);

template <typename T, typename CTA, Mode ScaleMode, Kind KernelType>
void impl(int inputs) {
  TLLM_LOG_DEBUG(__PRETTY_FUNCTION__);
  // A matrix configuration
  using ElementA = T;
  constexpr bool small = KernelType == Kind::SMALL;
  static_assert(!small || ScaleMode == Mode::kPreMma, "small needs pre-MMA");
  using GemmKernel = typename Selector<small, int, ElementA, CTA>::Type;
  GemmKernel kernel;
  if (inputs > 0) { return; }
}

template <typename T, typename CTA, Mode ScaleMode>
void wrapper(int inputs) {
  impl<T, CTA, ScaleMode, Kind::AUTO>(inputs);
}

template <typename T, typename CTA, Mode ScaleMode, Kind KernelType>
void small_k(int inputs) {
  static_assert(KernelType == Kind::SMALL, "small-K launcher");
  impl<T, CTA, ScaleMode, KernelType>(inputs);
}

template <typename Act, typename CTA>
void dense(Act const* A, int* occupancy) {
  TLLM_LOG_DEBUG(__PRETTY_FUNCTION__);
#ifdef COMPILE_HOPPER_TMA_GEMMS
  using CutlassAct = Act;
  if constexpr (!filtered_v<CTA>) {
    constexpr int epi_tile_M = sizeof(CTA) * 8;
    using GemmKernel = k::GemmUniversal<char[epi_tile_M], CutlassAct, CTA>;
    if (occupancy != nullptr) { return; }
  } else {
    throw 1;
  }
#else
  throw 2;
#endif
}
"""


def _definition(name: str) -> str:
    """The definition (with its body) of function template ``name`` in :data:`LAUNCHERS`."""
    m = re.search(rf"template <[^>]*>\nvoid {name}\([^)]*\) {{", LAUNCHERS)
    depth = 0
    for i in range(m.end() - 1, len(LAUNCHERS)):
        depth += {"{": 1, "}": -1}.get(LAUNCHERS[i], 0)
        if depth == 0:
            return LAUNCHERS[m.start() : i + 1]
    raise AssertionError(name)


def _compile(text: str) -> dict[str, str]:
    """``{alias: canonical type}`` of the namespace-scope aliases of ``text`` parsed as C++17
    by libclang, and no error."""
    import clang.cindex as ci

    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", text)])
    errors = [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    assert not errors, errors
    return {
        c.spelling: c.underlying_typedef_type.get_canonical().spelling
        for c in tu.cursor.get_children()
        if c.kind == ci.CursorKind.TYPE_ALIAS_DECL
    }


def test_declarations_only_drops_macro_statements_and_hoists_if_constexpr():
    body = (
        "  TLLM_LOG_DEBUG(__PRETTY_FUNCTION__);\n  using A = int;\n"
        "  if constexpr (!filtered_v<A, 2>) {\n    using GemmKernel = X<A>;"
    )
    out = declarations_only(body)
    assert "TLLM_LOG_DEBUG" not in out and out.count("\n") == body.count("\n")
    assert f'static_assert((!filtered_v<A, 2>), "{HOISTED_IF}");' in out and "if" not in out.replace(HOISTED_IF, "")
    closed = "  if constexpr (B) { using Y = int; }\n  using GemmKernel = X<Y>;"
    assert declarations_only(closed) == closed  # a block closed before the alias: kept (and refused)


def test_rehost_by_gemm_kernel_alias_and_defaults():
    """``_impl``: the kernel alias is ``GemmKernel`` (a selector's ``::Type``); the logging
    statement goes, the constexpr becomes a static member, the statements after the alias are
    cut. The wrapper's header declaration gives ``ScaleMode``'s default."""
    usings, struct, alias = rehost_template(_definition("impl"), 0)
    assert alias == "GemmKernel" and usings == ""
    assert "static constexpr bool small" in struct and "TLLM_LOG_DEBUG" not in struct
    assert "GemmKernel kernel" not in struct and "return" not in struct
    declared = template_parameters(
        LAUNCHERS[LAUNCHERS.index("template <typename T, typename CTA, Mode ScaleMode = ") :]
    )[0]
    params = template_parameters(_definition("wrapper"))[0]
    assert with_defaults(params, declared) == "typename T, typename CTA, Mode ScaleMode = Mode::kPostMma"
    assert with_defaults(params, "typename T") == params  # another length: unchanged
    assert rehost_template(_definition("wrapper"), 1) is None  # no kernel alias: a forwarder


def test_forwarded_call():
    assert forwarded_call(_definition("wrapper")) == ("impl", "T, CTA, ScaleMode, Kind::AUTO", "")
    callee, args, asserts = forwarded_call(_definition("small_k"))
    assert (callee, args) == ("impl", "T, CTA, ScaleMode, KernelType")
    assert asserts.startswith("static_assert(KernelType == Kind::SMALL,")
    assert forwarded_call(_definition("impl")) is None  # declarations and statements
    assert forwarded_call(_definition("dense")) is None


def test_rehosted_launchers_compile_to_the_kernels_they_build():
    """What preludes.prelude puts before a source, for three explicit instantiations (the
    wrapper with the header's default scale mode, the small-K launcher, the dense launcher
    with its kernel under ``#ifdef`` and ``if constexpr``), compiles, and each alias names the
    type the launcher's own ``GemmKernel`` would be, worked out from the text above:
    ``Selector<false, int, T, CTA>::Type`` is ``k::Precomputed<int, T, CTA>``, and the dense
    kernel's ``char[sizeof(CTA) * 8]``. A filtered tile fails with the hoisted assertion."""
    impl = rehost_template(_definition("impl"), 0, name="cl_rehost_0_callee")[1]
    declared = template_parameters(
        LAUNCHERS[LAUNCHERS.index("template <typename T, typename CTA, Mode ScaleMode = ") :]
    )[0]
    wparams = with_defaults(template_parameters(_definition("wrapper"))[0], declared)
    callee, args, asserts = forwarded_call(_definition("wrapper"))
    wrapper = (
        f"template <{wparams}>\nstruct cl_rehost_0 {{\n{asserts}\n"
        f"using GemmKernel = typename cl_rehost_0_callee<{args}>::GemmKernel;\n}};\n"
    )
    small = rehost_template(_definition("impl"), 1, name="cl_rehost_1_callee")[1]
    callee, sargs, sasserts = forwarded_call(_definition("small_k"))
    small += (
        f"template <{template_parameters(_definition('small_k'))[0]}>\nstruct cl_rehost_1 {{\n{sasserts}\n"
        f"using GemmKernel = typename cl_rehost_1_callee<{sargs}>::GemmKernel;\n}};\n"
    )
    dense = rehost_template(_definition("dense"), 2)[1]
    text = (
        LAUNCHERS
        + impl
        + wrapper
        + small
        + dense
        + "using w = cl_rehost_0<float, char[2]>::GemmKernel;\n"
        + "using s = cl_rehost_1<float, char[2], Mode::kPreMma, Kind::SMALL>::GemmKernel;\n"
        + "using d = cl_rehost_2<short, char[2]>::GemmKernel;\n"
    )
    assert _compile(text) == {
        "w": "k::Precomputed<int, float, char[2]>",
        "s": "k::Precomputed<int, float, char[2]>",
        "d": "k::GemmUniversal<char[16], short, char[2]>",
    }
    import clang.cindex as ci

    bad = LAUNCHERS + dense + "using d = cl_rehost_2<short, char[3]>::GemmKernel;\n"
    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", bad)])
    assert any(HOISTED_IF in d.spelling for d in tu.diagnostics)


# ---------------------------------------------------------------------------------------
# names
#: (owner as preludes.prelude names a re-hosted kernel: the launcher and its template arguments
#: as the generator writes them; expected identity, by hand)
OWNERS = [
    # W4A8 MoE, int4 weights, post-MMA scales (ScaleMode left to the default)
    (
        "sm90_generic_mixed_moe_gemm_kernelLauncher<__nv_fp8_e4m3, cutlass::uint4b_t, half, "
        "tensorrt_llm::cutlass_extensions::EpilogueOpDefault, cute::Shape<cute::Int<64>, cute::Int<16>, "
        "cute::Int<256>>, cute::Shape<cute::Int<2>, cute::Int<1>, cute::Int<1>>, "
        "cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecializedCooperative, "
        "cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY>",
        dict(
            name="CtaShape64x16x256B_ClusterShape_2x1x1_PINGPONG",
            tile=[64, 16, 256],
            cluster=[2, 1, 1],
            operands=["e4m3", "u4"],
            out="f16",
            swap_ab=True,
        ),
    ),
    # FP8 x MXFP4, pre-MMA E8M0 scales
    (
        "sm90_generic_mixed_moe_gemm_kernelLauncher<__nv_fp8_e4m3, SafeFP4, __nv_bfloat16, "
        "tensorrt_llm::cutlass_extensions::EpilogueOpDefault, cute::Shape<cute::Int<128>, cute::Int<128>, "
        "cute::Int<128>>, cute::Shape<cute::Int<1>, cute::Int<2>, cute::Int<1>>, "
        "cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative, "
        "cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY, cutlass::gemm::collective::MixedInputScaleMode::kPreMmaE8M0>",
        dict(
            name="CtaShape128x128x128B_ClusterShape_1x2x1_COOPERATIVE_PreMmaE8M0",
            tile=[128, 128, 128],
            cluster=[1, 2, 1],
            out="bf16",
        ),
    ),
    # the small-K single-warpgroup kernel
    (
        "sm90_generic_mixed_moe_small_k_kernelLauncher<__nv_fp8_e4m3, SafeFP4, half, "
        "tensorrt_llm::cutlass_extensions::EpilogueOpDefault, cute::Shape<cute::Int<128>, cute::Int<40>, "
        "cute::Int<128>>, cute::Shape<cute::Int<1>, cute::Int<1>, cute::Int<1>>, "
        "cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecializedCooperative, "
        "cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_ONLY, cutlass::gemm::collective::MixedInputScaleMode::kPreMmaE8M0, "
        "tensorrt_llm::cutlass_extensions::MainloopScheduleType::SINGLE_WARPGROUP_ROLLING>",
        dict(name="CtaShape128x40x128B_ClusterShape_1x1x1_SINGLE_WARPGROUP_ROLLING_PreMmaE8M0", tile=[128, 40, 128]),
    ),
    # fpA_intB: bf16 x uint8 with zeros; tile K 64 bf16 elements = 128 bytes (the enum's K)
    (
        "sm90_generic_mixed_gemm_kernelLauncher<__nv_bfloat16, uint8_t, __nv_bfloat16, __nv_bfloat16, "
        "__nv_bfloat16, cutlass::WeightOnlyQuantOp::FINEGRAINED_SCALE_AND_ZEROS, "
        "tensorrt_llm::cutlass_extensions::EpilogueOpBias, cute::Shape<cute::Int<128>, cute::Int<256>, "
        "cute::Int<64>>, cute::Shape<cute::Int<1>, cute::Int<1>, cute::Int<1>>, "
        "cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative>",
        dict(
            name="CtaShape128x256x128B_ClusterShape_1x1x1_COOPERATIVE_FINEGRAINED_SCALE_AND_ZEROS",
            tile=[128, 256, 64],
            operands=["bf16", "u8"],
            out="bf16",
            family="moe",
        ),
    ),
]


@pytest.mark.parametrize("owner, want", OWNERS, ids=[w["name"] for _, w in OWNERS])
def test_mixed_launchers_name_their_tactics(owner, want):
    got = mixed_identity(owner)
    assert {k: got[k] for k in want} == want


def test_mixed_identity_refuses_others():
    assert mixed_identity("CutlassGroupwiseScaledGEMMSM120<1, 128>") is None
    assert mixed_identity("sm90_generic_mixed_gemm_kernelLauncher<half>") is None  # too few arguments


def test_mixed_kernel_types():
    """The kernel classes and element tuples of these launchers (spellings shortened from the
    ``GemmKernelSelector`` and ``CollectiveBuilderMixedInput`` they name:
    ``CollectiveMmaArrayMixedInput<Policy, Tile, tuple<weight, scale>, S, activation, ...>``)."""
    for cls in ("GemmUniversalPrecomputedScheduler", "SingleWarpgroupPersistentGemm"):
        spelled = (
            f"cutlass::gemm::kernel::{cls}<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int>>, "
            "cutlass::gemm::collective::CollectiveMmaArrayMixedInput<cutlass::gemm::"
            "MainloopSm90ArrayTmaGmmaWarpSpecializedMixedInput<5, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1>>, "
            "cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>, cute::tuple<cute::C<64>, cute::C<16>, "
            "cute::C<256>>, cute::tuple<cutlass::int4b_t, cutlass::bfloat16_t>, S, cutlass::float_e4m3_t, S>, "
            "E, void>"
        )
        assert kernel_core(spelled) == spelled
        parts = kernel_parts(spelled)
        assert parts["kernel"] == "grouped" and parts["tile"] == [64, 16, 256] and parts["cluster"] == [2, 1, 1]
        assert (parts["a"], parts["b"]) == ("s4", "e4m3")
        assert parts["schedule"] == "KernelPtrArrayTmaWarpSpecializedPingpong"
    assert kernel_core("cutlass::gemm::kernel::GemmUniversalPrecomputedSchedulerX<A>") is None
    assert element_kind("cute::tuple<cutlass::uint4b_t, cutlass::half_t, cutlass::half_t>") == "u4"
    # int4b_t / uint4b_t as libclang spells them canonically (integer_subbyte<Bits, Signed = true>)
    assert element_kind("cute::tuple<cutlass::integer_subbyte<4>, __nv_bfloat16>") == "s4"
    assert element_kind("cute::tuple<cutlass::integer_subbyte<4, false>, cutlass::half_t>") == "u4"
    assert element_kind("cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue8m0_t>") == "mxfp4"
    assert element_kind("cute::tuple<cutlass::half_t, cutlass::half_t>") is None


# -------------------------------------------------------------------------------------------
# against nvcc (network: the wheel; nvcc: its device front end)
SPEC = "flashinfer-python==0.7.2.post1"
CAPACITY = 232448  # sm90_smem_capacity_bytes (gemm/collective/builders/sm90_common.inl)
#: 8 W4A16 BF16 x MXFP4 MoE launchers (128x128x512, four clusters, cooperative and pingpong: 2
#: stages, 350208 and 366592 B by nvcc, over capacity), 8 small-K FP8 x MXFP4 ones (prefill and
#: rolling, N 8 to 40) and 8 fpA_intB ones (FP8 x int4, per column)
SAMPLE = (
    "cutlass_kernel_file_gemm_grouped_sm90_M128_Mixed_group39.generated.cu",
    "cutlass_kernel_file_gemm_grouped_sm90_M128_Mixed_group70.generated.cu",
    "cutlass_kernel_file_gemm_sm90_M128_group0.generated.cu",
)


def nvcc_sizes(sources, flags: list[str], work) -> dict:
    """``{source: {instantiation line: (kernel, mainloop, epilogue, stages)}}`` as nvcc
    computes them, the sources in one unit, through nvcc's device front end
    (:func:`cutlass_layout.checks.nvcc_probe.unit_sizes` with ``device``): not the host pass of
    tests/test_audit_nvcc.py, since ``cudafe++`` leaves function templates to the host
    compiler and these launchers are function templates a source instantiates explicitly;
    ``cicc`` instantiates them. TensorRT-LLM's macros these launchers use after declaring
    ``GemmKernel`` (``TLLM_CHECK_WITH_INFO(total_routed_tokens >= 0, ...)`` in the MoE
    ``_impl``, ``TLLM_LOG_ERROR`` on a short workspace in fpA_intB's) spell the numbers; each
    error's last instantiation note names the line of the explicit instantiation."""
    from cutlass_layout.checks.nvcc_probe import unit_sizes

    got, out = unit_sizes(list(sources), flags, work, device=True)
    assert "already been defined" not in out and "redefinition" not in out, out[:3000]
    return got


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_sm90_mixed_tactics_against_nvcc(nvcc, tmp_path, only_sources):
    """Three of the SM90 MoE module's generated sources (its builders run, then only these are
    kept), audited, and compiled by nvcc for sm_90a with the module's flags: every explicit
    instantiation is one tactic, and its kernel's, mainloop's and epilogue's
    ``sizeof(SharedStorage)`` and the mainloop's stage count are nvcc's; those nvcc finds over
    the capacity (8) are the ones the audit says are."""
    from test_audit_nvcc import moe_sizes_against_nvcc

    from cutlass_layout.commands.audit import audit
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    some = only_sources(lambda name: name in SAMPLE)
    res = audit(SPEC, "sm90", family="moe")
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    moe = next(
        m for m in some(install, "sm90", cuda_version=tgt.cuda.version).modules if m.name.startswith("fused_moe")
    )
    assert sorted(p.name for p in moe.generated) == sorted(SAMPLE)
    assert len({t.id for t in res.tactics}) == len(res.tactics) == 24
    assert not [e for e in res.sources if e["error"]]
    compared = moe_sizes_against_nvcc(res, moe, install.tree, "sm_90a", tmp_path, CAPACITY, sizes=nvcc_sizes)
    for t in res.tactics:
        assert (t.verdict == "over_capacity") == (t.report.kernel.size > CAPACITY), t.id
    over = sum(t.report.kernel.size > CAPACITY for t in res.tactics)
    assert compared == 24 and over == 8
    # at 2 stages already (nvcc's count above), the fewest the mixed-input collective takes
    assert all(t.fix is not None and t.fix.fewest_stages == 2 for t in res.tactics if t.verdict == "over_capacity")
