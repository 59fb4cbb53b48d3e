"""Cross-check against nvcc: the same probe compiled by nvcc 13 prints sizeof and offsetof.

Every struct size and every member offset and size that the engine reports must equal what
nvcc computes, for SM120 block-scaled configs (dense and grouped, one translation unit) and
SM90 configs (dense cooperative/pingpong, grouped, clusters 2x1x1 and 1x2x1, one
translation unit). Skips only where nvcc is missing, and says so.
"""

from __future__ import annotations

import pytest

from cutlass_layout import Config, layouts
from cutlass_layout.checks.verify import member_paths, nvcc_numbers

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
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="cooperative", epilogue_schedule="tma"),
    Config(arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="pingpong", epilogue_schedule="tma"),
    Config(
        arch="sm90",
        kernel="dense",
        a="f16",
        tile=(128, 256, 64),
        c="f16",
        d="f16",
        schedule="cooperative",
        epilogue_schedule="tma",
        cluster=(2, 1, 1),
    ),
    Config(
        arch="sm90",
        kernel="dense",
        a="e4m3",
        tile=(128, 128, 128),
        schedule="cooperative",
        epilogue_schedule="tma",
        cluster=(1, 2, 1),
    ),
    Config(
        arch="sm90", kernel="grouped", tile=(128, 128, 64), c="bf16", schedule="cooperative", epilogue_schedule="tma"
    ),
    Config(arch="sm90", kernel="grouped", tile=(64, 128, 64), c="bf16", schedule="pingpong", epilogue_schedule="tma"),
    Config(
        arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="cooperative", epilogue_schedule="nosmem"
    ),
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
        for alias, s in (("KernelStorage", r.kernel), ("MainloopStorage", r.mainloop), ("EpilogueStorage", r.epilogue)):
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


@pytest.mark.slow  # a whole probe built (host and device) and run
def test_the_front_end_numbers_are_the_built_probes(fi072, nvcc, tmp_path):
    """:func:`nvcc_numbers` reads the numbers from nvcc's front end (no compile, no run). The
    same probe built by nvcc (host and device pass, linked) and run prints the same numbers:
    two dense SM120 configs and the sparse kernel of tests/test_sm120_sparse.py (its
    StagesB/StagesE), every size, stage count and member."""
    import subprocess

    from test_sm120_sparse import KERNEL

    from cutlass_layout.subjects import probe
    from cutlass_layout.subjects.config import ARCHS

    configs = [SM120[0], SM120[7], KERNEL]
    reps = layouts(configs, fi072)
    paths = [
        [
            (alias, p)
            for alias, s in (
                ("KernelStorage", r.kernel),
                ("MainloopStorage", r.mainloop),
                ("EpilogueStorage", r.epilogue),
            )
            for p, _, _ in member_paths(s)
        ]
        for r in reps
    ]
    sizes, fields = nvcc_numbers(configs, fi072.tree.include_root, "sm120", nvcc=nvcc, paths=paths)
    src = tmp_path / "probe.cu"
    src.write_text(probe.render(configs, with_main=True, offsets=paths))
    subprocess.run(
        [
            nvcc,
            "-std=c++17",
            f"-arch={ARCHS['sm120']}",
            "-w",
            f"-I{fi072.tree.include_root}",
            str(src),
            "-o",
            str(tmp_path / "probe"),
        ],
        check=True,
        capture_output=True,
    )
    printed = subprocess.run([str(tmp_path / "probe")], check=True, capture_output=True, text=True).stdout
    built_sizes, built_fields = {}, {}
    for line in printed.splitlines():
        kind, i, *rest = line.split()
        if kind == "size":
            built_sizes[int(i)] = tuple(int(x) for x in rest)
        else:
            built_fields[(int(i), rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
    assert sizes == built_sizes and len(sizes) == 3
    assert fields == built_fields and len(fields) > 100
    assert any(k[1] == "Stages" for k in fields)  # the sparse mainloops' StagesB / StagesE
