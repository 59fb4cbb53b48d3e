"""Per-SM limits read from CCCL's ``cuda/__device/arch_traits.h``: ``cuda::arch_traits<arch_id>()``
is a ``constexpr`` function, so a small translation unit of ``char[1 + value]`` aliases gives
each field as the compiler evaluates it, read as the probe's constants are
(:class:`~cutlass_layout.cpp.clang.ProbeUnit`), one parse per header and arch in a process.

The header ships with CCCL 3.x (CUDA 13.1's ``include/cccl``, flashinfer's
``data/cccl/libcudacxx/include``); CUDA 13.0's toolkit has none.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..model import PerSmLimits
from .clang import ProbeUnit

#: The header, relative to a CCCL include directory.
HEADER = "cuda/__device/arch_traits.h"

#: :class:`PerSmLimits` attribute -> ``cuda::arch_traits_t`` member.
FIELDS = {
    "smem_per_sm": "max_shared_memory_per_multiprocessor",
    "reserved_smem_per_block": "reserved_shared_memory_per_block",
    "max_blocks_per_sm": "max_blocks_per_multiprocessor",
    "max_threads_per_sm": "max_threads_per_multiprocessor",
    "registers_per_sm": "max_registers_per_multiprocessor",
}


def find_header(dirs) -> Path | None:
    """The first ``<dir>/cuda/__device/arch_traits.h`` of ``dirs`` (include directories), or None."""
    for d in dirs:
        p = Path(d) / HEADER
        if p.is_file():
            return p
    return None


def probe_text(arch_id: str) -> str:
    """The translation unit that reads :data:`FIELDS` of ``cuda::arch_traits<arch_id::ARCH>()``
    (``arch_id``: ``sm_120``): ``namespace cl_sm`` holds ``using <attribute> = char[1 + value]``.
    It compiles with nvcc too."""
    t = f"::cuda::arch_traits<::cuda::arch_id::{arch_id}>()"
    return (
        "#include <cuda/__device/arch_traits.h>\nnamespace cl_sm {\n"
        + "".join(f"using {a} = char[1 + {t}.{m}];\n" for a, m in FIELDS.items())
        + "}\n"
    )


@lru_cache(maxsize=None)
def _read(header: Path, mtime: float, arch_id: str) -> PerSmLimits | None:
    include = header.parents[2]  # <include>/cuda/__device/arch_traits.h
    flags = ["-x", "c++", "-std=c++17", "-isystem", str(include)]
    unit = ProbeUnit(probe_text(arch_id), flags, include, filename="cl_arch_traits.cpp")
    if unit.errors():
        return None  # an arch the header does not know, or a header that does not compile alone
    names = unit.aliases("cl_sm")
    if names.keys() != FIELDS.keys():
        return None
    return PerSmLimits(arch_id=arch_id, header=str(header), **{a: ProbeUnit.int_alias(c) - 1 for a, c in names.items()})


def per_sm_limits(header: Path, arch_id: str) -> PerSmLimits | None:
    """The :class:`PerSmLimits` of ``arch_id`` (``sm_90``) as ``header`` states them, or None
    where it does not know the arch (or does not compile alone). Parsed once per process,
    header (and its modification time) and arch."""
    return _read(header, header.stat().st_mtime, arch_id)


__all__ = ["FIELDS", "HEADER", "find_header", "per_sm_limits", "probe_text"]
