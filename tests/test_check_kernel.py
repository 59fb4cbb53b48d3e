"""--check-kernel: asserts inside the kernel body (operator()) are instantiated too."""

from __future__ import annotations

import pytest

from cutlass_layout import Config, layout
from cutlass_layout.cli import main

pytestmark = pytest.mark.network


def sm90_coop(m):
    return Config(
        arch="sm90", kernel="dense", tile=(m, 128, 64), c="bf16", schedule="cooperative", epilogue_schedule="tma"
    )


def test_types_only_does_not_see_the_body_assert(nc420):
    rep = layout(sm90_coop(64), nc420)
    assert rep.checked == "types" and rep.error is None


def test_cooperative_tile_m_64_is_not_valid(nc420, capsys):
    argv = [
        "layout",
        "--cutlass",
        str(nc420.tree.include_root),
        "--arch",
        "sm90",
        "--kernel",
        "dense",
        "--tile",
        "64x128x64",
        "--c",
        "bf16",
        "--schedule",
        "cooperative",
        "--epilogue-schedule",
        "tma",
        "--check-kernel",
    ]
    assert main(argv) == 3
    out = capsys.readouterr().out
    # sm90_gemm_tma_warpspecialized_cooperative.hpp, in operator(): "Cooperative kernel
    # requires Tile Size to be greater than or equal to 128 along the M-dimension."
    assert "greater than or equal to 128 along the M-dimension" in out
    assert "cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp" in out
    assert "checked: kernel" in out


@pytest.mark.slow  # a second device pass with bodies (about 20 s): the default tier's is the failing one above
def test_cooperative_tile_m_128_is_valid(nc420):
    rep = layout(sm90_coop(128), nc420, check_kernel_body=True)
    assert rep.error is None and rep.checked == "kernel"
    assert rep.kernel.size == 230400  # tests/handed.md section D
