"""audit's child process is a sandbox: the install's generator code runs there scrubbed and bounded.

Offline: each test writes a tiny stand-in flashinfer into tmp_path, shaped as the harness
(``_flashinfer_harness.py``) reads one: ``compilation_context.py``, ``jit/core.py`` and
``jit/env.py`` for the constants, a CUTLASS tree under ``data/cutlass/include``, and one
builder, ``flashinfer.jit.probe.gen_gemm_sm120_cutlass_module`` (named as
:func:`cutlass_layout.sources.flashinfer_jit.arch_builders` finds builders: ``gen_``, ``sm120``, code naming
CUTLASS and a GEMM), whose body is each test's hostile code. What the builder saw comes back
through ``gen_jit_spec``: a ``-DSEEN=<json>`` flag of the module it records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_sources import make_tree

from cutlass_layout import BadInput
from cutlass_layout.cli import main
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.sources import flashinfer_jit
from cutlass_layout.sources.flashinfer_jit import jit_modules
from cutlass_layout.sources.flashinfer import resolve_flashinfer

#: What the child's environment may hold: what flashinfer_jit.child_env passes, the harness's
#: own FLASHINFER_DISABLE_JIT, and LC_CTYPE, which Python sets itself under a C locale (PEP 538)
ALLOWED_ENV = {
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "CUTLASS_LAYOUT_CACHE",
    "TMPDIR",
    "PYTHONPATH",
    "FLASHINFER_DISABLE_JIT",
    "LC_CTYPE",
}

#: Records what the builder sees: its environment, cwd, stdin, temporary folder; then writes a
#: file into its cwd and one through ``tempfile`` (both must go with the scratch folder)
PROBE = """
    import json, os, sys, tempfile
    seen = {"env": sorted(os.environ), "secret": os.environ.get("CUTLASS_LAYOUT_TEST_SECRET"),
            "github": os.environ.get("GITHUB_TOKEN"), "aws": os.environ.get("AWS_SECRET_ACCESS_KEY"),
            "cwd": os.getcwd(), "stdin": sys.stdin.read(), "tmp": tempfile.gettempdir()}
    with open("left_behind.txt", "w") as f:
        f.write("x")
    tempfile.NamedTemporaryFile(delete=False).close()
    return gen_jit_spec("probe_sm120", [], extra_cuda_cflags=["-DSEEN=" + json.dumps(seen)])
"""


def fake_install(site: Path, body: str) -> Path:
    """A stand-in flashinfer under ``site`` whose one builder runs ``body`` (indented code)."""
    root = site / "flashinfer"
    make_tree(root / "data" / "cutlass" / "include", (4, 5, 0))
    (root / "data" / "csrc").mkdir(parents=True)
    (root / "__init__.py").write_text("raise RuntimeError('the harness never runs this')\n")
    (root / "_build_meta.py").write_text('__version__ = "0.0.1+sandbox"\n')
    (root / "compilation_context.py").write_text("class CompilationContext:\n    COMMON_NVCC_FLAGS = []\n")
    jit = root / "jit"
    jit.mkdir()
    (jit / "__init__.py").write_text("")
    (jit / "core.py").write_text("def gen_jit_spec(name, sources, **kwargs):\n    raise RuntimeError\n")
    (jit / "env.py").write_text('FLASHINFER_CSRC_DIR = _package_root / "data" / "csrc"\n')
    (jit / "probe.py").write_text(
        "from .core import gen_jit_spec\n\n\n"
        "def gen_gemm_sm120_cutlass_module():\n"
        "    # builds a CUTLASS GEMM (what arch_builders() looks for)\n" + body
    )
    return site


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(path))
    return path


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """The user's cwd while the test runs: nothing may be written there."""
    path = tmp_path / "cwd"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def audit_error(capsys, site: Path) -> str:
    """``cutlass-layout audit SITE``: exit 2, exactly one ``error:`` line, no traceback."""
    code = main(["audit", str(site), "--jobs", "1"])
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_the_child_sees_a_scrubbed_environment_closed_stdin_and_a_scratch_cwd(tmp_path, cache, workdir, monkeypatch):
    """(a) variables set here are absent there (only ALLOWED_ENV are); (d) stdin reads EOF at
    once; (e) its cwd and TMPDIR are one scratch folder under the cache, removed after, and
    nothing is written into the install or the user's cwd."""
    monkeypatch.setenv("CUTLASS_LAYOUT_TEST_SECRET", "hunter2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not_a_real_token")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-key")
    site = fake_install(tmp_path / "site-packages", PROBE)
    before = _files(site)
    (mod,) = jit_modules(resolve_flashinfer(str(site)), use_cache=False).modules
    (flag,) = [d for d in mod.defines if d.startswith("-DSEEN=")]
    seen = json.loads(flag[len("-DSEEN=") :])

    assert seen["secret"] is None and seen["github"] is None and seen["aws"] is None
    assert set(seen["env"]) <= ALLOWED_ENV, set(seen["env"]) - ALLOWED_ENV
    assert {"PATH", "HOME", "CUTLASS_LAYOUT_CACHE"} <= set(seen["env"])
    assert seen["stdin"] == ""

    runs = (cache / "generator-runs").resolve()
    cwd = Path(seen["cwd"])
    assert cwd.parent == runs and Path(seen["tmp"]) == cwd
    assert not cwd.exists() and list(runs.iterdir()) == []  # the scratch folder went, with what it held
    assert _files(site) == before  # nothing written into the install (no __pycache__ either)
    assert list(workdir.iterdir()) == []


def test_a_generator_that_loops_forever_runs_past_its_cpu_limit(tmp_path, cache, workdir, monkeypatch, capsys):
    """(b) ``while True: pass`` under a 2 s CPU limit: exit 2, one line naming the limit. The
    wall-clock timeout is lowered too, only so that a broken limit fails the test in a minute."""
    monkeypatch.setenv("CUTLASS_LAYOUT_GENERATOR_CPU_S", "2")
    monkeypatch.setattr(flashinfer_jit, "HARNESS_TIMEOUT", 60)
    site = fake_install(tmp_path / "site-packages", "    while True:\n        pass\n")
    line = audit_error(capsys, site)
    assert "the install's generator" in line and "ran past its CPU-time limit of 2 s" in line, line
    assert "CUTLASS_LAYOUT_GENERATOR_CPU_S" in line
    assert list((cache / "generator-runs").iterdir()) == [] and list(workdir.iterdir()) == []


def test_a_generator_that_catches_sigxcpu_is_still_stopped(tmp_path, cache, monkeypatch):
    """Code that ignores SIGXCPU (the soft limit's signal) meets the hard limit's SIGKILL;
    through the library: BadInput naming the CPU limit."""
    monkeypatch.setenv("CUTLASS_LAYOUT_GENERATOR_CPU_S", "1")
    monkeypatch.setattr(flashinfer_jit, "HARNESS_TIMEOUT", 60)
    body = "    import signal\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    while True:\n        pass\n"
    install = resolve_flashinfer(str(fake_install(tmp_path / "site-packages", body)))
    with pytest.raises(BadInput, match="ran past its CPU-time limit of 1 s"):
        jit_modules(install, use_cache=False)


def test_a_generator_that_allocates_without_end_runs_out_of_its_memory_limit(tmp_path, cache, monkeypatch, capsys):
    """(c) endless allocation under a 512 MB address-space limit: exit 2, one line naming it.
    The blocks are ``bytes(n)``, calloc'd and never touched: were the limit broken, they would
    take address space, not the machine's memory (the CPU limit, lowered, ends them then)."""
    monkeypatch.setenv("CUTLASS_LAYOUT_GENERATOR_MEMORY_MB", "512")
    monkeypatch.setenv("CUTLASS_LAYOUT_GENERATOR_CPU_S", "20")
    body = "    hoard = []\n    while True:\n        hoard.append(bytes(1 << 26))\n"
    site = fake_install(tmp_path / "site-packages", body)
    line = audit_error(capsys, site)
    assert "ran out of its 512 MB address-space limit" in line, line
    assert "CUTLASS_LAYOUT_GENERATOR_MEMORY_MB" in line
    with pytest.raises(BadInput, match="ran out of its 512 MB address-space limit"):
        jit_modules(resolve_flashinfer(str(site)), use_cache=False)


def test_a_generator_that_blocks_times_out(tmp_path, cache, monkeypatch, capsys):
    """A builder that waits forever without using CPU (reading a pipe nobody writes) meets the
    wall-clock timeout, lowered to 1 s: exit 2, one line."""
    monkeypatch.setattr(flashinfer_jit, "HARNESS_TIMEOUT", 1)
    body = "    import os\n    r, w = os.pipe()\n    os.read(r, 1)\n"
    line = audit_error(capsys, fake_install(tmp_path / "site-packages", body))
    assert "the install's generator" in line and "timed out after 1 s" in line, line
    assert list((cache / "generator-runs").iterdir()) == []


@pytest.mark.parametrize(
    "body,words",
    [
        (
            "    import os, sys\n    sys.stderr.write('first\\nthe last words\\n')\n    sys.stderr.flush()\n"
            "    os._exit(7)\n",
            "failed: the last words",
        ),
        ("    import os\n    os.write(1, b'not json')\n    os._exit(0)\n", "failed: it wrote no answer"),
        ("    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)\n", "failed: killed by SIGSEGV"),
    ],
    ids=["exit-status", "garbage-answer", "signal"],
)
def test_a_generator_that_dies_fails_in_one_line(tmp_path, cache, capsys, body, words):
    line = audit_error(capsys, fake_install(tmp_path / "site-packages", body))
    assert "the install's generator" in line and words in line, line


@pytest.mark.parametrize(
    "name,value", [("CUTLASS_LAYOUT_GENERATOR_CPU_S", "0"), ("CUTLASS_LAYOUT_GENERATOR_MEMORY_MB", "lots")]
)
def test_a_bad_limit_is_one_line(tmp_path, cache, monkeypatch, capsys, name, value):
    monkeypatch.setenv(name, value)
    line = audit_error(capsys, fake_install(tmp_path / "site-packages", PROBE))
    assert f"{name}={value!r}" in line and "positive whole number" in line, line


def test_the_child_environment_is_built_from_nothing(tmp_path, cache, monkeypatch):
    """child_env passes named variables only: an arbitrary one set here is not there."""
    monkeypatch.setenv("HF_TOKEN", "hf_not_real")
    monkeypatch.setenv("SOME_PROJECT_VARIABLE", "1")
    env = flashinfer_jit.child_env(tmp_path)
    assert set(env) <= ALLOWED_ENV and env["TMPDIR"] == str(tmp_path)
    assert env["CUTLASS_LAYOUT_CACHE"] == str(cache) and env["PATH"] == os.environ["PATH"]


def test_docs_state_the_sandbox_and_its_default_bounds():
    """The figures written in ``audit``'s reference (docs/commands/audit.md) and its guide
    (docs/guides/audit.md) are
    the module's defaults; ``audit --help`` says the sandbox is there."""
    from test_cli import _help

    f = flashinfer_jit
    assert "sandboxed child" in " ".join(_help("audit").split())
    root = Path(__file__).resolve().parent.parent
    page = " ".join((root / "docs" / "commands" / "audit.md").read_text().replace("`", "").split())
    readme = " ".join((root / "docs" / "guides" / "audit.md").read_text().split())
    for text in (page, readme):
        assert "sandboxed child" in text and "stdin closed" in text.replace("stdin is closed", "stdin closed")
        assert f"{f.GENERATOR_CPU_S} s of CPU" in text and f"{f.GENERATOR_MEMORY_MB} MB" in text
        assert f"{f.HARNESS_TIMEOUT} s timeout" in text
        assert f.CPU_ENV in text and f.MEMORY_ENV in text


@pytest.mark.parametrize(
    "text, runs",
    [
        ('"""Tactic names."""\nfrom typing import Final\n\nCONFIGS: Final[tuple[str, ...]] = ("A", "B")\n', True),
        ('from __future__ import annotations\nimport typing\nN = 3\nM = {"a": [1, -2.0]}\n', True),
        ('CONFIGS = tuple(["A", "B"])\n', False),  # a call
        ('import os\nCONFIGS = ("A",)\n', False),  # an import other than typing
        ("from .other import X\n", False),  # a relative import
        ("def f():\n    pass\n", False),
        ('for c in "ab":\n    pass\n', False),
        ("x.y = 1\n", False),  # an attribute assignment
        ("CONFIGS = (\n", False),  # does not parse
    ],
)
def test_a_data_only_flashinfer_module_runs_from_the_install_and_nothing_else_does(tmp_path, text, runs):
    """The harness runs a flashinfer module from the install when it holds data only (0.7.4's
    ``jit/gemm/svdquant_sm120_configs.py``: a docstring, ``from typing import Final`` and one
    tuple of 31 names): a docstring, ``typing``/``__future__`` imports and literal assignments,
    nothing else."""
    from cutlass_layout.sources._flashinfer_harness import data_only

    path = tmp_path / "m.py"
    path.write_text(text)
    assert data_only(path) is runs
    assert data_only(tmp_path / "absent.py") is False
