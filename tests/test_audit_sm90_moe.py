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

import pytest

from test_audit_sm100_moe import _tactic

#: group0 lines 11 and 25: half, NONE, CTA 128x16x64, swap_ab, clusters 1x1x1 and 2x1x1
NONE_1 = "Sm90, half, half, half, void, EpilogueOpDefault, NONE, 128, 16, 64, 1, 1, 1, false, false, false, true"
NONE_2 = "Sm90, half, half, half, void, EpilogueOpDefault, NONE, 128, 16, 64, 2, 1, 1, false, false, false, true"
#: group28 lines 11 and 39: FP8, FINALIZE, CTA 128x16x128 (128 FP8 = 128 bytes), f16 out, swap_ab
FIN = ("Sm90, __nv_fp8_e4m3, __nv_fp8_e4m3, half, void, EpilogueOpDefault, FINALIZE, 128, 16, 128, "
       "{m}, {n}, 1, false, false, false, true")


def test_sm90_ids_name_a_cluster_other_than_1x1x1(tmp_path):
    assert _tactic(tmp_path, NONE_1).id == "moe/CtaShape128x16x128B/f16xf16/f16/none/swap_ab"
    two = _tactic(tmp_path, NONE_2)
    assert (two.id, two.cluster) == ("moe/CtaShape128x16x128B/f16xf16/f16/none/swap_ab/cluster2x1x1", [2, 1, 1])
    ids = {_tactic(tmp_path, FIN.format(m=m, n=n)).id for m, n in ((1, 1), (2, 1), (1, 2), (2, 2))}
    assert ids == {"moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab",
                   "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x1x1",
                   "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster1x2x1",
                   "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x2x1"}


def test_sm120_and_sm100_ids_have_no_cluster_part(tmp_path):
    """SM120's launchers (cluster 1x1x1) and SM100's (2x1x1 is the ``2sm`` part) keep their ids."""
    sm120 = "Sm120, SafeFP4, SafeFP4, half, void, EpilogueOpDefault, NONE, 128, 128, 128, 1, 1, 1, false, false, false, true"
    assert _tactic(tmp_path, sm120).id == "moe/CtaShape128x128x64B/nvfp4xnvfp4/f16/none/swap_ab"
    sm100 = ("Sm100, half, half, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
             "128, 64, 64, 2, 1, 1, false, false, false, false")
    assert _tactic(tmp_path, sm100).id == "moe/CtaShape128x64x128B/f16xf16/f16/none/2sm"


def test_the_cluster_column_tells_the_sm90_twins_apart(tmp_path):
    from cutlass_layout.reports.audit import _columns_and_rows
    from test_audit_sm103_moe import _result

    twins = [_tactic(tmp_path, FIN.format(m=m, n=n)) for m, n in ((1, 1), (2, 1), (1, 2), (2, 2))]
    cols, rows = _columns_and_rows(_result(tmp_path, twins).tactics)
    heads = [c.header for c in cols]
    assert [r[heads.index("cluster")] for r in rows] == ["1x1x1", "2x1x1", "1x2x1", "2x2x1"]
    assert not {"arch tag", "MMA", "epi"} & set(heads)  # no SM10x choices on SM90
    # one cluster: no column
    cols, _ = _columns_and_rows(_result(tmp_path, [_tactic(tmp_path, NONE_1)]).tactics)
    assert "cluster" not in [c.header for c in cols]


def _macro_calls(text: str) -> list[str]:
    """The argument lists of the macro calls of a generated source (each call spans 4 lines)."""
    return [" ".join(m.group(1).split())
            for m in re.finditer(r"INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM\(([^;]*?)\)\s*;", text, re.S)]


@pytest.mark.network
def test_the_360_sm90_moe_launchers_have_360_ids(tmp_path):
    """Every macro call of the SM90 module's generated sources (the install's generator run, no
    parse) named as the audit names it: 360 calls, 360 ids (120 of them with cluster 1x1x1,
    no cluster part)."""
    from cutlass_layout import engine, flashinfer_jit
    from cutlass_layout.sources import resolve_flashinfer

    install = resolve_flashinfer("flashinfer-python==0.7.2.post1")
    builds = flashinfer_jit.jit_modules(install, "sm90", cuda_version=engine.target(install.tree).cuda.version)
    moe = next(m for m in builds.modules if m.name.startswith("fused_moe"))
    calls = [args for p in moe.generated if "/gemm_grouped/90/" in p.as_posix() and "_Mixed_" not in p.name
             for args in _macro_calls(p.read_text())]
    assert len(calls) == 360
    ids = [_tactic(tmp_path, args).id for args in calls]
    assert len(set(ids)) == 360
    assert sum("/cluster" not in i for i in ids) == 120
