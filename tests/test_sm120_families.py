"""SM120 families besides the block-scaled NVFP4/MXFP4/MXFP8 GEMM: the blockwise/groupwise
FP8 GEMM (``--a e4m3 --scales 1x128x128``: flashinfer's ``gemm_groupwise_sm120.cuh`` and
``group_gemm_fp8_groupwise_sm120.cuh``, vLLM's ``scaled_mm_blockwise_sm120_fp8_dispatch.cuh``),
the block-scale-factor epilogue (D = e2m1 with SFD: CUTLASS example 79d's grouped NVFP4
kernel), and the block-scaled sparse GEMM (``--kernel sparse``, example 80b's schedules) with
its StagesA/B/E.

Every size, stage count (StagesB and StagesE too) and member offset is nvcc's, on two CUTLASS
versions (nvidia-cutlass 4.2.0.0, flashinfer 0.7.2.post1's 4.5.0).
"""

from __future__ import annotations

import pytest

from cutlass_layout import BadInput, Config, layouts
from cutlass_layout.probe import config_block, kernel_schedule
from cutlass_layout.verify import verify_with_nvcc

SM120 = [
    Config(kernel="dense", a="e4m3", scales=(1, 128, 128)),
    Config(kernel="grouped", a="e4m3", scales=(128, 128, 128)),
    Config(kernel="dense", a="e4m3", scales=(1, 128, 128), preset="vllm"),
    Config(kernel="grouped", a="nvfp4", d="nvfp4", c="f16"),  # CUTLASS example 79d
    Config(kernel="dense", a="nvfp4", d="nvfp4"),
    Config(kernel="grouped", a="mxfp8", d="mxfp8", preset="trtllm-moe"),
    Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256)),
    Config(kernel="sparse", a="mxfp8", tile=(128, 128, 128)),
    Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256), d="nvfp4", c="bf16"),
]


def test_blockwise_and_sparse_c_plus_plus():
    fi = config_block(SM120[0], 0)
    assert ("cutlass::detail::Sm120BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::K, "
            "cute::UMMA::Major::K>") in fi
    assert "cutlass::gemm::KernelScheduleSm120Blockwise" in fi and SM120[0].element_c == "bf16"
    vl = config_block(SM120[2], 0)
    assert "Sm120BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::MN" in vl
    assert "KernelScheduleAuto" in vl and SM120[2].element_c == "void"
    assert kernel_schedule(SM120[6]) == "cutlass::gemm::KernelSparseTmaWarpSpecializedNvf4Sm120"
    sp = config_block(SM120[6], 0)
    assert "OpClassBlockScaledSparseTensorOp" in sp and "SparseTmaWarpSpecializedCooperativeSm120" in sp
    assert SM120[6].alignment("a") == 64 and SM120[6].alignment("b") == 32  # as example 80b


@pytest.mark.parametrize("kw,words", [
    (dict(a="e4m3"), "scale granularity"),
    (dict(a="e4m3", scales=(128, 64, 128)), "take 1x128x128, 128x128x128"),
    (dict(a="nvfp4", scales=(1, 128, 128)), "FP8 one"),
    (dict(kernel="sparse", a="mxfp8", b="mxfp4"), "A = B"),
    (dict(arch="sm90", kernel="sparse"), "SM120's block-scaled"),
    (dict(arch="sm90", kernel="dense", d="nvfp4"), "SM100's and SM120's"),
    (dict(preset="vllm"), "blockwise FP8"),
    (dict(c="nvfp4"), "for D"),
])
def test_bad_family_values(kw, words):
    with pytest.raises(BadInput, match=words):
        Config(**kw)


@pytest.mark.network
def test_sparse_preset_stage_counts(nc420):
    rep = layouts([SM120[6]], nc420)[0]
    assert rep.stage_counts == {"A": 3, "B": 3, "E": 3} and rep.stages == 3
    assert rep.to_dict()["stage_counts"] == {"A": 3, "B": 3, "E": 3}


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.parametrize("tree", ["nc420", "fi072"])
def test_sm120_families_equal_nvcc(tree, request, nvcc):
    tgt = request.getfixturevalue(tree)
    reps = layouts(SM120, tgt)
    for c, r in zip(SM120, reps):
        assert r.error is None, (c.label(), r.error)
    v = verify_with_nvcc(SM120, reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.sizes == 4 * len(SM120) + 3 * 2  # StagesB and StagesE of the sparse ones
    assert v.fields > 300
