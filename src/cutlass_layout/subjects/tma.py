"""Which shared-memory buffers a CUTLASS 3.x collective's TMA copies fill, per collective
family, and the check of its declared transaction bytes against them (:func:`check`).

A collective's producer arms each stage's barrier with its ``TmaTransactionBytes`` (or the
parts it splits them into) and then issues its TMA copies into that stage of its buffers; the
barrier completes when the copies have delivered that many bytes. So the declared count must
equal the bytes one stage of the TMA-filled buffers holds. Here those bytes come from the
laid-out ``SharedStorage`` (each member is a ``cute::ArrayEngine<T, cosize_v<SmemLayout>>``
over all stages: member size / stages), not from the collective's own expression.

Which members a family's TMA fills is written per family in :data:`RULES`, each citing the
CUTLASS file whose ``load()`` issues the copies (the copies of flashinfer 0.7.4's CUTLASS
4.x tree, ``gemm/collective/``). A family is told by its dispatch policy's class template
(``MainloopSm90TmaGmmaWarpSpecialized``, ...): the first rule whose pattern matches it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import StructLayout, TmaBuffer, TmaCheck, TmaPart


@dataclass(frozen=True)
class Part:
    """One declared count (``alias``: the probe's alias, :data:`~.aliases.TMA_MEMBERS` or
    :data:`~.aliases.TMA_PARTS`; ``constant``: the member's name) and the members whose one
    stage it counts (``members``: leaf names; one the storage lacks is not counted: SM100
    sparse's ``smem_SFA`` only where it is block-scaled), split by the stage count ``stages``
    (``"A"``: the policy's ``Stages``; ``"SF"``: SM103's ``LoadSFPipelineStageCount``)."""

    alias: str
    constant: str
    members: tuple[str, ...]
    stages: str = "A"


@dataclass(frozen=True)
class Rule:
    """The TMA-filled buffers of one collective family: ``pattern`` (a regular expression
    matched at the start of the dispatch policy's class template name), ``parts``, ``atom``
    (each part counts ``size(AtomThrShapeMNK{})`` CTAs: SM100's 2-SM MMA), ``cite`` (the
    CUTLASS file and symbol whose ``load()`` copies the rule mirrors), ``left_out`` (members
    the family fills by another copy, with why), ``verified`` (False: a family whose copies
    are not read here: the check says "not verified" and why, in ``left_out``), ``collective``
    (a regular expression the collective's class template name must match in full, ``None``:
    any) and ``mode`` (the mixed-input conversion mode it is for, :data:`MODES`; ``None``: any)."""

    pattern: str
    parts: tuple[Part, ...]
    cite: str
    atom: bool = False
    left_out: str | None = None
    verified: bool = True
    collective: str | None = None
    mode: int | None = None


_MK_NK = (
    Part("TmaMK", "TmaTransactionBytesMK", ("smem_A",)),
    Part("TmaNK", "TmaTransactionBytesNK", ("smem_B",)),
    Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B")),
)
_COLL = "gemm/collective/"

#: A mixed-input collective's ``KernelConversionMode`` (``cutlass::detail::ConversionMode``,
#: ``detail/collective/mixed_input_utils.hpp``; TensorRT-LLM's collectives declare their own enum
#: of the same order), as the probe reads it (``TmaMode``).
MODES = {0: "DirectConvert", 1: "ConvertAndScale", 2: "ConvertAndScaleWithZero"}
#: The scale and zero buffers a mode's copies fill: its ``load()`` copies ``tma_load_scale``
#: into ``smem_scale`` where ``ModeHasScales`` and ``tma_load_zero`` into ``smem_zero`` where
#: ``ConvertAndScaleWithZero`` (DirectConvert: neither; the buffers it does not fill hold
#: ``elements_per_smem_scale()``/``elements_per_smem_zero()`` = 0 elements).
_MODE_BUFFERS = {0: (), 1: ("smem_scale",), 2: ("smem_scale", "smem_zero")}
_TRT = "TensorRT-LLM cutlass_extensions/gemm/collective/"
_NOT_FILLED = {
    0: "DirectConvert loads no scales nor zeros",
    1: "ConvertAndScale loads no zeros (smem_zero: 0 elements, still a 16 B member)",
    2: None,
}


def _mixed_input_rules() -> tuple[Rule, ...]:
    """The SM90 mixed-input rules, one per collective kind and conversion mode.

    TensorRT-LLM's ``CollectiveMmaInterleaved`` (``sm90_mma_interleaved_tma_gmma_rs_warpspecialized_mixed_input.hpp``,
    flashinfer 0.7.4's copy): ``load()`` copies ``tma_load_a``, ``tma_load_b``, then where
    ``ModeHasScales`` ``tma_load_scale`` into ``tSsS(_,_,_,write_stage)`` and for
    ConvertAndScaleWithZero ``tma_load_zero`` into ``tZsZ``, all on the stage's barrier; its
    ``compute_tma_transaction_bytes_mk()`` counts A plus ``scale_tx_bytes`` (and
    ``zero_tx_bytes``) in ``TmaTransactionBytesMK``, and declares no ``TmaTransactionBytesExtra``.

    Every other (CUTLASS's ``CollectiveMma`` of ``sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp``
    and ``sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input.hpp``, whose counts
    ``MixedInputUtils::compute_tma_transaction_bytes_mk/nk/extra()`` are; TensorRT-LLM's
    ``CollectiveMmaArrayMixedInput`` of ``sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input_.hpp``
    and ``..._prescale.hpp``, whose ``load()`` fills ``smem_scale`` with ``SM90_BULK_COPY_G2S``
    on the stage's barrier, ``WeightScaleTransactionBytes`` in all): MK is A, NK is B,
    ``TmaTransactionBytesExtra`` the scales (and zeros), ``TmaTransactionBytes`` their sum.

    Lines of flashinfer 0.7.4's copies (its ``data/cutlass/include/cutlass`` and
    ``data/csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions``):
    the interleaved ``load()``'s scale and zero copies at 794 and 802, its
    ``compute_tma_transaction_bytes_mk()`` at 319 (A + scale_tx_bytes + zero_tx_bytes);
    CUTLASS's ``load()`` copies them at 711 and 719 (the array one at 801 and 811) and
    ``MixedInputUtils::compute_tma_transaction_bytes_extra()`` is at 597 of
    ``mixed_input_utils.hpp``; TensorRT-LLM's array collectives bulk-copy the scales at 820
    (``_``) and 854 (``_prescale``), their ``TmaTransactionBytesExtra`` at 655 and 704 (its
    ``mixed_input_utils.hpp``'s ``compute_tma_transaction_bytes_extra()`` at 358).
    """
    rules = []
    for mode, filled in _MODE_BUFFERS.items():
        trt_mk = Part("TmaMK", "TmaTransactionBytesMK", ("smem_A", *filled))
        rules.append(
            Rule(
                r"MainloopSm90\w*MixedInput",
                (trt_mk, _MK_NK[1], Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B", *filled))),
                _TRT + "sm90_mma_interleaved_tma_gmma_rs_warpspecialized_mixed_input.hpp "
                f"CollectiveMmaInterleaved::load ({MODES[mode]}: tma_load_a, tma_load_b"
                + "".join(", tma_load_" + b[5:] for b in filled)
                + ", :794 and :802; compute_tma_transaction_bytes_mk, :319, counts A's scales and zeros with A)",
                left_out=_NOT_FILLED[mode],
                collective=r"CollectiveMmaInterleaved",
                mode=mode,
            )
        )
        rules.append(
            Rule(
                r"MainloopSm90\w*MixedInput",
                (
                    *_MK_NK[:2],
                    Part("TmaExtra", "TmaTransactionBytesExtra", filled),
                    Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B", *filled)),
                ),
                _COLL + "sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp, "
                "sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input.hpp CollectiveMma::load and "
                + _TRT
                + "sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input_{,prescale}.hpp "
                f"CollectiveMmaArrayMixedInput::load ({MODES[mode]}: tma_load_a, tma_load_b"
                + "".join(", the " + b[5:] + "s" for b in filled)
                + " (tma_load_scale/zero, sm90_mma_tma_gmma_rs_...mixed_input.hpp:711 and :719; "
                "SM90_BULK_COPY_G2S, ..._mixed_input_.hpp:820, ..._prescale.hpp:854); "
                "detail/collective/mixed_input_utils.hpp compute_tma_transaction_bytes_extra, :597)",
                left_out=_NOT_FILLED[mode],
                mode=mode,
            )
        )
    rules.append(
        Rule(
            r"MainloopSm90\w*MixedInput",
            (),
            _COLL + "sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp",
            verified=False,
            left_out="the collective's conversion mode (KernelConversionMode) could not be read: "
            "which scale and zero buffers its copies fill depends on it",
        )
    )
    return tuple(rules)


#: The families, first match wins. ``load()`` of each file copies ``tma_load_a`` into ``sA``
#: and ``tma_load_b`` into ``sB`` (``tAsA(_,_,_,write_stage)``) with the stage's barrier, and
#: where named the scale factors (``tma_load_sfa``/``sfb``), metadata or scales likewise.
RULES: tuple[Rule, ...] = (
    Rule(
        r"MainloopSm103\w*BlockScaled",
        (
            Part("TmaAB", "ABTmaTransactionBytes", ("smem_A", "smem_B")),
            Part("TmaSF", "SFTransactionBytes", ("smem_SFA", "smem_SFB"), "SF"),
        ),
        _COLL + "sm103_blockscaled_mma_warpspecialized.hpp CollectiveMma::load (A/B per AB stage, "
        "tma_load_sfa/sfb per SF stage: LoadSFPipelineStageCount)",
        atom=True,
    ),
    Rule(
        r"MainloopSm100\w*Sparse",
        (Part("TmaMainLoad", "MainLoadTmaTransactionBytes", ("smem_A", "smem_B", "smem_SFA", "smem_SFB")),),
        _COLL + "sm100_sparse_mma_warpspecialized.hpp, sm100_blockscaled_sparse_mma_warpspecialized.hpp "
        "CollectiveMma::load",
        atom=True,
        left_out="smem_E: the metadata's own pipeline (MetadataTmaTransactionBytes), not compared",
    ),
    Rule(
        r"MainloopSm100\w*(CpAsync|Emulated|Complex|Planar|MixedInput)",
        (),
        _COLL + "sm100_mma_*_{mixed_tma_cpasync,emulated,interleaved_complex,planar_complex,mixed_input}",
        verified=False,
        left_out="no rule for this SM100 family (cp.async, emulated, complex or mixed-input copies)",
    ),
    Rule(
        r"MainloopSm100\w*BlockScaled",
        (
            Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B", "smem_SFA", "smem_SFB")),
            Part("TmaAB", "ABTmaTransactionBytes", ("smem_A", "smem_B")),
            Part("TmaSF", "SFTransactionBytes", ("smem_SFA", "smem_SFB")),
        ),
        _COLL + "sm100_blockscaled_mma_warpspecialized.hpp CollectiveMma::load (tma_load_a/b/sfa/sfb)",
        atom=True,
    ),
    Rule(
        r"MainloopSm100\w*Blockwise",
        (Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B")),),
        _COLL + "sm100_mma_warpspecialized_blockwise_scaling.hpp CollectiveMma::load",
        atom=True,
        left_out="smem_SFA, smem_SFB: cp.async (copy_if(scale_copy_a, ...)), not TMA",
    ),
    Rule(
        r"MainloopSm100",
        (Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B")),),
        _COLL + "sm100_mma_warpspecialized.hpp CollectiveMma::load",
        atom=True,
    ),
    Rule(
        r"MainloopSm120\w*Sparse",
        (),
        _COLL + "sm120_sparse_mma_tma.hpp, sm120_blockscaled_sparse_mma_tma.hpp",
        verified=False,
        # CUTLASS 4.2.0's SM120 sparse NVFP4 (the preset, --kernel sparse): MK 12288 against
        # A's 4096 B of packed elements + SFA 1024 + SFB 1024 + E 2048 a stage
        left_out="A's F8F6F4 elements: TmaTransactionBytesMK counts them at their 8-bit slots "
        "(cosize(take<0,2>(SmemLayoutA)) x sizeof_bits of ElementAMma, sm120_sparse_mma_tma.hpp:245), "
        "the dense block-scaled collective at their packed bits (sizeof_bits<ElementA>, "
        "sm120_blockscaled_mma_tma.hpp:245): which the TMA's unpacking delivers is not settled here",
    ),
    Rule(
        r"MainloopSm120\w*BlockScaled",
        (
            Part("TmaMK", "TmaTransactionBytesMK", ("smem_A", "smem_SFA")),
            Part("TmaNK", "TmaTransactionBytesNK", ("smem_B", "smem_SFB")),
            Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B", "smem_SFA", "smem_SFB")),
        ),
        _COLL + "sm120_blockscaled_mma_tma.hpp CollectiveMma::load (tma_load_a/sfa, tma_load_b/sfb)",
    ),
    Rule(
        r"MainloopSm120\w*Blockwise",
        _MK_NK,
        _COLL + "sm120_mma_tma_blockwise_scaling.hpp CollectiveMma::load",
        left_out="smem_scale_A, smem_scale_B: cp.async (SmemBlockScalingCopyAtomA: SM80_CP_ASYNC_CACHEALWAYS), not TMA",
    ),
    Rule(r"MainloopSm120", _MK_NK, _COLL + "sm120_mma_tma.hpp CollectiveMma::load"),
    Rule(
        r"MainloopSm90\w*(BlockScaling|Blockwise)",
        (
            *_MK_NK[:2],
            Part("TmaSFA", "TmaTransactionBytesSFA", ("smem_SFA",)),
            Part("TmaSFB", "TmaTransactionBytesSFB", ("smem_SFB",)),
        ),
        _COLL + "sm90_mma_tma_gmma_ss_warpspecialized_fp8_blockwise_scaling.hpp CollectiveMma::load",
        left_out="smem_SFA/smem_SFB where their count is 0: cp.async (IsTmaLoadSFA/SFB false), not TMA",
    ),
    *_mixed_input_rules(),
    Rule(
        r"MainloopSm90\w*Sparse",
        (
            Part("TmaMK", "TmaTransactionBytesMK", ("smem_A", "smem_E")),
            Part("TmaNK", "TmaTransactionBytesNK", ("smem_B",)),
            Part("TmaTotal", "TmaTransactionBytes", ("smem_A", "smem_B", "smem_E")),
        ),
        _COLL + "sm90_sparse_mma_tma_gmma_ss_warpspecialized.hpp CollectiveMma::load (tma_load_a/e, tma_load_b)",
    ),
    Rule(r"MainloopSm90\w*Tma", _MK_NK, _COLL + "sm90_mma_tma_gmma_ss_warpspecialized.hpp CollectiveMma::load"),
)


def rule_for(policy: str | None, collective: str | None = None, mode: int | None = None) -> Rule | None:
    """The first of :data:`RULES` whose pattern matches the dispatch policy's class template
    name ``policy`` and whose :attr:`Rule.collective` and :attr:`Rule.mode` (where it has them)
    match the collective's class template name and conversion mode (``None``: no rule)."""
    if policy is None:
        return None
    return next(
        (
            r
            for r in RULES
            if re.match(r.pattern, policy)
            and (r.collective is None or re.fullmatch(r.collective, collective or ""))
            and (r.mode is None or r.mode == mode)
        ),
        None,
    )


def _buffers(storage: StructLayout) -> dict[str, tuple[str, int]]:
    """Every ``smem_*`` leaf of ``storage`` by name: its path and size (bytes)."""
    out: dict[str, tuple[str, int]] = {}
    for path, f in storage.walk():
        leaf = path.rsplit(".", 1)[-1]
        if leaf.startswith("smem_") and not f.fields and "tensormap" not in leaf:
            out.setdefault(leaf, (path, f.size))
    return out


def check(
    collective: str,
    policy: str | None,
    storage: StructLayout | None,
    declared: dict[str, int],
    stages: dict[str, int | None],
    atom: int,
    bits: dict[str, tuple[int, int]] | None = None,
    *,
    mode: int | None = None,
    data: dict[str, int] | None = None,
) -> TmaCheck:
    """The :class:`~cutlass_layout.model.launch.TmaCheck` of a collective: ``collective`` and
    ``policy`` its class template and its dispatch policy's (names), ``storage`` its laid-out
    ``SharedStorage``, ``declared`` its transaction counts by probe alias (0 or absent: not
    declared), ``stages`` the stage counts by :attr:`Part.stages` key, ``atom``
    ``size(AtomThrShapeMNK{})`` (1 where it has none), ``bits`` the element and slot bits of
    ``smem_A``/``smem_B`` by member name (:class:`~cutlass_layout.model.launch.TmaBuffer`'s
    ``element_bits``/``slot_bits``; absent: the slots are the elements), ``mode`` a
    mixed-input collective's conversion mode (:data:`MODES`; ``None``: not read), ``data`` the
    bytes the elements of a buffer hold by member name (where fewer than the member's size:
    :attr:`~cutlass_layout.model.launch.TmaBuffer.data_bytes`). Bytes throughout.

    No count declared: ``no TMA``. No rule, a family not read (:attr:`Rule.verified`), no
    storage, or a buffer whose size does not divide by its stages: ``not verified``, with why.
    """
    name = f"{collective}<{policy}>" if policy else collective
    if not any(declared.values()):
        return TmaCheck(name, "no TMA")
    rule = rule_for(policy, collective, mode)
    if rule is None or storage is None:
        why = "no laid-out SharedStorage" if rule is not None else f"no rule for the collective family {policy}"
        return TmaCheck(name, "not verified", note=why)
    if not rule.verified:
        return TmaCheck(name, "not verified", rule.cite, note=rule.left_out)
    bufs = _buffers(storage)
    parts: list[TmaPart] = []
    used: set[str] = set()
    bad: list[str] = []
    for part in rule.parts:
        value = declared.get(part.alias, 0)
        n = stages.get(part.stages)
        if not value:  # not declared (or 0: a part this instance does not copy by TMA)
            continue
        if not n:
            bad.append(f"{part.constant}: no stage count {part.stages}")
            continue
        members: list[TmaBuffer] = []
        for m in part.members:
            if m not in bufs:
                continue
            path, size = bufs[m]
            used.add(m)
            held = (data or {}).get(m)
            if held is not None and held < size:  # fewer bytes of elements than the member: those
                if held % n:
                    bad.append(f"{path} ({held} B of elements) does not divide by its {n} stages")
                members.append(TmaBuffer(path, size, n, data_bytes=held))
                continue
            if size % n:
                bad.append(f"{path} ({size} B) does not divide by its {n} stages")
            eb, sb = (bits or {}).get(m, (None, None))
            members.append(TmaBuffer(path, size, n, eb, sb) if eb and sb and eb < sb else TmaBuffer(path, size, n))
        parts.append(TmaPart(part.constant, value, tuple(members), atom if rule.atom else 1))
    notes = [rule.left_out] if rule.left_out else []
    empty = sorted({b.member.rsplit(".", 1)[-1] for p in parts for b in p.buffers if b.data_bytes == 0})
    if empty:
        notes.append(f"{', '.join(empty)}: no elements (an empty layout), its TMA copy delivers nothing")
    others = sorted(set(bufs) - used - {m for p in rule.parts for m in p.members})
    if others:
        notes.append(f"not filled by this count's TMA copies (not compared): {', '.join(others)}")
    if bad:
        return TmaCheck(name, "not verified", rule.cite, tuple(parts), "; ".join(bad + notes))
    status = "agrees" if all(p.agrees for p in parts) else "mismatch"
    return TmaCheck(name, status, rule.cite, tuple(parts), "; ".join(notes) or None)
