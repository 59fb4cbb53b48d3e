"""Launch verdicts (issue 44, items 4 and 5): a 3.x kernel's cluster, read from its types
(``ClusterShape``, ``AtomThrShapeMNK``) and judged by its arch's rules, and every launch
finding as a verdict ``--check`` can fail on.

Expected values are derived by hand from the rules' sources (each test says which) and from
the fixture headers (``fixtures/headers/cluster_kernels.hpp``, a stand-in tree
``fixtures/headers/cluster_tree``); none is the tool's output pasted back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout import layouts, target
from cutlass_layout.model import ClusterLegality, Occupancy, PerSmLimits
from cutlass_layout.model.launch import launch_findings, occupancy_findings
from cutlass_layout.subjects.user_type import UserType

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "headers"
HEADER = FIXTURES / "cluster_kernels.hpp"
TREE = FIXTURES / "cluster_tree" / "include"


@pytest.mark.parametrize(
    "shape, mma, family, verdict",
    [
        # SM120 builders: static_assert(size(ClusterShape_MNK{}) == Int<1>{}) (sm120_mma_builder.inl)
        ((1, 1, 1), None, "sm120", "legal"),
        ((2, 1, 1), None, "sm120", "illegal"),
        # CUDA programming guide, Thread Block Clusters: 8 CTAs portable, 16 with the opt-in
        ((2, 4, 1), None, "sm90", "legal"),  # 8 CTAs
        ((3, 3, 1), None, "sm90", "non_portable"),  # 9
        ((4, 4, 1), None, "sm90", "non_portable"),  # 16
        ((4, 8, 1), None, "sm90", "illegal"),  # 32
        # sm100_common.inl: a 2-SM MMA's cluster M % 2 == 0
        ((1, 2, 1), 2, "sm100", "illegal"),
        ((2, 1, 1), 2, "sm100", "legal"),
        ((1, 2, 1), 1, "sm100", "legal"),  # a 1-SM MMA: any M
        ((4, 4, 1), 2, "sm100", "non_portable"),
        ((None, None, 1), 2, "sm100", "run_time"),  # a dynamic cluster: can_implement's, at launch
        ((2, 1, 1), None, None, "not_checked"),  # before SM90: no rule here
    ],
)
def test_cluster_rules(shape, mma, family, verdict):
    c = ClusterLegality.of(shape, mma, family)
    assert c.verdict == verdict
    assert bool(c.findings()) == (verdict in ("illegal", "non_portable"))
    assert ClusterLegality.from_dict(c.to_dict()) == c


def test_cluster_finding_words():
    """3 x 3 x 1 = 9 CTAs on SM90: over the portable 8, under 16: "non-portable", not illegal."""
    c = ClusterLegality.of((3, 3, 1), None, "sm90")
    assert c.findings() == [
        "cluster 3x3x1: 9 CTAs, over the portable 8: launches only with "
        "cudaFuncAttributeNonPortableClusterSizeAllowed (non-portable)"
    ]
    assert ClusterLegality.of((2, 1, 1), None, "sm120").findings() == [
        "cluster 2x1x1: SM120/SM121 take only 1x1x1 clusters"
    ]


#: SM120's per-SM limits as CCCL's arch_traits.h gives them (tests/test_launch.py derives them).
SM120 = PerSmLimits("sm_120a", "arch_traits.h", 102400, 1024, 24, 1536, 65536)


def test_zero_ctas_is_a_launch_finding():
    """2048 threads per CTA on SM120 (1536 per SM): 1536 // 2048 = 0 CTAs by threads, a launch
    finding. 102400 B of dynamic shared memory: 102400 // (102400 + 1024) = 0 CTAs by shared
    memory alone, which is the over-capacity verdict itself (101376 = 102400 - 1024), not a
    launch finding; 93184 B: 102400 // 94208 = 1 (no finding). Without a register split the
    bound (at_most) is what is 0."""
    threads = Occupancy.of(2048, 1, 1024, None, SM120)
    assert threads.at_most == 0 and "threads" in threads.limited_by
    assert occupancy_findings(threads) == [f"0 CTAs/SM (limited by {', '.join(threads.limited_by)}): it cannot launch"]
    smem = Occupancy.of(384, 1, 102400, None, SM120)
    assert smem.at_most == 0 and smem.limited_by == ("shared_memory",)
    assert occupancy_findings(smem) == []
    assert occupancy_findings(Occupancy.of(384, 1, 93184, None, SM120)) == []
    assert occupancy_findings(None) == []
    c = ClusterLegality.of((2, 1, 1), None, "sm120")
    assert launch_findings(threads, None, c) == [*occupancy_findings(threads), *c.findings()]


#: (arch, type) -> (shape, mma_ctas, verdict), from the fixture's ClusterShape/AtomThrShapeMNK
#: and the rules above.
READ = {
    ("sm120", "One"): ((1, 1, 1), None, "legal"),
    ("sm120", "TwoByOne"): ((2, 1, 1), None, "illegal"),
    ("sm120", "Dynamic"): ((None, None, 1), None, "run_time"),  # tuple<int, int, C<1>>
    ("sm90", "TwoByOne"): ((2, 1, 1), None, "legal"),
    ("sm90", "Sixteen"): ((4, 4, 1), None, "non_portable"),
    ("sm90", "ThirtyTwo"): ((4, 8, 1), None, "illegal"),
    ("sm100", "TwoSmOddM"): ((1, 2, 1), 2, "illegal"),
    ("sm100", "TwoSmEvenM"): ((2, 1, 1), 2, "legal"),
}


def test_cluster_read_from_the_kernels_types(tmp_path, monkeypatch):
    """The probe reads ClusterShape and AtomThrShapeMNK from the kernel type (no name is
    parsed: the fixture's names say nothing of their clusters); a kernel with no ClusterShape
    has no legality."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    tgt = target(str(TREE))
    keys = list(READ)
    reps = layouts(
        [UserType(HEADER, f"clusters::{t}", a) for a, t in keys] + [UserType(HEADER, "clusters::NoCluster", "sm90")],
        tgt,
    )
    for (arch, name), rep in zip(keys, reps[:-1], strict=True):
        assert rep.error is None, rep.error
        c = rep.cluster
        assert c is not None and (c.shape, c.mma_ctas, c.verdict) == READ[arch, name], (arch, name)
        assert rep.to_dict()["launch_findings"] == c.findings()
    assert reps[-1].error is None and reps[-1].cluster is None


# ---------------------------------------------------------------------------------------
# verdicts: audit --checks


def _shard_with_an_illegal_cluster(mini, tmp_path, capsys) -> tuple[str, str]:
    """The miniature install's audit as one shard's JSON (``--shard 1/1``), with one tactic the
    runtime tries (one that fits) given a 2x1x1 cluster on SM120 (its kernels, stand-ins, have
    none): what a real kernel with an illegal cluster would carry. Returns the file and the id."""
    from cutlass_layout.cli import main

    path = tmp_path / "shard.json"
    assert main(["audit", str(mini), "--shard", "1/1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    t = next(t for t in doc["tactics"] if t["verdict"] == "fits" and t["runtime_candidate"])
    t["cluster_legality"] = ClusterLegality.of((2, 1, 1), None, "sm120").to_dict()
    t["launch_findings"] = ["cluster 2x1x1: SM120/SM121 take only 1x1x1 clusters"]  # as it reads back
    path.write_text(json.dumps(doc))
    return str(path), t["id"]


@pytest.mark.mini_shared
def test_checks_launch_fails_on_a_launch_finding(mini, tmp_path, capsys):
    from cutlass_layout.cli import main

    path, tid = _shard_with_an_illegal_cluster(mini, tmp_path, capsys)
    # --checks launch: exit 1, one line per finding, then the summary
    assert main(["audit", "--merge", path, "--checks", "launch"]) == 1
    err = capsys.readouterr().err
    want = f"launch check: {tid}: cluster 2x1x1: SM120/SM121 take only 1x1x1 clusters (tried by the runtime)"
    assert want in err.splitlines()
    assert "check failed: 1 tactic(s) cannot launch on sm120 (launch findings)" in err
    assert "over the 101376 B capacity" not in err  # smem is not asked for
    # --check alone (smem): today's meaning, the launch finding not named
    assert main(["audit", "--merge", path, "--check"]) == 1  # the mini's FINALIZE 256x128 is over capacity
    err = capsys.readouterr().err
    assert "launch check:" not in err and "check: moe/CtaShape256x128x32B" in err
    assert main(["audit", "--merge", path, "--checks", "smem,launch"]) == 1
    err = capsys.readouterr().err
    assert want in err.splitlines() and "check: moe/CtaShape256x128x32B" in err
    # the JSON row, the GitHub annotation and the SARIF result carry it
    assert main(["audit", "--merge", path, "--json"]) == 0
    row = next(t for t in json.loads(capsys.readouterr().out)["tactics"] if t["id"] == tid)
    assert row["launch_findings"] == ["cluster 2x1x1: SM120/SM121 take only 1x1x1 clusters"]
    assert main(["audit", "--merge", path, "--format", "github"]) == 0
    out = capsys.readouterr().out
    assert any(
        ln.startswith("::error ")
        and f"title=cutlass-layout%3A launch%3A {tid}::" in ln  # GitHub escapes a title's colons
        and ln.endswith(f"::{tid}: cannot launch on sm120: cluster 2x1x1: SM120/SM121 take only 1x1x1 clusters")
        for ln in out.splitlines()
    ), out
    assert main(["audit", "--merge", path, "--format", "sarif"]) == 0
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    launch = [r for r in results if r["ruleId"] == "launch"]
    assert len(launch) == 1 and launch[0]["level"] == "error"
    assert launch[0]["properties"]["launch_findings"] == row["launch_findings"]


@pytest.mark.mini_shared
def test_checks_launch_passes_without_findings(mini, capsys):
    """The miniature install's stand-in kernels declare no cluster, threads or Params: no
    launch finding, so --checks launch passes where --check (smem) fails."""
    from cutlass_layout.cli import main

    assert main(["audit", str(mini), "--checks", "launch"]) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    # a pass is said, with what was not verified: the stand-in install's tactics are all tried
    # (no candidate list says otherwise), and an audit reads no Params
    scope = [ln for ln in err.splitlines() if ln.startswith("launch check: ")]
    assert len(scope) == 1 and "tactic(s) checked (occupancy, cluster, TMA transaction bytes)" in scope[0]
    assert "not verified: Params" in scope[0]
    assert "launch check:" not in capsys.readouterr().err


@pytest.mark.parametrize("value", ["bogus", "smem,nope", ",", ""])
def test_checks_takes_smem_and_launch_only(value, capsys):
    from cutlass_layout.core.progress import is_progress_line
    from cutlass_layout.cli import main

    assert main(["audit", "/nowhere/at/all", "--checks", value]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert "Traceback" not in err and lines == [
        f"error: --checks {value!r}: choose smem, launch (or both, comma-separated)"
    ]


# ---------------------------------------------------------------------------------------
# layout --tactic shows Params (issue 44's first "Done when")

#: flashinfer 0.7.4's SM120 MoE FINALIZE tactic (NVFP4, 128x128x64B): the kernel of issue 44's
#: flashinfer#4990 (384 threads, 93184 B of SharedStorage).
FINALIZE = "moe/CtaShape128x128x64B/nvfp4xnvfp4/bf16/finalize"


@pytest.mark.network
@pytest.mark.slow  # a cold SM120 MoE audit of 0.7.4, then one probe more
def test_layout_tactic_shows_occupancy_params_and_cluster(capsys):
    """By hand from the headers of flashinfer 0.7.4:

    * occupancy: tests/test_launch.py's derivation (102400 // (93184 + 1024) = 1 by shared
      memory; 128 x 40 + 256 x 232 = 64512 registers, 65536 // 64512 = 1): 1 CTA/SM, limited by
      shared memory and registers;
    * Params: the mainloop (``sm120_blockscaled_mma_array_tma.hpp``, ``struct Params``) holds
      ``tma_load_a``, ``tma_load_b``, ``tma_load_sfa``, ``tma_load_sfb``, the epilogue
      (``sm90_epilogue_array_tma_warpspecialized.hpp``) ``tma_load_c`` and ``tma_store_d``: six
      TiledCopy members, each a ``Copy_Traits<SM90_TMA_LOAD|STORE, ...>`` whose first member is
      ``TmaDescriptor tma_desc_`` (``copy_traits_sm90_tma.hpp``), in that order; a
      ``TmaDescriptor`` is ``CUtensorMap``, ``alignas(64)`` in CUDA's ``cuda.h``, so every
      offset is a multiple of 64, and Params' alignment too; CUDA 13.0 >= 12.1: the limit is
      32764 B;
    * Params on MSVC x64 (cl.exe's default ``__cplusplus``, 199711L: cuda.h gives
      ``CUtensorMap`` no alignas, so it is 8-byte aligned): the kernel's Params starts
      ``GemmUniversalMode mode`` (4 B at 0) and the grouped ``GroupProblemShape``
      (``group_array_problem_shape.hpp``: ``int32_t num_groups`` and two pointers, 24 B, align 8,
      at 8), so the mainloop's ``tma_load_a`` descriptor is at 32 (on Linux 32 rounds up to
      128); Params is 8-byte aligned; the same six descriptors, in the same order;
    * cluster: TensorRT-LLM's SM120 MoE launchers are built with ``Shape<_1, _1, _1>``, the
      only cluster CUTLASS's SM120 builders take: legal."""
    from cutlass_layout.cli import main

    argv = ["layout", "--cutlass", "flashinfer-python==0.7.4", "--arch", "sm120", "--tactic", FINALIZE]
    assert main([*argv, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kernel"]["size"] == 93184
    assert rep["occupancy"]["ctas_per_sm"] == 1 and rep["occupancy"]["limited_by"] == ["shared_memory", "registers"]
    p = rep["params"]
    assert p is not None and p["limit_bytes"] == 32764 and p["findings"] == []
    paths = [d["path"].split(".")[0:2] for d in p["descriptors"]]
    assert paths == [
        ["mainloop", "tma_load_a"],
        ["mainloop", "tma_load_b"],
        ["mainloop", "tma_load_sfa"],
        ["mainloop", "tma_load_sfb"],
        ["epilogue", "tma_load_c"],
        ["epilogue", "tma_store_d"],
    ]
    assert all(d["path"].endswith(".tma_desc_") and d["offset"] % 64 == 0 for d in p["descriptors"])
    offsets = [d["offset"] for d in p["descriptors"]]
    assert offsets == sorted(offsets) and len(set(offsets)) == 6  # in declaration order, none shared
    assert p["align"] % 64 == 0 and p["size"] % p["align"] == 0 and p["size"] > offsets[-1] + 128
    assert p["abi"] == "linux-x86_64" and offsets[0] == 128
    m = rep["params_msvc"]
    assert m["abi"] == "msvc-x64" and m["align"] == 8 and m["descriptors"][0]["offset"] == 32
    assert [d["path"] for d in m["descriptors"]] == [d["path"] for d in p["descriptors"]]
    assert m["findings"][0].startswith(f"TMA descriptor {m['descriptors'][0]['path']} at offset 32 of Params")
    assert m["findings"][-1] == (
        "Params is 8-byte aligned on MSVC: its TMA descriptors are not 64-byte aligned wherever it is placed"
    )
    assert rep["cluster"] == {
        "shape": [1, 1, 1],
        "mma_ctas": None,
        "family": "sm120",
        "verdict": "legal",
        "reason": None,
    }
    assert rep["launch_findings"] == []
    # the text: every line of it, the Params read from the cache now (a second run: no note)
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "note: Params not read" not in cap.err
    assert "Occupancy: 1 CTA/SM (limited by shared_memory, registers)" in cap.out
    assert f"Params: sizeof {p['size']} B, align {p['align']}; kernel parameter limit 32764 B" in cap.out
    for d in p["descriptors"]:
        assert f"{d['offset']:>6}  {d['path']}" in cap.out
    assert f"Params on Windows x64 (MSVC), cl.exe's default __cplusplus: sizeof {m['size']} B, align 8" in cap.out
    assert f"    32  {m['descriptors'][0]['path']}  (not 64-byte aligned)" in cap.out
    assert "Cluster: 1x1x1: legal on sm120" in cap.out
