"""When two builds of one source are the same parse (installs/equivalence.py).

flashinfer 0.7.4's SM103 MoE module compiles the SM100 module's generated sources again with one
more define, ``COMPILE_BLACKWELL_SM103_TMA_GROUPED_GEMMS``, which TensorRT-LLM's
``moe_gemm_tma_ws_launcher.inl`` (152-158) tests only inside the body of the void function template
``tma_warp_specialized_generic_moe_gemm_kernelLauncher``, to throw at run time::

    #ifndef COMPILE_BLACKWELL_SM103_TMA_GROUPED_GEMMS
      else if constexpr (ArchTag::kMinComputeCapability == 103) {
        TLLM_THROW("Please recompile with support for blackwell ...");
      }
    #endif

The headers below are written here in that shape and in the shapes the rule must refuse; each
refusal is shown to matter by libclang itself: the struct's size changes with the define.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import clang.cindex as ci
import pytest

from cutlass_layout.installs.equivalence import (
    canonical_flags,
    computed_names,
    include_closure,
    inert_reason,
    named,
    place_names,
    unnamed,
)

LAUNCHER = """\
#pragma once
template <int N> struct Storage { char smem[N * 1024]; };
struct Sm100 { static constexpr int kCC = 100; };
#define THROW(msg) throw msg
template <class Arch> struct Dispatch {
  using GemmKernel = Storage<Arch::kCC / 25>;
  static void op() {}
};
template <class Arch>
void launcher(int n) {
  if constexpr (Arch::kCC < 90) {
    THROW(1);
  }
#ifndef M
  else if constexpr (Arch::kCC == 103) {
    THROW(2);
  }
#endif
  else {
    Dispatch<Arch>::op();
  }
}
"""

SOURCE = '#include "launcher.h"\ntemplate void launcher<Sm100>(int);\nstruct K { Dispatch<Sm100>::GemmKernel k; };\n'

#: shapes the rule refuses: (header, why, what libclang gives for sizeof(K) without M, with M)
REFUSED = {
    "constexpr": (
        "constexpr int stages() {\n#ifdef M\n  return 3;\n#else\n  return 4;\n#endif\n}\n"
        "struct K { char smem[stages() * 1024]; };\n",
        "in a constexpr function",
        (4096, 3072),
    ),
    "namespace": (
        "#ifdef M\nusing T = int;\n#else\nusing T = double;\n#endif\nstruct K { T t; };\n",
        "outside any function body",
        (8, 4),
    ),
    "deduced": (
        "inline auto stages() {\n#ifdef M\n  return 'a';\n#else\n  return 1.0;\n#endif\n}\n"
        "struct K { decltype(stages()) s; };\n",
        "return type is deduced",
        (8, 1),
    ),
    "directive": (
        "inline void f() {\n#ifdef M\n#define STAGES 3\n#endif\n}\n#ifndef STAGES\n#define STAGES 4\n#endif\n"
        "struct K { char smem[STAGES * 1024]; };\n",
        "holds other directives",
        (4096, 3072),
    ),
    "alias": (
        "template <int N> struct Storage { char smem[N * 1024]; };\ntemplate <class A> void f() {\n"
        "#ifdef M\n  using GemmKernel = Storage<3>;\n#else\n  using GemmKernel = Storage<4>;\n#endif\n}\n"
        "struct K { char c; };\n",
        "declares an alias",
        (1, 1),
    ),
}


def _size(folder: Path, text: str, flags: list[str]) -> int:
    src = folder / "probe.cpp"
    src.write_text(text)
    unit = ci.Index.create().parse(str(src), args=["-x", "c++", "-std=c++17", f"-I{folder}", *flags])
    assert not [d for d in unit.diagnostics if d.severity >= 3], [str(d) for d in unit.diagnostics]
    k = next(c for c in unit.cursor.get_children() if c.spelling == "K" and c.is_definition())
    return k.type.get_canonical().get_size()


def test_a_define_tested_only_in_a_void_function_body_is_inert(tmp_path):
    (tmp_path / "launcher.h").write_text(LAUNCHER)
    src = tmp_path / "a.cu"
    src.write_text(SOURCE)
    closure = include_closure(src, [f"-I{tmp_path}"])
    assert [p.name for p in closure.files] == ["a.cu", "launcher.h"]
    assert inert_reason("M", closure) is None
    # what the rule claims, by libclang: the kernel is the same type either way (Storage<4>: 4096 B)
    assert _size(tmp_path, SOURCE, []) == _size(tmp_path, SOURCE, ["-DM"]) == 4096
    plain = canonical_flags(src, [f"-I{tmp_path}"], None, "sm100")
    assert canonical_flags(src, [f"-I{tmp_path}", "-DM"], None, "sm100") == plain
    assert canonical_flags(src, [f"-I{tmp_path}", "-DM=1"], None, "sm100") == plain


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_a_define_that_can_change_a_type_is_not_inert(tmp_path, shape):
    header, why, sizes = REFUSED[shape]
    (tmp_path / "h.h").write_text(header)
    src = tmp_path / "a.cu"
    src.write_text('#include "h.h"\n')
    reason = inert_reason("M", include_closure(src, [f"-I{tmp_path}"]))
    assert reason is not None and why in reason, reason
    assert reason.startswith(f"{tmp_path / 'h.h'}:")
    # the refusal matters: libclang lays the type out otherwise with the define
    assert (_size(tmp_path, '#include "h.h"\n', []), _size(tmp_path, '#include "h.h"\n', ["-DM"])) == sizes
    flags = [f"-I{tmp_path}"]
    assert canonical_flags(src, flags + ["-DM"], None, "sm100") != canonical_flags(src, flags, None, "sm100")


def test_a_define_outside_any_condition_or_in_a_macro_is_not_inert(tmp_path):
    (tmp_path / "h.h").write_text("#define WIDTH M\nstruct K { char c[WIDTH]; };\n")
    src = tmp_path / "a.cu"
    src.write_text('#include "h.h"\n')
    assert "outside the condition of an #if" in inert_reason("M", include_closure(src, [f"-I{tmp_path}"]))


def test_a_body_whose_macro_declares_an_alias_is_not_inert(tmp_path):
    (tmp_path / "h.h").write_text(
        "#define KERNEL(n) using GemmKernel = int[n]\ntemplate <class A> void f() {\n#ifdef M\n  KERNEL(3);\n"
        "#else\n  KERNEL(4);\n#endif\n}\n"
    )
    src = tmp_path / "a.cu"
    src.write_text('#include "h.h"\n')
    assert "declares an alias" in inert_reason("M", include_closure(src, [f"-I{tmp_path}"]))


def test_every_include_is_followed_whatever_its_condition(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.h").write_text("template <class A> void g() {\n#ifdef M\n  return;\n#endif\n}\n")
    (tmp_path / "sub" / "never.h").write_text("#ifdef M\nusing T = int;\n#endif\n")
    (tmp_path / "h.h").write_text('#pragma once\n#if 0\n#include "sub/never.h"\n#endif\n#include <sub/deep.h>\n')
    src = tmp_path / "a.cu"
    src.write_text('#include "h.h"\n#if __has_include("sub/other.h")\n#endif\n')
    closure = include_closure(src, [f"-I{tmp_path}"])
    assert sorted(p.name for p in closure.files) == ["a.cu", "deep.h", "h.h", "never.h"]
    assert ("sub/other.h", None) in [(n, t) for _, n, t in closure.names]
    assert "outside any function body" in inert_reason("M", closure)  # never.h is read too


def test_a_computed_include_is_followed_to_every_name_it_can_expand_to(tmp_path):
    # cutlass/cutlass.h: #define CUDA_STD_HEADER(header) <cuda/std/header>; cute/util/type_traits.hpp:
    # #include CUDA_STD_HEADER(type_traits)
    (tmp_path / "cuda" / "std").mkdir(parents=True)
    (tmp_path / "cuda" / "std" / "type_traits").write_text("// libcu++\n")
    (tmp_path / "cutlass.h").write_text("#define CUDA_STD_HEADER(header) <cuda/std/header>\n")
    (tmp_path / "traits.hpp").write_text('#include "cutlass.h"\n#include CUDA_STD_HEADER(type_traits)\n')
    src = tmp_path / "a.cu"
    src.write_text('#include "traits.hpp"\n')
    closure = include_closure(src, [f"-I{tmp_path}"])
    assert (tmp_path / "cuda" / "std" / "type_traits") in closure.files
    # thrust: a root of several definitions, each followed, and a macro left as it is
    defines = {"ROOT": [(None, "thrust/system/NS")], "NS": [(None, "cpp"), (None, "omp")], "INC": [(["f"], "<ROOT/f>")]}
    assert computed_names("INC(sort.h)", defines) == {
        "<thrust/system/cpp/sort.h>",
        "<thrust/system/omp/sort.h>",
        "<thrust/system/NS/sort.h>",
        "<ROOT/sort.h>",
    }
    assert computed_names("UNDEFINED", defines) == set()
    (tmp_path / "b.cu").write_text("#include HEADER_OF_NOTHING\n")
    assert include_closure(tmp_path / "b.cu", []) is None  # nothing to follow: the source keeps its flags
    assert canonical_flags(tmp_path / "b.cu", ["-DM"], None, "sm100") is None


def _builds(tmp_path: Path, extra: dict[str, str] | None = None):
    """Two builds' generated folders (flashinfer-jit/<build>/generated/cutlass_instantiations/<arch>)
    holding the same source and header, and their flags."""
    out = []
    for build, arch in (("b100", "100"), ("b103", "103")):
        gen = tmp_path / build / "generated"
        inc = gen / "cutlass_instantiations" / arch
        (inc / "gemm_grouped" / "100").mkdir(parents=True)
        (inc / "common.h").write_text("struct K { char c[64]; };\n")
        src = inc / "gemm_grouped" / "100" / "s.generated.cu"
        src.write_text('#include "common.h"\n#if __has_include("extra.h")\n#include "extra.h"\n#endif\n')
        for name, text in (extra or {}).items() if arch == "103" else ():
            (inc / name).write_text(text)
        flags = ["-x", "cuda", "--cuda-host-only", f"--cuda-gpu-arch=sm_{arch}a", f"-I{inc}"]
        out.append((src, flags + (["-DM"] if arch == "103" else []), gen))
    return out


def test_two_builds_of_one_source_key_alike(tmp_path):
    (a, fa, ga), (b, fb, gb) = _builds(tmp_path)
    ka, kb = canonical_flags(a, fa, ga, "sm100"), canonical_flags(b, fb, gb, "sm100")
    assert ka == kb
    assert "--cuda-gpu-arch=<sm100>" in ka and "-I<generated 0>" in ka
    assert ka[-1] == "<source <generated 0>/gemm_grouped/100/s.generated.cu>"
    # a generated header of other bytes
    (b.parent.parent.parent / "common.h").write_text("struct K { char c[128]; };\n")
    assert canonical_flags(b, fb, gb, "sm100") != ka


def test_a_file_only_one_build_generates_keeps_them_apart(tmp_path):
    (a, fa, ga), (b, fb, gb) = _builds(tmp_path, extra={"extra.h": "struct E { char e[8]; };\n"})
    assert canonical_flags(a, fa, ga, "sm100") != canonical_flags(b, fb, gb, "sm100")


def test_the_gpu_arch_counts_unless_the_parse_is_host_only(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("struct K { char c; };\n")
    host = ["-x", "cuda", "--cuda-host-only"]
    assert canonical_flags(src, host + ["--cuda-gpu-arch=sm_100a"], None, "sm100") == canonical_flags(
        src, host + ["--cuda-gpu-arch=sm_103a"], None, "sm100"
    )
    device = ["-x", "cuda", "--cuda-gpu-arch=sm_100a"]
    assert canonical_flags(src, device, None, "sm100") != canonical_flags(
        src, ["-x", "cuda", "--cuda-gpu-arch=sm_103a"], None, "sm100"
    )


def test_a_generated_path_is_named_by_its_place_and_back(tmp_path):
    (a, fa, ga), (b, fb, gb) = _builds(tmp_path)
    pa, pb = place_names(fa, ga), place_names(fb, gb)
    name = named(str(a), pa)
    assert name == "<generated 0>/gemm_grouped/100/s.generated.cu"
    assert unnamed(name, pb) == str(b)
    assert unnamed("/elsewhere/x.h", pb) == "/elsewhere/x.h"
    # as a cache entry stores them: JSON lists
    assert unnamed(name, json.loads(json.dumps(pb))) == str(b)


@pytest.mark.network
@pytest.mark.slow
def test_sm103_reads_the_sm100_builds_layouts_of_their_common_sources(tmp_path, monkeypatch):
    """flashinfer 0.7.4: the SM103 build's copies of the SM100 MoE sources are read from the SM100
    build's answers (no parse), and equal what a parse of the SM103 build gives."""
    from cutlass_layout import audit

    spec = "flashinfer-python==0.7.4"
    sm100 = audit(spec, "sm100", family="moe", shard=(1, 60))
    shared = audit(spec, "sm103", family="moe", shard=(1, 60))
    assert shared.stats["parsed"] == 0 and shared.stats["cached"] == shared.stats["sources"] == 3
    fresh = audit(spec, "sm103", family="moe", shard=(1, 60), use_cache=False)
    assert fresh.stats["parsed"] == 3

    def rows(r):
        return sorted(
            json.dumps(
                [t.file, t.line, t.name, t.launcher_file, t.launcher_line, t.report.to_dict(), t.verdict],
                sort_keys=True,
                default=str,
            )
            for t in r.tactics
        )

    assert rows(shared) == rows(fresh)
    assert len(shared.tactics) == 24 and all(t.file.startswith("cutlass_instantiations/103/") for t in shared.tactics)

    def layouts(r):  # each report but where it was made and what it is called (the file names the build)
        return {
            hashlib.sha256(
                json.dumps(
                    {k: v for k, v in t.report.to_dict().items() if k not in ("provenance", "config")},
                    sort_keys=True,
                    default=str,
                ).encode()
            ).hexdigest()
            for t in r.tactics
        }

    assert layouts(shared) <= layouts(sm100)


def test_only_an_answer_without_errors_is_shared_and_its_paths_are_placed(tmp_path):
    from cutlass_layout.commands.audit.run import clean_payload, placed

    (a, fa, ga), (b, fb, gb) = _builds(tmp_path)
    ok = {"error": None, "kernels": [{"found": {"decl_file": str(a)}, "report": {"error": None}}]}
    assert clean_payload(ok)
    assert not clean_payload({"error": "a.cu:1: error: x", "kernels": []})
    assert not clean_payload({"error": None, "kernels": [{"found": {}, "report": {"error": {"message": "x"}}}]})
    stored = placed(ok, place_names(fa, ga), back=False, copy=True)
    assert ok["kernels"][0]["found"]["decl_file"] == str(a)  # the build's own answer is left as it is
    assert stored["kernels"][0]["found"]["decl_file"] == "<generated 0>/gemm_grouped/100/s.generated.cu"
    assert placed(stored, place_names(fb, gb), back=True)["kernels"][0]["found"]["decl_file"] == str(b)


def test_clangs_own_and_the_system_headers_are_read_too(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("#include <cstddef>\n")
    names = {p.name for p in include_closure(src, ["-x", "cuda"]).files}
    # clang includes its CUDA runtime wrapper before a CUDA source; <cstddef> is libstdc++'s
    assert {"__clang_cuda_runtime_wrapper.h", "cstddef"} <= names
    assert "__clang_cuda_runtime_wrapper.h" not in {p.name for p in include_closure(src, []).files}


def test_a_computed_include_it_cannot_spell_is_not_known():
    # a name built with # or ##, or a macro that names itself: no name is sure, so the source keeps its flags
    assert computed_names("STR(a.h)", {"STR": [(["x"], "#x")]}) == set()
    assert computed_names("SELF", {"SELF": [(None, "SELF")]}) == set()


def test_blanking_a_literal_continued_by_a_backslash_keeps_its_newline():
    from cutlass_layout.cpp.brackets import blank_comments

    text = 'const char* s = "a\\\nb";\n#ifdef M\n#endif\n'
    clean = blank_comments(text)
    assert len(clean) == len(text) and clean.count("\n") == text.count("\n")
    assert clean.splitlines()[2] == "#ifdef M"  # the directive still starts its own line
