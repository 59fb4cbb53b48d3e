"""How TensorRT-LLM and flashinfer name a kernel: a CUTLASS type's element kind, what a
kernel's canonical type says of itself (:func:`kernel_parts`), the tactic identity of a MoE
launcher macro's arguments (``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM``) or of a mixed-input
launcher's template arguments (:func:`mixed_identity`), and the :class:`~cutlass_layout.model.Tactic`
of a kernel found in a generated source (:func:`tactic_of`).

These are the install's naming rules, read by :mod:`cutlass_layout.commands.audit` and
:mod:`cutlass_layout.commands.library_audit`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ..model import Tactic
from ..cpp.arguments import template_args
from .kernels import FoundKernel, kernel_core

#: The family of TensorRT-LLM's MoE grouped GEMM (built by flashinfer's ``fused_moe_*`` modules).
MOE = "moe"

#: CUDA / flashinfer type names in TensorRT-LLM's launcher macros -> (flag name, bits)
CUDA_TYPES = {
    "SafeFP4": ("nvfp4", 4),
    "__nv_fp4_e2m1": ("e2m1", 4),
    "__nv_fp8_e4m3": ("e4m3", 8),
    "SafeFP8": ("e4m3", 8),
    "__nv_fp8_e5m2": ("e5m2", 8),
    "half": ("f16", 16),
    "__nv_bfloat16": ("bf16", 16),
    "SafeBF16": ("bf16", 16),
    "float": ("f32", 32),
}
#: CUTLASS element types -> flag names (``layout --a/--b/--d``)
CUTLASS_TYPES = {
    "cutlass::float_e2m1_t": "e2m1",
    "cutlass::float_e4m3_t": "e4m3",
    "cutlass::float_e5m2_t": "e5m2",
    "cutlass::float_e3m2_t": "e3m2",
    "cutlass::float_e2m3_t": "e2m3",
    "cutlass::half_t": "f16",
    "cutlass::bfloat16_t": "bf16",
    "float": "f32",
    "void": "void",
    "cutlass::tfloat32_t": "tf32",
    "int8_t": "s8",
    "signed char": "s8",
    "cutlass::int4b_t": "s4",
    "cutlass::uint4b_t": "u4",
    "uint8_t": "u8",
    "unsigned char": "u8",
    # int4b_t and uint4b_t as a canonical type spells them (cutlass/integer_subbyte.h:
    # ``template <int Bits, bool Signed = true> struct integer_subbyte``)
    "cutlass::integer_subbyte<4>": "s4",
    "cutlass::integer_subbyte<4, true>": "s4",
    "cutlass::integer_subbyte<4, false>": "u4",
}
#: integer weight kinds: a ``cute::tuple<weight, scale[, zero]>`` of one is named by the weight
#: (TensorRT-LLM's weight-only GEMMs pair the weight with its group scales, and zeros)
INTEGER_KINDS = ("s4", "u4", "s8", "u8")
#: (data, scale factor) of a block-scaled element -> flag name
BLOCK_SCALED = {
    ("e2m1", "cutlass::float_ue4m3_t"): "nvfp4",
    ("e2m1", "cutlass::float_ue8m0_t"): "mxfp4",
    ("e4m3", "cutlass::float_ue8m0_t"): "mxfp8",
    ("e5m2", "cutlass::float_ue8m0_t"): "mxfp8-e5m2",
    ("e3m2", "cutlass::float_ue8m0_t"): "mxfp6",
    ("e2m3", "cutlass::float_ue8m0_t"): "mxfp6-e2m3",
}


def element_kind(spelled: str) -> str | None:
    """The flag name of a CUTLASS element type as a collective spells it:
    ``cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>`` (block-scaled data and its
    scale factor) -> ``nvfp4``; ``cute::tuple<cutlass::uint4b_t, cutlass::half_t>`` (an
    integer weight with its scales, and zeros: a mixed-input mainloop's) -> ``u4``;
    ``cutlass::bfloat16_t`` -> ``bf16``; None when unknown."""
    s = " ".join(spelled.split())
    if s.startswith("cute::tuple<"):
        parts = template_args(s)
        data = element_kind(parts[0]) if parts else None
        if len(parts) == 2 and data is not None and (data, parts[1]) in BLOCK_SCALED:
            return BLOCK_SCALED[(data, parts[1])]
        if len(parts) in (2, 3) and data in INTEGER_KINDS:
            return data  # an integer weight with its scales (and zeros)
        return None
    for prefix, name in (
        ("cutlass::detail::float_e2m1_unpacksmem_t", "e2m1"),
        ("cutlass::detail::float_e4m3_unpacksmem_t", "e4m3"),
    ):
        if s.startswith(prefix):
            return name
    return CUTLASS_TYPES.get(s)


@lru_cache(maxsize=4096)
def _kernel_parts(spelling: str) -> tuple:
    return tuple(_kernel_parts_of(spelling).items())


def kernel_parts(spelling: str) -> dict:
    """What a kernel's canonical type says of itself: ``kernel`` (grouped or dense), ``tile``
    (M, N, K), ``cluster`` (or None when a runtime value), ``a``, ``b``, ``d``, ``schedule``.
    (Kept for the last few thousand spellings: an SM103 build compiles SM100's kernels too.)"""
    return {k: (list(v) if isinstance(v, list) else v) for k, v in _kernel_parts(spelling)}


def _kernel_parts_of(spelling: str) -> dict:
    """:func:`kernel_parts`, read from the spelling."""
    problem, mainloop, epilogue = (template_args(spelling, 3) + [""] * 3)[:3]
    out: dict = {
        "kernel": "grouped" if problem.startswith("cutlass::gemm::GroupProblemShape<") else "dense",
        "tile": None,
        "cluster": None,
        "a": None,
        "b": None,
        "d": None,
        "schedule": None,
    }
    margs = template_args(mainloop, 5)  # policy, tile, A, its stride, B
    if len(margs) >= 5:
        out["tile"] = _shape(margs[1])
        out["a"], out["b"] = element_kind(margs[2]), element_kind(margs[4])
        policy = template_args(margs[0])
        for p in policy:
            shape = _shape(p)
            if shape is not None:
                out["cluster"] = shape
                break
        # SM90/SM120 policies end with the kernel schedule tag; SM100's take stage counts,
        # the cluster shape and the arch, and are named after the schedule themselves
        tag = next((p for p in reversed(policy) if _name(p).startswith("Kernel")), None)
        out["schedule"] = _name(tag if tag is not None else margs[0]) or None
    eargs = template_args(epilogue, 6)  # up to D
    if len(eargs) == 1 and _name(epilogue).endswith("Adapter"):  # Sm90TmaWarpSpecializedAdapter<E>
        epilogue, eargs = eargs[0], template_args(eargs[0], 6)
    if _name(epilogue) == "Sm120LoRaOverlapEpilogue":
        # flashinfer's SVDQuant epilogue (gemm/nvfp4_svdquant_gemm_epilogue_sm120.h) takes the
        # CollectiveEpilogue's arguments with its Sm90TmaWarpSpecialized policy's five values
        # first: StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore, CtaTileMNK,
        # EpilogueTile, ElementC, StrideC, ElementD, ...
        out["d"] = element_kind((template_args(epilogue, 10) + [""] * 10)[9])
    elif len(eargs) >= 6:
        out["d"] = element_kind(eargs[5])
    elif _name(epilogue) in ("DefaultEpilogue", "DefaultEpilogueArray") and len(eargs) >= 4:
        # DefaultEpilogue<ElementC, StrideC, StrideD, ThreadEpilogueOp, Schedule>: D is the
        # thread op's ElementOutput, its first argument (epilogue/collective/default_epilogue.hpp)
        out["d"] = element_kind((template_args(eargs[3]) or [""])[0])
    return out


def _name(spelled: str) -> str:
    """A type's own name, without namespaces and template arguments."""
    return re.sub(r"<.*", "", spelled.strip()).split("::")[-1]


def _shape(text: str) -> list[int] | None:
    m = re.fullmatch(r"cute::tuple<cute::C<(\d+)>, cute::C<(\d+)>, cute::C<(\d+)>>", text.strip())
    return [int(x) for x in m.groups()] if m else None


_MACRO_PARAMS: dict[tuple[str, str], list[str] | None] = {}


def macro_params(file: Path, name: str) -> list[str] | None:
    """The parameter names of ``#define name(...)`` in ``file`` (None when it has none)."""
    key = (str(file), name)
    if key not in _MACRO_PARAMS:
        try:
            text = file.read_text(errors="replace").replace("\\\n", " ")
        except OSError:
            text = ""
        m = re.search(rf"#\s*define\s+{re.escape(name)}\s*\(([^)]*)\)", text)
        _MACRO_PARAMS[key] = [p.strip() for p in m.group(1).split(",")] if m else None
    return _MACRO_PARAMS[key]


def _macro_args(k: FoundKernel, decl_file: Path | None) -> dict[str, str]:
    if k.macro is None or decl_file is None:
        return {}
    params = macro_params(decl_file, k.macro[0])
    if not params or len(params) != len(k.macro[1]):
        return {}
    return dict(zip(params, k.macro[1]))


def _moe_identity(args: dict[str, str]) -> dict | None:
    """TensorRT-LLM's MoE launcher macro (``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM``,
    ``moe_gemm_tma_ws_launcher.inl``): the tactic's fusion, swap_ab, output type, launcher
    tile (``CTA_M_``, ``CTA_N_``, ``CTA_K_``: one CTA's, K in elements) and tile enum name (K in
    bytes of the activation); for an SM10x ``ArchTag_`` also what the launcher derives from
    its arguments: ``Is2SM`` (``CGA_M_ == 2``: ``mma_sms`` 2, the MMA tile is 2M),
    ``DYNAMIC_CGA_`` (the kernel's cluster is a runtime ``Shape<int, int, _1>``: ``cluster``
    None) and the epilogue schedule (``EpilogueSchedule_``: ``PtrArrayTmaWarpSpecialized`` is
    ``tma``, ``PtrArrayNoSmemWarpSpecialized`` ``nosmem``), ``sm_version`` (the arch tag's
    number: 100, 103) and ``mma_tile``, the launcher's ``MmaTileShape``: ``CTA_M_`` twice for
    2SM, ``CTA_K_`` three times for ``Sm103`` (``IsSM103 ? 3 : 1``, ``.inl`` 244-246). An
    ``Sm103`` launcher's tile enum is SM100's (``CutlassTileConfigSM103`` is an alias of
    ``CutlassTileConfigSM100`` in ``gemm_configs.h``; its dispatch's ``SHAPE_CASE(103, ...)``
    converts the enum's K bytes to ``CTA_K_`` elements as SM100's does), so its name counts
    ``CTA_K_``, not the tripled K. None for other macros."""
    need = ("DataType_", "OutputType_", "FUSION_", "CTA_M_", "CTA_N_", "CTA_K_", "SWAP_AB_")
    if not all(p in args for p in need):
        return None
    try:
        m, n, k = (int(args[p]) for p in ("CTA_M_", "CTA_N_", "CTA_K_"))
    except ValueError:
        return None
    act = CUDA_TYPES.get(args["DataType_"])
    name = f"CtaShape{m}x{n}x{k * act[1] // 8}B" if act and (k * act[1]) % 8 == 0 else None
    cluster = None
    try:
        cluster = [int(args[p]) for p in ("CGA_M_", "CGA_N_", "CGA_K_")]
    except (KeyError, ValueError):
        pass
    dynamic = args.get("DYNAMIC_CGA_") == "true"
    if dynamic:
        cluster = None
    tag = re.fullmatch(r"Sm(1[01]\d)", args.get("ArchTag_", ""))
    mma_sms = dyn = epilogue = sm_version = mma_tile = None
    if tag is not None:  # an SM10x kernel
        dyn = dynamic
        sm_version = int(tag.group(1))
        if args.get("CGA_M_", "").isdigit():
            mma_sms = 2 if int(args["CGA_M_"]) == 2 else 1  # the launcher's Is2SM
            mma_tile = [m * mma_sms, n, k * (3 if sm_version == 103 else 1)]
        epilogue = {"PtrArrayTmaWarpSpecialized": "tma", "PtrArrayNoSmemWarpSpecialized": "nosmem"}.get(
            _name(args.get("EpilogueSchedule_", ""))
        )
    mx = args.get("MXFPX_") == "true"
    kinds = []
    for p in ("DataType_", "WeightType_"):  # the activation's and the weight's kind
        kind = CUDA_TYPES.get(args.get(p, ""), (None,))[0]
        if mx and kind in ("nvfp4", "e4m3"):
            kind = {"nvfp4": "mxfp4", "e4m3": "mxfp8"}[kind]
        kinds.append(kind)
    return {
        "family": MOE,
        "name": name,
        "fusion": args["FUSION_"].lower(),
        "operands": kinds,
        "swap_ab": args["SWAP_AB_"] == "true",
        "out": CUDA_TYPES.get(args["OutputType_"], (None,))[0],
        "tile": [m, n, k],
        "cluster": cluster,
        "mma_sms": mma_sms,
        "dynamic_cluster": dyn,
        "epilogue_schedule": epilogue,
        "sm_version": sm_version,
        "mma_tile": mma_tile,
    }


#: TensorRT-LLM's SM90 mixed-input launchers (function templates a generated source
#: instantiates explicitly) -> their template parameters, in order:
#: ``moe_gemm/launchers/moe_gemm_tma_ws_mixed_input_launcher.h`` (W4A8/W4A16 MoE; ``ScaleMode``
#: defaults to ``kPostMma``; the small-K launcher adds ``KernelType``) and
#: ``fpA_intB_gemm/launchers/fpA_intB_launcher_sm90.h`` (fpA_intB dense GEMM), both under
#: ``.../tensorrt_llm/kernels/cutlass_kernels/`` (flashinfer 0.7.2.post1).
MIXED_LAUNCHERS = {
    "sm90_generic_mixed_moe_gemm_kernelLauncher": (
        "T",
        "WeightType",
        "GemmOutputType",
        "EpilogueTag",
        "CTAShape",
        "ClusterShape",
        "MainloopScheduleType",
        "EpilogueScheduleType",
        "QuantOp",
        "ScaleMode",
    ),
    "sm90_generic_mixed_moe_small_k_kernelLauncher": (
        "T",
        "WeightType",
        "GemmOutputType",
        "EpilogueTag",
        "CTAShape",
        "ClusterShape",
        "MainloopScheduleType",
        "EpilogueScheduleType",
        "QuantOp",
        "ScaleMode",
        "KernelType",
    ),
    "sm90_generic_mixed_gemm_kernelLauncher": (
        "ActivationType",
        "WeightType",
        "ScaleZeroType",
        "BiasType",
        "OutputType",
        "QuantOp",
        "EpilogueTag",
        "CTAShape",
        "ClusterShape",
        "MainloopScheduleType",
        "EpilogueScheduleType",
    ),
}
#: a mainloop schedule tag -> TensorRT-LLM's ``MainloopScheduleType`` name (``gemm_configs.h``)
_SCHEDULES = {"KernelTmaWarpSpecializedCooperative": "COOPERATIVE", "KernelTmaWarpSpecializedPingpong": "PINGPONG"}
#: the MoE launcher's kernel schedule for its ``MainloopScheduleType`` argument
#: (``moe_gemm_tma_ws_mixed_input_launcher.inl``: ``using KernelSchedule = std::conditional_t<
#: is_same_v<MainloopScheduleType, KernelTmaWarpSpecializedPingpong>,
#: KernelPtrArrayTmaWarpSpecializedPingpong, KernelPtrArrayTmaWarpSpecializedCooperative>``)
_MOE_SCHEDULES = {"KernelTmaWarpSpecializedPingpong": "KernelPtrArrayTmaWarpSpecializedPingpong"}


def _cute_shape(text: str) -> list[int] | None:
    """``[128, 16, 128]`` of ``cute::Shape<cute::Int<128>, cute::Int<16>, cute::Int<128>>`` (or
    ``_128``-style) as a source writes it; None for anything else."""
    dims = re.findall(r"(?:\bInt\s*<\s*(\d+)\s*>|\b_(\d+)\b)", text)
    return [int(a or b) for a, b in dims] if len(dims) == 3 else None


def mixed_identity(owner: str) -> dict | None:
    """The tactic identity of a kernel re-hosted from an explicit instantiation of one of
    :data:`MIXED_LAUNCHERS` (``owner``: ``name<arguments as written>``), from its template
    arguments: the tile and cluster (``CTAShape``, ``ClusterShape``), the activation, weight
    and output kinds, and a name built as the runtime's config fields are
    (``CtaShape<M>x<N>x<K>B_ClusterShape_<M>x<N>x<K>_<schedule>``, then the scale mode where
    one is given, the quantisation for fpA_intB). The ``CtaShape`` enum counts K as the
    dispatch does: the mixed-input MoE dispatch (``moe_gemm_template_dispatch_tma_ws_mixed_dtype.h``,
    ``DISPATCH_MIXED_DTYPE_MOE_TILE(CtaShape64x16x128B, 64, 16, 128)``) passes the enum's
    number as the tile's K; fpA_intB's (``fpA_intB_gemm_template_sm90.h``: ``Ktile = 128 /
    sizeof(ActivationType)`` for every ``...x128B``) counts bytes of the activation. The
    schedule is ``KernelType`` (``SINGLE_WARPGROUP_PREFILL``, ...) where given, else the
    mainloop schedule tag's ``MainloopScheduleType`` (``COOPERATIVE``, ``PINGPONG``). Both
    launchers swap A and B (the weight is the mainloop's A): ``swap_ab`` is True.
    ``schedule`` is the kernel schedule the launcher passes the builder (the dispatch
    policy's, which a canonical spelling leaves out where it is the default): fpA_intB's
    ``MainloopScheduleType`` itself, the MoE launcher's ``KernelPtrArray...`` of it. None for
    another owner or arguments that do not parse."""
    name, _, rest = owner.partition("<")
    params = MIXED_LAUNCHERS.get(name.strip().split("::")[-1])
    if params is None or not rest:
        return None
    values = template_args("x<" + rest)
    if not len(params) - 2 <= len(values) <= len(params):
        return None
    args = dict(zip(params, values))
    tile, cluster = _cute_shape(args["CTAShape"]), _cute_shape(args["ClusterShape"])
    if tile is None or cluster is None:
        return None
    act = args.get("T") or args.get("ActivationType")
    weight = args["WeightType"]
    out = args.get("GemmOutputType") or args.get("OutputType")

    def kind(t):
        return CUDA_TYPES[t][0] if t in CUDA_TYPES else CUTLASS_TYPES.get(t)

    dense = "ActivationType" in args
    k = tile[2]
    if dense:
        bits = CUDA_TYPES[act][1] if act in CUDA_TYPES else None
        if bits is None:
            return None
        k = tile[2] * bits // 8
    schedule = _name(args.get("KernelType", "")) or _SCHEDULES.get(_name(args["MainloopScheduleType"]))
    if schedule is None:
        return None
    label = f"CtaShape{tile[0]}x{tile[1]}x{k}B_ClusterShape_{'x'.join(map(str, cluster))}_{schedule}"
    if "ScaleMode" in args:
        label += "_" + _name(args["ScaleMode"]).lstrip("k")
    if dense:
        label += "_" + _name(args["QuantOp"])
    mainloop = _name(args["MainloopScheduleType"])
    kernel_schedule = mainloop if dense else _MOE_SCHEDULES.get(mainloop, "KernelPtrArrayTmaWarpSpecializedCooperative")
    return {
        "family": MOE,
        "name": label,
        "fusion": None,
        "operands": [kind(act), kind(weight)],
        "swap_ab": True,
        "out": kind(out),
        "tile": tile,
        "cluster": cluster,
        "schedule": kernel_schedule,
    }


def tactic_of(module: str, source: Path, gen_root: Path | None, k: FoundKernel, report, install_root: Path) -> Tactic:
    """The :class:`Tactic` of a kernel found in a source of ``module``: named from its launcher
    macro's arguments (:func:`_moe_identity`), a mixed-input launcher's template arguments
    (:func:`mixed_identity`), else its launcher and kernel alias.

    The tactic's :attr:`~cutlass_layout.model.Tactic.report` is a copy of ``report`` whose
    ``config`` is ``{"tactic": id, **identity}`` of the tactic (the audit's JSON carries it);
    ``report`` itself is left as it is (a :class:`~cutlass_layout.model.LayoutReport` is frozen)."""
    parts = kernel_parts(kernel_core(k.spelling) or k.spelling)
    decl = Path(k.decl_file) if k.decl_file else None
    if decl is not None and not decl.is_absolute():
        decl = None
    args = _macro_args(k, decl) if decl is not None else {}
    ident = _moe_identity(args) if args else None
    if ident is None and k.macro is None:
        ident = mixed_identity(k.owner)
    owner = re.sub(r"\(.*", "", k.owner) or "(namespace scope)"
    if ident is None:
        swap = next((v for p, v in args.items() if re.fullmatch(r"SWAP_?AB_?", p, re.I)), None)
        ident = {
            "family": module,
            "name": f"{owner}::{k.alias}" if k.owner else k.alias,
            "fusion": None,
            "swap_ab": None if swap is None else swap == "true",
            "out": parts["d"],
            "tile": parts["tile"],
            "cluster": parts["cluster"],
        }
    try:
        file = str(source.relative_to(gen_root)) if gen_root else str(source)
    except ValueError:
        file = str(source)
    launcher_file = k.decl_file
    if launcher_file and Path(launcher_file).is_absolute():
        try:
            launcher_file = str(Path(launcher_file).relative_to(install_root))
        except ValueError:
            pass
    a, b = parts["a"], parts["b"]
    if (a is None or b is None) and ident.get("operands"):  # the launcher's own types
        act, weight = ident["operands"]
        a, b = (weight, act) if ident["swap_ab"] else (act, weight)
    tile = ident["tile"] or parts["tile"]
    # the kernel's own mainloop tile (its type, as compiled), else the launcher's rule
    mma_tile = (parts["tile"] or ident.get("mma_tile")) if ident.get("family") == MOE else None
    t = Tactic(
        family=ident["family"],
        name=ident["name"],
        a=a,
        b=b,
        out=ident["out"],
        fusion=ident["fusion"],
        swap_ab=ident["swap_ab"],
        tile=tile,
        cluster=ident["cluster"],
        kernel=parts["kernel"],
        schedule=parts["schedule"]
        if str(parts["schedule"]).startswith("Kernel") or not ident.get("schedule")
        else ident["schedule"],
        file=file,
        line=k.line,
        launcher=owner,
        launcher_file=launcher_file,
        launcher_line=k.decl_line,
        report=report,
        mma_sms=ident.get("mma_sms"),
        dynamic_cluster=ident.get("dynamic_cluster"),
        epilogue_schedule=ident.get("epilogue_schedule"),
        mma_tile=None if mma_tile is None or list(mma_tile) == list(tile or []) else list(mma_tile),
        sm_version=ident.get("sm_version"),
    )
    t.report = replace(report, config={"tactic": t.id, **t.identity()})
    return t


def family_of(module: str) -> str:
    """The family of a JIT module's tactics: ``moe`` for flashinfer's ``fused_moe_*`` modules
    (TensorRT-LLM's MoE GEMM), else the module's name."""
    return MOE if module.startswith("fused_moe") else module


__all__ = [
    "BLOCK_SCALED",
    "CUDA_TYPES",
    "CUTLASS_TYPES",
    "INTEGER_KINDS",
    "MIXED_LAUNCHERS",
    "MOE",
    "element_kind",
    "family_of",
    "kernel_parts",
    "macro_params",
    "mixed_identity",
    "tactic_of",
]
