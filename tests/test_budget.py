"""The builder's stage budget, read from the builder in the same headers.

Expected values by hand from the headers:
- SM120 block-scaled, flashinfer-python 0.6.8 (CUTLASS 4.4.2), grouped NVFP4 128x32x256:
  ReducedSmemCapacityBytes = 101376 - 432 = 100944 (scheduler pipeline, 2 descriptors,
  tensormap-ready pipeline; shared/FACTS.md); carve-out = sizeof(epilogue SharedStorage)
  = 9216; per stage (sm100_compute_stage_count_or_override_blockscaled): A 128*256/2 = 16384
  + B 32*256/2 = 4096 + pipeline round_up(16, 128) = 128 + SFA 128*256/16 = 2048 + SFB 0
  (filter_zeros drops SFB's broadcast modes for N < 128) = 22656; (100944 - 9216) / 22656
  = 4 stages; the kernel is 102400 (nvcc, tests/handed.md section C).
- SM90 dense bf16 128x128x64 (nvidia-cutlass 4.2.0.0): Sm90ReducedSmemCapacityBytes =
  232448 - 0; per stage round_up(16384 + 16384, 128) + 16 = 32784; (232448 - 33792) / 32784
  = 6 stages.
"""

from __future__ import annotations

import pytest

from cutlass_layout import Config, layout
from cutlass_layout.cli import main

pytestmark = pytest.mark.network


def test_sm120_builder_overshoots_on_4_4_2(fi068):
    cfg = Config(tile=(128, 32, 256))
    rep = layout(cfg, fi068)
    b = rep.builder_budget
    assert (b.capacity.name, b.capacity.value) == ("ReducedSmemCapacityBytes", 100944)
    assert b.capacity.file == "cutlass/gemm/collective/builders/sm120_blockscaled_mma_builder.inl"
    assert (b.carveout_bytes, b.stage_bytes, b.stages) == (9216, 22656, 4)
    assert b.budgeted_bytes == 9216 + 4 * 22656
    assert rep.kernel.size == 102400 and rep.fits is False


def test_sm90_builder_budget(nc420):
    cfg = Config(
        arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="cooperative", epilogue_schedule="tma"
    )
    rep = layout(cfg, nc420)
    b = rep.builder_budget
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


HEADERS = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "headers"


@pytest.mark.parametrize("name", ["geforce::Kernel", "geforce::aliased::Kernel"])
def test_header_mode_reads_the_builder_it_names(fi068, name):
    """A user's SM120 kernel (the default preset's config, written in a header: its builder
    named inline as ``CollectiveBuilder<...>::CollectiveOp``, or as an alias) gets the budget
    of the builder that built its mainloop, as the preset does: on CUTLASS 4.4.2 the reduced
    capacity 101376 - 432 = 100944, carve-out 9216 (sizeof its epilogue SharedStorage), per
    stage A 128*128/2 = 8192 + B 8192 + SFA 128*128/16 = 1024 + SFB 1024 + the pipeline
    round_up(16, 128) = 128 (4.4.2's stage function) = 18560; (100944 - 9216) / 18560 = 4."""
    from cutlass_layout import UserType

    rep = layout(UserType(HEADERS / "sm120_nvfp4_grouped.hpp", name), fi068)
    preset = layout(Config(), fi068)
    assert rep.kernel.size == preset.kernel.size == 84992  # tests/handed.md section A
    b, p = rep.builder_budget, preset.builder_budget
    assert b is not None and (b.capacity.name, b.capacity.value) == ("ReducedSmemCapacityBytes", 100944)
    assert (b.carveout_bytes, b.stage_bytes, b.stages) == (p.carveout_bytes, p.stage_bytes, p.stages)
    assert (b.carveout_bytes, b.stage_bytes, b.stages) == (9216, 18560, 4)


def test_header_mode_explicit_stage_count_has_no_budget(nc420):
    from cutlass_layout import UserType

    rep = layout(UserType(HEADERS / "user_kernel.hpp", "my_project::ReluGemm"), nc420)
    assert rep.stages == 5 and rep.builder_budget is None  # StageCount<5>: no budget


def test_a_budget_that_does_not_compile_leaves_the_layout(fi072, monkeypatch):
    """The builder's budget is read in the layout's own parse; an error inside the budget's
    block (here one put there on purpose) is the budget's, not the config's: the config is
    laid out again without it, with its numbers (tests/handed.md A: 84992 B, 4 stages) and no
    budget, and a config beside it keeps its budget."""
    from cutlass_layout import layouts
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.subjects import aliases, budgets

    real = budgets.budget_block

    def broken(cfg, index):
        text = real(cfg, index)
        if cfg.tile == (128, 128, 128):
            text += (
                f"namespace {aliases.NAMESPACE}{index} {{ using Broken = typename MainloopBuilder::NoSuchMember; }}\n"
            )
        return text

    monkeypatch.setattr(budgets, "budget_block", broken)
    parses = []
    real_parse = engine.parse_probe
    monkeypatch.setattr(engine, "parse_probe", lambda *a: parses.append(a) or real_parse(*a))
    rep, other = layouts([Config(), Config(tile=(128, 256, 128))], fi072, use_cache=False)
    assert rep.error is None and (rep.kernel.size, rep.stages) == (84992, 4)
    assert rep.builder_budget is None
    assert (other.kernel.size, other.stages) == (94208, 3) and other.builder_budget.stages == 3
    assert len(parses) == 2
