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

    @classmethod
    def from_dict(cls, d: dict) -> "FieldLayout":
        """The inverse of ``dataclasses.asdict``."""
        return cls(**{**d, "fields": [cls.from_dict(f) for f in d.get("fields", [])]})


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

    @classmethod
    def from_dict(cls, d: dict) -> "StructLayout":
        """The inverse of ``dataclasses.asdict``."""
        return cls(**{**d, "fields": [FieldLayout.from_dict(f) for f in d.get("fields", [])]})


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
    def exact_fit(self) -> bool | None:
        """Headroom exactly 0: fits, but TensorRT-LLM's occupancy check rejects it (``None``
        if not computed)."""
        h = self.headroom_bytes
        return None if h is None else h == 0

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
            "exact_fit": self.exact_fit,
            "error": None if self.error is None else asdict(self.error),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "LayoutReport":
        """The report from its :meth:`to_dict` object (values computed from others, such as
        ``verdict`` and ``headroom_bytes``, are computed again, not read)."""
        def struct(s):
            return None if s is None else StructLayout.from_dict(s)

        def const(c):
            return None if c is None else Constant(**c)

        tma = d.get("tma_transaction_bytes")
        budget = d.get("builder_budget")
        return cls(
            config=d["config"], provenance=Provenance(**d["provenance"]),
            checked=d.get("checked", "types"), stages=d.get("stages"),
            capacity=const(d.get("capacity")),
            kernel=struct(d.get("kernel")), mainloop=struct(d.get("mainloop")),
            epilogue=struct(d.get("epilogue")),
            tma_transaction_bytes=None if tma is None else TmaBytes(
                **{k: const(tma["expressions"][k]) for k in ("mk", "nk", "total")}),
            builder_budget=None if budget is None else BuilderBudget(
                capacity=Constant(**budget["capacity"]), carveout_bytes=budget["carveout_bytes"],
                stage_bytes=budget["stage_bytes"], stages=budget["stages"]),
            error=None if d.get("error") is None else CompileError(**d["error"]),
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
        d = asdict(self)
        d["children"] = [c.to_dict() for c in self.children]
        d["aliases"] = [{"name": a.name, "type": a.type, "line": a.line, "condition": a.condition}
                        for a in self.aliases]
        return d


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
        d = asdict(self)
        return {k: d[k] for k in ("name", "qualified_name", "file", "line", "type", "expression",
                                  "value", "enclosing")}


@dataclass
class Diagnostic:
    """Something the scan could not read cleanly: ``file`` (relative), 1-based ``line``."""

    file: str
    line: int
    message: str


@dataclass
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
        out["diagnostics"] = [asdict(d) for d in self.diagnostics]
        return out
