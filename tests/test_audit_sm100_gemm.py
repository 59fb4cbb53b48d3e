"""audit on SM100: flashinfer's dense SM100 FP8 and BF16 GEMM modules
(``gen_gemm_sm100_module_cutlass_fp8``, ``..._bf16``).

Each generated source (``fp8_gemm_cutlass_half_128_128_128.cu``, flashinfer 0.7.4) is five
calls of a macro, ``INSTANCE_FP8_GEMM_TEMPLATE_SM100(half, 128, 128, 128, 1, 1, 1, _1SM);``,
defined in the header the source includes (``flashinfer/gemm/fp8_gemm_template_sm100.h``) as an
explicit instantiation, ``template size_t genericFp8GemmKernelLauncherSm100<half,
cutlass::arch::Sm100, 128, 128, 128, cute::Shape<...>, _1SM>(...);``, of a function template
that declares ``GemmKernel`` in its body. No ``template`` is written in the source itself: the
instantiations are found by expanding the calls
(:func:`cutlass_layout.installs.preludes.macro_instantiations`).

The offline tests run that expansion on a header written here in that shape, and the text
transform that makes a launcher's selection among builders after the selection
(:func:`cutlass_layout.cpp.text.deferred_selections`, compiled by libclang); the nvcc
test compares the real kernels of one FP8 and one BF16 source with nvcc's device front end.
"""

from __future__ import annotations

import re
import shutil

import pytest

from cutlass_layout.installs.kernels import Source
from cutlass_layout.installs.preludes import macro_instantiations, source_instantiations
from cutlass_layout.cpp.text import deferred_selections

HEADER = r"""#pragma once
template <typename T, int M, typename Cluster> unsigned long launcher(T const* a, int m);
#define INSTANCE_LAUNCHER(T, M, CGA_M, CGA_N) \
  template unsigned long launcher<T, M, Shape<CGA_M, CGA_N>>(T const* a, int m);
#define NOT_AN_INSTANCE(X) int X;
"""

SOURCE = """#include "gemm/launcher.h"
namespace ns {
    INSTANCE_LAUNCHER(half, 128, 1, 1);
    // INSTANCE_LAUNCHER(half, 64, 1, 1);  a comment is not a call
    NOT_AN_INSTANCE(x)
    INSTANCE_LAUNCHER(float, 256,
                      2, 1);
}
template void written<int>(int);
"""


def test_macro_calls_that_expand_to_explicit_instantiations_are_found(tmp_path):
    """Each call of a macro (defined in a header the source includes, found on its -I path)
    whose body is an explicit instantiation gives that instantiation at the call's line; a
    macro that instantiates nothing, and a call in a comment, give none; the instantiations
    written in the source come with them, by line."""
    (tmp_path / "inc" / "gemm").mkdir(parents=True)
    (tmp_path / "inc" / "gemm" / "launcher.h").write_text(HEADER)
    src = tmp_path / "gen" / "a.cu"
    src.parent.mkdir()
    src.write_text(SOURCE)
    source = Source(src, ("-x", "cuda", "-isystem", str(tmp_path / "inc")), tmp_path / "cutlass", "sm100")
    assert macro_instantiations(source, SOURCE) == [
        ("launcher", "half, 128, Shape<1, 1>", 3, "INSTANCE_LAUNCHER"),
        ("launcher", "float, 256, Shape<2, 1>", 6, "INSTANCE_LAUNCHER"),
    ]
    assert source_instantiations(source, SOURCE) == [
        ("launcher", "half, 128, Shape<1, 1>", 3),
        ("launcher", "float, 256, Shape<2, 1>", 6),
        ("written", "int", 9),
    ]
    # the header not found (no -I for it): the calls are not read as instantiations
    assert macro_instantiations(Source(src, ("-x", "cuda"), tmp_path / "cutlass", "sm100"), SOURCE) == []


#: TensorRT-LLM's MoE launcher's shape (moe_gemm_tma_ws_launcher.inl): three epilogues built,
#: one chosen by two flags; types stand in for CUTLASS's
SELECTION = r"""
template <int N> struct Epilogue { char storage[N]; };
template <int N> struct Builder {
  static_assert(N != 3, "this builder does not build");
  using CollectiveOp = Epilogue<N>;
};
template <bool IsFinalize, bool IsActivation, int Unused>
struct launcher {
  using X = int;
  using CollectiveEpilogueDefault = typename Builder<1>::CollectiveOp;
  using CollectiveEpilogueFinalize = typename Builder<2 + (IsFinalize ? 0 : Unused)>::CollectiveOp;
  using CollectiveEpilogueActivation = typename Builder<4>::CollectiveOp;
  using CollectiveEpilogue = std::conditional_t<IsFinalize, CollectiveEpilogueFinalize,
      std::conditional_t<IsActivation, CollectiveEpilogueActivation, CollectiveEpilogueDefault>>;
  using Named = char[sizeof(CollectiveEpilogue)];
};
"""


def test_a_selection_among_builders_instantiates_only_the_one_chosen():
    """deferred_selections: the three aliases name the builders, the selection takes the
    chosen one's CollectiveOp: the same type for every pair of flags (sizes by hand: 1, 2, 4),
    and a builder that would not compile (Builder<3>) is not instantiated where it is not
    chosen; an alias named elsewhere is left as written."""
    import clang.cindex as ci

    out = deferred_selections(SELECTION)
    assert "using CollectiveEpilogueDefault = Builder<1>;" in " ".join(out.split())
    assert "typename std::conditional_t<IsFinalize" in out and "::CollectiveOp;" in out
    uses = (
        "using x_f = launcher<true, false, 1>::Named;\n"
        "using x_a = launcher<false, true, 1>::Named;\nusing x_d = launcher<false, false, 1>::Named;\n"
        "using x_unused_broken = launcher<false, false, 1>::CollectiveEpilogue;\n"
    )

    def parse(text):
        tu = ci.Index.create().parse(
            "t.cpp",
            args=["-x", "c++", "-std=c++17"],
            unsaved_files=[("t.cpp", "#include <type_traits>\n" + text + uses)],
        )
        return tu, [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]

    # as written, the unused finalize builder (Builder<3> there) is instantiated and fails
    assert any("this builder does not build" in e for e in parse(SELECTION)[1])
    tu, errors = parse(out)
    assert not errors
    sizes = {
        c.spelling: c.underlying_typedef_type.get_canonical().get_size()
        for c in tu.cursor.get_children()
        if c.kind == ci.CursorKind.TYPE_ALIAS_DECL and c.spelling.startswith("x_")
    }
    assert sizes == {"x_f": 2, "x_a": 4, "x_d": 1, "x_unused_broken": 1}
    named_twice = SELECTION.replace("using Named", "using Also = CollectiveEpilogueDefault;\n  using Named")
    assert deferred_selections(named_twice) == named_twice


# ---------------------------------------------------------------------------------------
# the real modules against nvcc
SPEC = "flashinfer-python==0.7.4"
CAPACITY = 232448  # sm100_smem_capacity_bytes (cutlass/arch/arch.h)
SAMPLE = {
    "fp8_gemm_cutlass": "fp8_gemm_cutlass___nv_bfloat16_128_128_128.cu",
    "bf16_gemm_cutlass": "bf16_gemm_cutlass_half_128_128_128.cu",
}
SHOW = (
    "static_assert(cl_sizes<GemmKernel, CTA_M_ * 1000 + CTA_N_ + "
    '100000 * cute::size<0>(ClusterShape_{}) + 1000000 * cute::size<1>(ClusterShape_{})>::value == 0, "");'
)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SAMPLE))
def test_dense_sm100_gemm_against_nvcc(family, nvcc, tmp_path, only_sources):
    """One source of the module audited (its five instantiations, five kernels), and compiled
    by nvcc's device front end for sm_100a with the module's flags and a copy of flashinfer's
    headers in which the launcher shows its ``GemmKernel``'s numbers right after declaring it:
    every kernel's, mainloop's and epilogue's ``sizeof(SharedStorage)`` and the stage count are
    nvcc's."""
    from cutlass_layout.checks.nvcc_probe import SIZES_SHOW, nvcc_flags, unit_sizes
    from cutlass_layout.commands.audit import audit
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    some = only_sources(lambda name: name == SAMPLE[family])
    res = audit(SPEC, "sm100", family=family)
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    module = next(m for m in some(install, "sm100", cuda_version=tgt.cuda.version).modules if m.name == family)
    assert [p.name for p in module.generated] == [SAMPLE[family]]
    assert [(e["instantiations"], e["kernels"], e["error"], e["reason"]) for e in res.sources] == [(5, 5, None, None)]
    mine = {}
    for t in res.tactics:  # the launcher's template arguments: dtype, CTA_M, CTA_N, CTA_K, cluster
        m = re.search(r"Sm100, (\d+), (\d+), \d+, cute::Shape<cute::Int<(\d)>, cute::Int<(\d)>", t.launcher)
        cta_m, cta_n, cga_m, cga_n = map(int, m.groups())
        mine[cta_m * 1000 + cta_n + 100000 * cga_m + 1000000 * cga_n] = t
    assert len(mine) == len(res.tactics) == 5
    include = tmp_path / "include"
    shutil.copytree(install.root / "data" / "include" / "flashinfer", include / "flashinfer")
    name = {"fp8_gemm_cutlass": "fp8", "bf16_gemm_cutlass": "bf16"}[family]
    header = include / "flashinfer" / "gemm" / f"{name}_gemm_template_sm100.h"
    text = header.read_text()
    alias = re.search(r"using GemmKernel =\s*cutlass::gemm::kernel::GemmUniversal<[^;]*;", text)
    header.write_text(text[: alias.end()] + " " + SHOW + text[alias.end() :])
    show = SIZES_SHOW
    flags = [f"-I{include}", *nvcc_flags(module, install.tree, "sm_100a")]
    _, out = unit_sizes(list(module.generated), flags, tmp_path, device=True, show=show)
    got = {
        int(m.group(1)): tuple(int(x) for x in m.groups()[1:])
        for m in re.finditer(r"cl_show<(\d+), (\d+)UL, (\d+)UL, (\d+)UL, (-?\d+)>", out)
    }
    assert sorted(got) == sorted(mine), out[-3000:]
    for key, (kernel, mainloop, epilogue, stages) in got.items():
        r = mine[key].report
        assert r.capacity.value == CAPACITY
        assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == (kernel, mainloop, epilogue, stages), key


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize(
    "arch, family, source, sample, kernels",
    [
        ("sm100", "fp8_gemm_cutlass", SAMPLE["fp8_gemm_cutlass"], 2, 5),
        # its three kernels, CutlassGroupwiseScaledGEMMSM100LowLatency's among them (it swaps m and n
        # before declaring its kernel: all three were "does not compile" before that was read)
        ("sm100", "gemm_sm100", "gemm_groupwise_e4m3_f16_majortrue_mma1_sm100.cu", 3, 3),
        # SVDQuant's run_tactic<Config> names its kernel only as Gemm::GemmKernel (Gemm a device
        # adapter): "a launcher whose kernel this reader cannot see" before that was read
        ("sm100", "nvfp4_svdquant_gemm_cutlass", "nvfp4_svdquant_gemm_cutlass_Tactic2Sm256x256x256Config.cu", 1, 1),
        # kernels declared in a struct that a header's macro defines where the source calls it
        # (DeviceGemmFp4GemmSm100_<T>_<tile>_<cluster>_<1SM|2SM>::GemmKernel): every one of a source
        ("sm100", "fp4_gemm_cutlass", "fp4_gemm_cutlass___nv_bfloat16_128_256_256.cu", 9, 9),
        # SM120's: two kernels per call (GemmKernelDefault and the stream-K one), each its own alias line
        ("sm120", "fp4_gemm_cutlass_sm120", "fp4_gemm_cutlass___nv_bfloat16_128_128_128.cu", 4, 4),
    ],
)
def test_verify_nvcc_reads_kernels_declared_in_headers(
    arch, family, source, sample, kernels, nvcc, only_sources, capsys
):
    """``audit --verify nvcc`` compiles a family whose kernels its headers declare, in function
    templates a source instantiates (the dense SM100 FP8 GEMM, the groupwise-scaled one,
    SVDQuant's) or in structs a header's macro defines (the dense FP4 GEMMs): nvcc agrees on
    every tactic sampled, and the family is not among those it cannot compile."""
    from cutlass_layout.cli import main

    only_sources(lambda name: name == source)
    assert main(["audit", SPEC, "--arch", arch, "--family", family, "--verify", "nvcc", "--sample", str(sample)]) == 0
    out = capsys.readouterr().out  # the report, then nvcc's lines
    assert f"nvcc agrees on {sample} of {sample} tactics" in out, out[-2000:]
    assert "not verified" not in out
    assert f", 0 do not compile, {kernels} fit" in out


LOW_LATENCY = r"""
namespace std { template <class T> void swap(T&, T&); }
template <int M, int N, class E> struct GemmUniversal { char storage[M * N * sizeof(E)]; };
template <int TileM, typename DTypeIn>
int Launcher(DTypeIn* A_ptr, DTypeIn* B_ptr, int m, int n) {
  std::swap(m, n);  // the transposed GEMM: run-time values, no type
  std::swap(A_ptr, B_ptr);
  constexpr int TileN = TileM / 2;
  using GemmKernel = GemmUniversal<TileM, TileN, DTypeIn>;
  GemmKernel kernel;
  return m;
}
"""


def test_a_launcher_that_swaps_its_arguments_before_its_kernel_is_rehosted():
    """flashinfer's CutlassGroupwiseScaledGEMMSM100LowLatency (0.7.4) swaps ``m, n`` and its
    pointers before declaring its kernel: those calls are not members, so the re-hosted class
    leaves them out and names the kernel (sizeof by hand: 64 * 32 * 2 = 4096 B for short)."""
    import clang.cindex as ci

    from cutlass_layout.cpp.rehost import rehost_template

    definition = LOW_LATENCY[LOW_LATENCY.index("template <int TileM") :]
    usings, struct, alias = rehost_template(definition, 0)
    assert alias == "GemmKernel" and "swap" not in struct
    text = LOW_LATENCY + usings + struct + "using x = char[sizeof(cl_rehost_0<64, short>::GemmKernel)];\n"
    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", text)])
    assert not [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    x = next(c for c in tu.cursor.get_children() if c.spelling == "x")
    assert x.underlying_typedef_type.get_canonical().get_size() == 4096


SVDQUANT = r"""
template <int M, int N, class E> struct GemmUniversal { char storage[M * N * sizeof(E)]; };
template <class K> struct GemmUniversalAdapter { using GemmKernel = K; struct Arguments {}; K* kernel; };
template <int TileM, class E> struct TacticConfig {
  using GemmKernel = GemmUniversal<TileM, TileM / 2, E>;
  using Gemm = GemmUniversalAdapter<GemmKernel>;
};
template <class Config>
void run_tactic(int m, int n) {
  using Gemm = typename Config::Gemm;
  using Mainloop = typename Gemm::GemmKernel;  // read through the adapter
  typename Gemm::Arguments args{};
  Gemm gemm;
}
template void run_tactic<TacticConfig<64, short>>(int m, int n);
"""


def test_a_launcher_that_reads_its_kernel_through_a_device_adapter_is_rehosted():
    """flashinfer's SVDQuant ``run_tactic<Config>`` (0.7.4, nvfp4_svdquant_gemm_template_sm100.h)
    declares no kernel alias: ``using Gemm = typename Config::Gemm;`` (a ``GemmUniversalAdapter``)
    and then reads ``Gemm::GemmKernel``. The re-hosted class keeps the adapter's alias and names
    its ``GemmKernel`` (sizeof by hand: 64 * 32 * 2 = 4096 B for short); a body that reads no
    alias's ``GemmKernel`` has no kernel."""
    import clang.cindex as ci

    from cutlass_layout.cpp.text import adapter_alias
    from cutlass_layout.cpp.rehost import rehost_template

    definition = SVDQUANT[SVDQUANT.index("template <class Config>") : SVDQUANT.index("template void")]
    usings, struct, alias = rehost_template(definition, 0)
    assert alias == "GemmKernel" and "using GemmKernel = typename Gemm::GemmKernel;" in struct
    assert "Arguments" not in struct and "gemm;" not in struct  # only what comes before the adapter's kernel
    text = SVDQUANT + usings + struct + "using x = char[sizeof(cl_rehost_0<TacticConfig<64, short>>::GemmKernel)];\n"
    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", text)])
    assert not [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    x = next(c for c in tu.cursor.get_children() if c.spelling == "x")
    assert x.underlying_typedef_type.get_canonical().get_size() == 4096
    name, end, start = adapter_alias(definition)
    assert name == "Gemm" and definition[start:end] == "using Gemm = typename Config::Gemm;"
    assert adapter_alias("{ using Gemm = typename Config::Gemm; Gemm gemm; }") is None
    assert rehost_template("template <class C> void f() { using Gemm = typename C::Gemm; }", 0) is None
