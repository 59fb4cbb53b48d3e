"""Cross-check against nvcc: the same probe compiled by nvcc 13 prints sizeof and offsetof.

Every struct size and every member offset and size that the engine reports must equal what
nvcc computes, for SM120 block-scaled configs (dense and grouped, one translation unit) and
SM90 configs (dense cooperative/pingpong, grouped, clusters 2x1x1 and 1x2x1, one
translation unit). Skips only where nvcc is missing, and says so.
"""

from __future__ import annotations

import subprocess

import pytest

from cutlass_layout import Config, layouts, probe

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
]


def _paths(struct, alias):
    """Member paths offsetof can name: public all the way down, no bases or anonymous."""
    out = []

    def visit(fields, prefix):
        for f in fields:
            if "<" in f.name or f.access != "public":
                continue
            name = f"{prefix}.{f.name}" if prefix else f.name
            out.append(((alias, name), (f.offset, f.size)))
            visit(f.fields, name)

    visit(struct.fields, "")
    return out


def check_against_nvcc(configs, tgt, gpu_arch, nvcc, tmp_path):
    reps = layouts(configs, tgt)
    for r in reps:
        assert r.error is None, r.error
    expected = {}
    offsets = []
    for i, r in enumerate(reps):
        want = []
        for alias, s in (("KernelStorage", r.kernel), ("MainloopStorage", r.mainloop),
                         ("EpilogueStorage", r.epilogue)):
            for key, val in _paths(s, alias):
                want.append(key)
                expected[(i,) + key] = val
        offsets.append(want)
    src = tmp_path / "probe.cu"
    src.write_text(probe.render(configs, with_main=True, offsets=offsets))
    exe = tmp_path / "probe"
    cmd = [nvcc, "-std=c++17", f"-arch={gpu_arch}", "-w", f"-I{tgt.tree.include_root}",
           str(src), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    sizes, fields = {}, {}
    for line in out.splitlines():
        kind, i, *rest = line.split()
        if kind == "size":
            sizes[int(i)] = tuple(int(x) for x in rest)
        else:
            alias, path, off, size = rest
            fields[(int(i), alias, path)] = (int(off), int(size))
    for i, r in enumerate(reps):
        assert sizes[i] == (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages), configs[i].label()
    assert fields == expected
    return len(fields)


def test_sm120_engine_equals_nvcc(fi072, nvcc, tmp_path):
    assert check_against_nvcc(SM120, fi072, "sm_120a", nvcc, tmp_path) > 200


def test_sm90_engine_equals_nvcc(nc420, nvcc, tmp_path):
    assert check_against_nvcc(SM90, nc420, "sm_90a", nvcc, tmp_path) > 100
