"""The stock SM120 sparse NVFP4 kernel (CUTLASS example 80b, tile 128x128x256), through
--header: its stage counts (StagesA/B/E), and --check-kernel not reporting a clang-only
error as "does not compile".

nvcc compiles the kernel's device entry point with this very probe (its front end accepts
``make_fragment_like<ThrMma::Atom::Traits::ValTypeE>`` without ``typename``; clang does not):
``test_nvcc_front_end_accepts_the_kernel`` shows it. Sizes and stage counts are nvcc's, on
two CUTLASS versions (4.2.0 and flashinfer 0.7.2.post1's).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cutlass_layout import UserType, layouts
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.cli import main
from cutlass_layout.cpp.clang import clang_only
from cutlass_layout.model import CompileError
from cutlass_layout.subjects import probe

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "sm120_sparse_nvfp4.hpp"
KERNEL = UserType(HEADER, "example80b::GemmKernel")

pytestmark = pytest.mark.network


def test_clang_only_patterns():
    assert clang_only(CompileError("error", "missing 'typename' prior to dependent type name 'A::B'"))
    assert clang_only(CompileError("error", "no member named 'x' in 'Y'")) is None


def test_stage_counts(fi072):
    rep = layouts([KERNEL], fi072)[0]
    assert rep.error is None
    assert rep.stages == 3 and rep.stage_counts == {"A": 3, "B": 3, "E": 3}
    assert rep.kernel.size == 98304 and rep.mainloop.size == 87040
    assert rep.config["arch"] == "sm120" and rep.capacity_bytes == 101376


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "tree", ["nc420", pytest.param("fi072", marks=pytest.mark.slow)]
)  # a second version: the full tier
def test_sparse_equals_nvcc(tree, request, nvcc):
    tgt = request.getfixturevalue(tree)
    reps = layouts([KERNEL], tgt)
    v = verify_with_nvcc([KERNEL], reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.sizes == 6  # three sizes, StagesA, StagesB, StagesE
    assert v.fields > 20


@pytest.mark.slow
def test_check_kernel_is_not_does_not_compile(fi072, capsys, monkeypatch):
    """``layout --check-kernel`` through the CLI; the report it printed is also read as the
    CLI's ``api.layout`` returned it (one device pass, about 35 s, not two)."""
    from cutlass_layout import api

    seen = []

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    real = api.layout
    monkeypatch.setattr(api, "layout", spy)
    assert (
        main(
            [
                "layout",
                "--cutlass",
                str(fi072.tree.include_root),
                "--header",
                str(HEADER),
                "--type",
                "example80b::GemmKernel",
                "--check-kernel",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "clang-only diagnostic" in out and "does not compile" not in out
    [rep] = seen
    assert rep.error is None and rep.checked == "kernel"
    assert rep.kernel.size == 98304
    assert [e.file for e in rep.clang_only] == ["cutlass/gemm/collective/sm120_blockscaled_sparse_mma_tma.hpp"]
    assert "missing 'typename'" in rep.clang_only[0].message


@pytest.mark.slow
@pytest.mark.nvcc
def test_nvcc_front_end_accepts_the_kernel(fi072, nvcc, tmp_path):
    """The same device entry point through nvcc's front end (cicc, to PTX): no error."""
    src = tmp_path / "kernel.cu"
    src.write_text(probe.render([KERNEL.with_(arch="sm120")]) + probe.kernel_instantiation(0))
    proc = subprocess.run(
        [
            nvcc,
            "-std=c++17",
            "-w",
            "-gencode",
            "arch=compute_120a,code=compute_120a",
            "--ptx",
            f"-I{fi072.tree.include_root}",
            str(src),
            "-o",
            str(tmp_path / "k.ptx"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ValTypeE" not in proc.stderr and shutil.os.path.getsize(tmp_path / "k.ptx") > 0
