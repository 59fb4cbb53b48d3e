"""audit --blocklist: flashinfer's own tactics blocklist, written offline, loaded by flashinfer.

The file is loaded with the install's own ``TacticsBlocklist`` (``flashinfer/tactics_blocklist.py``
and its real autotuner, imported from the unpacked wheel; torch, tqdm and the JIT modules the
autotuner imports are stand-ins in ``sys.modules``), and its ``filter`` is run on the runner's
tactic lists as ``MoERunner.get_valid_tactics`` builds them.

The expected ids are worked out by hand from flashinfer 0.7.4's code:
``cutlass_heuristic.cpp`` ``get_candidate_configs_sm120`` lists 10 tiles (128x128x128B,
128x128x64B, 256x128x64B, 128x256x64B, 128x128x256B, 256x128x128B, 128x32x128B, 128x32x64B,
128x64x128B, 128x64x64B) and erases 128x128x256B and 256x128x128B for a grouped GEMM (and the
five ...x64B ones for FP8 activations): 8 tiles for NVFP4 x NVFP4, 3 for FP8 x FP4.
``getTmaWarpSpecializedConfigs`` (``moe_gemm_template_dispatch.h``) appends FINALIZE copies
(GEMM2 only: ``getTactics(GEMM_2)`` passes ``mayHaveFinalizeFused()``), then swap_ab copies of
all; ``getAmpereConfigs`` adds none for FP4 operands (``isValidAmpereMOESpecialisation``). So
the NVFP4 runner's GEMM1 list is 16 long (tactics 0..15) and GEMM2's 32 (tactics 16..47:
``get_valid_tactics`` numbers GEMM2 from ``gemm1_count``); the FINALIZE 256x128x64B and
128x256x64B are GEMM2 entries 8 + 2 and 8 + 3, tactics 26 and 27. The FP8 x FP4 runner has
6 + 12 tactics (0..17). The last test checks the same lists against the install's heuristic
compiled by nvcc and run (it runs after the CLI's audit of 0.7.4 here, whose results it reads
from the session's cache).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

import pytest

from cutlass_layout.checks.nvcc_probe import nvcc_flags
from cutlass_layout.cli import main
from cutlass_layout.commands.audit import audit
from cutlass_layout.installs.candidates import Candidates, moe_configs
from cutlass_layout.engine import loop as engine
from cutlass_layout.errors import BadInput
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.sources.flashinfer_jit import jit_modules
from cutlass_layout.sources.flashinfer import resolve_flashinfer

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"
FI_074 = "flashinfer-python==0.7.4"
FI_068 = "flashinfer-python==0.6.8"
TILES = [
    "CtaShape128x128x128B",
    "CtaShape128x128x64B",
    "CtaShape256x128x64B",
    "CtaShape128x256x64B",
    "CtaShape128x128x256B",
    "CtaShape256x128x128B",
    "CtaShape128x32x128B",
    "CtaShape128x32x64B",
    "CtaShape128x64x128B",
    "CtaShape128x64x64B",
]
PRUNED = {
    "CtaShape128x128x256B": "always",
    "CtaShape256x128x128B": "always",
    **{t: "fp8" for t in TILES if t.endswith("x64B")},
}


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]


def test_moe_configs_follow_the_runtime_order():
    """The order ``getConfigs`` builds (see the module docstring), on a candidate list as
    ``get_candidate_configs_sm120`` of 0.7.4 reads."""
    cand = Candidates(
        tiles=TILES,
        pruned=PRUNED,
        dispatched=TILES,
        duplicated=True,
        duplication=["finalize", "swap_ab"],
        fallback_excludes_fp4=True,
        tma_first=True,
    )
    nv = [t for t in TILES if PRUNED.get(t) != "always"]
    assert moe_configs(cand, "nvfp4", "nvfp4", False) == [(t, "none", False) for t in nv] + [
        (t, "none", True) for t in nv
    ]
    gemm2 = moe_configs(cand, "nvfp4", "nvfp4", True)
    assert (
        len(gemm2) == 32
        and gemm2[8 + 2] == ("CtaShape256x128x64B", "finalize", False)
        and gemm2[8 + 3] == ("CtaShape128x256x64B", "finalize", False)
        and gemm2[16] == (nv[0], "none", True)
    )
    mixed = ["CtaShape128x128x128B", "CtaShape128x32x128B", "CtaShape128x64x128B"]
    assert moe_configs(cand, "mxfp8", "mxfp4", True) == [
        (t, f, s) for s in (False, True) for f in ("none", "finalize") for t in mixed
    ]
    # an order the code does not show is no order
    for change in (
        {"duplication": ["swap_ab", "finalize"]},
        {"no_smem": True},
        {"fallback_excludes_fp4": False},
        {"note": "not read"},
    ):
        assert moe_configs(Candidates(**{**cand.__dict__, **change}), "nvfp4", "nvfp4", True) is None
    assert moe_configs(cand, "bf16", "bf16", True) is None  # another runner: not the SM120 TMA list


def test_an_install_without_a_loader_is_refused_before_the_audit(tmp_path, monkeypatch, capsys):
    """The miniature install (fixtures/installs) has no flashinfer/tactics_blocklist.py."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    site = tmp_path / "site-packages"
    shutil.copytree(MINI, site)
    assert main(["audit", str(site), "--blocklist", str(tmp_path / "bl.json")]) == 2
    cap = capsys.readouterr()
    lines = _errors(cap.err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "has no tactics blocklist loader" in lines[0]
    assert cap.out == "" and not (tmp_path / "bl.json").exists()
    assert not (tmp_path / "cache" / "audit").exists()  # refused before anything was laid out
    # a file in a folder that does not exist: said before the audit too (not after 100 lines of it)
    missing = tmp_path / "missing" / "bl.json"
    assert main(["audit", str(site), "--blocklist", str(missing)]) == 2
    cap = capsys.readouterr()
    assert _errors(cap.err) == [f"error: cannot write the blocklist {missing}: no folder {missing.parent}"]
    assert cap.out == "" and not (tmp_path / "cache" / "audit").exists()


@pytest.fixture
def umask_022():
    """The process umask 0o022 for the test (a shell's usual one), restored after."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_the_blocklist_file_has_the_mode_open_gives(tmp_path, umask_022):
    """``--blocklist``'s file is written atomically (core.cache.write_atomic) with the mode a
    plain ``open(path, "w")`` gives (0o666 less the umask: 0o644 here), not ``mkstemp``'s 0o600,
    also where it replaces a file; its text is the JSON ``TacticsBlocklist.save`` writes, and
    no temporary file is left beside it."""
    import stat

    from cutlass_layout.commands.blocklist import write_blocklist
    from cutlass_layout.model import Blocklist, BlocklistFormat

    fmt = BlocklistFormat(
        version="9.8.7",
        loader="tactics_blocklist.py",
        metadata_key="_metadata",
        tactics_key="invalid_tactics",
        metadata_fields=["flashinfer_version"],
        ops={1: "trtllm::fused_moe::gemm1"},
        runner_class="MoERunner",
    )
    bl = Blocklist(
        format=fmt, arch="sm120", invalid_tactics={fmt.key(1): [3, 7]}, metadata={"flashinfer_version": "9.8.7"}
    )
    path = tmp_path / "bl.json"
    for _ in range(2):  # a new file, then one replaced
        assert write_blocklist(bl, path) == path
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert path.read_text() == json.dumps(bl.to_json(), indent=2) + "\n"
    assert json.loads(path.read_text())["invalid_tactics"] == {"trtllm::fused_moe::gemm1::MoERunner": [3, 7]}
    assert [p.name for p in tmp_path.iterdir()] == ["bl.json"]
    with pytest.raises(BadInput, match="no folder"):
        write_blocklist(bl, tmp_path / "missing" / "bl.json")


@pytest.mark.network
def test_068_has_no_loader(tmp_path, capsys):
    """flashinfer 0.6.8's wheel has flashinfer/autotuner.py and no tactics_blocklist.py
    (0.7.2.post1's and 0.7.4's have the same tactics_blocklist.py)."""
    assert main(["audit", FI_068, "--family", "moe", "--blocklist", str(tmp_path / "bl.json")]) == 2
    lines = _errors(capsys.readouterr().err)
    assert lines == [
        "error: flashinfer 0.6.8 has no tactics blocklist loader (flashinfer/"
        "tactics_blocklist.py): it cannot load a blocklist file"
    ]
    assert not (tmp_path / "bl.json").exists()


@pytest.fixture
def flashinfer_loader():
    """``load(root)``: flashinfer's own ``tactics_blocklist`` module from the package folder
    ``root``, its autotuner real, torch and the rest stand-ins; ``sys.modules`` is put back."""
    before = dict(sys.modules)

    def load(root: Path):
        for name in [n for n in sys.modules if n == "flashinfer" or n.startswith("flashinfer.")]:
            del sys.modules[name]
        pkg = types.ModuleType("flashinfer")
        pkg.__path__ = [str(root)]
        sys.modules["flashinfer"] = pkg
        for name in (
            "torch",
            "tqdm",
            "flashinfer.autotune_cache",
            "flashinfer.tllm_utils",
            "flashinfer.utils",
            "flashinfer.jit",
            "flashinfer.jit.core",
            "flashinfer.jit.cute_dsl_core",
        ):
            sys.modules[name] = mock.MagicMock(name=name)
        return importlib.import_module("flashinfer.tactics_blocklist")

    yield load
    for name in [n for n in sys.modules if n not in before]:
        del sys.modules[name]
    sys.modules.update(before)


@pytest.mark.network
@pytest.mark.slow
def test_074_blocklist_loads_and_removes_the_four_finalize_tactics(tmp_path, capsys, flashinfer_loader):
    path = tmp_path / "bl.json"
    assert main(["audit", FI_074, "--family", "moe", "--blocklist", str(path)]) == 0
    err = capsys.readouterr().err
    assert "blocklist: wrote" in err and "4 over-capacity tactic(s)" in err
    doc = json.loads(path.read_text())
    assert doc["invalid_tactics"] == {"trtllm::fused_moe::gemm2::MoERunner": [26, 27]}
    meta = doc["_metadata"]
    assert meta["flashinfer_version"] == "0.7.4"
    assert {k: v for k, v in meta.items() if k not in ("flashinfer_version", "generated_at", "generator")} == {
        k: "*"
        for k in (
            "cuda_version",
            "cublas_version",
            "cudnn_version",
            "cudnn_frontend_version",
            "cutlass_dsl_version",
            "gpu",
        )
    }

    tb = flashinfer_loader(resolve_flashinfer(FI_074).root)
    bl = tb.TacticsBlocklist()
    assert bl.load(str(path)) is True and bl.summary() == {"trtllm::fused_moe::gemm2::MoERunner": 2}

    class MoERunner:  # the key is the runner's class name
        pass

    runner = MoERunner()
    nvfp4_gemm1, nvfp4_gemm2 = list(range(16)), list(range(16, 48))
    assert bl.filter("trtllm::fused_moe::gemm1", runner, nvfp4_gemm1) == nvfp4_gemm1
    assert bl.filter("trtllm::fused_moe::gemm2", runner, nvfp4_gemm2) == [t for t in nvfp4_gemm2 if t not in (26, 27)]
    # the FP8 x FP4 runner's lists (0..5, 6..17) lose nothing
    assert bl.filter("trtllm::fused_moe::gemm2", runner, list(range(6, 18))) == list(range(6, 18))
    # the loader does compare the version: another version's file is skipped
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**doc, "_metadata": {**meta, "flashinfer_version": "0.7.3"}}))
    assert tb.TacticsBlocklist().load(str(other)) is False


# audit --blocklist against the install's own heuristic, compiled by nvcc and run on the host.
#
# A small program includes flashinfer 0.7.4's ``moe_gemm/moe_gemm_template_dispatch.h`` (with the
# module's defines and include paths, as tests/test_audit_nvcc.py compiles its sources) and prints,
# in order, ``MoeGemmRunner<T, WeightType, OutputType>::getConfigs(120, finalize)`` for the two
# SM120 runners (NVFP4 x NVFP4, FP8 x FP4), GEMM1 (no FINALIZE) and GEMM2 (FINALIZE): the lists
# the fused-MoE binding concatenates into ``mAllProfiles``, whose indices are the tactic ids. It
# links the install's ``cutlass_heuristic.cpp`` and its ``cpp/common`` logger, exception and string
# helpers (``TLLM_CHECK`` and ``TLLM_LOG`` need them), compiled by the host compiler as
# flashinfer's JIT compiles its ``.cpp`` sources; nothing is stubbed. Tile names are printed
# by comparing with the enum's constants, so a name the tool reads that the header lacks does not
# compile. The test compares the program's lists with :func:`cutlass_layout.installs.candidates.moe_configs`
# and the ids of the written blocklist with the program's positions of the over-capacity tactics.
RUNNERS = {("nvfp4", "nvfp4"): "__nv_fp4_e2m1, __nv_fp4_e2m1", ("mxfp8", "mxfp4"): "__nv_fp8_e4m3, __nv_fp4_e2m1"}

PROGRAM = r"""
#include "tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_gemm_template_dispatch.h"
#include <cstdio>
using namespace tensorrt_llm::kernels::cutlass_kernels;
using tensorrt_llm::cutlass_extensions::CutlassGemmConfig;
using tensorrt_llm::cutlass_extensions::CutlassTileConfigSM120;
static char const* tile_name(CutlassTileConfigSM120 t) {
%(names)s
  return "?";
}
template <class R> void show(char const* runner) {
  for (int gemm = 1; gemm <= 2; ++gemm) {
    for (auto const& c : R::getConfigs(120, gemm == 2)) {
      std::printf("%%s %%d %%s %%s %%d %%d\n", runner, gemm, tile_name(c.tile_config_sm120),
                  c.epilogue_fusion_type == CutlassGemmConfig::EpilogueFusionType::FINALIZE ? "finalize" : "none",
                  (int)c.swap_ab, (int)c.is_tma_warp_specialized);
    }
  }
}
int main() {
%(runners)s
  return 0;
}
"""


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_tactic_ids_are_the_runtime_lists_indices(nvcc, tmp_path):
    res = audit(FI_074, family="moe")
    cand = res.candidates
    install = resolve_flashinfer(FI_074)
    tgt = engine.target(install.tree)
    moe = next(
        m
        for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
        if m.name.startswith("fused_moe")
    )
    names = "\n".join(f'  if (t == CutlassTileConfigSM120::{n}) return "{n}";' for n in cand.tiles)
    runners = "\n".join(
        f'  show<MoeGemmRunner<{types}, __nv_bfloat16>>("{a}x{b}");' for (a, b), types in RUNNERS.items()
    )
    src = tmp_path / "order.cu"
    src.write_text(PROGRAM % {"names": names, "runners": runners})
    nv = install.root / "data" / "csrc" / "nv_internal"
    helpers = [
        nv / "tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp",
        *(nv / "cpp/common" / f"{n}.cpp" for n in ("logger", "tllmException", "stringUtils", "envUtils")),
    ]
    exe = tmp_path / "order"
    flags = nvcc_flags(moe, install.tree)
    # the .cpp helpers by the host compiler, as flashinfer's JIT builds them (cpp_ext.py: $cxx
    # with the module's include paths, the CUDA headers among its system includes)
    host = [f for f in flags if not f.startswith(("-arch", "--expt"))] + ["-isystem", str(tgt.cuda.path / "include")]
    objects = []
    for h in helpers:
        objects.append(tmp_path / f"{h.stem}.o")
        built = subprocess.run(["g++", *host, "-c", "-o", str(objects[-1]), str(h)], capture_output=True, text=True)
        assert built.returncode == 0, built.stderr[-3000:]
    cmd = [nvcc, *flags, "-o", str(exe), str(src), *map(str, objects)]
    built = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    lists: dict[tuple[str, int], list[tuple[str, str, bool]]] = {}
    for line in printed:
        runner, gemm, tile, fusion, swap, tma = line.split()
        assert tma == "1"  # every config of these runners is a TMA warp-specialized one
        lists.setdefault((runner, int(gemm)), []).append((tile, fusion, swap == "1"))
    for a, b in RUNNERS:
        assert moe_configs(cand, a, b, False) == lists[(f"{a}x{b}", 1)]
        assert moe_configs(cand, a, b, True) == lists[(f"{a}x{b}", 2)]
    nv1, nv2 = lists[("nvfp4xnvfp4", 1)], lists[("nvfp4xnvfp4", 2)]
    assert (len(nv1), len(nv2)) == (16, 32) and len(lists[("mxfp8xmxfp4", 1)]) == 6

    path = tmp_path / "bl.json"
    from cutlass_layout.api import tactics_blocklist

    tactics_blocklist(res, path)
    doc = json.loads(path.read_text())
    over = {(t.name, t.fusion, bool(t.swap_ab)) for t in res.over_capacity_candidates()}
    assert len(res.over_capacity_candidates()) == 4
    want = sorted(len(nv1) + i for i, c in enumerate(nv2) if c in over)
    assert want == [26, 27] and doc["invalid_tactics"] == {"trtllm::fused_moe::gemm2::MoERunner": want}


# -------------------------------------------------------------------------------------------
# a blocklist that leaves out a tactic --check fails on says so and exits 1
SM90_CAPACITY = 232448  # cutlass/arch/arch.h: sm90_smem_capacity_bytes = 227 KiB


def _sm90_tactic(
    name: str, *, kernel_bytes: int, family: str = "moe", tried: bool | None = True, guard: str | None = None
):
    """A synthetic SM90 mixed-input MoE row (mxfp4 weight as A, bf16 activation as B, swap_ab),
    with the numbers given (what is checked is which rows the file holds, not the numbers)."""
    from cutlass_layout.model import KernelNumbers, Tactic, Verdict

    verdict = Verdict.OVER_CAPACITY if kernel_bytes > SM90_CAPACITY else Verdict.FITS
    return Tactic(
        family=family,
        name=name,
        a="mxfp4",
        b="bf16",
        out="bf16",
        fusion=None,
        swap_ab=True,
        tile=None,
        cluster=[1, 1, 1],
        kernel=None,
        schedule=None,
        file="k.cu",
        line=1,
        launcher="sm90_generic_mixed_moe_gemm_kernelLauncher<__nv_bfloat16, SafeFP4>",
        runtime_candidate=tried,
        runtime_guard=guard,
        numbers=KernelNumbers(
            verdict, 2, kernel_bytes, kernel_bytes - 1024, 1024, SM90_CAPACITY, SM90_CAPACITY - kernel_bytes
        ),
    )


def _sm90_result(tactics):
    from cutlass_layout.model import AuditResult, Constant

    prov = {
        "library": "flashinfer-python",
        "version": "0.7.4",
        "origin": FI_074,
        "cutlass_version": "4.5.0",
        "cutlass_root": "/nowhere",
        "tree_hash": "0",
    }
    return AuditResult(
        provenance=prov,
        arch="sm90",
        tactics=tactics,
        capacity=Constant(name="sm90_smem_capacity_bytes", value=SM90_CAPACITY, file="cutlass/arch/arch.h", line=40),
    )


FMT_074 = dict(
    version="0.7.4",
    loader="tactics_blocklist.py",
    metadata_key="_metadata",
    tactics_key="invalid_tactics",
    metadata_fields=["flashinfer_version", "gpu"],
    ops={1: "trtllm::fused_moe::gemm1", 2: "trtllm::fused_moe::gemm2"},
    runner_class="MoERunner",
)


def test_a_blocklist_that_leaves_out_a_tried_tactic_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    """Two over-capacity tactics the runtime tries whose ids cannot be read (no candidate list
    here), one over but rejected by a run-time guard, one that fits: the file holds no id, the
    two are ``left_out`` (the guarded one is not: ``--check`` does not fail on it either), a
    line says how many and why, and ``--blocklist`` exits 1 (``--check``'s code); with only
    the guarded and the fitting tactic the file is complete and the exit is 0."""
    from cutlass_layout import api
    from cutlass_layout.commands.blocklist import tactics_blocklist
    from cutlass_layout.model import BlocklistFormat

    fmt = BlocklistFormat(**FMT_074)
    over = [
        _sm90_tactic(f"CtaShape128x128x128B_ClusterShape_{c}_PINGPONG", kernel_bytes=SM90_CAPACITY + 1)
        for c in ("1x1x1", "2x1x1")
    ]
    guarded = _sm90_tactic("t", family="moe_sm80", kernel_bytes=SM90_CAPACITY + 1, guard="occupancy check")
    fits = _sm90_tactic("CtaShape64x128x128B_ClusterShape_1x1x1_PINGPONG", kernel_bytes=SM90_CAPACITY)
    bl = tactics_blocklist(_sm90_result([*over, guarded, fits]), fmt)
    assert bl.invalid_tactics == {}
    why = "their ids in the sm90 bf16 x mxfp4 MoE runner's list could not be read from the install's code"
    assert bl.left_out == [{"tactic": t.id, "reason": why} for t in over]
    line = f"2 over-capacity tactics the runtime tries are not in it: {why}"
    assert bl.left_out_line() == line

    for tactics, code in (([*over, guarded, fits], 1), ([guarded, fits], 0)):
        monkeypatch.setattr(api, "audit", lambda *a, _t=tactics, **k: _sm90_result(_t))
        monkeypatch.setattr(api, "blocklist_format", lambda source, path=None: fmt)
        path = tmp_path / f"bl{code}.json"
        assert main(["audit", FI_074, "--arch", "sm90", "--json", "--blocklist", str(path)]) == code
        err = capsys.readouterr().err
        assert json.loads(path.read_text())["invalid_tactics"] == {}  # the ids it has: none
        assert (f"blocklist: {line}" in err.splitlines()) == (code == 1)


# SM90: the mixed-input runner's ids, worked out by hand from flashinfer 0.7.4's code.
#
# The 16 over-capacity SM90 MoE tactics the runtime tries are mxfp4 weights x bf16 activations
# (``sm90_generic_mixed_moe_gemm_kernelLauncher<__nv_bfloat16, SafeFP4, ...>``, swap_ab), run by
# ``CutlassMoeFCRunner<__nv_bfloat16, __nv_fp4_e2m1>``: ``use_wfp4a16`` (FP4 weight, BF16 T), so
# ``use_sm90_mixed_input_gemm`` (``include/moe_kernels.h``). Its lists:
# * ``getTmaWarpSpecializedConfigs(90, ...)`` passes GROUPED_GEMM | HOPPER | WEIGHT_ONLY (T is not
#   WeightType; no FP4_ONLY: ``use_fp4`` is false, ``use_wfp4afp8`` too) to ``get_candidate_configs``,
#   which returns ``get_candidate_configs_sm90``: for a grouped weight-only config,
#   ``get_candidate_tiles_sm90`` lists 29 tiles (SM90_WEIGHT_ONLY_TILES below, in order), and each
#   tile gets 4 configs, clusters 1x1x1, 2x1x1, 1x2x1, 2x2x1 in that order, with the one schedule of
#   its ``std::set``: COOPERATIVE where ``sm90_supports_coop`` (M 128 with N 16/32/64 and K
#   128/256/512; M 128 with N 128/256, M 256 with N 128, K 128/256; 256x256x128), else PINGPONG;
#   the CUDA-kernel config is added only for non-grouped configs. 116 configs.
# * no FINALIZE copies (``getTactics(GEMM_2)`` passes ``mayHaveFinalizeFused(sm)``, false for a
#   mixed-input runner), swap_ab copies of the 116, then ``if (use_sm90_mixed_input_gemm)`` erases
#   the 116 without swap_ab; no Humming block (``use_wfp4afp8`` is false); ``getAmpereConfigs``
#   returns ``{}`` (``use_wfp4a16``). GEMM1: tactics 0..115; GEMM2, the same list: 116..231.
# The over-capacity tiles: 64x128x512B (tile 11, PINGPONG: M 64), 128x128x512B (23, PINGPONG:
# K 512 with N 128), 128x256x256B (25, COOPERATIVE), 256x128x256B (27, COOPERATIVE); config index
# 4 * tile + cluster: 44-47, 92-95, 100-103, 108-111 in GEMM1, each + 116 in GEMM2.
SM90_WEIGHT_ONLY_TILES = [
    f"CtaShape{m}x{n}x{k}B"
    for m, n, k in (
        (64, 16, 128),
        (64, 16, 256),
        (64, 16, 512),
        (64, 32, 128),
        (64, 32, 256),
        (64, 32, 512),
        (64, 64, 128),
        (64, 64, 256),
        (64, 64, 512),
        (64, 128, 128),
        (64, 128, 256),
        (64, 128, 512),
        (128, 16, 128),
        (128, 16, 256),
        (128, 16, 512),
        (128, 32, 128),
        (128, 32, 256),
        (128, 32, 512),
        (128, 64, 128),
        (128, 64, 256),
        (128, 64, 512),
        (128, 128, 128),
        (128, 128, 256),
        (128, 128, 512),
        (128, 256, 128),
        (128, 256, 256),
        (256, 128, 128),
        (256, 128, 256),
        (256, 256, 128),
    )
]
SM90_CLUSTERS = ["ClusterShape_1x1x1", "ClusterShape_2x1x1", "ClusterShape_1x2x1", "ClusterShape_2x2x1"]


def _sm90_coop(tile: str) -> bool:
    """``sm90_supports_coop`` (cutlass_heuristic.cpp), by hand."""
    m, n, k = map(int, tile[len("CtaShape") : -1].split("x"))
    if m == 128 and n in (16, 32, 64):
        return k in (128, 256, 512)
    if (m == 128 and n in (128, 256)) or (m == 256 and n == 128):
        return k in (128, 256)
    return (m, n, k) == (256, 256, 128)


@pytest.mark.network
@pytest.mark.slow
def test_074_sm90_blocklist_holds_the_mixed_input_ids(tmp_path, capsys, flashinfer_loader):
    from cutlass_layout.installs.candidates import sm90_moe_configs

    res = audit(FI_074, arch="sm90", family="moe")
    want_list = [
        (t, c, "COOPERATIVE" if _sm90_coop(t) else "PINGPONG", True)
        for t in SM90_WEIGHT_ONLY_TILES
        for c in SM90_CLUSTERS
    ]
    assert len(want_list) == 116 and sm90_moe_configs(res.candidates, "bf16xfp4") == want_list
    over = [
        4 * SM90_WEIGHT_ONLY_TILES.index(t) + c
        for t in ("CtaShape64x128x512B", "CtaShape128x128x512B", "CtaShape128x256x256B", "CtaShape256x128x256B")
        for c in range(4)
    ]
    assert over == [44, 45, 46, 47, 92, 93, 94, 95, 100, 101, 102, 103, 108, 109, 110, 111]

    path = tmp_path / "bl.json"
    assert main(["audit", FI_074, "--arch", "sm90", "--family", "moe", "--blocklist", str(path)]) == 0
    err = capsys.readouterr().err
    assert "16 over-capacity tactic(s) the runtime would try" in err and "not in it" not in err
    doc = json.loads(path.read_text())
    assert doc["invalid_tactics"] == {
        "trtllm::fused_moe::gemm1::MoERunner": over,
        "trtllm::fused_moe::gemm2::MoERunner": [116 + i for i in over],
    }

    tb = flashinfer_loader(resolve_flashinfer(FI_074).root)
    bl = tb.TacticsBlocklist()
    assert bl.load(str(path)) is True

    class MoERunner:  # the key is the runner's class name
        pass

    runner = MoERunner()
    gemm1, gemm2 = list(range(116)), list(range(116, 232))  # get_valid_tactics' two ranges
    assert bl.filter("trtllm::fused_moe::gemm1", runner, gemm1) == [t for t in gemm1 if t not in over]
    assert bl.filter("trtllm::fused_moe::gemm2", runner, gemm2) == [t for t in gemm2 if t - 116 not in over]


# The dense SM120 MXFP8 runner (issue 43, item 2). Its tactic ids, by hand from flashinfer 0.7.4:
# ``CutlassMxfp8GemmRunnerSm120::getConfigs`` (data/include/flashinfer/gemm/
# mxfp8_gemm_cutlass_template_sm120.h) loops over ``tiles = {CtaShape128x32x128B,
# CtaShape128x64x128B, CtaShape128x128x128B}`` and, per tile, ``emplace_back``s swap_ab false, then
# swap_ab true (use_stream_k keeps its default, false): id = 2 * tile index + swap_ab. The binding
# (data/csrc/mxfp8_gemm_cutlass_sm120.cu) runs ``globalConfigs[tactic]`` of that vector. The
# dispatch ``dispatchMXFP8xMXFP8GemmCTAShapeSm120`` instantiates the launcher with cute::Int<128>,
# Int<32|64|128>, Int<128>: MXFP8 is one byte per element, so "128B" is K = 128 elements.
# gemm/gemm_base.py: ``class CutlassMxfp8GemmRunner`` (get_valid_tactics: range(module.
# mxfp8_gemm_tactic_num())), made by ``cutlass_mxfp8_gemm_runner()``, which mm_mxfp8 tunes with
# ``tuner.choose_one(custom_op="mxfp8_gemm", ...)``: key "mxfp8_gemm::CutlassMxfp8GemmRunner".
MXFP8_SM120_IDS = {
    ((128, 32, 128), False): 0,
    ((128, 32, 128), True): 1,
    ((128, 64, 128), False): 2,
    ((128, 64, 128), True): 3,
    ((128, 128, 128), False): 4,
    ((128, 128, 128), True): 5,
}


@pytest.mark.network
@pytest.mark.slow
def test_074_sm120_mxfp8_dense_ids_and_key_load(tmp_path, capsys, flashinfer_loader):
    from cutlass_layout.commands.blocklist import blocklist_format

    res = audit(FI_074, "sm120", family="mxfp8_gemm_cutlass_sm120")
    configs = res.dense_runners["mxfp8_gemm_cutlass_sm120"]
    assert configs.note is None
    assert [(tuple(tile), swap) for _enum, tile, swap, _sk in configs.configs] == sorted(
        MXFP8_SM120_IDS, key=MXFP8_SM120_IDS.get
    )
    assert len(res.tactics) == 12  # 3 tiles x swap_ab x {bf16, f16}
    for t in res.tactics:
        assert t.runtime_candidate is True
        assert configs.ids(t) == [MXFP8_SM120_IDS[(tuple(t.tile), bool(t.swap_ab))]]
    # all 12 fit 0.7.4's SM120 capacity: the file has no entry for them, and nothing is left out
    path = tmp_path / "bl.json"
    assert (
        main(["audit", FI_074, "--arch", "sm120", "--family", "mxfp8_gemm_cutlass_sm120", "--blocklist", str(path)])
        == 0
    )
    assert json.loads(path.read_text())["invalid_tactics"] == {}
    root = resolve_flashinfer(FI_074).root
    fmt = blocklist_format(root, "0.7.4")
    assert fmt.dense["mxfp8_gemm_cutlass_sm120"] == "mxfp8_gemm::CutlassMxfp8GemmRunner"
    assert fmt.dense["fp4_gemm_cutlass_sm120"] == "fp4_gemm::CutlassFp4GemmRunner"
    # the key as the install's own loader reads it: ids 4 and 5 (the 128x128x128 tile) removed
    doc = json.loads(path.read_text())
    doc["invalid_tactics"] = {fmt.dense["mxfp8_gemm_cutlass_sm120"]: [4, 5]}
    path.write_text(json.dumps(doc))
    bl = flashinfer_loader(root).TacticsBlocklist()
    assert bl.load(str(path)) is True

    class CutlassMxfp8GemmRunner:  # the key is the runner's class name
        pass

    assert bl.filter("mxfp8_gemm", CutlassMxfp8GemmRunner(), list(range(6))) == [0, 1, 2, 3]


@pytest.mark.network
@pytest.mark.slow
def test_0618_sm120_mxfp8_over_capacity_tactics_are_the_reported_ids():
    """flashinfer 0.6.18's SM120 MXFP8 runner (flashinfer#3568: ``CutlassMxfp8GemmRunner``
    tactics 6-9 fail at launch on SM120). Its ``getConfigs`` (mxfp8_gemm_cutlass_template_sm120.h)
    loops over five tiles, 128x32, 128x64, 128x128, 256x128 and 128x256 (x128B), each with
    swap_ab false then true, so the 256x128 tile is ids 6 (no swap) and 7, 128x256 ids 8 and 9.
    Both tiles' SharedStorage is 111616 B, over the 101376 B of SM120 (the figure of issue 43,
    filed from that report; nvcc agreed when this test was written: ``audit
    flashinfer-python==0.6.18 --arch sm120 --family mxfp8_gemm_cutlass_sm120 --verify nvcc``):
    the audit's over-capacity tactics, bf16 and f16, are those four ids, each tried."""
    res = audit("flashinfer-python==0.6.18", "sm120", family="mxfp8_gemm_cutlass_sm120")
    configs = res.dense_runners["mxfp8_gemm_cutlass_sm120"]
    tiles = [(128, 32, 128), (128, 64, 128), (128, 128, 128), (256, 128, 128), (128, 256, 128)]
    assert [(tuple(tile), swap) for _enum, tile, swap, _sk in configs.configs] == [
        (t, swap) for t in tiles for swap in (False, True)
    ]
    over = [t for t in res.tactics if t.verdict == "over_capacity"]
    assert len(over) == 8 and {t.kernel_bytes for t in over} == {111616}
    assert all(t.runtime_candidate is True for t in over)
    assert sorted(i for t in over for i in configs.ids(t)) == [6, 6, 7, 7, 8, 8, 9, 9]  # bf16 and f16
