"""audit: the kernels an installed flashinfer builds, read from its own code.

Offline: fixtures/installs/mini_flashinfer, a miniature install around a tiny stand-in for
CUTLASS's GemmUniversal whose SharedStorage sizes are worked out by hand below (alignas(1024)
tiles, 8-byte barriers, an alignas(128) epilogue buffer, 48 bytes of alignas(16) pipelines).
With the package index: flashinfer-python 0.7.2.post1 and 0.6.8, against tests/handed.md section E
and against nvcc's host pass (tests/test_audit_nvcc.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cutlass_layout import BadInput
from cutlass_layout.cli import main
from cutlass_layout.commands import audit as audit_mod
from cutlass_layout.commands.audit import command as audit_command
from cutlass_layout.commands.audit import plan as audit_plan
from cutlass_layout.commands.audit import run as audit_run
from cutlass_layout.commands.audit import tactics as audit_tactics
from cutlass_layout.commands.audit import audit, element_kind, find_tactic, kernel_parts, source_facts
from cutlass_layout.cpp.arguments import template_args
from cutlass_layout.installs.kernels import Source, kernel_core
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.cpp.brackets import blank_comments, closers
from cutlass_layout.cpp.declarations import declared_functions, explicit_instantiations, kernel_aliases
from cutlass_layout.cpp.macros import macro_calls, macro_definition
from cutlass_layout.cpp.rehost import rehost_template
from cutlass_layout.cpp.text import trimmed_macro

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"
CAPACITY = 101376


def mini_sizes(m: int, n: int, k: int, stages: int, epilogue: int) -> tuple[int, int, int]:
    """(mainloop, epilogue, kernel) SharedStorage bytes of the fixture's stand-in, by hand:
    smem_A and smem_B alignas(1024), barriers 2 x stages x 8 bytes, struct aligned to 1024;
    the kernel holds mainloop, epilogue (alignas(128)) and 48 pipeline bytes, aligned to 1024."""

    def up(x, a):
        return -(-x // a) * a

    a = m * k * stages
    b = n * k * stages
    mainloop = up(up(a, 1024) + b + 16 * stages, 1024)
    kernel = up(mainloop + epilogue + 48, 1024)
    return mainloop, epilogue, kernel


def test_mini_sizes_by_hand():
    # 128x64x32, 3 stages: A 12288 @0, B 6144 @12288, barriers 48 @18432 -> 18480 -> 19456;
    # kernel 19456 + 4096 + 48 = 23600 -> 24576
    assert mini_sizes(128, 64, 32, 3, 4096) == (19456, 4096, 24576)
    # 256x128x64, 5 stages: 81920 + 40960 + 80 = 122960 -> 123904; + 4096 + 48 -> 129024
    assert mini_sizes(256, 128, 64, 5, 4096) == (123904, 4096, 129024)


def messages(err: str) -> str:
    """stderr without its progress lines (a cold audit says what it runs and parses)."""
    return "".join(ln for ln in err.splitlines(keepends=True) if not is_progress_line(ln))


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_mini_audit(mini):
    before = _files(mini)
    res = audit(str(mini), jobs=1)
    assert _files(mini) == before  # nothing written into the install (no __pycache__ either)
    assert res.capacity_bytes == CAPACITY and res.provenance["version"] == "0.0.1+mini"
    by = {t.id: t for t in res.tactics}

    # MoE launchers, declared in macro-generated function bodies; named as TensorRT-LLM does
    # (K in bytes of the fp4 activation: 32 elements = 16 B)
    t = by["moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"]
    r = t.report
    assert (r.stages, r.mainloop.size, r.epilogue.size, r.kernel.size) == (3, *mini_sizes(128, 64, 32, 3, 4096))
    assert t.verdict == "fits" and r.headroom_bytes == CAPACITY - 24576
    assert t.tile == [128, 64, 32] and t.fusion == "finalize" and t.swap_ab is False and t.out == "f16"
    assert t.file == "cutlass_instantiations/120/gemm_grouped/120/mini_moe_sm120_group0.generated.cu"
    assert t.line == 4  # the macro invocation (the generator writes 3 lines before it)
    inl = "data/csrc/nv_internal/launchers/mini_launcher.inl"
    assert t.launcher_file == inl
    alias_line = 1 + (MINI / "flashinfer" / inl).read_text().split("\n").index(
        next(ln for ln in (MINI / "flashinfer" / inl).read_text().split("\n") if "using GemmKernel" in ln)
    )
    assert t.launcher_line == alias_line
    assert [f.name for f in r.kernel.fields] == ["mainloop", "epilogue", "pipelines"]
    assert r.kernel.find("epilogue").offset == 19456

    over = by["moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize"]
    assert over.verdict == "over_capacity"
    assert (over.report.stages, over.report.kernel.size) == (5, mini_sizes(256, 128, 64, 5, 4096)[2])
    assert over.report.headroom_bytes == CAPACITY - 129024

    swapped = by["moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"]
    assert swapped.report.kernel.size == mini_sizes(128, 128, 64, 5, 4096)[2] == 88064

    bad = by["moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none"]
    assert bad.verdict == "does_not_compile" and bad.report.kernel is None
    assert bad.report.error.kind == "static_assert"
    assert bad.report.error.message == "The tile's K must be positive."

    # the runtime's candidate list (fixture heuristic): 128x128x32B pruned for grouped GEMMs,
    # 256x128x32B only for FP8 activations, 128x64x0B not a candidate at all
    assert [
        by[i].runtime_candidate
        for i in (
            "moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize",
            "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize",
            "moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab",
            "moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none",
        )
    ] == [True, True, False, False]

    # a dense GEMM macro: two kernels in a struct (the active one of two definitions)
    dense = [t for t in res.tactics if t.family == "fp4_gemm_cutlass_sm120"]
    assert sorted(t.name for t in dense) == sorted(
        f"MiniDense_{d}_128_64_32true::GemmKernel{s}" for d in ("f16", "bf16") for s in ("Default", "StreamK")
    )
    for t in dense:
        assert (t.report.stages, t.report.mainloop.size, t.report.epilogue.size, t.report.kernel.size) == (
            2,
            *mini_sizes(128, 64, 32, 2, 2048),
        )
        assert t.swap_ab is True and t.runtime_candidate is None

    # a function template instantiated explicitly: its body re-hosted
    (group,) = [t for t in res.tactics if t.family == "gemm_sm120"]
    assert group.launcher == "MiniGroupwiseGEMM<128, 64, cutlass::half_t>"
    assert group.report.kernel.size == mini_sizes(128, 64, 64, 2, 1024)[2] == 27648

    skipped = {s["file"]: s["skipped"] for s in res.sources}
    assert skipped["cutlass_instantiations/120/mini_sm90_group0.generated.cu"] == "names no sm120 symbol"
    # what each source instantiates, against what was found (by hand from the fixture's
    # generator and templates: 4 MoE macro calls, one dense macro call per output type, one
    # explicit instantiation per groupwise source, two of the mixed launcher, none in the dispatch)
    seen = {
        s["file"].rsplit("/", 1)[-1]: (s["instantiations"], s["kernels"], s["reason"], s["error"])
        for s in res.sources
        if not s["skipped"]
    }
    assert seen == {
        "mini_moe_sm120_group0.generated.cu": (4, 4, None, None),
        "mini_dense_f16.cu": (1, 2, None, None),  # one macro, two kernel aliases in its struct
        "mini_dense_bf16.cu": (1, 2, None, None),
        "mini_groupwise_sm120.cu": (1, 1, None, None),
        # its kernel alias inside a loop: a block the reader does not follow
        "mini_mixed_sm120.cu": (
            2,
            0,
            None,
            "instantiates 2 launcher(s) whose kernel this reader cannot see: MiniMixedGEMM<...> (x2)",
        ),
        "mini_gemm_sm120_dispatch.cu": (
            0,
            0,
            "calls kernels defined elsewhere: MiniGroupwiseGEMM "
            "(instantiated in gen_gemm_sm120/mini_groupwise_sm120.cu)",
            None,
        ),
    }
    assert res.source_summary()["gemm_sm120"] == {
        "sources": 3,
        "skipped": 0,
        "instantiations": 3,
        "kernels": 1,
        "errors": 1,
        "without_kernel": 1,
    }
    assert res.source_summary()["moe"] == {
        "sources": 2,
        "skipped": 1,
        "instantiations": 4,
        "kernels": 4,
        "errors": 0,
        "without_kernel": 0,
    }
    # where the install's code failed, named inside the install (a report for a PR shows no local path)
    assert any("broken on purpose (flashinfer/jit/gemm/core.py:" in n for n in res.notes)
    assert not any(str(mini) in n for n in res.notes)
    assert res.tactics[0].verdict == "over_capacity"  # over capacity first


def test_a_source_that_does_not_compile_is_cached_too(mini):
    """A generated source that includes a header the wheel lacks (as flashinfer's TVM-FFI
    bindings do) is reported with its error, and the warm run reads that answer from the cache
    instead of parsing the source again."""
    template = mini / "flashinfer/data/csrc/mini_groupwise_kernel_inst.jinja"
    template.write_text("#include <tvm/ffi/not_in_the_wheel.h>\n" + template.read_text())
    cold = audit(str(mini), jobs=1)
    entry = next(s for s in cold.sources if s["file"].endswith("mini_groupwise_sm120.cu"))
    assert "not_in_the_wheel.h" in entry["error"] and entry["kernels"] == 0
    assert not any(t.family == "gemm_sm120" for t in cold.tactics)
    warm = audit(str(mini), jobs=1)
    assert warm.stats["parsed"] == 0 and warm.stats["cached"] == warm.stats["sources"]
    assert next(s for s in warm.sources if s["file"].endswith("mini_groupwise_sm120.cu")) == entry


def test_mini_audit_cached_and_json(mini):
    cold = audit(str(mini), jobs=2)
    warm = audit(str(mini), jobs=2)
    assert cold.stats["parsed"] == cold.stats["sources"] > 0
    assert warm.stats["parsed"] == 0 and warm.stats["cached"] == warm.stats["sources"]
    assert warm.to_dict() == cold.to_dict()
    doc = warm.to_dict()
    assert doc["schema"] == "cutlass-layout/audit/1" and doc["capacity_bytes"] == CAPACITY
    keys = {
        "id",
        "family",
        "name",
        "a",
        "b",
        "out",
        "fusion",
        "swap_ab",
        "tile",
        "cluster",
        "stages",
        "kernel_bytes",
        "mainloop_bytes",
        "epilogue_bytes",
        "headroom_bytes",
        "verdict",
        "runtime_candidate",
        "file",
        "line",
        "error",
    }
    assert all(keys <= set(t) for t in doc["tactics"])


@pytest.mark.mini_shared
def test_mini_cli(mini, capsys):
    assert main(["audit", str(mini), "--json", "--family", "moe"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {t["family"] for t in doc["tactics"]} == {"moe"} and len(doc["tactics"]) == 4
    assert main(["audit", str(mini), "--check"]) == 1  # a tactic the runtime tries is over
    assert main(["audit", str(mini), "--check", "--family", "gemm_sm120"]) == 0
    capsys.readouterr()
    assert main(["audit", str(mini), "--grep", "256x128"]) == 0
    out = capsys.readouterr().out
    assert "CtaShape256x128x32B" in out and "CtaShape128x64x16B" not in out and "over capacity" in out
    assert main(["layout", "--cutlass", str(mini), "--tactic", "CtaShape256x128x32B", "--check"]) == 1
    out = capsys.readouterr().out
    assert "pipelines" in out and "over capacity by 27648 B" in out
    assert main(["layout", "--cutlass", str(mini), "--tactic", "moe/CtaShape"]) == 2
    assert "tactics match" in capsys.readouterr().err


def test_bad_sources(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["audit", str(empty)]) == 2
    assert capsys.readouterr().err.startswith("error: no flashinfer package")
    (tmp_path / "x.txt").write_text("x")
    assert main(["audit", str(tmp_path / "x.txt")]) == 2
    assert main(["audit", str(tmp_path / "missing")]) == 2
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    assert main(["audit", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 3 and "Traceback" not in err
    # an install too old to have JIT module builders for the arch
    old = tmp_path / "old"
    shutil.copytree(MINI, old)
    for f in ("jit/fused_moe.py", "jit/gemm/core.py"):
        (old / "flashinfer" / f).unlink()
    assert main(["audit", str(old)]) == 2
    assert "no JIT module builder for sm120" in capsys.readouterr().err
    with pytest.raises(BadInput):
        audit(str(old), arch="sm75")


@pytest.mark.mini_shared
def test_sources_without_a_kernel_in_the_report(mini, capsys):
    """Every source read names what it instantiates and what was found: the text report's
    table of sources with an error (every one named, its first error), the notes of sources
    without a kernel, and the per-family line; the JSON's summary (counts by hand, as in
    test_mini_audit)."""
    assert main(["audit", str(mini), "--family", "gemm_sm120"]) == 0
    out = capsys.readouterr().out
    assert "sources with an error: 1" in out and "mini_mixed_sm120.cu" in out
    assert "MiniMixedGEMM<...> (x2)" in out
    assert (
        "note: gemm_sm120: 1 source without a kernel (mini_gemm_sm120_dispatch.cu): calls kernels "
        "defined elsewhere: MiniGroupwiseGEMM (instantiated in gen_gemm_sm120/mini_groupwise_sm120.cu)"
    ) in out
    assert ("sources: gemm_sm120 1 kernel of 3 instantiations in 3 sources, 1 with an error, 1 without a kernel") in out
    assert main(["audit", str(mini)]) == 0  # a skipped source counted with why
    out = capsys.readouterr().out
    # the last line says how to pick a row for layout --tactic, its example the row over
    # capacity (the miniature install's one: tests/test_audit.py's test_mini_audit)
    assert out.splitlines()[-1] == (
        "one row in full: layout --tactic ID (ID: family/tactic/AxB/out, then fusion, swap_ab and the "
        "varying columns where a row has them, e.g. moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize; "
        "--json lists every row's id)"
    )
    assert "sources: moe 4 kernels of 4 instantiations in 1 source, 1 skipped (names no sm120 symbol)" in out
    assert main(["audit", str(mini), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["fp4_gemm_cutlass_sm120"] == {
        "sources": 2,
        "skipped": 0,
        "instantiations": 2,
        "kernels": 4,
        "errors": 0,
        "without_kernel": 0,
    }
    assert all({"family", "instantiations", "kernels", "reason", "error"} <= set(s) for s in doc["sources"])
    assert main(["audit", str(mini), "--format", "github", "--family", "gemm_sm120"]) == 0
    out = capsys.readouterr().out
    assert (
        "::warning title=cutlass-layout%3A sources with an error::gemm_sm120: 1 source with an error "
        "(mini_mixed_sm120.cu): instantiates 2 launcher(s)"
    ) in out


def test_an_install_whose_builders_give_no_kernel_says_why(tmp_path, monkeypatch, capsys):
    """A miniature install whose MoE generator emits no instantiation (an empty operation list)
    and whose dense builders are gone: its two sources give nothing (one names no sm120
    symbol, one instantiates nothing), so the audit is refused, saying why: exit 2, one line."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty_builds"
    shutil.copytree(MINI, empty)
    (empty / "flashinfer/jit/gemm/core.py").unlink()
    gen = empty / "flashinfer/jit/gemm/cutlass/generate_kernels.py"
    text = gen.read_text()
    gen.write_text(text[: text.index("OPS = [")] + "OPS = []\n" + text[text.index("]\n", text.index("OPS = [")) + 2 :])
    with pytest.raises(BadInput) as exc:
        audit(str(empty), jobs=1)
    msg = str(exc.value)
    assert "\n" not in msg and "--" not in msg
    assert msg.startswith(
        "flashinfer 0.0.1+mini builds no kernel this reader can lay out for sm120: "
        "of the 2 source(s) of fused_moe_120: "
    )
    assert (
        "1 (mini_moe_sm120_group0.generated.cu): instantiates no kernel: no launcher macro call, "
        "explicit instantiation or kernel type in it"
    ) in msg
    assert "1 (mini_sm90_group0.generated.cu): names no sm120 symbol" in msg
    assert main(["audit", str(empty)]) == 2
    err = messages(capsys.readouterr().err)
    assert err.count("\n") == 1 and err.startswith("error: flashinfer 0.0.1+mini builds no kernel")
    # a family asked for is not refused: it says it matched nothing (test_a_family_with_no_kernel_says_so)
    assert audit(str(empty), jobs=1, family="moe").tactics == []


def test_declared_functions_and_macro_calls():
    src = (
        "#define LAUNCH(T) struct K_##T { using GemmKernel = cutlass::gemm::kernel::GemmUniversal<T>; };\n"
        "namespace a { namespace b {\n"
        "template <int M, typename T>\n"
        "cudaError_t Launch(T* p, int m);  // declared: another file defines it\n"
        "template cudaError_t Other<1, int>(int* p, int m);\n"
        "}  // namespace b\n"
        "LAUNCH(int)\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, Run);\n"
        "void Run(int* p) { auto x = a::b::Launch<1, int>(p, 0); }\n"
        "static int counter = f(2);\n"
        "struct S { void member(); };\n"
        "}\n"
        "using Kernel = cutlass::gemm::kernel::GemmUniversal<int>;\n"
    )
    assert declared_functions(src) == [("Launch", 3, False), ("Run", 9, True)]
    assert macro_calls(src) == [("LAUNCH", 7), ("TVM_FFI_DLL_EXPORT_TYPED_FUNC", 8)]
    assert macro_calls(src, {"LAUNCH"}) == [("LAUNCH", 7)]
    assert kernel_aliases(src) == [("Kernel", 13)]  # not the one in the macro's definition
    facts = source_facts(src)
    assert facts["calls"] == ["Launch"] and facts["defined"] == ["Run"]
    assert [x[0] for x in facts["explicit"]] == ["Other"]


def test_judge_source_names_where_called_kernels_are():
    """A dispatch source's called function is found where another source of the module
    instantiates it explicitly, or where a kernel is declared in a struct its launcher macro
    names after it (flashinfer's ``INSTANTIATE_GROUP_GEMM_MXFP4_GROUPWISE_SM120`` declares
    ``CutlassMXFP4GroupwiseScaledGroupGEMMSM120_128_32_128_...``); a source that instantiates
    a launcher macro (known from another source's kernels) without a kernel at that line is
    an error, one whose text cannot be matched at all is counted and keeps its parse error."""
    from cutlass_layout.commands.audit import judge_source

    dispatch = source_facts("template <int M> int Run(int x);\nint Call(int x) { return Run<1>(x); }\n")
    others = {
        "a.cu": source_facts("template int Run<1>(int x);\n"),
        "b.cu": {**source_facts("LAUNCH(1)\n"), "owners": ["Run_1_false"]},
        "c.cu": {**source_facts("LAUNCH(2)\n"), "owners": ["RunOther_2"]},
    }
    entry = {"file": "d.cu", "kernels": 0, "error": None}
    judge_source(entry, dispatch, {"kernels": [], "error": None, "launcher_macros": []}, others, {"LAUNCH"})
    assert entry["instantiations"] == 0 and entry["error"] is None
    assert entry["reason"] == "calls kernels defined elsewhere: Run (instantiated in a.cu and 1 more)"
    entry = {"file": "c.cu", "kernels": 0, "error": None}
    judge_source(entry, others["c.cu"], {"kernels": [], "error": None, "launcher_macros": []}, others, {"LAUNCH"})
    assert (entry["instantiations"], entry["reason"]) == (1, None)
    assert entry["error"] == "instantiates 1 launcher(s) whose kernel this reader cannot see: LAUNCH"
    entry = {"file": "c.cu", "kernels": 0, "error": None}
    judge_source(
        entry,
        others["c.cu"],
        {"kernels": [], "error": "x.h: file not found", "launcher_macros": None},
        others,
        {"LAUNCH"},
    )
    assert (entry["instantiations"], entry["kernels"], entry["error"]) == (1, 0, "x.h: file not found")


# -------------------------------------------------------------------------------------------
# the text transforms (launchers.py) and the kernel names
MACRO = r"""
#define LAUNCH(T, M)                                              \
  struct Kernels_##T {                                            \
    using Mainloop = int; /* } a brace in a comment */            \
    using KernelA = cutlass::gemm::kernel::GemmUniversal<T, M>;   \
    using KernelB =                                               \
        Wrap<cutlass::gemm::kernel::GemmUniversal<T, M, long>>;   \
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<KernelA>; \
  };                                                              \
  inline int run_##T() { if (true) { return 1; } return 0; }
"""


def test_trimmed_macro():
    params, body, line = macro_definition(MACRO, "LAUNCH")
    assert params == "T, M" and line == 2
    out = trimmed_macro("LAUNCH", params, body)
    assert out.startswith("#undef LAUNCH\n#define LAUNCH(T, M) struct Kernels_##T {")
    assert out.rstrip().endswith("long>>; };")  # cut after KernelB, the struct closed
    assert "Adapter" not in out and "run_" not in out and "comment" not in out
    probed = trimmed_macro("LAUNCH", params, body, probe=lambda i, a, c: f"using P{i} = {a}; // {c}")
    assert "using P0 = KernelA;" in probed and "using P1 = KernelB;" in probed
    assert trimmed_macro("X", "", "int f() { return 0; }") is None


def test_closers_and_comments():
    assert closers("struct S { using A = int;") == "};"
    assert closers("void f() { if (x) { int y = 0;") == "} }"
    assert closers("int v[] = { 1,") == "};"
    assert closers("#if defined(X)\n using A = int;") == "\n#endif"
    assert blank_comments("a = \"x;{\" + '{'; // c {\n/* } */ b") == "a = \"   \" + ' ';       \n        b"


def test_rehost_and_instantiations():
    tmpl = (
        'template <int M, typename T>\nint F(T* a) {\n  static_assert(M > 0, "M");\n'
        "  using namespace cutlass::gemm;\n  constexpr int S = 2;\n"
        "  using GemmKernel = kernel::GemmUniversal<T, S>;\n  int n = sizeof(GemmKernel);\n"
        "  return n;\n}\n"
    )
    usings, struct, alias = rehost_template(tmpl, 3)
    assert usings == "using namespace cutlass::gemm;" and alias == "GemmKernel"
    assert struct.startswith("template <int M, typename T>\nstruct cl_rehost_3 {")
    assert "static constexpr int S = 2;" in struct and "sizeof" not in struct
    src = "namespace a {\n// template int F<9>(x);\ntemplate int F<128, cutlass::half_t>(cutlass::half_t* a);\n}"
    assert explicit_instantiations(src) == [("F", "128, cutlass::half_t", 3)]


def test_kernel_names():
    core = "cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, M, E, void>"
    assert kernel_core(core) == core
    assert kernel_core(f"ns::S::Sm12xOnly<{core}>") == core
    assert kernel_core(f"cutlass::gemm::device::GemmUniversalAdapter<{core}>") is None
    assert template_args("A<x, B<y, z>, (1 > 2)>") == ["x", "B<y, z>", "(1 > 2)"]
    # the first N, without reading the rest (even a rest left open)
    assert template_args("A<x, B<y, z>, (1 > 2)>", 2) == ["x", "B<y, z>"]
    assert template_args("A<, x, , y, z", 2) == ["x", "y"] == template_args("A<, x, , y")
    assert template_args("A<x>", 5) == ["x"] and template_args("A<x>", 0) == []
    assert element_kind("cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>") == "nvfp4"
    assert element_kind("cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue8m0_t>") == "mxfp4"
    assert element_kind("cute::tuple<cutlass::float_e4m3_t, cutlass::float_ue8m0_t>") == "mxfp8"
    assert element_kind("cutlass::bfloat16_t") == "bf16" and element_kind("weird") is None
    spelled = (
        "cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, long>>, "
        "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecializedBlockScaled"
        "<3, 3, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, cutlass::gemm::KernelPtrArrayTmaWarpSpecialized"
        "CooperativeBlockScaledSm120<3>>, cute::tuple<cute::C<256>, cute::C<128>, cute::C<128>>, "
        "cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>, S, "
        "cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>, S, T>, "
        "cutlass::epilogue::collective::CollectiveEpilogue<P, T2, E2, cutlass::half_t, SC, void, SD, F>, void>"
    )
    parts = kernel_parts(spelled)
    assert parts["kernel"] == "grouped" and parts["tile"] == [256, 128, 128] and parts["cluster"] == [1, 1, 1]
    assert parts["a"] == parts["b"] == "nvfp4" and parts["d"] == "void"
    assert parts["schedule"] == "KernelPtrArrayTmaWarpSpecializedCooperativeBlockScaledSm120"


# -------------------------------------------------------------------------------------------
# real installs (network: wheels cached after the first run)


@pytest.mark.network
def test_072_moe_matches_handed_e(audit_072):
    """tests/handed.md section E (nvcc 13.0): the FINALIZE, not swapped, 128x256x128 and
    256x128x128 MoE tactics (f16 and bf16) are 102400 B, 3 stages, mainloop 83968, epilogue 17408."""
    moe = audit_072.tactics
    # the generator's SM120 list (generate_kernels.py): 8 FP4 tiles and 3 FP8 x FP4 tiles, each
    # {NONE, FINALIZE} x {swap_ab, not} x {f16, bf16}
    assert len(moe) == (8 + 3) * 2 * 2 * 2
    assert all(t.verdict != "does_not_compile" for t in moe)
    by = {t.id: t for t in moe}
    for tile in ("128x256x64B", "256x128x64B"):
        for out in ("f16", "bf16"):
            t = by[f"moe/CtaShape{tile}/nvfp4xnvfp4/{out}/finalize"]
            r = t.report
            assert (r.stages, r.mainloop.size, r.epilogue.size, r.kernel.size) == (3, 83968, 17408, 102400)
            assert t.verdict == "over_capacity" and r.headroom_bytes == 101376 - 102400
            assert t.runtime_candidate is True
    none = by["moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/none"].report
    assert (none.stages, none.mainloop.size, none.epilogue.size, none.kernel.size) == (3, 83968, 13312, 98304)
    assert audit_072.capacity.value == 101376 and audit_072.capacity.name == "sm120_smem_capacity_bytes"
    # every generated tile is a runtime candidate of 0.7.2.post1 (get_candidate_configs_sm120:
    # its pruning removes 128x128x256B, 256x128x128B, and x64B tiles for FP8 activations, which
    # the generator does not emit)
    assert all(t.runtime_candidate is True for t in moe)
    assert find_tactic(audit_072, "moe/CtaShape256x128x64B/nvfp4xnvfp4/bf16/finalize").report.kernel.size == 102400
    # a part of the id shared with the /swap_ab twin: the id it ends picks the one without
    assert (
        find_tactic(audit_072, "256x128x64B/nvfp4xnvfp4/bf16/finalize").id
        == "moe/CtaShape256x128x64B/nvfp4xnvfp4/bf16/finalize"
    )
    assert find_tactic(audit_072, "256x128x64B/nvfp4xnvfp4/bf16/finalize/swap").swap_ab
    with pytest.raises(BadInput, match="tactics match"):
        find_tactic(audit_072, "256x128x64B/nvfp4xnvfp4")


@pytest.mark.network
@pytest.mark.slow  # a second flashinfer version's cold MoE audit (0.7.2.post1's is the default tier's)
def test_068_moe_runs():
    res = audit("flashinfer-python==0.6.8", family="moe")
    # 0.6.8's generator: 4 FP4 tiles and one FP8 x FP4 tile, x fusion x swap x output
    assert len(res.tactics) == (4 + 1) * 2 * 2 * 2
    assert all(t.verdict != "does_not_compile" for t in res.tactics)
    # 0.6.8's candidates: 6 tiles, no pruning; its dispatch maps 4 (128x128x64B, 128x128x128B,
    # 128x256x64B, 256x128x64B): all the generator emits
    assert all(t.runtime_candidate is True for t in res.tactics)
    assert res.tactics[0].verdict == "over_capacity"


@pytest.mark.mini_shared
def test_mini_config_flags_filter_the_tactics(mini, capsys):
    """The config flags of layout/sweep/diff keep the tactics that match (sizes of the kept
    ones by hand, mini_sizes)."""
    res = audit(str(mini), jobs=1, tile="128x64x16B")  # K 16 bytes of nvfp4 = 32 elements
    assert [t.id for t in res.tactics] == ["moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"]
    assert res.tactics[0].report.kernel.size == mini_sizes(128, 64, 32, 3, 4096)[2] == 24576
    assert [t.id for t in audit(str(mini), jobs=1, tile="128x64x32").tactics] == [
        "moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"
    ]
    # braces expand; with swap_ab the activation is B (nvfp4 here too): 64 elements = 32 B
    assert [t.id for t in audit(str(mini), jobs=1, tile="128x{64,128}x32B").tactics] == [
        "moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"
    ]
    assert {t.id for t in audit(str(mini), jobs=1, stages="5").tactics} == {
        "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize",
        "moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab",
    }
    assert len(audit(str(mini), jobs=1, stages="auto").tactics) == len(audit(str(mini), jobs=1).tactics) == 9
    assert [t.id for t in audit(str(mini), jobs=1, d="bf16", a="nvfp4").tactics] == [
        "moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"
    ]
    assert audit(str(mini), jobs=1, kernel="grouped").tactics == []  # the stand-in kernels are dense
    assert audit(str(mini), jobs=1, a=["mxfp8"]).tactics == []
    # the command: same flags, one line for what cannot filter
    assert main(["audit", "--cutlass", str(mini), "--tile", "256x128x32B", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| over capacity | `CtaShape256x128x32B` | nvfp4 x nvfp4 |" in out
    assert "| 256x128x32B | 5 | 123904 | 4096 | 129024 | -27648 |" in out  # tile as typed, in bytes
    assert main(["audit", str(mini), "--epilogue-schedule", "tma"]) == 2
    assert "'epilogue_schedule' is not recorded for a tactic" in capsys.readouterr().err


@pytest.mark.mini_shared
def test_tactics_have_the_json_numbers_as_attributes(mini):
    """A tactic's numbers are attributes (read-only), the very values of its JSON row."""
    by = {t.id: t for t in audit(str(mini), jobs=1).tactics}
    over = by["moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize"]
    mainloop, epilogue, kernel = mini_sizes(256, 128, 64, 5, 4096)
    assert (
        (over.stages, over.mainloop_bytes, over.epilogue_bytes, over.kernel_bytes)
        == (5, mainloop, epilogue, kernel)
        == (5, 123904, 4096, 129024)
    )
    assert (over.capacity_bytes, over.headroom_bytes, over.verdict) == (CAPACITY, CAPACITY - 129024, "over_capacity")
    assert over.runtime_candidate is True and over.error is None
    bad = by["moe/CtaShape128x64x0B/nvfp4xnvfp4/f16/none"]
    assert (bad.kernel_bytes, bad.stages, bad.headroom_bytes, bad.verdict) == (None, None, None, "does_not_compile")
    assert bad.error.kind == "static_assert" and bad.error.message == "The tile's K must be positive."
    for t in by.values():
        row = t.to_dict()
        for k in (
            "stages",
            "kernel_bytes",
            "mainloop_bytes",
            "epilogue_bytes",
            "capacity_bytes",
            "headroom_bytes",
            "verdict",
            "runtime_candidate",
        ):
            assert getattr(t, k) == row[k], (t.id, k)
        assert row["error"] == (
            None
            if t.error is None
            else {"kind": t.error.kind, "message": t.error.message, "file": t.error.file, "line": t.error.line}
        )
    with pytest.raises(AttributeError):
        over.kernel_bytes = 1


def test_sm121_reads_what_sm120_laid_out(mini, monkeypatch, tmp_path):
    """SM121 parts run SM120's builds: after an sm120 audit, an sm121 audit runs no builder and
    parses nothing (clang parses counted in every process, as test_cache.py does), and reports
    arch sm121 with the same kernels and numbers."""
    import clang.cindex as ci

    from cutlass_layout.sources import flashinfer_jit

    first = audit(str(mini), "sm120", jobs=1)
    log = tmp_path / "work.log"

    def counting(what, real):
        def wrapper(*args, **kwargs):
            with open(log, "a") as fh:
                fh.write(what + "\n")
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(ci.Index, "parse", counting("parse", ci.Index.parse))
    monkeypatch.setattr(flashinfer_jit, "run_harness", counting("builders", flashinfer_jit.run_harness))
    again = audit(str(mini), "sm121", jobs=1)
    assert not log.exists(), log.read_text()
    assert again.stats["parsed"] == 0 and again.stats["cached"] == again.stats["sources"] == 6
    assert again.arch == "sm121" and again.to_dict()["arch"] == "sm121"
    rows = [t.to_dict() for t in again.tactics]
    assert rows == [t.to_dict() for t in first.tactics] and len(rows) == 9
    assert again.provenance["generated_root"] == first.provenance["generated_root"]
    # the counting itself works: a fresh parse is seen
    audit(str(mini), "sm121", jobs=1, use_cache=False, family="gemm_sm120")
    assert "parse" in log.read_text()


def _count_parses(monkeypatch, log: Path) -> None:
    """Log every clang parse (in every process: workers are forked) to ``log``."""
    import clang.cindex as ci

    real = ci.Index.parse

    def counted(*args, **kwargs):
        with open(log, "a") as fh:
            fh.write("parse\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(ci.Index, "parse", counted)


def test_a_family_the_install_does_not_build_is_refused_before_any_parse(mini, monkeypatch, tmp_path, capsys):
    log = tmp_path / "parses.log"
    _count_parses(monkeypatch, log)
    with pytest.raises(BadInput) as exc:
        audit(str(mini), family="mo", jobs=1)
    assert not log.exists()  # refused once the builders are enumerated: nothing parsed
    msg = str(exc.value)
    assert "--" not in msg and "\n" not in msg and "unknown family 'mo' (nearest: moe)" in msg
    # it lists the families the install builds: those of its tactics
    listed = set(msg.rsplit(": ", 1)[1].split(", "))
    assert (
        listed
        == {t.family for t in audit(str(mini), jobs=1).tactics}
        == {"moe", "fp4_gemm_cutlass_sm120", "gemm_sm120"}
    )
    capsys.readouterr()
    assert main(["audit", str(mini), "--family", "mo"]) == 2
    out, err = capsys.readouterr()
    assert not out and err.count("\n") == 1 and err.startswith("error: unknown family 'mo'")


def test_a_family_with_no_kernel_says_so(mini):
    """A family the install builds, whose source gives no kernel (a header the wheel lacks)."""
    template = mini / "flashinfer/data/csrc/mini_groupwise_kernel_inst.jinja"
    template.write_text("#include <tvm/ffi/not_in_the_wheel.h>\n" + template.read_text())
    res = audit(str(mini), family="gemm_sm120", jobs=1)
    assert res.tactics == [] and [u["filter"] for u in res.unmatched] == ["family"]
    assert res.unmatched[0]["note"] in res.notes and "its 3 source(s) for sm120 gave no kernel" in res.notes[-1]
    # no kernel laid out, so no capacity read: the head leaves it out rather than guess
    from cutlass_layout.reports.audit import head_lines

    assert res.capacity is None and head_lines(res)[2] == "sm120: 0 tactics from 3 generated sources"


@pytest.mark.mini_shared
def test_a_filter_that_keeps_nothing_says_which_and_what_is_near(mini, capsys):
    by = {t.id: t for t in audit(str(mini), jobs=1).tactics}
    swapped = by["moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"]
    assert swapped.tile == [128, 128, 64]  # named 32 B of nvfp4 (K 64 elements)
    # the name's numbers typed as elements: nothing has K 32 at 128x128; nearest, the tile
    # whose name has those numbers, both ways
    res = audit(str(mini), jobs=1, tile="128x128x32")
    assert res.tactics == []
    (u,) = res.unmatched
    assert (u["filter"], u["value"]) == ("tile", "128x128x32") and u["note"] in res.notes
    assert u["nearest"][0] == "128x128x32B = 128x128x64 nvfp4"
    # one value of several: the others still keep their tactics
    res = audit(str(mini), jobs=1, tile=["128x64x16B", "9x9x9"])
    assert [t.id for t in res.tactics] == ["moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"]
    assert [u["value"] for u in res.unmatched] == ["9x9x9"]
    # the values the tactics have, the nearest first
    (u,) = audit(str(mini), jobs=1, stages=4).unmatched
    stages = {t.stages for t in by.values() if t.stages}
    assert stages == {2, 3, 5} and set(u["nearest"]) == {"2", "3", "5"} and set(u["nearest"][:2]) == {"3", "5"}
    (u,) = audit(str(mini), jobs=1, a="mxfp8").unmatched
    assert u["nearest"] == sorted({t.a for t in by.values() if t.a}) == ["nvfp4"]
    # each alone keeps some, together none
    (u,) = audit(str(mini), jobs=1, tile="256x128x32B", d="bf16").unmatched
    assert u["filter"] is None and "no tactic matches them all" in u["note"]
    # nothing to say when something is kept
    assert audit(str(mini), jobs=1, tile="128x64x16B").unmatched == []
    # a value no tactic could match is bad input, listing what is accepted
    with pytest.raises(BadInput, match="unknown element kind 'fp5' for D: choose nvfp4, .*, void"):
        audit(str(mini), jobs=1, d="fp5")
    assert audit(str(mini), jobs=1, d="void").tactics == []  # a kind an output can be


@pytest.mark.mini_shared
def test_grep_matches_ids_case_insensitively(mini):
    res = audit(str(mini), jobs=1, grep="NVFP4xnvfp4/F16/finalize")  # only in the ids
    assert {t.id for t in res.tactics} == {
        "moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize",
        "moe/CtaShape256x128x32B/nvfp4xnvfp4/f16/finalize",
    }
    assert [t.id for t in audit(str(mini), jobs=1, grep="bf16/none").tactics] == [
        "moe/CtaShape128x128x32B/nvfp4xnvfp4/bf16/none/swap_ab"
    ]
    assert all("nvfp4" in t.id for t in audit(str(mini), jobs=1, grep="nvfp4").tactics)
    res = audit(str(mini), jobs=1, grep="finalise")
    assert res.tactics == [] and res.unmatched[0]["filter"] == "grep"
    assert all("finalize" in i for i in res.unmatched[0]["nearest"][:2])


@pytest.mark.mini_shared
def test_cli_filter_notes_and_check(mini, capsys):
    assert main(["audit", str(mini), "--tile", "128x128x32", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["tactics"] == [] and any(n.startswith("tile 128x128x32: matched no tactic") for n in doc["notes"])
    err = messages(err)  # besides the progress of the first (cold) audit
    assert err.splitlines() == [line for line in err.splitlines() if line.startswith("note: --tile 128x128x32: ")]
    assert len(err.splitlines()) == 1 and "128x128x32B = 128x128x64 nvfp4" in err
    # text: the note once, on stderr
    assert main(["audit", str(mini), "--grep", "finalise"]) == 0
    out, err = capsys.readouterr()
    assert "finalise" not in out and err.startswith("note: --grep finalise: matched no tactic")
    # the arch's capacity is still the one its headers give (the fixture's arch.h, line 8)
    assert re.search(
        r"^sm120: 0 tactics from \d+ generated sources; capacity 101376 B "
        r"\(sm120_smem_capacity_bytes, cutlass/arch/arch\.h:8\)$",
        out,
        re.M,
    )
    # --check: a filter that kept nothing fails it, saying so
    assert main(["audit", str(mini), "--tile", "128x128x32", "--check"]) == 1
    assert "check failed: 1 filter(s) matched no tactic" in capsys.readouterr().err


@pytest.mark.mini_shared
def test_check_says_why(mini, capsys):
    over = mini_sizes(256, 128, 64, 5, 4096)[2]
    assert main(["audit", str(mini), "--check", "--json"]) == 1
    out, err = capsys.readouterr()
    tried_over = [
        t for t in json.loads(out)["tactics"] if t["verdict"] == "over_capacity" and t["runtime_candidate"] is not False
    ]
    lines = messages(err).splitlines()
    assert len(tried_over) == 1 and len(lines) == 2
    t = tried_over[0]
    assert lines[0] == (
        f"check: {t['id']}: {over} B, over the {CAPACITY} B capacity by {over - CAPACITY} B (tried by the runtime)"
    )
    assert lines[1].startswith("check failed: 1 tactic(s)")
    # layout --check of one tactic: one line too
    assert main(["layout", "--cutlass", str(mini), "--tactic", "CtaShape256x128x32B", "--check", "--json"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"check failed: tactic {t['id']} is {over} B, over the {CAPACITY} B capacity by {over - CAPACITY} B"
    )


@pytest.mark.mini_shared
def test_plot_says_where(mini, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    assert main(["layout", "--cutlass", str(mini), "--tactic", "CtaShape128x64x16B", "--plot", "map.svg"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"plot written to {tmp_path / 'map.svg'}" and (tmp_path / "map.svg").stat().st_size > 0


@pytest.mark.mini_shared
def test_a_tactic_part_that_names_no_family(mini):
    """``layout --tactic`` with a part whose first word is not a family audits every family."""
    from cutlass_layout import tactic

    t = tactic("MiniDense_f16_128_64_32true::GemmKernelStreamK/", str(mini))
    assert t.family == "fp4_gemm_cutlass_sm120" and t.kernel_bytes == mini_sizes(128, 64, 32, 2, 2048)[2]


@pytest.mark.network
def test_072_seed_preset_names_the_finalize_tactic(audit_072, capsys):
    """The seed question through a preset: `layout --preset trtllm-moe --tile 128x256x64B` on
    flashinfer 0.7.2.post1 lays out the NONE epilogue (98304 B, fits: tests/handed.md E), and, the
    install's MoE audit being cached (``audit_072``), names the tactics it builds of that
    tile, the FINALIZE one 102400 B and 1024 over (tests/handed.md E; nvcc: tests/test_audit_nvcc.py),
    in the text, the Markdown and the JSON; a sweep's records say the same."""
    src = ["--cutlass", "flashinfer-python==0.7.2.post1", "--preset", "trtllm-moe", "--tile", "128x256x64B"]
    finalize = "moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize"
    assert main(["layout", *src, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernel"]["size"] == 98304 and doc["verdict"] == "fits"
    appr = doc["approximation"]
    assert (appr["preset"], appr["install"], appr["source"], appr["family"], appr["audited"]) == (
        "trtllm-moe",
        "flashinfer-python 0.7.2.post1",
        "flashinfer-python==0.7.2.post1",
        "moe",
        True,
    )
    by = {t["id"]: t for t in appr["tactics"]}
    assert set(by) == {
        finalize,
        f"{finalize}/swap_ab",
        finalize.replace("finalize", "none"),
        finalize.replace("finalize", "none/swap_ab"),
    }
    assert by[finalize] == {
        "id": finalize,
        "verdict": "over_capacity",
        "stages": 3,
        "kernel_bytes": 102400,
        "headroom_bytes": -1024,
        "runtime_candidate": True,
    }
    assert by[finalize.replace("finalize", "none")]["kernel_bytes"] == 98304  # what the preset lays out
    assert main(["layout", *src]) == 0
    out = capsys.readouterr().out
    assert (
        "approximation of the trtllm-moe preset's kernel, TensorRT-LLM's MoE grouped GEMM "
        "(moe_gemm_tma_ws_launcher.inl), which flashinfer-python 0.7.2.post1 may build differently: "
        "`cutlass-layout audit flashinfer-python==0.7.2.post1 --family moe` / `cutlass-layout layout "
        "--tactic ID --cutlass flashinfer-python==0.7.2.post1` lay out the real one"
    ) in out
    assert f"  {finalize}: 102400 B, 3 stages, over capacity by 1024 B (tried by the runtime)" in out.splitlines()
    assert main(["layout", *src, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"- {finalize}: 102400 B, 3 stages, over capacity by 1024 B (tried by the runtime)" in md.splitlines()
    assert main(["sweep", *src, "--json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)["results"]
    assert rec["kernel_bytes"] == 98304 and rec["approximation"]["tactics"] == appr["tactics"]
    assert main(["sweep", *src]) == 0
    assert (
        f"  {finalize}: 102400 B, 3 stages, over capacity by 1024 B (tried by the runtime)"
        in capsys.readouterr().out.splitlines()
    )


def test_warm_audit_scans_and_names_nothing_and_gives_the_same_answer(mini, monkeypatch):
    """A warm audit reads what it read of each source's text and each kernel's name from the
    cache (audit-scans, audit-names): the same tactics and sources, byte for byte in JSON,
    without scanning a text or naming a kernel again."""
    cold = json.dumps(audit(str(mini), jobs=1).to_dict(), sort_keys=True)

    def never(*a, **k):
        raise AssertionError("a warm audit scanned or named again")

    monkeypatch.setattr(audit_plan, "scan_source", never)
    monkeypatch.setattr(audit_tactics, "tactic_of", never)
    assert json.dumps(audit(str(mini), jobs=1).to_dict(), sort_keys=True) == cold
    # without the cache, it reads and names everything again
    with pytest.raises(AssertionError, match="scanned or named again"):
        audit(str(mini), jobs=1, use_cache=False)


def test_batches_by_weight_one_unit_a_worker_at_least():
    """Sources of one folder go into units of at most BATCH_WEIGHT (288) of estimated kernels
    times their weight (an SM90 MoE kernel 1, an SM100 MoE kernel 3, most others 6, the SM103
    dense FP4 GEMMs' 12), spread over the workers where there are enough; a unit holds one
    source at least."""

    def items(n):
        return [(Source(Path(f"/g/s{i}.cu"), (), Path("/inc"), "sm100"), f"k{i}") for i in range(n)]

    assert [
        audit_mod.kernel_weight(m)
        for m in (
            "fused_moe_90",
            "fused_moe_120",
            "fused_moe_100",
            "fused_moe_103",
            "fp4_gemm_cutlass_sm103",
            "gemm_sm100",
            "fused_moe_1000",
        )
    ] == [1, 1, 3, 3, 12, 6, 6]
    est = {Path(f"/g/s{i}.cu"): 8 * 6 for i in range(12)}  # 8 kernels of weight 6 a source
    assert [len(b) for b in audit_run.batches(items(12), 2, est)] == [6, 6]
    assert [len(b) for b in audit_run.batches(items(12), 4, est)] == [3, 3, 3, 3]
    assert [len(b) for b in audit_run.batches(items(1), 2, {Path("/g/s0.cu"): 80 * 6})] == [1]
    sm90 = {Path(f"/g/s{i}.cu"): 8 for i in range(80)}  # SM90 MoE: 36 sources of 8 kernels a unit
    assert [len(b) for b in audit_run.batches(items(80), 2, sm90)] == [36, 36, 8]


def test_a_cold_audit_says_what_is_over_as_it_finds_it(mini, capsys):
    """As each source comes in, a cold audit's progress shows each kernel over capacity (file
    and line, launcher and alias, sizeof of its SharedStorage, bytes over: 129024 B by hand,
    mini_sizes); a line a reader of stderr takes for progress, and a warm audit has none."""
    assert main(["audit", str(mini), "--family", "moe"]) == 0
    err = capsys.readouterr().err.splitlines()
    found = [ln for ln in err if ": found: " in ln]
    assert found and all(is_progress_line(ln) for ln in found)
    assert any(
        re.fullmatch(
            r"audit sm120: found: \S+\.cu:\d+ \S+::\w+: 129024 B, "
            rf"{129024 - CAPACITY} B over capacity",
            ln,
        )
        for ln in found
    )
    assert main(["audit", str(mini), "--family", "moe"]) == 0
    assert ": found: " not in capsys.readouterr().err


def test_remembered_names_are_read_back_only_for_the_same_kernels():
    """audit-names: a remembered kernel is used only where the source still has a kernel at its
    index, found at the same line (else the entry is a miss, and the kernels are named again)."""
    fields = dict.fromkeys(audit_tactics.NAMED_FIELDS)
    one = [[[0, {**fields, "line": 10}], [2, {**fields, "line": 30}]]]
    assert audit_tactics.load_names([[10, 20, 30]])(one) == one
    for lines in ([[10, 20]], [[10, 20, 31]], [[10, 20, 30], []]):
        with pytest.raises(ValueError):
            audit_tactics.load_names(lines)(one)
    with pytest.raises(ValueError):  # a field missing
        audit_tactics.load_names([[10]])([[[0, {"line": 10}]]])


def test_jsonl_streams_each_tactic_before_the_end_then_the_whole_audit(mini, capsys, monkeypatch):
    """``--format jsonl``: a line per tactic as its source comes in (all of them before the
    fixes are searched, which is the end of an audit), then the arch's --json object; each
    streamed row is that object's row less what only the end knows. A warm audit streams the
    same rows. Numbers by hand: the FINALIZE 256x128 tactic is 129024 B (mini_sizes)."""
    seen_at_fixes, printed = [], []
    real = audit_command.search_fixes

    def fixes(tactics, *a, **k):
        printed.append(capsys.readouterr().out)
        seen_at_fixes.append(len(printed[-1].splitlines()))
        return real(tactics, *a, **k)

    monkeypatch.setattr(audit_command, "search_fixes", fixes)

    def run():
        assert main(["audit", str(mini), "--family", "moe", "--format", "jsonl"]) == 0
        out = "".join(printed) + capsys.readouterr().out
        printed.clear()
        return [json.loads(ln) for ln in out.splitlines()]

    lines = run()
    streamed, closing = lines[:-1], lines[-1]
    assert closing["event"] == "audit" and closing["arch"] == "sm120"
    assert streamed and all(x["event"] == "tactic" and x["arch"] == "sm120" for x in streamed)
    assert seen_at_fixes[0] == len(streamed)  # every tactic printed before the end
    rows = {r["id"]: r for r in closing["tactics"]}
    assert sorted(x["id"] for x in streamed) == sorted(rows)
    for x in streamed:
        assert {k: v for k, v in x.items() if k not in ("event", "arch")} == {
            k: v for k, v in rows[x["id"]].items() if k not in audit_mod.STREAM_LATER
        }
    assert any(x["kernel_bytes"] == 129024 and x["verdict"] == "over_capacity" for x in streamed)
    warm = run()
    key = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
    assert sorted(map(key, warm[:-1])) == sorted(map(key, streamed))


def test_jsonl_is_for_a_flashinfer_install(mini_library):
    with pytest.raises(BadInput, match="--json"):
        from cutlass_layout import api

        api.audit(str(mini_library), "sm120", on_tactic=lambda *a: None)
