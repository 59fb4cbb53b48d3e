"""``audit --verify nvcc``: a sample of an audit's tactics compiled by nvcc, every number compared.

The real check runs nvcc once (flashinfer 0.7.2.post1, SM120 MoE, ``--sample 2``: one source,
one unit); the CLI's agreement and disagreement lines reuse what that nvcc run printed. The
numbers nvcc must compute are by hand from the headers (README, tests/test_fixes.py): the
FINALIZE 128x256x64B tactics' kernel SharedStorage 102400 B, mainloop 83968 B, epilogue
17408 B (the scatter epilogue's smem), 3 stages.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import stat

import pytest

from cutlass_layout import api
from cutlass_layout.checks.nvcc_probe import blank_statements
from cutlass_layout.cli import main
from cutlass_layout.commands import audit_nvcc

SPEC = "flashinfer-python==0.7.2.post1"
#: by hand (tests/test_fixes.py): A 128x128 e2m1 8192 + B 256x128 16384 + 128 (pipeline) +
#: SFA 1024 + SFB 2048 = 27776 B a stage, 3 stages = 83328, rounded up to the 1024-byte
#: alignment of smem_A's tensor storage: 83968; the FINALIZE epilogue 17408; the kernel 102400
FINALIZE = (102400, 83968, 17408, 3)
OVER = ["moe/CtaShape128x256x64B/nvfp4xnvfp4/f16/finalize", "moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize"]


def test_blank_statements_keeps_lines_and_the_rest():
    text = (
        '#include "x.h"\nnamespace n {\n#if 1\n    CALL(a, b,\n         c);\n#endif\n'
        "    CALL(d,\n         e);\ntemplate void f<int>(\n    int);\n}\n"
    )
    out = blank_statements(text, [4, 10])  # a call's first line; an instantiation's second
    assert out.count("\n") == text.count("\n") and len(out) == len(text)
    lines = out.split("\n")
    assert lines[3].strip() == "" and lines[4].strip() == "" and lines[6] == "    CALL(d,"
    assert lines[8].strip() == "" and lines[9].strip() == "" and lines[10] == "}"
    assert lines[2] == "#if 1" and lines[5] == "#endif"


def test_what_is_said_when_nothing_was_compared():
    from cutlass_layout.model import AuditVerification

    assert AuditVerification().lines() == ["nvcc compared no tactic: the audit shows no tactic that compiles"]
    v = AuditVerification(not_verified=["gemm_sm120 (why)"])
    assert (
        v.lines() == ["nvcc compared no tactic: none could be verified (below)", "not verified: gemm_sm120 (why)"]
        and v.agree
    )
    assert audit_nvcc.spread(list(range(10)), 4) == [0, 3, 6, 9] and audit_nvcc.spread([1, 2], 4) == [1, 2]


def test_nvcc_missing_or_unusable_is_one_error_line(tmp_path, monkeypatch, capsys, mini):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc on it
    assert main(["audit", str(mini), "--verify", "nvcc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: verifying with nvcc needs nvcc: nvcc is not on PATH"]
    assert main(["audit", str(mini), "--verify", "nvcc", "--cuda-path", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: verifying with nvcc needs nvcc: the CUDA at {tmp_path / 'none'} (cuda_path) has no bin/nvcc"
    ]
    # the CUDA header wheels have no nvcc: PATH's is asked
    assert main(["audit", str(mini), "--verify", "nvcc", "--cuda-path", "pip"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: verifying with nvcc needs nvcc: nvcc is not on PATH"
    ]
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'nvcc fatal   : broken install' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert main(["audit", str(mini), "--verify", "nvcc"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: nvcc at {fake} does not run: nvcc fatal   : broken install"
    ]
    assert main(["audit", str(mini), "--sample", "2"]) == 2
    assert "give --verify nvcc too" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# flashinfer 0.7.2.post1 against nvcc (one unit)


@pytest.fixture(scope="module")
def verified():
    """The SM120 MoE audit, its ``--sample 2`` checked by nvcc (one run), and what nvcc's
    unit printed (each unit's ``(numbers, messages)``, to replay through the CLI)."""
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the nvcc cross-check needs it")
    res = api.audit(SPEC, family="moe")
    answers = []
    real = audit_nvcc.run_unit

    def spy(unit, nvcc):
        answers.append(real(unit, nvcc))
        return answers[-1]

    audit_nvcc.run_unit = spy
    try:
        v = api.verify_audit(res, SPEC, sample=2)
    finally:
        audit_nvcc.run_unit = real
    return res, v, answers


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_sm120_moe_sample_against_nvcc(verified):
    res, v, answers = verified
    # the default sample: every over-capacity (4) and exact-fit (12) tactic, 4 of the 72 that fit
    default = audit_nvcc.sample_tactics(res.tactics)["moe"]
    assert [t.verdict for t in default] == ["over_capacity"] * 4 + ["exact_fit"] * 12 + ["fits"] * 4
    assert sorted(v.compared) == sorted(OVER) and v.agree and v.not_verified == []
    assert (v.families, v.sources, v.units) == (1, 1, 1)
    assert v.lines() == ["nvcc agrees on 2 of 2 tactics (1 family, 1 source)"]
    ((got, _),) = answers
    ((source, lines),) = got.items()
    assert source.name == "cutlass_kernel_file_gemm_grouped_sm120_M128_BS_group6.generated.cu"
    # only the two sampled launchers were left in the unit: nvcc shows just them
    assert sorted(lines.values()) == [FINALIZE, FINALIZE]
    assert sorted(lines) == sorted(t.line for t in res.tactics if t.id in OVER)


def _replayed(monkeypatch, res, answers):
    """The CLI's audit gives ``res``, and its nvcc units what the real run printed."""
    monkeypatch.setattr(api, "audit", lambda *a, **k: res)
    replay = iter(answers)
    monkeypatch.setattr(audit_nvcc, "run_unit", lambda unit, nvcc: next(replay))


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_cli_agreement_and_a_disagreement(verified, monkeypatch, capsys):
    res, _, answers = verified
    _replayed(monkeypatch, res, answers)
    argv = ["audit", SPEC, "--family", "moe", "--verify", "nvcc", "--sample", "2"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nvcc agrees on 2 of 2 tactics (1 family, 1 source)"
    _replayed(monkeypatch, res, answers)
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["verification"]
    assert doc["agree"] and sorted(doc["compared"]) == sorted(OVER) and (doc["sources"], doc["units"]) == (1, 1)
    # the audit's number changed: nvcc's stays, so they disagree (exit 4), one line
    wrong = copy.deepcopy(res)
    t = next(t for t in wrong.tactics if t.id == OVER[1])
    kernel = dataclasses.replace(t.report.kernel, size=t.report.kernel.size + 1024)
    t.report = dataclasses.replace(t.report, kernel=kernel)
    t.numbers = t.report.numbers()  # a Tactic's numbers are its report's, computed once
    _replayed(monkeypatch, wrong, answers)
    assert main(argv) == 4
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "nvcc agrees on 1 of 2 tactics (1 family, 1 source)",
        f"nvcc disagrees: {OVER[1]}: audit (kernel, mainloop, epilogue, stages) = "
        f"(103424, 83968, 17408, 3), nvcc {FINALIZE}",
    ]


def test_two_kernels_of_one_call_are_told_apart_by_their_alias_lines():
    """nvcc's device front end names, for each number it shows, the source line whose
    instantiation led to it; one macro call can declare two kernels (SM120's dense FP4:
    ``GemmKernelDefault`` and a stream-K one), so the numbers of a header's kernels are keyed
    by that line and the alias line the probe shows (``cl_sizes<K, alias line>``), and
    neither hides the other. The messages are written here in nvcc's shape."""
    from pathlib import Path

    from cutlass_layout.checks.nvcc_probe import shown_by_instantiation

    src = Path("/g/fp4_gemm.cu")
    out = (
        '/i/fp4_gemm_template_sm120.h(273): error: class "cl_show<273, 100UL, 60UL, 30UL, 4>" has no member '
        '"the_sizes_are_in_this_name"\n          detected during:\n            instantiation of class '
        f'"cl_sizes<K, 273, void>" at line 24 of "{src}"\n\n'
        '/i/fp4_gemm_template_sm120.h(290): error: class "cl_show<290, 200UL, 60UL, 30UL, 5>" has no member '
        '"the_sizes_are_in_this_name"\n          detected during:\n            instantiation of class '
        f'"cl_sizes<K, 290, void>" at line 24 of "{src}"\n'
    )
    assert shown_by_instantiation(out, [src], alias_lines=True) == {
        src: {(24, 273): (100, 60, 30, 4), (24, 290): (200, 60, 30, 5)}
    }
    assert shown_by_instantiation(out, [src]) == {src: {24: (200, 60, 30, 5)}}  # one line: the last


def test_a_step_killed_by_a_signal_says_so(tmp_path):
    """A step that dies by a signal (``cicc`` of a large unit killed for memory: bash gives
    128 + N) leaves a line saying so, which :func:`killed` reads; a step that ends by itself
    leaves none."""
    from cutlass_layout.checks.nvcc_probe import run_probe, killed

    out = run_probe("bash -c 'kill -9 $$'", "/bin/true", tmp_path)
    assert killed(out) == "bash was killed by signal 9 (out of memory?)"
    assert killed(run_probe("echo 'x.cu(1): error: y'; exit 2", "/bin/true", tmp_path)) is None


def test_a_step_that_cannot_be_run_says_so(tmp_path):
    """A step bash cannot run (exit status 127: a ``cudafe++`` neither in nvcc's folder nor on
    ``PATH``) leaves a line saying so, which :func:`unanswered` reads (as it reads a kill); the
    folder nvcc's ``--dryrun`` names (``_HERE_``) goes first on the step's ``PATH``."""
    from cutlass_layout.checks.nvcc_probe import run_probe, killed, unanswered

    out = run_probe("no-such-cudafe --x", "/bin/true", tmp_path)
    assert unanswered(out) == "no-such-cudafe could not be run (not found in /bin:/usr/bin)" and killed(out) is None
    tool = tmp_path / "bin" / "cudafe-here"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    out = run_probe("cudafe-here", "/bin/true", tmp_path, here=str(tool.parent))
    assert out == "ran\n" and unanswered(out) is None
    assert (
        unanswered(run_probe("bash -c 'kill -9 $$'", "/bin/true", tmp_path))
        == "bash was killed by signal 9 (out of memory?)"
    )


def test_a_step_not_run_is_not_verified_not_a_disagreement(monkeypatch):
    """Where nvcc's host pass could not run a step (a wrapper ``nvcc`` whose folder has no
    ``cudafe++``), its tactics are "not verified", never "nvcc disagrees": exit 0, not 4."""
    from pathlib import Path
    from types import SimpleNamespace

    from cutlass_layout.checks.nvcc_probe import NOT_RUN
    from cutlass_layout.model import AuditVerification

    a = Path("/g/a.cu")
    ta = SimpleNamespace(id="moe/a", family="moe", kernel_bytes=10, mainloop_bytes=6, epilogue_bytes=3, stages=2)
    msg = f"bash: line 1: cudafe++: command not found\n{NOT_RUN}: cudafe++ could not be run (not found in /w:/usr/bin:/bin)\n"
    monkeypatch.setattr(audit_nvcc, "run_unit", lambda unit, nvcc: ({}, msg))
    out = AuditVerification()
    audit_nvcc.run_units([audit_nvcc.Unit([a], [], [(a, 10, ta)])], "nvcc", 1, out)
    assert out.disagreements == [] and out.agree and out.compared == []
    assert out.not_verified == [
        "1 tactic(s) of moe not compared: nvcc's cudafe++ could not be run (not found in "
        "/w:/usr/bin:/bin) on a unit of 1 source(s)"
    ]
    assert out.lines()[0] == "nvcc compared no tactic: none could be verified (below)"


@pytest.mark.nvcc
def test_an_nvcc_wrapper_in_another_folder_runs_nvccs_own_cudafe(tmp_path):
    """nvcc on ``PATH`` as a wrapper script in a folder with no ``cudafe++`` beside it (as
    ccache-style setups have it): the host pass runs the ``cudafe++`` of nvcc's own folder (its
    ``--dryrun``'s ``_HERE_``), so the source's own error comes back, not "command not found"."""
    import shutil

    from cutlass_layout.checks.nvcc_probe import host_pass, unanswered

    real = shutil.which("nvcc")
    if real is None:
        pytest.skip("nvcc is not on PATH")
    wrapper = tmp_path / "wrap" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    src = tmp_path / "s.cu"
    src.write_text('template <int N> struct S { static_assert(N == 0, "cl_marker"); };\nS<1> s;\n')
    work = tmp_path / "work"
    work.mkdir()
    out = host_pass(src, ["-std=c++17", "-arch=sm_90a"], work, str(wrapper))
    assert "cl_marker" in out and unanswered(out) is None


def test_a_killed_nvcc_is_run_again_alone_then_not_compared(monkeypatch):
    """nvcc killed on a unit (two ran at once: 12 GB each for SM90's mixed-input MoE) is no
    disagreement: the unit runs again alone; where it gives its numbers they are compared, and
    where it is killed again its tactics are not compared but named, and nvcc still agrees on
    the rest (exit 0, not 4)."""
    from pathlib import Path
    from types import SimpleNamespace

    from cutlass_layout.checks.nvcc_probe import KILLED
    from cutlass_layout.model import AuditVerification

    a, b = Path("/g/a.cu"), Path("/g/b.cu")
    ta = SimpleNamespace(id="moe/a", family="moe", kernel_bytes=10, mainloop_bytes=6, epilogue_bytes=3, stages=2)
    tb = SimpleNamespace(id="moe/b", family="moe", kernel_bytes=20, mainloop_bytes=6, epilogue_bytes=3, stages=2)
    units = [audit_nvcc.Unit([a], [], [(a, 10, ta)]), audit_nvcc.Unit([b], [], [(b, 20, tb)])]
    gone = f"{KILLED}: cicc was killed by signal 9 (out of memory?)\n"
    calls = []

    def run_unit(unit, nvcc):
        calls.append(unit.sources[0])
        if unit.sources[0] == a and calls.count(a) > 1:  # alone, a's unit fits
            return {a: {10: (10, 6, 3, 2)}}, ""
        return {}, gone

    monkeypatch.setattr(audit_nvcc, "run_unit", run_unit)
    out = AuditVerification()
    audit_nvcc.run_units(units, "nvcc", 2, out)
    assert sorted(calls) == [a, a, b, b]  # each killed beside the other, then alone
    assert out.compared == ["moe/a"] and out.agree and out.disagreements == []
    assert out.not_verified == [
        "1 tactic(s) of moe not compared: nvcc's cicc was killed by signal 9 (out of "
        "memory?) on a unit of 1 source(s), run alone as well"
    ]
