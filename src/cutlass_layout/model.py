"""The one model every frontend fills, every command returns and every report reads:
plain dataclasses, and their JSON (``to_dict``, built with :func:`plain`, the one serializer).

* layouts (libclang): :class:`FieldLayout`, :class:`StructLayout`, :class:`Constant`,
  :class:`TmaBytes`, :class:`BuilderBudget`, :class:`MainloopChoice`, :class:`CompileError`,
  :class:`Provenance`, and one config's answer, :class:`LayoutReport` (with, for a preset,
  its :class:`Approximation`);
* scans (tree-sitter, declarations as written): :class:`Scope`, :class:`Field`,
  :class:`Struct`, :class:`ScanConstant`, :class:`Diagnostic`, :class:`ScanResult`;
* sweeps: :class:`StageSearch`, :class:`SweepRecord`, :class:`SweepResult`;
* diffs: :class:`StructuralChange`, :class:`NumericRecord` (with :class:`MemberSpan` and
  :class:`TmaValues`), :class:`MemberChange`, :class:`NumericRow`, :class:`Side`,
  :class:`Rename`, :class:`TacticChange`, :class:`AuditDiff`, :class:`DiffResult`;
* audits: :class:`Tactic`, :class:`AuditResult`, :class:`AuditShard` (one shard's part of an
  audit), and flashinfer's tactics blocklist:
  :class:`BlocklistFormat`, :class:`Blocklist`.

This module imports nothing from the package (the configs in sweep and diff results are
:class:`cutlass_layout.subjects.config.Config` objects, named here for type checkers only).

All sizes, offsets and paddings are in **bytes**. A field's ``offset`` counts from the start
of the top-level struct it belongs to (the kernel's, the mainloop's or the epilogue's
``SharedStorage``), so ``tensors.epilogue`` at 73728 means byte 73728 of the kernel struct.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for annotations only: config.py builds on errors, this module on nothing
    from .subjects.config import Config

_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value):
    """JSON values of a dataclass (a dict of its fields, in order), recursively through
    lists, tuples (as lists) and dicts: what :func:`dataclasses.asdict` gives, without its
    deep copies (a scan of a whole tree has tens of thousands of records)."""
    cls = type(value)
    names = _NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    if names is not None:
        return {n: plain(getattr(value, n)) for n in names}
    if cls is list or cls is tuple:
        return [plain(v) for v in value]
    if cls is dict:
        return {k: plain(v) for k, v in value.items()}
    return value

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
    fields: list["FieldLayout"] = field(default_factory=list)
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
    def from_dict(cls, d: dict) -> "FieldLayout":
        """The inverse of :func:`plain`. Raises ``TypeError``, as the constructor does, for a
        key that is not an attribute or a required one missing. (Built without the
        constructor: a cached audit holds hundreds of thousands of members.)"""
        keys = d.keys()
        if not (keys <= FIELD_KEYS and FIELD_REQUIRED <= keys):
            raise TypeError(f"FieldLayout: unknown keys {sorted(keys - FIELD_KEYS)}, "
                            f"missing {sorted(FIELD_REQUIRED - keys)}")
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
FIELD_KEYS = frozenset(f.name for f in fields(FieldLayout))
FIELD_REQUIRED = frozenset(f.name for f in fields(FieldLayout)
                            if f.default is MISSING and f.default_factory is MISSING)
_FIELD_DEFAULTS = {f.name: f.default for f in fields(FieldLayout) if f.default is not MISSING}


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
    def from_dict(cls, d: dict, *, lazy: bool = False) -> "StructLayout":
        """The inverse of :func:`plain`. Raises ``TypeError``, as the constructor does, for a
        key that is not an attribute or a required one missing.

        ``lazy``: the members (``d["fields"]``, plain dicts) are made into
        :class:`FieldLayout` objects when :attr:`fields` is first read, not now (a warm audit
        of a whole install reads back 5,775 reports, about 300,000 members, and shows their
        sizes only); their keys are checked then, as :meth:`FieldLayout.from_dict` checks
        them (:func:`cutlass_layout.engine.loop.load_report` checks them first)."""
        if not lazy:
            return cls(**{**d, "fields": [FieldLayout.from_dict(f) for f in d.get("fields", [])]})
        keys = d.keys()
        if not (keys <= _STRUCT_KEYS and _STRUCT_REQUIRED <= keys):
            raise TypeError(f"StructLayout: unknown keys {sorted(keys - _STRUCT_KEYS)}, "
                            f"missing {sorted(_STRUCT_REQUIRED - keys)}")
        obj = object.__new__(cls)
        attrs = obj.__dict__
        attrs.update(_STRUCT_DEFAULTS)
        attrs.update(d)
        attrs.pop("fields", None)
        attrs["_members"] = d.get("fields") or []  # plain dicts until read
        return obj

    def __repr__(self) -> str:
        return (f"StructLayout({self.type!r}, size={self.size}, align={self.align}, "
                f"{len(self.fields)} members)")


def _members(self: StructLayout) -> list[FieldLayout]:
    """:attr:`StructLayout.fields`, made from the plain dicts a lazy
    :meth:`StructLayout.from_dict` kept, the first time they are read."""
    attrs = self.__dict__
    made = attrs.get("_fields")
    if made is None:
        made = attrs["_fields"] = [FieldLayout.from_dict(f) for f in attrs.pop("_members", ())]
    return made


def _set_members(self: StructLayout, value: list[FieldLayout]) -> None:
    self.__dict__.pop("_members", None)
    self.__dict__["_fields"] = value


# ``fields`` stays a dataclass field (the constructor, ``dataclasses.fields``, equality,
# :func:`plain`) read and written through this property, so that it can be made lazily.
StructLayout.fields = property(_members, _set_members, doc="The members, in order (:class:`FieldLayout`).")
_STRUCT_KEYS = frozenset(f.name for f in fields(StructLayout))
_STRUCT_REQUIRED = frozenset(f.name for f in fields(StructLayout)
                             if f.default is MISSING and f.default_factory is MISSING)
_STRUCT_DEFAULTS = {f.name: f.default for f in fields(StructLayout) if f.default is not MISSING}


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
    the table, CSV and JSON of each). Made only by :meth:`LayoutReport.numbers`, so that no
    row computes a number of its own. Bytes throughout; every number is ``None`` where the
    kernel does not compile (or was not laid out).

    Attributes:
        verdict: ``fits``, ``over_capacity`` or ``does_not_compile``.
        stages: the mainloop's stage count.
        kernel_bytes, mainloop_bytes, epilogue_bytes: ``sizeof`` of the kernel's, the
            mainloop's and the epilogue's SharedStorage.
        capacity_bytes: the arch's capacity, read from the headers.
        headroom_bytes: capacity minus :attr:`LayoutReport.smem_bytes` (negative: over).
        exact_fit: headroom exactly 0 (``None`` if not computed).
        error: the first compile error, or ``None``.
    """

    verdict: str
    stages: int | None = None
    kernel_bytes: int | None = None
    mainloop_bytes: int | None = None
    epilogue_bytes: int | None = None
    capacity_bytes: int | None = None
    headroom_bytes: int | None = None
    exact_fit: bool | None = None
    error: CompileError | None = None


@dataclass(repr=False)
class LayoutReport:
    """The answer for one config: layouts, stages, TMA bytes and the capacity verdict.

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
    def verdict(self) -> str:
        """``fits``, ``over_capacity`` or ``does_not_compile``."""
        if self.error is not None:
            return "does_not_compile"
        return "fits" if self.fits else "over_capacity"

    def numbers(self) -> KernelNumbers:
        """This report's :class:`KernelNumbers`: the one flat projection every row reads."""
        if self.error is not None:
            return KernelNumbers("does_not_compile", error=self.error)

        def size(s: StructLayout | None) -> int | None:
            return None if s is None else s.size

        return KernelNumbers(self.verdict, self.stages, size(self.kernel), size(self.mainloop),
                             size(self.epilogue), self.capacity_bytes, self.headroom_bytes, self.exact_fit)

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
                "expressions": {
                    k: const(getattr(t, k)) for k in ("mk", "nk", "total")
                },
            }
        return {
            "schema": LAYOUT_SCHEMA,
            "provenance": plain(self.provenance),
            "config": self.config,
            "checked": self.checked,
            "verdict": self.verdict,
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
            "builder_budget": None if self.builder_budget is None else {
                **plain(self.builder_budget), "budgeted_bytes": self.builder_budget.budgeted_bytes},
            "mainloop_class": None if self.mainloop_class is None else plain(self.mainloop_class),
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "exact_fit": self.exact_fit,
            "error": None if self.error is None else plain(self.error),
            "clang_only": [plain(e) for e in self.clang_only],
            "approximation": None if self.approximation is None else self.approximation.to_dict(),
        }

    def __repr__(self) -> str:
        c = self.config
        what = (c["type"] if "type" in c else
                f"{c.get('arch')} {c.get('kernel')} {c.get('a')}x{c.get('b')} "
                f"{'x'.join(map(str, c.get('tile') or ()))} stages={c.get('stages')} {c.get('preset')}")
        if self.error is not None:
            return f"<LayoutReport {what}: {self.error.one_line()}>"
        n = self.smem_bytes
        return (f"<LayoutReport {what}: {self.stages} stages, {'?' if n is None else n} B of "
                f"{self.capacity_bytes} B, {self.verdict}>")

    @classmethod
    def from_dict(cls, d: dict, *, lazy: bool = False) -> "LayoutReport":
        """The report from its :meth:`to_dict` object (values computed from others, such as
        ``verdict`` and ``headroom_bytes``, are computed again, not read); ``lazy``: each
        struct's members are made when first read (:meth:`StructLayout.from_dict`)."""
        def struct(s):
            return None if s is None else StructLayout.from_dict(s, lazy=lazy)

        def const(c):
            return None if c is None else Constant(**c)

        tma = d.get("tma_transaction_bytes")
        budget = d.get("builder_budget")
        return cls(
            config=d["config"], provenance=Provenance(**d["provenance"]),
            checked=d.get("checked", "types"), stages=d.get("stages"),
            stage_counts=d.get("stage_counts"), subject_kind=d.get("subject_kind"),
            capacity=const(d.get("capacity")),
            kernel=struct(d.get("kernel")), mainloop=struct(d.get("mainloop")),
            epilogue=struct(d.get("epilogue")), storage=struct(d.get("storage")),
            launch=const(d.get("launch")),
            tma_transaction_bytes=None if tma is None else TmaBytes(
                **{k: const(tma["expressions"][k]) for k in ("mk", "nk", "total")}),
            builder_budget=None if budget is None else BuilderBudget(
                capacity=Constant(**budget["capacity"]), carveout_bytes=budget["carveout_bytes"],
                stage_bytes=budget["stage_bytes"], stages=budget["stages"]),
            mainloop_class=None if d.get("mainloop_class") is None else MainloopChoice(**d["mainloop_class"]),
            error=None if d.get("error") is None else CompileError(**d["error"]),
            clang_only=[CompileError(**e) for e in d.get("clang_only") or []],
        )


# ==========================================================================================
# scan: declarations as the headers write them (tree-sitter; no sizes, no compiler)

#: Version of the ``scan --json`` schema. Bumped on incompatible changes.
SCAN_SCHEMA = "cutlass-layout/scan/1"


@dataclass
class Scope:
    """One enclosing scope: ``kind`` is namespace, struct, class, union or function.

    ``template_args`` is the text of a partial specialization's argument list
    (``<MainloopSm90TmaGmmaWarpSpecialized<...>, ...>``), which tells the many
    ``CollectiveMma``/``GemmUniversal`` specializations apart; None otherwise.
    """

    kind: str
    name: str
    template_args: str | None = None

    @property
    def short_name(self) -> str:
        """The name with its template arguments abbreviated (:func:`abbrev_args`)."""
        return self.name + abbrev_args(self.template_args)


def short_name(spelling: str) -> str:
    """Shorten a C++ type's template arguments: ``A<x, B<y>>::S`` -> ``A<...>::S``."""
    out, depth = [], 0
    for ch in spelling:
        if ch == "<":
            if depth == 0:
                out.append("<...>")
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def abbrev_args(args: str | None) -> str:
    """``<Mainloop<A, B>, X, Y>`` -> ``<Mainloop<…>, …>``; ``""`` for none."""
    if not args:
        return ""
    inner = args.strip()[1:-1].strip()
    depth, first = 0, inner
    for i, ch in enumerate(inner):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            first = inner[:i] + ", …"
            break
    head, rest = first.split(", …")[0], ", …" if first.endswith(", …") else ""
    if "<" in head:
        head = head[: head.index("<")] + "<…>"
    return f"<{head}{rest}>"


@dataclass
class Field:
    """A data member, in declaration order.

    ``type`` is the declared type as written (whitespace collapsed; the struct's name for a
    member declared with an inline struct, ``union (anonymous)`` for an unnamed one);
    ``alignas`` the text inside ``alignas(...)``/``CUTE_ALIGNAS(...)``; ``extent`` the text
    between the brackets of an array (``"3][4"`` for ``[3][4]``); ``condition`` the ``#if``
    condition(s) guarding it, joined with ``&&``; ``line`` is 1-based.
    """

    name: str
    type: str
    alignas: str | None = None
    extent: str | None = None
    line: int = 0
    condition: str | None = None


@dataclass
class Struct:
    """A storage struct or union (or a struct nested in one).

    ``line``/``end_line`` are the 1-based lines of the keyword and of the closing brace (for a
    ``cut`` struct: the last line of the file). ``qualified_name`` joins the enclosing
    namespaces and classes with ``::`` without template arguments
    (``cutlass::gemm::collective::CollectiveMma::SharedStorage``); ``enclosing`` keeps them with
    their arguments. ``cut`` is True when the file ends before the closing brace.
    ``aliases`` holds the member ``using``/``typedef`` declarations (as :class:`Field` with
    ``name``, ``type`` = the aliased type, ``line``), which say what a field's type stands
    for (``using MainloopTensorStorage = typename CollectiveMainloop::TensorStorage``).
    """

    name: str
    qualified_name: str
    file: str
    line: int
    end_line: int
    kind: str = "struct"
    bases: list[str] = field(default_factory=list)
    alignas: str | None = None
    cut: bool = False
    condition: str | None = None
    enclosing: list[Scope] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    children: list["Struct"] = field(default_factory=list)
    aliases: list[Field] = field(default_factory=list)

    def walk(self):
        """Yield this struct and every nested struct, depth first."""
        yield self
        for c in self.children:
            yield from c.walk()

    def to_dict(self) -> dict:
        """The struct as one entry of the scan JSON's ``structs`` (aliases without
        ``alignas``/``extent``)."""
        d = {n: plain(getattr(self, n)) for n in _STRUCT_OWN}
        d["children"] = [c.to_dict() for c in self.children]
        d["aliases"] = [{"name": a.name, "type": a.type, "line": a.line, "condition": a.condition}
                        for a in self.aliases]
        return d


#: :class:`Struct`'s fields but its children and aliases, which :meth:`Struct.to_dict` adds.
_STRUCT_OWN = tuple(f.name for f in fields(Struct) if f.name not in ("children", "aliases"))


@dataclass
class ScanConstant:
    """A transaction-byte, stage-count or capacity constant.

    ``expression`` is the initializer text (whitespace collapsed); ``value`` its integer value
    (bytes for ``*_smem_capacity_bytes`` and ``TmaTransactionBytes*``) when the expression is
    a literal or a sum/difference/product of literals, else None.
    """

    name: str
    qualified_name: str
    file: str
    line: int
    expression: str
    value: int | None = None
    type: str | None = None
    enclosing: list[Scope] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The constant as one entry of the scan JSON's ``constants``."""
        d = plain(self)
        return {k: d[k] for k in ("name", "qualified_name", "file", "line", "type", "expression",
                                  "value", "enclosing")}


@dataclass
class Diagnostic:
    """Something the scan could not read cleanly: ``file`` (relative), 1-based ``line``."""

    file: str
    line: int
    message: str


@dataclass(repr=False)
class ScanResult:
    """Everything found under ``root``, sorted by file and line.

    ``files_scanned`` counts headers looked at, ``files_parsed`` those that passed the byte
    prefilter and were parsed; ``seconds`` is the wall time of the scan.
    """

    root: str
    structs: list[Struct] = field(default_factory=list)
    constants: list[ScanConstant] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_scanned: int = 0
    files_parsed: int = 0
    source: str | None = None
    seconds: float = 0.0

    def files(self) -> list[str]:
        """Relative paths of the files holding a struct, constant or diagnostic, sorted."""
        return sorted({s.file for s in self.structs} | {c.file for c in self.constants}
                      | {d.file for d in self.diagnostics})

    def __repr__(self) -> str:
        return (f"<ScanResult {self.root}: {self.files_scanned} headers, {len(self.structs)} "
                f"storage structs, {len(self.constants)} constants, {len(self.diagnostics)} "
                "diagnostics>")

    def to_dict(self, file_only: bool = False) -> dict:
        """The documented ``scan --json`` object (schema :data:`SCAN_SCHEMA`): ``schema``,
        ``root``, ``source``, ``files_scanned``, ``files_parsed``, then ``structs``,
        ``constants`` and ``diagnostics`` (or only ``files`` with ``file_only``). Lines are
        1-based; paths relative to ``root``; ``value`` an integer or null."""
        out = {"schema": SCAN_SCHEMA, "root": self.root, "source": self.source,
               "files_scanned": self.files_scanned, "files_parsed": self.files_parsed}
        if file_only:
            out["files"] = self.files()
            return out
        out["structs"] = [s.to_dict() for s in self.structs]
        out["constants"] = [c.to_dict() for c in self.constants]
        out["diagnostics"] = [plain(d) for d in self.diagnostics]
        return out


# ==========================================================================================
# sweep: a grid of configs, and for each the largest stage count that fits

#: Version of the ``sweep --json`` schema.
SWEEP_SCHEMA = "cutlass-layout/sweep/1"
#: The verdicts, in report order.
VERDICTS = ("fits", "over_capacity", "does_not_compile")


#: How a stage-count search ended: ``found`` (``max_stages_that_fit`` is set), ``none fits``
#: (stage counts were laid out and none fits or compiles), ``could not run`` (the config
#: compiles with the builder's own count but no explicit count it was given compiled, so
#: nothing was searched), ``not searched`` (a user type that takes no ``STAGES``).
SEARCH_STATUSES = ("found", "none fits", "could not run", "not searched")


@dataclass
class StageSearch:
    """How the stage-count search of one sweep record ended.

    Attributes:
        status: one of :data:`SEARCH_STATUSES`.
        reason: for ``could not run``, why, e.g. ``StageCount<N> does not compile for this
            builder (N = 2, 3; static_assert failed: Index out of range
            (cute/int_tuple.hpp:56))``; else None.
    """

    status: str
    reason: str | None = None


@dataclass
class SweepRecord:
    """The answer for one config of a sweep. Bytes throughout; ``None`` where not computed.

    Attributes:
        config: the :class:`~cutlass_layout.subjects.config.Config`.
        stages: the mainloop's stage count (the builder's choice for ``stages`` auto).
        mainloop_bytes, epilogue_bytes, kernel_bytes: ``sizeof`` of the three SharedStorage
            structs (``None`` when the config does not compile).
        capacity_bytes: the capacity read from the headers.
        headroom_bytes: capacity minus kernel bytes (negative when over).
        verdict: ``fits``, ``over_capacity`` or ``does_not_compile``.
        max_stages_that_fit: the largest N whose ``StageCount<N>`` kernel fits (layouts of
            N and N+1 both computed), or ``None`` when none was found (``stage_search``
            says whether none fits or the search could not run).
        max_stages_kernel_bytes: the kernel bytes with that many stages.
        stage_search: how the search ended (:class:`StageSearch`); ``None`` reads as
            ``found`` when ``max_stages_that_fit`` is set, else ``none fits`` (``not
            searched`` for a user type that takes no ``STAGES``).
        error: for a config that does not compile, its first error.
        kernel_layout: the kernel's :class:`StructLayout` (for plots; not in the JSON).
    """

    config: Config
    stages: int | None
    mainloop_bytes: int | None
    epilogue_bytes: int | None
    kernel_bytes: int | None
    capacity_bytes: int | None
    headroom_bytes: int | None
    verdict: str
    max_stages_that_fit: int | None
    max_stages_kernel_bytes: int | None
    error: CompileError | None = None
    kernel_layout: StructLayout | None = field(default=None, repr=False, compare=False)
    #: a user type's arch read from its arch tag (its config says ``arch`` None), else None
    arch_from_tag: str | None = None
    #: a preset config's :class:`Approximation` (None for a user type)
    approximation: Approximation | None = field(default=None, compare=False)
    stage_search: StageSearch | None = None

    def search(self) -> StageSearch:
        """``stage_search``, or what the other fields imply when it is ``None``."""
        if self.stage_search is not None:
            return self.stage_search
        if hasattr(self.config, "takes_stages") and not self.config.takes_stages:
            return StageSearch("not searched")
        return StageSearch("none fits" if self.max_stages_that_fit is None else "found")

    @property
    def exact_fit(self) -> bool | None:
        """Headroom 0: fits, but TensorRT-LLM's occupancy check rejects it (``None`` if not
        computed)."""
        return None if self.headroom_bytes is None else self.headroom_bytes == 0

    def to_dict(self) -> dict:
        """The record as one entry of the JSON ``results`` list."""
        config = self.config.to_dict()
        if self.arch_from_tag is not None:
            config = {**config, "arch": self.arch_from_tag, "arch_from": "tag"}
        return {
            "config": config, "stages": self.stages,
            "mainloop_bytes": self.mainloop_bytes, "epilogue_bytes": self.epilogue_bytes,
            "kernel_bytes": self.kernel_bytes, "capacity_bytes": self.capacity_bytes,
            "headroom_bytes": self.headroom_bytes, "verdict": self.verdict,
            "max_stages_that_fit": self.max_stages_that_fit,
            "max_stages_kernel_bytes": self.max_stages_kernel_bytes,
            "stage_search": plain(self.search()),
            "error": None if self.error is None else plain(self.error),
            "exact_fit": self.exact_fit,
            "approximation": None if self.approximation is None else self.approximation.to_dict(),
        }

    def summary(self) -> str:
        """One line, e.g. ``auto: 4 stages, 102400 B, over by 1024; max that fits: 3 stages,
        79872 B``."""
        st = self.config.stages
        user = hasattr(self.config, "takes_stages")  # a user type (sweep --header)
        if user:
            head = "the header's default" if st is None else f"STAGES={st}"
        else:
            head = "auto" if st is None else f"StageCount<{st}>"
        if self.verdict == "does_not_compile":
            err = self.error
            what = "static_assert" if err is not None and err.kind == "static_assert" else "error"
            first = f"{head}: does not compile ({what}: {err.message if err else '?'})"
        else:
            if self.verdict == "fits":
                how = f"fits, headroom {self.headroom_bytes}"
            else:
                how = f"over by {-self.headroom_bytes}"
            size = self.kernel_bytes if self.kernel_bytes is not None else self.capacity_bytes - self.headroom_bytes
            first = f"{head}: {self.stages} stages, {size} B, {how}"
        search = self.search()
        if search.status == "not searched":
            return f"{first} (the type takes no STAGES: no stage count searched)"
        if search.status == "could not run":
            return f"{first}; could not search: {search.reason}"
        if self.max_stages_that_fit is None:
            return f"{first}; no stage count fits"
        return (f"{first}; max that fits: {self.max_stages_that_fit} stages, "
                f"{self.max_stages_kernel_bytes} B")


@dataclass(repr=False)
class SweepResult:
    """A whole sweep.

    Attributes:
        provenance: where the numbers come from (as in the layout report; ``flags`` are
            those of the first config's arch).
        grid: the configs swept, in order.
        records: one :class:`SweepRecord` per config, in the grid's order.
        stats: how the sweep ran (not part of the JSON): ``configs``, ``cached`` (configs
            whose layout came from the results cache), ``laid_out`` (layouts computed,
            search candidates included), ``chunks`` (translation units submitted),
            ``parse_cpu_seconds`` (CPU time of the layouts, all processes), ``seconds``
            (wall), ``worker_peak_rss_mb`` (largest peak RSS of a process that parsed, MB; 0
            when nothing was parsed).
    """

    provenance: Provenance
    grid: list[Config]
    records: list[SweepRecord]
    stats: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        """The documented ``sweep --json`` object (schema :data:`SWEEP_SCHEMA`)."""
        return {
            "schema": SWEEP_SCHEMA,
            "provenance": plain(self.provenance),
            "checked": "types",
            "grid": [c.to_dict() for c in self.grid],
            "results": [r.to_dict() for r in self.records],
        }

    def sorted_records(self) -> list[SweepRecord]:
        """Records ordered by verdict (fits, over_capacity, does_not_compile), then by
        headroom, most room first."""
        def key(r: SweepRecord):
            h = r.headroom_bytes if r.headroom_bytes is not None else -float("inf")
            return (VERDICTS.index(r.verdict), -h)
        return sorted(self.records, key=key)

    def __repr__(self) -> str:
        counts = ", ".join(f"{sum(r.verdict == v for r in self.records)} {v}" for v in VERDICTS)
        return f"<SweepResult {len(self.records)} configs: {counts}>"


# ==========================================================================================
# diff: two CUTLASS trees, what their headers say and what their layouts are

#: Version of the ``diff --json`` schema.
DIFF_SCHEMA = "cutlass-layout/diff/1"
#: :class:`NumericRecord` values compared for every config, in report order.
NUMERIC_KEYS = ("verdict", "stages", "kernel_bytes", "mainloop_bytes", "epilogue_bytes",
                "tma_bytes.mk", "tma_bytes.nk", "tma_bytes.total", "capacity_bytes")


@dataclass
class StructuralChange:
    """One difference in what the headers say.

    Attributes:
        change: ``struct_added``, ``struct_removed``, ``struct_moved``, ``struct_realigned``
            (the struct's own ``alignas``), ``struct_bases_changed``, ``struct_kind_changed``,
            ``struct_condition_changed``, ``field_added``, ``field_removed``,
            ``field_renamed``, ``field_retyped`` (type or array extent), ``field_realigned``
            (``alignas``), ``field_condition_changed``, ``fields_reordered``,
            ``alias_added``, ``alias_removed``, ``alias_changed``, ``constant_added``,
            ``constant_removed``, ``constant_changed`` (expression), ``constant_retyped``,
            ``constant_moved``.
        struct: qualified name of the struct (for a constant: of its enclosing scope).
        specialization: template arguments of the innermost enclosing class specialization,
            abbreviated (``<MainloopSm120ArrayTmaWarpSpecializedBlockScaled<…>, …>``), or None.
        field: the field, alias or constant name (None for a struct-level change).
        old, new: the text before and after (type, ``alignas(16)``, expression, field order,
            field name), None on the side where it does not exist.
        old_file, old_line, new_file, new_line: where, on each side (paths relative to the
            include root, 1-based lines; None on the side where it does not exist).
    """

    change: str
    struct: str
    field: str | None = None
    old: str | None = None
    new: str | None = None
    old_file: str | None = None
    old_line: int | None = None
    new_file: str | None = None
    new_line: int | None = None
    specialization: str | None = None

    def to_dict(self) -> dict:
        return plain(self)


@dataclass(frozen=True)
class MemberSpan:
    """Where a kernel member sits: bytes from the start of the kernel's SharedStorage, and
    its size."""

    offset: int
    size: int


@dataclass
class TmaValues:
    """The mainloop's TMA transaction bytes per stage (``None`` where it defines none)."""

    mk: int | None = None
    nk: int | None = None
    total: int | None = None


@dataclass
class NumericRecord:
    """The numbers of one :class:`LayoutReport` that a diff compares. A config that does
    not compile has only ``verdict`` and ``error`` (its one line) set.

    Attributes:
        verdict: ``fits``, ``over_capacity`` or ``does_not_compile``.
        error: :meth:`CompileError.one_line`, or ``None``.
        stages, kernel_bytes, mainloop_bytes, epilogue_bytes, capacity_bytes,
            headroom_bytes: as in the layout report.
        tma_bytes: the TMA transaction bytes.
        members: every kernel member by dotted name (``tensors.mainloop.smem_SFB``).
    """

    verdict: str
    error: str | None = None
    stages: int | None = None
    kernel_bytes: int | None = None
    mainloop_bytes: int | None = None
    epilogue_bytes: int | None = None
    capacity_bytes: int | None = None
    headroom_bytes: int | None = None
    tma_bytes: TmaValues = field(default_factory=TmaValues)
    members: dict[str, MemberSpan] = field(default_factory=dict)

    @classmethod
    def from_report(cls, rep: LayoutReport) -> "NumericRecord":
        """The report's :meth:`~LayoutReport.numbers`, its TMA bytes and its kernel's members
        (only ``verdict`` and ``error`` where there is no kernel to compare)."""
        n = rep.numbers()
        if n.error is not None or rep.kernel is None:
            return cls(verdict=n.verdict, error=n.error.one_line() if n.error is not None else None)
        tma = rep.tma_transaction_bytes

        def val(c):
            return None if c is None else c.value

        return cls(
            verdict=n.verdict, stages=n.stages, kernel_bytes=n.kernel_bytes, mainloop_bytes=n.mainloop_bytes,
            epilogue_bytes=n.epilogue_bytes, capacity_bytes=n.capacity_bytes, headroom_bytes=n.headroom_bytes,
            tma_bytes=TmaValues(val(tma.mk), val(tma.nk), val(tma.total)) if tma else TmaValues(),
            members={name: MemberSpan(f.offset, f.size) for name, f in rep.kernel.walk()},
        )

    def get(self, key: str):
        """A value of :data:`NUMERIC_KEYS` (``tma_bytes.nk``: the TMA NK bytes)."""
        if key.startswith("tma_bytes."):
            return getattr(self.tma_bytes, key.split(".", 1)[1])
        return getattr(self, key)


@dataclass
class MemberChange:
    """A kernel member whose offset or size differs, or that exists on one side only."""

    name: str
    old: MemberSpan | None
    new: MemberSpan | None


@dataclass
class NumericRow:
    """One config on both trees.

    Attributes:
        config: the :class:`~cutlass_layout.subjects.config.Config`.
        label: :meth:`Config.label <cutlass_layout.subjects.config.Config.label>`.
        old, new: the two :class:`NumericRecord`.
        changed: names of what differs (see :data:`NUMERIC_KEYS`, plus ``kernel.<member>``).
        members: the kernel members that differ.
    """

    config: Config
    label: str
    old: NumericRecord | None
    new: NumericRecord | None
    changed: list[str] = field(default_factory=list)
    members: list[MemberChange] = field(default_factory=list)

    @property
    def verdict_changed(self) -> bool:
        return "verdict" in self.changed

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "label": self.label,
                "old": None if self.old is None else plain(self.old),
                "new": None if self.new is None else plain(self.new),
                "changed": list(self.changed), "members": [plain(m) for m in self.members]}


@dataclass
class Rename:
    """What an install renamed: the part of the tactic's id that differs between the two sides,
    widened to whole words (``1SM`` -> ``1SMfalse`` for flashinfer 0.7.2's dense FP4 GEMM
    structs, which gained a ``SWAP_AB_`` suffix)."""

    old: str
    new: str


@dataclass
class TacticChange:
    """One tactic of two installs' audits (``diff --audit``), paired by its configuration
    (:func:`cutlass_layout.commands.diff.tactic_configuration`), not by its id; or one kernel
    of two CUTLASS kernel libraries', paired by its procedural name
    (:func:`cutlass_layout.commands.diff.pair_library_kernels`).

    Attributes:
        id: the tactic's id (:attr:`Tactic.id`): the new side's where it exists, else the old
            side's; family, name: as in the audit (the same side's).
        change: the one word the rows are sorted and flagged by: ``verdict`` (the verdict
            differs: ``over_capacity -> fits``, ``-> does_not_compile``), ``numbers`` (bytes
            or stages differ, the verdict does not), ``renamed`` (a pair whose ids differ and
            whose numbers are the same), ``added`` (only the new install builds it),
            ``removed`` (only the old one does) or ``same``. A renamed pair whose numbers
            differ too is ``verdict`` or ``numbers`` with :attr:`rename` set; :attr:`kinds`
            lists both.
        old, new: the tactic on each side (None where it does not exist).
        changed: what differs (see :data:`NUMERIC_KEYS`, plus ``kernel.<member>``).
        members: the kernel members that moved or changed size.
        old_id, new_id: each side's id (None where the side has no such tactic).
        rename: the differing part of the two ids (:class:`Rename`), or None where they are
            equal or a side is missing.
        paired_by: how the two were paired: ``id`` (same id), ``configuration`` (the only
            tactic of its configuration on each side), ``name`` (several tactics of one side
            share the configuration: the most alike ids were paired, see
            :func:`cutlass_layout.commands.diff.pair_tactics`), ``core_name`` (two kernel
            libraries' kernels whose names are equal as CUTLASS 4.x spells them:
            :func:`cutlass_layout.commands.diff.library_name`); None for added/removed.
        config: the configuration the tactic was paired by (family, arch, a, b, out, tile,
            cluster, schedule, fusion, swap_ab, kernel; a library kernel's, which it was not
            paired by).
        kernel_bytes_delta: new minus old ``sizeof`` of the kernel's SharedStorage; None where
            a side is missing or does not compile.
    """

    id: str
    family: str
    name: str | None
    change: str
    old: "Tactic | None" = None
    new: "Tactic | None" = None
    changed: list[str] = field(default_factory=list)
    members: list[MemberChange] = field(default_factory=list)
    old_id: str | None = None
    new_id: str | None = None
    rename: Rename | None = None
    paired_by: str | None = None
    config: dict = field(default_factory=dict)
    kernel_bytes_delta: int | None = None

    @property
    def kinds(self) -> list[str]:
        """Every kind of change that applies: ``renamed`` (the ids differ) and ``verdict`` or
        ``numbers``; ``[added]``, ``[removed]``; ``[]`` for the same tactic unchanged."""
        kinds = ["renamed"] if self.rename is not None else []
        if self.change != "renamed" and self.change != "same":
            kinds.append(self.change)
        return kinds

    def to_dict(self) -> dict:
        return {"id": self.id, "family": self.family, "name": self.name, "change": self.change,
                "changed": list(self.changed), "members": [plain(m) for m in self.members],
                "old": None if self.old is None else self.old.to_dict(),
                "new": None if self.new is None else self.new.to_dict(),
                "kinds": self.kinds, "old_id": self.old_id, "new_id": self.new_id,
                "rename": None if self.rename is None else plain(self.rename),
                "paired_by": self.paired_by, "config": plain(self.config),
                "kernel_bytes_delta": self.kernel_bytes_delta}


@dataclass
class AuditDiff:
    """The audit side of a diff: the kernels two installs (or two CUTLASS kernel libraries)
    build for one arch.

    Attributes:
        arch: the arch audited; family: the family kept (None: all).
        rows: one :class:`TacticChange` per tactic of either side, or pair: verdict changes
            first (those now over capacity first), then number changes, renamed tactics,
            tactics only on one side, then the unchanged.
        old_tactics, new_tactics: how many tactics each side's audit has.
        notes: what either audit could not read, each after ``old:``, ``new:`` or ``both:``
            (the same note on both sides, said once).
        kind: ``flashinfer`` (two installs' tactics, paired by configuration) or
            ``cutlass_library`` (two kernel libraries' kernels, paired by procedural name).
        selection: the kernel library's own filters both sides were enumerated with
            (``kernels``, ``ignore_kernels``, ``exclude_kernels``, ``instantiation_level``;
            those given only).
    """

    arch: str
    family: str | None
    rows: list[TacticChange] = field(default_factory=list)
    old_tactics: int = 0
    new_tactics: int = 0
    notes: list[str] = field(default_factory=list)
    kind: str = "flashinfer"
    selection: dict = field(default_factory=dict)

    @property
    def changes(self) -> list[TacticChange]:
        return [r for r in self.rows if r.change != "same"]

    def summary(self) -> dict:
        """How many rows of each kind (``verdict``, ``numbers``, ``renamed``, ``added``,
        ``removed``, ``same``), and the verdict changes by old and new verdict
        (``verdict_changes``: ``[{old, new, count}]``, those now over capacity first, as the
        rows are)."""
        kinds = ("verdict", "numbers", "renamed", "added", "removed", "same")
        out: dict = {k: sum(r.change == k for r in self.rows) for k in kinds}
        moves: dict = {}
        for r in self.rows:
            if r.change == "verdict":
                key = (r.old.verdict, r.new.verdict)
                moves[key] = moves.get(key, 0) + 1
        out["verdict_changes"] = [{"old": a, "new": b, "count": n} for (a, b), n in moves.items()]
        return out

    def to_dict(self) -> dict:
        return {"arch": self.arch, "family": self.family, "kind": self.kind,
                "selection": dict(self.selection), "old_tactics": self.old_tactics,
                "new_tactics": self.new_tactics, "summary": self.summary(), "notes": list(self.notes),
                "tactics": [r.to_dict() for r in self.rows]}


@dataclass
class Side:
    """One side of the diff: what the user named and what it resolved to."""

    source: str
    provenance: Provenance

    @property
    def tree_hash(self) -> str:
        return self.provenance.tree_hash

    def to_dict(self) -> dict:
        return {"source": self.source,
                "provenance": {k: v for k, v in plain(self.provenance).items() if v is not None}}


@dataclass(repr=False)
class DiffResult:
    """The diff of two CUTLASS trees.

    Attributes:
        old, new: the two sides (source and provenance).
        identical: the two trees have the same content hash (nothing was computed).
        grid: the configs of the numeric diff.
        grid_source: ``default``, ``flags``, ``file``, ``python`` or ``none``.
        structural: the structural changes, or None when not asked for.
        files_compared: headers whose bytes differ between the trees (the ones scanned).
        structural_arch: the arch families the structural view was kept to (``["sm120"]``),
            or None for all; structural_others: the changes left out, counted per family
            of the headers they are in (``{"sm100": 18, "conv": 3}``).
        numeric: one row per config, verdict changes first, or None when not asked for.
        notes: plain-language remarks (e.g. why the default grid is empty).
        seconds: wall time of the diff.
    """

    old: Side
    new: Side
    identical: bool
    grid: list[Config] = field(default_factory=list)
    grid_source: str = "none"
    structural: list[StructuralChange] | None = None
    files_compared: int | None = None
    structural_arch: list[str] | None = None
    structural_others: dict[str, int] = field(default_factory=dict)
    numeric: list[NumericRow] | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: the kernels the two installs build (``diff --audit``), or None when not asked for
    audit: AuditDiff | None = None

    @property
    def numeric_changes(self) -> list[NumericRow]:
        """The rows with a difference."""
        return [r for r in (self.numeric or []) if r.changed]

    @property
    def has_differences(self) -> bool:
        """Any structural change, any config whose numbers or verdict differ, or any tactic
        that changed, appeared or disappeared."""
        return (bool(self.structural) or bool(self.numeric_changes)
                or bool(self.audit is not None and self.audit.changes))

    def to_dict(self) -> dict:
        """The documented ``diff --json`` object (schema :data:`DIFF_SCHEMA`)."""
        return {
            "schema": DIFF_SCHEMA,
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "identical": self.identical,
            "has_differences": self.has_differences,
            "grid_source": self.grid_source,
            "grid": [c.to_dict() for c in self.grid],
            "notes": list(self.notes),
            "structural": None if self.structural is None else [c.to_dict() for c in self.structural],
            "files_compared": self.files_compared,
            "structural_arch": self.structural_arch,
            "structural_others": dict(self.structural_others),
            "numeric": None if self.numeric is None else [r.to_dict() for r in self.numeric],
            "audit": None if self.audit is None else self.audit.to_dict(),
        }

    def __repr__(self) -> str:
        def side(s: Side) -> str:
            return f"{s.source} (CUTLASS {s.provenance.cutlass_version}, tree {s.tree_hash})"
        parts = []
        if self.structural is not None:
            parts.append(f"{len(self.structural)} structural changes")
        if self.numeric is not None:
            parts.append(f"{len(self.numeric_changes)} of {len(self.numeric)} configs differ")
        if self.audit is not None:
            parts.append(f"{len(self.audit.changes)} of {len(self.audit.rows)} tactics differ")
        return f"<DiffResult {side(self.old)} -> {side(self.new)}: {', '.join(parts) or 'nothing compared'}>"


# ==========================================================================================
# audit: the kernels an install builds

#: Version of the ``audit --json`` schema.
AUDIT_SCHEMA = "cutlass-layout/audit/1"


@dataclass
class Fix:
    """What fits instead of an over-capacity (or exact-fit) tactic: the same kernel (the same
    launcher, only its mainloop builder's stage-count argument replaced by
    ``cutlass::gemm::collective::StageCount<N>``) laid out for stage counts below the
    builder's own, and the largest N whose kernel fits (headroom >= 0, as :attr:`LayoutReport.fits`
    and ``sweep``'s ``max that fits`` count it: an exact fit fits, :mod:`cutlass_layout.installs.fixes`
    says why). Bytes throughout.

    Attributes:
        stages: that N, or None when no stage count searched fits (or none could be searched).
        kernel_bytes, mainloop_bytes, headroom_bytes: the fixed kernel's ``sizeof`` of its
            SharedStorage, of its mainloop's, and the capacity minus the kernel's.
        carveout_bytes: the smallest C of ``StageCountAutoCarveout<C>`` for which the
            builder's own stage formula (:attr:`formula`, evaluated by the compiler on the
            builder's reduced capacity) gives :attr:`stages`; None where its formula is not read.
        searched: the stage counts laid out, with the kernel bytes of each (``{N: bytes}``;
            None for one that does not compile).
        builder: the builder's own budget of the tactic as built (its reduced capacity, the
            carve-out it was given, its bytes per stage and the stage count it chose), or None.
        uncounted_bytes: the tactic's kernel bytes minus what that budget counts
            (:attr:`BuilderBudget.budgeted_bytes`); positive where the builder overshoots.
        uncounted: where those bytes are in the tactic's kernel, by kind: ``padding``
            (alignment), ``pipelines``, ``scheduler``, ``descriptors`` (TMA descriptors), and
            ``pipeline_overcount`` (negative: per stage the builder counts a 128-byte
            pipeline where the kernel has a smaller one).
        formula: the builder's stage function, in words.
        fewest_stages: where the tactic already has the fewest stages its collective takes (2:
            the SM90 and SM120 collectives, the mixed-input ones included,
            ``static_assert(DispatchPolicy::Stages >= 2)``), that count: no stage count fits, and
            there was nothing below it to lay out; else None.
        error: why no fix was searched (no mainloop ``CollectiveBuilder`` in the launcher, the
            fixed launcher does not compile), else None.
    """

    stages: int | None = None
    kernel_bytes: int | None = None
    headroom_bytes: int | None = None
    carveout_bytes: int | None = None
    mainloop_bytes: int | None = None
    searched: dict = field(default_factory=dict)
    builder: BuilderBudget | None = None
    uncounted_bytes: int | None = None
    uncounted: dict = field(default_factory=dict)
    formula: str | None = None
    error: str | None = None
    fewest_stages: int | None = None

    def to_dict(self) -> dict:
        """The ``fix`` object of a tactic's JSON row (stage counts of ``searched`` as text keys)."""
        b = self.builder
        return {"stages": self.stages, "kernel_bytes": self.kernel_bytes,
                "headroom_bytes": self.headroom_bytes, "carveout_bytes": self.carveout_bytes,
                "mainloop_bytes": self.mainloop_bytes,
                "searched": {str(k): v for k, v in sorted(self.searched.items())},
                "builder": None if b is None else {
                    "reduced_capacity_bytes": b.capacity.value, "carveout_bytes": b.carveout_bytes,
                    "stage_bytes": b.stage_bytes, "stages": b.stages, "budgeted_bytes": b.budgeted_bytes},
                "uncounted_bytes": self.uncounted_bytes, "uncounted": dict(self.uncounted),
                "formula": self.formula, "error": self.error, "fewest_stages": self.fewest_stages}

    @classmethod
    def from_dict(cls, d: dict) -> "Fix":
        """The fix from its :meth:`to_dict` object."""
        b = d.get("builder")
        return cls(stages=d["stages"], kernel_bytes=d["kernel_bytes"], headroom_bytes=d["headroom_bytes"],
                   carveout_bytes=d["carveout_bytes"], mainloop_bytes=d.get("mainloop_bytes"),
                   searched={int(k): v for k, v in (d.get("searched") or {}).items()},
                   builder=None if b is None else BuilderBudget(
                       capacity=Constant(name="ReducedSmemCapacityBytes", value=b["reduced_capacity_bytes"]),
                       carveout_bytes=b["carveout_bytes"], stage_bytes=b["stage_bytes"], stages=b["stages"]),
                   uncounted_bytes=d.get("uncounted_bytes"), uncounted=dict(d.get("uncounted") or {}),
                   formula=d.get("formula"), error=d.get("error"), fewest_stages=d.get("fewest_stages"))


@dataclass
class Tactic:
    """One kernel an installed library builds (a tactic of its runtime), laid out exactly.

    Identity (as the install names it):
        family: ``moe`` for TensorRT-LLM's MoE grouped GEMM; otherwise the flashinfer JIT
            module (``fp4_gemm_cutlass_sm120``, ...).
        name: the install's own name: the TensorRT-LLM tile enum (``CtaShape128x256x64B``,
            K in bytes of the activation, as its dispatch counts it) for ``moe``, else the
            launcher (struct or function) and kernel alias.
        a, b: the mainloop's A and B element kinds, named as ``layout``'s flags name them
            (``nvfp4``, ``mxfp4``, ``mxfp8``, ``e4m3``, ``bf16``, ...; with ``swap_ab`` A is the
            weight); out: the output (D, or the scatter epilogue's final output) kind.
        fusion: ``none``, ``finalize``, ``activation`` (TensorRT-LLM's epilogue fusion) or None.
        swap_ab: whether A and B are swapped (None where the source has no such choice).
        tile: the CTA tile (M, N, K), K in elements, as the kernel's template arguments give
            it (for TensorRT-LLM's SM10x MoE kernels, the tile of one CTA as its
            ``CtaShape...B`` enum names it: ``mma_tile`` is 2M for 2SM, 3K for SM103); cluster: (M, N, K), or None when
            it is a runtime value.
        kernel: ``grouped`` (ptr-array) or ``dense``; schedule: the kernel schedule tag (where
            the dispatch policy has none, as SM100's, the policy's name).
        mma_sms: 1 or 2, the SMs one MMA spans (SM100's 1SM and 2SM kernels: TensorRT-LLM's
            ``cluster_shape`` 1x1x1 or 2x1x1, also for a dynamic cluster); None where the arch has
            no such choice.
        dynamic_cluster: whether the kernel takes its cluster shape at run time (TensorRT-LLM's
            ``DYNAMIC_CGA``, a ``dynamic_cluster_shape`` other than ``Undefined``); None where
            the arch has no such choice.
        epilogue_schedule: ``tma`` or ``nosmem`` (TensorRT-LLM's ``EpilogueScheduleType``: a
            TMA epilogue or one without shared memory); None where the launcher has no choice.
        mma_tile: the tile (M, N, K in elements) the kernel's mainloop is built with, where it
            is not ``tile``: TensorRT-LLM's SM10x MoE launcher builds its ``MmaTileShape`` as
            2M for a 2SM kernel and 3K for an SM103 one (``moe_gemm_tma_ws_launcher.inl``), and
            the kernel's type says so; None where it equals ``tile``.
        sm_version: TensorRT-LLM's ``CutlassGemmConfig::sm_version`` whose dispatch runs the
            kernel: the launcher's arch tag (100 for ``Sm100``, 103 for ``Sm103``: an SM103
            build compiles both, the same tile enums under each); None where the arch has no
            such choice (SM90, SM120, other families).
    Where:
        file, line: the generated (or rendered) source and the line of the instantiation;
        launcher: the function or struct whose body names the kernel; launcher_file,
        launcher_line: where the kernel type alias is written (the launcher's header).
    Numbers: ``report`` (a :class:`LayoutReport`: every member, stages, capacity, error).
        fix: what fits instead (:class:`Fix`; over-capacity and exact-fit tactics).
        runtime_candidate: whether the install's runtime candidate list for the arch would
            try this tactic (None when that list cannot be read).
        runtime_guard: for a tactic over capacity, what rejects it at run time before it
            launches, in words (the SM80-path MoE launcher's occupancy check); None where
            nothing does (a launch fails, "Error Internal"). ``audit --check`` does not fail
            on a guarded tactic.
    """

    family: str
    name: str | None
    a: str | None
    b: str | None
    out: str | None
    fusion: str | None
    swap_ab: bool | None
    tile: list[int] | None
    cluster: list[int] | None
    kernel: str | None
    schedule: str | None
    file: str
    line: int | None
    launcher: str
    launcher_file: str | None = None
    launcher_line: int | None = None
    runtime_candidate: bool | None = None
    report: LayoutReport | None = None
    #: what fits instead (:class:`Fix`), for a tactic over capacity or an exact fit; None for
    #: one that fits, does not compile, or was not searched
    fix: Fix | None = None
    mma_sms: int | None = None
    dynamic_cluster: bool | None = None
    epilogue_schedule: str | None = None
    mma_tile: list[int] | None = None
    sm_version: int | None = None
    runtime_guard: str | None = None

    @property
    def id(self) -> str:
        """Unique within an audit: ``family/name/AxB/out[/fusion][/swap_ab][/clusterMxNxK][/NSM][/dynamic_cluster][/nosmem][/smV]``
        (``moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize``; SM90, whose generator writes
        one launcher per static cluster of a tile enum:
        ``moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x1x1``; SM100:
        ``moe/CtaShape128x64x128B/e4m3xe4m3/bf16/none/swap_ab/2sm/dynamic_cluster/nosmem``; the
        Sm103 kernels of an SM103 build, beside its Sm100 ones of the same tile enums:
        ``moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/1sm/sm103``): ``smV`` for a
        ``sm_version`` other than 100; ``clusterMxNxK`` (:meth:`cluster_part`) for a static
        cluster other than 1x1x1 that neither the name nor the 1SM/2SM part says."""
        parts = [self.family, self.name or self.launcher, f"{self.a}x{self.b}", str(self.out)]
        if self.fusion:
            parts.append(self.fusion)
        if self.swap_ab:
            parts.append("swap_ab")
        if self.cluster_part():
            parts.append(self.cluster_part())
        if self.mma_sms:
            parts.append(f"{self.mma_sms}sm")
        if self.dynamic_cluster:
            parts.append("dynamic_cluster")
        if self.epilogue_schedule == "nosmem":
            parts.append("nosmem")
        if self.sm_version not in (None, 100):
            parts.append(f"sm{self.sm_version}")
        return "/".join(parts)

    def cluster_part(self) -> str | None:
        """The id's cluster part, ``cluster2x1x1``, for a TensorRT-LLM MoE tactic named by its
        tile enum alone (``CtaShape...B``; the SM90 mixed-input names carry
        ``_ClusterShape_...`` themselves) with a static cluster other than 1x1x1 and no 1SM/2SM
        choice (SM10x's ``mma_sms`` follows its cluster's M): SM90's generator writes one
        launcher per cluster of a tile (1x1x1, 2x1x1, 1x2x1, 2x2x1 in flashinfer 0.7.2.post1).
        None otherwise: 1x1x1, the only cluster of SM120's launchers, is left out, so their
        ids have none."""
        if (self.family != "moe" or not str(self.name).startswith("CtaShape") or "_ClusterShape_" in self.name
                or self.mma_sms is not None or not self.cluster or list(self.cluster) == [1, 1, 1]):
            return None
        return "cluster" + "x".join(map(str, self.cluster))

    # The numbers of the ``audit --json`` row, as attributes: each is the report's
    # :meth:`LayoutReport.numbers` (so no row computes a number of its own), ``to_dict`` reads
    # these. None where the kernel does not compile (or was not laid out).
    def _numbers(self) -> KernelNumbers:
        # read afresh each time (a few attribute reads): a report changed after the row was
        # made (a copy edited in a test, a fix re-laid out) is the number the row shows
        rep = self.report
        return KernelNumbers("does_not_compile") if rep is None else rep.numbers()

    def _row_numbers(self) -> dict:
        """:data:`TACTIC_NUMBERS` as the attributes of those names give them, from one
        :meth:`_numbers` (a row of 5,775 read it 8 times each)."""
        n = self._numbers()
        return {"stages": n.stages, "kernel_bytes": n.kernel_bytes, "mainloop_bytes": n.mainloop_bytes,
                "epilogue_bytes": n.epilogue_bytes, "capacity_bytes": n.capacity_bytes,
                "headroom_bytes": n.headroom_bytes, "verdict": self._verdict(n),
                "runtime_candidate": self.runtime_candidate}

    @staticmethod
    def _verdict(n: KernelNumbers) -> str:
        return "exact_fit" if n.verdict == "fits" and n.exact_fit else n.verdict

    @property
    def stages(self) -> int | None:
        """The mainloop's pipeline stages."""
        return self._numbers().stages

    @property
    def kernel_bytes(self) -> int | None:
        """``sizeof`` of the kernel's SharedStorage (what the launch asks for)."""
        return self._numbers().kernel_bytes

    @property
    def mainloop_bytes(self) -> int | None:
        """``sizeof`` of the mainloop collective's SharedStorage."""
        return self._numbers().mainloop_bytes

    @property
    def epilogue_bytes(self) -> int | None:
        """``sizeof`` of the epilogue collective's SharedStorage."""
        return self._numbers().epilogue_bytes

    @property
    def capacity_bytes(self) -> int | None:
        """The arch's per-block capacity, read from the headers."""
        return self._numbers().capacity_bytes

    @property
    def headroom_bytes(self) -> int | None:
        """Capacity minus kernel bytes; negative when over capacity."""
        return self._numbers().headroom_bytes

    @property
    def verdict(self) -> str:
        """``fits``, ``exact_fit``, ``over_capacity`` or ``does_not_compile``."""
        return self._verdict(self._numbers())

    @property
    def error(self) -> "CompileError | None":
        """The first compile error of a kernel that does not compile (else None)."""
        return None if self.report is None else self.report.error

    def identity(self) -> dict:
        """The fields that name this tactic (everything but the numbers): :data:`TACTIC_IDENTITY`."""
        return {k: getattr(self, k) for k in TACTIC_IDENTITY}

    def to_dict(self) -> dict:
        """One entry of the ``audit --json`` ``tactics`` list (bytes throughout): the id, the
        identity, then :data:`TACTIC_NUMBERS` (each the attribute of that name) and the error."""
        return {"id": self.id, **self.identity(), **self._row_numbers(),
                "error": plain(self.error), "fix": None if self.fix is None else self.fix.to_dict(),
                "runtime_guard": self.runtime_guard}

    @classmethod
    def from_dict(cls, d: dict, provenance: Provenance | None = None) -> "Tactic":
        """The tactic of a :meth:`to_dict` row (an ``audit --json`` ``tactics`` entry), whose
        :meth:`to_dict` is that row again (one whose numbers disagree, a headroom that is not
        the capacity minus the kernel bytes, gives another row). A row holds numbers, not
        member layouts: the :attr:`report` has the row's sizes as structs without members
        (type ``""``), its capacity as a constant named ``capacity``, and its error; where
        the row has no kernel bytes but a headroom (a type of no GEMM shape, laid out as a
        :attr:`LayoutReport.storage`), a storage of the capacity minus the headroom.
        ``provenance`` goes into that report.

        Raises:
            KeyError, TypeError, ValueError: not such a row.
        """
        return cls(**cls._fields(d, provenance))

    @staticmethod
    def _fields(d: dict, provenance: Provenance | None) -> dict:
        def struct(n):
            return None if n is None else StructLayout(type="", size=int(n), align=0, tail_padding=0)

        cap, head, kb = d["capacity_bytes"], d["headroom_bytes"], d["kernel_bytes"]
        rep = LayoutReport(config={"tactic": d["id"]}, provenance=provenance, stages=d["stages"],
                           capacity=None if cap is None else Constant(name="capacity", value=int(cap)),
                           kernel=struct(kb), mainloop=struct(d["mainloop_bytes"]),
                           epilogue=struct(d["epilogue_bytes"]),
                           error=None if d["error"] is None else CompileError(**d["error"]))
        if kb is None and cap is not None and head is not None:
            rep.storage = struct(cap - head)
        return {**{k: d[k] for k in TACTIC_IDENTITY}, "runtime_candidate": d["runtime_candidate"],
                "report": rep, "fix": None if d["fix"] is None else Fix.from_dict(d["fix"]),
                "runtime_guard": d["runtime_guard"]}


#: The fields that name a tactic (:meth:`Tactic.identity`), in the order of its JSON row.
TACTIC_IDENTITY = ("family", "name", "a", "b", "out", "fusion", "swap_ab", "tile", "cluster", "kernel",
                   "schedule", "mma_sms", "dynamic_cluster", "epilogue_schedule", "mma_tile", "sm_version",
                   "file", "line", "launcher", "launcher_file", "launcher_line")
#: The numbers of a tactic's JSON row, in order: each is a :class:`Tactic` attribute.
TACTIC_NUMBERS = ("stages", "kernel_bytes", "mainloop_bytes", "epilogue_bytes", "capacity_bytes",
                  "headroom_bytes", "verdict", "runtime_candidate")


@dataclass
class AuditShard:
    """Which part of an audit one run laid out (``audit --shard I/N``), and what the merge of
    every part (``audit --merge``) needs of it, beside its ordinary JSON, to give the audit of
    the whole exactly (:mod:`cutlass_layout.commands.shard`).

    Attributes:
        index, count: shard ``index`` of ``count`` (1 <= index <= count).
        asked: what was asked, the same for every shard of one audit: ``archs`` (as asked:
            ``["all"]``, ``["sm90", "sm120"]``), ``family``, ``grep``, ``filters`` (config key
            -> the values as given), and for CUTLASS's library ``selection`` (its own name
            filters).
        ranks: one per tactic of the result, in its order: the tactic's place in the whole
            audit before sorting (a flashinfer tactic's ``[source, kernel]``: its source's
            position among all the audit's sources, then its kernel's in the source; a library
            kernel's ``[n]``: its place in the generator's list). The tables' sort is stable, so
            the merge puts the tactics in this order before sorting them.
        dropped: ``(rank, tactic)`` of each tactic laid out that the filters (``family``,
            ``grep``, config values) dropped; empty without filters. The merge applies the
            filters again to all shards' tactics, and names the nearest values of all of them
            for a filter that matched nothing.
        capacity_rank: the rank of the tactic the result's ``capacity`` was read from (None
            where none was): the merge's capacity is the shard's of the lowest.
        parts: what else the kind of audit needs, as JSON values (written and read by
            :mod:`cutlass_layout.commands.audit` for a flashinfer install, by
            :mod:`cutlass_layout.commands.library_audit` for CUTLASS's library).
    """

    index: int
    count: int
    asked: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    capacity_rank: list | None = None
    parts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The ``shard`` object of a shard's ``audit --json`` (tactics as their JSON rows)."""
        return {"index": self.index, "count": self.count, "asked": self.asked, "ranks": self.ranks,
                "dropped": [{"rank": r, "tactic": t.to_dict()} for r, t in self.dropped],
                "capacity_rank": self.capacity_rank, "parts": self.parts}

    @classmethod
    def from_dict(cls, d: dict, provenance: Provenance | None = None) -> "AuditShard":
        """The shard from its :meth:`to_dict` object (dropped tactics by
        :func:`tactic_from_dict`, with ``provenance``).

        Raises:
            KeyError, TypeError, ValueError: not such an object.
        """
        return cls(index=int(d["index"]), count=int(d["count"]), asked=dict(d["asked"]),
                   ranks=[list(r) for r in d["ranks"]],
                   dropped=[(list(x["rank"]), tactic_from_dict(x["tactic"], provenance)) for x in d["dropped"]],
                   capacity_rank=None if d["capacity_rank"] is None else list(d["capacity_rank"]),
                   parts=dict(d["parts"]))


@dataclass
class AuditResult:
    """Every kernel an install builds for one arch, laid out.

    Attributes:
        provenance: where the numbers come from: the install (``library``, ``version``,
            ``origin``, ``root``, ``fingerprint``, ``generated_root``, ``builders``), the
            CUTLASS tree and libclang (as in a layout report).
        arch: the arch asked for: ``sm120``, ``sm121`` (laid out with SM120's builds),
            ``sm100``, ``sm103`` or ``sm90`` (:data:`cutlass_layout.commands.audit.AUDIT_ARCHS`).
        capacity: the arch's capacity constant read from the headers, through the kernels
            laid out before any filter (so a filter that keeps no tactic leaves it known); None
            when no kernel was laid out.
        tactics: one :class:`Tactic` per kernel, in the order
            :func:`cutlass_layout.commands.audit.sort_tactics` gives.
        sources: one entry per source the install's JIT compiles for the arch: ``{module,
            builder, family, file, instantiations, kernels, skipped, reason, error}``:
            ``instantiations`` the explicit instantiations and launcher macro calls seen in it
            (None for one skipped), ``kernels`` the kernels found, ``skipped`` why it was not
            read (not built for the arch), ``reason`` why one read without error gives no
            kernel, ``error`` its first error, or what it instantiates that was not laid out
            (:func:`cutlass_layout.commands.audit.judge_source`).
        notes: what the audit could not read, and filters that matched no tactic, in plain
            words.
        stats: how it ran (not part of the JSON): seconds, parsed, cached, peak memory.
        families: the families the install builds for the arch, asked for or not (not part
            of the JSON).
        unmatched: the filters that matched no tactic (not part of the JSON, where they are
            notes): ``{filter, value, nearest, detail, note}`` each: ``filter`` a config key,
            ``grep``, ``family``, or None for filters that match no tactic together;
            ``nearest`` what the tactics have that is nearest the value, as text; ``note``
            the line in ``notes``.
        candidates: the MoE runtime's candidate list as read from the install
            (:class:`cutlass_layout.installs.candidates.Candidates`), or None where it was not read
            (not part of the JSON; ``audit --blocklist`` numbers tactics from it).
        shard: for one shard of an audit (``audit --shard I/N``), which and what a merge needs
            (:class:`AuditShard`; the JSON's ``shard`` object); None for a whole audit.
        asked: what the audit was asked (``family``, ``grep``, ``filters``: config key -> the
            values as typed; as :attr:`AuditShard.asked`), where the audit says (not part of
            the JSON).
    """

    provenance: dict
    arch: str
    capacity: Constant | None
    tactics: list[Tactic]
    sources: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict, compare=False)
    families: list[str] = field(default_factory=list, compare=False)
    unmatched: list[dict] = field(default_factory=list, compare=False)
    candidates: Any = field(default=None, compare=False)
    shard: AuditShard | None = None
    asked: dict = field(default_factory=dict, compare=False)

    @property
    def capacity_bytes(self) -> int | None:
        return None if self.capacity is None else self.capacity.value

    def over_capacity_candidates(self) -> list[Tactic]:
        """Tactics the runtime would try (``runtime_candidate`` True) that are over capacity."""
        return [t for t in self.tactics if t.verdict == "over_capacity" and t.runtime_candidate]

    def check_failures(self) -> list[Tactic]:
        """What ``audit --check`` fails on: tactics over capacity that the runtime would try,
        or may try (``runtime_candidate`` True or None: its list could not be read), and that
        no run-time check rejects before launch (``runtime_guard`` None)."""
        return [t for t in self.tactics if t.verdict == "over_capacity" and t.runtime_candidate is not False
                and t.runtime_guard is None]

    def source_summary(self) -> dict[str, dict]:
        """Per family (in the order of :attr:`sources`), the counts of its sources:
        ``{sources, skipped, instantiations, kernels, errors, without_kernel}``: all of them,
        those skipped, the instantiations seen and kernels found in the others, those with an
        error (not read, or instantiating what was not laid out), and those read without
        error that give no kernel (each has a ``reason``)."""
        out: dict[str, dict] = {}
        for s in self.sources:
            fam = out.setdefault(s.get("family") or s.get("module"), {
                "sources": 0, "skipped": 0, "instantiations": 0, "kernels": 0, "errors": 0,
                "without_kernel": 0})
            fam["sources"] += 1
            if s.get("skipped"):
                fam["skipped"] += 1
                continue
            fam["instantiations"] += s.get("instantiations") or 0
            fam["kernels"] += s.get("kernels") or 0
            if s.get("error"):
                fam["errors"] += 1
            elif not s.get("kernels"):
                fam["without_kernel"] += 1
        return out

    def to_dict(self) -> dict:
        """The documented ``audit --json`` object (schema :data:`AUDIT_SCHEMA`)."""
        return {
            "schema": AUDIT_SCHEMA, "provenance": self.provenance, "arch": self.arch,
            "checked": "types",
            "capacity_bytes": self.capacity_bytes,
            "capacity": None if self.capacity is None else plain(self.capacity),
            "tactics": [t.to_dict() for t in self.tactics],
            "sources": self.sources, "summary": self.source_summary(), "notes": self.notes,
            **({} if self.shard is None else {"shard": self.shard.to_dict()}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "AuditResult":
        """The result of an ``audit --json`` object (:meth:`to_dict`; its ``summary`` is
        computed again, a ``verification`` left out): tactics by :func:`tactic_from_dict`, their
        reports holding the rows' numbers and a :class:`Provenance` of the audit's. ``stats``,
        ``families``, ``unmatched`` and ``candidates``, which the JSON does not hold, are empty.

        Raises:
            KeyError, TypeError, ValueError: not such an object.
        """
        p = d["provenance"]
        prov = Provenance(**{k: p.get(k) for k in ("cutlass_root", "cutlass_version", "tree_hash", "libclang_version",
                                                   "cuda_path", "cuda_source", "flags")},
                          origin=p.get("cutlass_origin", p.get("origin")))
        return cls(provenance=dict(p), arch=d["arch"],
                   capacity=None if d["capacity"] is None else Constant(**d["capacity"]),
                   tactics=[tactic_from_dict(t, prov) for t in d["tactics"]],
                   sources=[dict(s) for s in d["sources"]], notes=list(d["notes"]),
                   shard=None if d.get("shard") is None else AuditShard.from_dict(d["shard"], prov))


@dataclass
class AuditSet:
    """The audits of several arches of one install (``audit(src, arch=["sm90", "sm120"])``,
    or ``arch="all"``: :func:`cutlass_layout.commands.audit.audit_archs`), one
    :class:`AuditResult` per arch, each judged against its own arch's capacity.

    Attributes:
        results: one :class:`AuditResult` per arch, in the order asked (``all``: the arches
            the install has builders for, ascending: sm90, sm100, sm103, sm120).
        notes: what was left out and why, in plain words: arches ``all`` found no builder
            for, or whose builders give nothing of what was asked (not part of the JSON).
    """

    results: list[AuditResult]
    notes: list[str] = field(default_factory=list)

    @property
    def archs(self) -> list[str]:
        """The arches audited, in the order of :attr:`results`."""
        return [r.arch for r in self.results]

    def check_failures(self) -> list[tuple[str, Tactic]]:
        """What ``audit --check`` fails on, arch by arch: ``(arch, tactic)`` for each of every
        result's :meth:`AuditResult.check_failures`, in the order of :attr:`results`."""
        return [(r.arch, t) for r in self.results for t in r.check_failures()]

    def to_dict(self) -> dict:
        """``audit --json`` of several arches: ``{"audits": [...]}``, each arch's one-arch
        object (:meth:`AuditResult.to_dict`) in the order of :attr:`results`."""
        return {"audits": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, d: dict) -> "AuditSet":
        """The set of an ``audit --json`` object of several arches (``{"audits": [...]}``),
        each by :meth:`AuditResult.from_dict`; ``notes`` (not in the JSON) empty.

        Raises:
            KeyError, TypeError, ValueError: not such an object.
        """
        return cls(results=[AuditResult.from_dict(a) for a in d["audits"]])


@dataclass
class AuditVerification:
    """What nvcc's own front end computed of a sample of an audit's tactics, compared
    (``audit --verify nvcc``, :func:`cutlass_layout.commands.audit_nvcc.verify_audit`).

    Attributes:
        compared: the ids of the tactics compared, in the audit's order.
        disagreements: one line per tactic where nvcc's kernel, mainloop or epilogue
            ``sizeof(SharedStorage)`` (bytes) or stage count differs from the audit's, or
            where nvcc showed no numbers for it (with its first error): ``ID: audit (kernel,
            mainloop, epilogue, stages) = (...), nvcc (...)``.
        not_verified: one line per family of the audit this check cannot compile yet,
            ``FAMILY (why)``, and one per nvcc run that was killed (``cicc`` of a large unit
            can be killed for memory; it is run again alone first): its tactics are not
            compared.
        families: the families compared; sources: the generated sources compiled; units:
            the nvcc runs (translation units) they took.
        nvcc: the nvcc asked.
        seconds: wall-clock seconds of the nvcc runs (not part of the comparison).
    """

    compared: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    not_verified: list[str] = field(default_factory=list)
    families: int = 0
    sources: int = 0
    units: int = 0
    nvcc: str | None = None
    seconds: float = field(default=0.0, compare=False)

    @property
    def agree(self) -> bool:
        """Whether nvcc agreed on every tactic compared."""
        return not self.disagreements

    def lines(self) -> list[str]:
        """The report: ``nvcc agrees on N of M tactics (F families, S sources)`` (or why it
        compared none), a line per disagreement, a ``not verified: FAMILY (why)`` line per
        family not compiled."""
        n = len(self.compared)
        head = (f"nvcc agrees on {n - len(self.disagreements)} of {n} tactics ({self.families} "
                f"famil{'y' if self.families == 1 else 'ies'}, {self.sources} source{'' if self.sources == 1 else 's'})")
        if not n:
            head = "nvcc compared no tactic: " + ("no family shown is one it compiles" if self.not_verified else
                                                  "the audit shows no tactic that compiles")
        return [head, *(f"nvcc disagrees: {d}" for d in self.disagreements),
                *(f"not verified: {f}" for f in self.not_verified)]

    def to_dict(self) -> dict:
        return {"agree": self.agree, "compared": list(self.compared), "disagreements": list(self.disagreements),
                "not_verified": list(self.not_verified), "families": self.families, "sources": self.sources,
                "units": self.units, "nvcc": self.nvcc}


@dataclass
class BlocklistFormat:
    """flashinfer's offline tactics blocklist as an install reads it
    (``flashinfer/tactics_blocklist.py``, ``TacticsBlocklist.load``/``filter``, with the
    metadata fields of ``autotuner._collect_metadata``).

    Attributes:
        version: the install's flashinfer version (its ``flashinfer_version`` metadata).
        loader: the loader's file, relative to the install's package folder.
        metadata_key: the top-level key of the metadata block (``_metadata``).
        tactics_key: the top-level key of the tactics (``invalid_tactics``).
        metadata_fields: the fields the loader compares with its environment, in the order
            ``_collect_metadata`` sets them.
        ops: ``{gemm index (1, 2): custom op name}`` the CUTLASS MoE runner is tuned under
            (``"trtllm::fused_moe::gemm1"``).
        runner_class: the CUTLASS MoE runner's class name (``MoERunner``): a key is
            ``"<custom op>::<runner class>"``.
    """

    version: str
    loader: str
    metadata_key: str
    tactics_key: str
    metadata_fields: list[str]
    ops: dict[int, str]
    runner_class: str

    def key(self, gemm: int) -> str:
        """The blocklist key of the runner's GEMM ``gemm`` (1 or 2)."""
        return f"{self.ops[gemm]}::{self.runner_class}"


@dataclass
class Blocklist:
    """A tactics blocklist for one install and arch, in flashinfer's format.

    Attributes:
        format: the install's :class:`BlocklistFormat`.
        arch: the arch whose capacity the tactics are over.
        invalid_tactics: ``{key: [tactic id, ...]}`` (ids ascending), as the file holds them.
        blocked: one entry per over-capacity tactic the runtime would try, with where it is
            in the file: ``{tactic (its audit id), key, tactic_id, gemm, runner, kernel_bytes,
            capacity_bytes}``; ``key``/``tactic_id`` are None where the id could not be read.
        notes: what the file cannot say, in plain words (tactics left out, runners that
            share a key).
        metadata: the ``_metadata`` block: the install's ``flashinfer_version``, ``"*"`` for
            every other field the loader compares, and what wrote it.
    """

    format: BlocklistFormat
    arch: str
    invalid_tactics: dict[str, list[int]]
    blocked: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The file's JSON object: ``{metadata key: {...}, tactics key: {key: [ids]}}``, as
        ``TacticsBlocklist.save`` writes it."""
        return {self.format.metadata_key: dict(self.metadata),
                self.format.tactics_key: {k: list(v) for k, v in self.invalid_tactics.items()}}


@dataclass
class LibraryTactic(Tactic):
    """One kernel of CUTLASS's own kernel library (``cutlass_library``, what the profiler
    builds), laid out exactly: a :class:`Tactic` named as the library names it.

    ``family`` is ``cutlass_library``; ``name`` (and :attr:`id`) the kernel's procedural name,
    as ``cutlass_profiler --kernels`` takes it
    (``cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_..._cooperative_q``); ``launcher`` the type
    laid out (``<name>_base``, the ``GemmUniversal`` the library's emitter writes); ``file`` the
    library's generator function (``generator.py:GenerateSM120``); ``a``, ``b``, ``out`` the
    emitted builders' element types named as ``layout``'s flags name them; ``schedule`` and
    ``epilogue_schedule`` the emitted kernel and epilogue schedule tags.

    Attributes:
        gemm_kind: the library's ``GemmKind`` (``BlockScaledUniversal3x``, ...).
        stage_spec: the mainloop builder's stage-count argument as emitted
            (``StageCountAutoCarveout<sizeof(epilogue SharedStorage)>`` for auto stages, or
            ``StageCount<N>``).
        library_stages: the library's ``TileDescription.stages`` (0: auto).
        tile_scheduler: the library's ``TileSchedulerType`` name.
        estimate_kib: what the generator assumed (``library.CalculateSmemUsage``: A and B tiles
            times the library's stages, in KiB, rounded down; 0 for auto stages); None where it
            raised (``estimate_error``).
        estimate_capacity_kib: the capacities (KiB, ``SharedMemPerCC``) its filter compares the
            estimate with, per compute capability of the kernel's range; empty where the table
            has none (SM120: nothing is pruned).
    """

    gemm_kind: str | None = None
    stage_spec: str | None = None
    library_stages: int | None = None
    tile_scheduler: str | None = None
    estimate_kib: int | None = None
    estimate_error: str | None = None
    estimate_capacity_kib: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The procedural name (unique in a library's manifest)."""
        return str(self.name)

    @property
    def estimate_bytes(self) -> int | None:
        """:attr:`estimate_kib` in bytes (the generator's own figure is whole KiB)."""
        return None if self.estimate_kib is None else self.estimate_kib * 1024

    def to_dict(self) -> dict:
        """:meth:`Tactic.to_dict` and the library's own view: ``gemm_kind``, ``stage_spec``,
        ``library_stages``, ``tile_scheduler`` and ``estimate`` (``{kib, bytes, capacity_kib,
        error}``)."""
        return {**super().to_dict(), "gemm_kind": self.gemm_kind, "stage_spec": self.stage_spec,
                "library_stages": self.library_stages, "tile_scheduler": self.tile_scheduler,
                "estimate": {"kib": self.estimate_kib, "bytes": self.estimate_bytes,
                             "capacity_kib": dict(self.estimate_capacity_kib),
                             "error": self.estimate_error}}

    @classmethod
    def from_dict(cls, d: dict, provenance: Provenance | None = None) -> "LibraryTactic":
        """The kernel of a :meth:`to_dict` row, as :meth:`Tactic.from_dict` reads one, with the
        library's own view (``estimate``'s ``kib``, ``capacity_kib`` and ``error``).

        Raises:
            KeyError, TypeError, ValueError: not such a row.
        """
        est = d["estimate"]
        return cls(**cls._fields(d, provenance), gemm_kind=d["gemm_kind"], stage_spec=d["stage_spec"],
                   library_stages=d["library_stages"], tile_scheduler=d["tile_scheduler"],
                   estimate_kib=est["kib"], estimate_error=est["error"],
                   estimate_capacity_kib=dict(est["capacity_kib"]))


def tactic_from_dict(d: dict, provenance: Provenance | None = None) -> Tactic:
    """The tactic of an ``audit --json`` row: a :class:`LibraryTactic` for a row of CUTLASS's
    library (it has the generator's ``estimate``), else a :class:`Tactic`
    (:meth:`Tactic.from_dict`, :meth:`LibraryTactic.from_dict`).

    Raises:
        KeyError, TypeError, ValueError: not such a row.
    """
    return (LibraryTactic if "estimate" in d else Tactic).from_dict(d, provenance)
