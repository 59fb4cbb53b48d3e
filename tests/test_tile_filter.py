"""``--tile MxNxKB`` counts K in bytes of the activation; TensorRT-LLM's SM90 mixed-input tile
names (``CtaShape128x128x512B``) do not always: a note says which tactics the spelling names
and the filter does not keep (issue 43, item 6)."""

from __future__ import annotations

from cutlass_layout.commands.audit.filters import filter_tests, tactic_filter, tile_spelling_notes
from cutlass_layout.model import Tactic


def tactic(name: str, a: str, b: str, tile) -> Tactic:
    return Tactic(
        family="moe",
        name=name,
        a=a,
        b=b,
        out="bf16",
        fusion="none",
        swap_ab=True,
        tile=list(tile),
        cluster=[1, 1, 1],
        kernel="grouped",
        schedule="KernelTmaWarpSpecializedCooperative",
        file="x.cu",
        line=1,
        launcher=name,
    )


# flashinfer 0.7.4's SM90 mixed-input MoE (swap_ab: the activation is B):
# mxfp4 x bf16, CtaShape128x128x512B: CTA K 512 elements of bf16 = 1024 B  -> not 512B
# mxfp4 x bf16, CtaShape128x128x256B: CTA K 256 elements of bf16 = 512 B   -> 512B
# mxfp4 x e4m3, CtaShape128x128x512B: CTA K 512 elements of e4m3 = 512 B   -> 512B (name agrees)
NAMED_512 = tactic("CtaShape128x128x512B_ClusterShape_1x1x1_COOPERATIVE", "mxfp4", "bf16", (128, 128, 512))
NAMED_256 = tactic("CtaShape128x128x256B_ClusterShape_1x1x1_COOPERATIVE", "mxfp4", "bf16", (128, 128, 256))
FP8 = tactic("CtaShape128x128x512B_ClusterShape_1x1x1_PINGPONG", "mxfp4", "e4m3", (128, 128, 512))
POOL = [NAMED_512, NAMED_256, FP8]


def test_bytes_of_the_activation_keep_what_they_say():
    keep = tactic_filter(tile="128x128x512B")
    assert [t for t in POOL if keep(t)] == [NAMED_256, FP8]
    keep = tactic_filter(tile="128x128x512")
    assert [t for t in POOL if keep(t)] == [NAMED_512, FP8]


def test_a_name_spelling_of_another_tactic_gets_a_note():
    assert tile_spelling_notes(POOL, filter_tests(tile="128x128x512B")) == [
        "tile 128x128x512B: K counts bytes of the activation; 1 tactic(s) named "
        "CtaShape128x128x512B_... have CTA tile 128x128x512 (K in elements) and are not kept: "
        "for them give --tile 128x128x512; it keeps 1 named CtaShape128x128x256B_..."
    ]
    # K in elements, or a B tile whose name spelling means the same bytes: no note
    assert tile_spelling_notes(POOL, filter_tests(tile="128x128x512")) == []
    assert tile_spelling_notes([FP8], filter_tests(tile="128x128x512B")) == []
