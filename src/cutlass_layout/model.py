"""The one model every frontend fills and every report reads: plain dataclasses.

All sizes, offsets and paddings are in **bytes**. A field's ``offset`` counts from the start
of the top-level struct it belongs to (the kernel's, the mainloop's or the epilogue's
``SharedStorage``), so ``tensors.epilogue`` at 73728 means byte 73728 of the kernel struct.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Version of the ``layout --json`` schema (see README "JSON schema").
LAYOUT_SCHEMA = "cutlass-layout/layout/1"


@dataclass
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


@dataclass
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


@dataclass
class Constant:
    """An integer constant read from the headers, with where it is defined.

    Attributes:
        name: the C++ name (``TmaTransactionBytesMK``, ``sm120_smem_capacity_bytes``).
        value: its value for this config (bytes where it is a size).
        expression: the initializer's text as written in the header.
        file, line: where it is defined (file relative to the include root when inside it).
    """

    name: str
    value: int
    expression: str | None = None
    file: str | None = None
    line: int | None = None


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
    """Where the numbers come from: the CUTLASS tree, the CUDA headers, libclang and its flags."""

    cutlass_root: str
    cutlass_version: str
    tree_hash: str
    origin: str
    libclang_version: str
    cuda_path: str
    cuda_source: str
    flags: list[str]


@dataclass
class LayoutReport:
    """The answer for one config: layouts, stages, TMA bytes and the capacity verdict.

    ``error`` is set (and every number is ``None``) when the config does not compile: no
    number ever comes from a translation unit with errors. ``checked`` says what was
    checked: ``types`` (the kernel's types were instantiated; asserts in kernel bodies, such
    as tile-shape checks in ``operator()``, were not).
    """

    config: dict
    provenance: Provenance
    #: ``types`` (class types instantiated) or ``kernel`` (the device entry point too)
    checked: str = "types"
    stages: int | None = None
    capacity: Constant | None = None
    kernel: StructLayout | None = None
    mainloop: StructLayout | None = None
    epilogue: StructLayout | None = None
    tma_transaction_bytes: TmaBytes | None = None
    builder_budget: BuilderBudget | None = None
    error: CompileError | None = None

    @property
    def capacity_bytes(self) -> int | None:
        return self.capacity.value if self.capacity else None

    @property
    def subject(self) -> StructLayout | None:
        """The struct compared with the capacity: the kernel's SharedStorage, or for a lone
        collective (``--type`` naming a mainloop or epilogue) that collective's."""
        return self.kernel or self.mainloop or self.epilogue

    @property
    def headroom_bytes(self) -> int | None:
        """Capacity minus ``sizeof`` of :attr:`subject`; negative when over."""
        if self.subject is None or self.capacity is None:
            return None
        return self.capacity.value - self.subject.size

    @property
    def fits(self) -> bool | None:
        """Whether the kernel's SharedStorage fits the capacity (``None`` if not computed)."""
        h = self.headroom_bytes
        return None if h is None else h >= 0

    @property
    def exact_fit(self) -> bool:
        """Headroom exactly 0: fits, but TensorRT-LLM's occupancy check rejects it."""
        return self.headroom_bytes == 0

    @property
    def verdict(self) -> str:
        """``fits``, ``over_capacity`` or ``does_not_compile``."""
        if self.error is not None:
            return "does_not_compile"
        return "fits" if self.fits else "over_capacity"

    def to_dict(self) -> dict[str, Any]:
        """The report as the documented ``layout --json`` object (schema :data:`LAYOUT_SCHEMA`)."""
        def struct(s: StructLayout | None):
            return None if s is None else asdict(s)

        def const(c: Constant | None):
            return None if c is None else asdict(c)

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
            "provenance": asdict(self.provenance),
            "config": self.config,
            "checked": self.checked,
            "verdict": self.verdict,
            "stages": self.stages,
            "capacity_bytes": self.capacity_bytes,
            "capacity": const(self.capacity),
            "kernel": struct(self.kernel),
            "mainloop": struct(self.mainloop),
            "epilogue": struct(self.epilogue),
            "tma_transaction_bytes": tma,
            "builder_budget": None if self.builder_budget is None else {
                **asdict(self.builder_budget), "budgeted_bytes": self.builder_budget.budgeted_bytes},
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "exact_fit": self.exact_fit if self.error is None else None,
            "error": None if self.error is None else asdict(self.error),
        }


def _struct_from_dict(d: dict | None) -> StructLayout | None:
    def fld(f: dict) -> FieldLayout:
        return FieldLayout(**{**f, "fields": [fld(x) for x in f.get("fields", [])]})
    if d is None:
        return None
    return StructLayout(**{**d, "fields": [fld(x) for x in d.get("fields", [])]})


def _constant_from_dict(d: dict | None) -> Constant | None:
    return None if d is None else Constant(**d)


def layout_report_from_dict(d: dict) -> LayoutReport:
    """The :class:`LayoutReport` of a :meth:`LayoutReport.to_dict` object (the ``layout
    --json`` document); properties computed from the numbers (verdict, fits, headroom) are
    not read back but recomputed."""
    tma = d.get("tma_transaction_bytes")
    budget = d.get("builder_budget")
    return LayoutReport(
        config=d["config"], provenance=Provenance(**d["provenance"]), checked=d.get("checked", "types"),
        stages=d.get("stages"), capacity=_constant_from_dict(d.get("capacity")),
        kernel=_struct_from_dict(d.get("kernel")), mainloop=_struct_from_dict(d.get("mainloop")),
        epilogue=_struct_from_dict(d.get("epilogue")),
        tma_transaction_bytes=None if tma is None else TmaBytes(
            **{k: _constant_from_dict(tma["expressions"][k]) for k in ("mk", "nk", "total")}),
        builder_budget=None if budget is None else BuilderBudget(
            capacity=Constant(**budget["capacity"]), carveout_bytes=budget["carveout_bytes"],
            stage_bytes=budget["stage_bytes"], stages=budget["stages"]),
        error=None if d.get("error") is None else CompileError(**d["error"]),
    )


#: Version of the ``audit --json`` schema.
AUDIT_SCHEMA = "cutlass-layout/audit/1"


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
            it; cluster: (M, N, K), or None when it is a runtime value.
        kernel: ``grouped`` (ptr-array) or ``dense``; schedule: the kernel schedule tag.
    Where:
        file, line: the generated (or rendered) source and the line of the instantiation;
        launcher: the function or struct whose body names the kernel; launcher_file,
        launcher_line: where the kernel type alias is written (the launcher's header).
    Numbers: ``report`` (a :class:`LayoutReport`: every member, stages, capacity, error).
        runtime_candidate: whether the install's runtime candidate list for the arch would
            try this tactic (None when that list cannot be read).
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

    @property
    def id(self) -> str:
        """Unique within an audit: ``family/name/AxB/out[/fusion][/swap_ab]``
        (``moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize``)."""
        parts = [self.family, self.name or self.launcher, f"{self.a}x{self.b}", str(self.out)]
        if self.fusion:
            parts.append(self.fusion)
        if self.swap_ab:
            parts.append("swap_ab")
        return "/".join(parts)

    @property
    def verdict(self) -> str:
        """``fits``, ``exact_fit``, ``over_capacity`` or ``does_not_compile``."""
        v = self.report.verdict
        return "exact_fit" if v == "fits" and self.report.exact_fit else v

    def identity(self) -> dict:
        """The fields that name this tactic (everything but the numbers)."""
        return {k: getattr(self, k) for k in (
            "family", "name", "a", "b", "out", "fusion", "swap_ab", "tile", "cluster", "kernel",
            "schedule", "file", "line", "launcher", "launcher_file", "launcher_line")}

    def to_dict(self) -> dict:
        """One entry of the ``audit --json`` ``tactics`` list (bytes throughout)."""
        r = self.report
        ok = r.error is None

        def size(s):
            return s.size if ok and s is not None else None
        return {
            "id": self.id, **self.identity(),
            "stages": r.stages if ok else None,
            "kernel_bytes": size(r.kernel), "mainloop_bytes": size(r.mainloop),
            "epilogue_bytes": size(r.epilogue),
            "capacity_bytes": r.capacity_bytes if ok else None,
            "headroom_bytes": r.headroom_bytes if ok else None,
            "verdict": self.verdict, "runtime_candidate": self.runtime_candidate,
            "error": None if ok else asdict(r.error),
        }


@dataclass
class AuditResult:
    """Every kernel an install builds for one arch, laid out.

    Attributes:
        provenance: where the numbers come from: the install (``library``, ``version``,
            ``origin``, ``root``), the CUTLASS tree and libclang (as in a layout report).
        arch: ``sm120`` (also for SM121), ``sm100``, ``sm90``.
        capacity: the arch's capacity constant read from the headers (None when no kernel
            was laid out).
        tactics: one :class:`Tactic` per kernel, in the order :meth:`sorted_tactics` gives.
        sources: one entry per source the install's JIT compiles for the arch: ``{module,
            file, kernels, skipped, error}``.
        notes: what the audit could not read, in plain words.
        stats: how it ran (not part of the JSON): seconds, parsed, cached, peak memory.
    """

    provenance: dict
    arch: str
    capacity: Constant | None
    tactics: list[Tactic]
    sources: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict, compare=False)

    @property
    def capacity_bytes(self) -> int | None:
        return None if self.capacity is None else self.capacity.value

    def over_capacity_candidates(self) -> list[Tactic]:
        """Tactics the runtime would try (``runtime_candidate`` True) that are over capacity."""
        return [t for t in self.tactics if t.verdict == "over_capacity" and t.runtime_candidate]

    def to_dict(self) -> dict:
        """The documented ``audit --json`` object (schema :data:`AUDIT_SCHEMA`)."""
        return {
            "schema": AUDIT_SCHEMA, "provenance": self.provenance, "arch": self.arch,
            "checked": "types",
            "capacity_bytes": self.capacity_bytes,
            "capacity": None if self.capacity is None else asdict(self.capacity),
            "tactics": [t.to_dict() for t in self.tactics],
            "sources": self.sources, "notes": self.notes,
        }
