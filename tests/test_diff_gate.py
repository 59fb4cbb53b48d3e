"""diff --audit as a release gate, offline: two versions of the miniature stand-in library
(``fixtures/installs/mini_cutlass_library``) made in the test, whose include folder is one
stand-in header written here, ``cutlass/cutlass.h``, holding the one CUTLASS name the probe
reads of it: ``cutlass::arch::sm120_smem_capacity_bytes``, 101376 (CUTLASS's own value,
``include/cutlass/arch/arch.h``: 99 KiB, ``99 * 1024``). The emitted types are plain structs of
sizes written here (tests/test_library_diff.py's ``KERNEL_SHAPED``): a kernel's SharedStorage
is a ``char[MAIN]`` mainloop and a ``char[16]`` epilogue, ``sizeof`` ``MAIN + 16`` bytes
(alignment 1), of ``STAGES`` stages (2 where not given).

Old: ``auto``, ``3stage``, ``grouped``, ``gone`` (1040 B, 2 stages, fit) and ``broken`` (its
``static_assert(sizeof(int) == 3)``: does not compile). New: ``auto`` 101361 + 16 = 101377 B,
one byte over 101376 (newly over capacity, and a byte change); ``3stage`` 1536 + 16 = 1552 B
of 3 stages (a stage and a byte change); ``grouped`` given the static_assert (newly not
compiling); ``broken`` as before (failing on both sides: no new failure); ``gone`` dropped
(only old); ``fit`` added (1040 B, fits) and ``broken_new`` added (does not compile: a new
failure). So: 4 paired, 3 on one side (1 old, 2 new), 1 newly over capacity, 2 newly not
compiling, 1 stage change, 2 byte changes.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from conftest import MINI_LIBRARY
from test_library_diff import _variant

from cutlass_layout import api
from cutlass_layout.cli import main

P = "fake_sm120_gemm_"
AUTO, STAGE3, GROUPED = P + "e4m3_128x128x128_auto", P + "e4m3_128x256x128_3stage", P + "grouped_e4m3_64x128x128_auto"
BROKEN, GONE, FIT, BROKEN_NEW = (
    P + "broken_e4m3_128x128x128",
    P + "e4m3_64x128x128_gone",
    P + "e4m3_256x128x128_fit",
    P + "broken_e4m3_64x64x64_new",
)
#: The stand-in's one header: CUTLASS's SM120 capacity (cutlass/arch/arch.h), nothing else
CAPACITY_HEADER = (
    "#pragma once\nnamespace cutlass { namespace arch { constexpr int sm120_smem_capacity_bytes = 101376; } }\n"
)


def _library(tmp_path, name: str, main_bytes: dict, stages: dict, broken=(), drop=(), add=()) -> str:
    """A version of the miniature library (:func:`test_library_diff._variant`) on the stand-in
    header, whose emitter also gives the kernels named in ``broken`` the static_assert."""
    include = tmp_path / "include"
    if not include.exists():
        (include / "cutlass").mkdir(parents=True)
        (include / "cutlass" / "cutlass.h").write_text(CAPACITY_HEADER)
        version = MINI_LIBRARY / "cutlass_library" / "source" / "include" / "cutlass" / "version.h"
        (include / "cutlass" / "version.h").write_text(version.read_text())
    path = _variant(tmp_path / name, SimpleNamespace(include_root=include), main_bytes, stages, drop=drop, add=add)
    emitter = tmp_path / name / "cutlass_library" / "gemm_operation.py"
    text = emitter.read_text()
    assert text.count('if "broken" in name else') == 1
    emitter.write_text(text.replace('if "broken" in name else', f'if "broken" in name or name in {set(broken)!r} else'))
    return path


@pytest.fixture
def two_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    old = _library(tmp_path, "old", {}, {}, add=[(GONE, [64, 128, 128])])
    new = _library(
        tmp_path,
        "new",
        {AUTO: 101376 - 16 + 1, STAGE3: 1536},
        {STAGE3: 3},
        broken=[GROUPED],
        add=[(FIT, [256, 128, 128]), (BROKEN_NEW, [64, 64, 64])],
    )
    return old, new


def test_the_gate_counts_and_check(two_versions, capsys):
    old, new = two_versions
    res = api.diff(old, new, audit=True, jobs=1)
    g = res.audit.gate()
    assert (g.paired, g.only_old, g.only_new) == (4, 1, 2)
    assert (g.newly_over_capacity, g.newly_not_compiling, g.stage_changes, g.byte_changes) == (1, 2, 1, 2)
    rows = {r.id: r for r in res.audit.rows}
    assert rows[AUTO].gate == ["newly_over_capacity", "bytes"]
    assert (rows[AUTO].old.kernel_bytes, rows[AUTO].new.kernel_bytes, rows[AUTO].new.headroom_bytes) == (
        1040,
        101377,
        -1,
    )
    assert rows[STAGE3].gate == ["stages", "bytes"] and (rows[STAGE3].new.stages, rows[STAGE3].new.kernel_bytes) == (
        3,
        1552,
    )
    assert rows[GROUPED].gate == rows[BROKEN_NEW].gate == ["newly_not_compiling"]
    assert rows[BROKEN].gate == rows[FIT].gate == rows[GONE].gate == []
    assert [r.id for r in res.audit.newly_failing()] == [AUTO, GROUPED, BROKEN_NEW]

    # the command line: the counts first, then each kernel of the gate, once
    assert main(["diff", old, new, "--audit", "--check"]) == 1
    captured = capsys.readouterr()
    lines = [ln.strip() for ln in captured.out.splitlines()]
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Audit (sm120"))
    assert lines[head + 1] == (
        "gate: 4 paired, 3 only on one side (1 old, 2 new), 1 newly over capacity, 2 newly not compiling, "
        "1 stage changes, 2 byte changes"
    )
    at = lines.index("newly over capacity (1):")
    assert lines[at + 1] == f"! {AUTO}: 1040 B, 2 stages, fits -> 101377 B, 2 stages, over (+100337 B)"
    at = lines.index("newly not compiling (2):")
    assert lines[at + 1].startswith(f"! {GROUPED}: 1040 B, 2 stages, fits -> does not compile (a kernel that")
    assert f"+ {BROKEN_NEW}: does not compile (a kernel that does not compile)" in lines
    at = lines.index("stage or byte changes, not listed above (1):")
    assert lines[at + 1] == f"* {STAGE3}: 1040 B, 2 stages, fits -> 1552 B, 3 stages, fits (+512 B)"
    assert sum(AUTO in ln for ln in lines) == 1  # listed once
    err = captured.err.strip().splitlines()
    assert err == [
        f"check: {AUTO}: newly over capacity: 101377 B, over the 101376 B capacity by 1 B (was fits)",
        f"check: {GROUPED}: newly does not compile: static_assert failed: a kernel that does not compile "
        f"(cutlass_layout_probe.cu:{err[1].rsplit(':', 1)[1]}",
        f"check: {BROKEN_NEW}: newly does not compile: static_assert failed: a kernel that does not compile "
        f"(cutlass_layout_probe.cu:{err[2].rsplit(':', 1)[1]}",
        f"check failed: 3 kernel(s) newly fail on sm120 (1 over capacity, 2 not compiling) from {old} to {new}",
    ]
    assert err[1].endswith(") (was fits)") and err[2].endswith(") (only on the new side)")

    # the JSON carries the counts, and each kernel's part in the gate
    assert main(["diff", old, new, "--audit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["audit"]
    assert doc["gate"] == {
        "paired": 4,
        "only_old": 1,
        "only_new": 2,
        "newly_over_capacity": 1,
        "newly_not_compiling": 2,
        "stage_changes": 1,
        "byte_changes": 2,
        "newly_failing": 3,
    }
    assert {t["id"]: t["gate"] for t in doc["tactics"]}[STAGE3] == ["stages", "bytes"]
    md = main(["diff", old, new, "--audit", "--format", "markdown"])
    out = capsys.readouterr().out
    assert md == 0 and "\ngate: 4 paired, 3 only on one side" in out and "*newly not compiling (2):*" in out

    # the other way round, nothing newly fails (what failed on the new side passes on the old):
    # --check passes; the kernel only the old side builds and fails is no new failure
    assert main(["diff", new, old, "--audit", "--check"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "gate: 4 paired, 3 only on one side (2 old, 1 new), 0 newly over capacity, 0 newly not compiling, " in (
        captured.out
    )


def test_one_library_against_itself_passes_the_gate(two_versions, capsys):
    old, _ = two_versions
    assert main(["diff", old, old, "--audit", "--check", "--exit-code"]) == 0
    out = capsys.readouterr().out
    assert (
        "gate: 5 paired, 0 only on one side (0 old, 0 new), 0 newly over capacity, 0 newly not compiling, "
        "0 stage changes, 0 byte changes"
    ) in out


def test_check_without_audit_is_one_line(capsys, tmp_path):
    from test_library_audit import _error_line

    line = _error_line(capsys, ["diff", str(tmp_path), str(tmp_path), "--check"])
    assert line == (
        "error: --check fails on a kernel that newly fails, for diff --audit (the kernels two installs or "
        "kernel libraries build); for the trees' differences, --exit-code"
    )
