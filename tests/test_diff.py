"""``cutlass-layout diff``: structural and numeric differences between two CUTLASS trees.

Expected values come from nvcc 13.0 (the numbers marked so, compiled from the probe of
``cutlass_layout.subjects.probe.render`` plus a ``main()`` printing ``sizeof``/``offsetof``/the
constants, ``nvcc -std=c++17 -arch=sm_120a -w -I<include_root>``), from
tests/handed.md, or were read by hand from the headers (``diff -u`` of the two trees'
files, line numbers from ``grep -n``). None is the tool's own output pasted back.

Offline tests use small synthetic trees written here; ``network`` tests fetch wheels once
into the user cache.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cutlass_layout import BadInput, Config, resolve_cutlass
from cutlass_layout import cli as cli_mod
from cutlass_layout.cli import diff_cmd as command
from cutlass_layout.commands.diff import SCHEMA, diff
from cutlass_layout.commands.diff_numeric import compare, default_grid
from cutlass_layout.commands.diff_structural import structural_diff
from cutlass_layout.model import MemberChange, MemberSpan, NumericRecord, TmaValues
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.reports.diff import render_text

FI_050 = "flashinfer-python==0.5.0"
FI_068 = "flashinfer-python==0.6.8"
FI_072 = "flashinfer-python==0.7.2.post1"
NC_380 = "nvidia-cutlass==3.8.0.0"
NC_420 = "nvidia-cutlass==4.2.0.0"

ARRAY_TMA = "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"
DENSE_TMA = "cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp"
BUILDER = "cutlass/gemm/collective/builders/sm120_blockscaled_mma_builder.inl"


def _nothing_computed(monkeypatch, *, scans: bool = False) -> None:
    """Make any parse or layout (and, with ``scans``, any header scan or comparison) fail
    the test: what a warm or identical diff must not do."""
    import importlib

    import clang.cindex as ci

    diff_module = importlib.import_module("cutlass_layout.commands.diff")  # the module, not the facade's function
    numeric = importlib.import_module("cutlass_layout.commands.diff_numeric")
    structural = importlib.import_module("cutlass_layout.commands.diff_structural")

    def fail(what):
        def f(*a, **k):
            raise AssertionError(f"{what} was called")

        return f

    monkeypatch.setattr(ci.Index, "create", fail("a libclang parse (Index.create)"))
    monkeypatch.setattr(numeric, "compute_records", fail("a layout (diff_numeric.compute_records)"))
    if scans:
        monkeypatch.setattr(structural, "compare_trees", fail("the structural comparison"))
        monkeypatch.setattr(structural, "scan_headers", fail("a header scan"))
        monkeypatch.setattr(diff_module, "numeric_records", fail("the numeric side"))


@pytest.fixture(scope="module")
def main():
    """``cutlass_layout.cli.main`` with ``diff`` registered (as the lead wires it)."""
    if "diff" not in cli_mod.cli.commands:
        cli_mod.cli.add_command(command)
    return cli_mod.main


# ------------------------------------------------------------------------------------------
# synthetic trees (offline)

VERSION_H = "#define CUTLASS_MAJOR {0}\n#define CUTLASS_MINOR 0\n#define CUTLASS_PATCH 0\n"

OLD_MMA = """\
namespace cutlass::gemm::collective {
template <class T> struct CollectiveMma;
template <int S> struct CollectiveMma<Foo<S>> {
  static constexpr uint32_t TmaTransactionBytesMK = 100 + 28;
  struct SharedStorage {
    struct TensorStorage : cute::aligned_struct<128, _0> {
      alignas(1024) cute::ArrayEngine<A, 64> smem_A;
      alignas(1024) cute::ArrayEngine<B, 64> smem_B;
      cute::ArrayEngine<SF, 4> smem_SFA;
      cute::ArrayEngine<SF, 4> smem_SFB;
      int scratch;
    } tensors;
    using PipelineStorage = typename Pipe::SharedStorage;
    alignas(16) PipelineStorage pipeline_storage;
    int a_first;
    int b_second;
  };
};
}
"""

# line 2 inserted (everything shifts by one line), alignas added to smem_SFA/SFB, smem_B
# retyped, scratch renamed to scratch_pad, smem_E added, a_first/b_second swapped, alias and
# constant changed
NEW_MMA = """\
namespace cutlass::gemm::collective {
// a new comment line
template <class T> struct CollectiveMma;
template <int S> struct CollectiveMma<Foo<S>> {
  static constexpr uint32_t TmaTransactionBytesMK = 100 + 28 + 16;
  struct SharedStorage {
    struct TensorStorage : cute::aligned_struct<128, _0> {
      alignas(1024) cute::ArrayEngine<A, 64> smem_A;
      alignas(1024) cute::ArrayEngine<B, 128> smem_B;
      alignas(16) cute::ArrayEngine<SF, 4> smem_SFA;
      alignas(16) cute::ArrayEngine<SF, 4> smem_SFB;
      int scratch_pad;
      alignas(16) cute::ArrayEngine<E, 8> smem_E;
    } tensors;
    using PipelineStorage = typename Pipe2::SharedStorage;
    alignas(16) PipelineStorage pipeline_storage;
    int b_second;
    int a_first;
  };
};
}
"""

UNCHANGED = """\
namespace cutlass::epilogue {
struct Epi {
  struct SharedStorage {
    alignas(128) float smem_D[32];
  };
};
}
"""


def _tree(root, major, files):
    inc = root / "include"
    (inc / "cutlass").mkdir(parents=True)
    (inc / "cutlass" / "version.h").write_text(VERSION_H.format(major))
    for rel, text in files.items():
        p = inc / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return inc


@pytest.fixture()
def synthetic(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    old = _tree(
        tmp_path / "old",
        3,
        {
            "cutlass/gemm/mma.hpp": OLD_MMA,
            # only a line shift (a comment above): never a difference
            "cutlass/epilogue/epi.hpp": UNCHANGED,
            # file renamed in the new tree: the struct moves
            "cutlass/old_place.hpp": "struct Mover { struct SharedStorage { int x; }; };\n",
            "cutlass/gone.hpp": "struct Gone { struct SharedStorage { int y; }; };\n",
            "cutlass/arch/arch.h": "constexpr int sm120_smem_capacity_bytes = 102400;\n",
        },
    )
    new = _tree(
        tmp_path / "new",
        4,
        {
            "cutlass/gemm/mma.hpp": NEW_MMA,
            "cutlass/epilogue/epi.hpp": "// moved down one line\n" + UNCHANGED,
            "cutlass/new_place.hpp": "struct Mover { struct SharedStorage { int x; }; };\n",
            "cutlass/fresh.hpp": "struct Fresh { struct SharedStorage { int z; }; };\n",
            "cutlass/arch/arch.h": "constexpr int sm120_smem_capacity_bytes = 101376;\n",
        },
    )
    return old, new


def _find(changes, change, field=None, file=None):
    return [
        c
        for c in changes
        if c.change == change
        and (field is None or c.field == field)
        and (file is None or file in (c.old_file, c.new_file))
    ]


def test_structural_synthetic(synthetic):
    old, new = synthetic
    res = diff(str(old), str(new), numeric=False, use_cache=False)
    ch = res.structural
    assert res.has_differences

    for name in ("smem_SFA", "smem_SFB"):
        (c,) = _find(ch, "field_realigned", name)
        assert (c.old, c.new) == ("no alignas", "alignas(16)")
        assert c.struct.endswith("CollectiveMma::SharedStorage::TensorStorage")
        assert c.old_file == c.new_file == "cutlass/gemm/mma.hpp"
    (c,) = _find(ch, "field_realigned", "smem_SFA")
    assert (c.old_line, c.new_line) == (9, 10)  # line numbers of both sides, by hand

    (c,) = _find(ch, "field_retyped", "smem_B")
    assert (c.old, c.new) == ("cute::ArrayEngine<B, 64>", "cute::ArrayEngine<B, 128>")
    (c,) = _find(ch, "field_renamed")
    assert (c.old, c.new) == ("scratch", "scratch_pad")
    (c,) = _find(ch, "field_added", "smem_E")
    assert c.old_file is None and c.new_line == 13
    (c,) = _find(ch, "fields_reordered")
    assert c.old == "tensors, pipeline_storage, a_first, b_second"
    assert c.new == "tensors, pipeline_storage, b_second, a_first"
    (c,) = _find(ch, "alias_changed", "PipelineStorage")
    assert (c.old, c.new) == ("typename Pipe::SharedStorage", "typename Pipe2::SharedStorage")
    (c,) = _find(ch, "constant_changed", "TmaTransactionBytesMK")
    assert (c.old, c.new) == ("100 + 28", "100 + 28 + 16")
    (c,) = _find(ch, "constant_changed", "sm120_smem_capacity_bytes")
    assert (c.old, c.new) == ("102400", "101376")

    (c,) = _find(ch, "struct_moved")
    assert (c.old_file, c.new_file) == ("cutlass/old_place.hpp", "cutlass/new_place.hpp")
    (c,) = _find(ch, "struct_removed", file="cutlass/gone.hpp")
    assert c.struct == "Gone::SharedStorage"
    (c,) = _find(ch, "struct_added", file="cutlass/fresh.hpp")
    assert c.struct == "Fresh::SharedStorage"

    # noise: a struct whose only change is its line number is not a difference
    assert not [c for c in ch if "epi.hpp" in (c.old_file or c.new_file)]
    # nothing else than the changes above
    assert len(ch) == 12, [(c.change, c.field) for c in ch]

    text = render_text(res)
    assert "alignas changed" in text and "differences found" in text


def test_structural_json_cli_and_exit_code(synthetic, main, capsys):
    old, new = synthetic
    assert main(["diff", str(old), str(new), "--structural-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == SCHEMA == "cutlass-layout/diff/1"
    assert data["numeric"] is None and data["has_differences"] is True
    assert data["old"]["provenance"]["cutlass_version"] == "3.0.0"
    assert data["new"]["provenance"]["cutlass_version"] == "4.0.0"
    keys = {"change", "struct", "field", "old", "new", "old_file", "old_line", "new_file", "new_line"}
    assert all(keys <= set(c) for c in data["structural"])
    assert main(["diff", str(old), str(new), "--structural-only", "--exit-code"]) == 1
    assert main(["diff", str(old), str(old), "--structural-only", "--exit-code"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--structural-only", "--numeric-only"], "exclude each other"),
        (["--structural-only", "--tile", "128x32x256"], "--structural-only"),
        (["--grid", "g.toml", "--tile", "128x32x256"], "--grid FILE cannot be combined"),
        (["--grid", "/no/such/grid.toml"], "cannot read grid file"),
        (["--tile", "128x0x128"], "tile"),
    ],
)
def test_bad_flags(synthetic, main, capsys, extra, words):
    old, new = synthetic
    assert main(["diff", str(old), str(new)] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and words in err and len(err.splitlines()) == 1


def test_bad_sides_offline(tmp_path, main, capsys, synthetic):
    old, _ = synthetic
    (tmp_path / "nocutlass" / "include").mkdir(parents=True)
    for argv, words in (
        ([str(tmp_path / "missing"), str(old)], "old ("),
        ([str(old), str(tmp_path / "nocutlass")], "no CUTLASS headers"),
    ):
        assert main(["diff", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and words in err and len(err.splitlines()) == 1
    with pytest.raises(BadInput, match="does not exist"):
        diff(str(tmp_path / "missing"), str(old))


def test_compare_rows_offline():
    """Row logic on hand-made records: what changed, verdict changes first."""
    from dataclasses import replace

    base = NumericRecord(
        verdict="fits",
        stages=3,
        kernel_bytes=84992,
        mainloop_bytes=74752,
        epilogue_bytes=9216,
        capacity_bytes=101376,
        headroom_bytes=16384,
        tma_bytes=TmaValues(mk=18432, nk=6144, total=24576),
        error=None,
        members={"tensors.mainloop.smem_SFB": MemberSpan(offset=67584, size=6144)},
    )
    old = replace(
        base,
        verdict="over_capacity",
        stages=4,
        kernel_bytes=102400,
        tma_bytes=TmaValues(mk=18432, nk=4096, total=22528),
        members={"tensors.mainloop.smem_SFB": MemberSpan(offset=90112, size=16)},
    )
    row = compare(Config(tile=(128, 32, 256)), old, base)
    assert row.changed == [
        "verdict",
        "stages",
        "kernel_bytes",
        "tma_bytes.nk",
        "tma_bytes.total",
        "kernel.tensors.mainloop.smem_SFB",
    ]
    assert row.members == [
        MemberChange(
            "tensors.mainloop.smem_SFB", old=MemberSpan(offset=90112, size=16), new=MemberSpan(offset=67584, size=6144)
        )
    ]
    assert compare(Config(), base, replace(base)).changed == []
    broken = NumericRecord(verdict="does_not_compile", error="does not compile: ...", members={})
    row = compare(Config(), base, broken)
    assert "verdict" in row.changed and row.members == []


# ------------------------------------------------------------------------------------------
# real trees (network)


@pytest.mark.network
def test_050_to_068_structural():
    """4.4.0: alignas(16) on smem_SFA/SFB; 4.4.2: the builder's reduced capacity.

    Read by hand: ``diff -u`` of the two trees' sm120_blockscaled_mma_array_tma.hpp (hunk
    @@ -259,8 +259,8 @@: lines 262/263 gain ``alignas(16)``) and
    sm120_blockscaled_mma_builder.inl (``PipelineStages`` moves from line 212 to 254 and
    budgets from ``ReducedSmemCapacityBytes``, new at line 248); sm120_common.inl differs
    only in its copyright line.
    """
    res = diff(FI_050, FI_068, numeric=False)
    ch = res.structural
    mine = [c for c in ch if ARRAY_TMA in (c.old_file, c.new_file)]
    assert sorted((c.change, c.field, c.old, c.new, c.old_line, c.new_line) for c in mine) == [
        ("field_realigned", "smem_SFA", "no alignas", "alignas(16)", 262, 262),
        ("field_realigned", "smem_SFB", "no alignas", "alignas(16)", 263, 263),
    ]
    assert all(c.struct.endswith("CollectiveMma::SharedStorage::TensorStorage") for c in mine)
    assert "MainloopSm120ArrayTmaWarpSpecializedBlockScaled" in mine[0].specialization

    (red,) = _find(ch, "constant_added", "ReducedSmemCapacityBytes", BUILDER)
    assert red.new_line == 248 and red.old_file is None
    assert red.new.replace(" ", "") == (
        "detail::sm120_smem_capacity_bytes-SchedulerPipelineStorage"
        "-TensorMapStorage-TensorMapReadyPipelineStorage"
        "-CLCResponseStorage"
    )
    (st,) = _find(ch, "constant_changed", "PipelineStages", BUILDER)
    assert (st.old_line, st.new_line) == (212, 254)
    assert "blockscaled< detail::sm120_smem_capacity_bytes," in st.old
    assert "blockscaled< ReducedSmemCapacityBytes," in st.new
    assert not [c for c in ch if "sm120_common.inl" in (c.old_file or c.new_file)]
    # dense twin got the same alignas
    assert {c.field for c in _find(ch, "field_realigned", file=DENSE_TMA)} == {"smem_SFA", "smem_SFB"}


# nvcc 13.0, grouped NVFP4 flashinfer flavour, stages auto (see the module docstring):
#   flashinfer-python 0.6.8:      128x32x256: stages 4, kernel 102400, mainloop 92160,
#       smem_SFA 8192 @ 81920, smem_SFB 16 @ 90112, TMA MK 18432, NK 4096, total 22528
#     128x64x128: stages 6, kernel 92160, smem_SFB 16 @ 79872, MK 9216, NK 4096
#   flashinfer-python 0.7.2.post1: 128x32x256: stages 3, kernel 84992, mainloop 74752,
#       smem_SFA 6144 @ 61440, smem_SFB 6144 @ 67584, TMA MK 18432, NK 6144, total 24576
#     128x64x128: stages 6, kernel 97280, mainloop 87040, smem_SFB 6144 @ 79872, MK 9216,
#       NK 5120, total 14336
# (offsets within the mainloop TensorStorage, which sits at offset 0 of the grouped kernel's
# SharedStorage: tests/handed.md section A, "tensors.mainloop ... @0")
NVCC = {
    (128, 32, 256): {
        "old": dict(
            stages=4,
            kernel_bytes=102400,
            mainloop_bytes=92160,
            mk=18432,
            nk=4096,
            total=22528,
            sfb=(90112, 16),
            sfa=(81920, 8192),
        ),
        "new": dict(
            stages=3,
            kernel_bytes=84992,
            mainloop_bytes=74752,
            mk=18432,
            nk=6144,
            total=24576,
            sfb=(67584, 6144),
            sfa=(61440, 6144),
        ),
    },
    (128, 64, 128): {
        "old": dict(stages=6, kernel_bytes=92160, mk=9216, nk=4096, sfb=(79872, 16)),
        "new": dict(
            stages=6, kernel_bytes=97280, mainloop_bytes=87040, mk=9216, nk=5120, total=14336, sfb=(79872, 6144)
        ),
    },
}
# tests/handed.md section A: N >= 128 tiles are the same on 0.6.8 and 0.7.2.post1
HANDED_A = {(128, 128, 128): (4, 74752, 9216, 84992), (128, 256, 128): (3, 83968, 9216, 94208)}


@pytest.fixture(scope="module")
def numeric_068_072(main):
    out = CliRunner().invoke(
        cli_mod.cli,
        [
            "diff",
            FI_068,
            FI_072,
            "--numeric-only",
            "--json",
            "--kernel",
            "grouped",
            "--tile",
            "128x{32,64}x{128,256}",
            "--tile",
            "128x{128,256}x128",
        ],
    )
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.network
def test_068_to_072_numeric(numeric_068_072):
    data = numeric_068_072
    assert data["schema"] == SCHEMA and data["structural"] is None
    assert data["grid_source"] == "flags" and len(data["grid"]) == 6
    rows = {tuple(r["config"]["tile"]): r for r in data["numeric"]}

    # tests/handed.md section C + nvcc: 4 stages, 102400 B, over -> 3 stages, 84992 B, fits
    r = rows[(128, 32, 256)]
    assert (r["old"]["verdict"], r["new"]["verdict"]) == ("over_capacity", "fits")
    assert r["old"]["capacity_bytes"] == r["new"]["capacity_bytes"] == 101376
    for side in ("old", "new"):
        want = NVCC[(128, 32, 256)][side]
        got = r[side]
        assert (got["stages"], got["kernel_bytes"], got["mainloop_bytes"]) == (
            want["stages"],
            want["kernel_bytes"],
            want["mainloop_bytes"],
        )
        assert (got["tma_bytes"]["mk"], got["tma_bytes"]["nk"], got["tma_bytes"]["total"]) == (
            want["mk"],
            want["nk"],
            want["total"],
        )
        sfb = got["members"]["tensors.mainloop.smem_SFB"]
        sfa = got["members"]["tensors.mainloop.smem_SFA"]
        assert (sfb["offset"], sfb["size"]) == want["sfb"]
        assert (sfa["offset"], sfa["size"]) == want["sfa"]
    for name in (
        "verdict",
        "stages",
        "kernel_bytes",
        "mainloop_bytes",
        "tma_bytes.nk",
        "tma_bytes.total",
        "kernel.tensors.mainloop.smem_SFB",
    ):
        assert name in r["changed"]
    assert "tma_bytes.mk" not in r["changed"] and "epilogue_bytes" not in r["changed"]
    sfb_row = next(m for m in r["members"] if m["name"] == "tensors.mainloop.smem_SFB")
    assert (sfb_row["old"]["size"], sfb_row["new"]["size"]) == (16, 6144)

    # smem_SFB and NK grow for N < 128 with the stage count unchanged (nvcc)
    r = rows[(128, 64, 128)]
    assert r["old"]["stages"] == r["new"]["stages"] == 6
    for side in ("old", "new"):
        want = NVCC[(128, 64, 128)][side]
        assert r[side]["kernel_bytes"] == want["kernel_bytes"]
        assert r[side]["tma_bytes"]["nk"] == want["nk"]
        sfb = r[side]["members"]["tensors.mainloop.smem_SFB"]
        assert (sfb["offset"], sfb["size"]) == want["sfb"]
    assert "verdict" not in r["changed"] and "tma_bytes.nk" in r["changed"]

    # N >= 128: unchanged, with tests/handed.md's numbers on both sides
    for tile, (stages, ml, epi, kernel) in HANDED_A.items():
        r = rows[tile]
        assert r["changed"] == [] and r["members"] == []
        for side in ("old", "new"):
            assert (
                r[side]["stages"],
                r[side]["mainloop_bytes"],
                r[side]["epilogue_bytes"],
                r[side]["kernel_bytes"],
                r[side]["verdict"],
            ) == (stages, ml, epi, kernel, "fits")

    # verdict changes first, unchanged rows last
    order = [("verdict" in r["changed"], bool(r["changed"])) for r in data["numeric"]]
    assert order == sorted(order, reverse=True)
    assert "verdict" in data["numeric"][0]["changed"]


@pytest.mark.network
def test_068_to_072_text_and_exit_code(numeric_068_072, main, capsys, monkeypatch):
    """Warm cache now: nothing is parsed again (every layout comes from the results cache);
    the text report flags the verdict change first; --exit-code gives 1."""
    _nothing_computed(monkeypatch)
    argv = [
        "diff",
        FI_068,
        FI_072,
        "--numeric-only",
        "--kernel",
        "grouped",
        "--tile",
        "128x{32,64}x{128,256}",
        "--tile",
        "128x{128,256}x128",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.lstrip().startswith(("!", "*"))]
    assert rows[0].lstrip().startswith("!") and "over capacity -> fits" in rows[0]
    (row,) = [ln for ln in rows if "128x32x256" in ln]
    assert row.lstrip().startswith("!") and "over capacity -> fits" in row
    assert "4 -> 3" in row and "102400 -> 84992" in row and "4096 -> 6144" in row
    assert "smem_SFB: 16 B @ 90112 -> 6144 B @ 67584" in out
    assert main(argv + ["--exit-code"]) == 1
    capsys.readouterr()


@pytest.mark.network
def test_default_grid_068_072():
    grid, notes = default_grid(resolve_cutlass(FI_068), resolve_cutlass(FI_072))
    assert notes == []
    assert len(grid) == 2 * 2 * 4 * 2  # grouped and dense x M{128,256} x N{32..256} x K{128,256}
    assert {c.kernel for c in grid} == {"grouped", "dense"}
    assert {c.tile for c in grid if c.kernel == "grouped"} == {
        (m, n, k) for m in (128, 256) for n in (32, 64, 128, 256) for k in (128, 256)
    }
    assert all(c.preset == "flashinfer" and c.stages is None and c.a == "nvfp4" for c in grid)


@pytest.mark.network
def test_380_to_420():
    res = diff(NC_380, NC_420)
    assert res.grid == [] and res.numeric == []
    assert any("default grid is empty" in n for n in res.notes)
    for rel, spec in (
        (ARRAY_TMA, "MainloopSm120ArrayTmaWarpSpecializedBlockScaled"),
        (DENSE_TMA, "MainloopSm120TmaWarpSpecializedBlockScaled"),
    ):
        added = [
            c
            for c in _find(res.structural, "struct_added", file=rel)
            if c.struct.endswith("CollectiveMma::SharedStorage")
        ]
        assert len(added) == 1 and spec in added[0].specialization
        assert added[0].old_file is None
        assert {c.field for c in _find(res.structural, "constant_added", file=rel)} >= {
            "TmaTransactionBytesMK",
            "TmaTransactionBytesNK",
            "TmaTransactionBytes",
        }
    text = render_text(res)
    assert "default grid: (empty)" in text


@pytest.mark.network
def test_identical_trees_compute_nothing(main, capsys, monkeypatch):
    """Identical trees (same tree hash) are reported at once: no header is scanned or
    compared, nothing is parsed or laid out (README; scripts/ benchmarks time it)."""
    tree = resolve_cutlass(NC_420)
    _nothing_computed(monkeypatch, scans=True)
    res = diff(NC_420, str(tree.include_root))
    assert res.identical and not res.has_differences
    assert res.structural == [] and res.numeric == [] and res.files_compared == 0
    assert any("nothing computed" in n for n in res.notes)
    assert main(["diff", NC_420, NC_420, "--exit-code"]) == 0
    assert "no differences" in capsys.readouterr().out


@pytest.mark.network
def test_structural_cache_matches_fresh():
    old, new = resolve_cutlass(FI_068), resolve_cutlass(FI_072)
    cached, n1 = structural_diff(old, new)
    fresh, n2 = structural_diff(old, new, use_cache=False)
    assert n1 == n2 and [c.to_dict() for c in cached] == [c.to_dict() for c in fresh]
    # 0.6.8 -> 0.7.2.post1 leaves the SM120 block-scaled collectives' text alone: the SFB
    # padding comes from the builder's layout types, which only the numeric side sees
    assert not [c for c in cached if ARRAY_TMA in (c.old_file, c.new_file)]


@pytest.mark.network
@pytest.mark.parametrize(
    "old,new,words",
    [
        ("flashinfer-python==0.2.5", FI_068, "no wheel for flashinfer-python==0.2.5"),
        (FI_068, "/no/such/cutlass", "path does not exist"),
    ],
)
def test_bad_sides_network(main, capsys, old, new, words):
    assert main(["diff", old, new]) == 2
    # besides the progress line of the download it tried
    err = "\n".join(ln for ln in capsys.readouterr().err.strip().splitlines() if not is_progress_line(ln))
    assert err.startswith("error: ") and words in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


# ------------------------------------------------------------------------------------------
# --arch: what concerns one arch family; the config flags of layout and sweep


def _ch(file, struct="X::SharedStorage", spec=None):
    from cutlass_layout.model import StructuralChange

    return StructuralChange("field_added", struct, "f", new="int", new_file=file, new_line=1, specialization=spec)


def test_keep_arch_offline():
    from cutlass_layout.commands.diff_structural import change_family, keep_arch

    changes = [
        _ch("cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"),
        _ch("cutlass/gemm/kernel/sm90_gemm_array_tma_warpspecialized_cooperative.hpp"),  # SM120 runs on it
        _ch("cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp"),
        _ch("cutlass/arch/arch.h"),  # no arch in its name: every arch's
        _ch("cutlass/gemm/dispatch_policy.hpp", struct="cutlass::gemm::MainloopSm100TmaUmma"),
        _ch("cutlass/gemm/collective/builders/sm100_umma_builder.inl"),
        _ch("cutlass/gemm/collective/builders/sm103_blockscaled_umma_builder.inl"),
        _ch("cutlass/gemm/collective/builders/sm120_mma_builder.inl", spec="CollectiveBuilder<arch::Sm120, …>"),
        _ch("cutlass/conv/collective/builders/sm90_umma_builder.inl"),
    ]
    kept, others = keep_arch(changes, ["sm120"])
    assert [c.new_file for c in kept] == [c.new_file for c in changes[:4]] + [changes[7].new_file]
    assert others == {"sm100": 3, "conv": 1}
    kept, others = keep_arch(changes, ["sm90"])
    assert [c.new_file for c in kept] == [changes[i].new_file for i in (1, 2, 3)]
    assert others == {"sm100": 3, "sm120": 2, "conv": 1}
    kept, _ = keep_arch(changes, ["sm90", "sm120"])
    assert len(kept) == 5
    assert change_family(_ch("cutlass/gemm/collective/sm10x_thing.hpp"), "sm120") == "sm100"


def test_capacity_line_only_when_both_sides_have_one():
    from cutlass_layout.model import DiffResult, Provenance, Side

    ok = NumericRecord(
        verdict="fits",
        stages=3,
        kernel_bytes=84992,
        mainloop_bytes=74752,
        epilogue_bytes=9216,
        capacity_bytes=101376,
        headroom_bytes=16384,
        tma_bytes=TmaValues(mk=18432, nk=6144, total=24576),
        error=None,
        members={},
    )
    broken = NumericRecord(verdict="does_not_compile", error="does not compile: static_assert", members={})
    prov = Provenance("r", "4.5.0", "h", "o", "c", "p", "s", [])
    res = DiffResult(
        old=Side("a", prov),
        new=Side("b", prov),
        identical=False,
        grid=[Config()],
        grid_source="python",
        numeric=[compare(Config(), ok, broken)],
    )
    text = render_text(res)
    assert "capacity:" not in text and "-> - B" not in text
    assert "fits -> does not compile" in text


@pytest.mark.network
def test_068_to_072_arch_keeps_what_concerns_sm120(main, capsys):
    # by hand from the unfiltered listing: the 21 changes are 18 in SM100/SM103 GEMM builders
    # (cutlass/gemm/collective/builders/sm10{0,3}_*.inl) and 3 in the SM100 conv builder
    full = diff(FI_068, FI_072, numeric=False)
    files = [c.new_file or c.old_file for c in full.structural]
    assert len(files) == 21
    assert sum(f.startswith("cutlass/conv/") for f in files) == 3
    assert (
        sum(
            f.startswith(("cutlass/gemm/collective/builders/sm100_", "cutlass/gemm/collective/builders/sm103_"))
            for f in files
        )
        == 18
    )
    res = diff(FI_068, FI_072, numeric=False, arch="sm120")
    assert res.structural == [] and res.structural_others == {"sm100": 18, "conv": 3}
    assert not res.has_differences
    assert main(["diff", FI_068, FI_072, "--structural-only", "--arch", "sm120", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["structural"] == [] and doc["structural_arch"] == ["sm120"]
    assert doc["structural_others"] == {"sm100": 18, "conv": 3}
    assert main(["diff", FI_068, FI_072, "--structural-only", "--arch", "sm120"]) == 0
    out = capsys.readouterr().out
    assert "21 changes in headers of other arch families not shown (sm100 18, conv 3)" in out


@pytest.mark.network
def test_sm90_mixed_flags_diff(main, capsys):
    """The issue's command: every config flag of layout/sweep, here SM90 dense bf16. Numbers:
    nvcc 13.0 agreed with them on both trees (``layout --verify nvcc``: 4 sizes and stage
    counts, 21 member offsets and sizes; on 4.2.0 ``test_nvcc.SM90``'s last config, checked
    against nvcc on every run): 7 stages, mainloop 229504 (7 x 32768 B of A and B tiles, 7 x
    16 B of full and empty barriers, rounded up to 128), epilogue 1 (no shared memory: the
    builder's auto epilogue), kernel 229760 of 232448."""
    argv = [
        "diff",
        NC_420,
        FI_072,
        "--arch",
        "sm90",
        "--kernel",
        "dense",
        "--a",
        "bf16",
        "--b",
        "bf16",
        "--tile",
        "128x128x64",
    ]
    assert main(argv + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["numeric"]
    c = row["config"]
    assert (c["arch"], c["kernel"], c["a"], c["b"], c["tile"]) == ("sm90", "dense", "bf16", "bf16", [128, 128, 64])
    for side in ("old", "new"):
        r = row[side]
        assert (
            r["verdict"],
            r["stages"],
            r["mainloop_bytes"],
            r["epilogue_bytes"],
            r["kernel_bytes"],
            r["capacity_bytes"],
        ) == ("fits", 7, 229504, 1, 229760, 232448)
    assert doc["structural_arch"] == ["sm90"]
    assert all("sm100" not in (s["new_file"] or s["old_file"]) for s in doc["structural"])
    assert main(argv + ["--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| sm90 dense bf16 128x128x64 | fits | 7 | 229760 | 229504 | 1 |" in md
