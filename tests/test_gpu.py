"""``--verify gpu``: the preflight (no GPU, a GPU of another arch, no nvcc), the runner and the
reading of what the programs print, the programs' build with nvcc, and, on a machine with an
SM90 GPU, the launch itself.

The launch's expected outcomes are CUTLASS's: a kernel whose ``SharedStorage`` fits
initializes (``cudaFuncSetAttribute(..., MaxDynamicSharedMemorySize, smem)`` succeeds) and
runs; one over the opt-in capacity fails in ``GemmUniversalAdapter::initialize`` with
``Status::kErrorInternal`` ("Error Internal", gemm_universal_adapter.h).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cutlass_layout.checks.gpu import (
    RUNNER,
    GpuRun,
    check_launchable,
    find_gpu,
    gpu_program,
    preflight,
    read_checks,
    verify_on_gpu,
    write_checks,
)
from cutlass_layout.cli import main
from cutlass_layout.errors import BadInput
from cutlass_layout.engine.loop import layout
from cutlass_layout.subjects.config import Config


def _fake_bin(folder: Path, name: str, script: str) -> None:
    p = folder / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def no_gpu(tmp_path, monkeypatch):
    """A PATH with neither nvidia-smi nor nvcc."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def _one_error_line(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and not out, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_layout_verify_gpu_without_a_gpu_exits_2(no_gpu, capsys):
    line = _one_error_line(["layout", "--arch", "sm90", "--kernel", "dense", "--verify", "gpu"], capsys)
    assert "no NVIDIA GPU" in line


def test_sweep_verify_gpu_without_a_gpu_exits_2(no_gpu, capsys):
    line = _one_error_line(["sweep", "--arch", "sm90", "--kernel", "dense", "--verify", "gpu"], capsys)
    assert "no NVIDIA GPU" in line


def test_gpu_of_another_arch_is_refused(no_gpu, capsys):
    _fake_bin(no_gpu, "nvidia-smi", 'echo "NVIDIA GeForce RTX 5090, 12.0"\n')
    line = _one_error_line(["layout", "--arch", "sm90", "--kernel", "dense", "--verify", "gpu"], capsys)
    assert "RTX 5090 (sm_120)" in line and "sm90 kernels do not run on it" in line


def test_gpu_without_nvcc_is_refused(no_gpu):
    _fake_bin(no_gpu, "nvidia-smi", 'echo "NVIDIA H200, 9.0"\n')
    assert find_gpu().arch == "sm90"
    with pytest.raises(BadInput, match="nvcc is not on PATH"):
        preflight("sm90")


def test_library_messages_name_no_flag(no_gpu):
    """From Python the GPU check's errors name no command-line flag (the command maps them:
    the tests above)."""
    with pytest.raises(BadInput) as exc:
        find_gpu()
    assert str(exc.value).startswith("GPU check: no NVIDIA GPU") and "--" not in str(exc.value)
    _fake_bin(no_gpu, "nvidia-smi", 'echo "NVIDIA GeForce RTX 5090, 12.0"\n')
    with pytest.raises(BadInput) as exc:
        preflight("sm90")
    assert "give the arch of the local GPU" in str(exc.value) and "--" not in str(exc.value)
    with pytest.raises(BadInput) as exc:
        check_launchable([Config()])  # SM120 NVFP4: block-scaled
    assert "verify_nvcc" in str(exc.value) and "--" not in str(exc.value)


def test_nvidia_smi_without_a_gpu(no_gpu):
    _fake_bin(no_gpu, "nvidia-smi", 'echo "No devices were found"; exit 6\n')
    with pytest.raises(BadInput, match="lists no GPU"):
        find_gpu()


def test_user_types_are_not_launched(no_gpu, tmp_path, capsys):
    header = tmp_path / "k.h"
    header.write_text("struct K { struct SharedStorage { char x[16]; }; };\n")
    line = _one_error_line(["layout", "--header", str(header), "--type", "K", "--verify", "gpu"], capsys)
    assert "--verify nvcc" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["layout", "--verify", "gpu"],  # SM120 NVFP4: block-scaled
        ["layout", "--a", "e4m3", "--scales", "1x128x128", "--kernel", "dense", "--verify", "gpu"],
        ["sweep", "--kernel", "sparse", "--tile", "128x128x256", "--verify", "gpu"],
        ["sweep", "--arch", "sm100", "--a", "nvfp4", "--d", "nvfp4", "--c", "bf16", "--verify", "gpu"],
    ],
    ids=["block-scaled", "blockwise", "sparse", "sfd"],
)
def test_families_the_program_does_not_fill_are_refused(no_gpu, argv, capsys):
    """Before any GPU or nvcc check: the program fills only A, B and their strides."""
    line = _one_error_line(argv, capsys)
    assert "plain element types" in line and "--verify nvcc" in line


def test_sweep_verify_takes_only_gpu(capsys):
    assert "'nvcc' is not 'gpu'" in _one_error_line(["sweep", "--verify", "nvcc"], capsys)


# -- what the programs print, read back ------------------------------------------------------

DEVICE = 'device name="NVIDIA H200" cc=9.0 optin=232448\n'


def _kernel_line(sizeof, init, run="Success", sync="no error", correct=1):
    return (
        f'kernel 0 sizeof={sizeof} static=0 attr=ok can_implement="Success" initialize="{init}" '
        f'run="{run}" sync="{sync}" correct={correct} max_err=0\n'
    )


def _checks(tmp_path, expected, outputs):
    folder = tmp_path / "checks"
    folder.mkdir()
    rows = [
        {"config": Config(arch="sm90", kernel="dense").to_dict(), "label": "", "verdict": v, "bytes": b}
        for v, b in expected
    ]
    (folder / "expected.json").write_text(json.dumps(rows))
    (folder / "results.json").write_text(json.dumps({f"c{i:03d}": o for i, o in enumerate(outputs)}))
    return folder


def test_read_checks_agreement(tmp_path):
    folder = _checks(
        tmp_path,
        [
            ("fits", 214016),
            ("over_capacity", 246784),
            ("fits", 214016),
            ("fits", 214016),
            ("over_capacity", 246784),
            ("fits", 214016),
        ],
        [
            {"stdout": DEVICE + _kernel_line(214016, "Success")},
            {"stdout": DEVICE + _kernel_line(246784, "Error Internal", run="Error Not Supported", correct=-1)},
            {"stdout": DEVICE + _kernel_line(214016, "Error Internal", run="Error Not Supported", correct=-1)},
            {"stdout": DEVICE + _kernel_line(214016, "Success", correct=0)},
            {"stdout": DEVICE + _kernel_line(246800, "Error Internal", correct=-1)},
            {"error": 'c005.cu(12): error: identifier "x" is undefined\n1 error detected'},
        ],
    )
    v = read_checks(folder)
    assert v.device.name == "NVIDIA H200" and v.device.cc == (9, 0) and v.device.arch == "sm90"
    assert [r.agree for r in v.runs] == [True, True, False, False, False, False]
    fit, over, refused, wrong, bigger, broken = v.runs
    assert fit.launched and fit.correct and fit.optin == 232448
    assert not over.launched and over.initialize == "Error Internal"
    assert wrong.correct is False
    assert bigger.sizeof == 246800  # nvcc's sizeof differs from the engine's: no agreement
    assert broken.error.startswith("c005.cu(12): error") and broken.sizeof is None
    assert not v.agree
    text = v.summary()
    assert text.startswith("GPU check on NVIDIA H200 (sm_90, 232448 B opt-in")
    assert "4 of 6 config(s) disagree" in text


def test_program_that_prints_nothing(tmp_path):
    folder = _checks(tmp_path, [("fits", 100)], [{"stdout": "", "returncode": -11, "stderr": "Segfault"}])
    run = read_checks(folder).runs[0]
    assert not run.agree and "printed no result (exit -11)" in run.error


def test_read_checks_of_an_empty_folder(tmp_path):
    with pytest.raises(BadInput):
        read_checks(tmp_path)


def test_runner_builds_runs_and_writes_results(tmp_path):
    """The runner, with a stand-in nvcc whose "program" prints what a real one prints."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # nvcc ... SRC -o EXE writes EXE: a script printing a device line and a kernel line
    text = DEVICE + _kernel_line(214016, "Success")
    (bin_dir / "nvcc").write_text(
        f"#!{sys.executable}\nimport os, sys\nout = sys.argv[sys.argv.index('-o') + 1]\n"
        f"open(out, 'w').write('#!/bin/sh\\ncat <<' + chr(39) + 'EOF' + chr(39) + '\\n' + {text!r} + 'EOF\\n')\n"
        "os.chmod(out, 0o755)\n"
    )
    (bin_dir / "nvcc").chmod(0o755)
    cfgs = [
        Config(arch="sm90", kernel="dense", tile=(128, 128, 64)),
        Config(arch="sm90", kernel="grouped", tile=(128, 128, 64)),
    ]
    folder = tmp_path / "checks"
    write_checks(cfgs, [("fits", 214016), ("fits", 215040)], Path("include"), folder, arch="sm90", jobs=2)
    assert sorted(p.name for p in folder.iterdir()) == [
        "build.json",
        "c000.cu",
        "c001.cu",
        "expected.json",
        "runner.py",
    ]
    assert json.loads((folder / "build.json").read_text())["nvcc"][:3] == ["nvcc", "-std=c++17", "-arch=sm_90a"]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([sys.executable, str(folder / "runner.py"), str(folder)], env=env, check=True, capture_output=True)
    v = read_checks(folder)
    assert [(r.sizeof, r.launched, r.correct) for r in v.runs] == [(214016, True, True), (214016, True, True)]
    assert [r.agree for r in v.runs] == [True, False]  # the second expected 215040


def test_program_text():
    dense = gpu_program(Config(arch="sm90", kernel="dense", tile=(128, 256, 64)))
    assert "cl_run<cl_probe_0::GemmKernel, false>(0, 256, 512, 128);" in dense
    assert "cudaDevAttrMaxSharedMemoryPerBlockOptin" in dense
    grouped = gpu_program(Config(arch="sm90", kernel="grouped", tile=(128, 128, 64)))
    assert "cl_run<cl_probe_0::GemmKernel, true>" in grouped and "kGrouped" in grouped
    assert RUNNER.startswith("\nimport ")


# -- real builds and launches ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.nvcc
def test_programs_build_for_sm90(nc420, nvcc, tmp_path):
    """nvcc builds a dense (pingpong, no-smem epilogue, e4m3) and a grouped (cooperative, TMA
    epilogue, bf16) program for sm_90a; without a GPU they print ``device none``."""
    cfgs = [
        Config(
            arch="sm90", kernel="dense", a="e4m3", tile=(64, 128, 128), schedule="pingpong", epilogue_schedule="nosmem"
        ),
        Config(arch="sm90", kernel="grouped", tile=(128, 128, 64), schedule="cooperative", epilogue_schedule="tma"),
    ]
    folder = tmp_path / "checks"
    write_checks(cfgs, [("fits", 0), ("fits", 0)], nc420.tree.include_root, folder, arch="sm90", jobs=2)
    subprocess.run([sys.executable, str(folder / "runner.py"), str(folder)], check=True, capture_output=True)
    results = json.loads((folder / "results.json").read_text())
    assert all("error" not in r for r in results.values()), results
    if shutil.which("nvidia-smi") is None:
        assert all(r["stdout"].startswith("device none") for r in results.values()), results


@pytest.mark.gpu
@pytest.mark.network
def test_launch_agrees_on_an_sm90_gpu(nc420):
    """On an SM90 GPU: a dense 128x128x64 bf16 cooperative kernel with stages auto launches and
    computes the product; with StageCount<7> (7 x 32 KiB of A and B tiles alone, 229376 B, plus
    the epilogue's tiles: over 232448) initialize fails."""
    try:
        device = preflight("sm90")
    except BadInput as exc:
        pytest.skip(f"needs an SM90 GPU and nvcc: {exc}")
    fit = Config(arch="sm90", kernel="dense", tile=(128, 128, 64), schedule="cooperative", epilogue_schedule="tma")
    over = fit.with_(stages=7)
    reps = [layout(c, nc420) for c in (fit, over)]
    assert [r.verdict for r in reps] == ["fits", "over_capacity"]
    v = verify_on_gpu(
        [fit, over], [(r.verdict, r.kernel.size) for r in reps], nc420.tree.include_root, arch="sm90", device=device
    )
    assert [r.sizeof for r in v.runs] == [r.kernel.size for r in reps]  # nvcc's sizeof, the engine's
    assert v.runs[0].launched and v.runs[0].correct
    assert v.runs[1].initialize == "Error Internal"
    assert v.agree


def test_gpu_run_describe():
    r = GpuRun(
        config={}, tool_verdict="over_capacity", tool_bytes=246784, sizeof=246784, static=0, initialize="Error Internal"
    )
    assert r.describe() == (
        "engine over capacity (246784 B); nvcc sizeof 246784 B; static smem 0 B; initialize: Error Internal"
    )
