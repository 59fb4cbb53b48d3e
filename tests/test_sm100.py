"""SM100/SM103 families: dense and grouped, 1SM and 2SM, BF16/FP8 and block-scaled
NVFP4/MXFP4/MXFP8, clusters, the block-scale-factor epilogue; and an SM100 kernel of one's
own, whose capacity comes from its arch tag.

Every size, stage count and member offset is nvcc's (the same probe given to nvcc 13.0,
its front end's numbers: :func:`cutlass_layout.checks.verify.nvcc_numbers`), on two CUTLASS versions (nvidia-cutlass 4.2.0.0 and flashinfer
0.7.2.post1's 4.5.0). The capacity is ``cutlass::arch::sm100_smem_capacity_bytes = 232448``
(``cutlass/arch/arch.h`` line 44 in both, read by hand), for SM100, SM101, SM103 and SM110.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_nvcc import check_against_nvcc  # every number against nvcc's, one translation unit

from cutlass_layout import BadInput, Config, UserType, layouts
from cutlass_layout.cli import main
from cutlass_layout.subjects.builders import config_block, epilogue_schedule, kernel_schedule

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "sm100_grouped.hpp"

SM100 = [
    Config(arch="sm100", kernel="dense", tile=(128, 128, 64)),
    Config(arch="sm100", kernel="grouped", tile=(256, 128, 64), schedule="2sm", cluster=(2, 1, 1)),
    Config(arch="sm100", kernel="dense", a="e4m3", tile=(128, 256, 128), cluster=(1, 2, 1), preset="trtllm-moe"),
    Config(arch="sm100", kernel="grouped", a="nvfp4", tile=(128, 128, 256)),
    Config(arch="sm100", kernel="dense", a="nvfp4", tile=(256, 256, 256), cluster=(2, 1, 1)),
    Config(arch="sm100", kernel="grouped", a="mxfp8", b="mxfp4", tile=(128, 128, 128)),
    Config(arch="sm100", kernel="dense", a="mxfp4", tile=(128, 128, 256)),
    Config(arch="sm100", kernel="dense", a="nvfp4", tile=(128, 128, 256), d="nvfp4", c="bf16"),
    # SM103 runs SM100 kernels: compiled by nvcc for sm_103a (its own translation unit)
    Config(arch="sm103", kernel="grouped", a="mxfp8", tile=(256, 128, 128), cluster=(2, 1, 1)),
]


def test_schedules_name_the_real_tags():
    two = Config(arch="sm100", kernel="grouped", a="nvfp4", cluster=(2, 1, 1), tile=(256, 128, 256))
    assert two.two_sm
    assert kernel_schedule(two) == "cutlass::gemm::KernelPtrArrayTmaWarpSpecialized2SmNvf4Sm100"
    assert epilogue_schedule(two) == "cutlass::epilogue::PtrArrayTmaWarpSpecialized2Sm"
    one = Config(arch="sm100", kernel="dense")
    assert kernel_schedule(one) == "cutlass::gemm::KernelTmaWarpSpecialized1SmSm100"
    assert epilogue_schedule(one) == "cutlass::epilogue::TmaWarpSpecialized1Sm"
    mixed = Config(arch="sm100", a="mxfp8", b="mxfp4", schedule="1sm", cluster=(2, 1, 1))
    assert kernel_schedule(mixed).endswith("1SmMxf8f6f4Sm100")
    sfd = config_block(Config(arch="sm100", a="nvfp4", d="nvfp4"), 0)
    assert (
        "LinCombBlockScaleFactor<16, cutlass::float_e2m1_t, float, cutlass::float_ue4m3_t, "
        "cutlass::layout::RowMajor, void>"
    ) in sfd
    with pytest.raises(BadInput, match="even cluster M"):
        Config(arch="sm100", schedule="2sm")
    with pytest.raises(BadInput, match="SM90's"):
        Config(arch="sm100", schedule="pingpong")


@pytest.mark.network
def test_sm100_default_capacity_from_the_tag(nc420, capsys):
    """An SM100 ptr-array kernel at auto stages (CUTLASS example 75's 1SM config) without
    --arch: judged against 232448, the tree's sm100_smem_capacity_bytes, not SM120's."""
    assert (
        main(
            [
                "layout",
                "--cutlass",
                str(nc420.tree.include_root),
                "--header",
                str(HEADER),
                "--type",
                "blackwell::GroupedKernel",
                "--depth",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "(sm100, from the type's arch tag" in out
    assert "B of 232448 B (sm100_smem_capacity_bytes, cutlass/arch/arch.h:44)" in out


@pytest.mark.slow
@pytest.mark.network
def test_sm103_and_sm110_are_sm100_kernels(nc420):
    """SM103 and SM110 run SM100 kernels (arch tag Sm100): the same layout, the same capacity
    constant, each parsed for its own --cuda-gpu-arch."""
    base = SM100[3]
    reps = layouts([base, base.with_(arch="sm103"), base.with_(arch="sm110")], nc420)
    assert len({(r.kernel.size, r.stages, r.capacity.name, r.capacity_bytes) for r in reps}) == 1
    assert reps[0].capacity_bytes == 232448
    assert "--cuda-gpu-arch=sm_103a" in reps[1].provenance.flags


#: the default tier's SM100 configs against nvcc: dense BF16 1SM, grouped 2SM, grouped NVFP4 and
#: dense NVFP4 with a block-scale-factor epilogue (the full tier: every one of :data:`SM100`,
#: SM103's in its own sm_103a unit, on both versions)
DEFAULT_TIER = (0, 1, 3, 7)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.parametrize(
    "tree, every",
    [
        ("nc420", False),
        pytest.param("nc420", True, marks=pytest.mark.slow),
        pytest.param("fi072", True, marks=pytest.mark.slow),
    ],
)
def test_sm100_equals_nvcc(tree, every, request, nvcc):
    """Every size, stage count, member offset and size of the SM100 configs and of the kernel
    of one's own, against nvcc: those share one nvcc translation unit for sm_100a (a third
    nvcc run of the same headers, the one :func:`verify_with_nvcc` gives a user type, is
    saved); the SM103 config has its own, for sm_103a (the full tier's; the default tier
    takes :data:`DEFAULT_TIER` of the SM100 ones)."""
    tgt = request.getfixturevalue(tree)
    chosen = SM100 if every else [SM100[k] for k in DEFAULT_TIER]
    sm100 = [c for c in chosen if c.arch == "sm100"] + [UserType(HEADER, "blackwell::GroupedKernel")]
    sm103 = [c for c in chosen if c.arch == "sm103"]
    assert len(sm100) + len(sm103) == len(chosen) + 1 and (sm103 or not every)
    for c, r in zip(sm100 + sm103, layouts(sm100 + sm103, tgt)):
        assert r.error is None, (c.label(), r.error)
        assert r.capacity_bytes == 232448 and r.capacity.name == "sm100_smem_capacity_bytes"
    fields = check_against_nvcc(sm100, tgt, nvcc) + (check_against_nvcc(sm103, tgt, nvcc) if sm103 else 0)
    assert fields > (300 if every else 150)
