"""audit of CUTLASS's own kernel library (``cutlass_library``): what its generator keeps, laid out.

Offline: a miniature stand-in library (``fixtures/installs/mini_cutlass_library``, written for
these tests: the calls ``generator.py``'s ``__main__`` makes, three fake SM120 kernels, an
SM90 generator that never returns and an SM100 one that raises) run through the same
sandboxed child as flashinfer's generator. Network: nvidia-cutlass 4.2.0.0 for SM120, its
count with the default filter (386, and 572 with ``--kernels all``), its ``--kernels`` globs
against the library's own ``Manifest._filter_string_matches``, and a sample of 8 kernels
compiled by nvcc (host pass of the library's emitted source; nvcc's front end prints each
size through an incomplete template) compared byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import pytest

from cutlass_layout import BadInput, api
from cutlass_layout.cli import main
from cutlass_layout.installs.kernel_library import LibraryKernel, Selection, builder_args, enumerate_kernels, stage_spec
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.sources.library import is_kernel_library, resolve_kernel_library

SPEC = "nvidia-cutlass==4.2.0.0"
#: 8 kernels of nvidia-cutlass 4.2.0.0's SM120 list, one of each kind: MXFP4 (F8F6F4 and MXF4
#: MMAs), a block-scale-factor epilogue, stream-K, NVFP4, sparse, blockwise FP8 and its grouped twin
SAMPLE = [
    "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe2m1_f32_void_f32_128x128x128_1x1x1_0_tnt_align128_cooperative_q",
    "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe2m1_f32_f16_e5m2_128x128x128_1x1x1_0_tnt_align32_cooperative_o_vs32",
    "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe3m2_f32_f16_ue8m0xe5m2_128x128x128_1x1x1_0_tnt_align128_cooperative_q_epiVs32t",
    "cutlass3x_sm120_bstensorop_gemm_ue8m0xe2m1_ue8m0xe4m3_f32_f16_ue8m0xe3m2_128x128x128_1x1x1_0_tnt_align128_stream_k_cooperative_q_epiVs32t",
    "cutlass3x_sm120_bstensorop_gemm_ue4m3xe2m1_ue4m3xe2m1_f32_f16_e5m2_128x128x128_1x1x1_0_tnt_align32_pingpong_o_vs16",
    "cutlass3x_sm120_sptensorop_spgemm_e4m3_e2m1_f32_void_f32_128x128x256_1x1x1_0_tnt_align256_q",
    "cutlass3x_sm120_tensorop_gemm_1x128f32xe4m3_1x128f32xe4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnt_align128_cooperative_q",
    "cutlass3x_sm120_tensorop_gemm_grouped_1x128f32xe4m3_1x128f32xe4m3_f32_bf16_bf16_64x128x128_1x1x1_0_tnt_align128_pingpong_q",
]


def _error_line(capsys, argv: list[str]) -> str:
    """``cutlass-layout ARGV``: exit 2, exactly one ``error:`` line, no traceback."""
    code = main(argv)
    _, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# ---------------------------------------------------------------------------------------
# offline


def test_sources_that_are_the_library_are_told_from_flashinfer_installs(mini_library, tmp_path):
    assert is_kernel_library(SPEC) and is_kernel_library("nvidia_cutlass==4.2.0.0")
    assert is_kernel_library(tmp_path / "nvidia_cutlass-4.2.0.0-py3-none-any.whl")
    assert is_kernel_library(mini_library) and is_kernel_library(mini_library / "cutlass_library")
    assert not is_kernel_library("flashinfer-python==0.7.2.post1")
    assert not is_kernel_library(tmp_path / "flashinfer_python-0.7.2.post1-py3-none-any.whl")
    assert not is_kernel_library(tmp_path) and not is_kernel_library(None)
    assert is_kernel_library("nvidia-cutlass") and is_kernel_library("cutlass_library")
    lib = resolve_kernel_library(mini_library / "cutlass_library")
    assert lib.root == mini_library and lib.version == "4.2.0" and lib.fingerprint.startswith("py:")
    assert lib.tree.include_root == (mini_library / "cutlass_library" / "source" / "include").resolve()
    checkout = tmp_path / "cutlass"  # a CUTLASS checkout: python/cutlass_library and include/
    shutil.copytree(mini_library / "cutlass_library", checkout / "python" / "cutlass_library")
    shutil.move(checkout / "python" / "cutlass_library" / "source" / "include", checkout / "include")
    lib = resolve_kernel_library(checkout)
    assert is_kernel_library(checkout) and lib.root == checkout / "python"
    assert lib.tree.include_root == (checkout / "include").resolve() and lib.version == "4.2.0"


def test_an_audit_of_several_arches_says_which_of_how_many(mini_library, monkeypatch, capsys):
    """The library audit of several arches says, as the flashinfer one does, ``arch i of n (smXX)``
    as each starts, and names its lines after it (each arch's audit stands in here: what is
    tested is the loop around them)."""
    from types import SimpleNamespace

    from cutlass_layout.commands import library_audit
    from cutlass_layout.core.progress import say, showing

    def one(lib, arch, **kwargs):
        say(f"{arch} done")
        return SimpleNamespace(arch=arch, shard=None)

    monkeypatch.setattr(library_audit, "audit_library", one)
    lib = resolve_kernel_library(mini_library)
    with showing():
        got = library_audit.audit_library_archs(lib, ["sm100", "sm120"])
    assert [r.arch for r in got.results] == ["sm100", "sm120"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "arch 1 of 2 (sm100): auditing CUTLASS 4.2.0's kernel library for sm100 ..."
    assert lines[1] == "sm100 done" and lines[3] == "sm120 done"
    assert lines[2].startswith("arch 2 of 2 (sm120): auditing CUTLASS 4.2.0's kernel library for sm120 (")


def test_a_folder_without_the_library_or_its_headers_is_refused(mini_library, tmp_path):
    with pytest.raises(BadInput, match="path does not exist"):
        resolve_kernel_library(tmp_path / "nowhere")
    with pytest.raises(BadInput, match=r"no cutlass_library package \(generator.py, manifest.py"):
        resolve_kernel_library(tmp_path)
    if importlib.util.find_spec("cutlass_library") is None:  # nvidia-cutlass is not installed here
        with pytest.raises(BadInput, match="nvidia-cutlass is not installed in this environment"):
            resolve_kernel_library("nvidia-cutlass")
    shutil.rmtree(mini_library / "cutlass_library" / "source")
    with pytest.raises(BadInput, match=r"has no CUTLASS headers beside it"):
        resolve_kernel_library(mini_library)


def test_the_generator_runs_in_its_sandbox_with_the_selection_as_its_own_flags(mini_library):
    lib = resolve_kernel_library(mini_library)
    kernels, filters = enumerate_kernels(lib, "sm120")
    assert [k.name for k in kernels] == [
        "fake_sm120_gemm_e4m3_128x128x128_auto",
        "fake_sm120_gemm_e4m3_128x256x128_3stage",
        "fake_sm120_gemm_grouped_e4m3_64x128x128_auto",
        "fake_sm120_gemm2x_e4m3_128x128x64",
        "fake_sm120_gemm_broken_e4m3_128x128x128",
    ]
    auto, three, grouped, old, _ = kernels
    # the library's own figures: (128*128 + 128*128) e4m3 bytes per stage, times its stages
    assert (auto.estimate_kib, three.estimate_kib) == (0, (128 * 128 + 256 * 128) * 3 >> 10)
    assert auto.capacity_kib == {} and three.stages == 3 and grouped.gemm_kind == "GroupedUniversal3x"
    assert auto.layable and not old.layable and old.emitter == "EmitGemmUniversalInstance"
    assert auto.instance.startswith("struct fake_sm120_gemm_e4m3_128x128x128_auto_base {\n")
    assert auto.includes == ["cutlass/cutlass.h"] and auto.elements["A"] == "e4m3"
    assert filters["kernels"] == [] and (mini_library / "cutlass_library" / "__pycache__").exists() is False
    chosen, filters = enumerate_kernels(lib, "sm120", Selection(kernels="fake*auto,*3stage", ignore_kernels="grouped"))
    assert [k.name for k in chosen] == [auto.name, three.name]
    assert filters["kernels"] == ["fake*auto", "*3stage"] and filters["ignore"] == ["grouped"]


def test_a_generator_past_its_cpu_limit_or_failing_is_one_line(mini_library, monkeypatch):
    from cutlass_layout.sources import flashinfer_jit

    monkeypatch.setenv("CUTLASS_LAYOUT_GENERATOR_CPU_S", "1")
    monkeypatch.setattr(flashinfer_jit, "HARNESS_TIMEOUT", 60)
    lib = resolve_kernel_library(mini_library)
    with pytest.raises(
        BadInput,
        match=r"CUTLASS's kernel generator \(.*GenerateSM90\) ran past its "
        r"CPU-time limit of 1 s",
    ):
        enumerate_kernels(lib, "sm90")
    with pytest.raises(BadInput, match=r"GenerateSM100\) failed: RuntimeError: no SM100 kernels"):
        enumerate_kernels(lib, "sm100")


def test_a_selection_that_keeps_nothing_says_why(mini_library, capsys):
    line = _error_line(capsys, ["audit", str(mini_library), "--kernels", "*nothing_like_it*"])
    assert "keeps no kernel for sm120 with --kernels '*nothing_like_it*'" in line
    assert "Manifest.filter matched none" in line


def test_the_library_filters_are_refused_for_flashinfer_and_the_blocklist_for_the_library(capsys, mini_library):
    line = _error_line(capsys, ["audit", "flashinfer-python==0.7.2.post1", "--kernels", "x"])
    assert "kernels: the kernel library's own filters, for CUTLASS's library" in line
    line = _error_line(capsys, ["audit", str(mini_library), "--blocklist", "b.json"])
    assert "CUTLASS's kernel library has none" in line
    with pytest.raises(BadInput, match="one family, cutlass_library"):
        api.audit(mini_library, family="moe")


def test_what_the_emitted_builders_say():
    instance = """
using k_epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassTensorOp,
    cute::Shape<cute::_64, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_1, cute::_1>,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    cutlass::bfloat16_t, cutlass::layout::RowMajor, 8, cutlass::bfloat16_t, cutlass::layout::RowMajor, 8,
    cutlass::epilogue::collective::EpilogueScheduleAuto,
    cutlass::epilogue::fusion::LinearCombination<cutlass::bfloat16_t, float, cutlass::bfloat16_t, float>
  >::CollectiveOp;
using k_mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassTensorOp,
    cutlass::float_e4m3_t, cutlass::layout::RowMajor, 16, cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, 16,
    float, cute::Shape<cute::_64, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_1, cute::_1>,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename k_epilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedBlockwisePingpongSm120
  >::CollectiveOp;
"""
    main_args, epi_args = builder_args(instance, "gemm"), builder_args(instance, "epilogue")
    assert len(main_args) == 13 and len(epi_args) == 15
    assert main_args[2] == "cutlass::float_e4m3_t" and epi_args[10] == "cutlass::bfloat16_t"
    assert (
        stage_spec(LibraryKernel(name="k"), main_args[11])
        == "StageCountAutoCarveout<sizeof(<epilogue>::SharedStorage)>"
    )


@pytest.mark.network
def test_each_kernel_is_laid_out_or_has_its_own_error(mini_library):
    """The stand-in's emitted types laid out on nvidia-cutlass 4.2.0.0's headers, in one unit:
    each ``struct SharedStorage { char x[16]; }`` is 16 bytes; the kernel whose type fails a
    static_assert carries that error, the others their numbers; the 2.x GEMM is a note."""
    from dataclasses import replace

    from cutlass_layout.commands.library_audit import audit_library
    from cutlass_layout.sources.trees import resolve_cutlass

    lib = replace(resolve_kernel_library(mini_library), tree=resolve_cutlass(SPEC))
    res = audit_library(lib, "sm120", jobs=1)
    by = {t.id: t for t in res.tactics}
    assert sorted(by) == [
        "fake_sm120_gemm_broken_e4m3_128x128x128",
        "fake_sm120_gemm_e4m3_128x128x128_auto",
        "fake_sm120_gemm_e4m3_128x256x128_3stage",
        "fake_sm120_gemm_grouped_e4m3_64x128x128_auto",
    ]
    broken = by.pop("fake_sm120_gemm_broken_e4m3_128x128x128")
    assert broken.verdict == "does_not_compile" and "a kernel that does not compile" in broken.error.message
    # not GemmUniversal types: the probe lays each out as a storage of no GEMM shape
    assert all(t.report.storage.size == 16 and t.headroom_bytes == 101376 - 16 for t in by.values())
    assert res.tactics[0] is broken  # not fitting comes first
    assert any(
        n.startswith("1 of the 5 kernels the generator keeps are not CUTLASS 3.x GEMMs")
        and "Gemm/Universal (EmitGemmUniversalInstance)" in n
        for n in res.notes
    )


# ---------------------------------------------------------------------------------------
# nvidia-cutlass 4.2.0.0, SM120


@pytest.fixture(scope="module")
def library():
    return resolve_kernel_library(SPEC)


@pytest.fixture(scope="module")
def sample_audit():
    """The audit of :data:`SAMPLE` (one parse of 8 kernels, in this process)."""
    return api.audit(SPEC, "sm120", kernels=",".join(SAMPLE), jobs=1)


def _library_module(library):
    """The library's own manifest module, imported from its folder (the library's code)."""
    sys.path.insert(0, str(library.root))
    try:
        import cutlass_library.manifest as mf
    finally:
        sys.path.remove(str(library.root))
    return mf


@pytest.mark.network
def test_the_default_filter_keeps_386_sm120_kernels_and_all_572(library):
    from cutlass_layout.sources.wheels import fetch_wheel

    whl = resolve_kernel_library(fetch_wheel(SPEC))  # the same library, named by its wheel's path
    assert (whl.root, whl.fingerprint, whl.tree.tree_hash) == (
        library.root,
        library.fingerprint,
        library.tree.tree_hash,
    )
    kernels, _ = enumerate_kernels(library, "sm120")
    assert len(kernels) == 386 and len({k.name for k in kernels}) == 386
    assert all(k.layable and k.stages == 0 and k.estimate_kib == 0 and k.capacity_kib == {} for k in kernels)
    assert len(enumerate_kernels(library, "sm120", Selection(kernels="all"))[0]) == 572


@pytest.mark.network
def test_kernels_globs_select_as_the_librarys_own_manifest_filter(library):
    every = [k.name for k in enumerate_kernels(library, "sm120", Selection(kernels="all"))[0]]
    want, ignore = ["*bstensorop*ue4m3xe2m1*pingpong*", "*spgemm_e4m3*"], ["*_f16_*"]
    matches = _library_module(library).Manifest._filter_string_matches
    chosen = [
        k.name
        for k in enumerate_kernels(
            library, "sm120", Selection(kernels=",".join(want), ignore_kernels=",".join(ignore))
        )[0]
    ]
    expected = [
        n for n in every if any(matches(None, f, n) for f in want) and not any(matches(None, f, n) for f in ignore)
    ]
    assert chosen == expected and 0 < len(chosen) < len(every)


@pytest.mark.network
def test_the_sample_is_laid_out_and_named_as_the_library_names_it(sample_audit):
    res = sample_audit
    assert sorted(t.id for t in res.tactics) == sorted(SAMPLE)
    assert res.capacity_bytes == 101376 and res.provenance["generators"] == ["GenerateSM120"]
    by = {t.id: t for t in res.tactics}
    nvfp4 = by[SAMPLE[4]]
    assert (nvfp4.a, nvfp4.b, nvfp4.out, nvfp4.tile, nvfp4.cluster, nvfp4.kernel) == (
        "nvfp4",
        "nvfp4",
        "e5m2",
        [128, 128, 128],
        [1, 1, 1],
        "dense",
    )
    assert by[SAMPLE[7]].kernel == "grouped" and by[SAMPLE[5]].kernel == "sparse"
    # the sparse collective's three pipelines (StagesA, StagesB, StagesE) are in its row; its
    # ``stages`` is A's; a dense kernel has one pipeline (stage_counts null)
    sparse = by[SAMPLE[5]].to_dict()
    assert set(sparse["stage_counts"]) == {"A", "B", "E"} and sparse["stage_counts"]["A"] == sparse["stages"]
    assert by[SAMPLE[4]].to_dict()["stage_counts"] is None
    assert by[SAMPLE[7]].schedule == "KernelTmaWarpSpecializedBlockwisePingpongSm120"
    row = json.loads(json.dumps(res.to_dict()))["tactics"][0]
    assert row["estimate"] == {"kib": 0, "bytes": 0, "capacity_kib": {}, "error": None}
    assert row["stage_spec"] == "StageCountAutoCarveout<sizeof(<epilogue>::SharedStorage)>"
    verdicts = [t.verdict for t in res.tactics]
    assert verdicts == sorted(verdicts, key=["over_capacity", "exact_fit", "does_not_compile", "fits"].index)
    assert any("dropped none of them" in n for n in res.notes)


def _nvcc_sizes(library, arch: str, names: list[str], work) -> dict[str, tuple[int, ...]]:
    """``{kernel: (kernel, mainloop, epilogue bytes, stages)}`` as nvcc's host pass computes
    them from the library's emitted instances of ``names``
    (:func:`cutlass_layout.commands.audit_nvcc.library_instances`: per kernel ``j``,
    ``cl_show<j, its three SharedStorage sizes, Stages>``), with the flags ``--verify nvcc``
    gives them (the library's ``tools/util/include`` on the path, as its CMake gives the
    profiler's files)."""
    from cutlass_layout.checks.nvcc_probe import unit_sizes
    from cutlass_layout.commands.audit_nvcc import library_flags, library_instances

    kernels = {k.name: k for k in enumerate_kernels(library, arch, Selection(kernels=",".join(names)))[0]}
    order = sorted(kernels)
    src = work / "sample.cu"
    src.write_text(library_instances([kernels[n] for n in order]))
    shown, _ = unit_sizes([src], library_flags(library, arch), work, show="")
    got = {order[j]: numbers for j, numbers in shown[src].items()}
    assert sorted(got) == order, sorted(got)
    return got


#: Two of the 360 shuffled mixed-input SM90 kernels (FP8 x BF16, ``cvt_shfl``) whose emitted
#: instance calls ``cutlass::compute_memory_reordering_atom`` (CUTLASS's utilities)
SM90_SHUFFLED = [
    "cutlass3x_sm90_tensorop_gemm_e4m3_bf16_f32_bf16_bf16_cvt_shfl_128x128x64_1x2x1_0_tnn_align16_"
    "warpspecialized_cooperative_epi_tma",
    "cutlass3x_sm90_tensorop_gemm_e4m3_bf16_f32_bf16_bf16_cvt_shfl_256x128x64_1x2x1_0_tnn_align16_"
    "stream_k_warpspecialized_cooperative_epi_tma",
]


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.nvcc
def test_shuffled_mixed_input_sm90_kernels_compile_with_the_utilities_and_equal_nvcc(library, nvcc, tmp_path):
    """Their instances use CUTLASS's utilities (``tools/util/include``), which the profiler's
    own wrapper includes: laid out with them (not "does not compile"), every size and stage
    count nvcc's."""
    assert (library.util_include / "cutlass/util/mixed_dtype_utils.hpp").is_file()
    res = api.audit(SPEC, "sm90", kernels=",".join(SM90_SHUFFLED), jobs=1)
    got = _nvcc_sizes(library, "sm90", SM90_SHUFFLED, tmp_path)
    assert sorted(t.id for t in res.tactics) == sorted(SM90_SHUFFLED)
    for t in res.tactics:
        assert t.error is None, t.error
        assert (t.kernel_bytes, t.mainloop_bytes, t.epilogue_bytes, t.stages) == got[t.id], t.id


@pytest.mark.network
@pytest.mark.nvcc
def test_the_sample_against_nvcc(nvcc, library, sample_audit, tmp_path):
    # every kernel of the sample laid out (an empty audit would compare nothing)
    assert len(SAMPLE) == 8 and sorted(t.id for t in sample_audit.tactics) == sorted(SAMPLE)
    got = _nvcc_sizes(library, "sm120", SAMPLE, tmp_path)
    for t in sample_audit.tactics:
        kernel, mainloop, epilogue, stages = got[t.id]
        assert (t.kernel_bytes, t.mainloop_bytes, t.epilogue_bytes) == (kernel, mainloop, epilogue), t.id
        if stages >= 0:  # the sparse collective names StagesA/StagesB instead
            assert t.stages == stages, t.id


@pytest.mark.network
def test_the_command_lines_on_the_sample(sample_audit, capsys):
    """Text (the library's head, the counts), Markdown, --check and layout --tactic on the
    sample (its reports cached by the fixture); the two exact fits are nvcc's numbers
    (test_the_sample_against_nvcc: 101376 B, the SM120 capacity)."""
    kernels = ",".join(SAMPLE)
    assert main(["audit", SPEC, "--kernels", kernels, "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CUTLASS's kernel library 4.2.0 (nvidia-cutlass==4.2.0.0 (wheel ")
    assert "sm120: 8 kernels the generator keeps (GenerateSM120, --architectures 120a, --kernels '" in out
    assert "0 over capacity (kept by the generator), 2 exact fits, 0 do not compile, 6 fit" in out
    assert main(["audit", SPEC, "--kernels", kernels, "--format", "markdown", "--check"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("#### Audit: nvidia-cutlass 4.2.0") and "| exact fit |" in md
    assert main(["audit", SPEC, "--kernels", kernels, "--format", "github"]) == 0
    gh = capsys.readouterr().out.splitlines()
    assert gh[0].startswith("::notice title=cutlass-layout%3A 2 exact fit(s)::2 kernel(s) fill the 101376 B sm120")
    assert gh[1].startswith("cutlass-layout: CUTLASS's kernel library 4.2.0 (") and len(gh) == 2
    assert main(["layout", "--tactic", SAMPLE[5], "--cutlass", SPEC, "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["tactic"]["id"] == SAMPLE[5] and row["kernel"]["size"] == 101376
