"""The one model every frontend fills, every command returns and every report reads:
plain dataclasses, and their JSON (``to_dict``, built with :func:`plain`, the one serializer),
one module per result family:

* :mod:`.layout`, layouts (libclang): :class:`FieldLayout`, :class:`StructLayout`,
  :class:`Constant`, :class:`TmaBytes`, :class:`BuilderBudget`, :class:`MainloopChoice`,
  :class:`CompileError`, :class:`Provenance`, and one config's answer, :class:`LayoutReport`
  (with, for a preset, its :class:`Approximation`), flat as :class:`KernelNumbers`;
* :mod:`.launch`, launch limits: :class:`PerSmLimits`, :class:`RegisterSplit`, :class:`Occupancy`,
  :class:`DescriptorAt`, :class:`ParamsLayout`, :class:`ClusterLegality`;
* :mod:`.scan`, scans (tree-sitter, declarations as written): :class:`Scope`, :class:`Field`,
  :class:`Struct`, :class:`ScanConstant`, :class:`Diagnostic`, :class:`ScanResult`;
* :mod:`.sweep`, sweeps: :class:`StageSearch`, :class:`SweepRecord`, :class:`SweepResult`;
* :mod:`.diff`, diffs: :class:`StructuralChange`, :class:`NumericRecord` (with
  :class:`MemberSpan` and :class:`TmaValues`), :class:`MemberChange`, :class:`NumericRow`,
  :class:`Side`, :class:`Rename`, :class:`TacticChange`, :class:`AuditDiff`, :class:`DiffResult`;
* :mod:`.audit`, audits: :class:`Tactic`, :class:`LibraryTactic`, :class:`Fix`,
  :class:`AuditResult`, :class:`AuditSet`, :class:`AuditShard` (one shard's part of an audit),
  :class:`AuditVerification`;
* :mod:`.verdict`, the one verdict vocabulary: :class:`Verdict`, :func:`verdict_of`,
  :func:`schema_verdict`;
* :mod:`.blocklist`, flashinfer's tactics blocklist: :class:`BlocklistFormat`, :class:`Blocklist`;
* :mod:`.serde`: :func:`plain` and the checked, lazy reading back of layouts.

Every name is re-exported here (``from cutlass_layout.model import LayoutReport``). The package
imports nothing else from ``cutlass_layout`` (the configs in sweep and diff results are
:class:`cutlass_layout.subjects.config.Config` objects, named for type checkers only).

All sizes, offsets and paddings are in **bytes**. A field's ``offset`` counts from the start
of the top-level struct it belongs to (the kernel's, the mainloop's or the epilogue's
``SharedStorage``), so ``tensors.epilogue`` at 73728 means byte 73728 of the kernel struct.
"""

from .audit import (
    AUDIT_SCHEMA,
    TACTIC_IDENTITY,
    TACTIC_NUMBERS,
    AuditResult,
    AuditSet,
    AuditShard,
    AuditVerification,
    Fix,
    LibraryTactic,
    Tactic,
    tactic_from_dict,
)
from .blocklist import (
    Blocklist,
    BlocklistFormat,
)
from .diff import (
    DIFF_SCHEMA,
    GATE_KINDS,
    NUMERIC_KEYS,
    AuditDiff,
    DiffResult,
    MemberChange,
    MemberSpan,
    NumericRecord,
    NumericRow,
    ReleaseGate,
    Rename,
    Side,
    StructuralChange,
    TacticChange,
    TmaValues,
)
from .launch import (
    ClusterLegality,
    DescriptorAt,
    Occupancy,
    ParamsLayout,
    PerSmLimits,
    RegisterSplit,
    TmaBuffer,
    TmaCheck,
    TmaPart,
)
from .layout import (
    FIELD_KEYS,
    FIELD_REQUIRED,
    LAYOUT_SCHEMA,
    Approximation,
    BuilderBudget,
    CompileError,
    Constant,
    FieldLayout,
    KernelNumbers,
    LayoutReport,
    MainloopChoice,
    Provenance,
    StructLayout,
    TmaBytes,
)
from .scan import (
    SCAN_SCHEMA,
    Diagnostic,
    Field,
    ScanConstant,
    ScanResult,
    Scope,
    Struct,
    abbrev_args,
    short_name,
)
from .serde import (
    plain,
)
from .sweep import (
    SEARCH_STATUSES,
    SWEEP_SCHEMA,
    VERDICTS,
    StageSearch,
    SweepRecord,
    SweepResult,
)
from .verdict import (
    EXACT_FIT_MEANING,
    Verdict,
    schema_verdict,
    verdict_of,
)

__all__ = [
    "AUDIT_SCHEMA",
    "DIFF_SCHEMA",
    "EXACT_FIT_MEANING",
    "FIELD_KEYS",
    "FIELD_REQUIRED",
    "GATE_KINDS",
    "LAYOUT_SCHEMA",
    "NUMERIC_KEYS",
    "SCAN_SCHEMA",
    "SEARCH_STATUSES",
    "SWEEP_SCHEMA",
    "TACTIC_IDENTITY",
    "TACTIC_NUMBERS",
    "VERDICTS",
    "Approximation",
    "AuditDiff",
    "AuditResult",
    "AuditSet",
    "AuditShard",
    "AuditVerification",
    "Blocklist",
    "BlocklistFormat",
    "BuilderBudget",
    "CompileError",
    "Constant",
    "DescriptorAt",
    "Diagnostic",
    "DiffResult",
    "Field",
    "FieldLayout",
    "Fix",
    "KernelNumbers",
    "LayoutReport",
    "LibraryTactic",
    "MainloopChoice",
    "MemberChange",
    "MemberSpan",
    "NumericRecord",
    "NumericRow",
    "Occupancy",
    "ClusterLegality",
    "TmaBuffer",
    "TmaCheck",
    "TmaPart",
    "ParamsLayout",
    "PerSmLimits",
    "Provenance",
    "RegisterSplit",
    "ReleaseGate",
    "Rename",
    "ScanConstant",
    "ScanResult",
    "Scope",
    "Side",
    "StageSearch",
    "Struct",
    "StructLayout",
    "StructuralChange",
    "SweepRecord",
    "SweepResult",
    "Tactic",
    "TacticChange",
    "TmaBytes",
    "TmaValues",
    "Verdict",
    "abbrev_args",
    "plain",
    "schema_verdict",
    "short_name",
    "tactic_from_dict",
    "verdict_of",
]
