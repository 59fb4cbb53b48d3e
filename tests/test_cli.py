"""The command line: one clear line and the documented exit code for every bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cutlass_layout.cli import main

BAD = [
    (["layout", "--cutlass", "/no/such/dir/include"], "does not exist"),
    (["layout", "--tile", "128x0x128"], "tile"),
    (["layout", "--tile", "abc"], "tile"),
    (["layout", "--a", "fp5"], "unknown element kind"),
    (["layout", "--arch", "sm80"], "2.x-era arch"),
    (["layout", "--arch", "sm999"], "unknown arch"),
    (["layout", "--cluster", "2x1x1"], "only 1x1x1"),
    (["layout", "--stages", "zero"], "stages"),
    (["layout", "--preset", "vllm"], "preset"),
    (["layout", "--show", "everything"], "--show"),
    (["layout", "--no-such-flag"], "No such option"),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[" ".join(a[1:]) for a, _ in BAD])
def test_bad_input_one_line_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert words in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


#: ``layout --tactic`` with what it cannot honour: refused (naming the flag) before the
#: install is looked at, so no source is needed (the one given does not exist).
TACTIC = ["layout", "--cutlass", "/no/such/install", "--tactic", "moe/CtaShape128x256x64B"]
TACTIC_REFUSED = [
    (["--show", "foo"], "--show 'foo': choose kernel, mainloop, epilogue or all"),
    (["--show", "kernel,bar"], "--show 'bar'"),
    (["--check-kernel"], "--check-kernel does not go with it"),
    (["--tile", "128x128x128"], "--tile does not go with it"),
    (["--verify", "nvcc"], "--verify does not go with it"),
    (["--emit-probe", "probe.cu"], "--emit-probe does not go with it"),
    (["--header", "x.h", "--type", "X"], "--header does not go with it"),
    (["-I", "/usr/include"], "--include does not go with it"),
    (["--arch", "sm120", "--stages", "auto"], "--stages does not go with it"),  # even the default
    (["--preset", "trtllm-moe"], "--preset does not go with it"),
    (["--kernel", "dense"], "--kernel does not go with it"),
]


@pytest.mark.parametrize("extra,words", TACTIC_REFUSED, ids=[" ".join(e) for e, _ in TACTIC_REFUSED])
def test_tactic_refuses_what_it_cannot_honour(extra, words, capsys):
    assert main(TACTIC + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and words in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "/no/such/install" not in err


def test_show_is_checked_before_anything_runs(capsys):
    assert main(["layout", "--cutlass", "/no/such/dir/include", "--show", "kernels"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --show 'kernels': choose kernel, mainloop, epilogue or all (or several, comma-separated)")


def test_tactic_honours_no_cache_and_show(tmp_path, capsys):
    """The offline miniature install of tests/test_audit.py: its 256x128x32B MoE tactic is
    over capacity by 27648 B (129024 B, worked out by hand there)."""
    import shutil

    from test_audit import MINI

    mini = tmp_path / "site-packages"
    shutil.copytree(MINI, mini)
    argv = ["layout", "--cutlass", str(mini), "--tactic", "CtaShape256x128x32B", "--check"]
    assert main(argv + ["--no-cache", "--show", "all", "--no-budget"]) == 1
    out = capsys.readouterr().out
    assert "over capacity by 27648 B" in out and "pipelines" in out
    assert main(argv + ["--json", "--arch", "sm120"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernel"]["size"] == 129024 and doc["tactic"]["verdict"] == "over_capacity"


def test_tree_without_cutlass(tmp_path, capsys):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "foo.h").write_text("int x;\n")
    assert main(["layout", "--cutlass", str(tmp_path)]) == 2
    assert "no CUTLASS headers" in capsys.readouterr().err


def test_wheel_without_cutlass(tmp_path, capsys):
    import zipfile

    whl = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("x/__init__.py", "")
    assert main(["layout", "--cutlass", str(whl)]) == 2
    assert "no CUTLASS headers" in capsys.readouterr().err


def test_console_script_has_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "cutlass_layout.cli", "layout", "--cutlass", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: path does not exist")
    assert "Traceback" not in proc.stderr


def test_the_console_entry_point_ends_as_sys_exit_does(tmp_path):
    """The console entry point ends the process without the interpreter's teardown (a whole
    install's audit frees nothing it made): the exit code is the command's, what it wrote is
    all there, and ``atexit`` handlers still run; a call from Python returns the code and keeps
    nothing."""
    from cutlass_layout import cli

    header = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "sm100_grouped.hpp"
    run = (
        "import atexit, sys; atexit.register(lambda: print('atexit ran', file=sys.stderr)); "
        "from cutlass_layout.cli import main; main()"
    )
    ok = subprocess.run([sys.executable, "-c", run, "scan", str(header), "--json"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr.strip().endswith("atexit ran"), ok.stderr
    assert json.loads(ok.stdout) == json.loads(cli_json(["scan", str(header), "--json"]))
    bad = subprocess.run(
        [sys.executable, "-c", run, "scan", str(tmp_path / "missing.hpp")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "atexit ran" in bad.stderr
    assert cli.main(["scan", str(tmp_path / "missing.hpp")]) == 2 and cli.KEPT == []


def test_an_internal_error_has_its_own_exit_code_and_one_line(monkeypatch, capsys):
    """An unexpected exception (a bug) exits 5, apart from every verdict (4 is nvcc or the GPU
    disagreeing), with one ``error: internal error:`` line and no traceback;
    ``CUTLASS_LAYOUT_DEBUG`` lets the exception out instead."""
    from cutlass_layout import api

    def broken(*args, **kwargs):
        raise RuntimeError("a bug\nspread over two lines")

    monkeypatch.setattr(api, "config", broken)
    monkeypatch.delenv("CUTLASS_LAYOUT_DEBUG", raising=False)
    assert main(["layout", "--arch", "sm120"]) == 5
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "error: internal error: RuntimeError: a bug spread over two lines "
        "(set CUTLASS_LAYOUT_DEBUG=1 for the traceback)"
    ]
    monkeypatch.setenv("CUTLASS_LAYOUT_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug"):
        main(["layout", "--arch", "sm120"])


def test_a_disagreement_still_exits_4(monkeypatch, capsys):
    """``layout --verify nvcc`` where nvcc disagrees: exit 4, not the internal error's 5 (the
    layout and nvcc's answer are stand-ins; tests/test_audit_verify.py replays a real one)."""
    from types import SimpleNamespace

    from cutlass_layout import api

    rep = SimpleNamespace(error=None, fits=True, to_dict=lambda: {"kernel": {"size": 1024}})
    verdict = SimpleNamespace(agree=False, sizes=1, fields=0, mismatches=["kernel: 1024 vs nvcc 2048"])
    monkeypatch.setattr(api, "target", lambda *a, **k: object())
    monkeypatch.setattr(api, "layout", lambda *a, **k: rep)
    monkeypatch.setattr(api, "verify_nvcc", lambda *a, **k: verdict)
    assert main(["layout", "--arch", "sm120", "--verify", "nvcc", "--json"]) == 4
    out, err = capsys.readouterr()
    assert json.loads(out)["verification"]["agree"] is False and "internal error" not in err


def cli_json(argv: list[str]) -> str:
    """What ``main(argv)`` prints, called in this process."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.network
def test_layout_json_schema(capsys):
    assert main(["layout", "--cutlass", "flashinfer-python==0.7.2.post1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "cutlass-layout/layout/1"
    for key in (
        "provenance",
        "config",
        "stages",
        "capacity_bytes",
        "kernel",
        "mainloop",
        "epilogue",
        "tma_transaction_bytes",
        "checked",
        "fits",
        "headroom_bytes",
        "error",
    ):
        assert key in doc
    for key in ("cutlass_root", "cutlass_version", "tree_hash", "libclang_version", "cuda_path", "flags"):
        assert key in doc["provenance"]
    assert doc["provenance"]["cutlass_version"] == "4.5.0"
    assert doc["config"]["tile"] == [128, 128, 128] and doc["config"]["stages"] == "auto"
    assert doc["kernel"]["size"] == 84992 and doc["checked"] == "types"
    f = doc["mainloop"]["fields"][0]["fields"][0]
    assert set(f) >= {"name", "type", "offset", "size", "type_align", "declared_alignas", "padding_before", "fields"}
    assert (f["name"], f["offset"], f["size"], f["declared_alignas"]) == ("smem_A", 0, 32768, 1024)
    assert doc["tma_transaction_bytes"]["total"] == 18432
    assert doc["tma_transaction_bytes"]["expressions"]["total"]["line"] > 0
    assert doc["headroom_bytes"] == 101376 - 84992 and doc["fits"] is True
    # --format json is --json
    assert main(["layout", "--cutlass", "flashinfer-python==0.7.2.post1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel"]["size"] == 84992


@pytest.mark.network
def test_does_not_compile_exits_3_and_prints_no_size(capsys):
    code = main(["layout", "--cutlass", "flashinfer-python==0.7.2.post1", "--tile", "128x256x256"])
    out = capsys.readouterr().out
    assert code == 3
    assert "Stages set to value 2 or more" in out
    assert "sm120_blockscaled_mma_array_tma.hpp" in out
    assert "Total" not in out and "Stages:" not in out


@pytest.mark.network
def test_does_not_compile_json(capsys):
    code = main(["layout", "--cutlass", "flashinfer-python==0.7.2.post1", "--tile", "128x256x256", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3
    assert doc["kernel"] is None and doc["stages"] is None and doc["headroom_bytes"] is None
    assert doc["error"]["kind"] == "static_assert"
    assert doc["error"]["file"] == "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"


@pytest.mark.network
def test_check_exits_1_over_capacity(capsys):
    # tests/handed.md section B: 2 stages, 111616 B > 101376
    argv = [
        "layout",
        "--cutlass",
        "flashinfer-python==0.7.2.post1",
        "--kernel",
        "dense",
        "--a",
        "mxfp8",
        "--b",
        "mxfp8",
        "--tile",
        "256x128x128",
        "--stages",
        "2",
    ]
    assert main(argv + ["--check"]) == 1
    out, err = capsys.readouterr()
    assert "111616" in out and "over capacity by 10240" in out
    assert err.splitlines()[-1] == (
        "check failed: the kernel's SharedStorage is 111616 B, over the 101376 B capacity by 10240 B"
    )
    assert main(argv) == 0


@pytest.mark.network
def test_tile_k_in_bytes_is_the_same_config(capsys):
    assert main(["layout", "--cutlass", "flashinfer-python==0.7.2.post1", "--tile", "128x128x64B", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"]["tile"] == [128, 128, 128]
    assert doc["kernel"]["size"] == 84992


def test_binary_user_header_is_bad_input(capsys):
    assert main(["layout", "--header", "/bin/ls", "--type", "X"]) == 2
    err = capsys.readouterr().err
    assert "not a text header" in err or "binary file" in err


def test_empty_user_header_is_bad_input(tmp_path, capsys):
    """An empty header declares nothing: exit 2 before any CUTLASS is fetched or compiled
    (``scan`` says "empty file" too)."""
    empty = tmp_path / "empty.h"
    empty.write_text("\n  \n")
    assert main(["layout", "--header", str(empty), "--type", "X"]) == 2
    assert capsys.readouterr().err == f"error: {empty} is an empty file: it declares no type (nothing to lay out)\n"


def test_incomplete_tree_is_bad_input(tmp_path, capsys):
    inc = tmp_path / "include" / "cutlass"
    inc.mkdir(parents=True)
    (inc / "version.h").write_text("#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n")
    assert main(["layout", "--cutlass", str(tmp_path), "--no-budget"]) == 2
    assert "has no cute/tensor.hpp (a CUTLASS 2.x tree, or an incomplete one)" in capsys.readouterr().err


def _help(*argv) -> str:
    from click.testing import CliRunner

    from cutlass_layout.cli import cli

    res = CliRunner().invoke(cli, [*argv, "--help"], prog_name="cutlass-layout", terminal_width=1000)
    assert res.exit_code == 0
    return res.output


def _option_help(text: str, flag: str) -> str:
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(flag + " "))
    return line.split(None, 2)[2]


def test_audit_help_lists_exactly_what_is_accepted():
    """SRC is optional (--merge takes the shards' files instead); the filters list the values a
    filter takes (never layout's defaults: --b and --d take --a's kinds, --d void too), the arch
    the archs an audit takes, and the flags that filter nothing (refused) are not listed."""
    import re

    from cutlass_layout.commands.audit import AUDIT_ARCHS, ELEMENT_BITS, OUTPUTS
    from cutlass_layout.subjects.config import KERNELS

    text = _help("audit")
    assert "Usage: cutlass-layout audit [OPTIONS] [SRC | --merge FILE...]" in text
    for flag in ("--kernel", "--a", "--b", "--tile", "--cluster", "--stages", "--d", "--schedule", "--arch"):
        assert "default" not in _option_help(text, flag).replace("(default)", ""), flag

    def listed(flag):  # the values after "...: " up to the sentence's end, asides dropped
        part = re.search(r"(?:is this|kernel): ([^.]*)\.", _option_help(text, flag)).group(1)
        return re.split(r",\s*|\s+or\s+", re.sub(r"\s*\([^)]*\)", "", part))

    assert listed("--a") == list(ELEMENT_BITS)
    assert "(a kind --a takes)" in _option_help(text, "--b")
    assert "(a kind --a takes, or void)" in _option_help(text, "--d") and list(OUTPUTS) == [*ELEMENT_BITS, "void"]
    assert listed("--kernel") == list(KERNELS)
    assert re.findall(r"sm\d+", re.sub(r"\([^)]*\)", "", _option_help(text, "--arch"))) == list(AUDIT_ARCHS)
    for flag in ("--c", "--preset", "--epilogue-schedule", "--scales"):
        assert not any(ln.strip().startswith(flag + " ") for ln in text.splitlines()), flag


def test_audit_arch_error_offers_only_what_it_takes(capsys):
    import re

    from cutlass_layout.commands.audit import AUDIT_ARCHS

    assert main(["audit", "/no/such/install", "--arch", "sm110"]) == 2  # before the install is read
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: arch 'sm110': an audit takes")
    offered = re.findall(r"sm\d+", re.sub(r"\([^)]*\)", "", err.split("takes", 1)[1]))  # asides dropped
    assert offered == list(AUDIT_ARCHS) and "sm110" not in offered
    for arch in offered:  # and each it offers is taken: it gets as far as the install
        assert main(["audit", "/no/such/install", "--arch", arch]) == 2
        assert "does not exist" in capsys.readouterr().err
