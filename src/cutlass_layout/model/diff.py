"""Diffs (two CUTLASS trees, what their headers say and what their layouts are; two
installs' audits): :class:`StructuralChange`, :class:`NumericRecord` (with :class:`MemberSpan`
and :class:`TmaValues`), :class:`MemberChange`, :class:`NumericRow`, :class:`Side`,
:class:`Rename`, :class:`TacticChange`, :class:`AuditDiff`, :class:`DiffResult`, whose
``to_dict`` is ``diff --json`` (schema :data:`DIFF_SCHEMA`). Bytes throughout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .layout import LayoutReport, Provenance
from .serde import plain
from .verdict import Verdict, schema_verdict

if TYPE_CHECKING:  # for annotations only: the model imports nothing else from the package
    from ..subjects.config import Config
    from .audit import Tactic


#: Version of the ``diff --json`` schema.
DIFF_SCHEMA = "cutlass-layout/diff/1"
#: :class:`NumericRecord` values compared for every config, in report order.
NUMERIC_KEYS = (
    "verdict",
    "stages",
    "kernel_bytes",
    "mainloop_bytes",
    "epilogue_bytes",
    "tma_bytes.mk",
    "tma_bytes.nk",
    "tma_bytes.total",
    "capacity_bytes",
)
#: What a kernel of an audit diff is to the release gate (:attr:`TacticChange.gate`), in the
#: order the report lists them: ``newly_over_capacity`` and ``newly_not_compiling`` (it fails on
#: the new side, and passed on the old side or was not there), ``stages`` and ``bytes`` (paired,
#: compiling on both sides, with another stage count or another SharedStorage size).
GATE_KINDS = ("newly_over_capacity", "newly_not_compiling", "stages", "bytes")
#: The verdicts that fail the gate: no launch is possible.
_FAILING = (Verdict.OVER_CAPACITY, Verdict.DOES_NOT_COMPILE)


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
        verdict: ``fits``, ``over_capacity`` or ``does_not_compile``: the three-valued verdict
            the diff's JSON schema writes (:func:`~cutlass_layout.model.verdict.schema_verdict`:
            an exact fit is ``fits``, and its headroom 0).
        error: :meth:`CompileError.one_line`, or ``None``.
        stages, kernel_bytes, mainloop_bytes, epilogue_bytes, capacity_bytes,
            headroom_bytes: as in the layout report.
        tma_bytes: the TMA transaction bytes.
        members: every kernel member by dotted name (``tensors.mainloop.smem_SFB``).
    """

    verdict: Verdict
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
    def from_report(cls, rep: LayoutReport) -> NumericRecord:
        """The report's :meth:`~LayoutReport.numbers`, its TMA bytes and its kernel's members
        (only ``verdict`` and ``error`` where there is no kernel to compare)."""
        n = rep.numbers()
        verdict = schema_verdict(n.verdict)  # the diff schema's three values, as the record holds them
        if n.error is not None or rep.kernel is None:
            return cls(verdict=verdict, error=n.error.one_line() if n.error is not None else None)
        tma = rep.tma_transaction_bytes

        def val(c):
            return None if c is None else c.value

        return cls(
            verdict=verdict,
            stages=n.stages,
            kernel_bytes=n.kernel_bytes,
            mainloop_bytes=n.mainloop_bytes,
            epilogue_bytes=n.epilogue_bytes,
            capacity_bytes=n.capacity_bytes,
            headroom_bytes=n.headroom_bytes,
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
        return {
            "config": self.config.to_dict(),
            "label": self.label,
            "old": None if self.old is None else plain(self.old),
            "new": None if self.new is None else plain(self.new),
            "changed": list(self.changed),
            "members": [plain(m) for m in self.members],
        }


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
    (:func:`cutlass_layout.commands.diff_audit.tactic_configuration`), not by its id; or one kernel
    of two CUTLASS kernel libraries', paired by its procedural name
    (:func:`cutlass_layout.commands.diff_audit.pair_library_kernels`).

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
            :func:`cutlass_layout.commands.diff_audit.pair_tactics`), ``core_name`` (two kernel
            libraries' kernels whose names are equal as CUTLASS 4.x spells them:
            :func:`cutlass_layout.commands.diff_audit.library_name`); None for added/removed.
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
    old: Tactic | None = None
    new: Tactic | None = None
    changed: list[str] = field(default_factory=list)
    members: list[MemberChange] = field(default_factory=list)
    old_id: str | None = None
    new_id: str | None = None
    rename: Rename | None = None
    paired_by: str | None = None
    config: dict = field(default_factory=dict)
    kernel_bytes_delta: int | None = None

    @property
    def gate(self) -> list[str]:
        """What this kernel is to the release gate (:data:`GATE_KINDS`; ``[]``: nothing).

        ``newly_over_capacity`` / ``newly_not_compiling``: the new side's verdict is
        ``over_capacity`` / ``does_not_compile`` (a kernel not laid out counts as not compiling)
        and the old side's was ``fits`` or ``exact_fit``, or there was no old side (a kernel only
        the new install builds that fails is a new failure). A kernel that failed on both sides,
        one way or the other, is no new failure. ``stages`` / ``bytes``: both sides exist and
        compile, and their stage counts / ``sizeof`` of the kernel's SharedStorage differ (a
        kernel newly over capacity is usually ``bytes`` too)."""
        old, new = self.old, self.new
        out = []
        if new is not None and new.verdict in _FAILING and (old is None or old.verdict not in _FAILING):
            out.append("newly_over_capacity" if new.verdict == Verdict.OVER_CAPACITY else "newly_not_compiling")
        compiled = [t for t in (old, new) if t is not None and t.verdict != Verdict.DOES_NOT_COMPILE]
        if old is not None and new is not None and len(compiled) == 2:
            if old.stages != new.stages:
                out.append("stages")
            if old.kernel_bytes != new.kernel_bytes:
                out.append("bytes")
        return out

    @property
    def kinds(self) -> list[str]:
        """Every kind of change that applies: ``renamed`` (the ids differ) and ``verdict`` or
        ``numbers``; ``[added]``, ``[removed]``; ``[]`` for the same tactic unchanged."""
        kinds = ["renamed"] if self.rename is not None else []
        if self.change != "renamed" and self.change != "same":
            kinds.append(self.change)
        return kinds

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "family": self.family,
            "name": self.name,
            "change": self.change,
            "changed": list(self.changed),
            "members": [plain(m) for m in self.members],
            "old": None if self.old is None else self.old.to_dict(),
            "new": None if self.new is None else self.new.to_dict(),
            "kinds": self.kinds,
            "old_id": self.old_id,
            "new_id": self.new_id,
            "rename": None if self.rename is None else plain(self.rename),
            "paired_by": self.paired_by,
            "config": plain(self.config),
            "kernel_bytes_delta": self.kernel_bytes_delta,
            "gate": self.gate,
        }


@dataclass(frozen=True)
class ReleaseGate:
    """The counts of an audit diff as a release gate (:meth:`AuditDiff.gate`): kernels, not
    rows of members.

    Attributes:
        paired: kernels on both sides (paired by configuration, or by procedural name).
        only_old, only_new: kernels on one side only (removed, added).
        newly_over_capacity, newly_not_compiling: kernels that newly fail on the new side
            (:attr:`TacticChange.gate`: paired ones that passed before, and new ones that fail).
        stage_changes, byte_changes: paired kernels that compile on both sides with other
            stage counts / another ``sizeof`` of their SharedStorage (bytes); a kernel can be
            both, and a kernel newly over capacity is counted here too where it was paired.
    """

    paired: int
    only_old: int
    only_new: int
    newly_over_capacity: int
    newly_not_compiling: int
    stage_changes: int
    byte_changes: int

    @property
    def newly_failing(self) -> int:
        """Kernels that newly fail (over capacity or not compiling): what ``--check`` fails on."""
        return self.newly_over_capacity + self.newly_not_compiling

    def to_dict(self) -> dict:
        return {**plain(self), "newly_failing": self.newly_failing}


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
            if r.change == "verdict" and r.old is not None and r.new is not None:  # (a verdict row has both)
                key = (r.old.verdict, r.new.verdict)
                moves[key] = moves.get(key, 0) + 1
        out["verdict_changes"] = [{"old": a, "new": b, "count": n} for (a, b), n in moves.items()]
        return out

    def gate(self) -> ReleaseGate:
        """The release gate's counts (:class:`ReleaseGate`); the kernels of each kind are the
        rows whose :attr:`TacticChange.gate` names it."""
        kinds = [r.gate for r in self.rows]
        return ReleaseGate(
            paired=sum(r.old is not None and r.new is not None for r in self.rows),
            only_old=sum(r.change == "removed" for r in self.rows),
            only_new=sum(r.change == "added" for r in self.rows),
            newly_over_capacity=sum("newly_over_capacity" in k for k in kinds),
            newly_not_compiling=sum("newly_not_compiling" in k for k in kinds),
            stage_changes=sum("stages" in k for k in kinds),
            byte_changes=sum("bytes" in k for k in kinds),
        )

    def newly_failing(self) -> list[TacticChange]:
        """The rows of kernels that newly fail (over capacity first, then not compiling; each in
        the rows' order): what ``diff --audit --check`` fails on."""
        return [r for k in GATE_KINDS[:2] for r in self.rows if k in r.gate]

    def to_dict(self) -> dict:
        return {
            "arch": self.arch,
            "family": self.family,
            "kind": self.kind,
            "gate": self.gate().to_dict(),
            "selection": dict(self.selection),
            "old_tactics": self.old_tactics,
            "new_tactics": self.new_tactics,
            "summary": self.summary(),
            "notes": list(self.notes),
            "tactics": [r.to_dict() for r in self.rows],
        }


@dataclass
class Side:
    """One side of the diff: what the user named and what it resolved to."""

    source: str
    provenance: Provenance

    @property
    def tree_hash(self) -> str:
        return self.provenance.tree_hash

    def to_dict(self) -> dict:
        return {"source": self.source, "provenance": {k: v for k, v in plain(self.provenance).items() if v is not None}}


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
        return (
            bool(self.structural) or bool(self.numeric_changes) or bool(self.audit is not None and self.audit.changes)
        )

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
