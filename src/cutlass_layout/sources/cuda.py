"""Find CUDA headers for libclang's CUDA mode.

clang's CUDA support wants a CUDA root with ``include/`` and ``bin/``. The order searched:

1. ``--cuda-path`` (``cuda_path=``; the word ``pip`` forces step 6),
2. ``$CUDA_HOME``, then ``$CUDA_PATH``,
3. the toolkit of ``nvcc`` on ``PATH``,
4. ``/usr/local/cuda``,
5. (nothing else on the system),
6. the pip wheels nvidia-cuda-runtime, nvidia-cuda-cccl and nvidia-cuda-crt (dependencies of
   this package), which put the headers under ``nvidia/cu13/include``. clang rejects that
   folder as a CUDA root, so a small synthetic root (an empty ``bin/`` and ``include``
   linked to the wheel's include dir) is made in the user cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import BadInput
from ..core.cache import cache_dir
from ..core.files import read_text


@dataclass(frozen=True)
class CudaHeaders:
    """A CUDA root usable as clang's ``--cuda-path``.

    Attributes:
        path: the root (holds ``include/cuda_runtime.h``).
        source: how it was found (``--cuda-path``, ``CUDA_HOME``, ``CUDA_PATH``, ``nvcc``,
            ``/usr/local/cuda``, ``pip``).
        cccl: ``include/cccl`` when the toolkit keeps CCCL there (CUDA 13), else ``None``.
    """

    path: Path
    source: str
    cccl: Path | None

    @property
    def version(self) -> tuple[int, int]:
        """(major, minor) from ``CUDA_VERSION`` in ``include/cuda.h`` (13050 -> (13, 5));
        (12, 0) when it cannot be read. nvcc defines ``__CUDACC_VER_MAJOR__``/``MINOR__`` to
        this and CUTLASS tests them (e.g. the SM90 collective builders need 12 or later).
        Read once per process."""
        return _cuda_version(self.path)


@lru_cache(maxsize=None)
def _cuda_version(root: Path) -> tuple[int, int]:
    try:
        text = read_text(root / "include" / "cuda.h", limit=False, errors="replace")
    except BadInput:
        return (12, 0)
    m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", text)
    if not m:
        return (12, 0)
    v = int(m.group(1))
    return (v // 1000, (v % 1000) // 10)


def _usable(root: Path) -> bool:
    return (root / "include" / "cuda_runtime.h").is_file()


def _headers(root: Path, source: str) -> CudaHeaders:
    cccl = root / "include" / "cccl"
    return CudaHeaders(path=root, source=source, cccl=cccl if cccl.is_dir() else None)


def pip_cuda_include() -> Path | None:
    """The include dir of the pip CUDA header wheels (``nvidia/cu13/include``, else
    ``nvidia/cuda_runtime/include``), if installed."""
    try:
        import nvidia  # namespace package from the nvidia-cuda-* wheels
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cuda_runtime"):
            inc = Path(base) / sub / "include"
            if (inc / "cuda_runtime.h").is_file():
                return inc
    return None


def _pip_root() -> CudaHeaders | None:
    inc = pip_cuda_include()
    if inc is None:
        return None
    digest = hashlib.sha256(str(inc.resolve()).encode()).hexdigest()[:12]
    root = cache_dir("cuda-root", digest)
    (root / "bin").mkdir(exist_ok=True)
    link = root / "include"
    if not link.is_dir():  # made aside and renamed into place: processes may race here
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".include-"))
        try:
            try:
                (tmp / "include").symlink_to(inc.resolve(), target_is_directory=True)
            except OSError:  # no symlinks (unusual): fall back to a copy of the headers
                shutil.copytree(inc, tmp / "include")
            try:
                os.replace(tmp / "include", link)
            except OSError:  # another process put its own there first
                if not link.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _headers(root, "pip")


def find_cuda(cuda_path: str | os.PathLike | None = None, *, system: bool = True) -> CudaHeaders:
    """Find CUDA headers, in the order of the module docstring.

    Args:
        cuda_path: an explicit CUDA root, or ``"pip"`` to use the pip header wheels.
        system: look at ``CUDA_HOME``/``CUDA_PATH``, nvcc and ``/usr/local/cuda`` (tests turn
            this off to prove the pip route on its own).

    Raises:
        BadInput: an explicit path without ``include/cuda_runtime.h``, or no headers at all.
    """
    if cuda_path is not None and str(cuda_path) != "pip":
        root = Path(cuda_path).expanduser()
        if not _usable(root):
            raise BadInput(f"CUDA path {root}: no include/cuda_runtime.h there")
        return _headers(root.resolve(), "--cuda-path")
    if cuda_path is None and system:
        for var in ("CUDA_HOME", "CUDA_PATH"):
            val = os.environ.get(var)
            if val and _usable(Path(val)):
                return _headers(Path(val).resolve(), var)
        nvcc = shutil.which("nvcc")
        if nvcc:
            root = Path(nvcc).resolve().parent.parent
            if _usable(root):
                return _headers(root, "nvcc")
        if _usable(Path("/usr/local/cuda")):
            return _headers(Path("/usr/local/cuda").resolve(), "/usr/local/cuda")
    found = _pip_root()
    if found is None:
        raise BadInput(
            "no CUDA headers: give a CUDA root (the CUDA path), set CUDA_HOME, or "
            "pip install nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-crt"
        )
    return found
