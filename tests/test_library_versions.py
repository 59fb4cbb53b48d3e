"""CUTLASS's kernel library across versions: the arches its generator takes (``--arch sm110``) and
the exclude list (``audit --exclude-list``) fed back to the library's own ``Manifest`` filter.

Expected arch lists are read by hand from each ``generator.py``'s ``__main__`` (quoted below); the
exclude list's check is the library's own filter (its ``Manifest``, run by the library harness as
CUTLASS's CMake runs it), never this tool's output pasted back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cutlass_layout import api
from cutlass_layout.cli import main
from cutlass_layout.model import AuditResult
from cutlass_layout.commands.exclude_list import VARIABLE, read_value
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.installs.kernel_library import Selection, enumerate_kernels, generator_archs
from cutlass_layout.sources.library import resolve_kernel_library

SPEC = "nvidia-cutlass==4.2.0.0"
MINI_FLASHINFER = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"
#: CUTLASS 4.2.0's and 4.7.0's generator.py ``__main__`` (python/cutlass_library/generator.py,
#: read by hand): ``blackwell_arch_list = ["100a", "100f", "101a", "101f", "103a", "103f", "110a",
#: "110f", "120a", "120f", "121a", "121f"]``, and ``GenerateSM90`` defined: every arch of the table
#: (sm101 is Thor before CUDA 13, sm110 from CUDA 13: its ``ThorSMRenumbering``)
EVERY = ["sm120", "sm121", "sm100", "sm101", "sm103", "sm110", "sm90"]


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if not is_progress_line(ln)]


def _with_arch_list(lib: Path, archs: list[str]) -> None:
    gen = lib / "cutlass_library" / "generator.py"
    listed = ", ".join(f'"{a}a", "{a}f"' for a in archs)
    gen.write_text(gen.read_text() + f'\n\nif __name__ == "__main__":\n  blackwell_arch_list = [\n    {listed},\n  ]\n')


def test_an_arch_the_generator_does_not_take_is_named_with_those_it_does(mini_library, capsys):
    """The stand-in with a ``blackwell_arch_list`` of 100 and 120 only (and its GenerateSM90):
    sm110 is one error line naming sm120, sm100, sm90; nothing else of the list is offered."""
    lib = resolve_kernel_library(str(mini_library))
    assert generator_archs(lib) is None  # no list in the file: nothing known, nothing refused
    _with_arch_list(mini_library, ["100", "120"])
    assert generator_archs(resolve_kernel_library(str(mini_library))) == ["sm120", "sm100", "sm90"]
    assert main(["audit", str(mini_library), "--arch", "sm110"]) == 2
    assert _errors(capsys.readouterr().err) == [
        "error: arch 'sm110': CUTLASS 4.2.0's kernel generator does not take --architectures 110a (its "
        "generator.py's blackwell_arch_list); it takes sm120, sm100, sm90"
    ]
    # an arch no library is audited for: the table's list, before the library is read
    assert main(["audit", str(mini_library), "--arch", "sm107"]) == 2
    assert _errors(capsys.readouterr().err) == [
        "error: arch 'sm107': CUTLASS's library is audited for " + ", ".join(EVERY)
    ]


def test_the_exclude_list_flag_is_for_one_arch_of_the_library(mini_library, tmp_path, capsys):
    cases = [
        (
            ["audit", str(MINI_FLASHINFER), "--exclude-list", str(tmp_path / "x.cmake")],
            "error: --exclude-list writes CUTLASS_LIBRARY_EXCLUDE_KERNELS for CUTLASS's kernel library "
            "(nvidia-cutlass==VERSION, a CUTLASS checkout): for a flashinfer install, --blocklist",
        ),
        (
            ["audit", str(mini_library), "--arch", "sm120", "--arch", "sm121", "--exclude-list", "x.cmake"],
            "error: --exclude-list with several arches: the list is one arch's (--architectures): write one "
            "file per arch, --arch A --exclude-list FILE",
        ),
        (
            ["audit", str(mini_library), "--shard", "1/2", "--exclude-list", "x.cmake"],
            "error: --exclude-list with --shard: a shard has some of the kernels; write it from the audit "
            "without --shard",
        ),
        (
            ["audit", str(mini_library), "--exclude-list", str(tmp_path / "no" / "x.cmake")],
            f"error: cannot write the exclude list {tmp_path / 'no' / 'x.cmake'}: no folder {tmp_path / 'no'}",
        ),
    ]
    for argv, want in cases:
        assert main(argv) == 2
        assert _errors(capsys.readouterr().err) == [want]
    assert not (tmp_path / "x.cmake").exists()


# ---------------------------------------------------------------------------------------
# nvidia-cutlass 4.2.0.0


@pytest.fixture(scope="module")
def library():
    return resolve_kernel_library(SPEC)


@pytest.mark.network
def test_every_arch_of_the_4_2_generator(library):
    assert generator_archs(library) == EVERY


@pytest.mark.network
@pytest.mark.slow
def test_sm110_kernels_are_sm100_kernels_against_sm100_capacity(library):
    """Four SM110 kernels of 4.2.0.0 (a grouped FP8 family, 1SM, clusters 1x1x1): the generator
    keeps for 110a what it keeps for 100a (the same names: SM100-family kernels), and each is laid
    out as on sm100, against ``cutlass::arch::sm100_smem_capacity_bytes`` = 232448
    (``cutlass/arch/arch.h``: ``sm100_smem_capacity_bytes = 232448``, 227 KiB)."""
    kernels = "cutlass3x_sm100_tensorop_gemm_grouped_e4m3_e4m3_f32_f16_f16_*_1x1x1_0_tnn_align16_1sm"
    names110 = [k.name for k in enumerate_kernels(library, "sm110", Selection(kernels=kernels))[0]]
    names100 = [k.name for k in enumerate_kernels(library, "sm100", Selection(kernels=kernels))[0]]
    assert names110 == names100 and len(names110) == 4
    res110 = api.audit(library, "sm110", kernels=kernels, jobs=1)
    res100 = api.audit(library, "sm100", kernels=kernels, jobs=1)
    assert res110.capacity_bytes == res100.capacity_bytes == 232448
    assert res110.provenance["architectures"] == "110a"
    got = {t.id: (t.kernel_bytes, t.stages, t.verdict) for t in res110.tactics}
    assert got == {t.id: (t.kernel_bytes, t.stages, t.verdict) for t in res100.tactics}


#: 4.2.0.0's eight SM90 FP16 128x128x64 1x2x1 NNN align8 kernels: the shortest name,
#: ``..._1x2x1_0_nnn_align8`` (KernelScheduleAuto), is inside the seven others
SM90_ALIGN8 = "cutlass3x_sm90_tensorop_gemm_f16_f16_f16_f16_f16_128x128x64_1x2x1_0_nnn_align8"


@pytest.mark.network
def test_the_exclude_list_drops_exactly_its_kernels_in_the_librarys_own_manifest(library, tmp_path, capsys):
    """The audit of :data:`SM90_ALIGN8`'s eight kernels (all fit on 4.2.0.0: its generator prunes
    by its own estimate), two of them given a verdict here (over capacity: the shortest name;
    does not compile: the pingpong TMA one), so that the list has a name inside other names.
    Fed back to the library's own Manifest (its --exclude-kernels, as CMake passes
    CUTLASS_LIBRARY_EXCLUDE_KERNELS), the file drops exactly the listed kernels and the ones it
    names as dropped beside them (the six others containing the shortest name), no other."""
    from dataclasses import replace

    from cutlass_layout.model.layout import KernelNumbers
    from cutlass_layout.model.verdict import Verdict

    kernels = SM90_ALIGN8 + "*"
    path = tmp_path / "exclude.cmake"
    assert (
        main(
            [
                "audit",
                SPEC,
                "--arch",
                "sm90",
                "--kernels",
                kernels,
                "--jobs",
                "1",
                "--exclude-list",
                str(path),
                "--json",
            ]
        )
        == 0
    )
    err = "\n".join(_errors(capsys.readouterr().err))
    assert (
        f"exclude list: wrote {path} (CUTLASS_LIBRARY_EXCLUDE_KERNELS, sm90): 0 over capacity, 0 that do "
        "not compile" in err
    )
    text = path.read_text()
    assert text.startswith(
        f"# {VARIABLE}: CUTLASS 4.2.0's kernel library (nvidia-cutlass==4.2.0.0), sm90 (--architectures 90a)\n"
    )
    assert read_value(text) == ""
    res = api.audit(library, "sm90", kernels=kernels, jobs=1)
    assert api.exclude_list(res).text == text  # the same audit writes the same file (no date, no cache state)
    before = [k.name for k in enumerate_kernels(library, "sm90", Selection(kernels=kernels))[0]]
    assert sorted(t.id for t in res.tactics) == sorted(before) and len(before) == 8
    pingpong = SM90_ALIGN8 + "_warpspecialized_pingpong_epi_tma"
    given = {SM90_ALIGN8: Verdict.OVER_CAPACITY, pingpong: Verdict.DOES_NOT_COMPILE}
    marked = replace(
        res,
        tactics=[
            replace(t, report=None, numbers=KernelNumbers(given[t.id])) if t.id in given else t for t in res.tactics
        ],
    )
    el = api.write_exclude_list(marked, path)
    text = path.read_text()
    assert sorted(el.names) == sorted(given) and el.counts == {"over_capacity": 1, "does_not_compile": 1}
    assert set(el.also_dropped) == set(before) - set(given) and set(el.also_dropped.values()) == {SM90_ALIGN8}
    after = [
        k.name
        for k in enumerate_kernels(library, "sm90", Selection(kernels=kernels, exclude_kernels=read_value(text)))[0]
    ]
    assert set(before) - set(after) == set(el.names) | set(el.also_dropped) and after == []
    for kept in el.also_dropped:
        assert f"# note: also drops {kept}, which fits: its name contains {SM90_ALIGN8}" in text
    # without the shortest name the list is exact: the library drops the pingpong kernel alone
    only = replace(marked, tactics=[t for t in marked.tactics if t.id != SM90_ALIGN8])
    el = api.exclude_list(only)
    assert el.names == [pingpong] and el.also_dropped == {}
    after = [
        k.name
        for k in enumerate_kernels(library, "sm90", Selection(kernels=kernels, exclude_kernels=read_value(el.text)))[0]
    ]
    assert after == [n for n in before if n != pingpong]


@pytest.mark.network
def test_an_exclude_list_of_chosen_names_drops_exactly_them(library):
    """The file's form, with names chosen here (the first and last of 4.2.0.0's SM120 NVFP4
    pingpong kernels, no name inside another's): the library's Manifest keeps every other."""
    from cutlass_layout.commands.exclude_list import cmake_script

    kernels = "*bstensorop*ue4m3xe2m1*pingpong*"
    before = [k.name for k in enumerate_kernels(library, "sm120", Selection(kernels=kernels))[0]]
    assert len(before) > 2
    chosen = [before[0], before[-1]]
    res = AuditResult(
        provenance={"library": "cutlass_library", "version": "4.2.0", "origin": SPEC, "architectures": "120a"},
        arch="sm120",
        capacity=None,
        tactics=[],
    )
    text = cmake_script(res, chosen, {}, {"over_capacity": 1, "does_not_compile": 1})
    after = [
        k.name
        for k in enumerate_kernels(library, "sm120", Selection(kernels=kernels, exclude_kernels=read_value(text)))[0]
    ]
    assert after == before[1:-1]


# ---------------------------------------------------------------------------------------
# a CUTLASS 4.7.0 checkout (newer than any wheel: the package index stops at 4.2.0.0)

CHECKOUT_470 = os.environ.get("CUTLASS_LAYOUT_TEST_CUTLASS_470", "")
needs_470 = pytest.mark.skipif(
    not CHECKOUT_470,
    reason="needs a CUTLASS v4.7.0 checkout (newer than any "
    "nvidia-cutlass wheel): name it in CUTLASS_LAYOUT_TEST_CUTLASS_470",
)
#: One element pair of 4.7.0's grouped block-scaled SM120 128x16x128 pingpong kernels: the
#: ``void`` C, E5M2 D one is over capacity (issue 46, which nvcc 13.0 checked on all 610 SM120
#: kernels: 102400 B at 5 stages, 1024 B over the 101376 B capacity); the FP16 C ones with
#: block-scaled D (``epiVs32t``) do not compile (``EpilogueTileN should be divisible by
#: SFVecSize``, ``CTA tile for FP6 ElementD ...``)
GROUPED_470 = (
    "cutlass3x_sm120_bstensorop_gemm_grouped_ue8m0xe4m3_ue8m0xe4m3_f32_*_128x16x128_1x1x1_0_tnt_align128_"
    "warpspecialized_pingpong*"
)


@needs_470
def test_the_470_generator_takes_every_arch():
    assert generator_archs(resolve_kernel_library(CHECKOUT_470)) == EVERY


@needs_470
@pytest.mark.slow
def test_a_470_exclude_list_drops_exactly_what_does_not_fit_or_compile(tmp_path, capsys):
    lib = resolve_kernel_library(CHECKOUT_470)
    path = tmp_path / "exclude.cmake"
    assert (
        main(
            [
                "audit",
                CHECKOUT_470,
                "--arch",
                "sm120",
                "--kernels",
                GROUPED_470,
                "--jobs",
                "1",
                "--exclude-list",
                str(path),
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    res = api.audit(lib, "sm120", kernels=GROUPED_470, jobs=1)
    over = [t for t in res.tactics if t.verdict == "over_capacity"]
    assert [(t.kernel_bytes, t.stages, t.headroom_bytes) for t in over] == [(102400, 5, -1024)]
    assert "_void_e5m2_" in over[0].id
    bad = {t.id for t in res.tactics if t.verdict in ("over_capacity", "does_not_compile")}
    assert len(bad) > 1 and all(t.tile == [128, 16, 128] for t in res.tactics)
    text = path.read_text()
    assert set(read_value(text).split(",")) == bad
    before = [k.name for k in enumerate_kernels(lib, "sm120", Selection(kernels=GROUPED_470))[0]]
    after = [
        k.name
        for k in enumerate_kernels(lib, "sm120", Selection(kernels=GROUPED_470, exclude_kernels=read_value(text)))[0]
    ]
    assert after == [n for n in before if n not in bad]


#: 4.7.0's SM120 kernels of A E2M1 and B E4M3 at 128x8x128 (6: the F32 D one compiles, the five
#: with an E5M2 or block-scaled D do not); the stream-K one with an E3M2 D, checked with nvcc 13.0's
#: front end alone, fails first on ``sm120_builder.inl:158`` ("CTA tile for FP6 ElementD must
#: have a contiguous extent that is a multiple of 128."): beside its cooperative twin, which
#: fails there first, clang shows it only a later static_assert (``EPI_TILE_N must divide
#: CTA_N``, ``sm90_epilogue_tma_warpspecialized.hpp:130``), the error it had before the loop
#: read such failures apart
SMALL_470 = "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe4m3_f32_*_128x8x128_*"
FP6_470 = (
    "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe4m3_f32_f16_ue8m0xe3m2_128x8x128_1x1x1_0_tnt_align128_"
    "stream_k_cooperative_q_epiVs32t"
)


@needs_470
@pytest.mark.slow
def test_470_kernels_that_fail_together_get_their_own_errors():
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.installs.kernel_library import lay_out_kernels

    lib = resolve_kernel_library(CHECKOUT_470)
    tgt = engine.target(lib.tree)
    kernels = [k for k in enumerate_kernels(lib, "sm120", Selection(kernels=SMALL_470))[0] if k.layable]
    assert len(kernels) == 6
    reps = lay_out_kernels(tgt, kernels, "sm120", lib.util_include)
    failing = {k.name: r.error for k, r in zip(kernels, reps) if r.error is not None}
    assert len(failing) == 5
    e = failing[FP6_470]
    assert (e.kind, e.file, e.line) == ("static_assert", "cutlass/epilogue/collective/builders/sm120_builder.inl", 158)
    assert e.message.startswith("CTA tile for FP6 ElementD must have a contiguous extent")
    for k in kernels:  # each failing kernel's error is the one it gets alone
        if k.name in failing:
            alone = lay_out_kernels(tgt, [k], "sm120", lib.util_include)[0].error
            assert alone is not None and (alone.message, alone.file, alone.line) == (
                failing[k.name].message,
                failing[k.name].file,
                failing[k.name].line,
            )
