"""audit --shard I/N and audit --merge: an audit laid out in parts and joined back, equal to the
audit laid out whole.

Offline: the miniature install (fixtures/installs/mini_flashinfer) and the miniature
cutlass_library (with two stand-in headers written into its copy here, so that its stand-in
kernels lay out without a CUTLASS tree). Which shard lays out which source is derived by hand
from the fixture's texts (:data:`MINI_WEIGHTS`). With the package index: flashinfer-python
0.7.2.post1's ``--family moe`` and ``--family moe_sm80`` in 2 shards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout import BadInput, api
from cutlass_layout.cli import main
from cutlass_layout.commands.audit import judge_sources
from cutlass_layout.commands.shard import check_shard, parse_shard, shard_of
from cutlass_layout.model import AuditResult
from cutlass_layout.core.progress import is_progress_line

#: The miniature install's sources for sm120, in the audit's order (module by module, as its
#: builders list them), each with its weight: its estimated kernels (``estimate_kernels``:
#: upper-case macro calls starting a line, plus ``template `` keywords, comments blanked), by
#: hand from the fixture's generator and templates, times its module's ``kernel_weight`` (1 for
#: ``fused_moe_120``, 6 for ``fp4_gemm_cutlass_sm120`` and ``gemm_sm120``):
#: the MoE file (generate_kernels.py: 4 INSTANTIATE_MINI_MOE_GEMM calls), the SM90 file (skipped:
#: it names no sm120 symbol: 0), the dense f16 and bf16 sources (mini_dense.jinja: one
#: INSTANTIATE_MINI_DENSE each), the groupwise source (one ``template int ...`` instantiation),
#: the mixed one (two), the dispatch (one ``template <int TileM, ...>`` declaration).
MINI_WEIGHTS = [
    ("mini_moe_sm120_group0.generated.cu", 4 * 1),
    ("mini_sm90_group0.generated.cu", 0),
    ("mini_dense_f16.cu", 1 * 6),
    ("mini_dense_bf16.cu", 1 * 6),
    ("mini_groupwise_sm120.cu", 1 * 6),
    ("mini_mixed_sm120.cu", 2 * 6),
    ("mini_gemm_sm120_dispatch.cu", 1 * 6),
]


def _err_line(capsys, argv) -> str:
    """``cutlass-layout ARGV``: exit 2 and exactly one ``error:`` line, no traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def _out(capsys, argv, code: int = 0) -> str:
    """stdout of ``cutlass-layout ARGV``, which exits ``code``."""
    got = main(argv)
    cap = capsys.readouterr()
    assert got == code, cap.err
    return cap.out


def _shards(capsys, tmp_path: Path, args: list[str], n: int, name: str = "part") -> list[str]:
    """``audit ARGS --shard i/n --json`` for every i, each written to a file; their paths."""
    paths = []
    for i in range(1, n + 1):
        path = tmp_path / f"{name}{i}of{n}.json"
        path.write_text(_out(capsys, ["audit", *args, "--shard", f"{i}/{n}", "--json"]))
        paths.append(str(path))
    return paths


# ---------------------------------------------------------------------------------------
# the split


def test_shard_of_cuts_the_units_into_runs_of_equal_weight():
    weights = [w for _, w in MINI_WEIGHTS]  # 40 in all
    # midpoints 2, 4, 7, 13, 19, 28, 37 of 40: halves at 20, thirds at 13.33 and 26.67
    assert [shard_of(weights, (i, 2)) for i in (1, 2)] == [[0, 1, 2, 3, 4], [5, 6]]
    assert [shard_of(weights, (i, 3)) for i in (1, 2, 3)] == [[0, 1, 2, 3], [4], [5, 6]]
    # the same sources weighed by estimated kernels alone (10 in all; midpoints 2, 4, 4.5, 5.5,
    # 6.5, 8, 9.5): halves at 5
    assert [shard_of([4, 0, 1, 1, 1, 2, 1], (i, 2)) for i in (1, 2)] == [[0, 1, 2], [3, 4, 5, 6]]
    for n in range(1, 12):  # every unit in exactly one shard, in order; more shards than units: some empty
        parts = [shard_of(weights, (i, n)) for i in range(1, n + 1)]
        assert sorted(p for part in parts for p in part) == list(range(7))
        assert all(a[-1] < b[0] for a, b in zip([p for p in parts if p], [p for p in parts if p][1:]))
    assert shard_of([0, 0, 0, 0], (2, 2)) == [2, 3]  # no weight: by count
    assert shard_of([1] * 4, (2, 3)) == [1, 2] and shard_of([], (1, 2)) == []
    assert shard_of([5], (1, 1)) == [0]


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "1/0", "2", "1/2/3", "-1/2", ""])
def test_a_bad_shard_is_one_line(text, capsys, mini):
    with pytest.raises(BadInput, match="shard"):
        parse_shard(text)
    line = _err_line(capsys, ["audit", str(mini), "--shard", text])
    assert line.startswith(f"error: --shard {text}: give I/N")


def test_shards_are_checked_before_any_work():
    assert parse_shard(" 2 / 3 ") == (2, 3) == check_shard(("2", 3))
    with pytest.raises(BadInput, match=r"shard 3/2: give I/N with N >= 1 and 1 <= I <= N"):
        api.audit("/nowhere/at/all", shard=(3, 2))  # refused before the install is looked for
    with pytest.raises(BadInput, match=r"shard 0/1"):
        api.audit("/nowhere/at/all", arch=["sm90", "sm120"], shard=(0, 1))


# ---------------------------------------------------------------------------------------
# the miniature install


@pytest.mark.mini_shared
def test_mini_shards_merge_into_the_whole_audit(mini, tmp_path, capsys):
    whole = _out(capsys, ["audit", str(mini), "--json"])
    two = _shards(capsys, tmp_path, [str(mini)], 2)
    docs = [json.loads(Path(p).read_text()) for p in two]
    # shard 1/2: the MoE file, the SM90 file (skipped: a source of no kernel is in a shard too),
    # the dense f16 and bf16 sources and the groupwise one; 2/2 the mixed and dispatch sources,
    # which lay out no tactic (a shard of none merges too) (MINI_WEIGHTS)
    assert [[s["file"].rsplit("/", 1)[-1] for s in d["sources"]] for d in docs] == [
        [f for f, _ in MINI_WEIGHTS[:5]],
        [f for f, _ in MINI_WEIGHTS[5:]],
    ]
    assert [d["shard"]["index"] for d in docs] == [1, 2] and {d["shard"]["count"] for d in docs} == {2}
    # the 4 MoE tactics, the dense f16 and bf16 sources' two kernels each (a struct of two
    # aliases) and the groupwise one; none of the mixed and dispatch sources
    assert [len(d["tactics"]) for d in docs] == [9, 0]
    assert {t["family"] for t in docs[0]["tactics"]} == {"moe", "fp4_gemm_cutlass_sm120", "gemm_sm120"}
    # the union of the shards' sources is the whole's
    assert [s for d in docs for s in d["sources"]] == json.loads(whole)["sources"]
    merged = _out(capsys, ["audit", "--merge", two[1], two[0], "--json"])  # any order
    assert merged == whole
    three = _shards(capsys, tmp_path, [str(mini), "--no-cache"], 3)  # parsed again, in other units
    assert [len(json.loads(Path(p).read_text())["sources"]) for p in three] == [4, 1, 2]
    assert _out(capsys, ["audit", "--merge", *three, "--json"]) == whole
    # every format, and --check (the 256x128 FINALIZE tactic the runtime tries is over capacity)
    for fmt in ("text", "markdown", "github"):
        assert _out(capsys, ["audit", "--merge", *two, "--format", fmt]) == _out(
            capsys, ["audit", str(mini), "--format", fmt]
        )
    assert main(["audit", "--merge", *three, "--check"]) == 1
    err = capsys.readouterr().err
    assert "check: moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize: 129024 B, over the 101376 B capacity" in err
    # a shard's own report says which it is, in its head line
    assert (
        _out(capsys, ["audit", str(mini), "--shard", "2/3"]).splitlines()[0]
        == "flashinfer-python 0.0.1+mini (a directory), shard 2/3"
    )
    assert _out(capsys, ["audit", str(mini), "--shard", "1/3", "--format", "markdown"]).startswith(
        "#### Audit: flashinfer-python 0.0.1+mini (CUTLASS 9.8.7), sm120, shard 1/3\n"
    )
    assert _out(capsys, ["audit", str(mini), "--shard", "3/3", "--format", "github"]).splitlines()[-1] == (
        "cutlass-layout: flashinfer-python 0.0.1+mini (a directory), sm120, shard 3/3: 0 over capacity "
        "(0 of them tried by the runtime), 0 exact fits, 0 do not compile, 0 fit"
    )
    # from Python, the same
    assert json.dumps(api.merge_audits(two).to_dict(), indent=2) + "\n" == whole


@pytest.mark.mini_shared
def test_filters_are_applied_to_every_shard_s_tactics(mini, tmp_path, capsys):
    """A filter one shard's tactics do not match, another's do: the merge's notes are the
    whole's. ``--stages 3`` keeps the 128x64x32 MoE tactic (shard 1/2; the dense and groupwise
    kernels have 2 stages); ``--d f32`` matches none, and the output kinds the whole has, f16
    and bf16, are the MoE tactics'. Shard 1/2 lays out every tactic (9), 2/2 none (its mixed and
    dispatch sources give no kernel), so 2/2 has no note of a filter (nothing to match: its
    sources line says why) and the merge's notes are 1/2's."""
    for args, code in ((["--stages", "3"], 0), (["--d", "f32", "--check"], 1), (["--grep", "MiniDense_bf16"], 0)):
        whole = _out(capsys, ["audit", str(mini), *args, "--json"], code)
        err = capsys.readouterr().err
        parts = _shards(capsys, tmp_path, [str(mini), *args[:2]], 2, name=args[0].strip("-"))
        assert _out(capsys, ["audit", "--merge", *parts, "--json", *args[2:]], code) == whole
    shard1 = json.loads(Path(parts[0]).read_text())  # --grep MiniDense_bf16: shard 1/2 keeps both
    assert len(shard1["tactics"]) == 2 and len(shard1["shard"]["dropped"]) == 9 - 2
    main(["audit", str(mini), "--d", "f32", "--shard", "2/2"])
    got = capsys.readouterr()
    assert "matched no tactic" not in got.err and "gemm_sm120 0 kernels of 2 instantiations in 2 sources" in got.out
    main(["audit", "--merge", *_shards(capsys, tmp_path, [str(mini), "--d", "f32"], 2, name="d")])
    err = capsys.readouterr().err
    # the MoE tactics' outputs, in their order, the most like "f32" first (difflib's ratio:
    # one common character of 6, f16: 0.33, and of 7, bf16: 0.29)
    assert "note: --d f32: matched no tactic; the tactics have: f16, bf16\n" in err
    assert err == messages_of(capsys, ["audit", str(mini), "--d", "f32"])
    # the whole's stages: the 3-stage tactic is shard 1/2's
    stages = _shards(capsys, tmp_path, [str(mini), "--stages", "3"], 2, name="st")
    assert [len(json.loads(Path(p).read_text())["tactics"]) for p in stages] == [1, 0]
    assert "note: --stages 3" not in messages_of(capsys, ["audit", str(mini), "--stages", "3", "--shard", "2/2"])
    assert "note: --stages 2: matched no tactic; the tactics have: 3" not in messages_of(
        capsys, ["audit", str(mini), "--stages", "2", "--shard", "1/2"]
    )  # 1/2 has both


def messages_of(capsys, argv) -> str:
    """stderr of ``cutlass-layout ARGV`` without its progress lines."""
    main(argv)
    return "".join(ln for ln in capsys.readouterr().err.splitlines(keepends=True) if not is_progress_line(ln))


@pytest.mark.mini_shared
def test_several_arches_are_each_cut_alike(mini, tmp_path, capsys):
    args = [str(mini), "--arch", "sm120", "--arch", "sm121"]
    whole = _out(capsys, ["audit", *args, "--json"])
    parts = _shards(capsys, tmp_path, args, 2)
    doc = json.loads(Path(parts[0]).read_text())
    assert [(a["arch"], a["shard"]["index"], a["shard"]["asked"]["archs"]) for a in doc["audits"]] == [
        ("sm120", 1, ["sm120", "sm121"]),
        ("sm121", 1, ["sm120", "sm121"]),
    ]
    assert _out(capsys, ["audit", "--merge", *parts, "--json"]) == whole
    with pytest.raises(BadInput, match="the shards of one audit hold the same arches"):
        api.merge_audits([parts[0], _shards(capsys, tmp_path, [str(mini)], 2, name="one")[1]])


@pytest.mark.mini_shared
def test_what_merge_refuses(mini, tmp_path, capsys):
    parts = _shards(capsys, tmp_path, [str(mini)], 3)
    whole = tmp_path / "whole.json"
    whole.write_text(_out(capsys, ["audit", str(mini), "--json"]))
    assert (
        _err_line(capsys, ["audit", "--merge", parts[0], parts[2]])
        == f"error: shard 2/3 of the sm120 audit missing (given: 1/3 in {parts[0]}, 3/3 in {parts[2]})"
    )
    assert (
        _err_line(capsys, ["audit", "--merge", *parts, parts[1]])
        == f"error: shard 2/3 (sm120) given twice: {parts[1]} and {parts[1]}"
    )
    assert _err_line(capsys, ["audit", "--merge", parts[0], str(whole)]).endswith(
        'the audit of sm120 is not a shard\'s (no "shard" object: audit --shard I/N --json writes one)'
    )
    halves = _shards(capsys, tmp_path, [str(mini)], 2, name="half")
    assert (
        _err_line(capsys, ["audit", "--merge", parts[0], halves[1]])
        == f"error: {halves[1]} is shard 2/2, {parts[0]} shard 1/3: the shards of one audit are cut alike"
    )
    moe = _shards(capsys, tmp_path, [str(mini), "--family", "moe"], 2, name="moe")
    assert "was asked other family than" in _err_line(capsys, ["audit", "--merge", halves[0], moe[1]])

    def edited(path, change, name):
        doc = json.loads(Path(path).read_text())
        change(doc)
        out = tmp_path / name
        out.write_text(json.dumps(doc))
        return str(out)

    assert [len(json.loads(Path(p).read_text())["tactics"]) for p in halves] == [9, 0]
    other = edited(halves[1], lambda d: d["provenance"].update(fingerprint="0123456789abcdef"), "other.json")
    mine = json.loads(Path(halves[0]).read_text())["provenance"]["fingerprint"]
    assert _err_line(capsys, ["audit", "--merge", halves[0], other]) == (
        f"error: {other} audits flashinfer-python 0.0.1+mini (fingerprint 0123456789abcdef), {halves[0]} "
        f"flashinfer-python 0.0.1+mini (fingerprint {mine}): the shards of one audit come from one install"
    )
    sm121 = edited(halves[1], lambda d: d.update(arch="sm121"), "sm121.json")
    assert "audits sm121" in _err_line(capsys, ["audit", "--merge", halves[0], sm121])
    bytes_ = edited(halves[0], lambda d: d["tactics"][0].update(kernel_bytes=1), "bytes.json")
    assert _err_line(capsys, ["audit", "--merge", bytes_, halves[1]]) == (
        f"error: {bytes_}: its sm120 audit does not read back as written (edited, or written by another "
        "version of cutlass-layout)"
    )
    for name, text in (("list.json", "[1, 2]"), ("other-schema.json", '{"schema": "cutlass-layout/scan/1"}')):
        (tmp_path / name).write_text(text)
        assert "not the JSON of cutlass-layout audit" in _err_line(capsys, ["audit", "--merge", str(tmp_path / name)])
    (tmp_path / "text.json").write_text("not json")
    assert "is not JSON" in _err_line(capsys, ["audit", "--merge", str(tmp_path / "text.json")])
    assert "cannot read audit JSON" in _err_line(capsys, ["audit", "--merge", str(tmp_path / "missing.json")])
    assert (
        _err_line(capsys, ["audit", "--merge"])
        == "error: no audit JSON to merge: give every shard's file (audit --shard I/N --json)"
    )
    # the flags --merge does not take, and --shard's own refusals
    assert "--family does not go with it" in _err_line(capsys, ["audit", "--merge", *halves, "--family", "moe"])
    assert "--shard does not go with it" in _err_line(capsys, ["audit", "--merge", *halves, "--shard", "1/2"])
    assert "flashinfer's tactics blocklist holds every" in _err_line(
        capsys, ["audit", str(mini), "--shard", "1/2", "--blocklist", str(tmp_path / "bl.json")]
    )
    assert not (tmp_path / "bl.json").exists()
    assert _err_line(capsys, ["audit", str(mini), "x.json"]) == "error: Got unexpected extra argument (x.json)"


def test_an_install_without_kernels_is_the_merge_s_error(mini, tmp_path, capsys, only_sources):
    """A shard cannot tell that the whole gives no kernel; the merge says what the audit says."""
    only_sources(lambda name: "sm90" in name or "mixed" in name or "dispatch" in name)
    line = _err_line(capsys, ["audit", str(mini)])
    assert line.startswith("error: flashinfer 0.0.1+mini builds no kernel this reader can lay out for sm120")
    parts = _shards(capsys, tmp_path, [str(mini)], 2)
    assert _err_line(capsys, ["audit", "--merge", *parts]) == line


def test_the_merge_judges_sources_with_every_shard_s_parses():
    """A source that did not parse still counts its calls of a launcher macro another source's
    parse found (``launchers``), and names the source whose kernels it calls (``owners``): what
    one shard alone cannot see."""
    sources = [
        {
            "module": "m",
            "builder": "b",
            "family": "m",
            "file": f,
            "instantiations": None,
            "kernels": 0,
            "skipped": None,
            "reason": None,
            "error": None,
        }
        for f in ("a.cu", "b.cu", "c.cu")
    ]
    facts = [
        {"explicit": [], "defined": [], "calls": [], "aliases": [], "macro_calls": [["LAUNCH", 3]]},
        {"explicit": [], "defined": [], "calls": [], "aliases": [], "macro_calls": [["LAUNCH", 5], ["LAUNCH", 9]]},
        {"explicit": [], "defined": [], "calls": ["Kern"], "aliases": [], "macro_calls": []},
    ]
    parsed = {
        0: {"error": None, "launcher_macros": ["LAUNCH"], "kernels": [{"found": {"line": 3, "owner": "Kern_1"}}]},
        1: {"error": "x.h: file not found", "launcher_macros": None, "kernels": []},
        2: {"error": None, "launcher_macros": [], "kernels": []},
    }
    whole = [dict(s) for s in sources]
    judge_sources(whole, facts, parsed)
    assert [(s["instantiations"], s["kernels"], s["error"], s["reason"]) for s in whole] == [
        (1, 1, None, None),
        (2, 0, "x.h: file not found", None),
        (0, 0, None, "calls kernels defined elsewhere: Kern (instantiated in a.cu)"),
    ]
    alone = [dict(s) for s in sources]  # a shard that parsed b.cu and c.cu only
    judge_sources(alone, facts, {1: parsed[1], 2: parsed[2]})
    assert [(s["instantiations"], s["reason"]) for s in alone[1:]] == [
        (0, None),
        (0, "calls kernels defined elsewhere: Kern (in none of the module's sources)"),
    ]


# ---------------------------------------------------------------------------------------
# the miniature cutlass_library


@pytest.fixture
def mini_library_laid_out(mini_library):
    """The miniature library, with the two headers its emitted instances and the probe need
    (``cutlass/cutlass.h``, ``cutlass/arch/arch.h``'s capacity constant) written into the copy."""
    include = mini_library / "cutlass_library" / "source" / "include" / "cutlass"
    (include / "arch").mkdir(parents=True, exist_ok=True)
    (include / "cutlass.h").write_text('#pragma once\n#include "cutlass/arch/arch.h"\n')
    (include / "arch" / "arch.h").write_text(
        "#pragma once\nnamespace cutlass { namespace arch {\nconstexpr int sm120_smem_capacity_bytes = 101376;\n} }\n"
    )
    return mini_library


def test_library_shards_merge_into_the_whole_audit(mini_library_laid_out, tmp_path, capsys):
    lib = str(mini_library_laid_out)
    whole = _out(capsys, ["audit", lib, "--json"])
    doc = json.loads(whole)
    # the stand-in's four 3.x kernels (its 2.x one is a note); each struct SharedStorage of 16
    # bytes, laid out as a storage of no GEMM shape, but the one that does not compile
    assert sorted((t["id"], t["headroom_bytes"]) for t in doc["tactics"]) == [
        ("fake_sm120_gemm_broken_e4m3_128x128x128", None),
        ("fake_sm120_gemm_e4m3_128x128x128_auto", 101360),
        ("fake_sm120_gemm_e4m3_128x256x128_3stage", 101360),
        ("fake_sm120_gemm_grouped_e4m3_64x128x128_auto", 101360),
    ]
    two = _shards(capsys, tmp_path, [lib], 2)
    three = _shards(capsys, tmp_path, [lib], 3)
    # by procedural name, sorted: broken, e4m3_128x128x128_auto, e4m3_128x256x128_3stage, grouped
    assert [
        sorted(t["id"][len("fake_sm120_gemm_") :] for t in json.loads(Path(p).read_text())["tactics"])
        for p in two + three
    ] == [
        ["broken_e4m3_128x128x128", "e4m3_128x128x128_auto"],
        ["e4m3_128x256x128_3stage", "grouped_e4m3_64x128x128_auto"],
        ["broken_e4m3_128x128x128"],
        ["e4m3_128x128x128_auto", "e4m3_128x256x128_3stage"],
        ["grouped_e4m3_64x128x128_auto"],
    ]
    assert _out(capsys, ["audit", "--merge", *two, "--json"]) == whole
    assert _out(capsys, ["audit", "--merge", *reversed(three), "--json"]) == whole
    for fmt in ("text", "markdown", "github"):
        assert _out(capsys, ["audit", "--merge", *three, "--format", fmt]) == _out(
            capsys, ["audit", lib, "--format", fmt]
        )
    _out(capsys, ["audit", "--merge", *two, "--check"], 0)  # none over capacity
    assert (
        _out(capsys, ["audit", lib, "--shard", "1/2"]).splitlines()[0]
        == "CUTLASS's kernel library 4.2.0 (a directory), shard 1/2"
    )
    # --stages 3: a stand-in kernel has no stage count laid out (a storage of no GEMM shape),
    # so none matches: the note names what the kernels of all shards have
    whole3 = _out(capsys, ["audit", lib, "--stages", "3", "--json"])
    parts3 = _shards(capsys, tmp_path, [lib, "--stages", "3"], 2, name="st")
    assert _out(capsys, ["audit", "--merge", *parts3, "--json"]) == whole3


def _reads_back(res: AuditResult) -> AuditResult:
    """``AuditResult.from_dict`` of ``res``'s JSON, which gives that JSON again, and the same
    verdicts and numbers."""
    doc = res.to_dict()
    back = AuditResult.from_dict(json.loads(json.dumps(doc)))
    assert back.to_dict() == doc
    assert [(t.verdict, t.kernel_bytes, t.headroom_bytes) for t in back.tactics] == [
        (t.verdict, t.kernel_bytes, t.headroom_bytes) for t in res.tactics
    ]
    return back


@pytest.mark.parametrize("library", [False, True])
def test_audit_json_reads_back_as_written(library, request):
    """Each row's numbers in its tactic (which has no report); a library kernel of no GEMM
    shape: its 16 bytes a storage's, not a kernel's (the capacity minus its headroom); the generator's estimate of the 3-stage one by hand, A and B tiles of
    1-byte e4m3 times 3 stages: (128 x 128 + 256 x 128) x 3 = 147456 B = 144 KiB."""
    src = request.getfixturevalue("mini_library_laid_out" if library else "mini")
    back = _reads_back(api.audit(str(src), jobs=1))
    if library:
        fake = next(t for t in back.tactics if t.id.endswith("_3stage"))
        assert fake.report is None and fake.kernel_bytes is None and fake.estimate_kib == 144
        assert fake.capacity_bytes - fake.headroom_bytes == 16
    else:
        over = next(t for t in back.tactics if t.verdict == "over_capacity")
        assert over.report is None and (over.kernel_bytes, over.headroom_bytes) == (129024, -27648)


# ---------------------------------------------------------------------------------------
# flashinfer-python 0.7.2.post1


@pytest.mark.slow
@pytest.mark.network
def test_a_real_audit_in_two_shards_merges_back(tmp_path, capsys):
    """0.7.2.post1's MoE family on SM120 (11 generated sources of one folder, the runtime's
    candidate list, the fix search) and its SM80-path family (one unit of 255 kernels), each in 2
    shards: merged, the JSON of the audit laid out whole, byte for byte. The MoE shards parse
    again (``--no-cache``): their sources fall into other translation units than the whole's."""
    spec = "flashinfer-python==0.7.2.post1"
    for family in ("moe", "moe_sm80"):
        whole = _out(capsys, ["audit", spec, "--family", family, "--json"])
        again = ["--no-cache"] if family == "moe" else []
        parts = _shards(capsys, tmp_path, [spec, "--family", family, *again], 2, name=family)
        docs = [json.loads(Path(p).read_text()) for p in parts]
        assert all(d["tactics"] for d in docs) or family == "moe_sm80"
        assert _out(capsys, ["audit", "--merge", *parts, "--json"]) == whole
        assert len(json.loads(whole)["tactics"]) == {"moe": 88, "moe_sm80": 255}[family]
