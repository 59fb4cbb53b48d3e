"""audit of several arches: `--arch A --arch B`, `--arch 'sm{A,B}'`, `--arch all`.

Offline, on the miniature install of tests/test_audit.py (fixtures/installs/mini_flashinfer):
its builders are SM120's (sm121 runs the same builds), so two arches are sm120 and sm121 and
`all` is sm120 alone. The numbers asserted are the fixture's, worked out by hand in
test_audit.py (mini_sizes) and its arch.h's capacity; each arch's block and JSON object is
checked against that arch audited alone.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from test_audit import CAPACITY, MINI, messages, mini_sizes

from cutlass_layout import api
from cutlass_layout.cli import main
from cutlass_layout.commands import library_audit
from cutlass_layout.model import AuditResult, AuditSet

#: The fixture's tactic over capacity (256x128x64 elements, 5 stages) and its bytes by hand.
OVER = "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize"
OVER_BYTES = mini_sizes(256, 128, 64, 5, 4096)[2]  # 129024
#: The head line of an arch's block: 9 tactics (4 MoE, 4 dense, 1 groupwise: test_mini_audit)
HEAD = r"^{arch}: 9 tactics from 6 generated sources; capacity 101376 B \(sm120_smem_capacity_bytes, cutlass/arch/arch\.h:8\)$"


def _run(capsys, argv) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, messages(err)


@pytest.mark.mini_shared
def test_two_arches_text_one_block_each(mini, capsys):
    """Default flags, two arches: each arch's block as that arch alone prints it, one after
    the other (a blank line between), in the order asked."""
    code, out, _ = _run(capsys, ["audit", str(mini), "--arch", "sm121", "--arch", "sm120", "--jobs", "1"])
    assert code == 0
    alone = {}
    for arch in ("sm121", "sm120"):
        c, text, _ = _run(capsys, ["audit", str(mini), "--arch", arch])
        assert c == 0
        alone[arch] = text
    assert out == alone["sm121"] + "\n" + alone["sm120"]
    heads = re.findall(r"^(sm12[01]): \d+ tactics", out, re.M)
    assert heads == ["sm121", "sm120"]
    for arch in heads:
        assert re.search(HEAD.format(arch=arch), out, re.M)
    assert out.count("1 over capacity (1 of them tried by the runtime)") == 2
    # markdown: each arch's block, one after the other; github: the annotations of both
    md = _run(capsys, ["audit", str(mini), "--arch", "sm121", "--arch", "sm120", "--format", "markdown"])[1]
    assert re.findall(r"^#### Audit: .*, (sm12[01])$", md, re.M) == ["sm121", "sm120"]
    gh = _run(capsys, ["audit", str(mini), "--arch", "sm121", "--arch", "sm120", "--format", "github"])[1]
    for arch in ("sm121", "sm120"):
        assert f"over the {CAPACITY} B {arch} capacity by {OVER_BYTES - CAPACITY} B" in gh
    assert re.findall(r"^cutlass-layout: .*, (sm12[01]): 1 over capacity", gh, re.M) == ["sm121", "sm120"]


@pytest.mark.mini_shared
def test_two_arches_json_and_one_arch_unchanged(mini, capsys):
    """--json of several: {"audits": [each arch's one-arch object, in the order asked]};
    of one arch: the one-arch object, byte for byte as the Python result's to_dict()."""
    code, out, _ = _run(capsys, ["audit", str(mini), "--arch", "sm{120,121}", "--json"])
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["audits"] and [a["arch"] for a in doc["audits"]] == ["sm120", "sm121"]
    for a in doc["audits"]:
        assert a["schema"] == "cutlass-layout/audit/1" and a["capacity_bytes"] == CAPACITY
        over = next(t for t in a["tactics"] if t["id"] == OVER)
        assert over["kernel_bytes"] == OVER_BYTES and over["headroom_bytes"] == CAPACITY - OVER_BYTES
    one = _run(capsys, ["audit", str(mini), "--arch", "sm121", "--json"])[1]
    assert json.loads(one) == doc["audits"][1]
    assert one == json.dumps(api.audit(str(mini), "sm121").to_dict(), indent=2) + "\n"
    assert "audits" not in json.loads(one)


@pytest.mark.mini_shared
def test_all_is_every_arch_with_builders(mini, capsys):
    """`all` on the miniature install: sm120 only (its builders are SM120's; sm121 is the
    same builds), the arches without builders named in a note; sm121 joins where named."""
    code, out, err = _run(capsys, ["audit", str(mini), "--arch", "all", "--json"])
    assert code == 0
    assert [a["arch"] for a in json.loads(out)["audits"]] == ["sm120"]
    assert (
        "note: all: flashinfer 0.0.1+mini has no JIT module builder that builds a CUTLASS GEMM "
        "for sm90, sm100, sm103: not audited"
    ) in err
    code, out, _ = _run(capsys, ["audit", str(mini), "--arch", "all", "--arch", "sm121", "--family", "moe"])
    assert code == 0 and re.findall(r"^(sm12[01]): \d+ tactics", out, re.M) == ["sm120", "sm121"]


@pytest.mark.mini_shared
def test_check_fails_if_any_arch_fails_naming_it(mini, capsys):
    code, _, err = _run(
        capsys, ["audit", str(mini), "--arch", "sm120", "--arch", "sm121", "--check", "--family", "moe"]
    )
    assert code == 1
    for arch in ("sm120", "sm121"):
        assert (
            f"check: {arch}: {OVER}: {OVER_BYTES} B, over the {CAPACITY} B capacity by "
            f"{OVER_BYTES - CAPACITY} B (tried by the runtime)"
        ) in err
        assert f"check failed: 1 tactic(s) the runtime would try are over capacity on {arch}" in err
    code, _, err = _run(
        capsys,
        ["audit", str(mini), "--arch", "sm120", "--arch", "sm121", "--check", "--family", "fp4_gemm_cutlass_sm120"],
    )
    assert code == 0 and "check" not in err


@pytest.mark.mini_shared
def test_python_several_arches_give_an_audit_set(mini):
    one = api.audit(str(mini), "sm120", family="moe")
    both = api.audit(str(mini), ["sm120", "sm121"], family="moe")
    assert isinstance(one, AuditResult) and isinstance(both, AuditSet)
    assert both.archs == ["sm120", "sm121"] and both.results[0].to_dict() == one.to_dict()
    assert both.to_dict() == {"audits": [r.to_dict() for r in both.results]}
    assert [(a, t.id) for a, t in both.check_failures()] == [("sm120", OVER), ("sm121", OVER)]
    every = api.audit(str(mini), "all", family="moe")
    assert every.archs == ["sm120"] and len(every.notes) == 1


def test_all_leaves_out_an_arch_whose_builders_give_nothing(tmp_path, monkeypatch, capsys):
    """A copy of the miniature install whose SM90 MoE builder names a GEMM (so it is a builder
    for sm90) and fails: `all` audits sm120 and names sm90 in a note, with why; sm90 named is
    the one-line error of its audit alone."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    site = tmp_path / "site"
    shutil.copytree(MINI, site)
    moe = site / "flashinfer/jit/fused_moe.py"
    moe.write_text(
        moe.read_text().replace('raise RuntimeError("not for sm120")', 'raise RuntimeError("no sm90 gemm here")')
    )
    code, out, err = _run(capsys, ["audit", str(site), "--arch", "all", "--json"])
    assert code == 0 and [a["arch"] for a in json.loads(out)["audits"]] == ["sm120"]
    assert "for sm100, sm103: not audited" in err
    (left,) = [ln for ln in err.splitlines() if ln.startswith("note: all: sm90 not audited: ")]
    assert "no sm90 gemm here" in left
    code, _, err = _run(capsys, ["audit", str(site), "--arch", "sm90", "--arch", "sm120"])
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "sm90" in err


@pytest.mark.parametrize(
    "argv,words",
    [
        (
            ["audit", "nvidia-cutlass==4.2.0.0", "--arch", "all"],
            "name them, of sm120, sm121, sm100, sm101, sm103, sm110, sm90",
        ),
        (["audit", "nvidia-cutlass==4.2.0.0", "--arch", "sm90", "--arch", "all"], "26,164 kernels for SM100 alone"),
        (["audit", "nvidia-cutlass==4.2.0.0", "--arch", "sm90", "--arch", "sm75"], "arch 'sm75': CUTLASS's library"),
        (["audit", "/no/such/install", "--arch", "sm120", "--arch", "sm75"], "arch 'sm75': an audit takes"),
        (["audit", "/no/such/install", "--arch", "all", "--arch", "sm110"], "arch 'sm110': an audit takes"),
        (
            ["audit", "/no/such/install", "--arch", "sm90", "--arch", "sm120", "--blocklist", "b.json"],
            "--blocklist with --arch sm90 sm120: flashinfer's tactics blocklist holds one arch's",
        ),
        (["audit", "/no/such/install", "--arch", "all", "--blocklist", "b.json"], "write one file per arch"),
    ],
    ids=[
        "library-all",
        "library-all-among",
        "library-unknown",
        "unknown",
        "unknown-with-all",
        "blocklist",
        "blocklist-all",
    ],
)
def test_bad_arches_one_line_before_any_work(argv, words, capsys, tmp_path, monkeypatch):
    """Refused before the source is read or fetched (nothing lands in the cache)."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    code, out, err = _run(capsys, argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err
    assert not (tmp_path / "cache" / "wheels").exists()


def test_a_library_audits_each_named_arch_of_one_resolve(mini_library, monkeypatch):
    """Several named arches of CUTLASS's library: one resolve, then one audit per arch in
    the order asked (audit_library stood in for: its layouts are tests/test_library_audit.py's)."""
    calls = []

    def one(lib, arch, **kwargs):
        calls.append((lib, arch))
        return AuditResult(provenance={"library": "cutlass_library"}, arch=arch, capacity=None, tactics=[])

    monkeypatch.setattr(library_audit, "audit_library", one)
    res = api.audit(str(mini_library), ["sm90", "SM120", "sm90"], kernels="*x*")
    assert res.archs == ["sm90", "sm120"] and [a for _, a in calls] == ["sm90", "sm120"]
    assert calls[0][0] is calls[1][0] and calls[0][0].root == mini_library


@pytest.mark.network
@pytest.mark.parametrize("spec", ["flashinfer-python==0.7.2.post1", "flashinfer-python==0.6.8"])
def test_all_of_a_real_install_is_its_four_builds(spec):
    """What `all` audits of flashinfer 0.7.2.post1 and 0.6.8 (the README's): every arch whose
    builders the install's jit/ names (read, none run): gen_cutlass_fused_moe_sm{90,100,103,120}_module
    among them, as flashinfer/jit/fused_moe.py defines them."""
    from cutlass_layout.commands.audit import every_arch
    from cutlass_layout.sources.flashinfer_jit import arch_builders
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer(spec)
    found = {a: [f for _, f in arch_builders(install, a)] for a in every_arch()}
    assert list(found) == ["sm90", "sm100", "sm103", "sm120"]
    for a, functions in found.items():
        assert f"gen_cutlass_fused_moe_{a}_module" in functions, (a, functions)


def test_ctrl_c_after_an_arch_prints_the_arches_done(mini_library, monkeypatch, capsys):
    """Ctrl-C while the second arch of ``--arch sm90 --arch sm120`` is laid out: the first
    arch's audit is printed (its JSON), then one ``error: interrupted`` line naming the arch
    left, exit 130; from Python, :class:`Interrupted` holds the finished arch."""
    from cutlass_layout.errors import Interrupted

    def one(lib, arch, **kwargs):
        if arch == "sm120":
            raise KeyboardInterrupt
        return AuditResult(provenance={"library": "cutlass_library"}, arch=arch, capacity=None, tactics=[])

    monkeypatch.setattr(library_audit, "audit_library", one)
    with pytest.raises(Interrupted, match="^interrupted: sm120 was interrupted$") as got:
        api.audit(str(mini_library), ["sm90", "sm120"], kernels="*x*")
    assert got.value.partial.archs == ["sm90"] and got.value.partial.notes == ["sm120 was interrupted (Ctrl-C)"]
    code, out, err = _run(
        capsys, ["audit", str(mini_library), "--arch", "sm90", "--arch", "sm120", "--kernels", "*x*", "--json"]
    )
    assert code == 130 and [a["arch"] for a in json.loads(out)["audits"]] == ["sm90"]
    assert err.strip().splitlines()[-1] == "error: interrupted: sm120 was interrupted", err
    with pytest.raises(KeyboardInterrupt):  # nothing done yet: Ctrl-C as it was
        api.audit(str(mini_library), ["sm120", "sm90"], kernels="*x*")


def test_ctrl_c_in_a_flashinfer_audit_of_three_arches(mini, monkeypatch):
    """The same for a flashinfer install: sm121 done, sm120 interrupted, sm90 not begun."""
    from cutlass_layout.commands.audit import command
    from cutlass_layout.errors import Interrupted

    real = command.audit

    def one(install, arch, **kwargs):
        if arch == "sm120":
            raise KeyboardInterrupt
        return real(install, arch, **kwargs)

    monkeypatch.setattr(command, "audit", one)
    with pytest.raises(Interrupted) as got:
        command.audit_archs(str(mini), ["sm121", "sm120", "sm90"], jobs=1)
    assert str(got.value) == "interrupted: sm120 was interrupted, sm90 not audited"
    assert got.value.partial.archs == ["sm121"] and got.value.partial.results[0].tactics


def test_several_arches_name_the_arch_and_its_place_on_every_progress_line(mini, capsys):
    """A cold audit of two arches, stderr not a terminal: a line as each arch starts (the second
    says how long the run has taken), and every line of that arch's steps and counts names the
    arch and its place; the fix search is a count of tactics. By hand: the fixture's builders
    are SM120's, sm121 runs them (the builders line says sm120) and parses its 6 generated
    sources (HEAD); one tactic needs a fix, OVER (129024 B over the 101376 B capacity; no
    other tactic is over or an exact fit: test_mini_audit); sm120 then reads every source of
    sm121's from the cache: no count of its own."""
    from cutlass_layout.core.progress import is_progress_line

    code = main(["audit", str(mini), "--arch", "sm121", "--arch", "sm120", "--jobs", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and [a["arch"] for a in json.loads(out)["audits"]] == ["sm121", "sm120"]
    lines = [ln for ln in err.splitlines() if is_progress_line(ln) and not ln.startswith("audit sm121: found: ")]
    version = "0.0.1+mini"
    assert lines[0] == f"arch 1 of 2 (sm121): auditing flashinfer {version} for sm121 ..."
    assert (
        f"arch 1 of 2 (sm121): running flashinfer {version}'s JIT module builders for sm120 "
        "(its kernel generator and templates) ..." in lines
    )
    assert "arch 1 of 2 (sm121): laying out sources: 0/6 (0 s)" in lines
    assert "arch 1 of 2 (sm121): searching fixes: 0/1 tactics (0 s)" in lines
    second = [i for i, ln in enumerate(lines) if ln.startswith("arch 2 of 2 (sm120): ")]
    assert len(second) == 1 and second[0] == len(lines) - 1, lines  # cached: its start alone
    assert re.fullmatch(
        rf"arch 2 of 2 \(sm120\): auditing flashinfer {re.escape(version)} for sm120 "
        r"\(\d+ (s|min) so far, about \d+ (s|min) left\) \.\.\.",
        lines[-1],
    )
    assert all(ln.startswith("arch 1 of 2 (sm121): ") for ln in lines[:-1])
