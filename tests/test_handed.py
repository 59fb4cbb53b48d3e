"""Every value of tests/handed.md (sections A to D), byte for byte.

The numbers below were computed by nvcc 13.0 from the named CUTLASS headers (sizeof,
offsetof, DispatchPolicy::Stages), not by this tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from handed import SECTION_A  # shared known-good values (tests/handed.py)

from cutlass_layout import Config, layouts

#: The file the values come from: the project's own nvcc measurements, kept in the repository.
HANDED_MD = Path(__file__).resolve().parent / "handed.md"


def test_tests_handed_py_holds_tests_handed_md_values():
    """Offline: every section A row of tests/handed.py is a row of tests/handed.md's section A
    table, and the table has no row handed.py lacks (the 128x256x256 row aside: it does not
    compile, test_section_a_128x256x256_does_not_compile)."""
    text = HANDED_MD.read_text()
    section = text[text.index("## A.") : text.index("## B.")]
    flavours = {"flashinfer": "flashinfer", "TRT-LLM MoE": "trtllm-moe"}
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[1] in flavours:
            tile = tuple(int(x) for x in cells[0].split("x"))
            rows[tile, flavours[cells[1]]] = (*map(int, cells[2:6]), cells[6] == "yes")
    assert rows == SECTION_A and len(rows) == 5


@pytest.fixture(scope="module")
def section_a(fi072, nc420):
    keys = list(SECTION_A)
    configs = [Config(tile=t, preset=p) for t, p in keys]
    bad = [Config(tile=(128, 256, 256), preset=p) for p in ("flashinfer", "trtllm-moe")]
    out = {}
    for name, tgt in (("fi072", fi072), ("nc420", nc420)):
        reps = layouts(configs + bad, tgt)
        out[name] = (dict(zip(keys, reps[: len(keys)])), reps[len(keys) :])
    return out


@pytest.mark.network
@pytest.mark.parametrize("tree", ["fi072", "nc420"])
@pytest.mark.parametrize("key", list(SECTION_A), ids=lambda k: f"{'x'.join(map(str, k[0]))}-{k[1]}")
def test_section_a_rows(section_a, tree, key):
    rep = section_a[tree][0][key]
    stages, mainloop, epilogue, kernel, fits = SECTION_A[key]
    assert rep.error is None
    assert rep.stages == stages
    assert rep.mainloop.size == mainloop
    assert rep.epilogue.size == epilogue
    assert rep.kernel.size == kernel
    assert rep.capacity_bytes == 101376
    assert rep.fits is fits
    assert rep.headroom_bytes == 101376 - kernel
    assert rep.checked == "types"


@pytest.mark.network
@pytest.mark.parametrize("tree", ["fi072", "nc420"])
def test_section_a_128x256x256_does_not_compile(section_a, tree):
    for rep in section_a[tree][1]:
        assert rep.verdict == "does_not_compile"
        assert rep.kernel is None and rep.stages is None and rep.headroom_bytes is None
        assert rep.error.kind == "static_assert"
        assert "Stages set to value 2 or more" in rep.error.message
        assert rep.error.file.startswith("cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp")
        assert rep.error.line > 0


@pytest.mark.network
def test_section_a_mainloop_fields(section_a):
    m = section_a["fi072"][0][((128, 128, 128), "flashinfer")].mainloop
    assert m.align == 1024
    expect = [
        ("tensors.smem_A", 0, 32768),
        ("tensors.smem_B", 32768, 32768),
        ("tensors.smem_SFA", 65536, 4096),
        ("tensors.smem_SFB", 69632, 4096),
        ("tensormaps", 73728, 512),
        ("tensormaps.smem_tensormap_A", 73728, 128),
        ("tensormaps.smem_tensormap_B", 73856, 128),
        ("tensormaps.smem_tensormap_SFA", 73984, 128),
        ("tensormaps.smem_tensormap_SFB", 74112, 128),
        ("pipeline_storage", 74240, 64),
        ("pipeline_storage.full_barrier_", 74240, 32),
        ("pipeline_storage.empty_barrier_", 74272, 32),
    ]
    for name, off, size in expect:
        f = m.find(name)
        assert (f.offset, f.size) == (off, size), name
    assert m.tail_padding == 448
    assert m.find("tensors.smem_A").declared_alignas == 1024
    assert m.find("tensors.smem_B").declared_alignas == 1024
    assert m.find("tensors.smem_SFA").declared_alignas == 16  # since CUTLASS 4.4.0
    assert m.find("pipeline_storage").declared_alignas == 16
    # clang's type alignment of the storage array is 1: alignas is the member's, not the type's
    assert m.find("tensors.smem_A").type_align == 1


@pytest.mark.network
def test_section_a_alignas_absent_before_4_4(section_a):
    m = section_a["nc420"][0][((128, 128, 128), "flashinfer")].mainloop
    assert m.find("tensors.smem_SFA").declared_alignas is None
    assert m.find("tensors.smem_A").declared_alignas == 1024


@pytest.mark.network
def test_section_a_trtllm_kernel_fields(section_a):
    k = section_a["fi072"][0][((128, 128, 128), "trtllm-moe")].kernel
    assert k.size == 89088 and k.size % 1024 == 0
    expect = [
        ("tensors.mainloop", 0, 73728),
        ("tensors.epilogue", 73728, 12800),
        ("pipelines", 87040, 256),
        ("pipelines.scheduler", 87040, 128),
        ("pipelines.mainloop", 87168, 64),
        ("pipelines.epi_load", 87232, 48),
        ("pipelines.load_order", 87280, 16),
        ("scheduler_response", 87296, 128),
        ("tensormaps", 87424, 896),
        ("tensormaps.mainloop", 87424, 512),
        ("tensormaps.epilogue", 87936, 384),
    ]
    for name, off, size in expect:
        f = k.find(name)
        assert (f.offset, f.size) == (off, size), name
    assert k.tail_padding == 89088 - (87424 + 896)


@pytest.mark.network
def test_tma_bytes_and_capacity_from_the_headers(section_a):
    rep = section_a["fi072"][0][((128, 128, 128), "flashinfer")]
    tma = rep.tma_transaction_bytes
    # A tile 128x128 fp4 = 8192 B + SFA 128*128/16 ue4m3 = 1024 B; B likewise
    assert (tma.mk.value, tma.nk.value, tma.total.value) == (9216, 9216, 18432)
    assert tma.mk.file == "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"
    assert "SmemLayoutSFA" in tma.mk.expression and "SmemLayoutA" in tma.mk.expression
    assert tma.total.expression == "TmaTransactionBytesMK + TmaTransactionBytesNK"
    cap = rep.capacity
    assert (cap.name, cap.value, cap.file, cap.expression) == (
        "sm120_smem_capacity_bytes",
        101376,
        "cutlass/arch/arch.h",
        "101376",
    )


# Section B: a public report, SM120 MXFP8 dense, StageCount<2>, C void, D bf16
@pytest.mark.network
@pytest.mark.parametrize("tile", [(256, 128, 128), (128, 256, 128)])
def test_section_b_mxfp8_dense_error_internal(fi072, tile):
    forced, auto = layouts(
        [
            Config(kernel="dense", a="mxfp8", b="mxfp8", tile=tile, stages=2),
            Config(kernel="dense", a="mxfp8", b="mxfp8", tile=tile),
        ],
        fi072,
    )
    assert forced.error is None
    assert (forced.stages, forced.mainloop.size, forced.epilogue.size, forced.kernel.size) == (2, 102400, 9216, 111616)
    assert forced.fits is False and forced.headroom_bytes == 101376 - 111616
    assert forced.verdict == "over_capacity"
    assert auto.verdict == "does_not_compile"
    assert "Stages set to value 2 or more" in auto.error.message


# Section C: the same tile across CUTLASS versions
@pytest.mark.network
def test_section_c_128x32x256(fi068, fi072):
    cfg = Config(tile=(128, 32, 256))
    (old,) = layouts([cfg], fi068)
    (new,) = layouts([cfg], fi072)
    assert (old.stages, old.kernel.size, old.fits) == (4, 102400, False)
    assert (new.stages, new.kernel.size, new.fits) == (3, 84992, True)


# Section D: SM90 dense, nvidia-cutlass 4.2.0.0, bf16, cooperative, TMA epilogue, C = D = bf16
@pytest.mark.network
def test_section_d_sm90_dense_cooperative(nc420):
    cfg = Config(
        arch="sm90",
        kernel="dense",
        a="bf16",
        b="bf16",
        tile=(128, 128, 64),
        c="bf16",
        d="bf16",
        schedule="cooperative",
        epilogue_schedule="tma",
    )
    (rep,) = layouts([cfg], nc420)
    assert (rep.stages, rep.mainloop.size, rep.epilogue.size, rep.kernel.size) == (6, 196736, 33792, 230400)
    assert rep.mainloop.align == 128 and rep.kernel.align == 512
    assert rep.capacity.value == 232448 and rep.capacity.name == "sm90_smem_capacity_bytes"
    assert rep.capacity.file == "cutlass/gemm/collective/builders/sm90_common.inl"
    k = rep.kernel
    for name, off, size in [
        ("pipelines", 0, 176),
        ("pipelines.mainloop", 0, 96),
        ("pipelines.epi_load", 96, 64),
        ("pipelines.load_order", 160, 16),
        ("scheduler", 176, 1),
        ("tensors", 512, 229888),
        ("tensors.epilogue", 512, 33280),
        ("tensors.epilogue.collective", 512, 32768),
        ("tensors.epilogue.thread", 33280, 1),
        ("tensors.mainloop", 33792, 196608),
        ("tensors.mainloop.smem_A", 33792, 98304),
        ("tensors.mainloop.smem_B", 132096, 98304),
    ]:
        f = k.find(name)
        assert (f.offset, f.size) == (off, size), name
    # smem_C and smem_D share 32768 bytes at 512 as a union
    assert (k.find("tensors.epilogue.collective.smem_C").offset, k.find("tensors.epilogue.collective.smem_C").size) == (
        512,
        32768,
    )
    assert (k.find("tensors.epilogue.collective.smem_D").offset, k.find("tensors.epilogue.collective.smem_D").size) == (
        512,
        32768,
    )


@pytest.mark.network
def test_section_d_grouped_auto_epilogue_does_not_compile(nc420):
    (rep,) = layouts([Config(arch="sm90", kernel="grouped", tile=(128, 128, 64), epilogue_schedule="auto")], nc420)
    assert rep.verdict == "does_not_compile"
    assert "StrideCD must be rank-3" in rep.error.message
