"""diff --audit: what an upgrade of flashinfer changes in the kernels it builds.

Offline: two copies of fixtures/installs/mini_flashinfer, the new one with a launcher that
takes one stage fewer for N != 64 and a generator that drops one tactic and adds another;
sizes by hand (tests/test_audit.py's ``mini_sizes``). With the package index: flashinfer-python
0.6.8 -> 0.7.2.post1 (tests/handed.md section E).
"""

from __future__ import annotations

import json
import shutil

import pytest
from test_audit import CAPACITY, MINI, mini_sizes

from cutlass_layout import audit, diff
from cutlass_layout.cli import main

INL = "flashinfer/data/csrc/nv_internal/launchers/mini_launcher.inl"
GEN = "flashinfer/jit/gemm/cutlass/generate_kernels.py"


@pytest.fixture
def pair(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(MINI, old)
    shutil.copytree(MINI, new)
    inl = (new / INL).read_text()
    assert "? 3 : 5" in inl
    (new / INL).write_text(inl.replace("? 3 : 5", "? 3 : 4"))
    gen = (new / GEN).read_text()
    gen = gen.replace(
        '    (128, 64, 0, "NONE", "false", "half"),  # K = 0 fails the collective\'s static_assert\n',
        '    (128, 256, 32, "NONE", "false", "half"),\n',
    )
    (new / GEN).write_text(gen)
    return old, new


def test_mini_audit_diff(pair, capsys):
    old, new = pair
    res = diff(str(old), str(new), audit=True, family="moe")
    assert res.structural is None and res.numeric is None and res.has_differences
    rows = {r.id: r for r in res.audit.rows}
    assert [r.change for r in res.audit.rows] == ["numbers", "numbers", "added", "removed", "same"]

    # 256x128x64: 5 -> 4 stages, over capacity on both sides
    r = rows["moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize"]
    assert r.old.report.kernel.size == mini_sizes(256, 128, 64, 5, 4096)[2] == 129024
    assert r.new.report.kernel.size == mini_sizes(256, 128, 64, 4, 4096)[2] == 104448
    assert r.old.verdict == r.new.verdict == "over_capacity"
    assert {"stages", "kernel_bytes", "mainloop_bytes"} <= set(r.changed)
    smem_b = next(m for m in r.members if m.name == "mainloop.smem_B")
    assert (smem_b.old.size, smem_b.new.size) == (128 * 64 * 5, 128 * 64 * 4)
    assert (smem_b.old.offset, smem_b.new.offset) == (256 * 64 * 5, 256 * 64 * 4)

    # 128x128x64 swapped: fits on both, 88064 -> 71680
    r = rows["moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"]
    assert (r.old.report.kernel.size, r.new.report.kernel.size) == (88064, mini_sizes(128, 128, 64, 4, 4096)[2])
    assert r.new.report.kernel.size == 71680
    # the tactic the new generator adds, the one it no longer emits (which did not compile)
    added = rows["moe/CtaShape128x256x16B/nvfp4xnvfp4/f16/none"]
    assert added.old is None and added.new.report.kernel.size == mini_sizes(128, 256, 32, 4, 4096)[2]
    removed = rows["moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none"]
    assert removed.new is None and removed.old.verdict == "does_not_compile"
    assert rows["moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"].change == "same"

    # the numbers of each side are that side's audit numbers
    a_new = {t.id: t.to_dict() for t in audit(str(new), family="moe").tactics}
    for r in res.audit.rows:
        if r.new is not None:
            assert r.new.to_dict() == a_new[r.id]

    assert main(["diff", str(old), str(new), "--audit", "--family", "moe", "--exit-code"]) == 1
    out = capsys.readouterr().out
    assert (
        "* moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize: 129024 B, 5 stages, over -> 104448 B, 4 stages, over"
        in out
    )
    assert "+ moe/CtaShape128x256x16B" in out and "- moe/CtaShape128x64x0B" in out
    assert main(["diff", str(old), str(new), "--audit", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "cutlass-layout/diff/1" and doc["audit"]["arch"] == "sm120"
    assert {t["change"] for t in doc["audit"]["tactics"]} >= {"numbers", "added", "removed", "same"}
    assert main(["diff", str(old), str(old), "--audit", "--exit-code"]) == 0
    assert main(["diff", str(old), str(new), "--audit", "--tile", "128x128x64"]) == 2
    assert "no grid flags" in capsys.readouterr().err


def test_audit_diff_of_a_family_one_side_builds(pair, capsys):
    """A family only the new install builds is all added; one neither builds is bad input,
    listing what the two build."""
    old, new = pair
    core = old / "flashinfer/jit/gemm/core.py"
    core.write_text(core.read_text().replace("def gen_gemm_sm120_module():", "def gen_gemm_mini_module():"))
    res = diff(str(old), str(new), audit=True, family="gemm_sm120")
    (row,) = res.audit.rows
    assert row.change == "added" and row.old is None
    assert row.new.kernel_bytes == mini_sizes(128, 64, 64, 2, 1024)[2] == 27648
    assert main(["diff", str(old), str(new), "--audit", "--family", "gemm_sm12"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown family 'gemm_sm12' (nearest: gemm_sm120)") and err.count("\n") == 1
    assert set(err.strip().rsplit(": ", 1)[1].split(", ")) == {"moe", "fp4_gemm_cutlass_sm120", "gemm_sm120"}


@pytest.mark.network
@pytest.mark.slow  # 0.6.8's MoE audit, cold: a second version (test_mini_audit_diff is the default tier's)
def test_diff_068_072_audit():
    """0.6.8's generator emits 40 of the 88 SM120 MoE tactics of 0.7.2.post1 (N >= 128); none
    changes, and the FINALIZE, not swapped, 128x256 and 256x128 tactics are 102400 B, over
    capacity on both sides (tests/handed.md E)."""
    res = diff("flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1", audit=True, family="moe")
    a = res.audit
    assert (a.old_tactics, a.new_tactics) == (40, 88)
    counts = {k: sum(r.change == k for r in a.rows) for k in ("verdict", "numbers", "added", "removed", "same")}
    assert counts == {"verdict": 0, "numbers": 0, "added": 48, "removed": 0, "same": 40}
    for tile in ("128x256x64B", "256x128x64B"):
        for out in ("f16", "bf16"):
            r = next(r for r in a.rows if r.id == f"moe/CtaShape{tile}/nvfp4xnvfp4/{out}/finalize")
            assert r.old.report.kernel.size == r.new.report.kernel.size == 102400
            assert r.old.verdict == r.new.verdict == "over_capacity"
    assert all(r.new.report.capacity_bytes == CAPACITY for r in a.rows if r.new is not None)
