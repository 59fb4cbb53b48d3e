"""A user's own kernel or collective type (:class:`UserType`: ``layout --header/--type``) and
its probe block (:func:`user_block`): the header included, ``STAGES`` defined around it where
the type takes a stage count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from ..errors import BadInput
from ..core.files import read_file
from . import archs
from .aliases import NAMESPACE, subject_block
from .config import FAMILY


#: The macro a user header reads its stage count from (see :class:`UserType`).
STAGES_MACRO = "STAGES"
_STAGES_RE = re.compile(rf"\b{STAGES_MACRO}\b")
_DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$", re.S)


@dataclass(frozen=True)
class UserType:
    """A user's own kernel or collective type: a CUTLASS 3.x ``GemmKernel``
    (``GemmUniversal``), ``CollectiveMainloop`` or ``CollectiveEpilogue``, a CUTLASS 2.x kernel
    (``kernel::Gemm``, ``kernel::GemmGrouped``, ``conv::kernel::DirectConvolution``, ...),
    threadblock mainloop or epilogue, a type with a ``GemmKernel`` (``GemmUniversalAdapter``,
    2.x ``device::Gemm``, ``kernel::DefaultGemmGrouped``) or ``UnderlyingKernel`` member (2.x
    conv device wrappers) standing for its kernel, or any other type with a ``SharedStorage``
    (an FMHA kernel), laid out as it is (see :mod:`.probe`'s docstring for how each is told).

    The stage count a header exposes: the header reads the macro ``STAGES``
    (:data:`STAGES_MACRO`) with a default of its own, and passes it wherever the stage count
    goes (``StageCount<STAGES>``, ``DefaultGemmGrouped<..., STAGES, ...>``), or the type name
    takes it as a template argument (``my::Gemm<STAGES>``)::

        #ifndef STAGES
        #define STAGES 4
        #endif

    ``stages=N`` defines ``STAGES`` as N for this type (the probe writes ``#define STAGES N``
    before the header and ``#undef`` after the type); ``None`` leaves the header's default.

    Attributes:
        header: the header that declares it (absolute path); it includes what it needs from
            the CUTLASS tree given with ``--cutlass`` and from ``includes``.
        type: its qualified C++ name (``my::GemmKernel``), template arguments allowed.
        arch: an arch of :mod:`cutlass_layout.subjects.archs` (the capacity it is compared with and
            clang's ``--cuda-gpu-arch``), or ``None``: the arch of the type's own arch tag
            (``ArchTag::kMinComputeCapability``: ``Sm100`` -> sm100), found in the parse.
        stages: the value of ``STAGES``, or ``None``.
        includes: more include directories (``-I``), in order.
        defines: macro definitions (``-D``): ``NAME`` or ``NAME=VALUE``.

    Raises:
        BadInput: the header does not exist, is not text or is empty, the name or the arch is bad, a
            define is malformed, or ``stages`` is given and neither the header nor the type
            name uses ``STAGES``.
    """

    header: Path
    type: str
    arch: str | None = None
    stages: int | None = None
    includes: tuple = ()
    defines: tuple = ()

    def __post_init__(self):
        p = Path(self.header).expanduser()
        if not p.exists():
            raise BadInput(f"header not found: {self.header}")
        data = read_file(p, what="header")  # a regular file, readable, within the limit
        head = data[:65536]
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 3:  # not a character cut at 64 KiB
                raise BadInput(f"{self.header} is not a text header (not UTF-8)") from None
        if b"\0" in head:
            raise BadInput(f"{self.header} is a binary file, not a header")
        if not data.strip():
            raise BadInput(f"{self.header} is an empty file: it declares no type (nothing to lay out)")
        object.__setattr__(self, "header", p.resolve())
        if (
            not isinstance(self.type, str)
            or not self.type
            or not all(part.isidentifier() or part == "" for part in self.type.split("<")[0].split("::"))
        ):
            raise BadInput(f"type {self.type!r}: give a qualified C++ type name")
        if self.arch is not None:
            archs.arch(self.arch)  # BadInput naming the choices
        if self.stages is not None and (
            isinstance(self.stages, bool) or not isinstance(self.stages, int) or self.stages < 1
        ):
            raise BadInput(f"stages {self.stages!r}: give auto or a positive integer")
        incs = []
        for d in self.includes:
            q = Path(d).expanduser()
            if not q.is_dir():
                raise BadInput(f"include directory not found: {d}")
            incs.append(str(q.resolve()))
        object.__setattr__(self, "includes", tuple(incs))
        for d in self.defines:
            if not isinstance(d, str) or not _DEFINE_RE.match(d) or "\n" in d:
                raise BadInput(f"define {d!r}: write NAME or NAME=VALUE")
        object.__setattr__(self, "defines", tuple(self.defines))
        if self.stages is not None and not self.takes_stages:
            raise BadInput(
                f"stages {self.stages}: neither {p.name} nor the type name uses the "
                f"{STAGES_MACRO} macro (write #ifndef {STAGES_MACRO} / #define "
                f"{STAGES_MACRO} N / #endif in the header and pass {STAGES_MACRO} as the "
                "stage count)"
            )

    @property
    def takes_stages(self) -> bool:
        """Whether the header or the type name uses the ``STAGES`` macro (the header itself is
        read, not what it includes)."""
        if _STAGES_RE.search(self.type):
            return True
        try:
            return bool(_STAGES_RE.search(self.header.read_text(errors="replace")))
        except OSError:
            return False

    @property
    def parse_arch(self) -> str:
        """The arch whose clang flags parse it: ``arch``, or sm120 when it comes from the tag
        (a host pass: the layouts do not depend on it)."""
        return self.arch or "sm120"

    @property
    def family(self) -> str | None:
        """The preset family of ``arch`` (:data:`cutlass_layout.subjects.config.FAMILY`), or ``None``
        (no arch given, or a 2.x-era arch)."""
        return FAMILY.get(self.arch or "")

    def extra_flags(self) -> list[str]:
        """``-I`` and ``-D`` flags for this type's parse (and nvcc's)."""
        return [f"-I{d}" for d in self.includes] + [f"-D{d}" for d in self.defines]

    def unit_key(self) -> tuple:
        """Types with the same key can share a translation unit (a header included twice is
        read once: a different ``STAGES`` needs a unit of its own)."""
        return (str(self.header), self.stages, self.includes, self.defines)

    def with_(self, **changes) -> "UserType":
        """A copy with some attributes changed (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)

    def label(self) -> str:
        """``my::Gemm from my_gemm.h (sm120, STAGES=3)`` (``arch of its tag`` where no arch
        is given)."""
        st = "" if self.stages is None else f", {STAGES_MACRO}={self.stages}"
        return f"{self.type} from {self.header.name} ({self.arch or 'arch of its tag'}{st})"

    def to_dict(self) -> dict:
        """``{header, type, arch}`` (the ``config`` object of its reports), with ``stages``,
        ``includes`` and ``defines`` where given."""
        d: dict[str, Any] = {"header": str(self.header), "type": self.type, "arch": self.arch}
        if self.stages is not None:
            d["stages"] = self.stages
        if self.includes:
            d["includes"] = list(self.includes)
        if self.defines:
            d["defines"] = list(self.defines)
        return d


def user_capacity(user: "UserType") -> str | None:
    """The ``capacity`` argument of :func:`subject_block` for a user type: its arch's
    constant, the documented number of a 2.x-era arch, or ``None`` (arch from the tag)."""
    if user.arch is None:
        return None
    a = archs.arch(user.arch)
    return a.capacity if a.capacity else str(a.optin_bytes)


def user_block(user: "UserType", index: int, capacities: tuple[str, ...] = ()) -> str:
    """A probe namespace that lays out a user's own type from their header (``STAGES``
    defined around it when the type has ``stages``; ``capacities``: the constants the tree
    defines, for a type whose arch comes from its tag)."""
    name = user.type if user.type.startswith("::") else "::" + user.type
    define = undef = ""
    if user.stages is not None:
        define = f'#pragma push_macro("{STAGES_MACRO}")\n#undef {STAGES_MACRO}\n#define {STAGES_MACRO} {user.stages}\n'
        undef = f'#pragma pop_macro("{STAGES_MACRO}")\n'
    return f"""
// {user.label()}
{define}#include "{user.header}"
namespace {NAMESPACE}{index} {{
{subject_block(name, user_capacity(user), capacities=capacities)}}}  // namespace {NAMESPACE}{index}
{undef}"""
