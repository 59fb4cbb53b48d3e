"""Every GPU architecture a CUTLASS user meets: its compiler names, its CUTLASS arch tag,
and where its shared-memory capacity per block comes from.

Where the CUTLASS headers define the capacity, the probe reads that constant from the tree
being analysed (never a number of this module):

========================================  ==================================================
``sm90``                                  ``cutlass::gemm::collective::detail::sm90_smem_capacity_bytes``
                                          (``cutlass/gemm/collective/builders/sm90_common.inl``)
``sm100``, ``sm101``, ``sm103``, ``sm110``  ``cutlass::arch::sm100_smem_capacity_bytes`` (``cutlass/arch/arch.h``;
                                          the SM100 builders and kernels use it for all four)
``sm120``, ``sm121``                      ``cutlass::arch::sm120_smem_capacity_bytes`` (``cutlass/arch/arch.h``)
========================================  ==================================================

The CUTLASS 2.x era (SM70 to SM89) has no such constant in the headers: the capacity is the
per-block opt-in limit (``cudaDevAttrMaxSharedMemoryPerBlockOptin``) of the CUDA C++
Programming Guide's "Technical Specifications per Compute Capability", the same numbers as
CUTLASS's own Python table ``SharedMemPerCC`` (``python/cutlass_library/library.py``, KB:
70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 89: 99). Each says so in its report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput


@dataclass(frozen=True)
class Arch:
    """One architecture.

    Attributes:
        name: the flag value (``sm100``).
        cc: compute capability times ten (``100``), as CUTLASS's tags give it
            (``cutlass::arch::Sm100::kMinComputeCapability``).
        gpu_arch: clang's ``--cuda-gpu-arch`` and nvcc's ``-arch`` (``sm_100a``).
        tag: the CUTLASS arch tag its kernels are built with (``cutlass::arch::Sm100``; SM121
            kernels use ``Sm120``, SM110's use ``Sm100``).
        capacity: the qualified name of the capacity constant in the headers, or ``None``
            where the headers define none (then ``optin_bytes``).
        capacity_header: the header that defines ``capacity`` (relative to the include root).
        optin_bytes: for the 2.x era, the per-block opt-in limit in bytes (see the module
            docstring); ``None`` where the headers define the capacity.
        family: the preset family of :mod:`cutlass_layout.subjects.config` (``sm120``, ``sm90``,
            ``sm100``), or ``None`` (CUTLASS 2.x era: lay out your own kernel type).
    """

    name: str
    cc: int
    gpu_arch: str
    tag: str
    capacity: str | None
    capacity_header: str | None
    optin_bytes: int | None = None
    family: str | None = None

    @property
    def optin_source(self) -> str:
        """Where :attr:`optin_bytes` comes from, in words (empty when the headers define
        the capacity)."""
        if self.optin_bytes is None:
            return ""
        return (
            f"the headers define no capacity for {self.name}: the CUDA C++ Programming "
            f"Guide's per-block opt-in limit for compute capability {self.cc // 10}.{self.cc % 10} "
            f"(cudaDevAttrMaxSharedMemoryPerBlockOptin), {self.optin_bytes // 1024} KB, as in "
            f"CUTLASS's SharedMemPerCC[{self.cc}] (python/cutlass_library/library.py)"
        )


_SM90 = (
    "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes",
    "cutlass/gemm/collective/builders/sm90_common.inl",
)
_SM100 = ("cutlass::arch::sm100_smem_capacity_bytes", "cutlass/arch/arch.h")
_SM120 = ("cutlass::arch::sm120_smem_capacity_bytes", "cutlass/arch/arch.h")

#: Every arch ``--arch`` takes, by name, oldest first.
ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch("sm70", 70, "sm_70", "cutlass::arch::Sm70", None, None, 96 * 1024),
        Arch("sm72", 72, "sm_72", "cutlass::arch::Sm72", None, None, 96 * 1024),
        Arch("sm75", 75, "sm_75", "cutlass::arch::Sm75", None, None, 64 * 1024),
        Arch("sm80", 80, "sm_80", "cutlass::arch::Sm80", None, None, 163 * 1024),
        Arch("sm86", 86, "sm_86", "cutlass::arch::Sm86", None, None, 99 * 1024),
        Arch("sm87", 87, "sm_87", "cutlass::arch::Sm80", None, None, 163 * 1024),
        Arch("sm89", 89, "sm_89", "cutlass::arch::Sm89", None, None, 99 * 1024),
        Arch("sm90", 90, "sm_90a", "cutlass::arch::Sm90", *_SM90, family="sm90"),
        Arch("sm100", 100, "sm_100a", "cutlass::arch::Sm100", *_SM100, family="sm100"),
        Arch("sm101", 101, "sm_101a", "cutlass::arch::Sm100", *_SM100, family="sm100"),
        Arch("sm103", 103, "sm_103a", "cutlass::arch::Sm100", *_SM100, family="sm100"),
        Arch("sm110", 110, "sm_110a", "cutlass::arch::Sm100", *_SM100, family="sm100"),
        Arch("sm120", 120, "sm_120a", "cutlass::arch::Sm120", *_SM120, family="sm120"),
        Arch("sm121", 121, "sm_121a", "cutlass::arch::Sm120", *_SM120, family="sm120"),
    )
}

#: compute capability x10 -> arch name, for an arch tag read from a type
#: (``ArchTag::kMinComputeCapability``).
BY_CC = {a.cc: a.name for a in ARCHS.values()}


def arch(name: str) -> Arch:
    """The :class:`Arch` named ``name`` (``sm100``); :class:`BadInput` naming the choices
    otherwise."""
    try:
        return ARCHS[name]
    except (KeyError, TypeError):
        raise BadInput(f"unknown arch {name!r}: choose {', '.join(ARCHS)}") from None


def from_cc(cc: int) -> Arch | None:
    """The arch of an arch tag's ``kMinComputeCapability`` (``100`` -> sm100), or ``None``."""
    name = BY_CC.get(cc)
    return ARCHS[name] if name else None


def defined_capacities(include_root) -> tuple[str, ...]:
    """The capacity constants of :data:`ARCHS` that the tree at ``include_root`` defines
    (qualified names), read from the headers' text (``cutlass/arch/arch.h``,
    ``cutlass/gemm/collective/builders/sm90_common.inl``): CUTLASS 3.8 has no
    ``sm120_smem_capacity_bytes``, for one. Files that cannot be read define nothing."""
    out = []
    texts: dict[str, str] = {}
    for name, header in dict.fromkeys((a.capacity, a.capacity_header) for a in ARCHS.values() if a.capacity):
        assert name is not None and header is not None  # an arch with a capacity constant names its header
        if header not in texts:
            try:
                texts[header] = (Path(include_root) / header).read_text(errors="replace")
            except OSError:
                texts[header] = ""
        short = name.rsplit("::", 1)[1]
        if re.search(rf"\b{short}\s*=", texts[header]):
            out.append(name)
    return tuple(out)


def arch_family(cc: int) -> str | None:
    """The family (:attr:`Arch.family`) of the arch of compute capability ``cc`` (times ten:
    ``103`` -> ``sm100``, ``110`` -> ``sm100``, ``121`` -> ``sm120``), as a kernel's mainloop
    dispatch policy names it (``MainloopSm103...``); None for an arch outside :data:`ARCHS` or
    without a family (the CUTLASS 2.x era)."""
    a = from_cc(cc)
    return a.family if a is not None else None


def capacity_of(name: str) -> str | None:
    """The capacity constant a build for the arch ``name`` (``sm103``) is judged against: its
    family's (:attr:`Arch.capacity`; an SM103 or SM110 build's is SM100's), None for a name
    outside :data:`ARCHS` or an arch without a family."""
    a = ARCHS.get(name) if isinstance(name, str) else None
    return ARCHS[a.family].capacity if a is not None and a.family else None


# ---------------------------------------------------------------------------------------
# the archs an audit of a flashinfer install takes

#: The archs an audit takes, each with the arch whose builds (and flags) it reads: SM121 parts
#: run SM120's builds.
AUDIT_ARCHS = {"sm120": "sm120", "sm121": "sm120", "sm100": "sm100", "sm103": "sm103", "sm90": "sm90"}

#: The arch value that asks for every arch an install builds
#: (:func:`cutlass_layout.commands.audit.audit_archs`).
ALL = "all"


def audit_arch(arch) -> str:
    """``arch`` as :data:`AUDIT_ARCHS` names it (lower case, stripped).

    Raises:
        BadInput: an arch an audit does not take (the message lists those it takes).
    """
    arch = str(arch).strip().lower()
    if arch not in AUDIT_ARCHS:
        raise BadInput(
            f"arch {arch!r}: an audit takes sm120, sm121 (sm120's builds), sm100, sm103, sm90, "
            "or all (every arch the install builds)"
        )
    return arch


def arch_list(archs) -> list[str]:
    """The arches of a several-arch audit, as asked: a str is one (``"all"`` included), a
    sequence several; lower case, each once, in the order given.

    Raises:
        BadInput: no arch at all.
    """
    items = [archs] if isinstance(archs, str) else list(archs)
    out = list(dict.fromkeys(str(a).strip().lower() for a in items))
    if not out:
        raise BadInput("no arch to audit: give one or more (or all)")
    return out


def every_arch() -> list[str]:
    """The arches ``all`` tries, ascending: one per build of :data:`AUDIT_ARCHS` (sm121 runs
    sm120's builds, so ``all`` gives sm120 only): sm90, sm100, sm103, sm120."""
    return sorted(dict.fromkeys(AUDIT_ARCHS.values()), key=lambda a: int(a[2:]))


#: The archs whose audit holds the MoE runner's SM80-path kernels (moe_sm80.py).
SM80_PATH_ARCHS = ("sm120", "sm121")


__all__ = [
    "ALL",
    "ARCHS",
    "AUDIT_ARCHS",
    "Arch",
    "BY_CC",
    "SM80_PATH_ARCHS",
    "arch",
    "arch_family",
    "arch_list",
    "audit_arch",
    "capacity_of",
    "defined_capacities",
    "every_arch",
    "from_cc",
]
