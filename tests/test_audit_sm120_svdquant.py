"""audit on SM120: flashinfer 0.7.4's SVDQuant NVFP4 GEMM module
(``gen_gemm_sm120_module_cutlass_nvfp4_svdquant``, ``flashinfer/jit/gemm/svdquant_sm120.py``).

What the install does, read by hand from 0.7.4's code:

* the builder loops over ``SVDQUANT_SM120_CONFIGS`` of the sibling
  ``jit/gemm/svdquant_sm120_configs.py`` (a docstring, ``from typing import Final`` and one tuple
  of 31 names: data only, so the generator harness runs it from the install) and renders one
  ``nvfp4_svdquant_gemm_cutlass_sm120_<Config>.cu`` per name from
  ``csrc/nvfp4_svdquant_gemm_cutlass_sm120.jinja``;
* each source calls ``INSTANTIATE_NVFP4_SVDQUANT_GEMM_SM120_TACTIC(Config)`` or, for five of
  the ``Static`` configs, ``..._STATIC_TACTIC(Config)``, a macro whose body is the first macro's
  call; and, for the 18 configs of the template's ``NO_INLINE_DOWN_CONFIGS`` list,
  ``..._NO_INLINE_DOWN_TACTIC(Config)`` as well. They instantiate ``run_tactic<Config>`` and
  ``run_tactic_no_inline_down<Config>`` explicitly
  (``include/flashinfer/gemm/nvfp4_svdquant_gemm_template_sm120.h``): both only forward to
  ``run_tactic_impl<Config, true|false>``, which starts with a guard that throws
  (``if (!runtime_tactic_feasible<Config>(rt, m, n, k)) throw std::invalid_argument(...);``)
  and then declares ``using Gemm = std::conditional_t<CompileInlineDown, typename Config::Gemm,
  typename Config::GemmNoInlineDown>;``, a ``GemmUniversalAdapter`` whose ``GemmKernel`` it
  reads;
* the kernel is flashinfer's own ``flashinfer::gemm::svdquant_sm120::GemmUniversalLoRaSm120<
  ProblemShape, CollectiveMainloop, CollectiveEpilogue, TileSchedulerTag>``
  (``nvfp4_svdquant_gemm_collective_sm120.h``), ``SharedStorageSize = sizeof(SharedStorage)``;
  the template ``static_assert``\\ s that ``GemmKernelNoInlineDown::SharedStorageSize ==
  GemmKernel::SharedStorageSize``.

So the module has 31 + 18 = 49 explicit instantiations of a kernel launcher, and 31 + 18
kernels, the two kernels of a config the same size.
"""

from __future__ import annotations

import re

import pytest

from cutlass_layout.installs.kernels import Source, kernel_core
from cutlass_layout.installs.preludes import macro_instantiations

SPEC = "flashinfer-python==0.7.4"
FAMILY = "nvfp4_svdquant_gemm_cutlass_sm120"

#: the shape of 0.7.4's run_tactic / run_tactic_impl (nvfp4_svdquant_gemm_template_sm120.h)
LAUNCHER = r"""
#include <type_traits>
namespace std { struct invalid_argument { invalid_argument(const char*); }; }
template <int M, int N, class E> struct GemmUniversal { char storage[M * N * sizeof(E)]; };
template <class K> struct GemmUniversalAdapter { using GemmKernel = K; struct Arguments {}; };
template <int TileM, class E> struct TacticConfig {
  using GemmKernel = GemmUniversal<TileM, TileM / 2, E>;
  using GemmKernelNoInlineDown = GemmUniversal<TileM, TileM / 2, E>;
  using Gemm = GemmUniversalAdapter<GemmKernel>;
  using GemmNoInlineDown = GemmUniversalAdapter<GemmKernelNoInlineDown>;
};
template <class Config> bool feasible(int m) { return m > 0; }
template <class Config, bool CompileInlineDown>
void run_tactic_impl(int m, int n) {
  if (!feasible<Config>(m))
    throw std::invalid_argument("nvfp4_svdquant_gemm (sm120): tactic infeasible for this shape");
  using Gemm = std::conditional_t<CompileInlineDown, typename Config::Gemm,
                                  typename Config::GemmNoInlineDown>;
  typename Gemm::Arguments args{};
  args.mode = typename Gemm::GemmKernel{};
}
template <class Config>
void run_tactic(int m, int n) {
  run_tactic_impl<Config, true>(m, n);
}
"""


def _definition(name: str) -> str:
    at = LAUNCHER.index(f"void {name}(")
    start = LAUNCHER.rindex("template <", 0, at)
    end = LAUNCHER.index("\n}\n", at) + 2
    return LAUNCHER[start:end]


def test_a_guard_that_only_throws_before_the_kernel_does_not_stop_the_rehost():
    """``run_tactic_impl`` starts with ``if (...) throw ...;``: a run-time check that declares
    nothing, so the re-hosted class leaves it out and names the adapter's kernel (sizeof by
    hand: 64 * 32 * sizeof(short) = 4096 B); ``run_tactic`` only forwards to it. A guard that
    does more than throw still refuses the re-host."""
    import clang.cindex as ci

    from cutlass_layout.cpp.rehost import forwarded_call, rehost_template

    usings, struct, alias = rehost_template(_definition("run_tactic_impl"), 0)
    assert alias == "GemmKernel" and "throw" not in struct and "feasible" not in struct
    assert "using GemmKernel = typename Gemm::GemmKernel;" in struct
    assert forwarded_call(_definition("run_tactic")) == ("run_tactic_impl", "Config, true", "")
    text = (
        LAUNCHER.replace("#include <type_traits>", "")
        + usings
        + struct
        + "using x = char[sizeof(cl_rehost_0<TacticConfig<64, short>, true>::GemmKernel)];\n"
    )
    text = (
        "namespace std { template <bool B, class T, class F> struct conditional { using type = T; };\n"
        "template <class T, class F> struct conditional<false, T, F> { using type = F; };\n"
        "template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type; }\n" + text
    )
    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", text)])
    assert not [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    x = next(c for c in tu.cursor.get_children() if c.spelling == "x")
    assert x.underlying_typedef_type.get_canonical().get_size() == 4096
    busy = (
        _definition("run_tactic_impl")
        .replace("if (!feasible<Config>(m))\n", "if (!feasible<Config>(m)) {\n")
        .replace('shape");', 'shape"); m = 1; }')
    )  # a block that assigns, then throws
    assert rehost_template(busy, 0) is None


HEADER = r"""#pragma once
template <class Config> void run_tactic(int m);
template <class Config> void run_tactic_no_inline_down(int m);
#define INSTANTIATE_TACTIC(Config) \
  template void run_tactic<Config>(int m);
#define INSTANTIATE_NO_INLINE_DOWN_TACTIC(Config) \
  template void run_tactic_no_inline_down<Config>(int m);
// the per-shape static configs: a macro calling another
#define INSTANTIATE_STATIC_TACTIC(Config) \
  INSTANTIATE_TACTIC(Config)
#define LOOPS(X) LOOPS(X)
"""

SOURCE = """#include "gemm/svdq.h"
namespace ns {
INSTANTIATE_STATIC_TACTIC(Tactic64x128x128StaticConfig)
INSTANTIATE_NO_INLINE_DOWN_TACTIC(Tactic64x128x128StaticConfig)
LOOPS(y)
}
"""


def test_a_macro_that_calls_an_instantiating_macro_is_followed(tmp_path):
    """0.7.4's ``INSTANTIATE_NVFP4_SVDQUANT_GEMM_SM120_STATIC_TACTIC(Config)`` is
    ``INSTANTIATE_NVFP4_SVDQUANT_GEMM_SM120_TACTIC(Config)``: its call gives that macro's
    explicit instantiation, at its own line and under its own name; a macro that calls itself
    gives nothing (and ends)."""
    (tmp_path / "inc" / "gemm").mkdir(parents=True)
    (tmp_path / "inc" / "gemm" / "svdq.h").write_text(HEADER)
    src = tmp_path / "a.cu"
    src.write_text(SOURCE)
    source = Source(src, ("-x", "cuda", "-I", str(tmp_path / "inc")), tmp_path / "cutlass", "sm120")
    assert macro_instantiations(source, SOURCE) == [
        ("run_tactic", "Tactic64x128x128StaticConfig", 3, "INSTANTIATE_STATIC_TACTIC"),
        ("run_tactic_no_inline_down", "Tactic64x128x128StaticConfig", 4, "INSTANTIATE_NO_INLINE_DOWN_TACTIC"),
    ]


def test_the_svdquant_sm120_kernel_is_a_kernel():
    """``GemmUniversalLoRaSm120<...>`` (its canonical spelling) is a kernel of its own; its
    device adapter is not."""
    k = (
        "flashinfer::gemm::svdquant_sm120::GemmUniversalLoRaSm120<cute::tuple<int, int, int, int>, "
        "M, E, cutlass::gemm::PersistentScheduler>"
    )
    assert kernel_core(k) == k
    assert kernel_core(f"cutlass::gemm::device::GemmUniversalAdapter<{k}>") is None


def _configs(root) -> tuple[list[str], list[str]]:
    """The 31 names of ``jit/gemm/svdquant_sm120_configs.py``'s ``SVDQUANT_SM120_CONFIGS`` (read
    with ``ast``, not run) and the 18 of the jinja template's ``NO_INLINE_DOWN_CONFIGS``."""
    import ast

    tree = ast.parse((root / "jit" / "gemm" / "svdquant_sm120_configs.py").read_text())
    (configs,) = [
        ast.literal_eval(s.value)
        for s in tree.body
        if isinstance(s, ast.AnnAssign) and s.target.id == "SVDQUANT_SM120_CONFIGS"
    ]
    jinja = (root / "data" / "csrc" / "nvfp4_svdquant_gemm_cutlass_sm120.jinja").read_text()
    listed = jinja[jinja.index("NO_INLINE_DOWN_CONFIGS = [") :]
    no_inline = re.findall(r'"(\w+)"', listed[: listed.index("]")])
    return list(configs), no_inline


def test_the_lora_overlap_epilogue_names_its_d():
    """flashinfer's ``Sm120LoRaOverlapEpilogue`` (gemm/nvfp4_svdquant_gemm_epilogue_sm120.h) takes
    the CollectiveEpilogue's arguments flattened, the policy's five values first: its D is the
    tenth argument (a kernel spelling shortened to what the reader looks at)."""
    from cutlass_layout.installs.naming import kernel_parts

    epilogue = (
        "cutlass::epilogue::collective::Sm120LoRaOverlapEpilogue<2, 2, 4, true, false, "
        "cute::tuple<cute::C<128>, cute::C<128>, cute::C<128>>, cute::tuple<cute::C<64>, cute::C<32>>, "
        "void, cute::tuple<long, cute::C<1>, long>, cutlass::bfloat16_t, "
        "cute::tuple<long, cute::C<1>, long>, X>"
    )
    mainloop = (
        "Mma<Policy<3, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, KernelTmaWarpSpecializedCooperative>, "
        "cute::tuple<cute::C<128>, cute::C<128>, cute::C<128>>, cutlass::float_e2m1_t, S, "
        "cutlass::float_e2m1_t>"
    )
    parts = kernel_parts(
        f"cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, {mainloop}, {epilogue}>"
    )
    assert parts["d"] == "bf16" and parts["tile"] == [128, 128, 128]


@pytest.mark.network
@pytest.mark.slow
def test_every_svdquant_sm120_config_of_0_7_4_is_laid_out():
    """Every config of ``SVDQUANT_SM120_CONFIGS`` is a ``run_tactic<Config>`` kernel, those of
    ``NO_INLINE_DOWN_CONFIGS`` a ``run_tactic_no_inline_down<Config>`` one too, the two the same
    size (the header's static_assert); the module gives kernels and no reason.

    128x128x128 (``Tactic128x128x128Config``: not swapped, persistent), by hand from the
    headers, 4 stages (the builder's, ``StageCountAutoCarveout<sizeof(epilogue storage) +
    LoRaSmemCarveoutBytes>``, LoRaSmemCarveoutBytes 0 on the byte-exact path):

    * mainloop (``CollectiveMmaLoRaSm120::SharedStorageByteExact``): smem_A 4 x 128 x 128 x 1/2 B
      (e2m1) = 32768, smem_B the same, smem_SFA 4 x 128 x 128 / 16 = 4096, smem_SFB 4096:
      tensors 73728; the pipeline's 4 full and 4 empty barriers of 8 B = 64 at 73728; rounded
      up to the 1024-byte alignment of smem_A: 74752 (73 x 1024).
    * kernel (``GemmUniversalLoRaSm120::SharedStorage``): pipelines (mainloop 64, epilogue
      load 32, load order 16 = 112) and the scheduler's storage (144) end at 256; ``tensors``
      (1024-aligned by smem_A) at 1024 holds the epilogue's tensor storage (8704: smem_D 8192,
      the bias row 128 x 2 = 256, rounded to its 512 alignment) padded to 9216, then the
      mainloop's 73728: 1024 + 9216 + 73728 = 83968. smem_D's 8192 is not derived here from the
      epilogue builder's tile: it is nvcc's, as is the total (the nvcc test below compiles this
      source, ``..._Tactic128x128x128Config.cu``, and agrees on both of its kernels).
    """
    from cutlass_layout.commands.audit import audit
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    res = audit(SPEC, "sm120", family=FAMILY, jobs=1)
    configs, no_inline = _configs(resolve_flashinfer(SPEC).root)
    assert len(configs) == 31 and len(no_inline) == 18 and set(no_inline) <= set(configs)
    by = {t.name: t for t in res.tactics}
    assert set(by) == (
        {f"run_tactic<{c}>::GemmKernel" for c in configs}
        | {f"run_tactic_no_inline_down<{c}>::GemmKernel" for c in no_inline}
    )
    for c in no_inline:
        a, b = by[f"run_tactic<{c}>::GemmKernel"].numbers, by[f"run_tactic_no_inline_down<{c}>::GemmKernel"].numbers
        assert (a.kernel_bytes, a.stages) == (b.kernel_bytes, b.stages), c
    (module,) = [m for m in res.modules if m["family"] == FAMILY]
    assert (module["sources"], module["kernels"], module["reason"]) == (31, 49, None)
    assert all(s["error"] is None and s["kernels"] for s in res.sources)
    n = by["run_tactic<Tactic128x128x128Config>::GemmKernel"].numbers
    assert (n.stages, n.mainloop_bytes, n.kernel_bytes) == (4, 74752, 83968)
    assert all(t.numbers.kernel_bytes <= 101376 for t in res.tactics)  # the header's static_assert
    # D is bf16 in every kernel (the header's OutElementType, cutlass::bfloat16_t, the epilogue
    # builder's ElementD), also where tiles of at most 128x128 swap in Sm120LoRaOverlapEpilogue
    assert {t.out for t in res.tactics} == {"bf16"}


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_svdquant_sm120_kernels_agree_with_nvcc(nvcc, only_sources, capsys):
    """``audit --verify nvcc`` on two of the module's sources: 128x128x128 (its ``run_tactic``
    and ``run_tactic_no_inline_down`` kernels, two calls of two macros on two lines) and the
    64-row static-scheduler one (``..._STATIC_TACTIC``, a macro calling the instantiating one):
    nvcc's device front end gives every sampled kernel's ``sizeof(SharedStorage)``, mainloop,
    epilogue and stages as the audit's."""
    from cutlass_layout.cli import main

    keep = {
        "nvfp4_svdquant_gemm_cutlass_sm120_Tactic128x128x128Config.cu",
        "nvfp4_svdquant_gemm_cutlass_sm120_Tactic64x128x128StaticConfig.cu",
    }
    only_sources(lambda name: name in keep)
    assert main(["audit", SPEC, "--arch", "sm120", "--family", FAMILY, "--verify", "nvcc", "--sample", "3"]) == 0
    out = capsys.readouterr().out
    assert "nvcc agrees on 3 of 3 tactics (1 family, 2 sources)" in out, out[-2000:]
    assert "not verified" not in out
    assert ", 0 do not compile, 3 fit" in out
