"""Progress from the first second: every slow step of a command says so on stderr the moment it
starts (off a terminal one plain line each, in the order the steps run, before the report),
a cached answer says nothing, and stdout carries the report alone (``--json`` stays JSON).

Each command runs in a fresh process with its own empty cache, its stdout and stderr read
together (``2>&1``) where their order is the point. Offline: the mini flashinfer of
tests/test_audit.py as a wheel (unpacking, the install's generator, the parses). With the
package index: nvidia-cutlass 4.2.0.0 fetched into an empty cache (the download, the
precompiled header, the layout's parse). With nvcc: ``--verify nvcc``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_audit import MINI
from test_hostile import make_wheel

from cutlass_layout.core.progress import is_progress_line

PY = [sys.executable, "-m", "cutlass_layout.cli"]
WHEEL = "mini_flashinfer-0.0.1-py3-none-any.whl"
HEADERS = Path(__file__).resolve().parent.parent / "fixtures" / "headers"


def run(*argv, cache: Path, merged: bool = False) -> subprocess.CompletedProcess:
    """The command line in a fresh process with its own cache; ``merged``: stderr into
    stdout, in the order they were written."""
    env = {**os.environ, "CUTLASS_LAYOUT_CACHE": str(cache)}
    proc = subprocess.run(
        [*PY, *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        env=env,
        timeout=600,
    )
    assert "Traceback" not in proc.stdout + (proc.stderr or ""), proc.stdout + (proc.stderr or "")
    return proc


def progress(text: str) -> list[str]:
    """The progress lines of ``text`` but a slow step's later lines (``... (10 s so far) ...``,
    how many depends on the machine's load)."""
    return [ln for ln in text.splitlines() if is_progress_line(ln) and not re.search(r" \(\d+ s so far\) \.\.\.$", ln)]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return make_wheel(tmp_path_factory.mktemp("wheel") / WHEEL)


def test_a_cold_audit_says_each_step_in_order_before_the_report(wheel, tmp_path):
    proc = run("audit", wheel, "--jobs", "1", cache=tmp_path / "cache", merged=True)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    steps = progress(proc.stdout)
    assert steps[:3] == [
        f"unpacking the parts audit reads (the JIT's code, the headers) from {WHEEL} into the cache ...",
        f"unpacking flashinfer/data/cutlass/include from {WHEEL} into the cache ...",
        "running flashinfer 0.0.1+mini's JIT module builders for sm120 (its kernel generator and templates) ...",
    ]
    assert steps[3].startswith("audit sm120: laying out sources: 0/")
    head = next(i for i, ln in enumerate(lines) if ln.startswith("flashinfer-python 0.0.1+mini"))
    assert all(lines.index(s) < head for s in steps[:4])  # said before the report, as they ran
    # the same audit again: every answer cached, no step to say
    warm = run("audit", wheel, "--jobs", "1", cache=tmp_path / "cache")
    assert warm.returncode == 0 and warm.stdout.startswith("flashinfer-python 0.0.1+mini")
    assert progress(warm.stderr) == []


def test_json_stays_clean_with_progress_on_stderr(wheel, tmp_path):
    proc = run("audit", wheel, "--jobs", "1", "--json", cache=tmp_path / "cache")
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)  # stdout is the JSON alone
    assert doc["schema"] == "cutlass-layout/audit/1" and doc["tactics"]
    assert progress(proc.stderr) == [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(progress(proc.stderr)) >= 4


def test_a_library_call_is_quiet_unless_asked(wheel, tmp_path, monkeypatch, capsys):
    from cutlass_layout import audit

    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    audit(str(wheel), jobs=1)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "other"))
    audit(str(wheel), jobs=1, progress=True)
    assert len(progress(capsys.readouterr().err)) >= 4


@pytest.mark.network
def test_a_cold_layout_says_download_unpack_parse_and_header(tmp_path):
    """An empty cache: the wheel is downloaded (pip), its CUTLASS tree unpacked, the config
    laid out with libclang, for which the precompiled header is built first; the report's
    source line says the wheel was downloaded on this run, and "cached" on the next."""
    cache = tmp_path / "cache"
    proc = run("layout", "--cutlass", "nvidia-cutlass==4.2.0.0", "--json", cache=cache)
    assert proc.returncode == 0
    assert progress(proc.stderr) == [
        "downloading nvidia-cutlass==4.2.0.0 (pip download) ...",
        "unpacking cutlass_library/source/include from nvidia_cutlass-4.2.0.0-py3-none-any.whl into the cache ...",
        "laying out 1 config for sm120 with libclang ...",
        "building a precompiled header of the CUTLASS includes (once per tree and flags) ...",
    ]
    doc = json.loads(proc.stdout)
    assert doc["provenance"]["origin"].endswith(", downloaded into the cache)")
    # a preset is an approximation; nvidia-cutlass is no flashinfer: nothing to audit
    assert doc["approximation"] == {
        "preset": "flashinfer",
        "kernel": "the CUTLASS GEMMs of flashinfer's JIT modules",
        "install": None,
        "source": None,
        "family": None,
        "arch": None,
        "audited": None,
        "tactics": [],
    }
    again = run("layout", "--cutlass", "nvidia-cutlass==4.2.0.0", "--json", cache=cache)
    assert progress(again.stderr) == [] and again.stderr == ""
    assert json.loads(again.stdout)["provenance"]["origin"].endswith(", cached)")


@pytest.mark.network  # nc420 is nvidia-cutlass 4.2.0.0's wheel, downloaded when not cached
@pytest.mark.nvcc
def test_verify_nvcc_says_it_compiles(nvcc, nc420, capsys):  # nvcc first: it skips before the download
    from cutlass_layout.cli import main

    assert (
        main(
            [
                "layout",
                "--cutlass",
                str(nc420.tree.include_root),
                "--header",
                str(HEADERS / "tiny_storage.hpp"),
                "--type",
                "tiny::Tagged120",
                "--verify",
                "nvcc",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert (
        "nvcc on the probe of 1 config(s) for sm_120a (its front end's numbers: nothing compiled, linked or run) ..."
    ) in err.splitlines()
    assert "nvcc agrees" in out


def test_diff_audit_says_each_side_s_steps(tmp_path):
    """``diff --audit`` audits both installs: each side's generator and parses say so (the
    audits a diff runs show progress as `audit` does)."""
    import shutil

    for side in ("old", "new"):
        shutil.copytree(MINI, tmp_path / side)
    proc = run("diff", tmp_path / "old", tmp_path / "new", "--audit", "--json", cache=tmp_path / "cache")
    assert proc.returncode == 0 and json.loads(proc.stdout)["audit"]["new_tactics"] > 0
    steps = progress(proc.stderr)
    builders = "running flashinfer 0.0.1+mini's JIT module builders for sm120 (its kernel generator and templates) ..."
    assert steps.count(builders) == 2
    # each side's count starts once (a slow parse says so again, 10 s on: not a start)
    assert sum(bool(re.fullmatch(r"audit sm120: laying out sources: 0/\d+ \(0 s\)", s)) for s in steps) == 2
