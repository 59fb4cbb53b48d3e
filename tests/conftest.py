"""Shared fixtures: real CUTLASS trees from the package index; the session's own cache.

Tests never write outside a temporary cache: unless whoever runs them has set
``CUTLASS_LAYOUT_CACHE`` (then that folder is the cache they chose, and it is kept), the
session points it at a new temporary folder and removes it at the end. Wheels are fetched
with ``pip download`` (:func:`cutlass_layout.sources.fetch_wheel`); those already in the
user cache (``~/.cache/cutlass-layout/wheels``) are linked into the temporary one, read and
never written, so a session does not download them again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_OWN_CACHE: list[Path] = []


def pytest_configure(config):
    """Point ``CUTLASS_LAYOUT_CACHE`` at a temporary folder for the whole session (worker
    processes and subprocesses inherit it), before any test runs."""
    if os.environ.get("CUTLASS_LAYOUT_CACHE"):
        return
    tmp = Path(tempfile.mkdtemp(prefix="cutlass-layout-tests-"))
    os.environ["CUTLASS_LAYOUT_CACHE"] = str(tmp)
    _OWN_CACHE.append(tmp)
    import platformdirs

    user_wheels = Path(platformdirs.user_cache_dir("cutlass-layout")) / "wheels"
    if user_wheels.is_dir():
        for spec in user_wheels.iterdir():
            wheels = sorted(spec.glob("*.whl")) if spec.is_dir() else []
            if wheels:
                (tmp / "wheels" / spec.name).mkdir(parents=True, exist_ok=True)
                (tmp / "wheels" / spec.name / wheels[0].name).symlink_to(wheels[0])


def pytest_unconfigure(config):
    for tmp in _OWN_CACHE:
        shutil.rmtree(tmp, ignore_errors=True)
        os.environ.pop("CUTLASS_LAYOUT_CACHE", None)

from cutlass_layout import resolve_cutlass, target

FLASHINFER_0_7_2 = "flashinfer-python==0.7.2.post1"
FLASHINFER_0_6_8 = "flashinfer-python==0.6.8"
NVIDIA_CUTLASS_4_2 = "nvidia-cutlass==4.2.0.0"


@pytest.fixture(scope="session")
def fi072():
    """Target (CUTLASS tree + CUDA headers) of flashinfer-python 0.7.2.post1 (CUTLASS "4.5.0")."""
    return target(resolve_cutlass(FLASHINFER_0_7_2))


@pytest.fixture(scope="session")
def fi068():
    """Target of flashinfer-python 0.6.8 (CUTLASS 4.4.2)."""
    return target(resolve_cutlass(FLASHINFER_0_6_8))


@pytest.fixture(scope="session")
def nc420():
    """Target of nvidia-cutlass 4.2.0.0 (CUTLASS 4.2.0)."""
    return target(resolve_cutlass(NVIDIA_CUTLASS_4_2))


@pytest.fixture(scope="session")
def nvcc():
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not on PATH: the nvcc cross-check needs it")
    return path
