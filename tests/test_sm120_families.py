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
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.reports.sweep import summary
from cutlass_layout.subjects.builders import config_block, kernel_schedule

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
    assert ("cutlass::detail::Sm120BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::K, cute::UMMA::Major::K>") in fi
    assert "cutlass::gemm::KernelScheduleSm120Blockwise" in fi and SM120[0].element_c == "bf16"
    vl = config_block(SM120[2], 0)
    assert "Sm120BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::MN" in vl
    assert "KernelScheduleAuto" in vl and SM120[2].element_c == "void"
    assert kernel_schedule(SM120[6]) == "cutlass::gemm::KernelSparseTmaWarpSpecializedNvf4Sm120"
    sp = config_block(SM120[6], 0)
    assert "OpClassBlockScaledSparseTensorOp" in sp and "SparseTmaWarpSpecializedCooperativeSm120" in sp
    assert SM120[6].alignment("a") == 64 and SM120[6].alignment("b") == 32  # as example 80b


@pytest.mark.parametrize(
    "kw,words",
    [
        (dict(a="e4m3"), "scale granularity"),
        (dict(a="e4m3", scales=(128, 64, 128)), "take 1x128x128, 128x128x128"),
        (dict(a="nvfp4", scales=(1, 128, 128)), "FP8 one"),
        (dict(kernel="sparse", a="mxfp8", b="mxfp4"), "A = B"),
        (dict(arch="sm90", kernel="sparse"), "SM120's block-scaled"),
        (dict(arch="sm90", kernel="dense", d="nvfp4"), "SM100's and SM120's"),
        (dict(preset="vllm"), "blockwise FP8"),
        (dict(c="nvfp4"), "for D"),
    ],
)
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
@pytest.mark.parametrize("tree", [pytest.param("nc420", marks=pytest.mark.slow), "fi072"])  # one version by default
def test_sm120_families_equal_nvcc(tree, request, nvcc):
    tgt = request.getfixturevalue(tree)
    reps = layouts(SM120, tgt)
    for c, r in zip(SM120, reps):
        assert r.error is None, (c.label(), r.error)
    v = verify_with_nvcc(SM120, reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.sizes == 4 * len(SM120) + 3 * 2  # StagesB and StagesE of the sparse ones
    assert v.fields > 300


# The sparse builder takes its own stage count but no explicit StageCount<N>: in every tag
# from v3.9.0 to v4.7.0, sm120_compute_stage_count_or_override_blockscaled_sparse(StageCount<N>)
# returns an int (gemm/collective/builders/sm120_blockscaled_sparse_mma_builder.inl ~57) and the
# builder takes get<1>(PipelineStages) of it (~310), which cute/int_tuple.hpp:56 refuses with
# "Index out of range". The stage search cannot run there, and must say so.
SPARSE = Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256))


@pytest.fixture(scope="module")
def sparse_swept(nc420):
    from cutlass_layout import sweep

    return sweep([SPARSE, SPARSE.with_(stages=2)], nc420, jobs=1)


@pytest.mark.network
def test_sparse_stage_search_could_not_run(sparse_swept):
    from cutlass_layout.reports.sweep import to_csv, to_markdown

    auto, two = sparse_swept.records
    # the auto config as nvcc lays it out (test_sparse_search_against_nvcc): 3 stages, 96256 B
    assert (auto.verdict, auto.stages, auto.kernel_bytes) == ("fits", 3, 96256)
    assert two.verdict == "does_not_compile" and two.error.message == "Index out of range"
    assert two.error.file == "cute/int_tuple.hpp" and two.error.line == 56
    reason = (
        "StageCount<N> does not compile for this builder (N = 2, 3; static_assert failed: "
        "Index out of range (cute/int_tuple.hpp:56))"
    )
    for r in (auto, two):
        assert r.max_stages_that_fit is None and r.max_stages_kernel_bytes is None
        assert r.to_dict()["stage_search"] == {"status": "could not run", "reason": reason}
        assert summary(r).endswith(f"; could not search: {reason}")
        assert "no stage count fits" not in summary(r)
    md = to_markdown(sparse_swept)
    assert "| could not search |" in md and f"could not search: {reason}" in md
    assert "no stage count fits" not in md
    rows = to_csv(sparse_swept).splitlines()
    assert rows[0].split(",").index("stage_search") == rows[1].split(",").index("could not run")


@pytest.mark.network
def test_sparse_stage_search_could_not_run_cli(sparse_swept, nc420, capsys):
    """The command's text, from the layouts the fixture cached."""
    from cutlass_layout.cli import main

    assert (
        main(
            [
                "sweep",
                "--cutlass",
                str(nc420.tree.include_root),
                "--kernel",
                "sparse",
                "--tile",
                "128x128x256",
                "--jobs",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "could not search: StageCount<N> does not compile for this builder" in out
    assert "no stage count fits" not in out


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.nvcc
def test_sparse_search_against_nvcc(sparse_swept, nc420, nvcc):
    """nvcc agrees: StageCount<2> and <3> do not compile (the same assert), the auto config
    is 3 stages and 96256 B."""
    from cutlass_layout.checks.verify import nvcc_numbers

    for n in (2, 3):
        with pytest.raises(
            BadInput,
            match=r"int_tuple\.hpp\(56\): error: static assertion "
            r'failed with "Index out of range"',
        ):
            nvcc_numbers([SPARSE.with_(stages=n)], nc420.tree.include_root, "sm120", nvcc=nvcc)
    sizes, _ = nvcc_numbers([SPARSE], nc420.tree.include_root, "sm120", nvcc=nvcc)
    auto = sparse_swept.records[0]
    assert sizes[0] == (auto.kernel_bytes, auto.mainloop_bytes, auto.epilogue_bytes, auto.stages)
    assert sizes[0][0] == 96256 and sizes[0][3] == 3
