"""The user cache directory: unpacked wheels, downloaded wheels, precompiled headers.

Nothing is ever written into a user's CUTLASS tree or site-packages; everything that is
derived goes below :func:`cache_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir(*parts: str) -> Path:
    """Return (and create) ``<user cache dir>/cutlass-layout/<parts...>``.

    ``CUTLASS_LAYOUT_CACHE`` overrides the base directory (tests use it).
    """
    base = os.environ.get("CUTLASS_LAYOUT_CACHE")
    root = Path(base) if base else Path(platformdirs.user_cache_dir("cutlass-layout"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
