"""Sweeps: every number checked against tests/handed.md (computed by nvcc 13.0) or
against nvcc runs named in the comments; plus the stage-count search, the result cache,
the command's flags and outputs.
"""

from __future__ import annotations

import csv
import importlib
import io
import json

import pytest
from handed import SECTION_A  # shared known-good values (tests/handed.py)

from cutlass_layout import Config
from cutlass_layout.cli import sweep_cmd as command
from cutlass_layout.commands.sweep import (
    MAX_CHUNK,
    SWEEP_SCHEMA,
    SweepRecord,
    chunks,
    first_candidate,
    likely_fails,
    StageSearcher,
    sweep,
)
from cutlass_layout.errors import BadInput
from cutlass_layout.model import CompileError, Constant, LayoutReport, Provenance, StructLayout
from cutlass_layout.reports.sweep import summary, to_csv

CAP = 101376  # sm120_smem_capacity_bytes in every tree tested here (tests/handed.md)

GRID_A = {"tile": ["128x128x128", "128x256x128", "256x128x128", "128x256x256"], "preset": ["flashinfer", "trtllm-moe"]}


# ---------------------------------------------------------------------------------------
# real trees (network: wheels cached after the first run)
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def swept_a(fi072):
    """Section A's grid, computed (result cache not read), in 2 worker processes."""
    return sweep(GRID_A, fi072, jobs=2, use_cache=False)


@pytest.mark.network
def test_section_a_values(swept_a):
    by_key = {(r.config.tile, r.config.preset): r for r in swept_a.records}
    assert len(swept_a.records) == 8
    for key, (stages, mainloop, epilogue, kernel, fits) in SECTION_A.items():
        r = by_key[key]
        assert r.verdict == ("fits" if fits else "over_capacity"), key
        assert (r.stages, r.mainloop_bytes, r.epilogue_bytes, r.kernel_bytes) == (stages, mainloop, epilogue, kernel), (
            key
        )
        assert r.capacity_bytes == CAP and r.headroom_bytes == CAP - kernel
        assert r.error is None
    # 128x128x128 flashinfer: a 5th stage would add at least the 18432 TMA bytes of a
    # stage (README: MK 9216 + NK 9216) to 84992 -> over 101376, so 4 is the maximum
    r = by_key[((128, 128, 128), "flashinfer")]
    assert (r.max_stages_that_fit, r.max_stages_kernel_bytes) == (4, 84992)


@pytest.mark.network
def test_section_a_128x256x256_does_not_compile_and_others_survive(swept_a):
    bad = [r for r in swept_a.records if r.config.tile == (128, 256, 256)]
    assert len(bad) == 2
    for r in bad:
        assert r.verdict == "does_not_compile"
        assert r.error.kind == "static_assert"
        assert "Stages set to value 2 or more" in r.error.message
        assert r.kernel_bytes is None and r.stages is None and r.headroom_bytes is None
    assert sum(r.verdict == "fits" for r in swept_a.records) == 6


@pytest.mark.network
def test_section_a_json_schema(swept_a):
    d = json.loads(json.dumps(swept_a.to_dict()))
    assert d["schema"] == SWEEP_SCHEMA == "cutlass-layout/sweep/1"
    assert d["checked"] == "types"  # kernel bodies are not instantiated by a sweep
    assert d["provenance"]["tree_hash"] and d["provenance"]["cutlass_version"] == "4.5.0"
    assert len(d["grid"]) == len(d["results"]) == 8
    assert d["grid"][0] == Config(tile=(128, 128, 128)).to_dict()
    keys = {
        "config",
        "stages",
        "mainloop_bytes",
        "epilogue_bytes",
        "kernel_bytes",
        "capacity_bytes",
        "headroom_bytes",
        "verdict",
        "max_stages_that_fit",
        "max_stages_kernel_bytes",
        "stage_search",
        "exact_fit",
        "error",
        "approximation",
        "occupancy",
        "launch_findings",
    }
    for g, r in zip(d["grid"], d["results"]):
        assert set(r) == keys
        assert r["config"] == g
        # a preset: an approximation of flashinfer's kernels, on that install's own tree
        assert (r["approximation"]["preset"], r["approximation"]["install"]) == (
            g["preset"],
            "flashinfer-python 0.7.2.post1",
        )
        assert r["verdict"] in ("fits", "over_capacity", "does_not_compile")


@pytest.mark.network
def test_warm_cache_parses_nothing_and_is_identical(swept_a, fi072, monkeypatch):
    """What made the warm path fast (scripts/ benchmarks time it): no parse, no worker."""
    import clang.cindex as ci

    def no_index(*a, **k):
        raise AssertionError("the warm path created a libclang Index")

    def no_pool(*a, **k):
        raise AssertionError("the warm path started worker processes")

    monkeypatch.setattr(ci.Index, "create", no_index)
    monkeypatch.setattr(importlib.import_module("cutlass_layout.engine.schedule"), "Pool", no_pool)  # the one scheduler
    warm = sweep(GRID_A, fi072)
    assert warm.stats["cached"] == 8 and warm.stats["laid_out"] == 0
    assert warm.to_dict() == swept_a.to_dict()
    assert [r.kernel_layout for r in warm.records] == [r.kernel_layout for r in swept_a.records]


@pytest.mark.network
def test_section_b_mxfp8_dense_no_stage_count_fits(fi072):
    grid = {"kernel": "dense", "a": "mxfp8", "tile": "256x128x128", "stages": ["auto", "2"]}
    res = sweep(grid, fi072, use_cache=False)
    auto, two = res.records
    assert auto.config.stages is None and two.config.stages == 2  # "auto" and 2
    assert auto.verdict == "does_not_compile"
    assert "Stages set to value 2 or more" in auto.error.message
    # tests/handed.md B: StageCount<2> -> mainloop 102400, epilogue 9216, kernel 111616 > 101376
    assert (two.stages, two.mainloop_bytes, two.epilogue_bytes, two.kernel_bytes) == (2, 102400, 9216, 111616)
    assert two.verdict == "over_capacity" and two.headroom_bytes == 101376 - 111616
    for r in (auto, two):
        assert r.max_stages_that_fit is None and r.max_stages_kernel_bytes is None
        assert summary(r).endswith("no stage count fits")
        assert r.to_dict()["stage_search"] == {"status": "none fits", "reason": None}


@pytest.mark.network
def test_section_c_overshoot_max_that_fits(fi068):
    res = sweep([Config(tile=(128, 32, 256))], fi068, use_cache=False)
    (r,) = res.records
    # tests/handed.md C (flashinfer 0.6.8): 4 stages, kernel 102400, over 101376
    assert (r.stages, r.kernel_bytes, r.verdict, r.headroom_bytes) == (4, 102400, "over_capacity", -1024)
    # StageCount<3> on the same tree: kernel 79872 B, mainloop 69632 B -- from nvcc 13.0
    # (probe.render([Config(tile=(128, 32, 256), stages=3)], with_main=True), compiled with
    # nvcc -std=c++17 -arch=sm_120a against flashinfer 0.6.8's include root and run)
    assert (r.max_stages_that_fit, r.max_stages_kernel_bytes) == (3, 79872)
    assert summary(r) == "auto: 4 stages, 102400 B, over by 1024; max that fits: 3 stages, 79872 B"


@pytest.mark.network
def test_command_json_csv_and_table(swept_a, fi072, tmp_path):
    from click.testing import CliRunner

    root = str(fi072.tree.include_root)
    args = [
        "--tile",
        "128x{128,256}x128",
        "--tile",
        "256x128x128",
        "--tile",
        "128x256x256",
        "--preset",
        "flashinfer",
        "--preset",
        "trtllm-moe",
        "--cutlass",
        root,
    ]
    runner = CliRunner()
    out = runner.invoke(command, args + ["--json"], catch_exceptions=False)
    assert out.exit_code == 0
    d = json.loads(out.stdout)
    assert d["schema"] == "cutlass-layout/sweep/1" and len(d["results"]) == 8
    by = {(tuple(r["config"]["tile"]), r["config"]["preset"]): r for r in d["results"]}
    assert by[((128, 256, 128), "trtllm-moe")]["kernel_bytes"] == 98304  # tests/handed.md A

    out = runner.invoke(command, args + ["--csv"], catch_exceptions=False)
    assert out.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 8
    row = next(r for r in rows if r["tile"] == "128x256x128" and r["preset"] == "trtllm-moe")
    assert (row["stages"], row["kernel_bytes"], row["verdict"]) == ("3", "98304", "fits")
    assert row["exact_fit"] == "False"
    bad = next(r for r in rows if r["tile"] == "128x256x256")
    assert bad["kernel_bytes"] == "" and bad["exact_fit"] == ""

    svg = tmp_path / "sweep.svg"
    out = runner.invoke(command, args + ["--plot", str(svg)], catch_exceptions=False)
    assert out.exit_code == 0
    assert "does not compile" in out.stdout and "128x256x256" in out.stdout
    assert "Stages set to value 2 or more" in out.stdout
    assert "  at cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp:" in out.stdout
    assert "checked: types" in out.stdout
    text = svg.read_text()
    assert "capacity 101376 B" in text and "128x256x128" in text


@pytest.mark.network
def test_grid_file(fi072, tmp_path, swept_a):
    from click.testing import CliRunner

    g = tmp_path / "grid.toml"
    g.write_text('tile = ["128x128x128", "128x256x128"]\npreset = "trtllm-moe"\n')
    out = CliRunner().invoke(
        command, ["--grid", str(g), "--cutlass", str(fi072.tree.include_root), "--json"], catch_exceptions=False
    )
    assert out.exit_code == 0
    kernels = [r["kernel_bytes"] for r in json.loads(out.stdout)["results"]]
    assert kernels == [89088, 98304]  # tests/handed.md A, TRT-LLM MoE flavour


# ---------------------------------------------------------------------------------------
# offline: the search, chunking, CSV, bad input
# ---------------------------------------------------------------------------------------
_PROV = Provenance("root", "4.5.0", "hash", "test", "clang", "cuda", "test", [])


def _rep(stages, kernel, mainloop=None, cap=CAP):
    return LayoutReport(
        config={},
        provenance=_PROV,
        stages=stages,
        capacity=Constant("sm120_smem_capacity_bytes", cap),
        kernel=StructLayout("K", kernel, 1024, 0),
        mainloop=StructLayout("M", mainloop or kernel - 10000, 1024, 0),
        epilogue=StructLayout("E", 9216, 128, 0),
    )


def _bad():
    return LayoutReport(
        config={},
        provenance=_PROV,
        error=CompileError("static_assert", "Specialization requires Stages set to value 2 or more."),
    )


def _run_search(kernel_of, start, *, search=None):
    """Drive a StageSearcher against a synthetic kernel-bytes function; returns (result, layouts).
    ``start`` is the auto config's report (None: the grid held an explicit count only, and
    the auto config is ``start_auto`` of the search when it asks for it)."""
    s = search or StageSearcher(Config())
    if start is not None:
        s.add(None, start)
    laid = 0
    while not s.done():
        cands = s.candidates()
        assert cands, "no progress"
        for n in cands:
            assert n is not None or start is None, "the auto config twice"
            k = kernel_of(n)
            s.add(n, _bad() if k is None else _rep(kernel_of.auto_stages if n is None else n, k))
            laid += 1
    return s.result(), laid


def _linear(base, per):
    return lambda n: None if n < 2 else base + per * n


def test_search_builder_choice_is_max():
    f = _linear(10000, 18000)  # 4 -> 82000 fits, 5 -> 100000 fits, 6 -> 118000 over
    (n, k), laid = _run_search(f, _rep(5, f(5)))
    assert (n, k) == (5, 100000) and laid == 1


def test_search_builder_overshoots():
    f = _linear(10000, 23000)  # 4 -> 102000 over, 3 -> 79000 fits
    (n, k), laid = _run_search(f, _rep(4, f(4)))
    assert (n, k) == (3, 79000) and laid == 1


def test_search_builder_leaves_stages_on_the_table():
    f = _linear(1000, 10000)  # fits up to 10 stages (101000)
    (n, k), laid = _run_search(f, _rep(3, f(3), mainloop=25000))
    assert (n, k) == (10, 101000) and laid <= 4


def test_search_auto_does_not_compile():
    f = _linear(12000, 50000)  # StageCount<2> -> 112000 over
    assert _run_search(f, _bad()) == ((None, None), 1)
    f = _linear(1000, 40000)  # StageCount<2> -> 81000 fits, 3 -> 121000 over
    assert _run_search(f, _bad())[0] == (2, 81000)


class _Refuses:
    """A builder that takes its own stage count (``auto_stages``, kernel ``auto_bytes``) but
    refuses every explicit ``StageCount<N>``, as CUTLASS's SM120 block-scaled sparse builder
    does (tags v3.9.0-v4.7.0, ``sm120_blockscaled_sparse_mma_builder.inl`` ~57 and ~310)."""

    auto_stages, auto_bytes = 3, 96256

    def __call__(self, n):
        return self.auto_bytes if n is None else None


def test_search_could_not_run():
    f = _Refuses()
    s = StageSearcher(Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256)))
    (n, k), laid = _run_search(f, _rep(3, 96256), search=s)
    assert (n, k) == (None, None)  # StageCount<3> itself was laid out: it does not compile
    assert 3 in s.errors and laid >= 2
    st = s.status()
    assert st.status == "could not run"
    assert st.reason.startswith("StageCount<N> does not compile for this builder (N = 2, ")
    assert "static_assert failed: Specialization requires Stages" in st.reason


def test_search_could_not_run_from_an_explicit_count():
    """A grid of StageCount<2> only: the search lays out the auto config once to tell."""
    s = StageSearcher(Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256)))
    assert _run_search(_Refuses(), None, search=s)[0] == (None, None)
    assert s.auto == (3, 96256, 86256) and s.status().status == "could not run"


def test_search_could_not_run_user_type(tmp_path):
    from cutlass_layout import UserType

    h = tmp_path / "k.hpp"
    h.write_text("#ifndef STAGES\n#define STAGES 3\n#endif\nstruct K {};\n")
    s = StageSearcher(UserType(h, "K"))
    _run_search(_Refuses(), _rep(3, 96256), search=s)
    assert s.status().reason.startswith("STAGES=N does not compile for this type (N = 2, 3, 4; ")


def test_could_not_run_record_summary_and_csv():
    from cutlass_layout.commands.sweep import SweepResult
    from cutlass_layout.model import StageSearch

    why = "StageCount<N> does not compile for this builder (N = 2, 3; static_assert failed: x)"
    r = SweepRecord(
        Config(kernel="sparse", a="nvfp4", tile=(128, 128, 256)),
        3,
        87040,
        10240,
        96256,
        CAP,
        CAP - 96256,
        "fits",
        None,
        None,
        stage_search=StageSearch("could not run", why),
    )
    assert summary(r) == f"auto: 3 stages, 96256 B, fits, headroom 5120; could not search: {why}"
    assert r.to_dict()["stage_search"] == {"status": "could not run", "reason": why}
    (row,) = csv.DictReader(io.StringIO(to_csv(SweepResult(_PROV, [r.config], [r]))))
    assert row["stage_search"] == "could not run" and row["max_stages_that_fit"] == ""


def test_search_that_ran_and_found_none():
    f = _linear(12000, 50000)  # StageCount<2> -> 112000 over: it compiled, nothing fits
    s = StageSearcher(Config())
    assert _run_search(f, _bad(), search=s) == ((None, None), 1)
    assert s.status().status == "none fits" and s.status().reason is None
    s = StageSearcher(Config())  # nothing compiles, the auto config neither: nothing to search with
    assert _run_search(lambda n: None, _bad(), search=s)[0] == (None, None)
    assert s.status().status == "none fits"
    s = StageSearcher(Config())
    f = _linear(10000, 18000)
    assert _run_search(f, _rep(5, f(5)), search=s)[0] == (5, 100000)
    assert s.status().status == "found"


def test_search_padding_steps():
    # kernel sizes round up to 1024: growth per stage is not constant
    f = lambda n: -(-(5000 + 17500 * n) // 1024) * 1024  # noqa: E731
    truth = max(n for n in range(2, 33) if f(n) <= CAP)
    (n, k), _ = _run_search(f, _rep(2, f(2)))
    assert (n, k) == (truth, f(truth))


def test_chunks_spread_over_workers():
    cfgs = [Config(tile=(128, n, k)) for n in (32, 64, 128, 256) for k in (64, 128, 256, 512)]
    cfgs += [c.with_(preset="trtllm-moe") for c in cfgs]
    cfgs += [c.with_(kernel="dense") for c in cfgs]
    parts = chunks(cfgs, 2)
    assert sum(map(len, parts)) == len(cfgs) and {c for ch in parts for c in ch} == set(cfgs)
    assert all(len(ch) <= MAX_CHUNK for ch in parts) and len(parts) % 2 == 0
    # configs that differ in the epilogue only (same mainloop type) share a translation unit
    where = {c: i for i, ch in enumerate(parts) for c in ch}
    assert all(where[c] == where[c.with_(preset="trtllm-moe")] for c in cfgs[:16])
    # configs likely to fail their static_assert (NVFP4 128xNx512 and 128x256x256: one
    # stage of A and B tiles is over half the capacity) do not share units with the others
    fails = {c for c in cfgs if likely_fails(c)}
    assert fails == {c for c in cfgs if c.tile[2] == 512 or c.tile[1:] == (256, 256)}
    assert all(len({c in fails for c in ch}) == 1 for ch in parts)
    ok = [c for c in cfgs if c not in fails]
    assert [len(ch) for ch in chunks(ok[:8], 2)] == [4, 4]
    assert len(chunks(cfgs[:3], 2)) == 1
    assert all(len({c.arch for c in ch}) == 1 for ch in chunks(cfgs[:8] + [c.with_(arch="sm121") for c in cfgs[:8]], 2))


@pytest.mark.network
def test_search_guesses_need_one_round(swept_a):
    """Section A's search candidates (auto + 1 for the six that compile; StageCount<2> for
    the pair that does not) are guessed right, so a cold sweep lays out 8 + 8 configs in
    one round."""
    assert [first_candidate(Config(tile=(128, 128, 128), preset=p)).stages for p in ("flashinfer", "trtllm-moe")] == [
        5,
        5,
    ]  # tests/handed.md: auto 4 stages
    assert first_candidate(Config(tile=(128, 256, 256))).stages == 2
    assert swept_a.stats["laid_out"] == 16


def test_csv_and_summary_from_records():
    from cutlass_layout.commands.sweep import SweepResult

    ok = SweepRecord(Config(tile=(128, 32, 256)), 4, 92160, 9216, 102400, CAP, -1024, "over_capacity", 3, 79872)
    bad = SweepRecord(
        Config(tile=(128, 256, 256)),
        None,
        None,
        None,
        None,
        None,
        None,
        "does_not_compile",
        None,
        None,
        CompileError("static_assert", "Stages set to value 2 or more.", "x.hpp", 225),
    )
    res = SweepResult(_PROV, [Config()], [bad, ok])
    rows = list(csv.DictReader(io.StringIO(to_csv(res))))
    assert rows[1]["tile"] == "128x32x256" and rows[1]["max_stages_that_fit"] == "3"
    assert rows[0]["error"] == "static_assert failed: Stages set to value 2 or more. (x.hpp:225)"
    assert [r.verdict for r in res.sorted_records()] == ["over_capacity", "does_not_compile"]
    assert summary(ok) == "auto: 4 stages, 102400 B, over by 1024; max that fits: 3 stages, 79872 B"
    assert summary(bad).endswith("; no stage count fits")


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--grid", "g.toml", "--tile", "128x128x128"], "either --grid"),
        (["--json", "--csv"], "one output format, not json and csv"),
        (["--format", "csv", "--json"], "one output format, not csv and json"),
        (["--format", "html"], "--format html: choose text, markdown, json, csv"),
        (["--jobs", "0"], "--jobs"),
        (["--plot", "out.pdf"], ".svg or .png"),
        (["--tile", "128x{64,0}x128"], "tile"),
        (["--tile", "128x{64,128x128"], "unbalanced"),
        (["--grid", "/nonexistent/grid.toml"], "cannot read grid file"),
    ],
)
def test_command_bad_input(args, msg):
    with pytest.raises(BadInput, match=msg.replace("{", r"\{").replace(".", r"\.")):
        command.main(args, standalone_mode=False)


def test_sweep_bad_input():
    with pytest.raises(BadInput):
        sweep({"tile": "128x0x128"}, cutlass="/nonexistent")
    with pytest.raises(BadInput):
        sweep([], cutlass="/nonexistent")
    with pytest.raises(BadInput):
        sweep({"nonsense": 1})


@pytest.mark.network
def test_section_d_sm90(nc420):
    """tests/handed.md D (nvidia-cutlass 4.2.0.0): SM90 dense bf16 128x128x64, cooperative, TMA
    epilogue, C = D = bf16: 6 stages, mainloop 196736, epilogue 33792, kernel 230400 of
    232448."""
    grid = {
        "arch": "sm90",
        "kernel": "dense",
        "a": "bf16",
        "tile": "128x128x64",
        "schedule": "cooperative",
        "epilogue_schedule": "tma",
        "c": "bf16",
        "d": "bf16",
    }
    (r,) = sweep(grid, nc420, use_cache=False).records
    assert (r.stages, r.mainloop_bytes, r.epilogue_bytes, r.kernel_bytes, r.capacity_bytes) == (
        6,
        196736,
        33792,
        230400,
        232448,
    )
    assert r.verdict == "fits" and r.headroom_bytes == 2048
    # a 7th stage adds at least its A and B tiles (2 x 128 x 64 x 2 bytes = 32768) > 2048
    assert (r.max_stages_that_fit, r.max_stages_kernel_bytes) == (6, 230400)
