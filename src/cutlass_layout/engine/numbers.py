"""A report's numbers read from a parsed probe: :func:`read_report` and :func:`read_subject`
make one :class:`~cutlass_layout.model.LayoutReport` from a translation unit without errors,
a probe block's aliases (:func:`cutlass_layout.subjects.aliases.subject_block`) giving the
SharedStorage layouts, the stage count, the subject's kind, the capacity (a constant of the
headers, a user type's arch tag, or a 2.x-era arch's documented limit), a direct
convolution's launch size, a 2.x mainloop's choice, the TMA transaction bytes and an
auto-stage config's builder budget. Bytes throughout. Each report is made once, whole (a
report is frozen).
"""

from __future__ import annotations

import re

from ..errors import BadInput
from pathlib import Path

from ..cpp import arch_traits
from ..cpp.clang import ProbeUnit
from ..model import (
    BuilderBudget,
    ClusterLegality,
    CompileError,
    Constant,
    DescriptorAt,
    LayoutReport,
    Occupancy,
    ParamsLayout,
    Provenance,
    RegisterSplit,
    StructLayout,
    TmaBytes,
    TmaCheck,
)
from ..model.launch import param_limit
from ..sources.cuda import pip_cuda_include
from ..subjects import aliases, archs, budgets, shapes, tma
from ..subjects.config import Config
from ..subjects.user_type import UserType


def read_report(unit: ProbeUnit, cfg, index: int, prov: Provenance) -> LayoutReport:
    """The report of probe block ``index`` of ``unit``, with the builder's budget where the
    block has one (:func:`cutlass_layout.subjects.budgets.budget_block`)."""
    names = unit.aliases(f"{aliases.NAMESPACE}{index}")
    values = _subject_values(unit, names, cfg)
    if values.get("error") is None and "BudgetStages" in names and isinstance(cfg, Config):
        values["builder_budget"] = _read_budget(names, unit, cfg, values["epilogue"], values["capacity"])
    return LayoutReport(provenance=prov, **values)


def _optional_int(names: dict, alias: str) -> int | None:
    """The N of a ``char[N]`` alias, or ``None`` where the probe has no such alias (one
    written by an older probe block, such as a launcher's in-place one)."""
    return ProbeUnit.int_alias(names[alias]) if alias in names else None


def read_subject(unit: ProbeUnit, names: dict, cfg, prov: Provenance) -> LayoutReport:
    """The :class:`LayoutReport` of one :func:`cutlass_layout.subjects.aliases.subject_block`, its
    declarations by (unprefixed) name; ``cfg`` gives the report's config (``to_dict()``).

    A 2.x mainloop's class and the element types it stages and loads are read too
    (:func:`cutlass_layout.subjects.mainloop2x.mainloop_choice`). The capacity is the block's
    ``Capacity``; for a user type whose arch comes from its tag
    (``ArchCC``), the constant of that arch (``Capacity_<name>``), or the documented limit of a
    2.x-era arch (:mod:`cutlass_layout.subjects.archs`); the report's ``config["arch"]`` then names
    the arch found and ``config["arch_from"]`` says ``tag``.

    A type of no GEMM shape gets its ``SharedStorage`` as ``storage``, named ``fmha`` or
    ``storage`` (:mod:`cutlass_layout.subjects.shapes`); a direct convolution gets ``launch``
    (:func:`_launch`).

    Raises:
        BadInput: the arch is to come from the tag and the type has none (or one of no arch
            known here); a direct convolution whose launch size is computed at run time.
    """
    return LayoutReport(provenance=prov, **_subject_values(unit, names, cfg))


def _subject_values(unit: ProbeUnit, names: dict, cfg) -> dict:
    """:func:`read_subject`'s report as the keyword arguments of :class:`LayoutReport` (all but
    ``provenance``), read in this order: the structs, the aliases, the stage counts, the
    subject's kind, the launch size, the 2.x mainloop, the capacity, the TMA bytes. A type
    that is not usable gets ``error`` and no kernel, mainloop or epilogue."""
    v: dict = {"config": cfg.to_dict()}
    try:
        v["kernel"] = unit.record(names["KernelStorage"], optional=True)
        v["mainloop"] = unit.record(names["MainloopStorage"], optional=True)
        v["epilogue"] = unit.record(names["EpilogueStorage"], optional=True)
        if "Storage" in names:  # absent from an older probe block (a launcher's in-place one)
            v["storage"] = unit.record(names["Storage"], optional=True)
        if (v["kernel"] or v["mainloop"] or v["epilogue"] or v.get("storage")) is None:
            raise ValueError(
                f"{cfg.to_dict().get('type', 'the subject')} has no SharedStorage "
                "(nor a GemmKernel or UnderlyingKernel member that has one)"
            )
        stages = ProbeUnit.int_alias(names["Stages"]) - 1  # char[1 + N], or char[1]
        stages_b, stages_e = _optional_int(names, "StagesB"), _optional_int(names, "StagesE")
        cc = _optional_int(names, "ArchCC")
        kind = _optional_int(names, "Kind")
        capacity = ProbeUnit.int_alias(names["Capacity"]) if "Capacity" in names else None
        tma = {a: ProbeUnit.int_alias(names[a]) - 1 for a in aliases.TMA_MEMBERS}
        elements = [
            ProbeUnit.type_name(names[a]) if a in names else None
            for a in ("SmemElementA", "SmemElementB", "GlobalElementA", "GlobalElementB")
        ]
    except (KeyError, ValueError) as exc:  # never a number from a broken type
        v["kernel"] = v["mainloop"] = v["epilogue"] = None
        v["error"] = CompileError(kind="error", message=f"the probe's types are not usable: {exc}")
        return v
    v["stages"] = stages if stages > 0 else None
    if stages_b is not None and stages_b > 1:  # a sparse mainloop: StagesA, StagesB, StagesE
        v["stage_counts"] = {
            "A": v["stages"],
            "B": stages_b - 2,
            "E": stages_e - 2 if stages_e and stages_e > 1 else None,
        }
    v["subject_kind"] = aliases.KINDS.get(kind - 2) if kind is not None else None
    if v.get("storage") is not None:
        v["subject_kind"] = shapes.storage_kind(v["storage"])
    if v["subject_kind"] == "direct_conv":
        v["launch"] = _launch(unit, names, cfg, v["epilogue"], v["stages"])
    smem_a, smem_b, global_a, global_b = elements
    # a 2.x mainloop (all four named): the class DefaultMma picked, what it stages
    if smem_a is not None and smem_b is not None and global_a is not None and global_b is not None:
        from ..subjects.mainloop2x import mainloop_choice

        mainloop = ProbeUnit.type_name(names["Mainloop"])
        assert mainloop is not None  # the 2.x probe names its mainloop
        v["mainloop_class"] = mainloop_choice(
            mainloop, (smem_a, smem_b), (global_a, global_b), v["stages"], unit.include_root
        )
    if capacity is not None:
        v["capacity"] = unit.constant("Capacity", capacity, names.get("capacity_ref"))
        if capacity_is_documented(cfg):
            v["capacity"] = documented_capacity(archs.arch(cfg.arch))
    else:
        v["capacity"] = _capacity_from_tag(unit, names, cfg, (cc or 1) - 1)
        tagged = archs.from_cc((cc or 1) - 1)
        assert tagged is not None  # _capacity_from_tag: a known tag
        v["config"]["arch"] = tagged.name
        v["config"]["arch_from"] = "tag"
    consts = {
        alias: unit.static_member(names["Mainloop"], member, tma[alias]) if tma[alias] > 0 else None
        for alias, member in aliases.TMA_MEMBERS.items()
    }
    v["tma_transaction_bytes"] = TmaBytes(mk=consts["TmaMK"], nk=consts["TmaNK"], total=consts["TmaTotal"])
    if v["mainloop"] is not None:
        v["tma_check"] = tma_check(unit, names, v["mainloop"], v["stages"], tma)
    if v["subject_kind"] == "kernel" and v["kernel"] is not None:
        v["occupancy"] = occupancy(unit, names, v["config"].get("arch"), v["kernel"].size)
        v["params"] = params_layout(unit, names)
        v["cluster"] = cluster_legality(names, v["config"].get("arch"), unit.gpu_arch())
    return v


def cluster_legality(names: dict, arch: str | None, gpu: str | None = None) -> ClusterLegality | None:
    """A 3.x kernel's :class:`ClusterLegality`: its ``ClusterShape`` and ``AtomThrShapeMNK`` M
    read through the block's aliases (:data:`~cutlass_layout.subjects.aliases.CLUSTER_ALIASES`:
    ``char[3 + N]`` static, ``char[2]`` a run-time extent), judged by the rules of ``arch``'s
    family (else the family of ``gpu``, the arch the unit is parsed for: ``sm_120a``; an audit's
    tactics name none). None where the kernel declares no ``ClusterShape`` (or the block has no
    such alias)."""
    dims = [_optional_int(names, a) for a in ("ClusterM", "ClusterN", "ClusterK")]
    if any(d is None or d < 2 for d in dims):
        return None
    shape = tuple(None if d == 2 else d - 3 for d in dims)  # type: ignore[operator]  # ints (checked)
    mma = _optional_int(names, "MmaCtas")
    if arch in archs.ARCHS:
        family = archs.ARCHS[arch].family
    else:
        m = re.match(r"sm_(\d+)", gpu or "")  # sm_120a, sm_100f: the compute capability
        tagged = archs.from_cc(int(m.group(1))) if m else None
        family = tagged.family if tagged is not None else None
    return ClusterLegality.of(shape, None if mma is None or mma < 3 else mma - 3, family)


def tma_check(unit: ProbeUnit, names: dict, mainloop: StructLayout, stages: int | None, declared: dict) -> TmaCheck:
    """The mainloop's :class:`~cutlass_layout.model.launch.TmaCheck`
    (:func:`cutlass_layout.subjects.tma.check`): its transaction counts (``declared``: the
    block's :data:`~cutlass_layout.subjects.aliases.TMA_MEMBERS` values, and its
    :data:`~cutlass_layout.subjects.aliases.TMA_PARTS`), its and its policy's class template
    names, its stage counts and ``size(AtomThrShapeMNK{})``, a mixed-input collective's
    conversion mode (``TmaMode``) and the bytes the elements of its scale-factor, scale and zero
    buffers hold (:data:`~cutlass_layout.subjects.aliases.TMA_DATA`), all read through the
    block's aliases (an older block without them: what it has)."""
    counts = dict(declared)
    for alias in aliases.TMA_PARTS:
        n = _optional_int(names, alias)
        counts[alias] = 0 if n is None else n - 1
    sf = _optional_int(names, "StagesSF")
    atom = _optional_int(names, "TmaAtomThr")
    collective = ProbeUnit.template_name(names["Mainloop"]) or "the mainloop"
    policy = ProbeUnit.template_name(names["MainloopPolicy"]) if "MainloopPolicy" in names else None
    bits = {}
    for member, elem, slot in (("smem_A", "TmaBitsA", "SlotBitsA"), ("smem_B", "TmaBitsB", "SlotBitsB")):
        e, sl = _optional_int(names, elem), _optional_int(names, slot)
        if e and sl and e > 1 and sl > 1:
            bits[member] = (e - 1, sl - 1)
    data = {}
    for alias, member in aliases.TMA_DATA.items():
        n = _optional_int(names, alias)
        if n and n > 1:
            data[member] = n - 2
    mode = _optional_int(names, "TmaMode")
    return tma.check(
        collective,
        policy,
        mainloop,
        counts,
        {"A": stages, "SF": sf - 2 if sf and sf > 1 else None},
        atom - 1 if atom and atom > 1 else 1,
        bits,
        mode=mode - 2 if mode and mode > 1 else None,
        data=data,
    )


#: A TMA descriptor's type as a member writes it (``TmaDescriptor``, ``cute::TmaDescriptor``,
#: ``CUtensorMap``, an array of them; a pointer to one is not one).
_DESCRIPTOR_RE = re.compile(r"\b(?:TmaDescriptor|CUtensorMap)\b")


def params_layout(unit: ProbeUnit, names: dict) -> ParamsLayout | None:
    """A 3.x kernel's ``Params`` (the block's ``KernelParams``, completed by its
    ``KernelParamsBytes``): size, alignment and every TMA descriptor member's path and offset,
    from the record layout; the parameter limit of the CUDA version the unit is parsed with
    (its ``__CUDACC_VER_MAJOR__``/``MINOR__``), on the host ABI the unit is parsed for
    (:meth:`~cutlass_layout.cpp.clang.ProbeUnit.abi`). None where the block has no such alias."""
    if "KernelParams" not in names:
        return None
    s = unit.record(names["KernelParams"], optional=True)
    if s is None:
        return None
    found = [
        DescriptorAt(path, f.offset, f.type, f.type_align)
        for path, f in s.walk()  # not a pointer to one
        if _DESCRIPTOR_RE.search(f.type) and not f.fields and not any(c in f.type for c in "*&")
    ]
    cuda = unit.cuda_version()
    return ParamsLayout(s.size, s.align, tuple(found), param_limit(cuda), f"{cuda[0]}.{cuda[1]}", unit.abi())


def _member(names: dict, alias: str) -> int | None:
    """The N of a ``char[2 + N]`` member alias (:data:`~cutlass_layout.subjects.aliases.OCCUPANCY_MEMBERS`);
    None where the kernel has no such member (``char[1]``) or the block no such alias."""
    n = _optional_int(names, alias)
    return None if n is None or n < 2 else n - 2


def cccl_dirs(unit: ProbeUnit) -> list[Path]:
    """Where ``cuda/__device/arch_traits.h`` is looked for: the unit's include directories (the
    CUDA headers' CCCL first), then a CCCL shipped beside the CUTLASS tree (flashinfer's
    ``data/cccl/libcudacxx/include`` beside ``data/cutlass/include``), then the pip CUDA header
    wheels' (nvidia-cuda-cccl, a dependency: a CUDA 13.0 toolkit's own CCCL has no
    ``arch_traits.h``, and the per-SM limits are the arch's, whichever CCCL states them)."""
    beside = [p / "cccl" / "libcudacxx" / "include" for p in unit.include_root.parents[:3]]
    pip = pip_cuda_include()
    return unit.include_dirs() + beside + ([pip / "cccl"] if pip is not None else [])


def occupancy(unit: ProbeUnit, names: dict, arch: str | None, smem: int) -> Occupancy | None:
    """A 3.x kernel's :class:`Occupancy` (``smem``: the dynamic shared memory it launches with,
    ``sizeof(SharedStorage)``, bytes): its ``MaxThreadsPerBlock``, ``MinBlocksPerMultiprocessor``
    and declared register split read through the block's aliases, the per-SM limits of ``arch``
    (else the arch the unit is parsed for) from CCCL's ``cuda/__device/arch_traits.h``
    (:func:`cccl_dirs`; none found: no CTA count, and the note says where it was looked for).
    None where the kernel declares no ``MaxThreadsPerBlock``."""
    threads = _member(names, "OccThreads")
    if threads is None:
        return None
    groups = [_member(names, a) for a in ("OccLoadRegs", "OccLoadGroups", "OccMmaRegs", "OccMmaGroups")]
    notes = []
    split = None
    if all(g is not None for g in groups):
        split = RegisterSplit(*groups)  # type: ignore[arg-type]  # all ints (checked)
        if 128 * (split.load_warp_groups + split.mma_warp_groups) != threads:
            notes.append(
                f"registers: the declared split's {split.load_warp_groups} + {split.mma_warp_groups} "
                f"warp groups are not the kernel's {threads} threads: not counted"
            )
            split = None
    else:
        notes.append("registers: no LoadRegisterRequirement/MmaRegisterRequirement split declared")
    gpu = archs.ARCHS[arch].gpu_arch if arch in archs.ARCHS else unit.gpu_arch()
    dirs = cccl_dirs(unit)
    header = arch_traits.find_header(dirs)
    limits = arch_traits.per_sm_limits(header, gpu) if header is not None and gpu else None
    if header is None:
        notes.append(f"per-SM limits not found in {', '.join(map(str, dirs))} (no {arch_traits.HEADER})")
    elif limits is None:
        notes.append(f"per-SM limits not found in {header}: no arch_traits for {gpu}")
    return Occupancy.of(threads, _member(names, "OccMinBlocks"), smem, split, limits, "; ".join(notes) or None)


#: How a direct convolution's ``Params`` computes its launch size, as
#: ``conv/kernel/direct_convolution.h`` writes it (``DirectConvolutionParams``' constructor).
DIRECT_CONV_LAUNCH = (
    "max(iterator_A.activation_size, sizeof(Epilogue::SharedStorage)) * kStages + iterator_B.filter_size"
)
_SMEM_SIZE_RE = re.compile(r"\bsmem_size_\s*=(?!=)")


def _launch(unit: ProbeUnit, names: dict, cfg, epilogue: StructLayout | None, stages: int | None) -> Constant:
    """A direct convolution's launch size: what ``conv::device::DirectConvolution::run()``
    passes to the launch, ``Params::get_smem_size()``, which the ``Params`` constructor
    computes as :data:`DIRECT_CONV_LAUNCH` (``conv/kernel/direct_convolution.h``): the
    iterators' ``getParams`` pass their ``kActivationSize`` (the fixed stride and dilation
    activation iterator) and ``kFilterSize``, so the probe's ``LaunchBytes`` evaluates the same
    expression at compile time. The constant's expression shows each term (``epilogue``,
    ``stages``: the report's); its file and line are the assignment's in the ``Params`` class.

    Raises:
        BadInput: the activation (or filter) iterator has no such constant: its size comes
            from the problem's stride, dilation and filter size at run time.
    """
    total = _optional_int(names, "LaunchBytes")
    act, flt = _optional_int(names, "LaunchActivation"), _optional_int(names, "LaunchFilter")
    file, line = unit.template_site(names.get("LaunchParams"), _SMEM_SIZE_RE)
    where = f" ({file}:{line})" if file else ""
    if total is None or total < 2 or act is None or act < 2 or flt is None or flt < 2:
        what = cfg.to_dict().get("type", "the type")
        raise BadInput(
            f"{what}: a direct convolution launches with Params::get_smem_size() = "
            f"{DIRECT_CONV_LAUNCH}{where}, not sizeof(SharedStorage), and its "
            f"{'activation' if act is None or act < 2 else 'filter'} iterator computes its "
            "size from the problem at run time (only the fixed stride and dilation iterator's is "
            "a compile-time size); not supported"
        )
    a, f, e = act - 2, flt - 2, epilogue.size if epilogue is not None else 0
    expr = (
        f"max(IteratorA::kActivationSize {a}, sizeof(Epilogue::SharedStorage) {e}) * "
        f"kStages {stages} + IteratorB::kFilterSize {f}"
    )
    return Constant(name="Params::get_smem_size()", value=total - 2, expression=expr, file=file, line=line)


def capacity_is_documented(cfg) -> bool:
    """Whether ``cfg`` (a user type with an arch given) is compared with a 2.x-era arch's
    documented limit rather than a constant of the headers."""
    return isinstance(cfg, UserType) and cfg.arch is not None and archs.arch(cfg.arch).capacity is None


def documented_capacity(a: "archs.Arch") -> Constant:
    """The capacity of a 2.x-era arch, with where its value comes from (``source``)."""
    assert a.optin_bytes is not None  # capacity_is_documented: an arch with a documented limit
    return Constant(
        name=f"{a.name} per-block opt-in shared memory",
        value=a.optin_bytes,
        expression=f"{a.optin_bytes // 1024} KB",
        source=a.optin_source,
    )


def _capacity_from_tag(unit: ProbeUnit, names: dict, cfg, cc: int) -> Constant:
    a = archs.from_cc(cc)
    what = cfg.to_dict().get("type", "the type")
    if a is None:
        raise BadInput(
            f"{what} has no arch tag (ArchTag::kMinComputeCapability) to take the capacity from: give the arch (arch=)"
            if cc <= 0
            else f"{what}: arch tag of compute capability {cc} is none of "
            f"{', '.join(archs.ARCHS)}: give the arch (arch=)"
        )
    if a.capacity is None:
        return documented_capacity(a)
    alias = aliases.capacity_alias(a.capacity)
    if alias not in names:
        raise BadInput(
            f"{what} is tagged {a.name}, and this CUTLASS tree does not define {a.capacity}: give the arch (arch=)"
        )
    value = ProbeUnit.int_alias(names[alias])
    return unit.constant(a.capacity, value, names.get("capacity_ref_" + alias[len("Capacity_") :]))


def _read_budget(
    names: dict, unit: ProbeUnit, cfg: Config, epilogue: StructLayout | None, capacity: Constant | None
) -> BuilderBudget | None:
    """The :class:`BuilderBudget` of a config's block (its aliases ``names``; ``epilogue`` and
    ``capacity``: the report's), or ``None`` where the builder forwards to another one (SM90
    ``KernelScheduleAuto``)."""
    stages = ProbeUnit.int_alias(names["BudgetStages"]) - 1
    if stages <= 0 or epilogue is None:
        return None
    reduced = ProbeUnit.int_alias(names["BudgetReducedCapacity"]) - 1
    if reduced > 0:
        capacity = unit.static_member(names["MainloopBuilder"], budgets.BUDGET_REDUCED[cfg.family], reduced)
    assert capacity is not None  # a laid-out config's
    return BuilderBudget(
        capacity=capacity,
        carveout_bytes=epilogue.size,
        stage_bytes=ProbeUnit.int_alias(names["BudgetStageBytes1000"]) // 1000,
        stages=stages,
    )


__all__ = ["DIRECT_CONV_LAUNCH", "capacity_is_documented", "documented_capacity", "read_report", "read_subject"]
