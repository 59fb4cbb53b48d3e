"""The facade: ``from cutlass_layout import layout, layouts, sweep, diff, scan`` with the
command line's values and defaults, one-line ``BadInput`` for bad ones, short reprs."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import cutlass_layout as cl
from cutlass_layout import BadInput, Config, diff, layout, layouts, scan, sweep
from handed import SECTION_A


def test_names_are_the_functions_even_after_their_modules_are_imported():
    import cutlass_layout.commands.diff  # noqa: F401
    import cutlass_layout.commands.scan  # noqa: F401
    import cutlass_layout.commands.sweep  # noqa: F401
    from cutlass_layout.commands.sweep import MAX_STAGES, SweepResult

    assert MAX_STAGES == 32 and SweepResult is cl.SweepResult
    assert (cl.layout, cl.layouts, cl.sweep, cl.diff, cl.scan) == (layout, layouts, sweep, diff, scan)
    assert all(callable(f) for f in (layout, layouts, sweep, diff, scan))
    assert sys.modules["cutlass_layout.commands.sweep"].sweep is sweep


def test_one_version():
    assert cl.__version__ == importlib.metadata.version("cutlass-layout")
    from click.testing import CliRunner

    from cutlass_layout.cli import cli

    assert cl.__version__ in CliRunner().invoke(cli, ["--version"]).output


def test_config_values_as_the_command_line_takes_them():
    from cutlass_layout.config import config_from

    assert config_from("128x256x128", preset="trtllm-moe") == Config(tile=(128, 256, 128), preset="trtllm-moe")
    assert config_from(tile="128x128x64B") == Config()  # K in bytes of nvfp4: 128 elements
    assert config_from({"arch": "SM90", "kernel": "dense", "stages": "3"}) == \
        Config(arch="sm90", kernel="dense", stages=3)
    assert config_from(tile=(128, 64, 128), stages=3) == Config(tile=(128, 64, 128), stages=3)
    assert repr(Config(tile=(128, 256, 128), preset="trtllm-moe")) == \
        "Config(tile=(128, 256, 128), preset='trtllm-moe')"


BAD = [
    (lambda: layout("128x0x128", cutlass="/nonexistent"), "tile"),
    (lambda: layout(tiles="128x128x128", cutlass="/nonexistent"), "unknown config key 'tiles'"),
    (lambda: layout(Config(), preset="trtllm-moe", cutlass="/nonexistent"), "not both"),
    (lambda: layout(arch=90, cutlass="/nonexistent"), "arch 90"),
    (lambda: layout(stages=0, cutlass="/nonexistent"), "stages"),
    (lambda: layout(a="fp5", cutlass="/nonexistent"), "unknown element kind"),
    (lambda: layout(cluster="2x1x1", cutlass="/nonexistent"), "only 1x1x1"),
    (lambda: layout(42, cutlass="/nonexistent"), "config 42"),
    (lambda: layout(cutlass="/no/such/dir/include"), "does not exist"),
    (lambda: layouts("128x128x128", "/nonexistent"), "a list of configs"),
    (lambda: sweep(cutlass="/nonexistent"), "give a grid"),
    (lambda: sweep([], cutlass="/nonexistent"), "empty"),
    (lambda: sweep(tile="128x{64,128x128", cutlass="/nonexistent"), "unbalanced"),
    (lambda: sweep(tile="128x128x128", jobs=0, cutlass="/nonexistent"), "jobs 0"),
    (lambda: sweep(tiles="128x128x128"), "unknown grid key"),
    (lambda: diff("/no/such/old", "/no/such/new"), "old (/no/such/old)"),
    (lambda: diff("/a", "/b", structural=False, numeric=False), "nothing to diff"),
    (lambda: diff("/a", "/b", [Config()], tile="128x128x128"), "not both"),
    (lambda: scan("/no/such/header.hpp"), "does not exist"),
]


@pytest.mark.parametrize("call,words", BAD, ids=[w for _, w in BAD])
def test_bad_values_are_one_line_without_flag_names(call, words):
    with pytest.raises(BadInput) as exc:
        call()
    msg = str(exc.value)
    assert words in msg and "\n" not in msg
    assert "--" not in msg, "library messages name no command-line flag"


@pytest.mark.network
def test_layout_takes_flag_values_and_reads_the_budget_by_default(fi068, fi072):
    rep = layout("128x256x128", fi072, preset="trtllm-moe")
    stages, mainloop, epilogue, kernel, _ = SECTION_A[((128, 256, 128), "trtllm-moe")]
    assert (rep.stages, rep.mainloop.size, rep.epilogue.size, rep.kernel.size) == \
        (stages, mainloop, epilogue, kernel)
    assert rep.builder_budget is not None  # on by default, as in the CLI
    assert len(repr(rep)) < 200 and "98304" in repr(rep)
    # test_budget.py: flashinfer 0.6.8 budgets 4 stages of 22656 B for grouped NVFP4 128x32x256
    b = layout(tile="128x32x256", cutlass=fi068).builder_budget
    assert (b.stages, b.stage_bytes) == (4, 22656)
    assert layout("128x32x256", fi068, budget=False).builder_budget is None
    (one, two) = layouts(["128x128x128", {"tile": "128x256x128", "preset": "trtllm-moe"}], fi072)
    assert one.kernel.size == SECTION_A[((128, 128, 128), "flashinfer")][3]
    assert two.kernel.size == kernel


@pytest.mark.network
def test_sweep_and_diff_take_grid_values(fi068, fi072):
    res = sweep(tile="128x{128,256}x128", preset="trtllm-moe", cutlass=fi072)
    assert [r.kernel_bytes for r in res.records] == [89088, 98304]  # handed.md A
    assert repr(res) == "<SweepResult 2 configs: 2 fits, 0 over_capacity, 0 does_not_compile>"
    d = diff(fi068.tree, fi072.tree, structural=False, tile="128x32x256", kernel="grouped")
    (row,) = d.numeric
    # handed.md C and test_diff.py (nvcc): 4 stages, 102400 B -> 3 stages, 84992 B
    assert (row.old.stages, row.old.kernel_bytes, row.new.stages, row.new.kernel_bytes) == \
        (4, 102400, 3, 84992)
    assert d.grid_source == "python" and "1 of 1 configs differ" in repr(d)
