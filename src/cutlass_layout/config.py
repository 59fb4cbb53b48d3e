"""Kernel configs: what a user asks about, validated, with the C++ names they map to.

This issue's family is the SM120/SM121 block-scaled GEMM: dense
(``cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp``) and grouped / ptr-array
(``cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp``), built with CUTLASS's
``CollectiveBuilder<Sm120, OpClassBlockScaledTensorOp, ...>`` and
``GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace

from .errors import BadInput


@dataclass(frozen=True)
class Element:
    """A block-scaled operand kind.

    Attributes:
        name: the flag value (``nvfp4``, ``mxfp4``, ``mxfp8``).
        cpp: the CUTLASS type passed to the builder (``cutlass::nv_float4_t<...>``).
        bits: bits of one data element in global memory (4 or 8).
        scale: the scale-factor type and vector size, for the report.
    """

    name: str
    cpp: str
    bits: int
    scale: str


ELEMENTS = {
    # block-scaled kinds (SM120/SM121 OpClassBlockScaledTensorOp)
    "nvfp4": Element("nvfp4", "cutlass::nv_float4_t<cutlass::float_e2m1_t>", 4, "ue4m3 per 16"),
    "mxfp4": Element("mxfp4", "cutlass::mx_float4_t<cutlass::float_e2m1_t>", 4, "ue8m0 per 32"),
    "mxfp8": Element("mxfp8", "cutlass::mx_float8_t<cutlass::float_e4m3_t>", 8, "ue8m0 per 32"),
    # plain kinds (SM90 OpClassTensorOp)
    "bf16": Element("bf16", "cutlass::bfloat16_t", 16, ""),
    "f16": Element("f16", "cutlass::half_t", 16, ""),
    "e4m3": Element("e4m3", "cutlass::float_e4m3_t", 8, ""),
    "e5m2": Element("e5m2", "cutlass::float_e5m2_t", 8, ""),
}

#: (A, B) pairs per family. mxfp8 x mxfp4 is SM120's mixed F8F6F4 pair.
VALID_PAIRS = {
    "sm120": {("nvfp4", "nvfp4"), ("mxfp4", "mxfp4"), ("mxfp8", "mxfp8"),
              ("mxfp8", "mxfp4"), ("mxfp4", "mxfp8")},
    "sm90": {("bf16", "bf16"), ("f16", "f16"), ("e4m3", "e4m3"), ("e4m3", "e5m2"),
             ("e5m2", "e4m3"), ("e5m2", "e5m2")},
}

#: Epilogue element kinds (C and D) and their CUTLASS types.
OUTPUTS = {
    "void": ("void", 0),
    "bf16": ("cutlass::bfloat16_t", 16),
    "f16": ("cutlass::half_t", 16),
    "f32": ("float", 32),
}

#: arch -> clang's --cuda-gpu-arch
ARCHS = {"sm120": "sm_120a", "sm121": "sm_121a", "sm90": "sm_90a"}
#: arch -> family (the collective/kernel files and builders used)
FAMILY = {"sm120": "sm120", "sm121": "sm120", "sm90": "sm90"}
DEFAULT_ELEMENT = {"sm120": "nvfp4", "sm90": "bf16"}
SCHEDULES = ("auto", "cooperative", "pingpong")
EPILOGUE_SCHEDULES = ("auto", "tma", "nosmem")
KERNELS = ("dense", "grouped")
PRESETS = ("flashinfer", "trtllm-moe")


@dataclass(frozen=True, repr=False)
class Config:
    """One GEMM kernel config (its repr names only what differs from the default).

    Attributes:
        arch: ``sm120`` or ``sm121`` (both use CUTLASS's ``arch::Sm120`` tag and capacity),
            or ``sm90``.
        kernel: ``dense`` (``Shape<int,int,int,int>`` problem) or ``grouped`` (ptr-array,
            ``GroupProblemShape``).
        a, b: operand kinds, keys of :data:`ELEMENTS`; A defaults to the family's
            (:data:`DEFAULT_ELEMENT`: nvfp4 on SM120, bf16 on SM90), B to A.
        tile: TileShape (M, N, K), K in elements.
        cluster: ClusterShape (M, N, K); only (1, 1, 1) is valid for SM120.
        schedule: mainloop kernel schedule: ``auto`` (``KernelScheduleAuto``), ``cooperative``
            or ``pingpong`` (SM90 ``KernelTmaWarpSpecializedCooperative``/``Pingpong`` and their
            ``KernelPtrArray...`` twins for grouped kernels).
        epilogue_schedule: ``auto`` (the preset's), ``tma`` (``TmaWarpSpecialized*``) or
            ``nosmem`` (``NoSmemWarpSpecialized``).
        stages: ``None`` for ``StageCountAutoCarveout<sizeof(CollectiveEpilogue::SharedStorage)>``,
            else ``StageCount<stages>``.
        c, d: epilogue C and D element kinds (keys of :data:`OUTPUTS`); ``None`` takes the preset's.
        preset: ``flashinfer`` (C void, EpilogueScheduleAuto, int problem shape) or
            ``trtllm-moe`` (C = D, AlignmentC from A's element, TmaWarpSpecialized epilogue,
            int64_t problem shape), as in the two flavours of shared/cases/handed.md.
    """

    arch: str = "sm120"
    kernel: str = "grouped"
    a: str | None = None
    b: str | None = None
    tile: tuple[int, int, int] = (128, 128, 128)
    cluster: tuple[int, int, int] = (1, 1, 1)
    stages: int | None = None
    c: str | None = None
    d: str | None = None
    preset: str = "flashinfer"
    schedule: str = "auto"
    epilogue_schedule: str = "auto"

    @property
    def family(self) -> str:
        """``sm120`` (SM120/SM121 block-scaled) or ``sm90``."""
        return FAMILY[self.arch]

    def __post_init__(self):
        if self.arch in FAMILY:  # unknown archs are reported by validate()
            if self.a is None:
                object.__setattr__(self, "a", DEFAULT_ELEMENT[FAMILY[self.arch]])
            if self.b is None:
                object.__setattr__(self, "b", self.a)
        validate(self)

    # -- derived C++ pieces -------------------------------------------------------------
    @property
    def element_c(self) -> str:
        """Epilogue C kind after the preset (``void`` for flashinfer, D's kind for TRT-LLM)."""
        if self.c is not None:
            return self.c
        return "void" if self.preset == "flashinfer" else self.element_d

    @property
    def element_d(self) -> str:
        """Epilogue D kind after the preset (bf16 for both presets)."""
        return self.d if self.d is not None else "bf16"

    def alignment(self, operand: str) -> int:
        """Alignment in elements of A, B, C or D, as the preset's source computes it.

        A/B: 128 bits of the element (32 for fp4, 16 for fp8); in the mixed mxfp8 x mxfp4
        pair the fp4 operand uses 128 (TensorRT-LLM ``AlignmentWeight``). D: 128 bits of D.
        C: 0 for void; flashinfer 128 bits of C; trtllm-moe 128 bits of A's element
        ("we use ElementType here deliberately", moe_gemm_tma_ws_launcher.inl).
        """
        if operand in ("a", "b"):
            el = ELEMENTS[getattr(self, operand)]
            mixed = self.a != self.b and "mxfp8" in (self.a, self.b)
            return 128 if (mixed and el.bits == 4) else 128 // el.bits
        if operand == "d":
            return 128 // OUTPUTS[self.element_d][1]
        if self.element_c == "void":
            return 0
        if self.preset == "trtllm-moe":
            return 128 // ELEMENTS[self.a].bits
        return 128 // OUTPUTS[self.element_c][1]

    def to_dict(self) -> dict:
        """The config as plain JSON values (the ``config`` object of every report)."""
        d = asdict(self)
        d["tile"] = list(self.tile)
        d["cluster"] = list(self.cluster)
        d["stages"] = "auto" if self.stages is None else self.stages
        d["c"] = self.element_c
        d["d"] = self.element_d
        return d

    def label(self) -> str:
        """Short text like ``sm120 grouped nvfp4xnvfp4 128x128x128 stages=auto flashinfer``."""
        m, n, k = self.tile
        st = "auto" if self.stages is None else str(self.stages)
        sched = "" if self.schedule == "auto" else f" {self.schedule}"
        epi = "" if self.epilogue_schedule == "auto" else f" epi={self.epilogue_schedule}"
        cl = "" if self.cluster == (1, 1, 1) else " cluster=" + "x".join(map(str, self.cluster))
        return (f"{self.arch} {self.kernel} {self.a}x{self.b} {m}x{n}x{k}{cl} "
                f"stages={st}{sched}{epi} {self.preset} C={self.element_c} D={self.element_d}")

    def with_(self, **changes) -> "Config":
        """A copy with some attributes changed (validated again)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        default = DEFAULT_ELEMENT.get(FAMILY.get(self.arch, ""))
        skip = {"a": default, "b": self.a}
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if getattr(self, f.name) != skip.get(f.name, f.default)]
        return f"Config({', '.join(parts)})"


#: The largest tile extent or stage count: CUTLASS takes them as ``int`` template arguments.
INT_MAX = 2**31 - 1


def validate(cfg: Config) -> None:
    """Check a config's values; raise :class:`BadInput` with one line naming the bad one."""
    if cfg.arch not in ARCHS:
        raise BadInput(f"unknown arch {cfg.arch!r}: this family supports {', '.join(ARCHS)}")
    if cfg.kernel not in KERNELS:
        raise BadInput(f"unknown kernel {cfg.kernel!r}: choose dense or grouped")
    for op in ("a", "b"):
        if getattr(cfg, op) not in ELEMENTS:
            raise BadInput(
                f"unknown element kind {getattr(cfg, op)!r} for {op.upper()}: "
                f"choose {', '.join(ELEMENTS)}"
            )
    pairs = VALID_PAIRS[FAMILY[cfg.arch]]
    if (cfg.a, cfg.b) not in pairs:
        kinds = sorted({x for p in pairs for x in p})
        raise BadInput(
            f"A={cfg.a} with B={cfg.b} is not a pair {cfg.arch} supports "
            f"(element kinds there: {', '.join(kinds)})"
        )
    for op in ("c", "d"):
        v = getattr(cfg, op)
        if v is not None and v not in OUTPUTS:
            raise BadInput(f"unknown element kind {v!r} for {op.upper()}: choose {', '.join(OUTPUTS)}")
    if cfg.d == "void":
        raise BadInput("D cannot be void")
    if cfg.preset not in PRESETS:
        raise BadInput(f"unknown preset {cfg.preset!r}: choose {', '.join(PRESETS)}")
    if len(cfg.tile) != 3 or any((not isinstance(x, int)) or x <= 0 for x in cfg.tile):
        raise BadInput(f"tile {cfg.tile!r}: M, N and K must be positive integers")
    if any(x > INT_MAX for x in cfg.tile):
        raise BadInput(f"tile {'x'.join(map(str, cfg.tile))}: M, N and K must be at most {INT_MAX} "
                       "(the kernel takes them as int)")
    if len(cfg.cluster) != 3 or any((not isinstance(x, int)) or x <= 0 for x in cfg.cluster):
        raise BadInput(f"cluster {cfg.cluster!r}: M, N and K must be positive integers")
    c = "x".join(map(str, cfg.cluster))
    if FAMILY[cfg.arch] == "sm120" and tuple(cfg.cluster) != (1, 1, 1):
        raise BadInput(
            f"cluster {c}: SM120/SM121 GEMMs have no thread-block clusters; only 1x1x1 is valid"
        )
    if cfg.cluster[2] != 1 or cfg.cluster[0] * cfg.cluster[1] > 16:
        raise BadInput(f"cluster {c}: K must be 1 and M*N at most 16")
    if cfg.schedule not in SCHEDULES:
        raise BadInput(f"unknown schedule {cfg.schedule!r}: choose {', '.join(SCHEDULES)}")
    if cfg.epilogue_schedule not in EPILOGUE_SCHEDULES:
        raise BadInput(f"unknown epilogue schedule {cfg.epilogue_schedule!r}: "
                       f"choose {', '.join(EPILOGUE_SCHEDULES)}")
    if FAMILY[cfg.arch] == "sm120" and cfg.schedule != "auto":
        raise BadInput(f"schedule {cfg.schedule!r}: SM120 block-scaled GEMMs take auto here")
    if cfg.stages is not None and (not isinstance(cfg.stages, int) or cfg.stages < 1):
        raise BadInput(f"stages {cfg.stages!r}: give auto or a positive integer")
    if cfg.stages is not None and cfg.stages > INT_MAX:
        raise BadInput(f"stages {cfg.stages}: at most {INT_MAX} (StageCount<N> takes an int)")


_TILE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*([bB])?\s*$")


def _shape_hint(text: str) -> str:
    if "{" in text or "," in text:
        return ("; braces and lists expand in sweep, diff and audit (quote them there: "
                "'128x{128,256}x64B'); layout takes one tile")
    return ""


def split_tile(text: str) -> tuple[int, int, int, bool]:
    """``MxNxK`` or ``MxNxKB`` -> (M, N, K, K counted in bytes?), as typed (K not converted).

    Only a capital ``B`` means bytes (``128x128x64B``, as TensorRT-LLM's ``CtaShape128x128x64B``
    names it); a lower-case ``b`` is refused rather than guessed.

    Raises:
        BadInput: not three positive integers, or a lower-case ``b``.
    """
    m = _TILE_RE.match(text or "")
    if not m:
        raise BadInput(f"tile {text!r}: write MxNxK (K in elements) or MxNxKB (K in bytes)"
                       + _shape_hint(text or ""))
    if m.group(4) == "b":
        raise BadInput(f"tile {text!r}: K in bytes is written with a capital B "
                       f"({text.strip()[:-1]}B); a lower-case b is not read as bytes")
    dims = [int(g) for g in m.groups()[:3]]
    if any(x <= 0 for x in dims):
        raise BadInput(f"tile {text!r}: M, N and K must be positive")
    return dims[0], dims[1], dims[2], m.group(4) == "B"


def parse_tile(text: str, a: str = "nvfp4") -> tuple[int, int, int]:
    """Parse ``MxNxK`` (K in elements) or ``MxNxKB`` (K in bytes of A's element).

    ``128x128x64B`` with nvfp4 A is K = 128 elements, as TensorRT-LLM and flashinfer name
    tactics (``CtaShape128x128x64B``). Only a capital ``B`` means bytes (:func:`split_tile`).

    Raises:
        BadInput: not three positive integers, a lower-case ``b``, or an unknown A.
    """
    m, n, k, in_bytes = split_tile(text)
    if in_bytes:
        if a not in ELEMENTS:
            raise BadInput(f"unknown element kind {a!r} for A: choose {', '.join(ELEMENTS)}")
        k = k * 8 // ELEMENTS[a].bits
    return m, n, k


def tile_text(tile, a: str | None = None, in_bytes: bool = False) -> str:
    """``MxNxK`` of a tile (K in elements), or with ``in_bytes`` ``MxNxKB``: K in bytes of
    A's element (the unit TensorRT-LLM names its tactics in), where A's width is known and K
    is a whole number of bytes; else K in elements."""
    m, n, k = tile
    if in_bytes and a in ELEMENTS and (k * ELEMENTS[a].bits) % 8 == 0:
        return f"{m}x{n}x{k * ELEMENTS[a].bits // 8}B"
    return f"{m}x{n}x{k}"


def parse_shape(text: str, what: str = "cluster") -> tuple[int, int, int]:
    """Parse ``AxBxC`` into three positive integers; raise :class:`BadInput` otherwise."""
    m = _TILE_RE.match(text or "")
    if not m or m.group(4):
        raise BadInput(f"{what} {text!r}: write AxBxC, e.g. 1x1x1" + _shape_hint(text or ""))
    dims = tuple(int(g) for g in m.groups()[:3])
    if any(x <= 0 for x in dims):
        raise BadInput(f"{what} {text!r}: each extent must be positive")
    return dims  # type: ignore[return-value]


def parse_stages(text: str | int | None) -> int | None:
    """``auto`` (or None) -> None; a positive integer (or its text) -> that int; else
    :class:`BadInput`."""
    if text is None or (isinstance(text, str) and text.strip().lower() == "auto"):
        return None
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise BadInput(f"stages {text!r}: give auto or a positive integer")
    try:
        n = int(text)
    except ValueError:
        raise BadInput(f"stages {text!r}: give auto or a positive integer") from None
    if n < 1:
        raise BadInput(f"stages {text!r}: give auto or a positive integer")
    return n


#: The keyword names of :func:`config_from_flags`: the ``layout`` command's config flags.
CONFIG_KEYS = ("arch", "kernel", "a", "b", "tile", "cluster", "stages", "c", "d", "preset",
               "schedule", "epilogue_schedule")


def _name(what: str, value) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{what} {value!r}: give it as text, as on the command line")
    return value.lower()


def _shape(what: str, value, a: str) -> tuple[int, int, int]:
    if isinstance(value, str):
        return parse_tile(value, a) if what == "tile" else parse_shape(value, what)
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value):
        return tuple(value)  # type: ignore[return-value]
    raise BadInput(f"{what} {value!r}: write MxNxK, e.g. '128x128x128', or give three integers")


def config_from_flags(*, arch="sm120", kernel="grouped", a=None, b=None, tile="128x128x128",
                      cluster="1x1x1", stages="auto", c=None, d=None, preset="flashinfer",
                      schedule="auto", epilogue_schedule="auto") -> Config:
    """Build a :class:`Config` from the values the command line takes (keyword names = the
    ``layout`` flags, :data:`CONFIG_KEYS`): strings as typed there (``tile="128x64x128B"``,
    ``stages="auto"`` or ``"3"``), or already typed (``tile=(128, 128, 128)``, ``stages=3``
    or ``None``). Raises :class:`BadInput` on a bad value."""
    arch = _name("arch", arch)
    a = _name("A element", a) if a else DEFAULT_ELEMENT.get(FAMILY.get(arch, ""), "nvfp4")
    b = _name("B element", b) if b else a
    return Config(
        arch=arch, kernel=_name("kernel", kernel), a=a, b=b,
        tile=_shape("tile", tile, a), cluster=_shape("cluster", cluster, a),
        stages=parse_stages(stages), c=_name("C element", c) if c else None,
        d=_name("D element", d) if d else None, preset=_name("preset", preset),
        schedule=_name("schedule", schedule),
        epilogue_schedule=_name("epilogue schedule", epilogue_schedule),
    )


def config_from(value=None, **flags) -> Config:
    """A :class:`Config` from what a Python caller gives: a ``Config`` (as is), a tile string
    (``"128x256x128"``, the ``tile`` value), a dict of config values, or nothing, plus
    keyword config values (see :func:`config_from_flags`), the others taking the ``layout``
    command's defaults.

    Raises:
        BadInput: an unknown key, a bad value, or a ``Config`` together with values.
    """
    if isinstance(value, Config):
        if flags:
            raise BadInput("give either a Config or config values, not both")
        return value
    if isinstance(value, str):
        if "tile" in flags:
            raise BadInput(f"tile given twice ({value!r} and {flags['tile']!r})")
        flags = {"tile": value, **flags}
    elif isinstance(value, dict):
        flags = {**value, **flags}
    elif value is not None:
        raise BadInput(f"config {value!r}: give a Config, a tile such as '128x256x128', "
                       "or config values")
    unknown = sorted(set(flags) - set(CONFIG_KEYS))
    if unknown:
        raise BadInput(f"unknown config key {unknown[0]!r}: use {', '.join(CONFIG_KEYS)}")
    return config_from_flags(**{k: v for k, v in flags.items() if v is not None})


DEFAULT = Config()
