"""The CI gate: ``audit --format github`` (GitHub Actions annotations), a flashinfer git
checkout as SRC, and the pre-commit hook of ``.pre-commit-hooks.yaml``.

Offline: the mini flashinfer of tests/test_audit.py (its sizes by hand there, ``mini_sizes``;
its generator, ``jit/gemm/cutlass/generate_kernels.py``, writes 3 lines and then 4 lines per
tactic, so tactic i of its ``OPS`` is instantiated at line 4 + 4 i). With the package index:
flashinfer 0.7.2.post1, whose four FINALIZE 128x256x64B/256x128x64B NVFP4 tactics are
102400 B, 3 stages, 1024 B over the 101376 B of SM120 (shared/cases/handed.md section E,
nvcc: tests/test_audit_nvcc.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cutlass_layout.cli import main
from cutlass_layout.commands.audit import audit
from cutlass_layout.reports.audit import github_command, github_data, github_property
from cutlass_layout.sources import checkout_path, resolve_flashinfer
from test_audit import CAPACITY, MINI, messages, mini_sizes
from test_readme import parse

HOOKS = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"
INL = "csrc/nv_internal/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/launchers/moe_gemm_tma_ws_launcher.inl"


@pytest.fixture
def mini(tmp_path, monkeypatch):
    """A copy of the miniature install, and a private cache."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    dest = tmp_path / "site-packages"
    shutil.copytree(MINI, dest)
    return dest


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` that holds ``text`` first."""
    return 1 + next(i for i, ln in enumerate(path.read_text().split("\n")) if text in ln)


def test_escapes_are_the_toolkits():
    """actions/toolkit packages/core/src/command.ts: escapeData turns % CR LF into %25 %0D
    %0A; escapeProperty also : and , into %3A %2C."""
    assert github_data("50%\r\nnext: a, b") == "50%25%0D%0Anext: a, b"
    assert github_property("50%\r\nnext: a, b") == "50%25%0D%0Anext%3A a%2C b"
    assert github_command("error", "m: 1%", file="a,b.h", line=7, title="t: x") == \
        "::error file=a%2Cb.h,line=7,title=t%3A x::m: 1%25"
    assert github_command("notice", "plain") == "::notice::plain"


def test_install_paths_as_the_checkouts():
    """build_backend.py's _create_data_dir: data/{cutlass,spdlog,cccl} are 3rdparty/*,
    data/{csrc,include} the repo's own; the rest of the package is flashinfer/."""
    assert checkout_path("data/csrc/nv_internal/x.inl") == "csrc/nv_internal/x.inl"
    assert checkout_path("data/include/flashinfer/gemm/a.h") == "include/flashinfer/gemm/a.h"
    assert checkout_path("data/cutlass/include/cutlass/arch/arch.h") == "3rdparty/cutlass/include/cutlass/arch/arch.h"
    assert checkout_path("data/csrcx/y") == "flashinfer/data/csrcx/y"
    assert checkout_path("jit/fused_moe.py") == "flashinfer/jit/fused_moe.py"


def test_mini_github_annotations(mini, capsys):
    """One ::error per tactic --check fails on, at the launcher's kernel alias in the repo's
    layout; a ::warning for the tactic that does not compile; the summary; exit 1 with
    --check (the stderr lines as without --format github), 0 without."""
    inl = MINI / "flashinfer/data/csrc/nv_internal/launchers/mini_launcher.inl"
    alias = _line_of(inl, "using GemmKernel")
    assert_line = _line_of(MINI / "flashinfer/data/cutlass/include/cutlass/gemm/kernel/gemm_universal.hpp",
                           "The tile's K must be positive.")
    over = mini_sizes(256, 128, 64, 5, 4096)[2]  # 129024, 5 stages (test_audit.py)
    gen = "cutlass_instantiations/120/gemm_grouped/120/mini_moe_sm120_group0.generated.cu"
    big, bad = "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize", "moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none"
    where = f"file=csrc/nv_internal/launchers/mini_launcher.inl,line={alias}"
    assert main(["audit", str(mini), "--format", "github", "--check"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"::error {where},title=cutlass-layout%3A over capacity by {over - CAPACITY} B%3A {big}::"
        f"{big}: SharedStorage {over} B, over the {CAPACITY} B sm120 capacity by {over - CAPACITY} B "
        f"(tried by the runtime; 5 stages); instantiated in the JIT's generated {gen}:{4 + 4 * 2}",
        f"::warning {where},title=cutlass-layout%3A does not compile%3A {bad}::{bad}: does not compile: "
        f"static_assert failed: The tile's K must be positive. (cutlass/gemm/kernel/gemm_universal.hpp:"
        f"{assert_line}); instantiated in the JIT's generated {gen}:{4 + 4 * 3}",
        "cutlass-layout audit: flashinfer-python 0.0.1+mini (directory " + str(mini) + "), sm120: "
        "1 over capacity (1 of them tried by the runtime), 0 exact fits, 1 do not compile, 7 fit",
    ]
    lines = messages(err).splitlines()
    assert lines == [f"check: {big}: {over} B, over the {CAPACITY} B capacity by {over - CAPACITY} B "
                     "(tried by the runtime)",
                     "check failed: 1 tactic(s) the runtime would try are over capacity on sm120"]
    # without --check: the same annotations, exit 0; a family with nothing to say: the summary only
    assert main(["audit", str(mini), "--format", "github"]) == 0
    assert capsys.readouterr().out == out
    assert main(["audit", str(mini), "--format", "github", "--family", "gemm_sm120", "--check"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "cutlass-layout audit: flashinfer-python 0.0.1+mini (directory " + str(mini) + "), sm120: "
        "0 over capacity (0 of them tried by the runtime), 0 exact fits, 0 do not compile, 1 fit"]
    assert main(["audit", str(mini), "--format", "github", "--json"]) == 2
    assert "give one output format, not github and json" in capsys.readouterr().err


def _checkout_of(install_root: Path, dest: Path) -> Path:
    """A flashinfer-ai/flashinfer checkout's layout made from an unpacked install (copies):
    flashinfer/data/{csrc,include} -> csrc, include; data/{cutlass,spdlog,cccl} ->
    3rdparty/*; the rest of the package -> flashinfer/ (without data/); version.txt."""
    (dest / "3rdparty").mkdir(parents=True)
    for part, there in (("csrc", "csrc"), ("include", "include"), ("cutlass", "3rdparty/cutlass"),
                        ("spdlog", "3rdparty/spdlog"), ("cccl", "3rdparty/cccl")):
        if (install_root / "data" / part).is_dir():
            shutil.copytree(install_root / "data" / part, dest / there)
    shutil.copytree(install_root, dest / "flashinfer", ignore=lambda d, names:
                    ["data"] if Path(d) == install_root else [])
    return dest


def test_a_checkout_without_its_submodules_is_refused(mini, tmp_path, capsys):
    """A clone without --recursive: one error line, exit 2, nothing written into it."""
    co = _checkout_of(mini / "flashinfer", tmp_path / "checkout")
    shutil.rmtree(co / "3rdparty" / "cutlass")
    (co / "3rdparty" / "cutlass").mkdir()
    before = sorted(str(p) for p in co.rglob("*"))
    assert main(["audit", str(co)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the flashinfer checkout at ") and "3rdparty/cutlass/include" in err
    assert len(err.splitlines()) == 1 and sorted(str(p) for p in co.rglob("*")) == before


def test_mini_checkout_audits_as_the_install(mini, tmp_path):
    """The mini reshaped as a checkout: the same tactics and numbers as the install (by hand:
    test_audit.py), its version from version.txt, nothing written into the checkout."""
    co = _checkout_of(mini / "flashinfer", tmp_path / "checkout")
    (co / "flashinfer" / "_build_meta.py").unlink(missing_ok=True)
    (co / "version.txt").write_text("0.0.2\n")
    before = {str(p.relative_to(co)): p.stat().st_mtime_ns for p in co.rglob("*")}
    res = audit(str(co), jobs=1)
    assert {str(p.relative_to(co)): p.stat().st_mtime_ns for p in co.rglob("*")} == before
    assert res.provenance["version"] == "0.0.2" and res.provenance["origin"] == f"checkout {co}"
    by = {t.id: t for t in res.tactics}
    assert by["moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize"].kernel_bytes == mini_sizes(256, 128, 64, 5, 4096)[2]
    assert by["moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"].kernel_bytes == mini_sizes(128, 64, 32, 3, 4096)[2]
    assert res.capacity_bytes == CAPACITY and len(res.tactics) == 9
    # the cached answer the second time; a new file in the checkout's package is linked in
    assert audit(str(co), jobs=1).stats["parsed"] == 0
    (co / "flashinfer" / "new_module.py").write_text("X = 1\n")
    assert (resolve_flashinfer(str(co)).root / "new_module.py").read_text() == "X = 1\n"


# -------------------------------------------------------------------------------------------
# flashinfer 0.7.2.post1 (network: the wheel, cached after the first run)
FINALIZE = [f"moe/CtaShape{t}/nvfp4xnvfp4/{o}/finalize" for t in ("128x256x64B", "256x128x64B")
            for o in ("bf16", "f16")]


def _errors_072(out: str, install_root: Path, generated_root: Path, origin: str) -> None:
    """The four FINALIZE tactics' ::error lines, exactly (handed.md E's numbers), each at the
    launcher's ``using GemmKernel`` line in the repo's layout, each naming a generated line
    that instantiates the launcher macro with its tile."""
    alias = _line_of(install_root / "data" / INL, "using GemmKernel =")
    errors = [ln for ln in out.splitlines() if ln.startswith("::error ")]
    assert len(errors) == 4
    for line, tid in zip(errors, FINALIZE):
        head = (f"::error file={INL},line={alias},title=cutlass-layout%3A over capacity by 1024 B%3A {tid}::"
                f"{tid}: SharedStorage 102400 B, over the 101376 B sm120 capacity by 1024 B "
                f"(tried by the runtime; 3 stages); instantiated in the JIT's generated ")
        assert line.startswith(head)
        gen, n = re.fullmatch(r"(.+\.generated\.cu):(\d+)", line[len(head):]).groups()
        text = (generated_root / gen).read_text().split("\n")[int(n) - 1]
        m, nn = tid.split("CtaShape")[1].split("x")[:2]
        assert "INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM" in text and "FINALIZE" in text
        assert f"{m}, {nn}, 128" in text  # the cute tile, K in elements (64 B of FP4)
    assert out.splitlines()[-1].startswith(f"cutlass-layout audit: flashinfer-python 0.7.2.post1 ({origin}")
    assert ", sm120: 4 over capacity (4 of them tried by the runtime), " in out.splitlines()[-1]


@pytest.mark.network
def test_072_github_annotations(capsys):
    res = audit("flashinfer-python==0.7.2.post1", family="moe")
    assert main(["audit", "flashinfer-python==0.7.2.post1", "--family", "moe", "--arch", "sm120",
                 "--check", "--format", "github"]) == 1
    out, err = capsys.readouterr()
    _errors_072(out, Path(res.provenance["root"]), Path(res.provenance["generated_root"]),
                "flashinfer-python==0.7.2.post1 (")
    assert [ln.split(": ")[1] for ln in messages(err).splitlines()[:4]] == FINALIZE


@pytest.mark.network
def test_072_checkout_audits_as_the_wheel(tmp_path, capsys, monkeypatch):
    """flashinfer 0.7.2.post1 reshaped as a git checkout (the wheel's parts where the repo
    keeps them): its MoE audit gives the wheel's 88 tactics (generate_kernels.py's SM120 list:
    8 FP4 and 3 FP8 x FP4 tiles x {NONE, FINALIZE} x swap_ab x {f16, bf16}), the four FINALIZE
    ones over by 1024 B, and `audit . --check --format github` run in the checkout fails on
    them with annotations on csrc/..."""
    install = resolve_flashinfer("flashinfer-python==0.7.2.post1").root
    co = _checkout_of(install, tmp_path / "flashinfer")
    (co / "version.txt").write_text("0.7.2.post1\n")
    before = sorted(p.name for p in co.iterdir()) + sorted(p.name for p in (co / "flashinfer").iterdir())
    res = audit(str(co), family="moe")
    assert len(res.tactics) == (8 + 3) * 2 * 2 * 2 == 88
    assert [t.id for t in res.tactics if t.verdict == "over_capacity"] == FINALIZE
    assert all(t.kernel_bytes == 102400 and t.headroom_bytes == -1024 and t.stages == 3
               for t in res.tactics if t.verdict == "over_capacity")
    assert sorted(p.name for p in co.iterdir()) + sorted(p.name for p in (co / "flashinfer").iterdir()) == before
    assert not (co / "flashinfer" / "data").exists() and not list(co.rglob("__pycache__"))
    # the README's CI step, run in the checkout (the cached answer: the same checkout)
    monkeypatch.chdir(co)
    assert main(["audit", ".", "--arch", "sm120", "--family", "moe", "--check", "--format", "github"]) == 1
    out = capsys.readouterr().out
    _errors_072(out, install, Path(res.provenance["generated_root"]), "checkout .)")
    assert res.provenance["version"] == "0.7.2.post1"
