"""diff --audit of two CUTLASS kernel libraries: their kernels paired by procedural name.

Offline: the pairing (same name; a 3.x kernel's pre-4.x name, with its accumulator letter and
MMA instruction shape, and the name 4.x gives it), and the one-line errors (a library beside a
flashinfer install, the library's filters where they do not apply, a selection neither side
keeps). With the package index: two variants of the miniature stand-in library
(``fixtures/installs/mini_cutlass_library``) whose emitted types are plain structs of sizes
written here, laid out on nvidia-cutlass 4.2.0.0's headers, through the command line with its
default flags; and nvidia-cutlass 3.8.0.0 -> 4.2.0.0 on SM90 (12 kernels of one tile) and SM120
(3.8.0 has no GenerateSM120), the SM90 kernel whose verdict changes compiled by nvcc's host pass
on both sides.
"""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace

import pytest
from conftest import MINI_LIBRARY
from test_library_audit import _error_line

from cutlass_layout import api
from cutlass_layout.cli import main
from cutlass_layout.commands.diff_audit import library_name, pair_library_kernels

OLD, NEW = "nvidia-cutlass==3.8.0.0", "nvidia-cutlass==4.2.0.0"
#: 3.8.0's and 4.2.0's names of one SM90 kernel (their manifests' procedural names)
NAME_38 = "cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f32_f32_128x128x64_1x2x1_0_nnn_align8_warpspecialized_epi_nosmem"
NAME_42 = "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f32_f32_128x128x64_1x2x1_0_nnn_align8_warpspecialized_epi_nosmem"
#: The SM90 kernels of one tile, cluster and layout, of each schedule and epilogue, dense and grouped
SM90_TILE = "cutlass3x_sm90_tensorop_*gemm*_f16_f16_f32_f16_f16_128x128x64_1x2x1_0_nnn_align8*"
GROUPED_COOP_TMA = (
    "cutlass3x_sm90_tensorop_{}gemm_grouped_f16_f16_f32_f16_f16_128x128x64_1x2x1_0_nnn_align8_"
    "warpspecialized_cooperative_epi_tma"
)


# ---------------------------------------------------------------------------------------
# offline


def test_a_pre_4x_name_is_the_4x_name_with_its_instruction_shape():
    assert library_name(NAME_38) == NAME_42 and library_name(NAME_42) == NAME_42
    assert library_name(
        "cutlass3x_sm100_bstensorop_s128x128x32gemm_ue8m0xe2m1_ue8m0xe2m1_f32_f16_e5m2_128x128x128"
        "_1x1x1_0_tnt_align128_q_1sm"
    ) == ("cutlass3x_sm100_bstensorop_gemm_ue8m0xe2m1_ue8m0xe2m1_f32_f16_e5m2_128x128x128_1x1x1_0_tnt_align128_q_1sm")
    assert (
        library_name("cutlass3x_sm90_sptensorop_h64x128x32spgemm_f16_f16_f16_f16_f16_128x128x64")
        == "cutlass3x_sm90_sptensorop_spgemm_f16_f16_f16_f16_f16_128x128x64"
    )
    assert (
        library_name("cutlass3x_sm90_tensorop_s64x128x8tf32gemm_f32_f32") == "cutlass3x_sm90_tensorop_tf32gemm_f32_f32"
    )
    two_x = "cutlass_sm90_tensorop_d1684gemm_f64_f64_f64_f64_f64_128x128x16_1x1x1_3_nnn_align1"
    assert library_name(two_x) == two_x  # 2.x kernels keep their instruction shape in 4.x


def test_kernels_are_paired_by_name_then_by_their_4x_name():
    k = SimpleNamespace
    same, moved, gone, twin_a, twin_b = (
        k(id="a_kernel"),
        k(id=NAME_38),
        k(id="gone"),
        k(id=NAME_38.replace("s64x128x16", "s64x256x16")),
        k(id="new_one"),
    )
    # two old kernels whose 4.x name is the same new kernel's: neither is paired with it
    pairs = pair_library_kernels([same, gone, twin_a, moved], [k(id=NAME_42), k(id="a_kernel"), twin_b])
    got = [(o and o.id, n and n.id, by) for o, n, by in pairs]
    assert got == [
        ("a_kernel", "a_kernel", "id"),
        ("gone", None, None),
        (twin_a.id, None, None),
        (NAME_38, None, None),
        (None, NAME_42, None),
        (None, "new_one", None),
    ]
    pairs = pair_library_kernels([same, moved, gone], [k(id=NAME_42), k(id="a_kernel")])
    assert [(o and o.id, n and n.id, by) for o, n, by in pairs] == [
        ("a_kernel", "a_kernel", "id"),
        (NAME_38, NAME_42, "core_name"),
        ("gone", None, None),
    ]


def test_a_library_beside_a_flashinfer_install_and_misplaced_filters_are_one_line(capsys, tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(MINI_LIBRARY, lib)
    line = _error_line(capsys, ["diff", str(lib), "flashinfer-python==0.7.2.post1", "--audit"])
    assert "compares two flashinfer installs or two CUTLASS kernel libraries, not one of each" in line
    assert f"{lib} is CUTLASS's kernel library, flashinfer-python==0.7.2.post1 a flashinfer install" in line
    line = _error_line(capsys, ["diff", "flashinfer-python==0.6.8", str(lib), "--audit"])
    assert "not one of each" in line
    line = _error_line(
        capsys, ["diff", "flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1", "--audit", "--kernels", "*gemm*"]
    )
    assert "--kernels '*gemm*': the kernel library's own filters, for two CUTLASS kernel libraries" in line
    line = _error_line(capsys, ["diff", str(lib), str(lib), "--exclude-kernels", "x"])
    assert line == (
        "error: --exclude-kernels: the kernel library's own filters, for diff --audit of two CUTLASS kernel libraries"
    )
    line = _error_line(capsys, ["diff", str(lib), str(lib), "--audit", "--family", "moe"])
    assert "one family, cutlass_library" in line


def test_a_selection_neither_library_keeps_says_why(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(MINI_LIBRARY, old)
    shutil.copytree(MINI_LIBRARY, new)
    line = _error_line(capsys, ["diff", str(old), str(new), "--audit", "--kernels", "*nothing_like_it*"])
    assert line.startswith(
        "error: neither library has a CUTLASS 3.x kernel for sm120 to compare with --kernels '*nothing_like_it*': old ("
    )
    assert line.count("keeps no kernel for sm120 with --kernels '*nothing_like_it*'") == 2


# ---------------------------------------------------------------------------------------
# the miniature library, on nvidia-cutlass 4.2.0.0's headers


#: What the stand-in emitter writes here instead of its plain struct: a type shaped as a 3.x
#: kernel to the probe (a ``CollectiveMainloop`` with a ``TiledMma``, a ``DispatchPolicy`` and
#: a SharedStorage; a ``CollectiveEpilogue`` with a ``StrideD``), a mainloop of ``MAIN[name]``
#: bytes (1024 where not given) and ``STAGES[name]`` stages (2), a 16-byte epilogue: the kernel's
#: SharedStorage is the two char arrays, ``MAIN + 16`` bytes
KERNEL_SHAPED = (
    "struct CollectiveMainloop {{ struct TiledMma {{}}; struct DispatchPolicy {{ static constexpr int Stages = "
    "{STAGES.get(name, 2)}; }}; struct SharedStorage {{ char smem[{MAIN.get(name, 1024)}]; }}; }}; "
    "struct CollectiveEpilogue {{ struct StrideD {{}}; struct SharedStorage {{ char smem[16]; }}; }}; "
    "struct SharedStorage {{ CollectiveMainloop::SharedStorage mainloop; "
    "CollectiveEpilogue::SharedStorage epilogue; }};"
)


def _variant(dest, tree, main_bytes: dict, stages: dict, drop=(), add=()) -> str:
    """A copy of the miniature library at ``dest`` whose include folder is ``tree``'s, whose
    emitter writes :data:`KERNEL_SHAPED` types (``main_bytes``, ``stages``: by kernel name),
    without the kernels named in ``drop`` and with ``add``'s (``(name, tile)``, auto stages)."""
    shutil.copytree(MINI_LIBRARY, dest)
    include = dest / "cutlass_library" / "source" / "include"
    shutil.rmtree(include)
    include.symlink_to(tree.include_root, target_is_directory=True)
    emitter = dest / "cutlass_library" / "gemm_operation.py"
    text = emitter.read_text()
    assert text.count("struct SharedStorage {{ char x[16]; }};") == 1
    text = text.replace("struct SharedStorage {{ char x[16]; }};", KERNEL_SHAPED)
    text = text.replace(
        "class EmitGemmUniversal3xInstance:",
        f"MAIN = {main_bytes!r}\nSTAGES = {stages!r}\n\n\nclass EmitGemmUniversal3xInstance:",
    )
    emitter.write_text(text)
    gen = dest / "cutlass_library" / "generator.py"
    text = gen.read_text()
    for name in drop:
        text, n = re.subn(rf"    manifest.append\(_Op\(\"{name}\".*\n", "", text)
        assert n == 1, name
    more = "".join(f"    manifest.append(_Op({name!r}, GemmKind.Universal3x, {tile!r}, 0))\n" for name, tile in add)
    text = text.replace(
        "def GenerateSM120(manifest, cuda_version):\n", "def GenerateSM120(manifest, cuda_version):\n" + more
    )
    gen.write_text(text)
    return str(dest)


@pytest.mark.network
def test_two_miniature_libraries_through_the_command_line(tmp_path, capsys):
    """Old: the stand-in's four 3.x kernels (1040 B: a 1024-byte mainloop of 2 stages and a
    16-byte epilogue; one does not compile) and one named as CUTLASS before 4.x names a kernel.
    New: the auto 128x128x128 kernel's mainloop 101361 B, its kernel 101377 B, one byte over
    SM120's 101376 (fits -> over capacity); the grouped one 2048 B of 4 stages (2064 B); the
    3-stage one gone; a 256x128x128 one added; the old-style name as 4.x spells it, as before."""
    from cutlass_layout.sources.trees import resolve_cutlass

    tree = resolve_cutlass(NEW)
    auto, grouped = "fake_sm120_gemm_e4m3_128x128x128_auto", "fake_sm120_gemm_grouped_e4m3_64x128x128_auto"
    old_style = "cutlass3x_sm120_tensorop_s64x64x16gemm_e4m3_e4m3_f32_void_f16_64x64x64_1x1x1_0_tnt_align16"
    new_style = library_name(old_style)
    assert new_style == "cutlass3x_sm120_tensorop_gemm_e4m3_e4m3_f32_void_f16_64x64x64_1x1x1_0_tnt_align16"
    old = _variant(tmp_path / "old", tree, {}, {}, add=[(old_style, [64, 64, 64])])
    new = _variant(
        tmp_path / "new",
        tree,
        {auto: 101376 - 16 + 1, grouped: 2048},
        {grouped: 4},
        drop=["fake_sm120_gemm_e4m3_128x256x128_3stage"],
        add=[("fake_sm120_gemm_e4m3_256x128x128_auto", [256, 128, 128]), (new_style, [64, 64, 64])],
    )
    assert main(["diff", old, new, "--audit", "--exit-code"]) == 1
    out = capsys.readouterr().out
    assert (
        "Audit (sm120, CUTLASS's kernel library, the default kernel filter, paired by procedural name): "
        "5 kernels on the old side, 5 on the new"
    ) in out
    assert (
        "1 verdict changes (1 fits -> over capacity), 1 with changed numbers, 1 renamed, 1 only new, "
        "1 only old, 1 the same"
    ) in out
    lines = [ln.strip() for ln in out.splitlines()]
    first = next(i for i, ln in enumerate(lines) if ln.startswith(("!", "*", "~", "+", "-")))
    assert lines[first : first + 4] == [  # the epilogue (and its array) after the mainloop move
        f"! {auto}: 1040 B, 2 stages, fits -> 101377 B, 2 stages, over (+100337 B)",
        "mainloop.smem: 1024 B @ 0 -> 101361 B @ 0",
        "mainloop: 1024 B @ 0 -> 101361 B @ 0",
        "(2 more members only move)",
    ]
    assert f"* {grouped}: 1040 B, 2 stages, fits -> 2064 B, 4 stages, fits (+1024 B)" in lines
    assert "+ fake_sm120_gemm_e4m3_256x128x128_auto: 1040 B, 2 stages, fits" in lines
    assert "- fake_sm120_gemm_e4m3_128x256x128_3stage: 1040 B, 2 stages, fits" in lines
    assert (
        "~ 1 kernels renamed by CUTLASS 4.x's naming only, numbers the same (s64x64x16gemm -> gemm; --json lists them)"
    ) in lines
    # a note both libraries' audits have is said once
    assert (
        "note: both: 1 of the 6 kernels the generator keeps are not CUTLASS 3.x GEMMs and were not laid out: "
        "Gemm/Universal (EmitGemmUniversalInstance)"
    ) in lines
    assert main(["diff", old, new, "--audit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["audit"]
    assert doc["kind"] == "cutlass_library" and doc["selection"] == {} and doc["arch"] == "sm120"
    assert doc["summary"] == {
        "verdict": 1,
        "numbers": 1,
        "renamed": 1,
        "added": 1,
        "removed": 1,
        "same": 1,
        "verdict_changes": [{"old": "fits", "new": "over_capacity", "count": 1}],
    }
    rows = {t["id"]: t for t in doc["tactics"]}
    over = rows[auto]
    assert (over["old"]["kernel_bytes"], over["new"]["kernel_bytes"], over["kernel_bytes_delta"]) == (
        1040,
        101377,
        100337,
    )
    assert over["new"]["headroom_bytes"] == -1 and over["paired_by"] == "id"
    assert {"verdict", "kernel_bytes", "mainloop_bytes"} <= set(over["changed"])
    assert rows[grouped]["change"] == "numbers" and "stages" in rows[grouped]["changed"]
    renamed = rows[new_style]
    assert (renamed["change"], renamed["old_id"], renamed["paired_by"]) == ("renamed", old_style, "core_name")
    assert renamed["rename"] == {"old": "s64x64x16gemm", "new": "gemm"}
    broken = rows["fake_sm120_gemm_broken_e4m3_128x128x128"]
    assert broken["change"] == "same" and broken["new"]["verdict"] == "does_not_compile"
    assert main(["diff", old, new, "--audit", "--format", "markdown", "--kernels", "fake*auto"]) == 0
    md = capsys.readouterr().out
    assert "paired by procedural name): 2 kernels on the old side, 3 on the new**" in md
    assert f"- `! {auto}: 1040 B, 2 stages, fits -> 101377 B, 2 stages, over (+100337 B)`" in md


# ---------------------------------------------------------------------------------------
# nvidia-cutlass 3.8.0.0 -> 4.2.0.0


@pytest.fixture(scope="module")
def sm90_diff():
    """3.8.0.0 -> 4.2.0.0, SM90, :data:`SM90_TILE` (12 kernels a side)."""
    return api.diff(OLD, NEW, audit=True, arch="sm90", kernels=SM90_TILE, jobs=1)


@pytest.mark.network
def test_sm90_kernels_are_paired_across_the_4x_rename(sm90_diff):
    """Every 3.8.0 kernel of the tile is paired with its 4.2.0 name; 4.2.0's grouped (pointer-
    array) kernels gained a tile scheduler pipeline and response in shared memory
    (``sm90_gemm_array_tma_warpspecialized_cooperative.hpp``: ``PipelineStorage::scheduler``,
    ``SharedStorage::scheduler_response``; tests/test_library_diff's nvcc check has the sizes)."""
    a = sm90_diff.audit
    assert (a.old_tactics, a.new_tactics, a.kind) == (12, 12, "cutlass_library")
    assert all(r.paired_by == "core_name" for r in a.rows)
    assert all(r.rename is not None and (r.rename.old, r.rename.new) == ("s64x128x16gemm", "gemm") for r in a.rows)
    assert all(r.new_id == library_name(r.old_id) for r in a.rows)
    first = a.rows[0]
    assert first.id == GROUPED_COOP_TMA.format("") and first.change == "verdict"
    assert (first.old.verdict, first.new.verdict) == ("fits", "exact_fit")
    grouped = [r for r in a.rows if "_gemm_grouped_" in r.id]
    assert len(grouped) == 4 and all(r.kernel_bytes_delta > 0 for r in grouped)
    assert all(
        {"pipelines.scheduler", "scheduler_response"} <= {m.name for m in r.members if m.old is None} for r in grouped
    )
    # the dense kernels' SharedStorage did not change size, and neither did any stage count
    assert all(r.kernel_bytes_delta == 0 for r in a.rows if r not in grouped)
    assert all(r.old.stages == r.new.stages for r in a.rows)
    assert a.summary()["verdict_changes"] == [{"old": "fits", "new": "exact_fit", "count": 1}]


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_the_verdict_change_against_nvcc(sm90_diff, nvcc, tmp_path):
    """The grouped cooperative TMA-epilogue kernel, 231424 B on 3.8.0 and 232448 B (SM90's
    capacity, an exact fit) on 4.2.0: nvcc's host pass of each library's own emitted source."""
    from test_library_audit import _nvcc_sizes

    from cutlass_layout.sources.library import resolve_kernel_library

    row = sm90_diff.audit.rows[0]
    for side, spec, name in (
        ("old", OLD, GROUPED_COOP_TMA.format("s64x128x16")),
        ("new", NEW, GROUPED_COOP_TMA.format("")),
    ):
        work = tmp_path / side
        work.mkdir()
        got = _nvcc_sizes(resolve_kernel_library(spec), "sm90", [name], work)
        t = getattr(row, side)
        assert t.id == name
        assert (t.kernel_bytes, t.mainloop_bytes, t.epilogue_bytes, t.stages) == got[name], side
    assert (row.old.kernel_bytes, row.new.kernel_bytes) == (231424, 232448) and row.new.capacity_bytes == 232448


@pytest.mark.network
def test_sm120_of_a_library_without_its_generator():
    """3.8.0.0 has no GenerateSM120: its side keeps nothing (a note says why) and 4.2.0.0's
    kernels are all only new, with the numbers tests/test_library_audit.py checks against nvcc
    (the 8 kernels of its SAMPLE: 2 exact fits, 101376 B, the sparse one among them)."""
    from test_library_audit import SAMPLE

    a = api.diff(OLD, NEW, audit=True, kernels=",".join(SAMPLE), jobs=1).audit
    assert (a.arch, a.old_tactics, a.new_tactics) == ("sm120", 0, 8)
    assert [r.change for r in a.rows] == ["added"] * 8 and {r.id for r in a.rows} == set(SAMPLE)
    assert a.notes[0] == (
        "old: CUTLASS 3.8.0's kernel library has no GenerateSM120 (its generator.py): it emits no sm120 kernel"
    )
    exact = [r for r in a.rows if r.new.verdict == "exact_fit"]
    assert len(exact) == 2 and SAMPLE[5] in {r.id for r in exact}
    assert all(r.new.kernel_bytes == 101376 for r in exact)
    with pytest.raises(api.BadInput, match="3.8.0's kernel library has no GenerateSM120"):
        api.audit(OLD)


@pytest.mark.network
def test_a_library_against_itself_passes_the_release_gate(capsys):
    """nvidia-cutlass 4.2.0.0's SM120 :data:`SAMPLE` (tests/test_library_audit.py, whose audit
    of it the cache has by now) paired with itself: every kernel paired, by its own name, none
    changed; --check and --exit-code pass."""
    from test_library_audit import SAMPLE

    argv = ["diff", NEW, NEW, "--audit", "--kernels", ",".join(SAMPLE), "--check", "--exit-code"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert (
        "gate: 8 paired, 0 only on one side (0 old, 0 new), 0 newly over capacity, 0 newly not compiling, "
        "0 stage changes, 0 byte changes"
    ) in captured.out
    assert "check" not in captured.err
