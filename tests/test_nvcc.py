"""Cross-check against nvcc: the same probe compiled by nvcc 13 prints sizeof and offsetof.

Every struct size and every member offset and size that the engine reports for these
SM120 configs (dense and grouped) must equal what nvcc computes. Skips only where nvcc is
missing, and says so.
"""

from __future__ import annotations

import subprocess

import pytest

from cutlass_layout import Config, layouts, probe

pytestmark = [pytest.mark.network, pytest.mark.nvcc]

CONFIGS = [
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


def test_engine_equals_nvcc(fi072, nvcc, tmp_path):
    reps = layouts(CONFIGS, fi072)
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
    src.write_text(probe.render(CONFIGS, with_main=True, offsets=offsets))
    exe = tmp_path / "probe"
    cmd = [nvcc, "-std=c++17", "-arch=sm_120a", "-w", f"-I{fi072.tree.include_root}",
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
        assert sizes[i] == (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages), CONFIGS[i].label()
    assert fields == expected
    assert len(fields) > 200
