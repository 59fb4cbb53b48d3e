"""TMA transaction bytes against the stage buffers the TMA copies fill (issue 44, item 3):
:class:`cutlass_layout.model.TmaCheck`, from the laid-out ``SharedStorage`` (member size /
stages), per collective family (:data:`cutlass_layout.subjects.tma.RULES`).

Expected values are derived by hand from the headers (each test says how); none is the tool's
output pasted back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutlass_layout import Config, UserType, layouts
from cutlass_layout.model import FieldLayout, LayoutReport, StructLayout, TmaCheck
from cutlass_layout.subjects import tma

HEADERS = Path(__file__).resolve().parent.parent / "fixtures" / "headers"


def _storage(**members: int) -> StructLayout:
    """A mainloop SharedStorage whose ``tensors`` holds the named buffers (sizes in bytes)."""
    fields, off = [], 0
    for name, size in members.items():
        fields.append(FieldLayout(name, "cute::ArrayEngine<...>", off, size, 16))
        off += size
    tensors = FieldLayout("tensors", "TensorStorage", 0, off, 128, fields=fields)
    return StructLayout("CollectiveMma<...>::SharedStorage", off, 128, 0, [tensors])


def test_sm90_dense_agrees_by_hand():
    """SM90 128x128x64 bf16, 4 stages (sm90_mma_tma_gmma_ss_warpspecialized.hpp): smem_A is
    cosize(SmemLayoutA) = 128 x 64 x 4 stages bf16 = 65536 B, one stage 128*64*2 = 16384 B; B
    likewise; TmaTransactionBytesMK = 16384, NK = 16384, TmaTransactionBytes = 32768."""
    c = tma.check(
        "CollectiveMma",
        "MainloopSm90TmaGmmaWarpSpecialized",
        _storage(smem_A=65536, smem_B=65536),
        {"TmaMK": 16384, "TmaNK": 16384, "TmaTotal": 32768},
        {"A": 4},
        1,
    )
    assert c.status == "agrees" and c.findings() == []
    assert [(p.constant, p.buffer_bytes) for p in c.parts] == [
        ("TmaTransactionBytesMK", 16384),
        ("TmaTransactionBytesNK", 16384),
        ("TmaTransactionBytes", 32768),
    ]
    assert "sm90_mma_tma_gmma_ss_warpspecialized.hpp" in c.rule


def test_a_wrong_count_is_a_finding_in_words():
    """One stage of B is 16896 B here (a buffer the count leaves out): 16384 + 16896 = 33280."""
    c = tma.check(
        "CollectiveMma",
        "MainloopSm90TmaGmmaWarpSpecialized",
        _storage(smem_A=4 * 16384, smem_B=4 * 16896),
        {"TmaTotal": 32768},
        {"A": 4},
        1,
    )
    assert c.status == "mismatch"
    assert c.findings() == [
        "TmaTransactionBytes 32768 B, its TMA-filled stage buffers hold 33280 B: smem_A 16384 + smem_B 16896"
    ]
    assert TmaCheck.from_dict(c.to_dict()) == c
    assert c.to_dict()["findings"] == c.findings()


def test_sm100_2sm_counts_both_ctas():
    """SM100's 2-SM MMA (sm100_mma_warpspecialized.hpp): TmaTransactionBytes is
    size(AtomThrShapeMNK{}) = 2 times one CTA's stage: 256x128x64 bf16 gives each CTA a 128x64
    A tile (16384 B) and half of B, 64x64 (8192 B): 2 x 24576 = 49152."""
    c = tma.check(
        "CollectiveMma",
        "MainloopSm100TmaUmmaWarpSpecialized",
        _storage(smem_A=3 * 16384, smem_B=3 * 8192),
        {"TmaTotal": 49152},
        {"A": 3},
        2,
    )
    assert c.status == "agrees" and c.parts[0].factor == 2 and c.parts[0].buffer_bytes == 49152


def test_f8f6f4_slots_count_the_packed_elements():
    """flashinfer 0.7.4's SM120 MoE MXFP8 x MXFP4 128x32x128B (sm120_blockscaled_mma_array_tma.hpp,
    IsF8F6F4): SmemAllocTypeB is uint8_t, TmaInternalElementB float_e2m1_unpacksmem_t (4 bits):
    one stage of B is 32 x 128 slots = 4096 B, the TMA reads 32 x 128 x 4 bits = 2048 B; SFB
    32-element vectors, the 128-row scale atom x 128/32 = 512 B: NK = 2048 + 512 = 2560. A
    (MXFP8) 128 x 128 x 1 B = 16384 B, SFA 128 x 4 = 512 B: MK 16896; total 19456."""
    c = tma.check(
        "CollectiveMma",
        "MainloopSm120ArrayTmaWarpSpecializedBlockScaled",
        _storage(smem_A=2 * 16384, smem_B=2 * 4096, smem_SFA=2 * 512, smem_SFB=2 * 512),
        {"TmaMK": 16896, "TmaNK": 2560, "TmaTotal": 19456},
        {"A": 2},
        1,
        {"smem_A": (8, 8), "smem_B": (4, 8)},
    )
    assert c.status == "agrees", c.findings()
    (b,) = [b for b in c.parts[1].buffers if b.member.endswith("smem_B")]
    assert (b.stage_bytes, b.counted_bytes) == (4096, 2048)
    assert b.text() == "smem_B 2048 (4096 B of 8-bit slots, 4-bit elements)"
    assert TmaCheck.from_dict(c.to_dict()) == c


def test_no_tma_not_verified_and_left_out():
    """cp.async collectives (SM80) declare no count: ``no TMA``; SM120 blockwise scaling's
    scales are cp.async (SmemBlockScalingCopyAtomA), left out and said so; a family without a
    rule and a buffer that does not divide by its stages are ``not verified``, with why."""
    assert tma.check("MmaMultistage", None, _storage(smem_A=8), {}, {"A": 4}, 1).status == "no TMA"
    blockwise = tma.check(
        "CollectiveMma",
        "MainloopSm120TmaWarpSpecializedBlockwiseScaling",
        _storage(smem_A=32768, smem_B=32768, smem_scale_A=1024, smem_scale_B=16),
        {"TmaMK": 16384, "TmaNK": 16384, "TmaTotal": 32768},
        {"A": 2},
        1,
    )
    assert blockwise.status == "agrees" and "cp.async" in blockwise.note
    unknown = tma.check("MyMma", "MyPolicy", _storage(smem_A=8), {"TmaTotal": 8}, {"A": 1}, 1)
    assert unknown.status == "not verified" and "no rule" in unknown.note
    odd = tma.check(
        "CollectiveMma",
        "MainloopSm90TmaGmmaWarpSpecialized",
        _storage(smem_A=10, smem_B=8),
        {"TmaTotal": 6},
        {"A": 4},
        1,
    )
    assert odd.status == "not verified" and "does not divide by its 4 stages" in odd.note


def _mixed(collective: str, mode: int | None, members: dict, declared: dict, data: dict | None = None) -> TmaCheck:
    return tma.check(
        collective,
        "MainloopSm90TmaGmmaRmemAWarpSpecializedMixedInput",
        _storage(**members),
        declared,
        {"A": 4},
        1,
        mode=mode,
        data=data,
    )


def test_trtllm_interleaved_counts_scales_with_a():
    """TensorRT-LLM's CollectiveMmaInterleaved (flashinfer 0.7.4's
    cutlass_extensions/gemm/collective/sm90_mma_interleaved_tma_gmma_rs_warpspecialized_mixed_input.hpp):
    compute_tma_transaction_bytes_mk() is A's bytes plus scale_tx_bytes (ModeHasScales) plus
    zero_tx_bytes (ConvertAndScaleWithZero), each size<0> x size<1> of SmemLayoutScale (the
    128 x 1 ScaleTileShape of a 128-row tile) x the element's bits; NK is B's; it declares no
    TmaTransactionBytesExtra. A int4 128x128: 8192 B a stage; B bf16 64x128: 16384 B; bf16
    scales and zeros 128 x 2 = 256 B each: MK 8192 + 256 + 256 = 8704 with zeros, 8448 without.
    In ConvertAndScale elements_per_smem_zero() is 0: smem_zero is cute::ArrayEngine<float, 0>,
    a 16 B member of no elements, not counted (it was, as 16 / 4 stages = 4 B, before)."""
    a, b, sc = 4 * 8192, 4 * 16384, 4 * 256
    with_zero = _mixed(
        "CollectiveMmaInterleaved",
        2,
        {"smem_A": a, "smem_B": b, "smem_scale": sc, "smem_zero": sc},
        {"TmaMK": 8704, "TmaNK": 16384, "TmaTotal": 8704 + 16384},
    )
    assert with_zero.status == "agrees", with_zero.findings()
    assert [(p.constant, p.buffer_bytes) for p in with_zero.parts] == [
        ("TmaTransactionBytesMK", 8704),
        ("TmaTransactionBytesNK", 16384),
        ("TmaTransactionBytes", 25088),
    ]
    assert "CollectiveMmaInterleaved::load (ConvertAndScaleWithZero" in with_zero.rule
    scale_only = _mixed(
        "CollectiveMmaInterleaved",
        1,
        {"smem_A": a, "smem_B": b, "smem_scale": sc, "smem_zero": 16},
        {"TmaMK": 8448, "TmaNK": 16384, "TmaTotal": 8448 + 16384},
        {"smem_zero": 0},
    )
    assert scale_only.status == "agrees", scale_only.findings()
    assert "ConvertAndScale loads no zeros" in scale_only.note
    # the rule of CUTLASS's own collective (A's scales in TmaTransactionBytesExtra) would not agree
    wrong = _mixed("CollectiveMma", 2, {"smem_A": a, "smem_B": b, "smem_scale": sc, "smem_zero": sc}, {"TmaMK": 8704})
    assert wrong.findings() == ["TmaTransactionBytesMK 8704 B, its TMA-filled stage buffers hold 8192 B: smem_A 8192"]


def test_trtllm_array_mixed_input_bulk_copies_its_folded_scales():
    """TensorRT-LLM's CollectiveMmaArrayMixedInput (flashinfer 0.7.4's
    sm90_mma_array_tma_gmma_rs_warpspecialized_mixed_input_.hpp, MoE MXFP4 x bf16): ConvertAndScale
    (ElementScale not void, get_conversion_mode()); load() fills smem_scale with
    SM90_BULK_COPY_G2S of WeightScaleBulkCopyBytes per 64-row block on the stage's barrier, and
    TmaTransactionBytesExtra is WeightScaleTransactionBytes (mixed_input_utils.hpp
    compute_tma_transaction_bytes_extra). e8m0 scales, group 32: 128 / 8 = 16 physical columns a
    fold block, 64 x 128 / 32 = 256 raw elements a block; tile M 128 (2 blocks) x K 256 (2):
    1024 elements = 1024 B a stage (SmemLayoutWeightScaleRaw's stage stride). A fp4 128x256:
    16384 B; B bf16 64x256: 32768 B. No smem_zero member; the prescale variant's
    smem_activation_scale and smem_zero hold 0 elements (not compared)."""
    c = _mixed(
        "CollectiveMmaArrayMixedInput",
        1,
        {
            "smem_A": 4 * 16384,
            "smem_B": 4 * 32768,
            "smem_scale": 4 * 1024,
            "smem_activation_scale": 16,
            "smem_zero": 16,
        },
        {"TmaMK": 16384, "TmaNK": 32768, "TmaExtra": 1024, "TmaTotal": 16384 + 32768 + 1024},
        {"smem_zero": 0},
    )
    assert c.status == "agrees", c.findings()
    assert {p.constant: p.buffer_bytes for p in c.parts}["TmaTransactionBytesExtra"] == 1024
    assert "CollectiveMmaArrayMixedInput" in c.rule and "smem_activation_scale" in c.note


def test_mixed_input_without_its_mode_is_not_verified():
    c = _mixed("CollectiveMma", None, {"smem_A": 64, "smem_B": 64}, {"TmaMK": 16})
    assert c.status == "not verified" and "KernelConversionMode" in c.note


def test_an_empty_buffer_counts_what_its_copy_delivers():
    """A buffer of no elements is a 16 B member (cute::array_aligned<T, 0>'s alignment): the
    TMA copy into it delivers nothing, so it counts 0, not 16 / stages; said in the note."""
    c = tma.check(
        "CollectiveMma",
        "MainloopSm120TmaWarpSpecializedBlockScaled",
        _storage(smem_A=2 * 8192, smem_B=2 * 2048, smem_SFA=2 * 1024, smem_SFB=16),
        {"TmaMK": 9216, "TmaNK": 2048, "TmaTotal": 11264},
        {"A": 2},
        1,
        data={"smem_SFB": 0},
    )
    assert c.status == "agrees", c.findings()
    (sfb,) = [b for b in c.parts[1].buffers if b.member.endswith("smem_SFB")]
    assert (sfb.stage_bytes, sfb.counted_bytes) == (8, 0)
    assert sfb.text() == "smem_SFB 0 (a 16 B member of 0 B of elements)"
    assert "smem_SFB: no elements" in c.note
    assert TmaCheck.from_dict(c.to_dict()) == c


def test_layout_report_carries_it_through_json():
    c = tma.check(
        "CollectiveMma",
        "MainloopSm90TmaGmmaWarpSpecialized",
        _storage(smem_A=4, smem_B=4),
        {"TmaTotal": 8},
        {"A": 1},
        1,
    )
    d = {"tma_check": c.to_dict()}
    assert TmaCheck.from_dict(d["tma_check"]) == c
    assert LayoutReport.__dataclass_fields__["tma_check"].default is None


@pytest.mark.network
def test_a_handful_of_families_agree(nc420):
    """One kernel per family, CUTLASS 4.2.0 (nvidia-cutlass 4.2.0.0), by hand:

    - SM90 dense bf16 128x128x64, 4 stages: A and B 128*64*2 = 16384 B a stage, 32768 in all;
    - SM120 dense NVFP4 128x128x128 (block-scaled, SFVecSize 16): A 128*128/2 = 8192 B, SFA
      128 rows x 128/16 = 1024 B; B and SFB the same: MK 9216, NK 9216, 18432 in all;
    - SM100 dense bf16 2-SM 256x128x64, cluster 2x1x1: 2 x (16384 + 8192) = 49152.
    """
    configs = [
        Config(arch="sm90", kernel="dense", a="bf16", tile=(128, 128, 64), stages=4),
        Config(arch="sm120", kernel="dense", a="nvfp4", tile=(128, 128, 128), stages=2),
        Config(arch="sm100", kernel="dense", a="bf16", tile=(256, 128, 64), cluster=(2, 1, 1), stages=3),
    ]
    got = layouts(configs, nc420)
    for rep in got:
        assert rep.error is None, rep.error
        assert rep.tma_check is not None and rep.tma_check.status == "agrees", rep.tma_check
    sm90, sm120, sm100 = (r.tma_check for r in got)
    assert {p.constant: p.declared for p in sm90.parts}["TmaTransactionBytes"] == 32768
    assert {p.constant: p.declared for p in sm120.parts} == {
        "TmaTransactionBytesMK": 9216,
        "TmaTransactionBytesNK": 9216,
        "TmaTransactionBytes": 18432,
    }
    assert sm100.parts[0].declared == 49152 and sm100.parts[0].factor == 2


@pytest.mark.network
def test_a_users_miscounted_collective_is_a_finding(nc420):
    """fixtures/headers/tma_wrong_bytes.hpp: A and B 128x64 half_t, 4 stages (65536 B each),
    one stage 16384 B each; its NK says 16384 + 512 = 16896, its total 33280."""
    (rep,) = layouts([UserType(HEADERS / "tma_wrong_bytes.hpp", "my_project::Miscounted", arch="sm90")], nc420)
    c = rep.tma_check
    assert c is not None and c.status == "mismatch", c
    assert c.findings() == [
        "TmaTransactionBytesNK 16896 B, its TMA-filled stage buffers hold 16384 B: smem_B 16384",
        "TmaTransactionBytes 33280 B, its TMA-filled stage buffers hold 32768 B: smem_A 16384 + smem_B 16384",
    ]


@pytest.mark.network
def test_sm90_mixed_input_each_conversion_mode(nc420):
    """CUTLASS 4.2.0's own SM90 mixed-input collective, one per conversion mode
    (fixtures/headers/sm90_mixed_input_modes.hpp: A int4 K-major, B bf16, 128x128x64), by hand
    from sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp and mixed_input_utils.hpp: MK is
    A, 128 x 64 x 4 bits = 4096 B; NK is B, 128 x 64 x 2 B = 16384 B; TmaTransactionBytesExtra
    the scales and zeros, each size<0> x size<1> of SmemLayoutScale, ScaleTileShape (128, 1) x
    bf16 = 256 B (ConvertAndScale 256, with zeros 512, DirectConvert none: its scale and zero
    buffers hold 0 elements, elements_per_smem_scale()/zero())."""
    header = HEADERS / "sm90_mixed_input_modes.hpp"
    names = ("DirectConvert", "ConvertAndScale", "ConvertAndScaleWithZero")
    got = layouts([UserType(header, f"my_project::{n}", arch="sm90") for n in names], nc420)
    extra = {"DirectConvert": None, "ConvertAndScale": 256, "ConvertAndScaleWithZero": 512}
    for name, rep in zip(names, got):
        c = rep.tma_check
        assert rep.error is None and c is not None and c.status == "agrees", (name, c)
        parts = {p.constant: p.declared for p in c.parts}
        assert parts["TmaTransactionBytesMK"] == 4096 and parts["TmaTransactionBytesNK"] == 16384, name
        assert parts.get("TmaTransactionBytesExtra") == extra[name], name
        assert parts["TmaTransactionBytes"] == 4096 + 16384 + (extra[name] or 0), name
        assert f"({name}:" in c.rule


@pytest.mark.network
def test_cutlass_420_sm120_nvfp4_n32_sfb_holds_nothing(nc420):
    """The SM120 NVFP4 dense 128x32x128 preset on nvidia-cutlass 4.2.0.0's headers (its kernel
    library's GenerateSM120 makes no N = 32 tile: 128x128x128, 128x128x256, 256x128x128): the builder
    (gemm/collective/builders/sm120_blockscaled_mma_builder.inl:202) makes SFB's N extent
    size<1>(TileShape) / Blk_MN = 32 / 128 = 0, so SmemLayoutSFB has no elements: smem_SFB is a
    cute::ArrayEngine<ElementSF, 0> of 16 B (array_aligned's alignment) and
    TmaTransactionBytesNK (sm120_blockscaled_mma_tma.hpp:249) counts
    cosize(take<0,2>(SmemLayoutSFB)) = 0 of it: NK = B's 32 x 128 x 4 bits = 2048 B, what the
    copies deliver (no mismatch; the scale factors of B are never loaded, which CUTLASS fixed
    later by making the SFB tile N at least 128: sSFBTileShape_N, NVIDIA/cutlass#3176). A: 128
    x 128 x 4 bits = 8192 B, SFA 128 rows x 128 / 16 = 1024 B: MK 9216."""
    (rep,) = layouts([Config(arch="sm120", kernel="dense", a="nvfp4", tile=(128, 32, 128), stages=2)], nc420)
    c = rep.tma_check
    assert rep.error is None and c is not None and c.status == "agrees", c
    assert {p.constant: p.declared for p in c.parts} == {
        "TmaTransactionBytesMK": 9216,
        "TmaTransactionBytesNK": 2048,
        "TmaTransactionBytes": 11264,
    }
    (sfb,) = [b for b in c.parts[1].buffers if b.member.endswith("smem_SFB")]
    assert (sfb.size, sfb.stages, sfb.data_bytes, sfb.counted_bytes) == (16, 2, 0, 0)
    assert "smem_SFB: no elements" in c.note


def _statuses(result) -> dict:
    """The tactics of an audit by TMA check status (a report without a check: its subject
    kind), and the first few ids of any status but agrees/no TMA."""
    out: dict = {}
    for t in result.tactics:
        c = t.report.tma_check if t.report is not None else None
        key = c.status if c is not None else f"none ({t.report.subject_kind if t.report else 'no report'})"
        out.setdefault(key, []).append((t.id, None if c is None else c.one_line()))
    return out


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm90", "sm100", "sm103", "sm120"])
def test_every_flashinfer_074_kernel_agrees(arch):
    """Every stock kernel of flashinfer 0.7.4 of the arch: its TMA counts equal its TMA-filled
    stage buffers (or it declares none: cp.async, SM80)."""
    from conftest import shared_audit

    got = _statuses(shared_audit("flashinfer-python==0.7.4", arch=arch))
    assert set(got) <= {"agrees", "no TMA"}, {k: v[:3] for k, v in got.items() if k not in ("agrees", "no TMA")}
    assert got.get("agrees")


@pytest.mark.network
@pytest.mark.slow
def test_every_cutlass_420_sm120_library_kernel_agrees():
    """nvidia-cutlass 4.2.0.0's SM120 kernel library, likewise."""
    from conftest import shared_audit

    got = _statuses(shared_audit("nvidia-cutlass==4.2.0.0", arch="sm120"))
    assert set(got) <= {"agrees", "no TMA"}, {k: v[:3] for k, v in got.items() if k not in ("agrees", "no TMA")}
    assert got.get("agrees")
