"""Launch limits of a kernel (beyond the shared-memory byte count): :class:`PerSmLimits` (what
one SM of the arch holds, read from CCCL's ``cuda/__device/arch_traits.h``), :class:`RegisterSplit`
(the registers a warp-specialized kernel declares per warp group) and :class:`Occupancy` (CTAs
per SM and what limits them).

Bytes for shared memory, 32-bit registers, threads and CTAs as counts. Imports nothing from the
package but the serializer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .serde import plain

#: Threads of one warp group (``cutlass::NumThreadsPerWarpGroup``, ``cutlass/cutlass.h``).
THREADS_PER_WARP_GROUP = 128

#: The factors of :class:`Occupancy`, in the order they are named.
FACTORS = ("shared_memory", "registers", "threads", "blocks")


@dataclass(frozen=True)
class PerSmLimits:
    """What one SM of an arch holds, as CCCL states it (``cuda::arch_traits<arch_id>()`` of
    ``cuda/__device/arch_traits.h``, evaluated by the compiler).

    Attributes:
        arch_id: the ``cuda::arch_id`` read (``sm_120``).
        header: the ``arch_traits.h`` read (its path).
        smem_per_sm: ``max_shared_memory_per_multiprocessor``, bytes.
        reserved_smem_per_block: ``reserved_shared_memory_per_block`` (what the driver keeps
            per CTA), bytes.
        max_blocks_per_sm: ``max_blocks_per_multiprocessor``.
        max_threads_per_sm: ``max_threads_per_multiprocessor``.
        registers_per_sm: ``max_registers_per_multiprocessor`` (32-bit registers).
    """

    arch_id: str
    header: str
    smem_per_sm: int
    reserved_smem_per_block: int
    max_blocks_per_sm: int
    max_threads_per_sm: int
    registers_per_sm: int


@dataclass(frozen=True)
class RegisterSplit:
    """The registers per thread a warp-specialized kernel gives each kind of warp group
    (``LoadRegisterRequirement`` for its ``NumLoadWarpGroups`` producer groups,
    ``MmaRegisterRequirement`` for its ``NumMmaWarpGroups`` consumer groups: CUTLASS's
    ``gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp`` and the kernels like it apply
    them with ``cutlass::arch::warpgroup_reg_dealloc``/``warpgroup_reg_alloc``)."""

    load_registers: int
    load_warp_groups: int
    mma_registers: int
    mma_warp_groups: int

    @property
    def per_cta(self) -> int:
        """Registers of one CTA: 128 threads x each group's count, summed over the groups."""
        return THREADS_PER_WARP_GROUP * (
            self.load_registers * self.load_warp_groups + self.mma_registers * self.mma_warp_groups
        )

    def to_dict(self) -> dict:
        return {**plain(self), "per_cta": self.per_cta}


@dataclass(frozen=True)
class Occupancy:
    """CTAs of one kernel per SM: the least of what shared memory, the declared registers, the
    threads and the per-SM block limit allow (each ``None`` where it is not known: no register
    split declared, no per-SM limits found).

    Attributes:
        threads_per_block: the kernel's ``MaxThreadsPerBlock`` (what it launches with).
        min_blocks_per_sm: its ``MinBlocksPerMultiprocessor`` (its ``__launch_bounds__``).
        dynamic_smem_bytes: the dynamic shared memory it launches with (``sizeof(SharedStorage)``).
        registers: the declared :class:`RegisterSplit`, or ``None`` (not declared).
        limits: the arch's :class:`PerSmLimits`, or ``None`` (not found: :attr:`note` says where
            they were looked for; then no CTA count is given).
        by_shared_memory: ``smem_per_sm // (dynamic_smem_bytes + reserved_smem_per_block)``.
        by_registers: ``registers_per_sm // registers.per_cta`` (``None``: not declared).
        by_threads: ``max_threads_per_sm // threads_per_block``.
        by_blocks: ``max_blocks_per_sm``.
        ctas_per_sm: the least of the factors (``None`` without limits, or without a declared
            register split: then :attr:`at_most`).
        limited_by: the factors (:data:`FACTORS` names) equal to that least.
        note: what is not known and why, or ``None``.
        at_most: where the kernel declares no register split, the least of the other factors:
            an upper bound only, since the registers ptxas gives each thread (not read here)
            can lower it. On an H100, ``KernelTmaWarpSpecialized`` 64x64x64 (256 threads, 40 KiB)
            is at most 6 by shared memory, and ptxas's 64 registers a thread make it 4.
    """

    threads_per_block: int
    min_blocks_per_sm: int | None
    dynamic_smem_bytes: int
    registers: RegisterSplit | None = None
    limits: PerSmLimits | None = None
    by_shared_memory: int | None = None
    by_registers: int | None = None
    by_threads: int | None = None
    by_blocks: int | None = None
    ctas_per_sm: int | None = None
    limited_by: tuple[str, ...] = ()
    note: str | None = None
    at_most: int | None = None

    @classmethod
    def of(
        cls,
        threads: int,
        min_blocks: int | None,
        smem: int,
        registers: RegisterSplit | None,
        limits: PerSmLimits | None,
        note: str | None = None,
    ) -> Occupancy:
        """The occupancy of a kernel of ``threads`` threads and ``smem`` bytes of dynamic
        shared memory on an SM of ``limits`` (each factor as :class:`Occupancy` says)."""
        if limits is None or threads <= 0:
            return cls(threads, min_blocks, smem, registers, limits, note=note)
        by = {
            "shared_memory": limits.smem_per_sm // (smem + limits.reserved_smem_per_block),
            "registers": (
                limits.registers_per_sm // registers.per_cta
                if registers is not None and registers.per_cta > 0
                else None
            ),
            "threads": limits.max_threads_per_sm // threads,
            "blocks": limits.max_blocks_per_sm,
        }
        least = min(v for v in by.values() if v is not None)
        if registers is None:  # the registers are ptxas's choice: the least is a bound, not the count
            why = "registers not declared: the count ptxas gives each thread can lower it"
            note = why if note is None else f"{note}; {why}"
        return cls(
            threads,
            min_blocks,
            smem,
            registers,
            limits,
            by["shared_memory"],
            by["registers"],
            by["threads"],
            by["blocks"],
            None if registers is None else least,
            tuple(k for k in FACTORS if by[k] == least),
            note,
            least if registers is None else None,
        )

    def to_dict(self) -> dict:
        d = plain(self)
        d["registers"] = None if self.registers is None else self.registers.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Occupancy:
        """The inverse of :meth:`to_dict`. Raises ``KeyError``/``TypeError`` for another object."""
        regs = d.get("registers")
        limits = d.get("limits")
        return cls(
            d["threads_per_block"],
            d["min_blocks_per_sm"],
            d["dynamic_smem_bytes"],
            None
            if regs is None
            else RegisterSplit(
                regs["load_registers"], regs["load_warp_groups"], regs["mma_registers"], regs["mma_warp_groups"]
            ),
            None if limits is None else PerSmLimits(**limits),
            d["by_shared_memory"],
            d["by_registers"],
            d["by_threads"],
            d["by_blocks"],
            d["ctas_per_sm"],
            tuple(d["limited_by"]),
            d["note"],
            d.get("at_most"),
        )

    def one_line(self) -> str:
        """``1 CTA/SM (limited by shared_memory, registers)``, or why there is no count."""
        if self.ctas_per_sm is None and self.at_most is not None:
            s = "" if self.at_most == 1 else "s"
            return f"at most {self.at_most} CTA{s}/SM (limited by {', '.join(self.limited_by)}; {self.note})"
        if self.ctas_per_sm is None:
            return f"CTAs/SM not known: {self.note}"
        s = "" if self.ctas_per_sm == 1 else "s"
        return f"{self.ctas_per_sm} CTA{s}/SM (limited by {', '.join(self.limited_by)})"


#: The kernel parameter limit, bytes: 4096 classically, 32764 from CUDA 12.1 on (Volta and
#: later; CUDA C++ Programming Guide, "Function Parameters").
PARAM_LIMIT_CLASSIC = 4096
PARAM_LIMIT_12_1 = 32764
#: The alignment ``cute::TmaDescriptor`` (``CUtensorMap``, ``alignas(64)``) must have in memory,
#: bytes: ``prefetch.tensormap`` and the TMA instructions fault on another
#: (NVIDIA/cutlass#2905).
DESCRIPTOR_ALIGN = 64


@dataclass(frozen=True)
class DescriptorAt:
    """A TMA descriptor inside a kernel's ``Params``: its member path (``mainloop.tma_load_a.
    <base ...>.tma_desc_``), its offset from the start of ``Params``, its type as written and
    that type's alignment on the ABI laid out (``None``: a report that did not record it)."""

    path: str
    offset: int
    type: str
    align: int | None = None


#: The host ABIs a ``Params`` is laid out for (:attr:`ParamsLayout.abi`; the values of
#: ``cutlass_layout.cpp.clang.ABI_LINUX`` and ``ABI_MSVC``), and their names in words.
ABI_NAMES = {"linux-x86_64": "Linux x86-64 (GCC/Clang)", "msvc-x64": "Windows x64 (MSVC)"}
#: Why a descriptor is under-aligned on MSVC, where its type's alignment there is under
#: :data:`DESCRIPTOR_ALIGN` (``stubs/msvc/cuda.h``; NVIDIA/cutlass#2905).
MSVC_CAUSE = (
    "cuda.h drops the alignas of CUtensorMap (128 from CUDA 13, 64 before) when __cplusplus < 201103L, cl.exe's default; "
    "-Xcompiler /Zc:__cplusplus fixes it"
)


@dataclass(frozen=True)
class ParamsLayout:
    """``sizeof``/``alignof`` of a 3.x kernel's ``GemmKernel::Params`` (what it is launched
    with, by value) and where its TMA descriptors lie, from the record layout (libclang) of one
    host ABI: ``abi`` (``linux-x86_64``, the parse's own; ``msvc-x64``, a second parse for
    cl.exe's: ``cutlass_layout.cpp.clang.msvc_flags``).

    Attributes:
        size, align: bytes.
        descriptors: every ``TmaDescriptor``/``CUtensorMap`` member (an array of them counts
            once, at its first element).
        limit_bytes: the kernel parameter limit of the CUDA version the parse takes
            (:data:`PARAM_LIMIT_CLASSIC` before 12.1, :data:`PARAM_LIMIT_12_1` from it on).
        cuda_version: that version, ``"13.0"``.
        abi: the host ABI laid out (:data:`ABI_NAMES`).
    """

    size: int
    align: int
    descriptors: tuple[DescriptorAt, ...]
    limit_bytes: int
    cuda_version: str
    abi: str = "linux-x86_64"

    def _on(self) -> str:
        return " on MSVC" if self.abi == "msvc-x64" else ""

    def _cause(self, d: DescriptorAt) -> str:
        """Why ``d`` is under-aligned, where this ABI's layout says (MSVC: :data:`MSVC_CAUSE`)."""
        if self.abi == "msvc-x64" and d.align is not None and d.align < DESCRIPTOR_ALIGN:
            return f": {MSVC_CAUSE}"
        return ""

    def findings(self) -> list[str]:
        """What cannot launch (or faults), in words: each descriptor at an offset that is not a
        multiple of :data:`DESCRIPTOR_ALIGN` (with an alignment of ``Params`` itself under 64,
        only offset and alignment both can tell), ``Params`` over the parameter limit."""
        out = [
            f"TMA descriptor {d.path} at offset {d.offset} of Params is not {DESCRIPTOR_ALIGN}-byte aligned"
            f"{self._on()}{self._cause(d)}"
            for d in self.descriptors
            if d.offset % DESCRIPTOR_ALIGN
        ]
        if self.descriptors and self.align < DESCRIPTOR_ALIGN:
            out.append(
                f"Params is {self.align}-byte aligned{self._on()}: its TMA descriptors are not "
                f"{DESCRIPTOR_ALIGN}-byte aligned wherever it is placed"
            )
        if self.size > self.limit_bytes:
            out.append(
                f"sizeof(Params) {self.size} B is over the kernel parameter limit of "
                f"{self.limit_bytes} B (CUDA {self.cuda_version})"
            )
        return out

    def to_dict(self) -> dict:
        return {**plain(self), "findings": self.findings()}

    @classmethod
    def from_dict(cls, d: dict) -> ParamsLayout:
        """The inverse of :meth:`to_dict` (``findings`` computed again, not read)."""
        return cls(
            d["size"],
            d["align"],
            tuple(DescriptorAt(**x) for x in d["descriptors"]),
            d["limit_bytes"],
            d["cuda_version"],
            d.get("abi", "linux-x86_64"),  # a report of before the MSVC ABI: the parse's own
        )


def param_limit(cuda: tuple[int, int]) -> int:
    """The kernel parameter limit of CUDA ``(major, minor)``, bytes."""
    return PARAM_LIMIT_12_1 if cuda >= (12, 1) else PARAM_LIMIT_CLASSIC


#: The CTAs a cluster may hold portably on SM90 and SM100 (every GPU of the arch launches it),
#: and with the non-portable opt-in (``cudaFuncAttributeNonPortableClusterSizeAllowed`` set on
#: the kernel): CUDA C++ Programming Guide, "Thread Block Clusters" ("a maximum of 8 thread
#: blocks in a cluster is supported as a portable cluster size"; "on GPU hardware or MIG
#: configurations which are too small to support 8 multiprocessors the maximum cluster size
#: will be reduced accordingly"; the non-portable size, 16 on H100, needs the opt-in). CUTLASS's
#: SM100 kernels say 16 too (``MaxClusterSize`` of ``gemm/kernel/sm100_gemm_tma_warpspecialized.hpp``,
#: their ``can_implement`` of a dynamic cluster).
CLUSTER_PORTABLE = 8
CLUSTER_NON_PORTABLE = 16
#: The values of :attr:`ClusterLegality.verdict`.
CLUSTER_VERDICTS = ("legal", "non_portable", "illegal", "run_time", "not_checked")


@dataclass(frozen=True)
class ClusterLegality:
    """Whether a 3.x kernel's cluster can launch on its arch: its ``ClusterShape`` (M, N, K) and
    the CTAs one MMA spans (``AtomThrShapeMNK`` M), read from the kernel's types (never from its
    name), judged by the arch family's rules:

    * ``sm120`` (SM120, SM121): one CTA (1x1x1) only: CUTLASS's SM120 builders
      ``static_assert(size(ClusterShape_MNK{}) == Int<1>{}, "no programmatic multicast on this
      arch")`` (``gemm/collective/builders/sm120_mma_builder.inl`` and the blockscaled and
      sparse ones).
    * ``sm90``, ``sm100`` (SM100, SM101, SM103, SM110): at most :data:`CLUSTER_PORTABLE` CTAs
      portably; :data:`CLUSTER_PORTABLE` + 1 to :data:`CLUSTER_NON_PORTABLE` is
      ``non_portable`` (launches only with ``cudaFuncAttributeNonPortableClusterSizeAllowed``,
      on a GPU whose GPCs hold it); more is ``illegal``.
    * ``sm100``: a 2-SM MMA (``mma_ctas`` 2) needs an even cluster M: the builders'
      ``static_assert(cute::size<0>(cluster_shape_mnk) % 2 == 0, "Cluster shape not divisible by
      MMA size")`` (``sm100_cluster_shape_to_tma_atom_A``/``_B`` of
      ``gemm/collective/builders/sm100_common.inl``).

    Most illegal static clusters of stock kernels therefore fail to compile (those
    ``static_assert``\\ s): the compile error is then the verdict and no legality is made. A
    cluster of run-time extents (``Shape<int, int, _1>``, SM100's dynamic clusters) is
    ``run_time``: the kernel's ``can_implement`` checks it at launch, not here; an arch of no
    rule here (before SM90: no clusters) is ``not_checked``.

    Attributes:
        shape: (M, N, K) in CTAs, an extent ``None`` where it is a run-time value.
        mma_ctas: the CTAs one MMA spans (``None``: the kernel declares no ``AtomThrShapeMNK``).
        family: the arch family judged by (``sm90``, ``sm100``, ``sm120``), or ``None``.
        verdict: one of :data:`CLUSTER_VERDICTS`.
        reason: the rule broken (or why not checked), in words; ``None`` for ``legal``.
    """

    shape: tuple[int | None, ...]
    mma_ctas: int | None
    family: str | None
    verdict: str
    reason: str | None = None

    @classmethod
    def of(cls, shape: tuple[int | None, ...], mma_ctas: int | None, family: str | None) -> ClusterLegality:
        """The legality of a cluster of ``shape`` (CTAs; ``None``: a run-time extent) whose MMA
        spans ``mma_ctas`` CTAs on an arch of ``family`` (the rules of the class docstring)."""
        words = "x".join("?" if e is None else str(e) for e in shape)
        if family not in ("sm90", "sm100", "sm120"):
            return cls(shape, mma_ctas, family, "not_checked", f"no cluster rule for arch family {family}")
        if any(e is None for e in shape):
            return cls(shape, mma_ctas, family, "run_time", f"cluster {words} is set at run time: not verified here")
        ctas = 1
        for e in shape:
            ctas *= e or 0
        if family == "sm120" and ctas != 1:
            return cls(shape, mma_ctas, family, "illegal", f"cluster {words}: SM120/SM121 take only 1x1x1 clusters")
        if family == "sm100" and mma_ctas == 2 and (shape[0] or 0) % 2:
            return cls(
                shape, mma_ctas, family, "illegal", f"cluster {words}: a 2-SM MMA needs an even cluster M on SM100"
            )
        if ctas > CLUSTER_NON_PORTABLE:
            return cls(
                shape,
                mma_ctas,
                family,
                "illegal",
                f"cluster {words}: {ctas} CTAs, over the {CLUSTER_NON_PORTABLE} maximum",
            )
        if ctas > CLUSTER_PORTABLE:
            return cls(
                shape,
                mma_ctas,
                family,
                "non_portable",
                f"cluster {words}: {ctas} CTAs, over the portable {CLUSTER_PORTABLE}: launches only with "
                "cudaFuncAttributeNonPortableClusterSizeAllowed (non-portable)",
            )
        return cls(shape, mma_ctas, family, "legal")

    def findings(self) -> list[str]:
        """The reason of an ``illegal`` or ``non_portable`` cluster, else nothing."""
        return [self.reason] if self.verdict in ("illegal", "non_portable") and self.reason else []

    def to_dict(self) -> dict:
        return {**plain(self), "shape": list(self.shape)}

    @classmethod
    def from_dict(cls, d: dict) -> ClusterLegality:
        """The inverse of :meth:`to_dict`."""
        return cls(tuple(d["shape"]), d["mma_ctas"], d["family"], d["verdict"], d["reason"])


def occupancy_findings(occ: Occupancy | None) -> list[str]:
    """A kernel that gets 0 CTAs per SM by a limit other than shared memory (it cannot launch),
    in words: the factors at 0 (``ctas_per_sm`` or, with no declared register split,
    ``at_most`` 0). Shared memory alone is left out: 0 CTAs by shared memory is the kernel's
    over-capacity verdict itself (a block's capacity is the SM's shared memory less the
    per-block reservation: 232448 = 233472 - 1024 on SM90/SM100, 101376 = 102400 - 1024 on
    SM120), which ``--check`` (``smem``) already fails on."""
    if occ is None or 0 not in (occ.ctas_per_sm, occ.at_most):
        return []
    others = [f for f in occ.limited_by if f != "shared_memory"]
    if not others:
        return []
    return [f"0 CTAs/SM (limited by {', '.join(occ.limited_by)}): it cannot launch"]


def launch_findings(
    occ: Occupancy | None,
    params: ParamsLayout | None,
    cluster: ClusterLegality | None,
    tma_check: TmaCheck | None = None,
) -> list[str]:
    """Every launch finding of one kernel, in words: 0 CTAs per SM (:func:`occupancy_findings`),
    a TMA descriptor not 64-byte aligned or ``Params`` over the parameter limit
    (:meth:`ParamsLayout.findings`), an illegal or non-portable cluster
    (:meth:`ClusterLegality.findings`), a TMA transaction count that differs from the bytes of
    the stage buffers its copies fill (:meth:`TmaCheck.findings`: the pipeline's barrier
    would wait for bytes that never come, or go on before they all came)."""
    return [
        *occupancy_findings(occ),
        *([] if params is None else params.findings()),
        *([] if cluster is None else cluster.findings()),
        *([] if tma_check is None else tma_check.findings()),
    ]


#: :attr:`TmaCheck.status` values.
TMA_STATUSES = ("agrees", "mismatch", "no TMA", "not verified")


@dataclass(frozen=True)
class TmaBuffer:
    """One TMA-filled shared-memory buffer of a collective, read from the laid-out
    ``SharedStorage``: ``member`` (its path, ``tensors.smem_A``), ``size`` (``sizeof`` of the
    member: every stage, bytes), ``stages`` (the pipeline's stage count it is split by),
    ``stage_bytes`` (``size // stages``: one stage, bytes) and, where the collective stages
    narrower elements in wider slots (F8F6F4's 4- and 6-bit elements in ``uint8_t`` slots:
    ``SmemAllocTypeA`` against ``TmaInternalElementA``, ``sm120_blockscaled_mma_tma.hpp``),
    ``element_bits`` and ``slot_bits``: the TMA reads the packed elements and unpacks them into
    the slots, and its transaction counts the packed bytes (:attr:`counted_bytes`); and
    ``data_bytes`` where the member's elements hold fewer bytes than its ``size`` (its
    ``cute::ArrayEngine<T, N>``'s N x the bits of T, read through the probe): a buffer of no
    elements is still a 16-byte member (``cute::array_aligned``'s alignment) and its TMA copy's
    box, one stage of the layout it writes, holds nothing (CUTLASS 4.2.0's SM120 block-scaled
    SFB of an N = 32 tile, whose layout has a zero extent)."""

    member: str
    size: int
    stages: int
    element_bits: int | None = None
    slot_bits: int | None = None
    data_bytes: int | None = None

    @property
    def stage_bytes(self) -> int:
        return self.size // self.stages

    @property
    def counted_bytes(self) -> int:
        """The bytes of one stage the transaction counts: :attr:`stage_bytes`, for slots
        wider than their elements ``stage_bytes * element_bits // slot_bits``, for a member
        whose elements are fewer than its size ``data_bytes // stages``."""
        if self.data_bytes is not None:
            return self.data_bytes // self.stages
        if self.element_bits and self.slot_bits and self.element_bits < self.slot_bits:
            return self.stage_bytes * self.element_bits // self.slot_bits
        return self.stage_bytes

    def why(self) -> str:
        """Why :attr:`counted_bytes` differs from :attr:`stage_bytes`: ``4096 B of 8-bit slots,
        4-bit elements`` or ``a 16 B member of 0 B of elements``."""
        if self.data_bytes is not None:
            return f"a {self.size} B member of {self.data_bytes} B of elements"
        return f"{self.stage_bytes} B of {self.slot_bits}-bit slots, {self.element_bits}-bit elements"

    def text(self) -> str:
        """``smem_A 16384``, ``smem_B 2048 (4096 B of 8-bit slots, 4-bit elements)`` or
        ``smem_SFB 0 (a 16 B member of 0 B of elements)``."""
        name = self.member.rsplit(".", 1)[-1]
        if self.counted_bytes == self.stage_bytes:
            return f"{name} {self.stage_bytes}"
        return f"{name} {self.counted_bytes} ({self.why()})"


@dataclass(frozen=True)
class TmaPart:
    """One transaction count a collective declares (``constant``: ``TmaTransactionBytes``,
    ``TmaTransactionBytesMK``, ``ABTmaTransactionBytes``, ...; ``declared``: its value, bytes,
    the compiler's) against the stage buffers its TMA copies fill (``buffers``), times
    ``factor`` (the CTAs of one MMA atom, ``size(AtomThrShapeMNK{})``: a 2-SM MMA's one barrier
    counts both CTAs' bytes; 1 elsewhere)."""

    constant: str
    declared: int
    buffers: tuple[TmaBuffer, ...]
    factor: int = 1

    @property
    def buffer_bytes(self) -> int:
        """``factor`` x the buffers' counted bytes of one stage (:attr:`TmaBuffer.counted_bytes`), summed."""
        return self.factor * sum(b.counted_bytes for b in self.buffers)

    @property
    def agrees(self) -> bool:
        return self.declared == self.buffer_bytes

    def finding(self) -> str | None:
        """``TmaTransactionBytes 32768 B, its TMA-filled stage buffers hold 33280 B: smem_A
        16384 + smem_B 16896`` where the two differ, else ``None``."""
        if self.agrees:
            return None
        terms = " + ".join(b.text() for b in self.buffers) or "none"
        times = f"{self.factor} x ({terms})" if self.factor != 1 else terms
        return f"{self.constant} {self.declared} B, its TMA-filled stage buffers hold {self.buffer_bytes} B: {times}"


@dataclass(frozen=True)
class TmaCheck:
    """A collective's TMA transaction bytes against the bytes of the stage buffers its TMA
    copies fill, computed from the laid-out ``SharedStorage`` (member size / stages), not from
    the collective's own expression: a barrier that expects other bytes than the copies deliver
    hangs or races (mirage#705, NVIDIA/cutlass PR#3314).

    Attributes:
        collective: the collective's class template (``CollectiveMma``) and its dispatch
            policy's (``MainloopSm90TmaGmmaWarpSpecialized``), as ``CollectiveMma<MainloopSm90...>``.
        status: ``agrees`` (every part equal), ``mismatch`` (a part differs: :meth:`findings`),
            ``no TMA`` (the collective declares no transaction bytes: cp.async, SM80) or
            ``not verified`` (:attr:`note` says why: no rule for the collective's family, a
            buffer whose size does not divide by its stages).
        rule: the CUTLASS file and symbol whose ``load()`` copies the rule mirrors, or ``None``.
        parts: each declared count against its buffers.
        note: what was left out and why (a buffer not per stage, a non-TMA copy), or ``None``.
    """

    collective: str
    status: str
    rule: str | None = None
    parts: tuple[TmaPart, ...] = ()
    note: str | None = None

    def findings(self) -> list[str]:
        """Each part whose declared bytes differ from its buffers' (:meth:`TmaPart.finding`)."""
        return [f for p in self.parts if (f := p.finding()) is not None]

    def one_line(self) -> str:
        """``agrees (TmaTransactionBytes 32768 B = smem_A 16384 + smem_B 16384)``, the
        findings, ``no TMA`` or ``not verified: <why>``."""
        if self.status == "mismatch":
            return "mismatch: " + "; ".join(self.findings())
        if self.status == "agrees":
            return "agrees (" + "; ".join(_part_text(p) for p in self.parts) + ")"
        return self.status + (f": {self.note}" if self.note and self.status == "not verified" else "")

    def to_dict(self) -> dict:
        d = plain(self)
        for p, dp in zip(self.parts, d["parts"]):
            dp["buffer_bytes"] = p.buffer_bytes
            for b, db in zip(p.buffers, dp["buffers"]):
                db["stage_bytes"], db["counted_bytes"] = b.stage_bytes, b.counted_bytes
        return {**d, "findings": self.findings()}

    @classmethod
    def from_dict(cls, d: dict) -> TmaCheck:
        """The inverse of :meth:`to_dict` (sums and findings computed again, not read)."""
        parts = tuple(
            TmaPart(
                p["constant"],
                p["declared"],
                tuple(
                    TmaBuffer(
                        b["member"],
                        b["size"],
                        b["stages"],
                        b.get("element_bits"),
                        b.get("slot_bits"),
                        b.get("data_bytes"),
                    )
                    for b in p["buffers"]
                ),
                p["factor"],
            )
            for p in d["parts"]
        )
        return cls(d["collective"], d["status"], d["rule"], parts, d["note"])


def _part_text(p: TmaPart) -> str:
    terms = " + ".join(b.text() for b in p.buffers)
    return f"{p.constant} {p.declared} B = " + (f"{p.factor} x ({terms})" if p.factor != 1 else terms)
