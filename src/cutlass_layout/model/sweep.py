"""Sweeps (a grid of configs, and for each the largest stage count that fits):
:class:`StageSearch`, :class:`SweepRecord`, :class:`SweepResult`, whose ``to_dict`` is
``sweep --json`` (schema :data:`SWEEP_SCHEMA`). Bytes throughout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .launch import Occupancy
from .layout import Approximation, CompileError, Provenance, StructLayout
from .serde import plain
from .verdict import Verdict, schema_verdict

if TYPE_CHECKING:  # for annotations only: the model imports nothing else from the package
    from ..subjects.config import Config


#: Version of the ``sweep --json`` schema.
SWEEP_SCHEMA = "cutlass-layout/sweep/1"
#: The sweep's verdicts, in report order: the three its JSON schema writes
#: (:func:`~cutlass_layout.model.verdict.schema_verdict`: an exact fit counts as fits).
VERDICTS = (Verdict.FITS, Verdict.OVER_CAPACITY, Verdict.DOES_NOT_COMPILE)


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
        verdict: the :class:`~cutlass_layout.model.verdict.Verdict` (``fits``, ``exact_fit``,
            ``over_capacity`` or ``does_not_compile``; the JSON writes three values and
            :attr:`exact_fit`).
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
    verdict: Verdict
    max_stages_that_fit: int | None
    max_stages_kernel_bytes: int | None
    error: CompileError | None = None
    kernel_layout: StructLayout | None = field(default=None, repr=False, compare=False)
    #: a user type's arch read from its arch tag (its config says ``arch`` None), else None
    arch_from_tag: str | None = None
    #: a preset config's :class:`Approximation` (None for a user type)
    approximation: Approximation | None = field(default=None, compare=False)
    stage_search: StageSearch | None = None
    #: a 3.x kernel's :class:`~cutlass_layout.model.launch.Occupancy` (its layout's), else None
    occupancy: Occupancy | None = None
    #: what keeps the kernel from launching beyond its shared memory (its layout's
    #: :attr:`~cutlass_layout.model.layout.KernelNumbers.launch_findings`), one line each
    launch_findings: list[str] = field(default_factory=list)

    def search(self) -> StageSearch:
        """``stage_search``, or what the other fields imply when it is ``None``."""
        if self.stage_search is not None:
            return self.stage_search
        if hasattr(self.config, "takes_stages") and not self.config.takes_stages:
            return StageSearch("not searched")
        return StageSearch("none fits" if self.max_stages_that_fit is None else "found")

    @property
    def exact_fit(self) -> bool | None:
        """Whether :attr:`verdict` is ``exact_fit`` (headroom 0: fits, but TensorRT-LLM's
        occupancy check rejects it; ``None`` where the headroom is not known)."""
        return None if self.headroom_bytes is None else self.verdict == Verdict.EXACT_FIT

    def to_dict(self) -> dict:
        """The record as one entry of the JSON ``results`` list."""
        config = self.config.to_dict()
        if self.arch_from_tag is not None:
            config = {**config, "arch": self.arch_from_tag, "arch_from": "tag"}
        return {
            "config": config,
            "stages": self.stages,
            "mainloop_bytes": self.mainloop_bytes,
            "epilogue_bytes": self.epilogue_bytes,
            "kernel_bytes": self.kernel_bytes,
            "capacity_bytes": self.capacity_bytes,
            # the sweep schema's verdict is three-valued: an exact fit is "fits", with its own
            # "exact_fit" flag below
            "headroom_bytes": self.headroom_bytes,
            "verdict": schema_verdict(self.verdict),
            "max_stages_that_fit": self.max_stages_that_fit,
            "max_stages_kernel_bytes": self.max_stages_kernel_bytes,
            "stage_search": plain(self.search()),
            "occupancy": None if self.occupancy is None else self.occupancy.to_dict(),
            "launch_findings": list(self.launch_findings),
            "error": None if self.error is None else plain(self.error),
            "exact_fit": self.exact_fit,
            "approximation": None if self.approximation is None else self.approximation.to_dict(),
        }


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
        """Records ordered by verdict (fits, exact fits among them, over_capacity,
        does_not_compile: :data:`VERDICTS`), then by headroom, most room first."""

        def key(r: SweepRecord):
            h = r.headroom_bytes if r.headroom_bytes is not None else -float("inf")
            return (VERDICTS.index(schema_verdict(r.verdict)), -h)

        return sorted(self.records, key=key)

    def __repr__(self) -> str:
        counts = ", ".join(f"{sum(schema_verdict(r.verdict) == v for r in self.records)} {v}" for v in VERDICTS)
        return f"<SweepResult {len(self.records)} configs: {counts}>"
