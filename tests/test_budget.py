"""The builder's stage budget, read from the builder in the same headers.

Expected values by hand from the headers:
- SM120 block-scaled, flashinfer-python 0.6.8 (CUTLASS 4.4.2), grouped NVFP4 128x32x256:
  ReducedSmemCapacityBytes = 101376 - 432 = 100944 (scheduler pipeline, 2 descriptors,
  tensormap-ready pipeline; shared/FACTS.md); carve-out = sizeof(epilogue SharedStorage)
  = 9216; per stage (sm100_compute_stage_count_or_override_blockscaled): A 128*256/2 = 16384
  + B 32*256/2 = 4096 + pipeline round_up(16, 128) = 128 + SFA 128*256/16 = 2048 + SFB 0
  (filter_zeros drops SFB's broadcast modes for N < 128) = 22656; (100944 - 9216) / 22656
  = 4 stages; the kernel is 102400 (nvcc, shared/cases/handed.md section C).
- SM90 dense bf16 128x128x64 (nvidia-cutlass 4.2.0.0): Sm90ReducedSmemCapacityBytes =
  232448 - 0; per stage round_up(16384 + 16384, 128) + 16 = 32784; (232448 - 33792) / 32784
  = 6 stages.
"""

from __future__ import annotations

import pytest

from cutlass_layout import Config, layout
from cutlass_layout.cli import main
from cutlass_layout.engine import builder_budget

pytestmark = pytest.mark.network


def test_sm120_builder_overshoots_on_4_4_2(fi068):
    cfg = Config(tile=(128, 32, 256))
    rep = layout(cfg, fi068)
    b = builder_budget(cfg, rep, fi068)
    assert (b.capacity.name, b.capacity.value) == ("ReducedSmemCapacityBytes", 100944)
    assert b.capacity.file == "cutlass/gemm/collective/builders/sm120_blockscaled_mma_builder.inl"
    assert (b.carveout_bytes, b.stage_bytes, b.stages) == (9216, 22656, 4)
    assert b.budgeted_bytes == 9216 + 4 * 22656
    assert rep.kernel.size == 102400 and rep.fits is False


def test_sm90_builder_budget(nc420):
    cfg = Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16",
                 schedule="cooperative", epilogue_schedule="tma")
    rep = layout(cfg, nc420)
    b = builder_budget(cfg, rep, nc420)
    assert (b.capacity.name, b.capacity.value) == ("Sm90ReducedSmemCapacityBytes", 232448)
    assert (b.carveout_bytes, b.stage_bytes, b.stages) == (33792, 32784, 6)


def test_report_explains_the_overshoot(fi068, capsys):
    code = main(["layout", "--cutlass", str(fi068.tree.include_root), "--tile", "128x32x256"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Builder budget" in out and "22656 B per" in out and "= 4 stages" in out
    assert "102400" in out and "over capacity by 1024" in out


def test_sm90_auto_schedule_builder_has_no_budget_and_stays_fast(nc420):
    """The SM90 KernelScheduleAuto builder forwards to another one and has none of the
    members the budget reads: no budget, and no runaway instantiation (it once took all
    memory)."""
    cfg = Config(arch="sm90", kernel="dense", tile=(128, 128, 64))
    rep = layout(cfg, nc420, budget=True)
    assert rep.error is None and rep.builder_budget is None
    assert rep.stages is not None
