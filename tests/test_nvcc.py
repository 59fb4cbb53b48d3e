"""Cross-check against nvcc: the same probe compiled by nvcc 13 prints sizeof and offsetof.

Every struct size and every member offset and size that the engine reports must equal what
nvcc computes, for SM120 block-scaled configs (dense and grouped, one translation unit) and
SM90 configs (dense cooperative/pingpong, grouped, clusters 2x1x1 and 1x2x1, one
translation unit). Skips only where nvcc is missing, and says so.
"""

from __future__ import annotations

import pytest

from cutlass_layout import Config, layouts
from cutlass_layout.verify import member_paths, nvcc_numbers

pytestmark = [pytest.mark.network, pytest.mark.nvcc]

SM120 = [
    Config(),
    Config(tile=(128, 256, 128), preset="trtllm-moe"),
    Config(tile=(256, 128, 128)),
    Config(tile=(128, 32, 256)),
    Config(a="mxfp8", b="mxfp8"),
    Config(a="mxfp8", b="mxfp4", preset="trtllm-moe"),
    Config(kernel="dense"),
    Config(kernel="dense", a="mxfp8", b="mxfp8", tile=(256, 128, 128), stages=2),
    Config(kernel="dense", a="mxfp4", b="mxfp4", preset="trtllm-moe"),
    Config(kernel="dense", tile=(128, 64, 128), stages=3, c="f32"),
]

SM90 = [
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="cooperative",
           epilogue_schedule="tma"),
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="pingpong",
           epilogue_schedule="tma"),
    Config(arch="sm90", kernel="dense", a="f16", tile=(128, 256, 64), c="f16", d="f16",
           schedule="cooperative", epilogue_schedule="tma", cluster=(2, 1, 1)),
    Config(arch="sm90", kernel="dense", a="e4m3", tile=(128, 128, 128), schedule="cooperative",
           epilogue_schedule="tma", cluster=(1, 2, 1)),
    Config(arch="sm90", kernel="grouped", tile=(128, 128, 64), c="bf16", schedule="cooperative",
           epilogue_schedule="tma"),
    Config(arch="sm90", kernel="grouped", tile=(64, 128, 64), c="bf16", schedule="pingpong",
           epilogue_schedule="tma"),
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="cooperative",
           epilogue_schedule="nosmem"),
    # every default but the arch (auto schedule and epilogue): test_diff's SM90 numbers
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64)),
]


def check_against_nvcc(configs, tgt, nvcc):
    """Every size, stage count, member offset and size: the engine's against nvcc's."""
    reps = layouts(configs, tgt)
    for r in reps:
        assert r.error is None, r.error
    expected, paths = {}, []
    for i, r in enumerate(reps):
        mine = []
        for alias, s in (("KernelStorage", r.kernel), ("MainloopStorage", r.mainloop),
                         ("EpilogueStorage", r.epilogue)):
            for path, off, size in member_paths(s):
                mine.append((alias, path))
                expected[(i, alias, path)] = (off, size)
        paths.append(mine)
    sizes, fields = nvcc_numbers(configs, tgt.tree.include_root, configs[0].arch, nvcc=nvcc, paths=paths)
    for i, r in enumerate(reps):
        assert sizes[i] == (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages), configs[i].label()
    assert fields == expected
    return len(fields)


def test_sm120_engine_equals_nvcc(fi072, nvcc):
    assert check_against_nvcc(SM120, fi072, nvcc) > 200


def test_sm90_engine_equals_nvcc(nc420, nvcc):
    assert check_against_nvcc(SM90, nc420, nvcc) > 100
