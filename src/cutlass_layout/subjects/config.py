"""Kernel configs: what a user asks about, validated, with the C++ names they map to.

The preset families (each built with CUTLASS's two ``CollectiveBuilder``s and
``GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>``; the C++ is in
:mod:`cutlass_layout.subjects.probe`):

* ``sm120`` (``--arch sm120|sm121``): block-scaled NVFP4/MXFP4/MXFP8, dense
  (``sm120_blockscaled_mma_tma.hpp``), grouped (``sm120_blockscaled_mma_array_tma.hpp``) and
  sparse (``sm120_blockscaled_sparse_mma_tma.hpp``); blockwise/groupwise-scaled FP8
  (``--a e4m3 --scales MxNxK``: ``sm120_blockwise_mma_builder.inl``, dense and grouped);
* ``sm90`` (``--arch sm90``): BF16/F16/FP8 dense and grouped (``sm90_gmma_builder.inl``);
* ``sm100`` (``--arch sm100|sm101|sm103|sm110``, arch tag ``Sm100``): BF16/F16/FP8
  (``sm100_umma_builder.inl``) and block-scaled NVFP4/MXFP4/MXFP8
  (``sm100_blockscaled_umma_builder.inl``), dense and grouped, 1SM and 2SM, clusters.

The block-scale-factor epilogue (D in NVFP4/MXFP4/MXFP8 with its scale factors SFD,
``LinCombBlockScaleFactor``) is ``--d nvfp4|mxfp4|mxfp8`` on the SM120 and SM100 families.
The CUTLASS 2.x-era archs (SM70 to SM89) have no preset family: lay out such kernels with
``--header/--type`` (:class:`cutlass_layout.subjects.user_type.UserType`). Capacities: :mod:`cutlass_layout.subjects.archs`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace

from ..errors import BadInput
from . import archs


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

BLOCK_SCALED = ("nvfp4", "mxfp4", "mxfp8")
_PLAIN = {("bf16", "bf16"), ("f16", "f16"), ("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")}
_SCALED = {("nvfp4", "nvfp4"), ("mxfp4", "mxfp4"), ("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp8")}

#: (A, B) pairs per family. mxfp8 x mxfp4 is the mixed F8F6F4 pair (SM120 and SM100). On
#: SM120 the FP8 pairs are the blockwise-scaled GEMM (they need ``scales``).
VALID_PAIRS = {
    "sm120": _SCALED | {("e4m3", "e4m3")},
    "sm90": _PLAIN,
    "sm100": _PLAIN | _SCALED,
}

#: Epilogue element kinds (C and D) and their CUTLASS types (bits of one element).
OUTPUTS = {
    "void": ("void", 0),
    "bf16": ("cutlass::bfloat16_t", 16),
    "f16": ("cutlass::half_t", 16),
    "f32": ("float", 32),
    # D with block scale factors (SFD): LinCombBlockScaleFactor (CUTLASS example 79d)
    "nvfp4": ("cutlass::float_e2m1_t", 4),
    "mxfp4": ("cutlass::float_e2m1_t", 4),
    "mxfp8": ("cutlass::float_e4m3_t", 8),
}

#: D kinds that come with block scale factors: kind -> (vector size, scale-factor type), as
#: ``cutlass::epilogue::fusion::LinCombBlockScaleFactor<SFVecSize, ElementD, float, ElementSF,
#: LayoutSF, ElementC>`` takes them (``cutlass/epilogue/fusion/operations.hpp``).
SCALED_OUTPUTS = {
    "nvfp4": (16, "cutlass::float_ue4m3_t"),
    "mxfp4": (32, "cutlass::float_ue8m0_t"),
    "mxfp8": (32, "cutlass::float_ue8m0_t"),
}

#: arch -> clang's --cuda-gpu-arch (every arch of :mod:`cutlass_layout.subjects.archs`)
ARCHS = {name: a.gpu_arch for name, a in archs.ARCHS.items()}
#: arch -> preset family (the collective/kernel files and builders used); the 2.x-era
#: archs have none
FAMILY = {name: a.family for name, a in archs.ARCHS.items() if a.family}
DEFAULT_ELEMENT = {"sm120": "nvfp4", "sm90": "bf16", "sm100": "bf16"}


def default_tile(kernel: str) -> tuple[int, int, int]:
    """The TileShape a config has where none is given: 128x128x128, and 128x128x256 for
    ``sparse`` (the SM120 sparse collective's ``tile_to_shape`` refuses K 128; CUTLASS's example
    80b uses 128x128x256)."""
    return (128, 128, 256) if kernel == "sparse" else (128, 128, 128)


def default_epilogue_schedule(arch: str, kernel: str) -> str:
    """The epilogue schedule a config has where none is given: ``auto`` (the preset's), and
    ``tma`` for an SM90 grouped kernel, whose ``EpilogueScheduleAuto`` builds a no-smem
    epilogue that fails ``StrideCD must be rank-3`` with a ptr-array problem."""
    return "tma" if FAMILY.get(arch) == "sm90" and kernel == "grouped" else "auto"


SCHEDULES = ("auto", "cooperative", "pingpong", "1sm", "2sm")
EPILOGUE_SCHEDULES = ("auto", "tma", "nosmem")
KERNELS = ("dense", "grouped", "sparse")
PRESETS = ("flashinfer", "trtllm-moe", "vllm")
#: Blockwise scale granularities (M, N, K) SM120's ``Sm120BlockwiseScaleConfig`` takes, as
#: flashinfer (``gemm_groupwise_sm120.cuh``: M 1 or 128, N 128, K 128) and vLLM
#: (``scaled_mm_blockwise_sm120_fp8_dispatch.cuh``: 1x128x128) use them.
SM120_SCALES = {(1, 128, 128), (128, 128, 128)}


@dataclass(frozen=True, repr=False)
class Config:
    """One GEMM kernel config (its repr names only what differs from the default).

    Attributes:
        arch: an arch with a preset family (:data:`FAMILY`): ``sm120``/``sm121`` (CUTLASS's
            ``arch::Sm120`` tag and capacity), ``sm90``, ``sm100``/``sm101``/``sm103``/``sm110``
            (``arch::Sm100`` kernels, ``sm100_smem_capacity_bytes``).
        kernel: ``dense`` (``Shape<int,int,int,int>`` problem), ``grouped`` (ptr-array,
            ``GroupProblemShape``) or ``sparse`` (SM120 block-scaled structured-sparse A,
            ``OpClassBlockScaledSparseTensorOp``, dense problem shape).
        a, b: operand kinds, keys of :data:`ELEMENTS`; A defaults to the family's
            (:data:`DEFAULT_ELEMENT`: nvfp4 on SM120, bf16 on SM90 and SM100), B to A.
        tile: TileShape (M, N, K), K in elements; on SM100 the MMA tile the mainloop builder
            takes (a 2SM tile's M spans both SMs: 256 for two 128-row halves). Not given:
            :func:`default_tile` (128x128x128; sparse 128x128x256).
        cluster: ClusterShape (M, N, K); only (1, 1, 1) is valid for SM120.
        schedule: mainloop kernel schedule: ``auto`` (the family's default), ``cooperative``
            or ``pingpong`` (SM90 ``KernelTmaWarpSpecializedCooperative``/``Pingpong`` and their
            ``KernelPtrArray...`` twins for grouped kernels), ``1sm`` or ``2sm`` (SM100
            ``KernelTmaWarpSpecialized1SmSm100``/``2Sm`` and their block-scaled and ptr-array
            twins; ``auto`` there is 2sm when the cluster's M is even, as the builder's
            ``KernelScheduleAuto`` decides).
        epilogue_schedule: ``auto`` (the preset's), ``tma`` (``TmaWarpSpecialized*``) or
            ``nosmem`` (``NoSmemWarpSpecialized*``). Not given: :func:`default_epilogue_schedule`
            (``auto``; ``tma`` for SM90 grouped).
        stages: ``None`` for ``StageCountAutoCarveout<sizeof(CollectiveEpilogue::SharedStorage)>``,
            else ``StageCount<stages>``.
        c, d: epilogue C and D element kinds (keys of :data:`OUTPUTS`); ``None`` takes the
            preset's. D ``nvfp4``/``mxfp4``/``mxfp8`` is D with block scale factors (SFD).
        preset: ``flashinfer`` (C void, EpilogueScheduleAuto, int problem shape; for SM120
            blockwise FP8, C = D and ``KernelScheduleSm120Blockwise`` as flashinfer's
            ``gemm_groupwise_sm120.cuh``), ``trtllm-moe`` (C = D, AlignmentC from A's element,
            TmaWarpSpecialized epilogue, int64_t problem shape), or ``vllm`` (SM120 blockwise
            FP8 only: C void, ``KernelScheduleAuto``, SFA MN-major, as vLLM's
            ``scaled_mm_blockwise_sm120_fp8_dispatch.cuh``).
        scales: blockwise scale granularity (M, N, K) of A's and B's float scales (SM120 FP8:
            one of :data:`SM120_SCALES`); ``None`` for every other kind.
    """

    arch: str = "sm120"
    kernel: str = "grouped"
    a: str | None = None
    b: str | None = None
    tile: tuple[int, int, int] | None = None  # None: default_tile(kernel)
    cluster: tuple[int, int, int] = (1, 1, 1)
    stages: int | None = None
    c: str | None = None
    d: str | None = None
    preset: str = "flashinfer"
    schedule: str = "auto"
    epilogue_schedule: str | None = None  # None: default_epilogue_schedule(arch, kernel)
    scales: tuple[int, int, int] | None = None

    @property
    def family(self) -> str:
        """``sm120`` (SM120/SM121), ``sm90`` or ``sm100`` (SM100/SM101/SM103/SM110)."""
        return FAMILY[self.arch]

    @property
    def block_scaled(self) -> bool:
        """Whether A is a block-scaled kind (NVFP4, MXFP4, MXFP8)."""
        return self.a in BLOCK_SCALED

    @property
    def blockwise(self) -> bool:
        """Whether this is a blockwise-scaled FP8 GEMM (``scales`` given)."""
        return self.scales is not None

    @property
    def two_sm(self) -> bool:
        """SM100: whether the kernel runs 2SM MMAs (``2sm``, or ``auto`` with an even cluster M)."""
        if self.family != "sm100":
            return False
        return self.schedule == "2sm" or (self.schedule == "auto" and self.cluster[0] % 2 == 0)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """:attr:`tile` once constructed (``__post_init__`` gives ``None`` :func:`default_tile`)."""
        assert self.tile is not None
        return self.tile

    def __post_init__(self):
        if self.tile is None:
            object.__setattr__(self, "tile", default_tile(self.kernel))
        if self.epilogue_schedule is None:
            object.__setattr__(self, "epilogue_schedule", default_epilogue_schedule(self.arch, self.kernel))
        if self.arch in FAMILY:  # unknown archs are reported by validate()
            if self.a is None:
                object.__setattr__(self, "a", DEFAULT_ELEMENT[FAMILY[self.arch]])
            if self.b is None:
                object.__setattr__(self, "b", self.a)
        if isinstance(self.scales, list):
            object.__setattr__(self, "scales", tuple(self.scales))
        validate(self)

    # -- derived C++ pieces -------------------------------------------------------------
    @property
    def element_c(self) -> str:
        """Epilogue C kind: ``c`` where given, else the preset's (``void`` for flashinfer and
        vllm, D's kind for TRT-LLM and for flashinfer's blockwise FP8 GEMM; with a block-scaled
        D, ``void`` for flashinfer's non-blockwise GEMMs, else bf16)."""
        if self.c is not None:
            return self.c
        if self.element_d in SCALED_OUTPUTS:
            return "void" if self.preset == "flashinfer" and not self.blockwise else "bf16"
        if self.preset == "vllm" or (self.preset == "flashinfer" and not self.blockwise):
            return "void"
        return self.element_d

    @property
    def element_d(self) -> str:
        """Epilogue D kind: ``d`` where given, else bf16 (every preset's)."""
        return self.d if self.d is not None else "bf16"

    def alignment(self, operand: str) -> int:
        """Alignment in elements of A, B, C or D, as the preset's source computes it.

        A/B: 128 bits of the element (32 for fp4, 16 for fp8); in the mixed mxfp8 x mxfp4
        pair the fp4 operand uses 128 (TensorRT-LLM ``AlignmentWeight``); a sparse kernel's A
        twice that (its A is compressed 2:1; CUTLASS example 80b: 64 for NVFP4). D: 128 bits
        of D. C: 0 for void; flashinfer 128 bits of C; trtllm-moe 128 bits of A's element
        ("we use ElementType here deliberately", moe_gemm_tma_ws_launcher.inl).
        """
        if operand in ("a", "b"):
            el = ELEMENTS[getattr(self, operand)]
            mixed = self.a != self.b and "mxfp8" in (self.a, self.b)
            n = 128 if (mixed and el.bits == 4) else 128 // el.bits
            return 2 * n if (operand == "a" and self.kernel == "sparse") else n
        if operand == "d":
            return 128 // OUTPUTS[self.element_d][1]
        if self.element_c == "void":
            return 0
        if self.preset == "trtllm-moe":
            assert self.a is not None  # __post_init__ set it
            return 128 // ELEMENTS[self.a].bits
        return 128 // OUTPUTS[self.element_c][1]

    def to_dict(self) -> dict:
        """The config as plain JSON values (the ``config`` object of every report)."""
        d = asdict(self)
        d["tile"] = list(self.mnk)
        d["cluster"] = list(self.cluster)
        d["stages"] = "auto" if self.stages is None else self.stages
        d["c"] = self.element_c
        d["d"] = self.element_d
        d["scales"] = None if self.scales is None else list(self.scales)
        return d

    def label(self) -> str:
        """Short text like ``sm120 grouped nvfp4xnvfp4 128x128x128 stages=auto flashinfer
        C=void D=bf16`` (cluster, scales and schedules only where not the default)."""
        m, n, k = self.mnk
        st = "auto" if self.stages is None else str(self.stages)
        sched = "" if self.schedule == "auto" else f" {self.schedule}"
        epi = "" if self.epilogue_schedule == "auto" else f" epi={self.epilogue_schedule}"
        cl = "" if self.cluster == (1, 1, 1) else " cluster=" + "x".join(map(str, self.cluster))
        sc = "" if self.scales is None else " scales=" + "x".join(map(str, self.scales))
        return (
            f"{self.arch} {self.kernel} {self.a}x{self.b} {m}x{n}x{k}{cl}{sc} "
            f"stages={st}{sched}{epi} {self.preset} C={self.element_c} D={self.element_d}"
        )

    def with_(self, **changes) -> "Config":
        """A copy with some attributes changed (validated again)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        default = DEFAULT_ELEMENT.get(FAMILY.get(self.arch, ""))
        skip = {
            "a": default,
            "b": self.a,
            "tile": default_tile(self.kernel),
            "epilogue_schedule": default_epilogue_schedule(self.arch, self.kernel),
        }
        parts = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) != skip.get(f.name, f.default)
        ]
        return f"Config({', '.join(parts)})"


#: The largest tile extent or stage count: CUTLASS takes them as ``int`` template arguments.
INT_MAX = 2**31 - 1


def _shape3(what: str, value) -> None:
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 3
        or any((not isinstance(x, int)) or isinstance(x, bool) or x <= 0 for x in value)
    ):
        raise BadInput(f"{what} {value!r}: M, N and K must be positive integers")


def validate(cfg: Config) -> None:
    """Check a config's values; raise :class:`BadInput` with one line naming the bad one (the
    first of the checks below, in this order, that fails)."""
    fam = _family(cfg)
    _check_kernel(cfg)
    _check_elements(cfg, fam)
    _check_preset(cfg)
    _check_shapes(cfg, fam)
    _check_schedules(cfg, fam)
    _check_stages(cfg)
    _check_sparse(cfg, fam)
    _check_scales(cfg, fam)
    _check_scaled_d(cfg, fam)


def _family(cfg: Config) -> str:
    """The preset family of the config's arch; an unknown arch, or a 2.x-era one (no preset
    family), is refused."""
    a = archs.arch(cfg.arch)  # unknown: BadInput naming every arch
    if a.family is None:
        raise BadInput(
            f"{cfg.arch} is a CUTLASS 2.x-era arch: no preset family builds its kernels; lay out "
            "your own kernel type from its header instead (a user type; its capacity: "
            f"{a.optin_bytes} B per block)"
        )
    return a.family


def _check_kernel(cfg: Config) -> None:
    if cfg.kernel not in KERNELS:
        raise BadInput(f"unknown kernel {cfg.kernel!r}: choose {', '.join(KERNELS)}")


def _check_elements(cfg: Config, fam: str) -> None:
    """A and B: known kinds, a pair the family supports; C and D: known output kinds, D not
    void, C not block-scaled."""
    for op in ("a", "b"):
        if getattr(cfg, op) not in ELEMENTS:
            raise BadInput(f"unknown element kind {getattr(cfg, op)!r} for {op.upper()}: choose {', '.join(ELEMENTS)}")
    pairs = VALID_PAIRS[fam]
    if (cfg.a, cfg.b) not in pairs:
        kinds = sorted({x for p in pairs for x in p})
        raise BadInput(
            f"A={cfg.a} with B={cfg.b} is not a pair {cfg.arch} supports (element kinds there: {', '.join(kinds)})"
        )
    for op in ("c", "d"):
        v = getattr(cfg, op)
        if v is not None and v not in OUTPUTS:
            raise BadInput(f"unknown element kind {v!r} for {op.upper()}: choose {', '.join(OUTPUTS)}")
    if cfg.d == "void":
        raise BadInput("D cannot be void")
    if cfg.c in SCALED_OUTPUTS:
        raise BadInput(
            f"C {cfg.c!r}: block-scaled kinds are for D (with its scale factors); C takes void, bf16, f16 or f32"
        )


def _check_preset(cfg: Config) -> None:
    if cfg.preset not in PRESETS:
        raise BadInput(f"unknown preset {cfg.preset!r}: choose {', '.join(PRESETS)}")


def _check_shapes(cfg: Config, fam: str) -> None:
    """The tile (positive ``int`` extents) and the cluster (none on SM120; K 1, M*N at most 16)."""
    _shape3("tile", cfg.tile)
    if any(x > INT_MAX for x in cfg.mnk):
        raise BadInput(
            f"tile {'x'.join(map(str, cfg.mnk))}: M, N and K must be at most {INT_MAX} (the kernel takes them as int)"
        )
    _shape3("cluster", cfg.cluster)
    c = "x".join(map(str, cfg.cluster))
    if fam == "sm120" and tuple(cfg.cluster) != (1, 1, 1):
        raise BadInput(f"cluster {c}: SM120/SM121 GEMMs have no thread-block clusters; only 1x1x1 is valid")
    if cfg.cluster[2] != 1 or cfg.cluster[0] * cfg.cluster[1] > 16:
        raise BadInput(f"cluster {c}: K must be 1 and M*N at most 16")


def _check_schedules(cfg: Config, fam: str) -> None:
    """Known mainloop and epilogue schedules, the mainloop's one the family takes (a 2SM kernel:
    an even cluster M)."""
    if cfg.schedule not in SCHEDULES:
        raise BadInput(f"unknown schedule {cfg.schedule!r}: choose {', '.join(SCHEDULES)}")
    if cfg.epilogue_schedule not in EPILOGUE_SCHEDULES:
        raise BadInput(f"unknown epilogue schedule {cfg.epilogue_schedule!r}: choose {', '.join(EPILOGUE_SCHEDULES)}")
    if fam == "sm120" and cfg.schedule != "auto":
        raise BadInput(f"schedule {cfg.schedule!r}: SM120 GEMMs take auto here")
    if fam == "sm90" and cfg.schedule in ("1sm", "2sm"):
        raise BadInput(f"schedule {cfg.schedule!r} is SM100's; SM90 takes auto, cooperative or pingpong")
    if fam == "sm100":
        if cfg.schedule in ("cooperative", "pingpong"):
            raise BadInput(f"schedule {cfg.schedule!r} is SM90's; SM100 takes auto, 1sm or 2sm")
        if cfg.two_sm and cfg.cluster[0] % 2:
            c = "x".join(map(str, cfg.cluster))
            raise BadInput(f"cluster {c}: a 2SM kernel needs an even cluster M")


def _check_stages(cfg: Config) -> None:
    if cfg.stages is not None and (isinstance(cfg.stages, bool) or not isinstance(cfg.stages, int) or cfg.stages < 1):
        raise BadInput(f"stages {cfg.stages!r}: give auto or a positive integer")
    if cfg.stages is not None and cfg.stages > INT_MAX:
        raise BadInput(f"stages {cfg.stages}: at most {INT_MAX} (StageCount<N> takes an int)")


def _check_sparse(cfg: Config, fam: str) -> None:
    """The sparse kernel: SM120's block-scaled one, with A = B."""
    if cfg.kernel == "sparse":
        if fam != "sm120" or not cfg.block_scaled:
            raise BadInput("kernel sparse: the sparse preset is SM120's block-scaled one (A nvfp4, mxfp4 or mxfp8)")
        if cfg.a != cfg.b:
            raise BadInput(f"kernel sparse takes A = B (got {cfg.a} x {cfg.b})")


def _check_scales(cfg: Config, fam: str) -> None:
    """Scale granularities: only for SM120's blockwise FP8 GEMM (dense or grouped, not
    trtllm-moe), one it takes, and required there (and by the vllm preset)."""
    if cfg.scales is not None:
        _shape3("scales", cfg.scales)
        if fam != "sm120" or cfg.a not in ("e4m3",):
            raise BadInput("scales: the blockwise-scaled preset is SM120's FP8 one (A e4m3)")
        if tuple(cfg.scales) not in SM120_SCALES:
            ok = ", ".join("x".join(map(str, s)) for s in sorted(SM120_SCALES))
            raise BadInput(f"scales {'x'.join(map(str, cfg.scales))}: SM120 blockwise GEMMs take {ok}")
        if cfg.kernel == "sparse":
            raise BadInput("scales: the blockwise-scaled GEMM is dense or grouped")
        if cfg.preset == "trtllm-moe":
            raise BadInput("preset trtllm-moe is block-scaled; the blockwise FP8 GEMM takes flashinfer or vllm")
    elif fam == "sm120" and not cfg.block_scaled:
        raise BadInput(
            f"A={cfg.a} on {cfg.arch} is the blockwise-scaled FP8 GEMM: give its "
            "scale granularity (scales 1x128x128 or 128x128x128)"
        )
    if cfg.preset == "vllm" and cfg.scales is None:
        raise BadInput(
            "preset vllm is SM120's blockwise FP8 GEMM: give A e4m3 and its scale granularity "
            "(--a e4m3 --scales 1x128x128, or 128x128x128)"
        )


def _check_scaled_d(cfg: Config, fam: str) -> None:
    if cfg.element_d in SCALED_OUTPUTS and fam == "sm90":
        raise BadInput(f"D {cfg.element_d}: the block-scale-factor epilogue is SM100's and SM120's")


_TILE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*([bB])?\s*$")


def _shape_hint(text: str) -> str:
    if "{" in text or "," in text:
        return (
            "; braces and lists expand in sweep, diff and audit (quote them there: "
            "'128x{128,256}x64B'); layout takes one tile"
        )
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
        raise BadInput(f"tile {text!r}: write MxNxK (K in elements) or MxNxKB (K in bytes)" + _shape_hint(text or ""))
    if m.group(4) == "b":
        raise BadInput(
            f"tile {text!r}: K in bytes is written with a capital B "
            f"({text.strip()[:-1]}B); a lower-case b is not read as bytes"
        )
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
    x, y, z = (int(g) for g in m.groups()[:3])
    dims = (x, y, z)
    if any(d <= 0 for d in dims):
        raise BadInput(f"{what} {text!r}: each extent must be positive")
    return dims


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
CONFIG_KEYS = (
    "arch",
    "kernel",
    "a",
    "b",
    "tile",
    "cluster",
    "stages",
    "c",
    "d",
    "preset",
    "schedule",
    "epilogue_schedule",
    "scales",
)


def _name(what: str, value) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{what} {value!r}: give it as text, as on the command line")
    return value.lower()


def _shape(what: str, value, a: str) -> tuple[int, int, int]:
    if isinstance(value, str):
        return parse_tile(value, a) if what == "tile" else parse_shape(value, what)
    if (
        isinstance(value, (tuple, list))
        and len(value) == 3
        and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    ):
        return tuple(value)
    raise BadInput(f"{what} {value!r}: write MxNxK, e.g. '128x128x128', or give three integers")


def config_from_flags(
    *,
    arch="sm120",
    kernel="grouped",
    a=None,
    b=None,
    tile=None,
    cluster="1x1x1",
    stages="auto",
    c=None,
    d=None,
    preset="flashinfer",
    schedule="auto",
    epilogue_schedule=None,
    scales=None,
) -> Config:
    """Build a :class:`Config` from the values the command line takes (keyword names = the
    ``layout`` flags, :data:`CONFIG_KEYS`): strings as typed there (``tile="128x64x128B"``,
    ``stages="auto"`` or ``"3"``, ``scales="1x128x128"`` or ``"none"``), or already typed
    (``tile=(128, 128, 128)``, ``stages=3`` or ``None``). Raises :class:`BadInput` on a bad
    value. ``tile`` and ``epilogue_schedule`` not given (None): the kernel's defaults
    (:func:`default_tile`, :func:`default_epilogue_schedule`)."""
    arch = _name("arch", arch)
    a = _name("A element", a) if a else DEFAULT_ELEMENT.get(FAMILY.get(arch, ""), "nvfp4")
    b = _name("B element", b) if b else a
    return Config(
        arch=arch,
        kernel=_name("kernel", kernel),
        a=a,
        b=b,
        tile=None if tile is None else _shape("tile", tile, a),
        cluster=_shape("cluster", cluster, a),
        stages=parse_stages(stages),
        c=_name("C element", c) if c else None,
        d=_name("D element", d) if d else None,
        preset=_name("preset", preset),
        schedule=_name("schedule", schedule),
        epilogue_schedule=_name("epilogue schedule", epilogue_schedule) if epilogue_schedule else None,
        scales=_scales(scales),
    )


def _scales(value) -> tuple[int, int, int] | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    return _shape("scales", value, "e4m3")


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
        raise BadInput(f"config {value!r}: give a Config, a tile such as '128x256x128', or config values")
    unknown = sorted(set(flags) - set(CONFIG_KEYS))
    if unknown:
        raise BadInput(f"unknown config key {unknown[0]!r}: use {', '.join(CONFIG_KEYS)}")
    return config_from_flags(**{k: v for k, v in flags.items() if v is not None})


DEFAULT = Config()
