"""The model's JSON (``to_dict``) and its reading back (``from_dict``), on objects written by
hand: each expected dict is spelled out here from the dataclass fields (bytes throughout), so
that a change of the model's modules that changes a key, its order or a value fails here."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from cutlass_layout.model import (
    AuditDiff,
    AuditResult,
    AuditSet,
    AuditShard,
    BuilderBudget,
    CompileError,
    Constant,
    DiffResult,
    Field,
    FieldLayout,
    Fix,
    LayoutReport,
    LibraryTactic,
    MainloopChoice,
    MemberChange,
    MemberSpan,
    NumericRecord,
    NumericRow,
    Provenance,
    Rename,
    ScanConstant,
    ScanResult,
    Scope,
    Side,
    StageSearch,
    Struct,
    StructLayout,
    StructuralChange,
    SweepRecord,
    SweepResult,
    Tactic,
    TacticChange,
    TmaBytes,
    TmaValues,
    plain,
    tactic_from_dict,
)

PROV = Provenance(
    cutlass_root="/c",
    cutlass_version="4.4.2",
    tree_hash="abc",
    origin="dir",
    libclang_version="20",
    cuda_path="/cuda",
    cuda_source="env",
    flags=["-x", "cuda"],
)
PROV_D = {
    "cutlass_root": "/c",
    "cutlass_version": "4.4.2",
    "tree_hash": "abc",
    "origin": "dir",
    "libclang_version": "20",
    "cuda_path": "/cuda",
    "cuda_source": "env",
    "flags": ["-x", "cuda"],
}
CAP = Constant(name="sm120_smem_capacity_bytes", value=101376, expression="101376", file="a.h", line=7)
CAP_D = {
    "name": "sm120_smem_capacity_bytes",
    "value": 101376,
    "expression": "101376",
    "file": "a.h",
    "line": 7,
    "source": None,
}


def _member(name, offset, size, **kw):
    return {
        "name": name,
        "type": kw.get("type", "T"),
        "offset": offset,
        "size": size,
        "type_align": kw.get("type_align", 16),
        "declared_alignas": kw.get("declared_alignas"),
        "padding_before": kw.get("padding_before", 0),
        "fields": kw.get("fields", []),
        "file": kw.get("file"),
        "line": kw.get("line"),
        "access": "public",
        "tail_padding": kw.get("tail_padding", 0),
    }


def _report() -> LayoutReport:
    a = FieldLayout("smem_A", "T", 0, 65536, 16, declared_alignas=128, file="m.hpp", line=3)
    b = FieldLayout("smem_B", "T", 65536, 16384, 16)
    tensors = FieldLayout("tensors", "T", 0, 81920, 16, fields=[a, b])
    pipe = FieldLayout("pipeline", "T", 81920, 48, 8)
    kernel = StructLayout("SharedStorage", 82048, 128, 80, [tensors, pipe])
    return LayoutReport(
        config={"arch": "sm120"},
        provenance=PROV,
        checked="kernel",
        stages=4,
        subject_kind="kernel",
        capacity=CAP,
        kernel=kernel,
        mainloop=StructLayout("M", 81968, 128, 0, []),
        epilogue=StructLayout("E", 0, 1, 0, [], union=True),
        tma_transaction_bytes=TmaBytes(
            mk=Constant("TmaTransactionBytesMK", 16384),
            nk=None,
            total=Constant("TmaTransactionBytes", 20480, "MK + NK"),
        ),
        builder_budget=BuilderBudget(
            capacity=Constant("ReducedSmemCapacityBytes", 99328), carveout_bytes=1024, stage_bytes=20480, stages=4
        ),
        mainloop_class=MainloopChoice("Mma<...>", "half_t", "half_t", "float", "float", note="staged"),
        clang_only=[CompileError("error", "clang says", "k.h", 9)],
    )


def _report_dict() -> dict:
    a = _member("smem_A", 0, 65536, declared_alignas=128, file="m.hpp", line=3)
    b = _member("smem_B", 65536, 16384)
    pipe = _member("pipeline", 81920, 48, type_align=8)
    return {
        "schema": "cutlass-layout/layout/1",
        "provenance": PROV_D,
        "config": {"arch": "sm120"},
        "checked": "kernel",
        "verdict": "fits",
        "stages": 4,
        "stage_counts": None,
        "subject_kind": "kernel",
        "capacity_bytes": 101376,
        "capacity": CAP_D,
        "kernel": {
            "type": "SharedStorage",
            "size": 82048,
            "align": 128,
            "tail_padding": 80,
            "fields": [_member("tensors", 0, 81920, fields=[a, b]), pipe],
            "union": False,
        },
        "mainloop": {"type": "M", "size": 81968, "align": 128, "tail_padding": 0, "fields": [], "union": False},
        "epilogue": {"type": "E", "size": 0, "align": 1, "tail_padding": 0, "fields": [], "union": True},
        "storage": None,
        "launch": None,
        "smem_bytes": 82048,
        "tma_transaction_bytes": {
            "mk": 16384,
            "nk": None,
            "total": 20480,
            "expressions": {
                "mk": {
                    "name": "TmaTransactionBytesMK",
                    "value": 16384,
                    "expression": None,
                    "file": None,
                    "line": None,
                    "source": None,
                },
                "nk": None,
                "total": {
                    "name": "TmaTransactionBytes",
                    "value": 20480,
                    "expression": "MK + NK",
                    "file": None,
                    "line": None,
                    "source": None,
                },
            },
        },
        "builder_budget": {
            "capacity": {
                "name": "ReducedSmemCapacityBytes",
                "value": 99328,
                "expression": None,
                "file": None,
                "line": None,
                "source": None,
            },
            "carveout_bytes": 1024,
            "stage_bytes": 20480,
            "stages": 4,
            "budgeted_bytes": 82944,
        },
        "mainloop_class": {
            "type": "Mma<...>",
            "smem_a": "half_t",
            "smem_b": "half_t",
            "element_a": "float",
            "element_b": "float",
            "note": "staged",
        },
        "occupancy": None,
        "params": None,
        "params_msvc": None,
        "params_note": None,
        "cluster": None,
        "launch_findings": [],
        "tma_check": None,
        "fits": True,
        "headroom_bytes": 101376 - 82048,
        "exact_fit": False,
        "error": None,
        "clang_only": [{"kind": "error", "message": "clang says", "file": "k.h", "line": 9}],
        "approximation": None,
    }


def _same_json(got, want):
    """Equal, keys in the same order, at every level (the JSON text is byte for byte)."""
    assert json.dumps(got, indent=2) == json.dumps(want, indent=2)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_layout_report_round_trips(lazy):
    rep, want = _report(), _report_dict()
    _same_json(rep.to_dict(), want)
    back = LayoutReport.from_dict(copy.deepcopy(want), lazy=lazy)
    assert back == rep
    # built without the constructor: every attribute set, approximation (never stored) None
    assert set(vars(back)) == {f.name for f in dataclasses.fields(LayoutReport)} and back.approximation is None
    _same_json(back.to_dict(), want)
    assert back.kernel.find("tensors.smem_B").offset == 65536


def test_a_report_that_does_not_compile_round_trips():
    rep = LayoutReport(
        config={"arch": "sm90"}, provenance=PROV, error=CompileError("static_assert", "too many stages", "b.hpp", 12)
    )
    d = rep.to_dict()
    assert (d["verdict"], d["stages"], d["smem_bytes"], d["fits"], d["headroom_bytes"], d["exact_fit"]) == (
        "does_not_compile",
        None,
        None,
        None,
        None,
        None,
    )
    assert d["error"] == {"kind": "static_assert", "message": "too many stages", "file": "b.hpp", "line": 12}
    assert LayoutReport.from_dict(d) == rep and LayoutReport.from_dict(d).to_dict() == d


@pytest.mark.parametrize("lazy", [None, False, True])
def test_a_layout_report_is_frozen(lazy):
    """No attribute of a report is assigned after it is made (made by hand, or read back with
    or without its members made): a pass that changes one makes a new report with
    dataclasses.replace, the old one stays as it was."""
    rep = _report() if lazy is None else LayoutReport.from_dict(_report_dict(), lazy=lazy)
    for name, value in (("capacity", None), ("config", {}), ("checked", "types"), ("approximation", None)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(rep, name, value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        del rep.kernel
    new = dataclasses.replace(rep, checked="types", capacity=None)
    assert (new.checked, new.capacity, new.headroom_bytes) == ("types", None, None)
    assert (rep.checked, rep.capacity, rep.headroom_bytes) == ("kernel", CAP, 101376 - 82048)
    _same_json(rep.to_dict(), _report_dict())


def test_members_are_checked_when_read_back():
    bad = {**_member("x", 0, 4), "colour": "red"}
    with pytest.raises(TypeError, match="FieldLayout: unknown keys"):
        FieldLayout.from_dict(bad)
    with pytest.raises(TypeError, match=r"StructLayout: unknown keys \['colour'\], missing \['align'\]"):
        StructLayout.from_dict({"type": "S", "size": 4, "tail_padding": 0, "colour": 1}, lazy=True)
    assert plain(FieldLayout.from_dict(_member("x", 0, 4))) == _member("x", 0, 4)


def _tactic(cls=Tactic, **kw) -> Tactic:
    rep = LayoutReport(
        config={"tactic": "x"},
        provenance=PROV,
        stages=4,
        capacity=Constant("capacity", 101376),
        kernel=StructLayout("", 102400, 0, 0),
        mainloop=StructLayout("", 98304, 0, 0),
        epilogue=StructLayout("", 2048, 0, 0),
    )
    fix = Fix(
        stages=3,
        kernel_bytes=81920,
        headroom_bytes=19456,
        carveout_bytes=1024,
        mainloop_bytes=77824,
        searched={3: 81920, 2: None},
        builder=BuilderBudget(Constant("ReducedSmemCapacityBytes", 99328), 0, 24576, 4),
        uncounted_bytes=4096,
        uncounted={"padding": 4096},
        formula="f",
        fewest_stages=None,
    )
    return cls(
        family="moe",
        name="CtaShape128x16x128B",
        a="e4m3",
        b="e4m3",
        out="f16",
        fusion="finalize",
        swap_ab=True,
        tile=[128, 16, 128],
        cluster=[2, 1, 1],
        kernel="grouped",
        schedule="S",
        file="g.cu",
        line=5,
        launcher="L",
        launcher_file="l.inl",
        launcher_line=6,
        runtime_candidate=True,
        report=rep,
        fix=fix,
        **kw,
    )


IDENTITY = {
    "family": "moe",
    "name": "CtaShape128x16x128B",
    "a": "e4m3",
    "b": "e4m3",
    "out": "f16",
    "fusion": "finalize",
    "swap_ab": True,
    "tile": [128, 16, 128],
    "cluster": [2, 1, 1],
    "kernel": "grouped",
    "schedule": "S",
    "mma_sms": None,
    "dynamic_cluster": None,
    "epilogue_schedule": None,
    "mma_tile": None,
    "sm_version": None,
    "file": "g.cu",
    "line": 5,
    "launcher": "L",
    "launcher_file": "l.inl",
    "launcher_line": 6,
}
NUMBERS = {
    "stages": 4,
    "stage_counts": None,
    "kernel_bytes": 102400,
    "mainloop_bytes": 98304,
    "epilogue_bytes": 2048,
    "capacity_bytes": 101376,
    "headroom_bytes": -1024,
    "verdict": "over_capacity",
    "runtime_candidate": True,
    "occupancy": None,
    "params": None,
    "cluster_legality": None,
    "launch_findings": [],
    "tma_check": None,
}
FIX = {
    "stages": 3,
    "kernel_bytes": 81920,
    "headroom_bytes": 19456,
    "carveout_bytes": 1024,
    "mainloop_bytes": 77824,
    "searched": {"2": None, "3": 81920},
    "builder": {
        "reduced_capacity_bytes": 99328,
        "carveout_bytes": 0,
        "stage_bytes": 24576,
        "stages": 4,
        "budgeted_bytes": 98304,
    },
    "uncounted_bytes": 4096,
    "uncounted": {"padding": 4096},
    "formula": "f",
    "error": None,
    "fewest_stages": None,
}
ROW = {
    "id": "moe/CtaShape128x16x128B/e4m3xe4m3/f16/finalize/swap_ab/cluster2x1x1",
    **IDENTITY,
    **NUMBERS,
    "error": None,
    "fix": FIX,
    "runtime_guard": None,
}


def test_a_tactic_round_trips():
    t = _tactic()
    _same_json(t.to_dict(), ROW)
    assert (
        t.stages,
        t.kernel_bytes,
        t.mainloop_bytes,
        t.epilogue_bytes,
        t.capacity_bytes,
        t.headroom_bytes,
        t.verdict,
        t.error,
    ) == (4, 102400, 98304, 2048, 101376, -1024, "over_capacity", None)
    back = tactic_from_dict(json.loads(json.dumps(ROW)))
    assert type(back) is Tactic and back.report is None
    _same_json(back.to_dict(), ROW)
    assert back.fix == t.fix


def test_a_tactic_holds_its_reports_numbers_or_its_rows():
    """A tactic's ``numbers`` are its report's (made with it, and again by replace with another
    report); one read back from a row holds that row's numbers and no report, its verdict a
    Verdict, and gives the row again; the headroom and verdict of a row are computed again from
    its sizes, capacity and error, as a report's are."""
    from dataclasses import replace

    from cutlass_layout.model import KernelNumbers, Verdict

    t = _tactic()
    assert (
        t.numbers == t.report.numbers() == KernelNumbers(Verdict.OVER_CAPACITY, 4, 102400, 98304, 2048, 101376, -1024)
    )
    exact = replace(t.report, kernel=StructLayout("", 101376, 0, 0))
    moved = replace(t, report=exact)
    assert (moved.verdict, moved.headroom_bytes, moved.numbers.exact_fit) == ("exact_fit", 0, True)
    back = tactic_from_dict(json.loads(json.dumps(ROW)))
    assert back.report is None and back.numbers == t.numbers and back.verdict is Verdict.OVER_CAPACITY
    edited = tactic_from_dict({**ROW, "headroom_bytes": 5, "verdict": "fits"})  # computed again, not read
    assert (edited.headroom_bytes, edited.verdict) == (-1024, "over_capacity") and edited.to_dict() == ROW
    storage = tactic_from_dict({**ROW, "kernel_bytes": None, "headroom_bytes": 0})  # no GEMM shape: a storage
    assert (storage.headroom_bytes, storage.verdict) == (0, "exact_fit")
    broken = tactic_from_dict({**ROW, "error": {"kind": "error", "message": "no", "file": None, "line": None}})
    assert broken.numbers == KernelNumbers(Verdict.DOES_NOT_COMPILE, error=broken.error) and broken.stages is None
    assert back.to_dict() == ROW
    assert tactic_from_dict({**ROW, "verdict": "too big"}).to_dict() == ROW


def test_a_library_tactic_round_trips():
    t = _tactic(
        LibraryTactic,
        gemm_kind="Universal3x",
        stage_spec="StageCount<4>",
        library_stages=4,
        tile_scheduler="default",
        estimate_kib=96,
        estimate_capacity_kib={"120": 99},
    )
    t.family, t.name = "cutlass_library", "cutlass3x_sm120_gemm"
    want = {
        **ROW,
        "id": "cutlass3x_sm120_gemm",
        "family": "cutlass_library",
        "name": "cutlass3x_sm120_gemm",
        "gemm_kind": "Universal3x",
        "stage_spec": "StageCount<4>",
        "library_stages": 4,
        "tile_scheduler": "default",
        "estimate": {"kib": 96, "bytes": 98304, "capacity_kib": {"120": 99}, "error": None},
    }
    _same_json(t.to_dict(), want)
    back = tactic_from_dict(json.loads(json.dumps(want)))
    assert type(back) is LibraryTactic
    _same_json(back.to_dict(), want)


def test_an_audit_result_round_trips():
    t = _tactic()
    shard = AuditShard(
        index=1,
        count=2,
        asked={"archs": ["sm90"]},
        ranks=[[0, 0]],
        dropped=[([1, 0], _tactic())],
        capacity_rank=[0, 0],
        parts={"x": 1},
    )
    res = AuditResult(
        provenance={"library": "flashinfer", **PROV_D},
        arch="sm90",
        capacity=CAP,
        tactics=[t],
        sources=[
            {"module": "m", "family": "moe", "instantiations": 2, "kernels": 1},
            {"module": "n", "family": "moe", "skipped": "not sm90"},
        ],
        notes=["a note"],
        shard=shard,
        modules=[
            {
                "builder": "flashinfer.jit.m.gen_m_sm90_module",
                "module": "m",
                "family": "moe",
                "sources": 2,
                "kernels": 1,
                "reason": None,
            }
        ],
    )
    want = {
        "schema": "cutlass-layout/audit/1",
        "provenance": {"library": "flashinfer", **PROV_D},
        "arch": "sm90",
        "checked": "types",
        "capacity_bytes": 101376,
        "capacity": CAP_D,
        "tactics": [ROW],
        "sources": [
            {"module": "m", "family": "moe", "instantiations": 2, "kernels": 1},
            {"module": "n", "family": "moe", "skipped": "not sm90"},
        ],
        "summary": {
            "moe": {"sources": 2, "skipped": 1, "instantiations": 2, "kernels": 1, "errors": 0, "without_kernel": 0}
        },
        "modules": [
            {
                "builder": "flashinfer.jit.m.gen_m_sm90_module",
                "module": "m",
                "family": "moe",
                "sources": 2,
                "kernels": 1,
                "reason": None,
            }
        ],
        "notes": ["a note"],
        "shard": {
            "index": 1,
            "count": 2,
            "asked": {"archs": ["sm90"]},
            "ranks": [[0, 0]],
            "dropped": [{"rank": [1, 0], "tactic": ROW}],
            "capacity_rank": [0, 0],
            "parts": {"x": 1},
        },
    }
    _same_json(res.to_dict(), want)
    back = AuditResult.from_dict(json.loads(json.dumps(want)))
    _same_json(back.to_dict(), want)
    assert back.tactics[0].report is None and back.tactics[0].numbers == t.numbers
    both = AuditSet(results=[res, res])
    _same_json(both.to_dict(), {"audits": [want, want]})
    _same_json(AuditSet.from_dict(json.loads(json.dumps(both.to_dict()))).to_dict(), {"audits": [want, want]})
    # JSON written before ``modules``: read back with none
    older = {k: v for k, v in want.items() if k != "modules"}
    assert AuditResult.from_dict(json.loads(json.dumps(older))).modules == []


class _Cfg:
    """A config as the model reads it (duck-typed: ``stages``, ``to_dict``)."""

    stages = None

    def to_dict(self):
        return {"arch": "sm120", "stages": "auto"}


def test_a_sweep_result_as_json():
    over = SweepRecord(
        config=_Cfg(),
        stages=4,
        mainloop_bytes=98304,
        epilogue_bytes=2048,
        kernel_bytes=102400,
        capacity_bytes=101376,
        headroom_bytes=-1024,
        verdict="over_capacity",
        max_stages_that_fit=3,
        max_stages_kernel_bytes=79872,
    )
    bad = SweepRecord(
        config=_Cfg(),
        stages=None,
        mainloop_bytes=None,
        epilogue_bytes=None,
        kernel_bytes=None,
        capacity_bytes=None,
        headroom_bytes=None,
        verdict="does_not_compile",
        max_stages_that_fit=None,
        max_stages_kernel_bytes=None,
        error=CompileError("error", "no", None, None),
        arch_from_tag="sm90",
        stage_search=StageSearch("could not run", "why"),
    )
    res = SweepResult(provenance=PROV, grid=[_Cfg(), _Cfg()], records=[over, bad])
    cfg = {"arch": "sm120", "stages": "auto"}
    want = {
        "schema": "cutlass-layout/sweep/1",
        "provenance": PROV_D,
        "checked": "types",
        "grid": [cfg, cfg],
        "results": [
            {
                "config": cfg,
                "stages": 4,
                "mainloop_bytes": 98304,
                "epilogue_bytes": 2048,
                "kernel_bytes": 102400,
                "capacity_bytes": 101376,
                "headroom_bytes": -1024,
                "verdict": "over_capacity",
                "max_stages_that_fit": 3,
                "max_stages_kernel_bytes": 79872,
                "stage_search": {"status": "found", "reason": None},
                "occupancy": None,
                "launch_findings": [],
                "error": None,
                "exact_fit": False,
                "approximation": None,
            },
            {
                "config": {"arch": "sm90", "stages": "auto", "arch_from": "tag"},
                "stages": None,
                "mainloop_bytes": None,
                "epilogue_bytes": None,
                "kernel_bytes": None,
                "capacity_bytes": None,
                "headroom_bytes": None,
                "verdict": "does_not_compile",
                "max_stages_that_fit": None,
                "max_stages_kernel_bytes": None,
                "stage_search": {"status": "could not run", "reason": "why"},
                "occupancy": None,
                "launch_findings": [],
                "error": {"kind": "error", "message": "no", "file": None, "line": None},
                "exact_fit": None,
                "approximation": None,
            },
        ],
    }
    _same_json(res.to_dict(), want)
    assert [r.verdict for r in res.sorted_records()] == ["over_capacity", "does_not_compile"]


def test_a_diff_result_as_json():
    old = NumericRecord(
        verdict="fits",
        stages=3,
        kernel_bytes=100,
        mainloop_bytes=80,
        epilogue_bytes=20,
        capacity_bytes=200,
        headroom_bytes=100,
        tma_bytes=TmaValues(1, 2, 3),
        members={"a": MemberSpan(0, 100)},
    )
    new = NumericRecord(verdict="does_not_compile", error="does not compile: error: no")
    row = NumericRow(
        config=_Cfg(),
        label="L",
        old=old,
        new=new,
        changed=["verdict"],
        members=[MemberChange("a", MemberSpan(0, 100), None)],
    )
    change = TacticChange(
        id="i",
        family="moe",
        name="n",
        change="numbers",
        old=_tactic(),
        new=None,
        changed=["stages"],
        old_id="o",
        new_id=None,
        rename=Rename("x", "y"),
        paired_by="id",
        config={"tile": (1, 2, 3)},
        kernel_bytes_delta=None,
    )
    diff = DiffResult(
        old=Side("a", PROV),
        new=Side("b", Provenance("/d", "4.5.0", "def", "dir")),
        identical=False,
        grid=[_Cfg()],
        grid_source="flags",
        structural=[StructuralChange("field_added", "S", field="f", new="int", new_file="x.h", new_line=4)],
        files_compared=2,
        structural_arch=["sm120"],
        structural_others={"sm100": 1},
        numeric=[row],
        notes=["n"],
        audit=AuditDiff(arch="sm90", family=None, rows=[change], old_tactics=1),
    )
    want_old = {
        "verdict": "fits",
        "error": None,
        "stages": 3,
        "kernel_bytes": 100,
        "mainloop_bytes": 80,
        "epilogue_bytes": 20,
        "capacity_bytes": 200,
        "headroom_bytes": 100,
        "tma_bytes": {"mk": 1, "nk": 2, "total": 3},
        "members": {"a": {"offset": 0, "size": 100}},
    }
    want_new = {
        "verdict": "does_not_compile",
        "error": "does not compile: error: no",
        "stages": None,
        "kernel_bytes": None,
        "mainloop_bytes": None,
        "epilogue_bytes": None,
        "capacity_bytes": None,
        "headroom_bytes": None,
        "tma_bytes": {"mk": None, "nk": None, "total": None},
        "members": {},
    }
    want = {
        "schema": "cutlass-layout/diff/1",
        "old": {"source": "a", "provenance": PROV_D},
        "new": {
            "source": "b",
            "provenance": {"cutlass_root": "/d", "cutlass_version": "4.5.0", "tree_hash": "def", "origin": "dir"},
        },
        "identical": False,
        "has_differences": True,
        "grid_source": "flags",
        "grid": [{"arch": "sm120", "stages": "auto"}],
        "notes": ["n"],
        "structural": [
            {
                "change": "field_added",
                "struct": "S",
                "field": "f",
                "old": None,
                "new": "int",
                "old_file": None,
                "old_line": None,
                "new_file": "x.h",
                "new_line": 4,
                "specialization": None,
            }
        ],
        "files_compared": 2,
        "structural_arch": ["sm120"],
        "structural_others": {"sm100": 1},
        "numeric": [
            {
                "config": {"arch": "sm120", "stages": "auto"},
                "label": "L",
                "old": want_old,
                "new": want_new,
                "changed": ["verdict"],
                "members": [{"name": "a", "old": {"offset": 0, "size": 100}, "new": None}],
            }
        ],
        "audit": {
            "arch": "sm90",
            "family": None,
            "kind": "flashinfer",
            "gate": {  # the row has no new side: no kernel of the gate
                "paired": 0,
                "only_old": 0,
                "only_new": 0,
                "newly_over_capacity": 0,
                "newly_not_compiling": 0,
                "stage_changes": 0,
                "byte_changes": 0,
                "newly_failing": 0,
            },
            "selection": {},
            "old_tactics": 1,
            "new_tactics": 0,
            "summary": {
                "verdict": 0,
                "numbers": 1,
                "renamed": 0,
                "added": 0,
                "removed": 0,
                "same": 0,
                "verdict_changes": [],
            },
            "notes": [],
            "tactics": [
                {
                    "id": "i",
                    "family": "moe",
                    "name": "n",
                    "change": "numbers",
                    "changed": ["stages"],
                    "members": [],
                    "old": ROW,
                    "new": None,
                    "kinds": ["renamed", "numbers"],
                    "old_id": "o",
                    "new_id": None,
                    "rename": {"old": "x", "new": "y"},
                    "paired_by": "id",
                    "config": {"tile": [1, 2, 3]},
                    "kernel_bytes_delta": None,
                    "gate": [],
                }
            ],
        },
    }
    _same_json(diff.to_dict(), want)


def test_a_scan_result_as_json():
    ns = Scope("namespace", "cutlass")
    st = Struct(
        name="SharedStorage",
        qualified_name="cutlass::SharedStorage",
        file="a.hpp",
        line=1,
        end_line=9,
        enclosing=[ns],
        children=[Struct("Inner", "cutlass::SharedStorage::Inner", "a.hpp", 2, 4)],
    )
    st.aliases = [Field("T", "int", alignas="8", line=3)]
    const = ScanConstant("N", "cutlass::N", "a.hpp", 11, "4 * 2", 8, "int", [ns])
    res = ScanResult(root="/r", structs=[st], constants=[const], files_scanned=3, files_parsed=1, source="dir")
    scope = {"kind": "namespace", "name": "cutlass", "template_args": None}
    inner = {
        "name": "Inner",
        "qualified_name": "cutlass::SharedStorage::Inner",
        "file": "a.hpp",
        "line": 2,
        "end_line": 4,
        "kind": "struct",
        "bases": [],
        "alignas": None,
        "cut": False,
        "condition": None,
        "enclosing": [],
        "fields": [],
        "children": [],
        "aliases": [],
    }
    want = {
        "schema": "cutlass-layout/scan/1",
        "root": "/r",
        "source": "dir",
        "files_scanned": 3,
        "files_parsed": 1,
        "structs": [
            {
                **inner,
                "name": "SharedStorage",
                "qualified_name": "cutlass::SharedStorage",
                "line": 1,
                "end_line": 9,
                "enclosing": [scope],
                "children": [inner],
                "aliases": [{"name": "T", "type": "int", "line": 3, "condition": None}],
            }
        ],
        "constants": [
            {
                "name": "N",
                "qualified_name": "cutlass::N",
                "file": "a.hpp",
                "line": 11,
                "type": "int",
                "expression": "4 * 2",
                "value": 8,
                "enclosing": [scope],
            }
        ],
        "diagnostics": [],
    }
    _same_json(res.to_dict(), want)
    _same_json(res.to_dict(file_only=True), {**{k: want[k] for k in list(want)[:5]}, "files": ["a.hpp"]})


def test_a_reports_repr_shows_what_it_knows_not_none():
    """A report's repr names its subject by the parts it has (a tactic by its id, a config by
    arch, kernel, A x B, tile, stages and preset) and never prints ``None``: a report without
    a layout says so, an unknown number is ``?``."""
    from cutlass_layout.model import Constant, LayoutReport, StructLayout

    assert repr(LayoutReport(config={"tactic": "moe/x"}, provenance=None)) == "<LayoutReport moe/x: no layout>"
    kernel = StructLayout(type="K", size=101376, align=1024, tail_padding=0)
    cfg = {"arch": "sm120", "kernel": "grouped", "a": "nvfp4", "b": "nvfp4", "tile": [128, 128, 128], "stages": 3}
    rep = LayoutReport(config=cfg, provenance=None, stages=3, capacity=Constant("c", 101376), kernel=kernel)
    assert repr(rep) == (
        "<LayoutReport sm120 grouped nvfp4xnvfp4 128x128x128 stages=3: 3 stages, 101376 B of 101376 B, exact_fit>"
    )
    assert "None" not in repr(LayoutReport(config={"type": "ns::T"}, provenance=None, kernel=kernel))


def test_an_audits_repr_is_one_line():
    """``repr`` of an :class:`AuditResult` (what a REPL shows for ``cl.audit(...)``) is one
    line: arch, install, tactics by verdict and capacity, not every tactic's fields."""
    from cutlass_layout.model import AuditResult, Constant

    res = AuditResult(
        provenance={"library": "flashinfer", "version": "0.7.2.post1"},
        arch="sm120",
        capacity=Constant("sm120_smem_capacity_bytes", 101376),
        tactics=[],
    )
    assert repr(res) == "<AuditResult sm120 of flashinfer 0.7.2.post1: 0 tactics, capacity 101376 B>"
