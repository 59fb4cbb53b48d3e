"""A preset is an approximation: the report says so, and where the CUTLASS source is a
flashinfer install whose audit is cached, names the install's tactics of the same config
with their bytes; it never audits anything itself.

Offline: the mini flashinfer of tests/test_audit.py (its MoE tactic 128x64x32 FINALIZE is
24576 B, worked out by hand there: ``mini_sizes``). The seed case on flashinfer
0.7.2.post1 (FINALIZE 128x256x128: 102400 B, tests/handed.md section E, nvcc in
tests/test_audit_nvcc.py) is in tests/test_audit.py, beside the audit it reads.
"""

from __future__ import annotations

import shutil
import pytest

from test_audit import CAPACITY, mini_sizes

from cutlass_layout import resolve_cutlass
from cutlass_layout.commands.audit import approximations, audit
from cutlass_layout.reports.common import approximation_head, approximation_lines
from cutlass_layout.subjects.config import Config

#: The mini's MoE tactics are of a dense stand-in kernel: its 128x64x32 NVFP4 f16 FINALIZE one.
MOE = Config(kernel="dense", tile=(128, 64, 32), preset="trtllm-moe", d="f16")
FINALIZE = "moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"


def test_not_audited_yet_says_the_audit_to_run_and_audits_nothing(mini):
    tree = resolve_cutlass(str(mini))
    (appr,) = approximations([MOE], tree)
    assert (appr.preset, appr.install, appr.source, appr.family, appr.arch, appr.audited, appr.tactics) == (
        "trtllm-moe",
        "flashinfer-python 0.0.1+mini",
        str(mini),
        "moe",
        "sm120",
        False,
        [],
    )
    assert not (mini.parent / "cache" / "flashinfer-jit").exists() or not any(
        (mini.parent / "cache" / "flashinfer-jit").rglob("*.cu")
    )  # the generator did not run
    head = approximation_head(appr)
    assert head.startswith("approximation of the trtllm-moe preset's kernel, TensorRT-LLM's MoE grouped GEMM")
    assert f"`cutlass-layout audit {mini} --family moe`" in head
    assert f"`cutlass-layout layout --tactic ID --cutlass {mini}` lay out the real one" in head
    (line,) = approximation_lines(appr, "128x64x16B")
    assert f"`cutlass-layout audit {mini} --family moe --tile 128x64x16B` lays them out" in line


@pytest.mark.mini_shared
def test_an_audited_install_names_its_tactics_of_the_config(mini):
    audit(str(mini), jobs=1)
    tree = resolve_cutlass(str(mini))
    moe, dense = approximations([MOE, MOE.with_(preset="flashinfer")], tree)
    assert moe.audited is True
    by = {t["id"]: t for t in moe.tactics}
    assert set(by) == {FINALIZE}  # the mini builds no other 128x64x32 NVFP4 f16 tactic
    kernel = mini_sizes(128, 64, 32, 3, 4096)[2]
    assert by[FINALIZE] == {
        "id": FINALIZE,
        "verdict": "fits",
        "stages": 3,
        "kernel_bytes": kernel,
        "headroom_bytes": CAPACITY - kernel,
        "runtime_candidate": True,
    }
    assert approximation_lines(moe, "128x64x16B") == [
        "flashinfer-python 0.0.1+mini builds this config as (its audit, cached):",
        f"  {FINALIZE}: 24576 B, 3 stages, fits, headroom {CAPACITY - 24576} B (tried by the runtime)",
    ]
    # the flashinfer preset: the JIT modules' tactics (the mini's dense stand-ins name no
    # element kinds, so none matches), audited all the same
    assert dense.audited is True and dense.family is None and dense.tactics == []
    assert approximation_lines(dense, "128x64x16B")[0].startswith(
        "flashinfer-python 0.0.1+mini builds no JIT-module tactic of this config"
    )
    # another tile: audited, nothing of it
    (other,) = approximations([MOE.with_(tile=(256, 64, 32))], tree)
    assert other.audited is True and other.tactics == []


def test_a_tree_that_is_no_flashinfer_has_nothing_to_audit(mini, tmp_path):
    include = tmp_path / "include"
    shutil.copytree(mini / "flashinfer" / "data" / "cutlass" / "include", include)
    appr, user = approximations([MOE, object()], resolve_cutlass(str(include)))
    assert user is None  # not a preset config
    assert (appr.install, appr.audited, appr.arch, appr.tactics) == (None, None, None, [])
    assert approximation_head(appr) == (
        "approximation of the trtllm-moe preset's kernel, TensorRT-LLM's MoE grouped GEMM "
        "(moe_gemm_tma_ws_launcher.inl): `cutlass-layout audit` of a flashinfer install lays out the real one"
    )
    assert approximation_lines(appr, "128x64x32") == []


@pytest.mark.mini_shared
def test_an_arch_the_audit_does_not_read(mini):
    (appr,) = approximations(
        [Config(arch="sm110", kernel="dense", a="bf16", tile=(128, 128, 64))], resolve_cutlass(str(mini))
    )
    assert appr.install == "flashinfer-python 0.0.1+mini" and appr.arch is None and appr.audited is None
    assert "reads its sm120, sm121, sm100, sm103 and sm90 builds, not this arch's" in approximation_head(appr)


def test_a_wheel_is_matched_to_its_own_audit(tmp_path, monkeypatch):
    """A ``.whl`` source: its CUTLASS tree and the parts the audit unpacked sit in one folder
    of the cache (the wheel's SHA-256), so the audit of the wheel is found from the tree
    alone; before the audit unpacked its other parts there is nothing of it to read."""
    from test_hostile import make_wheel

    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    whl = make_wheel(tmp_path / "mini_flashinfer-0.0.1-py3-none-any.whl")
    (before,) = approximations([MOE], resolve_cutlass(str(whl)))  # the CUTLASS tree alone unpacked
    assert (before.install, before.source, before.audited) == ("flashinfer", str(whl), False)
    audit(str(whl), jobs=1)
    (after,) = approximations([MOE], resolve_cutlass(str(whl)))
    assert (after.install, after.audited) == ("flashinfer-python 0.0.1+mini", True)
    assert [t["id"] for t in after.tactics] == [FINALIZE]
