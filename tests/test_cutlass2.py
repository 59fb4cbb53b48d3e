"""CUTLASS 2.x kernels through --header: named as kernels, with their stage count, their
capacity from the arch they run on, and the most stages that fit (sweep --header).

The fixture (fixtures/headers/cutlass2_grouped.hpp) is a grouped fp16 GEMM,
``kernel::DefaultGemmGrouped`` with threadblock 128x128x32, warp 64x64x32, Sm80, stages from
its STAGES macro (8 by default), and the same shapes as a ``device::Gemm``. By hand from the
headers: the mainloop (``MmaBase::SharedStorage``) holds A 128x32 and B 32x128 halfs per
stage, 2 * 8192 B = 16384 B; 8 stages 131072 B; the grouped kernel's SharedStorage
(``gemm_grouped.h``) is a union of that and the epilogue's storage, then the problem
visitor's 1 byte, rounded up to its 16-byte alignment: 131088 B. sm86 allows 101376 B per
block (99 KB), sm80 166912 (163 KB): 6 stages (6 * 16384 + 16 = 98320 B) fit on sm86, 7
(114704 B) do not. ``device::Gemm``'s ``kernel::Gemm`` SharedStorage is the union alone:
131072 B. nvcc agrees on every size, stage count and member offset, on two CUTLASS versions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout import UserType, layouts, sweep
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.cli import main

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "cutlass2_grouped.hpp"

pytestmark = pytest.mark.network


def grouped(arch=None, stages=None):
    return UserType(HEADER, "legacy::Grouped", arch, stages=stages)


def test_grouped_kernel_8_stages(nc420):
    rep = layouts([grouped()], nc420)[0]
    assert rep.error is None
    assert rep.subject_kind == "kernel2x" and rep.stages == 8
    assert rep.kernel.size == 131088 and rep.mainloop.size == 131072
    assert rep.kernel.find("kernel.main_loop.operand_B").offset == 65536
    assert rep.kernel.find("problem_visitor").offset == 131072
    assert rep.kernel.type.startswith("cutlass::gemm::kernel::GemmGrouped<")
    # the arch tag of a multistage mainloop is Sm80: sm80's capacity, said so
    assert (rep.config["arch"], rep.config["arch_from"]) == ("sm80", "tag")
    assert rep.capacity_bytes == 166912 and rep.fits


def test_over_on_sm86_fits_on_sm80(nc420, capsys):
    root = str(nc420.tree.include_root)
    base = ["layout", "--cutlass", root, "--header", str(HEADER), "--type", "legacy::Grouped", "--check"]
    assert main(base + ["--arch", "sm86"]) == 1
    out = capsys.readouterr().out
    assert "Stages: 8" in out and "131088 B of 101376 B" in out and "over capacity by 29712 B" in out
    assert "CUTLASS 2.x kernel" in out and "opt-in" in out
    assert main(base + ["--arch", "sm80"]) == 0
    assert "131088 B of 166912 B" in capsys.readouterr().out
    assert main(base + ["--arch", "sm86", "--stages", "6", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["stages"], doc["kernel"]["size"], doc["config"]["stages"]) == (6, 98320, 6)


def test_max_stages_that_fit_on_sm86(nc420, capsys):
    res = sweep([grouped("sm86")], nc420, jobs=1)
    r = res.records[0]
    assert (r.stages, r.kernel_bytes, r.verdict) == (8, 131088, "over_capacity")
    assert (r.max_stages_that_fit, r.max_stages_kernel_bytes) == (6, 98320)
    assert (
        main(
            [
                "sweep",
                "--cutlass",
                str(nc420.tree.include_root),
                "--header",
                str(HEADER),
                "--type",
                "legacy::Grouped",
                "--arch",
                "sm86",
                "--arch",
                "sm80",
                "--jobs",
                "1",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    got = {d["config"]["arch"]: (d["max_stages_that_fit"], d["max_stages_kernel_bytes"]) for d in doc["results"]}
    # sm80: 10 * 16384 + 16 = 163856 fits 166912, 11 stages (180240) do not
    assert got == {"sm86": (6, 98320), "sm80": (10, 163856)}


def test_sweep_header_plot(nc420, tmp_path, capsys):
    """A sweep of a user type draws its chart (two arches) and its memory map (one)."""
    pytest.importorskip("matplotlib")
    base = [
        "sweep",
        "--cutlass",
        str(nc420.tree.include_root),
        "--header",
        str(HEADER),
        "--type",
        "legacy::Grouped",
        "--jobs",
        "1",
    ]
    assert main(base + ["--arch", "sm86", "--arch", "sm80", "--plot", str(tmp_path / "a.png")]) == 0
    assert main(base + ["--arch", "sm86", "--format", "markdown", "--plot", str(tmp_path / "b.svg")]) == 0
    assert "legacy::Grouped" in capsys.readouterr().out
    assert (tmp_path / "a.png").stat().st_size > 0 and (tmp_path / "b.svg").stat().st_size > 0


def test_device_gemm(nc420):
    rep = layouts([UserType(HEADER, "legacy::Dense", "sm80")], nc420)[0]
    assert rep.subject_kind == "kernel2x" and rep.stages == 8
    assert rep.kernel.size == 131072 and rep.kernel.union


@pytest.mark.nvcc
@pytest.mark.parametrize("tree", ["nc420", pytest.param("fi072", marks=pytest.mark.slow)])  # one version by default
def test_cutlass2_equals_nvcc(tree, request, nvcc):
    tgt = request.getfixturevalue(tree)
    subjects = [grouped("sm80"), UserType(HEADER, "legacy::Dense", "sm80"), grouped("sm86", 6)]
    reps = layouts(subjects, tgt)
    assert [r.kernel.size for r in reps] == [131088, 131072, 98320]
    v = verify_with_nvcc(subjects, reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.sizes == 12 and v.fields >= 10


def _checkouts() -> list[str]:
    import os

    return [p for p in os.environ.get("CUTLASS_LAYOUT_TEST_CHECKOUTS", "").split(os.pathsep) if p]


@pytest.mark.checkout
@pytest.mark.nvcc
@pytest.mark.skipif(
    not _checkouts(), reason="name CUTLASS checkouts (e.g. tags v2.10.0, v2.11.0) in CUTLASS_LAYOUT_TEST_CHECKOUTS"
)
@pytest.mark.parametrize("checkout", _checkouts() or [None])
def test_real_2x_checkout(checkout, nvcc):
    """A real CUTLASS 2.x checkout (no include/cutlass/version.h, no cute/): its version from
    CMakeLists.txt's project(), the fixture's kernels laid out as on the 4.x trees (the
    module docstring's hand figures), and nvcc agrees."""
    import re

    from cutlass_layout import resolve_cutlass, target

    cmake = (Path(checkout) / "CMakeLists.txt").read_text()
    want = re.search(r"project\(CUTLASS VERSION (\d+\.\d+\.\d+)", cmake).group(1)
    tree = resolve_cutlass(checkout)
    assert (tree.version, tree.version_from) == (want, "CMakeLists.txt project()")
    assert not (tree.include_root / "cutlass" / "version.h").exists()
    tgt = target(tree)
    subjects = [grouped("sm80"), UserType(HEADER, "legacy::Dense", "sm80"), grouped("sm86", 6)]
    reps = layouts(subjects, tgt)
    assert [r.kernel.size for r in reps] == [131088, 131072, 98320]
    v = verify_with_nvcc(subjects, reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches


# A float 2.x GEMM (fixtures/headers/cutlass2_f32.hpp: device::Gemm, f32 A RowMajor, B
# ColumnMajor, C RowMajor, tensor cores, Sm80, threadblock 128x128x32, warp 64x64x32,
# instruction 16x8x8). By hand from the headers: at 2 stages DefaultMma's float two-stage
# specialization (gemm/threadblock/default_mma.h) builds MmaPipelined on
# DefaultMmaCore<..., arch::OpMultiplyAddFastF16> (default_mma_core_sm75.h), whose
# SmemIteratorA/B hold half_t: A 128x32 and B 32x128 halfs, 8192 B each per stage, 2 stages
# 32768 B; the epilogue's 17408 B share the union, so the kernel is 32768 B. At 3 stages the
# SM80 multistage specialization keeps float: 16384 B each per stage, 3 stages 98304 B.
F32 = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "cutlass2_f32.hpp"


def f32(stages=None):
    return UserType(F32, "legacy_f32::Gemm", stages=stages)


@pytest.fixture(scope="module")
def f32_reports(nc420):
    return layouts([f32(), f32(3), grouped()], nc420)


def _spec_lines(include_root: Path, rel: str, line: int, n: int = 60) -> str:
    return "".join((include_root / rel).read_text().splitlines(keepends=True)[line - 1 : line - 1 + n])


def test_f32_two_stages_mainloop_switch_shown(f32_reports, nc420, capsys):
    from cutlass_layout.reports.layout import to_markdown
    from cutlass_layout.subjects.mainloop2x import DEFAULT_MMA, DEFAULT_MMA_CORE_SM75

    two, three, half = f32_reports
    assert (two.stages, two.kernel.size, two.mainloop.size) == (2, 32768, 32768)
    m = two.mainloop_class
    assert m.type == "cutlass::gemm::threadblock::MmaPipelined<...>"
    assert (m.smem_a, m.smem_b, m.element_a, m.element_b) == ("cutlass::half_t", "cutlass::half_t", "float", "float")
    assert not m.staged_as_loaded
    assert m.note.startswith(
        "A and B staged as cutlass::half_t in shared memory, the kernel's "
        "A and B are float: CUTLASS's DefaultMma for float A, B and C"
    )
    # the cited lines are the specializations, in this tree's headers
    root = nc420.tree.include_root
    mma_line = int(m.note.split(f"{DEFAULT_MMA}:")[1].split(")")[0])
    core_line = int(m.note.split(f"{DEFAULT_MMA_CORE_SM75}:")[1].split(")")[0])
    spec = _spec_lines(root, DEFAULT_MMA, mma_line)
    assert spec.startswith("struct DefaultMma<float, LayoutA, kAlignmentA, float, LayoutB,")
    assert "InstructionShape, 2, Operator, false" in spec and "arch::OpMultiplyAddFastF16>;" in spec
    assert "using ThreadblockMma = cutlass::gemm::threadblock::MmaPipelined<" in spec
    core = _spec_lines(root, DEFAULT_MMA_CORE_SM75, core_line, 110)
    assert core.startswith("struct DefaultMmaCore<Shape_, WarpShape_, InstructionShape_, float,")
    assert "arch::OpMultiplyAddFastF16> {" in core and core.count("    half_t, \n") == 2
    # the arch is the device-level Gemm's Sm80, not the SM75 f16 MMA's of the mainloop
    assert (two.config["arch"], two.config["arch_from"], two.capacity_bytes) == ("sm80", "tag", 166912)
    assert two.to_dict()["mainloop_class"] == {
        "type": m.type,
        "smem_a": "cutlass::half_t",
        "smem_b": "cutlass::half_t",
        "element_a": "float",
        "element_b": "float",
        "note": m.note,
    }
    assert f"Mainloop (the kernel's Mma): {m.type}; A and B staged as cutlass::half_t" in to_markdown(two)

    assert (three.stages, three.kernel.size) == (3, 98304)
    m3 = three.mainloop_class
    assert m3.type == "cutlass::gemm::threadblock::MmaMultistage<...>"
    assert (m3.smem_a, m3.smem_b) == ("float", "float") and m3.staged_as_loaded and m3.note is None
    mh = half.mainloop_class  # the fp16 grouped kernel stages half as it loads it
    assert mh.type == "cutlass::gemm::threadblock::MmaMultistage<...>" and mh.smem_a == "cutlass::half_t"
    assert mh.staged_as_loaded

    assert main(["layout", "--cutlass", str(root), "--header", str(F32), "--type", "legacy_f32::Gemm"]) == 0
    out = capsys.readouterr().out
    assert (
        "Mainloop (the kernel's Mma): cutlass::gemm::threadblock::MmaPipelined<...>; A and B "
        "staged as cutlass::half_t in shared memory, the kernel's A and B are float"
    ) in out


@pytest.mark.nvcc
@pytest.mark.parametrize("tree", [pytest.param("nc420", marks=pytest.mark.slow), "fi072"])  # one version by default
def test_f32_mainloop_switch_equals_nvcc(tree, request, nvcc, tmp_path):
    """nvcc's sizes, and nvcc's types: at 2 stages the kernel's Mma is an MmaPipelined whose
    warp operator takes half_t A and B; at 3 an MmaMultistage taking float."""
    import subprocess

    tgt = request.getfixturevalue(tree)
    subjects = [f32(), f32(3)]
    reps = layouts(subjects, tgt)
    assert [r.kernel.size for r in reps] == [32768, 98304]
    v = verify_with_nvcc(subjects, reps, tgt.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    for stages, mainloop, element in ((2, "MmaPipelined", "cutlass::half_t"), (3, "MmaMultistage", "float")):
        src = tmp_path / f"check{stages}.cu"
        # nvcc names the class in its one error: the incomplete type Show<Mma>
        src.write_text(f"""#include "{F32}"
#include <type_traits>
template <class T> struct Show;
using Mma = legacy_f32::Gemm::GemmKernel::Mma;
static_assert(std::is_same_v<Mma::Operator::ElementA, {element}>, "smem A");
static_assert(std::is_same_v<Mma::Operator::ElementB, {element}>, "smem B");
static_assert(std::is_same_v<Mma::IteratorA::Element, float>, "global A");
static_assert(std::is_same_v<Mma::IteratorB::Element, float>, "global B");
constexpr auto named = sizeof(Show<Mma>);
""")
        proc = subprocess.run(
            [
                nvcc,
                "-std=c++17",
                "-w",
                "-arch=sm_80",
                f"-DSTAGES={stages}",
                f"-I{tgt.tree.include_root}",
                "-c",
                str(src),
                "-o",
                str(tmp_path / "x.o"),
            ],
            capture_output=True,
            text=True,
        )
        errors = [ln for ln in proc.stderr.splitlines() if ": error:" in ln]
        assert len(errors) == 1, proc.stderr[-2000:]
        assert f'incomplete type "Show<Mma>" (aka "Show<cutlass::gemm::threadblock::{mainloop}<' in errors[0], errors[
            0
        ][:300]
