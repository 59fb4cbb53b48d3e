"""--header/--type on a CUTLASS 2.x direct convolution: laid out with the shared memory it
launches with, or refused where that size is only known at run time.

``conv::device::DirectConvolution::run()`` (nvidia-cutlass 4.2.0.0,
``cutlass/conv/device/direct_convolution.h:225-234``) launches with
``params_.get_smem_size()``, which ``DirectConvolutionParams``' constructor computes
(``cutlass/conv/kernel/direct_convolution.h:159``) as ``max(iterator_A.activation_size,
sizeof(Epilogue::SharedStorage)) * kStages + iterator_B.filter_size``, not
``sizeof(SharedStorage)`` (``initialize()`` at :176 sets the attribute for that, a different
number).

The fixture (``fixtures/headers/direct_conv.hpp``): f16, 1x4x8 output tile of 32 channels, 3x3
filter, 3 stages, stride and dilation 1, warp tile 16x32x9, so 64 threads and 8 f16 per
128-bit access. By hand, from ``depthwise_mma_core_with_lane_access_size.h`` (thread maps
``PitchLinearStripminedThreadMap``: 4 threads across 32 channels, 16 rows per iteration):

* activation tile: (4-1)+(3-1)+1 = 6 rows x (8-1)+(3-1)+1 = 10 columns = 60 pixels of 32
  channels; ceil(60/16) = 4 iterations, ``kActivationSize`` = 4 * 8 * 64 * 2 B = 4096 B
  (``depthwise_fprop_activation_tile_access_iterator_direct_conv_fixed_stride_dilation.h:99``);
* filter: 9 rows of 32 channels, 1 iteration, ``kFilterSize`` = 1 * 8 * 64 * 2 B = 1024 B;
* launch size = max(4096, sizeof(Epilogue::SharedStorage) 2048) * 3 + 1024 = 13312 B, while
  ``sizeof(SharedStorage)`` (a union of the mainloop's 1040 B and the epilogue's 2048 B) is
  2048 B.

nvcc checks the sizes, the probe's expression and what the kernel's own ``Params`` returns
from ``get_smem_size()`` (one nvcc build and run of the probe: the full tier).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutlass_layout import UserType, layouts
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.cli import main
from cutlass_layout.reports import layout as layout_report

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "direct_conv.hpp"

pytestmark = pytest.mark.network


#: The kernel and its device wrapper (which stands for it).
SUBJECTS = [UserType(HEADER, "depthwise::Fixed", "sm86"), UserType(HEADER, "depthwise::FixedDevice", "sm86")]


def test_direct_conv_launch_size_by_hand(nc420, capsys):
    """The module docstring's hand figures: 13312 B launched, sizeof(SharedStorage) 2048 B."""
    fixed, device = reps = layouts(SUBJECTS, nc420)
    for r in reps:
        assert r.error is None, r.error
        assert r.subject_kind == "direct_conv"
        assert r.stages == 3
        assert r.kernel.size == 2048 and r.kernel.union  # sizeof(SharedStorage): not what it launches with
        assert r.epilogue.size == 2048
        assert r.launch.value == 13312 and r.smem_bytes == 13312
        assert r.headroom_bytes == 101376 - 13312
        assert (r.launch.file, r.launch.line) == ("cutlass/conv/kernel/direct_convolution.h", 159)
        assert r.launch.expression == (
            "max(IteratorA::kActivationSize 4096, sizeof(Epilogue::SharedStorage) "
            "2048) * kStages 3 + IteratorB::kFilterSize 1024"
        )
    doc = fixed.to_dict()
    assert doc["subject_kind"] == "direct_conv" and doc["smem_bytes"] == 13312
    assert doc["launch"]["value"] == 13312 and doc["headroom_bytes"] == 88064
    layout_report.render(fixed)
    out = capsys.readouterr().out
    assert "Launch size: Params::get_smem_size() = max(IteratorA::kActivationSize 4096" in out
    assert "Launch size 13312 B of 101376 B" in out
    assert "Total 2048 B" not in out
    md = layout_report.to_markdown(fixed)
    assert "**Launch size 13312 B of 101376 B" in md


@pytest.mark.nvcc
@pytest.mark.slow  # the probe built (host and device pass) and run: only a run computes get_smem_size()
def test_direct_conv_launch_size_matches_nvcc(nc420, nvcc):
    reps = layouts(SUBJECTS, nc420)
    v = verify_with_nvcc(SUBJECTS, reps, nc420.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.fields > 10


def test_runtime_sized_direct_conv_is_refused(nc420, capsys):
    """The kOptimized activation iterator sizes its tile from the problem's stride, dilation
    and filter at run time (``depthwise_direct_conv_params.h:124-137``): no compile-time answer."""
    code = main(
        [
            "layout",
            "--cutlass",
            str(nc420.tree.include_root),
            "--arch",
            "sm86",
            "--header",
            str(HEADER),
            "--type",
            "depthwise::Runtime",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "error: depthwise::Runtime: a direct convolution launches with Params::get_smem_size() = "
    )
    assert "(cutlass/conv/kernel/direct_convolution.h:159), not sizeof(SharedStorage)" in lines[0]
    assert lines[0].endswith("not supported")
