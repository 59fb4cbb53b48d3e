"""Layouts (libclang): :class:`FieldLayout`, :class:`StructLayout`, :class:`Constant`,
:class:`TmaBytes`, :class:`BuilderBudget`, :class:`MainloopChoice`, :class:`CompileError`,
:class:`Provenance`, and one config's answer, :class:`LayoutReport` (with, for a preset, its
:class:`Approximation`), flat as :class:`KernelNumbers`.

All sizes, offsets and paddings are in **bytes**. A field's ``offset`` counts from the start
of the top-level struct it belongs to (the kernel's, the mainloop's or the epilogue's
``SharedStorage``), so ``tensors.epilogue`` at 73728 means byte 73728 of the kernel struct.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .launch import ClusterLegality, Occupancy, ParamsLayout, TmaCheck, launch_findings
from .serde import dataclass_keys, from_plain, lazy_list, plain
from .verdict import Verdict, schema_verdict, verdict_of

#: Version of the ``layout --json`` schema (see README "JSON schema").
LAYOUT_SCHEMA = "cutlass-layout/layout/1"


@dataclass(repr=False)
class FieldLayout:
    """One member of a struct, as clang laid it out.

    Attributes:
        name: member name (``smem_A``); ``<base T>`` for a non-empty base class.
        type: the member's type as written in the header (``cute::ArrayEngine<...>``).
        offset: bytes from the start of the top-level struct.
        size: ``sizeof`` of the member's type, bytes.
        type_align: ``alignof`` of the member's type, bytes (not the member's ``alignas``).
        declared_alignas: the integer in the member's ``alignas(...)``, or ``None``.
        padding_before: bytes between the end of the previous member (or the start of the
            enclosing struct) and this member; 0 in unions.
        fields: members of this member's type, recursively (empty for arrays and leaves
            such as ``cute::ArrayEngine`` and TMA descriptors).
        file, line: where the member is declared (file relative to the CUTLASS include
            root when it lies inside it).
        access: ``public``, ``protected`` or ``private``.
        tail_padding: bytes after this member's last member up to its size (0 for leaves
            and unions).
    """

    name: str
    type: str
    offset: int
    size: int
    type_align: int
    declared_alignas: int | None = None
    padding_before: int = 0
    fields: list[FieldLayout] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    access: str = "public"
    tail_padding: int = 0

    def walk(self, prefix: str = ""):
        """Yield ``(dotted_name, FieldLayout)`` for this member and every nested one."""
        name = f"{prefix}.{self.name}" if prefix else self.name
        yield name, self
        for f in self.fields:
            yield from f.walk(name)

    @classmethod
    def from_dict(cls, d: dict) -> FieldLayout:
        """The inverse of :func:`plain`. Raises ``TypeError``, as the constructor does, for a
        key that is not an attribute or a required one missing. (Built without the
        constructor: a cached audit holds hundreds of thousands of members.)"""
        # serde.from_plain, inlined: a call more per member is a visible share of reading a cached audit back
        keys = d.keys()
        if not (keys <= FIELD_KEYS and FIELD_REQUIRED <= keys):
            raise TypeError(
                f"FieldLayout: unknown keys {sorted(keys - FIELD_KEYS)}, missing {sorted(FIELD_REQUIRED - keys)}"
            )
        obj = object.__new__(cls)
        attrs = obj.__dict__
        attrs.update(_FIELD_DEFAULTS)
        attrs.update(d)
        sub = d.get("fields")
        attrs["fields"] = [cls.from_dict(f) for f in sub] if sub else []
        return obj

    def __repr__(self) -> str:
        more = f", {len(self.fields)} members" if self.fields else ""
        return f"FieldLayout({self.name!r}, offset={self.offset}, size={self.size}{more})"


#: What :meth:`FieldLayout.from_dict` checks and fills in: every attribute, the required
#: ones, the defaults of the others (``fields`` is filled in apart).
FIELD_KEYS, FIELD_REQUIRED, _FIELD_DEFAULTS = dataclass_keys(FieldLayout)


@dataclass(repr=False)
class StructLayout:
    """A whole ``SharedStorage`` (kernel, mainloop or epilogue).

    Attributes:
        type: the struct's C++ name, template arguments shortened to ``<...>``.
        size: ``sizeof``, bytes.
        align: ``alignof``, bytes.
        tail_padding: bytes after the end of the last member up to ``size``.
        fields: the members, in order.
        union: whether the struct is a union.
    """

    type: str
    size: int
    align: int
    tail_padding: int
    fields: list[FieldLayout] = field(default_factory=list)
    union: bool = False

    def find(self, dotted: str) -> FieldLayout:
        """The member at ``a.b.c``; raises ``KeyError`` when there is none."""
        for name, f in self.walk():
            if name == dotted:
                return f
        raise KeyError(dotted)

    def walk(self):
        """Yield ``(dotted_name, FieldLayout)`` for every member, depth first."""
        for f in self.fields:
            yield from f.walk()

    @classmethod
    def from_dict(cls, d: dict, *, lazy: bool = False) -> StructLayout:
        """The inverse of :func:`plain`. Raises ``TypeError``, as the constructor does, for a
        key that is not an attribute or a required one missing.

        ``lazy``: the members (``d["fields"]``, plain dicts) are made into
        :class:`FieldLayout` objects when :attr:`fields` is first read, not now (a warm audit
        of a whole install reads back 5,775 reports, about 300,000 members, and shows their
        sizes only); their keys are checked then, as :meth:`FieldLayout.from_dict` checks
        them (:func:`cutlass_layout.engine.loop.load_report` checks them first)."""
        if not lazy:
            return cls(**{**d, "fields": [FieldLayout.from_dict(f) for f in d.get("fields", [])]})
        obj = from_plain(cls, d, _STRUCT_KEYS, _STRUCT_REQUIRED, _STRUCT_DEFAULTS)
        attrs = obj.__dict__
        attrs.pop("fields", None)
        attrs["_members"] = d.get("fields") or []  # plain dicts until read
        return obj

    def __repr__(self) -> str:
        return f"StructLayout({self.type!r}, size={self.size}, align={self.align}, {len(self.fields)} members)"


# ``fields`` stays a dataclass field (the constructor, ``dataclasses.fields``, equality,
# :func:`plain`) read and written through this property, so that it can be made lazily.
# (type: ignore: a property put on the class after the dataclass made it, which mypy does not follow)
StructLayout.fields = lazy_list(  # type: ignore[assignment]
    FieldLayout.from_dict, "The members, in order (:class:`FieldLayout`)."
)
_STRUCT_KEYS, _STRUCT_REQUIRED, _STRUCT_DEFAULTS = dataclass_keys(StructLayout)


@dataclass
class Constant:
    """An integer constant read from the headers, with where it is defined.

    Attributes:
        name: the C++ name (``TmaTransactionBytesMK``, ``sm120_smem_capacity_bytes``).
        value: its value for this config (bytes where it is a size).
        expression: the initializer's text as written in the header.
        file, line: where it is defined (file relative to the include root when inside it).
        source: where the value comes from when the headers define no such constant (the
            per-block opt-in limit of a CUTLASS 2.x-era arch; :mod:`cutlass_layout.subjects.archs`),
            else ``None``.
    """

    name: str
    value: int
    expression: str | None = None
    file: str | None = None
    line: int | None = None
    source: str | None = None


@dataclass
class TmaBytes:
    """TMA transaction bytes per stage of the mainloop (what the producer's barrier expects).

    Mirrors ``TmaTransactionBytesMK`` / ``TmaTransactionBytesNK`` / ``TmaTransactionBytes``
    of ``CollectiveMma`` in ``cutlass/gemm/collective/sm120_blockscaled_mma_*tma.hpp``:
    A's tile plus its scale factors (MK), B's tile plus its scale factors (NK), and their sum.
    """

    mk: Constant | None
    nk: Constant | None
    total: Constant | None


@dataclass
class BuilderBudget:
    """How the mainloop's CollectiveBuilder budgeted stages (for ``StageCountAutoCarveout``).

    Read from the builder in the same headers: ``capacity`` is its reduced-capacity member
    (``ReducedSmemCapacityBytes`` since CUTLASS 4.4.2 on SM120, ``Sm90ReducedSmemCapacityBytes``
    on SM90) or, where it has none, the full capacity constant; ``stage_bytes`` is what its
    stage function (``sm100_compute_stage_count_or_override_blockscaled`` /
    ``compute_stage_count_or_override``) counts per stage, found by evaluating that function;
    ``stages`` is its ``PipelineStages``. Bytes throughout.

    The builder's count leaves out kernel-level pieces (scheduler pipelines, scheduler
    responses, TMA descriptors, alignment) and may count a pipeline as 128 bytes: compare
    ``carveout_bytes + stages * stage_bytes`` with the real kernel size.
    """

    capacity: Constant
    carveout_bytes: int
    stage_bytes: int
    stages: int

    @property
    def budgeted_bytes(self) -> int:
        """``carveout_bytes + stages * stage_bytes``: what the builder thinks the kernel takes."""
        return self.carveout_bytes + self.stages * self.stage_bytes


@dataclass
class MainloopChoice:
    """The mainloop class a CUTLASS 2.x kernel's ``Mma`` resolves to, and what it stages.

    CUTLASS's ``DefaultMma`` / ``DefaultMmaCore`` pick the mainloop from the stage count, the
    arch and the element types; the pick can stage operands in other types than the kernel's
    (``cutlass/gemm/threadblock/default_mma.h``: float A, B and C on tensor cores with 2 stages
    build ``DefaultMmaCore<..., arch::OpMultiplyAddFastF16>``, whose shared memory holds
    ``half_t``; ``default_mma_core_sm75.h``).

    Attributes:
        type: the mainloop's class, template arguments shortened
            (``cutlass::gemm::threadblock::MmaPipelined<...>``).
        smem_a, smem_b: element types of A and B in shared memory (the mainloop's warp-level
            operator's ``ElementA``/``ElementB``: what its SharedStorage buffers hold).
        element_a, element_b: element types the kernel loads from global memory (its
            iterators' ``Element``).
        note: what differs and why, e.g. ``A and B staged as cutlass::half_t in shared
            memory, the kernel's A and B are float (...)``; ``None`` when nothing differs.
    """

    type: str
    smem_a: str
    smem_b: str
    element_a: str
    element_b: str
    note: str | None = None

    @property
    def staged_as_loaded(self) -> bool:
        """Whether A and B are staged in the element types the kernel loads."""
        return (self.smem_a, self.smem_b) == (self.element_a, self.element_b)


@dataclass
class CompileError:
    """The first real compiler error of a config that does not compile.

    Attributes:
        kind: ``static_assert`` or ``error``.
        message: the assert's text or clang's message, in plain words.
        file, line: where clang reports it (a CUTLASS header for a failed static_assert).
    """

    kind: str
    message: str
    file: str | None = None
    line: int | None = None

    def one_line(self) -> str:
        where = f" ({self.file}:{self.line})" if self.file else ""
        what = "static_assert failed" if self.kind == "static_assert" else "error"
        return f"does not compile: {what}: {self.message}{where}"


@dataclass
class Provenance:
    """Where the numbers come from: the CUTLASS tree, the CUDA headers, libclang and its flags.

    The last four are ``None`` where no layout was computed (a structural diff's sides).
    """

    cutlass_root: str
    cutlass_version: str
    tree_hash: str
    origin: str
    libclang_version: str | None = None
    cuda_path: str | None = None
    cuda_source: str | None = None
    flags: list[str] | None = None


@dataclass
class Approximation:
    """What a preset config's numbers stand for: this tool's rendition of a kernel a library
    builds (the preset's), which an install may build differently (another epilogue fusion,
    other alignments); and, where the CUTLASS source is a flashinfer install whose audit is
    in the results cache, the tactics it really builds for the same config.

    Attributes:
        preset: ``trtllm-moe``, ``flashinfer`` or ``vllm``.
        kernel: the kernel approximated, in words (``TensorRT-LLM's MoE grouped GEMM
            (moe_gemm_tma_ws_launcher.inl)``).
        install: the flashinfer whose CUTLASS tree was read (``flashinfer-python
            0.7.2.post1``; for a wheel whose other parts were never unpacked, as its source
            names it, and nothing of it was audited), or None (not a flashinfer's tree).
        source: that install as the audit takes it (``flashinfer-python==0.7.2.post1``, a
            wheel, a directory; None: the one installed here), when ``install`` is known.
        family: the audit family of the preset's kernels (``moe``; None for ``flashinfer``:
            every JIT module's family but ``moe``).
        arch: the arch an audit of this config reads (``sm121`` reads ``sm120``'s builds);
            None where the audit takes no such arch or the preset is no flashinfer kernel.
        audited: True when the install's audit (of the family, for the arch) was in the
            results cache: ``tactics`` are its matches; False when it was not (nothing is
            audited implicitly: an audit of the install lays them out); None where there is
            nothing to audit (no flashinfer install, an arch or preset the audit has not).
        tactics: the install's tactics with the same kernel kind, A, B, output (D), tile and
            cluster, each ``{id, verdict, stages, kernel_bytes, headroom_bytes,
            runtime_candidate}`` as the audit's JSON rows give them (bytes).
    """

    preset: str
    kernel: str
    install: str | None = None
    source: str | None = None
    family: str | None = None
    arch: str | None = None
    audited: bool | None = None
    tactics: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return plain(self)


@dataclass(frozen=True)
class KernelNumbers:
    """The numbers of one kernel's answer, flat: what every row shows (the sweep's
    :class:`SweepRecord`, the diff's :class:`NumericRecord`, the audit's :class:`Tactic`, and
    the table, CSV and JSON of each). Made by :meth:`LayoutReport.numbers`, so that no row
    computes a number of its own (or read back from a row an ``audit --json`` wrote:
    :meth:`Tactic.from_dict`). Bytes throughout; every number is ``None`` where the kernel
    does not compile (or was not laid out).

    Attributes:
        verdict: the :class:`~cutlass_layout.model.verdict.Verdict` (``fits``, ``exact_fit``,
            ``over_capacity`` or ``does_not_compile``).
        stages: the mainloop's stage count.
        kernel_bytes, mainloop_bytes, epilogue_bytes: ``sizeof`` of the kernel's, the
            mainloop's and the epilogue's SharedStorage.
        capacity_bytes: the arch's capacity, read from the headers.
        headroom_bytes: capacity minus :attr:`LayoutReport.smem_bytes` (negative: over).
        error: the first compile error, or ``None``.
        stage_counts: a sparse mainloop's stages per pipeline, ``{"A": StagesA, "B": StagesB,
            "E": StagesE}`` (:attr:`LayoutReport.stage_counts`; ``stages`` is A's), else ``None``.
        occupancy: a 3.x kernel's :class:`~cutlass_layout.model.launch.Occupancy`
            (:attr:`LayoutReport.occupancy`), else ``None``.
        params: a 3.x kernel's :class:`~cutlass_layout.model.launch.ParamsLayout`
            (:attr:`LayoutReport.params`), else ``None``.
        cluster: a 3.x kernel's :class:`~cutlass_layout.model.launch.ClusterLegality`
            (:attr:`LayoutReport.cluster`), else ``None``.
        tma_check: the mainloop's :class:`~cutlass_layout.model.launch.TmaCheck`
            (:attr:`LayoutReport.tma_check`), else ``None``.
    """

    verdict: Verdict
    stages: int | None = None
    kernel_bytes: int | None = None
    mainloop_bytes: int | None = None
    epilogue_bytes: int | None = None
    capacity_bytes: int | None = None
    headroom_bytes: int | None = None
    error: CompileError | None = None
    stage_counts: dict | None = None
    occupancy: Occupancy | None = None
    params: ParamsLayout | None = None
    cluster: ClusterLegality | None = None
    tma_check: TmaCheck | None = None

    @property
    def launch_findings(self) -> list[str]:
        """What keeps the kernel from launching beyond its shared memory, in words
        (:func:`~cutlass_layout.model.launch.launch_findings`: 0 CTAs/SM, a misaligned TMA
        descriptor, ``Params`` over the parameter limit, an illegal or non-portable cluster);
        empty where none is known (a kernel that does not compile has none: its error is the
        verdict)."""
        return launch_findings(self.occupancy, self.params, self.cluster, self.tma_check)

    @property
    def exact_fit(self) -> bool | None:
        """Whether :attr:`verdict` is ``exact_fit`` (headroom exactly 0; ``None`` where the
        headroom is not known)."""
        return None if self.headroom_bytes is None else self.verdict == Verdict.EXACT_FIT


@dataclass(frozen=True, repr=False)
class LayoutReport:
    """The answer for one config: layouts, stages, TMA bytes and the capacity verdict.

    Frozen: no attribute is assigned after the report is made (``dataclasses.FrozenInstanceError``);
    a pass that changes one (the ``--check-kernel`` pass, a cached report's provenance, a
    preset's approximation) makes a new report with :func:`dataclasses.replace`.

    ``error`` is set (and every number is ``None``) when the config does not compile: no
    number ever comes from a translation unit with errors. ``checked`` says what was
    checked: ``types`` (the kernel's types were instantiated; asserts in kernel bodies, such
    as tile-shape checks in ``operator()``, were not) or ``kernel`` (the device entry point
    was instantiated too).
    """

    #: the subject as in the JSON: a config's :meth:`~cutlass_layout.subjects.config.Config.to_dict`,
    #: or a user type's ``{header, type, arch}``
    config: dict
    provenance: Provenance
    #: ``types`` (class types instantiated) or ``kernel`` (the device entry point too)
    checked: str = "types"
    #: the mainloop's stage count (a sparse mainloop's ``StagesA``; a 2.x mainloop's ``kStages``)
    stages: int | None = None
    #: a sparse mainloop's ``{"A": StagesA, "B": StagesB, "E": StagesE}`` (E 0: the metadata
    #: stays in global memory), else ``None``
    stage_counts: dict | None = None
    #: what the subject is: ``kernel`` (CUTLASS 3.x ``GemmUniversal``), ``kernel2x`` (a
    #: CUTLASS 2.x kernel: ``Mma``, ``Epilogue``, ``SharedStorage``), ``direct_conv`` (a 2.x
    #: direct convolution: a 2.x kernel that launches with :attr:`launch`), ``mainloop`` or
    #: ``epilogue`` (a collective alone), ``fmha`` (an FMHA kernel: a :attr:`storage` holding
    #: attention's Q and K/V tiles) or ``storage`` (another type's :attr:`storage`); ``None``
    #: when not computed
    subject_kind: str | None = None
    capacity: Constant | None = None
    kernel: StructLayout | None = None
    mainloop: StructLayout | None = None
    epilogue: StructLayout | None = None
    #: the ``SharedStorage`` of a type that is none of CUTLASS's GEMM shapes (kinds ``fmha``
    #: and ``storage``), as it is: no part of it is called mainloop or epilogue
    storage: StructLayout | None = None
    #: the dynamic shared memory a kernel launches with where that is not
    #: ``sizeof(SharedStorage)`` (a direct convolution's ``Params::get_smem_size()``): its
    #: value, the expression with each term's value, and where the kernel computes it
    launch: Constant | None = None
    tma_transaction_bytes: TmaBytes | None = None
    builder_budget: BuilderBudget | None = None
    #: a 3.x kernel's CTAs per SM and what limits them (:class:`~cutlass_layout.model.launch.Occupancy`);
    #: ``None`` for any other subject
    occupancy: Occupancy | None = None
    #: a 3.x kernel's ``Params``: size, alignment, TMA descriptor offsets, parameter limit
    #: (:class:`~cutlass_layout.model.launch.ParamsLayout`); ``None`` for any other subject
    params: ParamsLayout | None = None
    #: the same ``Params`` laid out on the MSVC x64 host ABI (a second parse, cl.exe's:
    #: ``abi`` ``msvc-x64``), where it was read; its findings are its own (not in
    #: ``launch_findings``, which are the parse's ABI's)
    params_msvc: ParamsLayout | None = None
    #: why ``params`` or ``params_msvc`` is missing where ``layout`` asked for them
    params_note: str | None = None
    #: a 3.x kernel's cluster and whether its arch launches it
    #: (:class:`~cutlass_layout.model.launch.ClusterLegality`); ``None`` for any other subject
    cluster: ClusterLegality | None = None
    #: the mainloop's TMA transaction bytes against its TMA-filled stage buffers
    #: (:class:`~cutlass_layout.model.launch.TmaCheck`); ``None`` for a subject with no 3.x mainloop
    tma_check: TmaCheck | None = None
    #: a CUTLASS 2.x mainloop's class and staged element types (:class:`MainloopChoice`);
    #: ``None`` for 3.x subjects and epilogues
    mainloop_class: MainloopChoice | None = None
    error: CompileError | None = None
    #: diagnostics of the ``--check-kernel`` pass that clang gives and nvcc's front end
    #: does not (:data:`cutlass_layout.cpp.clang.CLANG_ONLY`): not a reason to say
    #: "does not compile"; the layout stands
    clang_only: list[CompileError] = field(default_factory=list)
    #: for a preset config, what its numbers approximate (:class:`Approximation`), filled in
    #: by the library's ``layout`` per call (never cached with the layout); else None
    approximation: Approximation | None = field(default=None, compare=False)

    @property
    def capacity_bytes(self) -> int | None:
        return self.capacity.value if self.capacity else None

    @property
    def subject(self) -> StructLayout | None:
        """The struct laid out for the subject: the kernel's SharedStorage, for a lone
        collective (``--type`` naming a mainloop or epilogue) that collective's, for a type of
        no GEMM shape its :attr:`storage`."""
        return self.kernel or self.mainloop or self.epilogue or self.storage

    @property
    def smem_bytes(self) -> int | None:
        """The bytes compared with the capacity: :attr:`launch` where the kernel launches
        with a size of its own, else ``sizeof`` of :attr:`subject` (``None`` if not computed)."""
        if self.launch is not None:
            return self.launch.value
        return None if self.subject is None else self.subject.size

    @property
    def headroom_bytes(self) -> int | None:
        """Capacity minus :attr:`smem_bytes`; negative when over."""
        if self.smem_bytes is None or self.capacity is None:
            return None
        return self.capacity.value - self.smem_bytes

    @property
    def fits(self) -> bool | None:
        """Whether the kernel's SharedStorage fits the capacity (``None`` if not computed)."""
        h = self.headroom_bytes
        return None if h is None else h >= 0

    @property
    def exact_fit(self) -> bool | None:
        """Headroom exactly 0: fits (CUDA takes the opt-in limit itself), but any growth puts
        it over, and TensorRT-LLM's occupancy check (``compute_occupancy_for_kernel``, which
        its SM80 MoE and fpA_intB launchers run) rejects it (``None`` if not computed)."""
        h = self.headroom_bytes
        return None if h is None else h == 0

    @property
    def verdict(self) -> Verdict:
        """The :class:`~cutlass_layout.model.verdict.Verdict` of :attr:`error` and
        :attr:`headroom_bytes` (:func:`~cutlass_layout.model.verdict.verdict_of`): ``fits``,
        ``exact_fit``, ``over_capacity`` or ``does_not_compile``."""
        return verdict_of(self.error, self.headroom_bytes)

    def numbers(self) -> KernelNumbers:
        """This report's :class:`KernelNumbers`: the one flat projection every row reads."""
        if self.error is not None:
            return KernelNumbers(Verdict.DOES_NOT_COMPILE, error=self.error)

        def size(s: StructLayout | None) -> int | None:
            return None if s is None else s.size

        return KernelNumbers(
            self.verdict,
            self.stages,
            size(self.kernel),
            size(self.mainloop),
            size(self.epilogue),
            self.capacity_bytes,
            self.headroom_bytes,
            stage_counts=self.stage_counts,
            occupancy=self.occupancy,
            params=self.params,
            cluster=self.cluster,
            tma_check=self.tma_check,
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as the documented ``layout --json`` object (schema :data:`LAYOUT_SCHEMA`)."""

        def struct(s: StructLayout | None):
            return None if s is None else plain(s)

        def const(c: Constant | None):
            return None if c is None else plain(c)

        tma = None
        if self.tma_transaction_bytes is not None:
            t = self.tma_transaction_bytes
            tma = {
                "mk": t.mk.value if t.mk else None,
                "nk": t.nk.value if t.nk else None,
                "total": t.total.value if t.total else None,
                "expressions": {k: const(getattr(t, k)) for k in ("mk", "nk", "total")},
            }
        return {
            "schema": LAYOUT_SCHEMA,
            "provenance": plain(self.provenance),
            "config": self.config,
            "checked": self.checked,
            # the layout schema's verdict is three-valued: an exact fit is "fits", with its own
            # "exact_fit" flag below
            "verdict": schema_verdict(self.verdict),
            "stages": self.stages,
            "stage_counts": self.stage_counts,
            "subject_kind": self.subject_kind,
            "capacity_bytes": self.capacity_bytes,
            "capacity": const(self.capacity),
            "kernel": struct(self.kernel),
            "mainloop": struct(self.mainloop),
            "epilogue": struct(self.epilogue),
            "storage": struct(self.storage),
            "launch": const(self.launch),
            "smem_bytes": self.smem_bytes,
            "tma_transaction_bytes": tma,
            "builder_budget": None
            if self.builder_budget is None
            else {**plain(self.builder_budget), "budgeted_bytes": self.builder_budget.budgeted_bytes},
            "mainloop_class": None if self.mainloop_class is None else plain(self.mainloop_class),
            "occupancy": None if self.occupancy is None else self.occupancy.to_dict(),
            "params": None if self.params is None else self.params.to_dict(),
            "params_msvc": None if self.params_msvc is None else self.params_msvc.to_dict(),
            "params_note": self.params_note,
            "cluster": None if self.cluster is None else self.cluster.to_dict(),
            "launch_findings": self.numbers().launch_findings,
            "tma_check": None if self.tma_check is None else self.tma_check.to_dict(),
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "exact_fit": self.exact_fit,
            "error": None if self.error is None else plain(self.error),
            "clang_only": [plain(e) for e in self.clang_only],
            "approximation": None if self.approximation is None else self.approximation.to_dict(),
        }

    def __repr__(self) -> str:
        c = self.config or {}
        if "type" in c or "tactic" in c:
            what = c.get("type") or c["tactic"]
        else:  # a config: the parts it has
            ab = f"{c['a']}x{c['b']}" if c.get("a") and c.get("b") else c.get("a")
            parts = [
                c.get("arch"),
                c.get("kernel"),
                ab,
                "x".join(map(str, c.get("tile") or ())),
                f"stages={c['stages']}" if c.get("stages") is not None else None,
                c.get("preset"),
            ]
            what = " ".join(str(p) for p in parts if p) or "config"
        if self.error is not None:
            return f"<LayoutReport {what}: {self.error.one_line()}>"
        if self.smem_bytes is None:
            return f"<LayoutReport {what}: no layout>"

        def known(v) -> str:
            return "?" if v is None else str(v)

        return (
            f"<LayoutReport {what}: {known(self.stages)} stages, {known(self.smem_bytes)} B of "
            f"{known(self.capacity_bytes)} B, {self.verdict}>"
        )

    @classmethod
    def from_dict(cls, d: dict, *, lazy: bool = False) -> LayoutReport:
        """The report from its :meth:`to_dict` object (values computed from others, such as
        ``verdict`` and ``headroom_bytes``, are computed again, not read); ``lazy``: each
        struct's members are made when first read (:meth:`StructLayout.from_dict`). Every
        attribute is given (``approximation`` None: never stored with a report), so the report
        is built without the constructor (a cached audit reads some 6,000 back, and a frozen
        dataclass's constructor sets each attribute through ``object.__setattr__``)."""

        def struct(s):
            return None if s is None else StructLayout.from_dict(s, lazy=lazy)

        def const(c):
            return None if c is None else Constant(**c)

        tma = d.get("tma_transaction_bytes")
        budget = d.get("builder_budget")
        obj = object.__new__(cls)
        obj.__dict__.update(
            config=d["config"],
            provenance=Provenance(**d["provenance"]),
            checked=d.get("checked", "types"),
            stages=d.get("stages"),
            stage_counts=d.get("stage_counts"),
            subject_kind=d.get("subject_kind"),
            capacity=const(d.get("capacity")),
            kernel=struct(d.get("kernel")),
            mainloop=struct(d.get("mainloop")),
            epilogue=struct(d.get("epilogue")),
            storage=struct(d.get("storage")),
            launch=const(d.get("launch")),
            tma_transaction_bytes=None
            if tma is None
            else TmaBytes(**{k: const(tma["expressions"][k]) for k in ("mk", "nk", "total")}),
            builder_budget=None
            if budget is None
            else BuilderBudget(
                capacity=Constant(**budget["capacity"]),
                carveout_bytes=budget["carveout_bytes"],
                stage_bytes=budget["stage_bytes"],
                stages=budget["stages"],
            ),
            mainloop_class=None if d.get("mainloop_class") is None else MainloopChoice(**d["mainloop_class"]),
            occupancy=None if d.get("occupancy") is None else Occupancy.from_dict(d["occupancy"]),
            params=None if d.get("params") is None else ParamsLayout.from_dict(d["params"]),
            params_msvc=None if d.get("params_msvc") is None else ParamsLayout.from_dict(d["params_msvc"]),
            params_note=d.get("params_note"),
            cluster=None if d.get("cluster") is None else ClusterLegality.from_dict(d["cluster"]),
            tma_check=None if d.get("tma_check") is None else TmaCheck.from_dict(d["tma_check"]),
            error=None if d.get("error") is None else CompileError(**d["error"]),
            clang_only=[CompileError(**e) for e in d.get("clang_only") or []],
            approximation=None,
        )
        return obj
