"""Audits (the kernels an install builds, laid out): :class:`Fix`, :class:`Tactic` (and
CUTLASS's library's :class:`LibraryTactic`), :class:`AuditShard`, :class:`AuditResult` (whose
``to_dict`` is ``audit --json``, schema :data:`AUDIT_SCHEMA`), :class:`AuditSet`,
:class:`AuditVerification`. Bytes throughout."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .layout import (
    BuilderBudget,
    CompileError,
    Constant,
    KernelNumbers,
    LayoutReport,
)
from .launch import ClusterLegality, Occupancy, ParamsLayout, TmaCheck
from .serde import plain
from .verdict import Verdict, verdict_of

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
        return {
            "stages": self.stages,
            "kernel_bytes": self.kernel_bytes,
            "headroom_bytes": self.headroom_bytes,
            "carveout_bytes": self.carveout_bytes,
            "mainloop_bytes": self.mainloop_bytes,
            "searched": {str(k): v for k, v in sorted(self.searched.items())},
            "builder": None
            if b is None
            else {
                "reduced_capacity_bytes": b.capacity.value,
                "carveout_bytes": b.carveout_bytes,
                "stage_bytes": b.stage_bytes,
                "stages": b.stages,
                "budgeted_bytes": b.budgeted_bytes,
            },
            "uncounted_bytes": self.uncounted_bytes,
            "uncounted": dict(self.uncounted),
            "formula": self.formula,
            "error": self.error,
            "fewest_stages": self.fewest_stages,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fix:
        """The fix from its :meth:`to_dict` object."""
        b = d.get("builder")
        return cls(
            stages=d["stages"],
            kernel_bytes=d["kernel_bytes"],
            headroom_bytes=d["headroom_bytes"],
            carveout_bytes=d["carveout_bytes"],
            mainloop_bytes=d.get("mainloop_bytes"),
            searched={int(k): v for k, v in (d.get("searched") or {}).items()},
            builder=None
            if b is None
            else BuilderBudget(
                capacity=Constant(name="ReducedSmemCapacityBytes", value=b["reduced_capacity_bytes"]),
                carveout_bytes=b["carveout_bytes"],
                stage_bytes=b["stage_bytes"],
                stages=b["stages"],
            ),
            uncounted_bytes=d.get("uncounted_bytes"),
            uncounted=dict(d.get("uncounted") or {}),
            formula=d.get("formula"),
            error=d.get("error"),
            fewest_stages=d.get("fewest_stages"),
        )


def _number(name: str, doc: str) -> property:
    """A :class:`Tactic` attribute that is its :attr:`~Tactic.numbers`' ``name`` (read only)."""
    return property(lambda self: getattr(self.numbers, name), doc=doc)


#: The numbers of a tactic that was not laid out: ``does_not_compile``, no number, no error.
NOT_LAID_OUT = KernelNumbers(Verdict.DOES_NOT_COMPILE)


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
    Numbers:
        numbers: the :class:`KernelNumbers` of its ``audit --json`` row (verdict, stages,
            sizes, capacity, headroom, error): its report's :meth:`LayoutReport.numbers`
            where it has a report (the constructor, and so :func:`dataclasses.replace`, makes
            them from it; a given ``numbers`` is then not read), else as given (a row read
            back, :meth:`from_dict`), else :data:`NOT_LAID_OUT`. The attributes ``stages``
            ... ``headroom_bytes``, :attr:`verdict` and :attr:`error` read it.
        report: the :class:`LayoutReport` (every member, the capacity constant, the
            config), where the tactic was laid out here; None for one read back from an
            ``audit --json`` row, which holds numbers alone.
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
    numbers: KernelNumbers = NOT_LAID_OUT
    #: what fits instead (:class:`Fix`), for a tactic over capacity or an exact fit; None for
    #: one that fits, does not compile, or was not searched
    fix: Fix | None = None
    mma_sms: int | None = None
    dynamic_cluster: bool | None = None
    epilogue_schedule: str | None = None
    mma_tile: list[int] | None = None
    sm_version: int | None = None
    runtime_guard: str | None = None
    #: why :attr:`report` has no ``params`` where ``layout --tactic`` asked for them (not in
    #: the JSON row: an audit reads no Params)
    params_note: str | None = field(default=None, compare=False)

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
        cluster = self.cluster_part()
        if cluster:
            parts.append(cluster)
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
        if (
            self.family != "moe"
            or not str(self.name).startswith("CtaShape")
            or "_ClusterShape_" in str(self.name)
            or self.mma_sms is not None
            or not self.cluster
            or list(self.cluster) == [1, 1, 1]
        ):
            return None
        return "cluster" + "x".join(map(str, self.cluster))

    def __post_init__(self) -> None:
        """:attr:`numbers` from :attr:`report`, where there is one."""
        if self.report is not None:
            self.numbers = self.report.numbers()

    def _row_numbers(self) -> dict:
        """:data:`TACTIC_NUMBERS` as the attributes of those names give them."""
        n = self.numbers
        return {
            "stages": n.stages,
            "stage_counts": n.stage_counts,
            "kernel_bytes": n.kernel_bytes,
            "mainloop_bytes": n.mainloop_bytes,
            "epilogue_bytes": n.epilogue_bytes,
            "capacity_bytes": n.capacity_bytes,
            "headroom_bytes": n.headroom_bytes,
            "verdict": n.verdict,
            "runtime_candidate": self.runtime_candidate,
            "occupancy": None if n.occupancy is None else n.occupancy.to_dict(),
            "params": None if n.params is None else n.params.to_dict(),
            "cluster_legality": None if n.cluster is None else n.cluster.to_dict(),
            "launch_findings": n.launch_findings,
            "tma_check": None if n.tma_check is None else n.tma_check.to_dict(),
        }

    stages = _number("stages", "The mainloop's pipeline stages.")
    stage_counts = _number(
        "stage_counts", "A sparse mainloop's stages per pipeline (``{A, B, E}``; ``stages`` is A's), else None."
    )
    kernel_bytes = _number("kernel_bytes", "``sizeof`` of the kernel's SharedStorage (what the launch asks for).")
    mainloop_bytes = _number("mainloop_bytes", "``sizeof`` of the mainloop collective's SharedStorage.")
    epilogue_bytes = _number("epilogue_bytes", "``sizeof`` of the epilogue collective's SharedStorage.")
    capacity_bytes = _number("capacity_bytes", "The arch's per-block capacity, read from the headers.")
    headroom_bytes = _number("headroom_bytes", "Capacity minus kernel bytes; negative when over capacity.")
    verdict = _number(
        "verdict",
        "The :class:`~cutlass_layout.model.verdict.Verdict`: ``fits``, ``exact_fit``, "
        "``over_capacity`` or ``does_not_compile``.",
    )
    error = _number("error", "The first compile error of a kernel that does not compile (else None).")
    params = _number(
        "params",
        "A 3.x kernel's :class:`~cutlass_layout.model.launch.ParamsLayout` "
        "(sizeof(Params), its TMA descriptors' offsets), else None.",
    )
    cluster_legality = _number(
        "cluster",
        "A 3.x kernel's :class:`~cutlass_layout.model.launch.ClusterLegality` (its ClusterShape read from its "
        "types, judged by its arch's rules), else None.",
    )
    launch_findings = _number(
        "launch_findings",
        "What keeps the kernel from launching beyond its shared memory, in words "
        "(:attr:`~cutlass_layout.model.layout.KernelNumbers.launch_findings`): ``audit --checks launch`` fails on them.",
    )
    tma_check = _number(
        "tma_check",
        "The mainloop's :class:`~cutlass_layout.model.launch.TmaCheck` (TMA transaction bytes against "
        "its TMA-filled stage buffers), else None.",
    )
    occupancy = _number(
        "occupancy",
        "A 3.x kernel's :class:`~cutlass_layout.model.launch.Occupancy` (CTAs per SM and what limits them), else None.",
    )

    def identity(self) -> dict:
        """The fields that name this tactic (everything but the numbers): :data:`TACTIC_IDENTITY`."""
        return {k: getattr(self, k) for k in TACTIC_IDENTITY}

    def to_dict(self) -> dict:
        """One entry of the ``audit --json`` ``tactics`` list (bytes throughout): the id, the
        identity, then :data:`TACTIC_NUMBERS` (each the attribute of that name) and the error."""
        return {
            "id": self.id,
            **self.identity(),
            **self._row_numbers(),
            "error": plain(self.error),
            "fix": None if self.fix is None else self.fix.to_dict(),
            "runtime_guard": self.runtime_guard,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Tactic:
        """The tactic of a :meth:`to_dict` row (an ``audit --json`` ``tactics`` entry), whose
        :meth:`to_dict` is that row again: its :attr:`numbers` are the row's, its
        :attr:`report` None (a row holds numbers, not member layouts). The numbers computed
        from others are computed again, as :meth:`LayoutReport.numbers` computes them, not
        read (:meth:`_numbers_of`), so a row whose numbers disagree (a headroom that is not
        the capacity minus the kernel bytes, a verdict not of its headroom) gives another row.

        Raises:
            KeyError, TypeError, ValueError: not such a row.
        """
        return cls(**cls._fields(d))

    @staticmethod
    def _fields(d: dict) -> dict:
        return {
            **{k: d[k] for k in TACTIC_IDENTITY},
            "runtime_candidate": d["runtime_candidate"],
            "numbers": Tactic._numbers_of(d),
            "fix": None if d["fix"] is None else Fix.from_dict(d["fix"]),
            "runtime_guard": d["runtime_guard"],
        }

    @staticmethod
    def _numbers_of(d: dict) -> KernelNumbers:
        """The :class:`KernelNumbers` of an ``audit --json`` row ``d`` as
        :meth:`LayoutReport.numbers` gives them for a report of its sizes, capacity and error:
        with an error, no number; the headroom the capacity minus the kernel bytes (where the
        row has no kernel bytes but a headroom, a type of no GEMM shape laid out as a
        :attr:`LayoutReport.storage`, that headroom); the verdict that of the error and that
        headroom (:func:`~cutlass_layout.model.verdict.verdict_of`; the row's is not read)."""

        def size(n):
            return None if n is None else int(n)

        if d["error"] is not None:
            return KernelNumbers(Verdict.DOES_NOT_COMPILE, error=CompileError(**d["error"]))
        cap, kb, head = size(d["capacity_bytes"]), size(d["kernel_bytes"]), size(d["headroom_bytes"])
        if cap is None or (kb is None and head is None):
            head = None
        elif kb is not None:
            head = cap - kb
        occ, params, cluster = d.get("occupancy"), d.get("params"), d.get("cluster_legality")
        tma_check = d.get("tma_check")
        return KernelNumbers(
            verdict_of(None, head),
            d["stages"],
            kb,
            size(d["mainloop_bytes"]),
            size(d["epilogue_bytes"]),
            cap,
            head,
            stage_counts=d.get("stage_counts"),
            occupancy=None if occ is None else Occupancy.from_dict(occ),
            params=None if params is None else ParamsLayout.from_dict(params),
            cluster=None if cluster is None else ClusterLegality.from_dict(cluster),
            tma_check=None if tma_check is None else TmaCheck.from_dict(tma_check),
        )


#: The fields that name a tactic (:meth:`Tactic.identity`), in the order of its JSON row.
TACTIC_IDENTITY = (
    "family",
    "name",
    "a",
    "b",
    "out",
    "fusion",
    "swap_ab",
    "tile",
    "cluster",
    "kernel",
    "schedule",
    "mma_sms",
    "dynamic_cluster",
    "epilogue_schedule",
    "mma_tile",
    "sm_version",
    "file",
    "line",
    "launcher",
    "launcher_file",
    "launcher_line",
)
#: The numbers of a tactic's JSON row, in order: each is a :class:`Tactic` attribute.
TACTIC_NUMBERS = (
    "stages",
    "stage_counts",
    "kernel_bytes",
    "mainloop_bytes",
    "epilogue_bytes",
    "capacity_bytes",
    "headroom_bytes",
    "verdict",
    "runtime_candidate",
    "occupancy",
    "params",
    "cluster_legality",
    "launch_findings",
    "tma_check",
)


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
        return {
            "index": self.index,
            "count": self.count,
            "asked": self.asked,
            "ranks": self.ranks,
            "dropped": [{"rank": r, "tactic": t.to_dict()} for r, t in self.dropped],
            "capacity_rank": self.capacity_rank,
            "parts": self.parts,
        }

    @classmethod
    def from_dict(cls, d: dict) -> AuditShard:
        """The shard from its :meth:`to_dict` object (dropped tactics by
        :func:`tactic_from_dict`).

        Raises:
            KeyError, TypeError, ValueError: not such an object.
        """
        return cls(
            index=int(d["index"]),
            count=int(d["count"]),
            asked=dict(d["asked"]),
            ranks=[list(r) for r in d["ranks"]],
            dropped=[(list(x["rank"]), tactic_from_dict(x["tactic"])) for x in d["dropped"]],
            capacity_rank=None if d["capacity_rank"] is None else list(d["capacity_rank"]),
            parts=dict(d["parts"]),
        )


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
        modules: every JIT module builder the install has for the arch, accounted for (the
            JSON's ``modules``; empty for one shard, and in JSON written before it):
            ``{builder, module, family, sources, kernels, reason}`` each, ``reason`` None for
            a module with a kernel, else why it has none
            (:func:`cutlass_layout.commands.audit.accounts.module_accounts`).
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
    #: the dense runners' config lists (:class:`cutlass_layout.installs.dense_runners.DenseConfigs`),
    #: by family, where read (not in the JSON)
    dense_runners: dict = field(default_factory=dict, compare=False)
    shard: AuditShard | None = None
    asked: dict = field(default_factory=dict, compare=False)
    modules: list[dict] = field(default_factory=list)

    @property
    def capacity_bytes(self) -> int | None:
        return None if self.capacity is None else self.capacity.value

    def __repr__(self) -> str:
        """One line (the whole audit is its tactics: :attr:`tactics`, or ``to_dict()``)."""
        prov = self.provenance if isinstance(self.provenance, dict) else {}
        what = " ".join(str(prov[k]) for k in ("library", "version") if prov.get(k)) or "an install"
        counts = Counter(str(t.verdict) for t in self.tactics)
        told = ", ".join(f"{counts[v]} {v}" for v in Verdict if counts[v])
        return (
            f"<AuditResult {self.arch} of {what}: {len(self.tactics)} tactics"
            f"{f' ({told})' if told else ''}, capacity {self.capacity_bytes} B>"
        )

    def over_capacity_candidates(self) -> list[Tactic]:
        """Tactics the runtime would try (``runtime_candidate`` True) that are over capacity."""
        return [t for t in self.tactics if t.verdict == Verdict.OVER_CAPACITY and t.runtime_candidate]

    def check_failures(self) -> list[Tactic]:
        """What ``audit --check`` fails on: tactics over capacity that the runtime would try,
        or may try (``runtime_candidate`` True or None: its list could not be read), and that
        no run-time check rejects before launch (``runtime_guard`` None)."""
        return [
            t
            for t in self.tactics
            if t.verdict == Verdict.OVER_CAPACITY and t.runtime_candidate is not False and t.runtime_guard is None
        ]

    def launch_failures(self) -> list[Tactic]:
        """What ``audit --checks launch`` fails on: tactics with a launch finding
        (:attr:`Tactic.launch_findings`: 0 CTAs/SM, a misaligned TMA descriptor, ``Params`` over
        the parameter limit, an illegal or non-portable cluster) that the runtime would try, or
        may try (``runtime_candidate`` True or None)."""
        return [t for t in self.tactics if t.launch_findings and t.runtime_candidate is not False]

    def source_summary(self) -> dict[str | None, dict]:
        """Per family (in the order of :attr:`sources`), the counts of its sources:
        ``{sources, skipped, instantiations, kernels, errors, without_kernel}``: all of them,
        those skipped, the instantiations seen and kernels found in the others, those with an
        error (not read, or instantiating what was not laid out), and those read without
        error that give no kernel (each has a ``reason``)."""
        out: dict[str | None, dict] = {}
        for s in self.sources:
            fam = out.setdefault(
                s.get("family") or s.get("module"),
                {"sources": 0, "skipped": 0, "instantiations": 0, "kernels": 0, "errors": 0, "without_kernel": 0},
            )
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
            "schema": AUDIT_SCHEMA,
            "provenance": self.provenance,
            "arch": self.arch,
            "checked": "types",
            "capacity_bytes": self.capacity_bytes,
            "capacity": None if self.capacity is None else plain(self.capacity),
            "tactics": [t.to_dict() for t in self.tactics],
            "sources": self.sources,
            "summary": self.source_summary(),
            "modules": self.modules,
            "notes": self.notes,
            **({} if self.shard is None else {"shard": self.shard.to_dict()}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> AuditResult:
        """The result of an ``audit --json`` object (:meth:`to_dict`; its ``summary`` is
        computed again, a ``verification`` left out): tactics by :func:`tactic_from_dict`,
        holding the rows' numbers (no report). ``stats``,
        ``families``, ``unmatched`` and ``candidates``, which the JSON does not hold, are empty.

        Raises:
            KeyError, TypeError, ValueError: not such an object.
        """
        return cls(
            provenance=dict(d["provenance"]),
            arch=d["arch"],
            capacity=None if d["capacity"] is None else Constant(**d["capacity"]),
            tactics=[tactic_from_dict(t) for t in d["tactics"]],
            sources=[dict(s) for s in d["sources"]],
            notes=list(d["notes"]),
            modules=[dict(m) for m in d.get("modules") or []],
            shard=None if d.get("shard") is None else AuditShard.from_dict(d["shard"]),
        )


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

    def launch_failures(self) -> list[tuple[str, Tactic]]:
        """What ``audit --checks launch`` fails on, arch by arch: ``(arch, tactic)`` for each of
        every result's :meth:`AuditResult.launch_failures`."""
        return [(r.arch, t) for r in self.results for t in r.launch_failures()]

    def to_dict(self) -> dict:
        """``audit --json`` of several arches: ``{"audits": [...]}``, each arch's one-arch
        object (:meth:`AuditResult.to_dict`) in the order of :attr:`results`."""
        return {"audits": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, d: dict) -> AuditSet:
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
            can be killed for memory; it is run again alone first) or one of whose steps could
            not be run (a ``cudafe++`` found neither in nvcc's folder nor on ``PATH``): its
            tactics are not compared, which is no disagreement.
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
        head = (
            f"nvcc agrees on {n - len(self.disagreements)} of {n} tactics ({self.families} "
            f"famil{'y' if self.families == 1 else 'ies'}, {self.sources} source{'' if self.sources == 1 else 's'})"
        )
        if not n:
            head = "nvcc compared no tactic: " + (
                "none could be verified (below)" if self.not_verified else "the audit shows no tactic that compiles"
            )
        return [
            head,
            *(f"nvcc disagrees: {d}" for d in self.disagreements),
            *(f"not verified: {f}" for f in self.not_verified),
        ]

    def to_dict(self) -> dict:
        return {
            "agree": self.agree,
            "compared": list(self.compared),
            "disagreements": list(self.disagreements),
            "not_verified": list(self.not_verified),
            "families": self.families,
            "sources": self.sources,
            "units": self.units,
            "nvcc": self.nvcc,
        }


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
        return {
            **super().to_dict(),
            "gemm_kind": self.gemm_kind,
            "stage_spec": self.stage_spec,
            "library_stages": self.library_stages,
            "tile_scheduler": self.tile_scheduler,
            "estimate": {
                "kib": self.estimate_kib,
                "bytes": self.estimate_bytes,
                "capacity_kib": dict(self.estimate_capacity_kib),
                "error": self.estimate_error,
            },
        }

    @classmethod
    def from_dict(cls, d: dict) -> LibraryTactic:
        """The kernel of a :meth:`to_dict` row, as :meth:`Tactic.from_dict` reads one, with the
        library's own view (``estimate``'s ``kib``, ``capacity_kib`` and ``error``).

        Raises:
            KeyError, TypeError, ValueError: not such a row.
        """
        est = d["estimate"]
        return cls(
            **cls._fields(d),
            gemm_kind=d["gemm_kind"],
            stage_spec=d["stage_spec"],
            library_stages=d["library_stages"],
            tile_scheduler=d["tile_scheduler"],
            estimate_kib=est["kib"],
            estimate_error=est["error"],
            estimate_capacity_kib=dict(est["capacity_kib"]),
        )


def tactic_from_dict(d: dict) -> Tactic:
    """The tactic of an ``audit --json`` row: a :class:`LibraryTactic` for a row of CUTLASS's
    library (it has the generator's ``estimate``), else a :class:`Tactic`
    (:meth:`Tactic.from_dict`, :meth:`LibraryTactic.from_dict`).

    Raises:
        KeyError, TypeError, ValueError: not such a row.
    """
    return (LibraryTactic if "estimate" in d else Tactic).from_dict(d)
