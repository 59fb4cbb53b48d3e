"""Every preset family and kernel kind through the command line, with default flags.

A crash with default flags is the worst bug the tool can ship: ``layout --arch sm100`` and
SM120 blockwise FP8 once ended in ``internal error: KeyError: None`` (exit 4), because the
builder-budget block was rendered for families whose budget is not read. Each case runs
``layout`` as a user types it (text), then ``--json`` and ``--format markdown`` (answered
from the results cache), on the default CUTLASS source's version (nvidia-cutlass 4.2.0.0).

The default config's numbers are tests/handed.md's (nvcc); the cases named after a config of
tests/test_nvcc.py, test_sm100.py or test_sm120_families.py are compiled by nvcc there; the
two commands that crashed are compiled with nvcc right here (``--verify nvcc``, exit 4 on
any disagreement).
"""

from __future__ import annotations

import json

import pytest

from cutlass_layout.cli import main
from cutlass_layout.core.progress import is_progress_line

pytestmark = pytest.mark.network

#: (flags, exit code, kernel bytes or None, stages or None, the error's words for exit 3).
#: Kernel bytes and stages where tests/handed.md has them (section A: the default config, 84992 B,
#: 4 stages, nvcc 13.0 on this CUTLASS); the configs named are those the nvcc tests compile.
CASES = [
    # SM120 block-scaled NVFP4: grouped (the default) and dense; tests/handed.md A
    ([], 0, 84992, 4, None),
    (["--kernel", "dense"], 0, None, None, None),
    # sparse: its default tile is 128x128x256 (example 80b's); K 128 the collective's
    # tile_to_shape refuses: an honest "does not compile", exit 3
    (["--kernel", "sparse"], 0, None, None, None),
    (["--kernel", "sparse", "--tile", "128x128x128"], 3, None, None, "tile_to_shape"),
    # SM120 blockwise FP8 (crashed with exit 4): test_sm120_families.py's first config
    (["--a", "e4m3", "--scales", "1x128x128"], 0, None, None, None),
    (["--a", "e4m3", "--scales", "1x128x128", "--kernel", "dense"], 0, None, None, None),
    # block-scale-factor epilogue
    (["--d", "nvfp4"], 0, None, None, None),
    # SM90: dense with every default but the arch (test_nvcc.py's last SM90 config); grouped
    # takes the TMA epilogue by default (test_nvcc.py's SM90 grouped configs); with the auto
    # epilogue it does not compile, as the README says
    (["--arch", "sm90", "--kernel", "dense", "--tile", "128x128x64"], 0, None, None, None),
    (["--arch", "sm90"], 0, None, None, None),
    (["--arch", "sm90", "--epilogue-schedule", "auto"], 3, None, None, "StrideCD must be rank-3"),
    # SM100 (crashed with exit 4): test_sm100.py's first config, then the defaults
    (["--arch", "sm100", "--kernel", "dense", "--a", "bf16", "--tile", "128x128x64"], 0, None, None, None),
    (["--arch", "sm100"], 0, None, None, None),
    (["--arch", "sm100", "--a", "nvfp4"], 0, None, None, None),
    (["--arch", "sm103", "--kernel", "dense", "--a", "mxfp4", "--tile", "128x128x256"], 0, None, None, None),
]


@pytest.mark.parametrize("flags,code,kernel,stages,words", CASES, ids=[" ".join(c[0]) or "defaults" for c in CASES])
def test_every_family_with_default_flags(nc420, capsys, flags, code, kernel, stages, words):
    src = ["--cutlass", str(nc420.tree.include_root)]
    assert main(["layout", *src, *flags]) == code
    out, err = capsys.readouterr()
    if code == 3:  # the report says why, and gives no size
        assert "does not compile" in out and words in out and "internal error" not in out + err
        assert "Total" not in out
        return
    assert not [ln for ln in err.splitlines() if not is_progress_line(ln)]  # a parse says so, nothing else
    assert "Total" in out and "internal error" not in out
    assert main(["layout", *src, *flags, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["error"] is None and rep["verdict"] in ("fits", "exact_fit", "over_capacity")
    assert rep["kernel"]["size"] > 0 and rep["stages"] > 0
    assert rep["kernel"]["size"] == rep["capacity_bytes"] - rep["headroom_bytes"]
    if kernel is not None:
        assert (rep["kernel"]["size"], rep["stages"]) == (kernel, stages)
    assert main(["layout", *src, *flags, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"{rep['kernel']['size']}" in md


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize(
    "flags",
    [
        ["--arch", "sm100", "--kernel", "dense", "--a", "bf16", "--tile", "128x128x64"],
        ["--a", "e4m3", "--scales", "1x128x128"],
    ],
    ids=["sm100-dense-bf16", "sm120-blockwise-fp8"],
)
def test_the_commands_that_crashed_equal_nvcc(nc420, nvcc, capsys, flags):
    """The two commands of the report, default flags plus ``--verify nvcc``: nvcc compiles the
    same probe and every size, stage count and member offset agrees (exit 0, not 4)."""
    assert main(["layout", "--cutlass", str(nc420.tree.include_root), *flags, "--verify", "nvcc"]) == 0
    out = capsys.readouterr().out
    assert "agree" in out.lower()
