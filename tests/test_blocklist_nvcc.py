"""audit --blocklist against the install's own heuristic, compiled by nvcc and run on the host.

A small program includes flashinfer 0.7.4's ``moe_gemm/moe_gemm_template_dispatch.h`` (with the
module's defines and include paths, as tests/test_audit_nvcc.py compiles its sources) and prints,
in order, ``MoeGemmRunner<T, WeightType, OutputType>::getConfigs(120, finalize)`` for the two
SM120 runners (NVFP4 x NVFP4, FP8 x FP4), GEMM1 (no FINALIZE) and GEMM2 (FINALIZE): the lists
the fused-MoE binding concatenates into ``mAllProfiles``, whose indices are the tactic ids. It
links the install's ``cutlass_heuristic.cpp`` and its ``cpp/common`` logger, exception and string
helpers (``TLLM_CHECK`` and ``TLLM_LOG`` need them), compiled by the host compiler as
flashinfer's JIT compiles its ``.cpp`` sources; nothing is stubbed. Tile names are printed
by comparing with the enum's constants, so a name the tool reads that the header lacks does not
compile. The test compares the program's lists with :func:`cutlass_layout.candidates.moe_configs`
and the ids of the written blocklist with the program's positions of the over-capacity tactics.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cutlass_layout import engine
from cutlass_layout.candidates import moe_configs
from cutlass_layout.commands.audit import audit
from cutlass_layout.flashinfer_jit import jit_modules
from cutlass_layout.sources import resolve_flashinfer
from cutlass_layout.nvcc_probe import nvcc_flags

FI_074 = "flashinfer-python==0.7.4"
RUNNERS = {("nvfp4", "nvfp4"): "__nv_fp4_e2m1, __nv_fp4_e2m1", ("mxfp8", "mxfp4"): "__nv_fp8_e4m3, __nv_fp4_e2m1"}

PROGRAM = r"""
#include "tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_gemm_template_dispatch.h"
#include <cstdio>
using namespace tensorrt_llm::kernels::cutlass_kernels;
using tensorrt_llm::cutlass_extensions::CutlassGemmConfig;
using tensorrt_llm::cutlass_extensions::CutlassTileConfigSM120;
static char const* tile_name(CutlassTileConfigSM120 t) {
%(names)s
  return "?";
}
template <class R> void show(char const* runner) {
  for (int gemm = 1; gemm <= 2; ++gemm) {
    for (auto const& c : R::getConfigs(120, gemm == 2)) {
      std::printf("%%s %%d %%s %%s %%d %%d\n", runner, gemm, tile_name(c.tile_config_sm120),
                  c.epilogue_fusion_type == CutlassGemmConfig::EpilogueFusionType::FINALIZE ? "finalize" : "none",
                  (int)c.swap_ab, (int)c.is_tma_warp_specialized);
    }
  }
}
int main() {
%(runners)s
  return 0;
}
"""


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_tactic_ids_are_the_runtime_lists_indices(nvcc, tmp_path):
    res = audit(FI_074, family="moe")
    cand = res.candidates
    install = resolve_flashinfer(FI_074)
    tgt = engine.target(install.tree)
    moe = next(m for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
               if m.name.startswith("fused_moe"))
    names = "\n".join(f"  if (t == CutlassTileConfigSM120::{n}) return \"{n}\";" for n in cand.tiles)
    runners = "\n".join(f"  show<MoeGemmRunner<{types}, __nv_bfloat16>>(\"{a}x{b}\");"
                        for (a, b), types in RUNNERS.items())
    src = tmp_path / "order.cu"
    src.write_text(PROGRAM % {"names": names, "runners": runners})
    nv = install.root / "data" / "csrc" / "nv_internal"
    helpers = [nv / "tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp",
               *(nv / "cpp/common" / f"{n}.cpp" for n in ("logger", "tllmException", "stringUtils", "envUtils"))]
    exe = tmp_path / "order"
    flags = nvcc_flags(moe, install.tree)
    # the .cpp helpers by the host compiler, as flashinfer's JIT builds them (cpp_ext.py: $cxx
    # with the module's include paths, the CUDA headers among its system includes)
    host = [f for f in flags if not f.startswith(("-arch", "--expt"))] + ["-isystem", str(tgt.cuda.path / "include")]
    objects = []
    for h in helpers:
        objects.append(tmp_path / f"{h.stem}.o")
        built = subprocess.run(["g++", *host, "-c", "-o", str(objects[-1]), str(h)], capture_output=True, text=True)
        assert built.returncode == 0, built.stderr[-3000:]
    cmd = [nvcc, *flags, "-o", str(exe), str(src), *map(str, objects)]
    built = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    lists: dict[tuple[str, int], list[tuple[str, str, bool]]] = {}
    for line in printed:
        runner, gemm, tile, fusion, swap, tma = line.split()
        assert tma == "1"  # every config of these runners is a TMA warp-specialized one
        lists.setdefault((runner, int(gemm)), []).append((tile, fusion, swap == "1"))
    for a, b in RUNNERS:
        assert moe_configs(cand, a, b, False) == lists[(f"{a}x{b}", 1)]
        assert moe_configs(cand, a, b, True) == lists[(f"{a}x{b}", 2)]
    nv1, nv2 = lists[("nvfp4xnvfp4", 1)], lists[("nvfp4xnvfp4", 2)]
    assert (len(nv1), len(nv2)) == (16, 32) and len(lists[("mxfp8xmxfp4", 1)]) == 6

    path = tmp_path / "bl.json"
    from cutlass_layout.api import tactics_blocklist

    tactics_blocklist(res, path)
    doc = json.loads(path.read_text())
    over = {(t.name, t.fusion, bool(t.swap_ab)) for t in res.over_capacity_candidates()}
    assert len(res.over_capacity_candidates()) == 4
    want = sorted(len(nv1) + i for i, c in enumerate(nv2) if c in over)
    assert want == [26, 27] and doc["invalid_tactics"] == {"trtllm::fused_moe::gemm2::MoERunner": want}
