"""audit on SM103: TensorRT-LLM's MoE grouped GEMM tactics of an SM103 build, and the tile filter.

flashinfer 0.7.2.post1's SM103 MoE module (``gen_cutlass_fused_moe_sm103_module``) compiles the
generator's SM103 operations (``cutlass_instantiations/103/gemm_grouped/103``: 12 files, 96
``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM(Sm103, SafeFP4, SafeFP4, ...)`` lines, CTA 128x128 or
128x256, ``CTA_K_`` 256) and SM100's (``.../gemm_grouped/100``). What the rules below are read from:

* ``moe_gemm_tma_ws_launcher.inl`` 244-246: ``MmaTileShape = Shape<Int<CTA_M_*(Is2SM ? 2 : 1)>,
  Int<CTA_N_>, Int<CTA_K_*(IsSM103 ? 3 : 1)>>``: an Sm103 kernel's MMA tile has 3x the K of its
  CTA tile (768 FP4 elements = 384 bytes for ``CTA_K_`` 256);
* ``moe_gemm_template_dispatch_tma_ws.h`` 464-480: ``SHAPE_CASE(103, 128, 128, 128)`` and
  ``(103, 128, 256, 128)`` on ``tile_config_sm100`` (``CutlassTileConfigSM103`` is an alias of
  ``CutlassTileConfigSM100``, ``gemm_configs.h`` 179), ``KtileBytes = K*8/bits``: the enum
  ``CtaShape128x128x128B`` is ``CTA_K_`` 256 of FP4, the name counts the CTA tile's K;
* the same enum names an Sm100 kernel of the same types, so an Sm103 tactic's id ends in ``sm103``.

The offline tests hold launcher lines copied from those files and what they must give, worked
out by hand from those rules; the candidate list is written by hand in the shape
``get_candidate_configs`` gives.
"""

from __future__ import annotations

import re

import pytest
from test_audit_sm100_moe import _tactic

from cutlass_layout.commands.audit import filter_tests, tactic_filter, unmatched_filters
from cutlass_layout.installs.candidate_lists import sm103_rules
from cutlass_layout.installs.candidates import SM103_CONDITION, Candidates
from cutlass_layout.installs.moe_runners import runner_flags

#: (launcher arguments copied from the generated sources, expected identity)
LINES = [
    # cutlass_kernel_file_gemm_grouped_sm103_M128_BS_group11: FINALIZE 128x256, 2SM, static cluster
    (
        "Sm103, SafeFP4, SafeFP4, __nv_bfloat16, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, FINALIZE, "
        "128, 256, 256, 2, 1, 1, false, false, false, true",
        dict(
            name="CtaShape128x256x128B",
            a="nvfp4",
            b="nvfp4",
            out="bf16",
            fusion="finalize",
            swap_ab=True,
            tile=[128, 256, 256],
            mma_tile=[256, 256, 768],
            sm_version=103,
            cluster=[2, 1, 1],
            mma_sms=2,
            dynamic_cluster=False,
            epilogue_schedule="tma",
            id="moe/CtaShape128x256x128B/nvfp4xnvfp4/bf16/finalize/swap_ab/2sm/sm103",
        ),
    ),
    # ..._group0: NONE 128x128, 1SM, dynamic cluster, no shared-memory epilogue
    (
        "Sm103, SafeFP4, SafeFP4, half, PtrArrayNoSmemWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 128, 256, 1, 1, 1, false, true, false, true",
        dict(
            name="CtaShape128x128x128B",
            out="f16",
            fusion="none",
            tile=[128, 128, 256],
            mma_tile=[128, 128, 768],
            sm_version=103,
            cluster=None,
            mma_sms=1,
            dynamic_cluster=True,
            epilogue_schedule="nosmem",
            id="moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/swap_ab/1sm/dynamic_cluster/nosmem/sm103",
        ),
    ),
    # the same build's SM100 kernel of that enum and those types (gemm_grouped/100): its id as on SM100
    (
        "Sm100, SafeFP4, SafeFP4, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 128, 256, 1, 1, 1, false, true, false, true",
        dict(
            name="CtaShape128x128x128B",
            tile=[128, 128, 256],
            mma_tile=None,
            sm_version=100,
            mma_sms=1,
            id="moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/swap_ab/1sm/dynamic_cluster",
        ),
    ),
    # an SM100 2SM kernel: the MMA tile is 2M
    (
        "Sm100, SafeFP4, SafeFP4, half, PtrArrayTmaWarpSpecialized, EpilogueOpDefault, NONE, "
        "128, 64, 256, 2, 1, 1, false, false, false, false",
        dict(
            name="CtaShape128x64x128B",
            tile=[128, 64, 256],
            mma_tile=[256, 64, 256],
            sm_version=100,
            mma_sms=2,
            id="moe/CtaShape128x64x128B/nvfp4xnvfp4/f16/none/2sm",
        ),
    ),
    # SM120: one tile, no arch-tag choice
    (
        "Sm120, SafeFP4, SafeFP4, half, void, EpilogueOpDefault, NONE, "
        "128, 128, 128, 1, 1, 1, false, false, false, true",
        dict(
            name="CtaShape128x128x64B",
            tile=[128, 128, 128],
            mma_tile=None,
            sm_version=None,
            id="moe/CtaShape128x128x64B/nvfp4xnvfp4/f16/none/swap_ab",
        ),
    ),
]


@pytest.mark.parametrize("args, want", LINES, ids=[w["id"] for _, w in LINES])
def test_sm103_launcher_lines_name_their_tactics(tmp_path, args, want):
    t = _tactic(tmp_path, args)
    got = {k: (t.id if k == "id" else getattr(t, k)) for k in want}
    assert got == want
    row = t.identity()  # the JSON row's keys
    assert row["mma_tile"] == want["mma_tile"] and row["sm_version"] == want["sm_version"]


def test_the_kernels_type_gives_the_mma_tile(tmp_path):
    """The kernel's own mainloop tile (``CollectiveMma<Policy, TileShape, ...>``: the builder's
    ``TileShape_MNK``, the launcher's ``MmaTileShape``) is what ``mma_tile`` records."""
    spelled = (
        "cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, long>>, "
        "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm103ArrayTmaUmmaWarpSpecializedBlockScaled"
        "<3, 3, 8, 2, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1>>>, "
        "cute::tuple<cute::C<256>, cute::C<256>, cute::C<768>>, P, S, P, S, T>, E, void>"
    )
    t = _tactic(tmp_path, LINES[0][0], spelling=spelled)
    assert t.tile == [128, 256, 256] and t.mma_tile == [256, 256, 768]
    assert t.schedule == "MainloopSm103ArrayTmaUmmaWarpSpecializedBlockScaled"


# -------------------------------------------------------------------------------------------
# the tile filter: the enum's CTA tile, or the kernel's MMA tile
def _pool(tmp_path):
    return {t.id: t for t in (_tactic(tmp_path, args) for args, _ in LINES)}


@pytest.mark.parametrize(
    "typed, want",
    [
        # the enum's CTA tile (K in bytes, or in elements): every arch tag and 1SM/2SM of it
        (
            "128x128x128B",
            {
                "moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/swap_ab/1sm/dynamic_cluster/nosmem/sm103",
                "moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/swap_ab/1sm/dynamic_cluster",
            },
        ),
        ("128x64x256", {"moe/CtaShape128x64x128B/nvfp4xnvfp4/f16/none/2sm"}),
        # a 2SM kernel by its MMA tile (2M), either unit
        ("256x64x128B", {"moe/CtaShape128x64x128B/nvfp4xnvfp4/f16/none/2sm"}),
        ("256x64x256", {"moe/CtaShape128x64x128B/nvfp4xnvfp4/f16/none/2sm"}),
        # an SM103 kernel by its MMA tile (3K: 768 FP4 = 384 B; 2SM: 2M too)
        ("128x128x384B", {"moe/CtaShape128x128x128B/nvfp4xnvfp4/f16/none/swap_ab/1sm/dynamic_cluster/nosmem/sm103"}),
        ("256x256x768", {"moe/CtaShape128x256x128B/nvfp4xnvfp4/bf16/finalize/swap_ab/2sm/sm103"}),
        # neither: 2M with the CTA's K on SM103, 3K with the CTA's M on a 2SM kernel
        ("256x256x128B", set()),
        ("128x256x384B", set()),
    ],
)
def test_a_tile_matches_the_cta_tile_or_the_mma_tile(tmp_path, typed, want):
    pool = _pool(tmp_path)
    keep = tactic_filter(tile=typed)
    assert {i for i, t in pool.items() if keep(t)} == want


def test_a_tile_that_matches_nothing_names_both_tiles(tmp_path):
    """The nearest values name the CTA tile both ways and the MMA tile after it, where it is
    another. By hand (the sum of |log2| differences, each tile read in elements and in bytes):
    256x64x64B is 1 from the 2SM kernel's MMA tile 256x64x128B (K), 2 from SM120's
    128x128x64B (M, N), 3 from the 128x128x128B tiles; 256x256x512 is 0.58 from the SM103
    2SM kernel's MMA tile 256x256x768."""
    pool = list(_pool(tmp_path).values())
    (u,) = unmatched_filters(pool, None, filter_tests(tile="256x64x64B"))
    assert (u["filter"], u["value"]) == ("tile", "256x64x64B")
    assert u["nearest"][0] == "128x64x128B = 128x64x256 nvfp4 (2SM MMA 256x64x256)"
    assert (
        "nearest (K in bytes = K in elements of the element named): 128x64x128B = 128x64x256 nvfp4 (2SM MMA 256x64x256)"
    ) in u["note"]
    assert "128x256x128B = 128x256x256 nvfp4 (Sm103 2SM MMA 256x256x768)" in " ".join(
        unmatched_filters(pool, None, filter_tests(tile="256x256x512"))[0]["nearest"]
    )


# -------------------------------------------------------------------------------------------
# the report: how many are SM100-built kernels; the columns that tell twin rows apart
def _result(tmp_path, tactics):
    from cutlass_layout.model import AuditResult, Constant, KernelNumbers, Verdict

    for t in tactics:  # no numbers: what is checked here is which row says what
        t.numbers = KernelNumbers(Verdict.FITS)
    prov = {
        "library": "flashinfer-python",
        "version": "0.7.2.post1",
        "origin": SPEC,
        "cutlass_version": "4.5.0",
        "cutlass_root": str(tmp_path),
        "tree_hash": "0",
    }
    return AuditResult(
        provenance=prov,
        arch="sm103",
        tactics=tactics,
        capacity=Constant(name="sm100_smem_capacity_bytes", value=CAPACITY, file="cutlass/arch/arch.h", line=46),
    )


def test_the_head_counts_the_sm100_built_kernels_of_an_sm103_audit(tmp_path):
    from cutlass_layout.reports.audit import head_lines, built_elsewhere

    res = _result(tmp_path, [_tactic(tmp_path, args) for args, _ in LINES])  # 2 Sm103, 2 Sm100, 1 Sm120
    assert built_elsewhere(res) == " (2 of them Sm100 kernels, which an sm103 build compiles too)"
    assert head_lines(res)[2] == (
        "sm103: 5 tactics (2 of them Sm100 kernels, which an sm103 build compiles too) "
        "from 0 generated sources; capacity 232448 B (sm100_smem_capacity_bytes, "
        "cutlass/arch/arch.h:46)"
    )
    res = _result(tmp_path, [_tactic(tmp_path, LINES[3][0])])
    res.arch = "sm100"  # an SM100 audit's own kernels are not counted
    assert built_elsewhere(res) == ""


def test_twin_rows_differ_in_a_column(tmp_path):
    """An Sm100 and an Sm103 launcher of one tile enum, types, fusion, swap_ab, 1SM, dynamic
    cluster, no-smem epilogue (the second line of LINES with its arch tag changed): the arch tag
    column tells them apart, and the columns whose value they share are left out."""
    from cutlass_layout.reports.audit import columns_and_rows

    sm103 = LINES[1][0]
    twins = [_tactic(tmp_path, sm103), _tactic(tmp_path, sm103.replace("Sm103", "Sm100", 1))]
    cols, rows = columns_and_rows(_result(tmp_path, twins).tactics)
    heads = [c.header for c in cols]
    assert "arch tag" in heads and not {"MMA", "cluster", "epi"} & set(heads)
    assert [r[heads.index("arch tag")] for r in rows] == ["Sm103", "Sm100"]
    assert len({tuple(r) for r in rows}) == 2
    # 1SM and 2SM, static and dynamic cluster, TMA and no-smem epilogues: each a column
    mixed = [_tactic(tmp_path, args) for args, _ in LINES[:2]]
    cols, rows = columns_and_rows(_result(tmp_path, mixed).tactics)
    heads = [c.header for c in cols]
    assert [[r[heads.index(h)] for h in ("MMA", "cluster", "epi")] for r in rows] == [
        ["2SM", "2x1x1", "tma"],
        ["1SM", "dynamic", "nosmem"],
    ]
    assert "arch tag" not in heads  # both Sm103


# -------------------------------------------------------------------------------------------
# runtime candidates: which configs run which arch tag's kernel
def test_sm103_candidates_match_the_arch_tag(tmp_path):
    """A config of an SM103 runner's list runs the Sm103 kernel (fifth entry 103) or an Sm100
    one (100, SM100's list appended for an FP4 runner); a tactic is tried where a config has
    its tile, 1SM/2SM, cluster kind, epilogue schedule and arch tag, and the dispatch switch of
    that arch tag maps the tile (SM103's: 128x128 and 128x256 only)."""
    fp4 = str(runner_flags("nvfp4", "nvfp4"))
    cand = Candidates(
        duplicated=True,
        finalize_needs_tma=True,
        dispatched=["CtaShape128x64x128B", "CtaShape128x128x128B", "CtaShape128x256x128B"],
        dispatched_by={
            "103": ["CtaShape128x128x128B", "CtaShape128x256x128B"],
            "100": ["CtaShape128x64x128B", "CtaShape128x128x128B", "CtaShape128x256x128B"],
        },
        sm100={
            fp4: [
                ["CtaShape128x128x128B", "ClusterShape_1x1x1", True, "NO_SMEM", 103],
                ["CtaShape128x256x128B", "ClusterShape_2x1x1", False, "TMA", 103],
                ["CtaShape128x64x128B", "ClusterShape_2x1x1", False, "TMA", 100],
                ["CtaShape128x128x128B", "ClusterShape_1x1x1", True, "TMA", 100],
            ]
        },
    )
    line = (
        "Sm{sm}, SafeFP4, SafeFP4, half, {s}, EpilogueOpDefault, {f}, 128, {n}, 256, {c}, 1, 1, false, {d}, false, {w}"
    )
    nosmem, tma = "PtrArrayNoSmemWarpSpecialized", "PtrArrayTmaWarpSpecialized"

    def tried(**kw):
        return cand.get(_tactic(tmp_path, line.format(**kw)))

    assert tried(sm=103, s=nosmem, f="NONE", n=128, c=1, d="true", w="false") is True
    assert tried(sm=103, s=nosmem, f="NONE", n=128, c=1, d="true", w="true") is True  # swap_ab copy
    assert tried(sm=103, s=nosmem, f="FINALIZE", n=128, c=1, d="true", w="false") is False  # erased
    assert tried(sm=100, s=nosmem, f="NONE", n=128, c=1, d="true", w="false") is False  # that config runs Sm103
    assert tried(sm=100, s=tma, f="NONE", n=128, c=1, d="true", w="false") is True
    assert tried(sm=103, s=tma, f="NONE", n=128, c=1, d="true", w="false") is False  # that config runs Sm100
    assert tried(sm=103, s=tma, f="FINALIZE", n=256, c=2, d="false", w="true") is True
    assert tried(sm=100, s=tma, f="NONE", n=64, c=2, d="false", w="false") is True
    # a row of the tile, but the SM103 switch does not map it
    cand.sm100[fp4].append(["CtaShape128x64x128B", "ClusterShape_1x1x1", False, "TMA", 103])
    assert tried(sm=103, s=tma, f="NONE", n=64, c=1, d="false", w="false") is False


def _tokens(text: str) -> list[str]:
    """C++ tokens as libclang gives them (comments dropped)."""
    text = re.sub(r"//[^\n]*", "", text)
    return re.findall(r"\w+|::|&&|\|\||==|!=|->|[^\s\w]", text)


#: getTmaWarpSpecializedConfigs (moe_gemm_template_dispatch.h, 0.7.2.post1), the statements naming 103
METHOD = """
  sm = use_wfp4afp8 && sm == 103 ? 100 : sm;
  std::vector<cutlass_extensions::CutlassGemmConfig> tma_ws_configs =
      kernels::cutlass_kernels::get_candidate_configs(sm, max_split_k, config_type_param);
  if (sm == 103 && use_fp4) {
    // Explicitly select SM100 as well
    auto sm100_configs = tensorrt_llm::kernels::cutlass_kernels::get_candidate_configs(
        100, max_split_k, config_type_param);
    std::copy(sm100_configs.begin(), sm100_configs.end(), std::back_inserter(tma_ws_configs));
  }
"""


def test_sm103_rules_from_the_runner_method():
    assert sm103_rules(_tokens(METHOD)) == {"to_sm100": "use_wfp4afp8", "append_sm100": "use_fp4"}
    assert sm103_rules(_tokens("return get_candidate_configs(sm, 1, p);")) == {"to_sm100": None, "append_sm100": None}
    # a 103 this reader does not follow, or a runner variable it does not know: not read
    for text in (METHOD + "if (sm == 103) { return {}; }", METHOD.replace("use_fp4", "use_fp4_mixed")):
        said = sm103_rules(_tokens(text))
        assert isinstance(said, str) and said.startswith("runtime candidates: ")


def test_the_sm103_switch_condition_as_the_dispatch_writes_it():
    """moe_gemm_template_dispatch_tma_ws.h 466-467, tokenized."""
    text = (
        "gemm_config.sm_version == 103 && std::is_same_v<T, Fp4Type> &&\n"
        "             std::is_same_v<WeightType, Fp4Type>"
    )
    assert " ".join(_tokens(text)) == SM103_CONDITION


# -------------------------------------------------------------------------------------------
# against nvcc (network: the wheel; nvcc: its host pass)
SPEC = "flashinfer-python==0.7.2.post1"
CAPACITY = 232448  # cutlass::arch::sm100_smem_capacity_bytes (cutlass/arch/arch.h; Sm103 takes SM100's)
#: FINALIZE 128x256 2SM TMA (8 launchers) and NONE 128x128 1SM no-smem (8): both outputs,
#: static and dynamic clusters, swap_ab and not
SAMPLE = (
    "cutlass_kernel_file_gemm_grouped_sm103_M128_BS_group11.generated.cu",
    "cutlass_kernel_file_gemm_grouped_sm103_M128_BS_group0.generated.cu",
)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_sm103_moe_tactics_against_nvcc(nvcc, tmp_path, only_sources):
    """Two of the SM103 module's 12 Sm103 sources, audited (the install's builders run, then
    only these two are kept) and compiled by nvcc's host pass for sm_103a with the module's
    flags: every launcher's kernel, mainloop and epilogue ``sizeof(SharedStorage)`` and stage
    count as nvcc computes them (``cl_show``, tests/test_audit_nvcc.py) equal the audit's;
    each launcher line is one tactic, named by the launcher rules of the module docstring.

    Runtime candidates, by hand from 0.7.2.post1's code: the NVFP4 runner on SM103 gets
    ``get_candidate_configs(103, ...)`` (``getTmaWarpSpecializedConfigs``), whose FP4 branch of
    ``get_candidate_configs_sm100_dynamic_cluster_shape`` (``sm`` 103: no early return for
    NO_SMEM) pushes 128x128 and 128x256, 1SM for every dynamic cluster (1x1x1, 4x1x1, 4x2x1)
    and Undefined, 2SM where the cluster's M is even or Undefined, for TMA and NO_SMEM, each
    with ``sm_version`` 103 (the dispatch's SM103 switch: Sm103 kernels); FINALIZE copies of
    the TMA ones, swap_ab copies of all. So all 16 are tried."""
    from test_audit_nvcc import moe_sizes_against_nvcc

    from cutlass_layout.commands.audit import audit
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    some = only_sources(lambda name: name in SAMPLE)
    res = audit(SPEC, "sm103", family="moe")
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    moe = next(
        m for m in some(install, "sm103", cuda_version=tgt.cuda.version).modules if m.name.startswith("fused_moe")
    )
    assert sorted(p.name for p in moe.generated) == sorted(SAMPLE)
    assert len({t.id for t in res.tactics}) == len(res.tactics) == 16
    assert moe_sizes_against_nvcc(res, moe, install.tree, "sm_103a", tmp_path, CAPACITY) == 16
    by_file = {name: [t for t in res.tactics if t.file.endswith(name)] for name in SAMPLE}
    assert {
        (t.name, tuple(t.tile), tuple(t.mma_tile), t.mma_sms, t.fusion, t.epilogue_schedule) for t in by_file[SAMPLE[0]]
    } == {("CtaShape128x256x128B", (128, 256, 256), (256, 256, 768), 2, "finalize", "tma")}
    assert {
        (t.name, tuple(t.tile), tuple(t.mma_tile), t.mma_sms, t.fusion, t.epilogue_schedule) for t in by_file[SAMPLE[1]]
    } == {("CtaShape128x128x128B", (128, 128, 256), (128, 128, 768), 1, "none", "nosmem")}
    assert all(t.sm_version == 103 and t.id.endswith("/sm103") for t in res.tactics)
    assert all(t.runtime_candidate is True for t in res.tactics), [t.id for t in res.tactics]
    # found by the enum's tile and by the MMA tile
    assert len(audit(SPEC, "sm103", family="moe", tile="128x256x128B").tactics) == 8
    assert len(audit(SPEC, "sm103", family="moe", tile="256x256x384B").tactics) == 8
    assert len(audit(SPEC, "sm103", family="moe", tile="128x128x768").tactics) == 8


def test_an_sm103_build_is_judged_and_probed_with_sm100s_capacity():
    """An SM103 build's sources (``Source.arch`` ``sm103``) get SM100's capacity constant, so
    their kernels are laid out in place, in the parse that finds them, as SM100's are
    (``cutlass::arch::sm100_smem_capacity_bytes``: cutlass/arch/arch.h; the SM100 builders and
    kernels use it for SM103); SM121's builds are SM120's; an arch outside the three families
    has none."""
    from cutlass_layout.installs.kernels import CAPACITY
    from cutlass_layout.subjects.archs import ARCHS, capacity_of

    assert (
        capacity_of("sm103")
        == capacity_of("sm100")
        == ARCHS["sm103"].capacity
        == "cutlass::arch::sm100_smem_capacity_bytes"
    )
    assert capacity_of("sm121") == CAPACITY["sm120"] == "cutlass::arch::sm120_smem_capacity_bytes"
    assert capacity_of("sm90") == "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes"
    assert capacity_of("sm80") is None and capacity_of("all") is None
