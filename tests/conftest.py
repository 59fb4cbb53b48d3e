"""Shared fixtures: real CUTLASS trees from the package index, fetched once and cached.

The wheels are downloaded with ``pip download`` into the user cache dir
(``cutlass_layout.cache.cache_dir``) the first time and reused on every later run.
"""

from __future__ import annotations

import shutil

import pytest

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
