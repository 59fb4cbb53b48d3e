"""The 2.x mainloop's description (cutlass_layout.subjects.mainloop2x), offline: the note and the
specializations' lines found in a small tree written here. The real headers and nvcc's view
are in tests/test_cutlass2.py (test_f32_two_stages_mainloop_switch_shown and
test_f32_mainloop_switch_equals_nvcc)."""

from __future__ import annotations

from cutlass_layout.subjects.mainloop2x import (
    DEFAULT_MMA,
    DEFAULT_MMA_CORE_SM75,
    fast_f16_specializations,
    mainloop_choice,
)

PIPELINED = "cutlass::gemm::threadblock::MmaPipelined<cutlass::gemm::GemmShape<128, 128, 32>, int>"
HALF, F32 = "cutlass::half_t", "float"

# the shapes the scan looks for, as lines 3 and 4 of two headers
MMA_H = """// line 1
// line 2
struct DefaultMma<float, LayoutA, kAlignmentA, float, LayoutB,
                  kAlignmentB, float, layout::RowMajor,
                  arch::OpClassTensorOp, ArchTag, ThreadblockShape, WarpShape,
                  InstructionShape, 2, Operator, false> {
  using MmaCore = typename DefaultMmaCore<ThreadblockShape, float, arch::OpClassTensorOp, 2,
      arch::OpMultiplyAddFastF16>;
};
"""
CORE_H = """// 1
// 2
// 3
struct DefaultMmaCore<Shape_, WarpShape_, InstructionShape_, float,
                      layout::ColumnMajor, float, layout::RowMajor, float,
                      LayoutC_, arch::OpClassTensorOp, 2,
                      arch::OpMultiplyAddFastF16> {
};
"""


def _tree(tmp_path, mma=MMA_H, core=CORE_H):
    d = tmp_path / "include" / "cutlass" / "gemm" / "threadblock"
    d.mkdir(parents=True)
    if mma is not None:
        (d / "default_mma.h").write_text(mma)
    if core is not None:
        (d / "default_mma_core_sm75.h").write_text(core)
    return tmp_path / "include"


def test_specialization_lines(tmp_path):
    assert fast_f16_specializations(_tree(tmp_path)) == (3, 4)


def test_a_multistage_float_default_mma_is_not_it(tmp_path):
    other = MMA_H.replace("InstructionShape, 2,", "InstructionShape, Stages,")
    assert fast_f16_specializations(_tree(tmp_path, mma=other, core=None)) == (None, None)


def test_float_staged_as_half_at_two_stages_cites_both(tmp_path):
    c = mainloop_choice(PIPELINED, (HALF, HALF), (F32, F32), 2, _tree(tmp_path))
    assert c.type == "cutlass::gemm::threadblock::MmaPipelined<...>"
    assert not c.staged_as_loaded
    assert c.note == (
        "A and B staged as cutlass::half_t in shared memory, the kernel's A and B are float: "
        f"CUTLASS's DefaultMma for float A, B and C on tensor cores with 2 stages ({DEFAULT_MMA}:3) "
        f"builds its MmaPipelined on DefaultMmaCore<..., arch::OpMultiplyAddFastF16> "
        f"({DEFAULT_MMA_CORE_SM75}:4), which stages half_t and multiplies in f16 (accumulating "
        "in float), whatever the kernel's Operator"
    )


def test_without_the_specialization_the_note_is_generic(tmp_path):
    tree = _tree(tmp_path, mma=None, core=None)
    c = mainloop_choice(PIPELINED, (HALF, F32), (F32, F32), 2, tree)
    assert c.note == (
        "A staged as cutlass::half_t in shared memory, the kernel's A is float: the "
        "mainloop CUTLASS's DefaultMma / DefaultMmaCore picked for these types, "
        "stages and arch (MmaPipelined) stages them so"
    )
    c = mainloop_choice(PIPELINED, (HALF, HALF), (F32, F32), 3, _tree(tmp_path / "b"))
    assert "DefaultMma / DefaultMmaCore picked" in c.note  # not the 2-stage specialization


def test_staged_as_loaded_has_no_note(tmp_path):
    c = mainloop_choice(PIPELINED, (F32, F32), (F32, F32), 3, tmp_path)
    assert c.staged_as_loaded and c.note is None and (c.smem_a, c.element_b) == (F32, F32)
