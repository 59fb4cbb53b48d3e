"""The package's one version: the installed distribution's (``pyproject.toml``'s), or
``0+unknown`` where the source tree is run without being installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("cutlass-layout")
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
    VERSION = "0+unknown"

__all__ = ["VERSION"]
