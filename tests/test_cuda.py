"""CUDA headers: the pip route works on its own, with the toolkit hidden."""

from __future__ import annotations

import os
import shutil

import pytest

from cutlass_layout import BadInput, Config, layout
from cutlass_layout.engine.loop import Target
from cutlass_layout.sources.cuda import find_cuda, pip_cuda_include


@pytest.fixture
def no_toolkit(monkeypatch):
    """Hide CUDA_HOME, CUDA_PATH and nvcc; find_cuda(system=False) also skips /usr/local/cuda."""
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    nvcc = shutil.which("nvcc")
    if nvcc:
        keep = [p for p in os.environ["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(p, "nvcc"))]
        monkeypatch.setenv("PATH", os.pathsep.join(keep))
    assert shutil.which("nvcc") is None


def test_pip_headers_are_a_dependency():
    inc = pip_cuda_include()
    assert inc is not None, "nvidia-cuda-runtime/cccl/crt wheels are dependencies"
    assert (inc / "cuda_runtime.h").is_file() and (inc / "cccl" / "cuda" / "std").is_dir()


def test_pip_route_alone(no_toolkit):
    cuda = find_cuda(system=False)
    assert cuda.source == "pip"
    assert (cuda.path / "include" / "cuda_runtime.h").is_file()
    assert (cuda.path / "bin").is_dir()
    assert not str(cuda.path.resolve()).startswith("/usr/local/cuda")
    assert find_cuda("pip").path == cuda.path


def test_bad_cuda_path(tmp_path):
    with pytest.raises(BadInput, match="cuda_runtime.h"):
        find_cuda(tmp_path)


@pytest.mark.network
def test_layout_with_pip_headers_only(fi072, no_toolkit):
    tgt = Target(tree=fi072.tree, cuda=find_cuda(system=False))
    rep = layout(Config(), tgt)
    assert rep.provenance.cuda_source == "pip"
    assert (rep.stages, rep.mainloop.size, rep.epilogue.size, rep.kernel.size) == (4, 74752, 9216, 84992)
