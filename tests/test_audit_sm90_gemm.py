"""audit on SM90: flashinfer's dense SM90 GEMM module (``gen_gemm_sm90_module``).

Its six generated sources (``group_gemm_<in>_<out>_sm90.cu``, rendered from
``group_gemm_sm90_kernel_inst.jinja``) each instantiate one function template explicitly:
``template cudaError_t CutlassSegmentGEMMSM90Run<DTypeIn, DTypeOut>(...);``. The template
(``include/flashinfer/gemm/group_gemm_sm90.cuh``, flashinfer 0.7.4) starts with statements (a
compute-capability check that returns early), then declares its kernel inside
``DISPATCH_WEIGHT_LAYOUT(weight_column_major, WEIGHT_LAYOUT, { ... })``, a macro of the same
header that expands to ``if (weight_column_major) { using WEIGHT_LAYOUT = ColumnMajor; ... }
else { using WEIGHT_LAYOUT = RowMajor; ... }``; inside, ``if constexpr (RowMajor B && sizeof(DTypeIn)
== 1) { error } else { ... using GemmKernel = GemmUniversal<...>; ... }``. So each 16-bit
instantiation builds two kernels (B column- and row-major) and each FP8 one builds one (the
row-major FP8 branch raises instead): 2 x 2 + 4 x 1 = 8 kernels.

The offline tests run the text transforms (:func:`cutlass_layout.cpp.rehost.rehost_paths`) on a
short template written here in that shape and compile what they give (libclang, C++ only); the
nvcc test compares the real kernels of two generated sources with nvcc's device front end.
"""

from __future__ import annotations

import re
import shutil

import pytest

from cutlass_layout.cpp.brackets import blank_comments
from cutlass_layout.cpp.macros import expand_macro_calls
from cutlass_layout.cpp.rehost import kernel_paths, rehost_paths
from cutlass_layout.cpp.arguments import parameter_names

#: the shape of CutlassSegmentGEMMSM90Run, cut short (types stand in for CUTLASS's)
HEADER = r"""
namespace cl_detail { struct cl_none {}; }
namespace k { template <class B, class T, class O> struct GemmUniversal {}; }
struct ColumnMajor {}; struct RowMajor {};
template <class A, class B> constexpr bool same = false;
template <class A> constexpr bool same<A, A> = true;
int capability();
#define DISPATCH_LAYOUT(is_column_major, LAYOUT, ...) \
  if (is_column_major) {                              \
    using LAYOUT = ColumnMajor;                       \
    __VA_ARGS__                                       \
  } else {                                            \
    using LAYOUT = RowMajor;                          \
    __VA_ARGS__                                       \
  }
#define FAIL(msg) throw msg

template <typename DTypeIn, typename DTypeOut>
int Run(bool weight_column_major, int n) {
  auto cc = capability();
  if (cc < 9) {
    return -1;  // { an early return, not a declaration
  }
  using ElementA = DTypeIn;
  DISPATCH_LAYOUT(weight_column_major, WEIGHT_LAYOUT, {
    if constexpr (same<WEIGHT_LAYOUT, RowMajor> && sizeof(DTypeIn) == 1) {
      FAIL("row-major B is not supported for fp8");
    } else {
      constexpr bool is_fp8 = sizeof(DTypeIn) == 1;
      using Tile = char[is_fp8 ? 256 : 128];
      for (int i = 0; i < n; ++i) { n += i; }
      using GemmKernel = k::GemmUniversal<WEIGHT_LAYOUT, Tile, DTypeOut>;
      using Later = GemmKernel;  // after the kernel: not needed
      return n;
    }
  });
  return 0;
}
"""


def _definition() -> str:
    start = HEADER.index("template <typename DTypeIn")
    return HEADER[start:]


def test_the_macro_around_the_kernel_is_expanded():
    """Only the call whose arguments hold the kernel alias is expanded (``FAIL`` in it too is
    not: its arguments hold none), its parameters substituted token by token and
    ``__VA_ARGS__`` given the block with its commas."""
    body = blank_comments(_definition())
    out = expand_macro_calls(body, HEADER)
    assert "DISPATCH_LAYOUT" not in out and "FAIL(" in out
    assert out.count("using WEIGHT_LAYOUT = ColumnMajor;") == 1
    assert out.count("using WEIGHT_LAYOUT = RowMajor;") == 1
    assert out.count("using GemmKernel = k::GemmUniversal<WEIGHT_LAYOUT, Tile, DTypeOut>;") == 2
    assert "if (weight_column_major)" in out
    # a definition with # or ## is not expanded
    assert expand_macro_calls(body, HEADER.replace("using LAYOUT = ColumnMajor;", "using LAYOUT = #LAYOUT;")) is None


def test_one_path_per_kernel_alias():
    """Two paths (one per branch of the runtime if), each with the declarations on its way and
    the else of the if constexpr as a condition; the loop, the early return, the runtime
    variable and the alias after the kernel left out."""
    body = expand_macro_calls(blank_comments(_definition()[_definition().index("{") + 1 :]), HEADER)
    paths = kernel_paths(body)
    assert [labels for _, labels, _ in paths] == [["weight_column_major"], ["!weight_column_major"]]
    assert [alias for _, _, alias in paths] == ["GemmKernel", "GemmKernel"]
    for (pieces, _, _), layout in zip(paths, ("ColumnMajor", "RowMajor")):
        decls = [" ".join(t.split()) for kind, t in pieces if kind == "decl"]
        conds = [" ".join(t.split()) for kind, t in pieces if kind == "cond"]
        assert decls == [
            "using ElementA = DTypeIn;",
            f"using WEIGHT_LAYOUT = {layout};",
            "constexpr bool is_fp8 = sizeof(DTypeIn) == 1;",
            "using Tile = char[is_fp8 ? 256 : 128];",
            "using GemmKernel = k::GemmUniversal<WEIGHT_LAYOUT, Tile, DTypeOut>;",
        ]
        assert conds == ["!(same<WEIGHT_LAYOUT, RowMajor> && sizeof(DTypeIn) == 1)"]
    # a kernel inside a loop is not followed
    looped = "for (int i = 0; i < 2; ++i) { using GemmKernel = k::GemmUniversal<int, int, int>; }"
    assert kernel_paths(looped) is None
    assert kernel_paths("int x = 1;") == []


def test_parameter_names():
    assert parameter_names("typename A, int N = 3, class... Ts") == ["A", "N", "Ts..."]
    assert parameter_names("typename A, typename") is None


def _compile(text: str) -> dict[str, str]:
    import clang.cindex as ci

    tu = ci.Index.create().parse("t.cpp", args=["-x", "c++", "-std=c++17"], unsaved_files=[("t.cpp", text)])
    errors = [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    assert not errors, errors
    return {
        c.spelling: c.underlying_typedef_type.get_canonical().spelling
        for c in tu.cursor.get_children()
        if c.kind == ci.CursorKind.TYPE_ALIAS_DECL
        and c.location.file is not None
        and c.location.file.name == "t.cpp"
        and c.spelling.startswith("x")
    }


def test_rehosted_paths_compile_to_the_kernels_each_branch_builds():
    """Each path's class names the kernel its branch builds, worked out from the text above:
    ``GemmUniversal<ColumnMajor, char[128], float>`` for short x float, column-major; for a
    one-byte DTypeIn the row-major branch raises instead, so that path's kernel is
    ``cl_detail::cl_none`` (and nothing in it is instantiated: the chain behind the condition
    would not compile for it)."""
    paths = rehost_paths(_definition(), 0, HEADER, none_type="cl_detail::cl_none")
    assert [(alias, label) for _, _, alias, label in paths] == [
        ("GemmKernel", "weight_column_major"),
        ("GemmKernel", "!weight_column_major"),
    ]
    text = (
        HEADER
        + "".join(p[1] for p in paths)
        + (
            "using x16c = cl_rehost_0_p0<short, float>::GemmKernel;\n"
            "using x16r = cl_rehost_0_p1<short, float>::GemmKernel;\n"
            "using x8c = cl_rehost_0_p0<char, double>::GemmKernel;\n"
            "using x8r = cl_rehost_0_p1<char, double>::GemmKernel;\n"
        )
    )
    assert _compile(text) == {
        "x16c": "k::GemmUniversal<ColumnMajor, char[128], float>",
        "x16r": "k::GemmUniversal<RowMajor, char[128], float>",
        "x8c": "k::GemmUniversal<ColumnMajor, char[256], double>",
        "x8r": "cl_detail::cl_none",
    }
    # the branch's own chain is not instantiated where its condition is false: a member that
    # cannot compile for a one-byte DTypeIn does not break the row-major path's class
    broken = _definition().replace(
        "using Tile = char[is_fp8 ? 256 : 128];",
        "using Tile = char[is_fp8 && same<WEIGHT_LAYOUT, RowMajor> ? -1 : 128];",
    )
    paths = rehost_paths(broken, 1, HEADER, none_type="cl_detail::cl_none")
    text = HEADER + "".join(p[1] for p in paths) + "using x8r = cl_rehost_1_p1<char, double>::GemmKernel;\n"
    assert _compile(text) == {"x8r": "cl_detail::cl_none"}


# ---------------------------------------------------------------------------------------
# the real module against nvcc
SPEC = "flashinfer-python==0.7.4"
CAPACITY = 232448  # sm90_smem_capacity_bytes (gemm/collective/builders/sm90_common.inl)
#: one 16-bit source (two kernels) and one FP8 source (one), and the module's two others
SAMPLE = (
    "group_gemm_f16_f16_sm90.cu",
    "group_gemm_e4m3_bf16_sm90.cu",
    "group_gemm_sm90.cu",
    "flashinfer_gemm_sm90_binding.cu",
)
#: what nvcc is asked to show, put after the kernel alias in a copy of the header: the
#: kernel's numbers, its ``Line`` 1 for column-major B, 2 for row-major
SHOW = (
    "static_assert(cl_sizes<GemmKernel, (std::is_same_v<WEIGHT_LAYOUT, cutlass::layout::ColumnMajor> "
    '? 1 : 2)>::value == 0, "");'
)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_group_gemm_sm90_against_nvcc(nvcc, tmp_path, only_sources):
    """Two of the module's sources audited (each instantiation's kernels: both weight layouts
    for FP16, column-major only for FP8), and compiled by nvcc's device front end for sm_90a
    with the module's flags and a copy of flashinfer's headers in which the launcher shows its
    ``GemmKernel``'s numbers right after declaring it: every kernel's, mainloop's and
    epilogue's ``sizeof(SharedStorage)`` and the stage count are nvcc's, and nvcc instantiates
    no kernel for row-major FP8 (the ``if constexpr`` raises there)."""
    from cutlass_layout.checks.nvcc_probe import SIZES_SHOW, nvcc_flags, unit_sizes
    from cutlass_layout.commands.audit import audit
    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    some = only_sources(lambda name: name in SAMPLE)
    res = audit(SPEC, "sm90", family="gemm_sm90")
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    module = next(m for m in some(install, "sm90", cuda_version=tgt.cuda.version).modules if m.name == "gemm_sm90")
    assert sorted(p.name for p in module.generated) == sorted(SAMPLE)
    assert not [e for e in res.sources if e["error"]]
    mine = {(t.file.split("/")[-1], t.name.endswith("[weight_column_major]")): t for t in res.tactics}
    assert len(mine) == len(res.tactics) == 3
    # the launcher's header, copied and shown (the copy is found first: -I before the module's)
    include = tmp_path / "include"
    shutil.copytree(install.root / "data" / "include" / "flashinfer", include / "flashinfer")
    header = include / "flashinfer" / "gemm" / "group_gemm_sm90.cuh"
    text = header.read_text()
    alias = re.search(r"using GemmKernel = cutlass::gemm::kernel::GemmUniversal<[^;]*;", text)
    header.write_text(text[: alias.end()] + " " + SHOW + text[alias.end() :])
    show = SIZES_SHOW
    sources = [p for p in module.generated if p.name.startswith("group_gemm_") and p.name != "group_gemm_sm90.cu"]
    flags = [f"-I{include}", *nvcc_flags(module, install.tree, "sm_90a")]
    _, out = unit_sizes(sources, flags, tmp_path, device=True, show=show)
    got = {}
    for block in re.split(r"\n(?=\S[^\n]*: error: )", out):
        shown = re.search(r"cl_show<(\d+), (\d+)UL, (\d+)UL, (\d+)UL, (-?\d+)>", block)
        if not shown:
            continue
        source = next(s for s in sources if str(s) in block)
        got[(source.name, shown.group(1) == "1")] = tuple(int(x) for x in shown.groups()[1:])
    assert sorted(got) == sorted(mine), out[-3000:]
    for key, (kernel, mainloop, epilogue, stages) in got.items():
        r = mine[key].report
        assert r.capacity.value == CAPACITY
        assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == (kernel, mainloop, epilogue, stages), key


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
def test_verify_nvcc_reads_each_path_of_a_runtime_branch(nvcc, only_sources, capsys):
    """``audit --verify nvcc`` of the module: the FP16 source's two kernels, one per branch of
    the runtime ``if`` over the weight layout, are told apart by their alias lines, and nvcc
    agrees on both and on the FP8 source's one; the family is no longer "not verified"."""
    from cutlass_layout.cli import main

    only_sources(lambda name: name in SAMPLE)
    assert main(["audit", SPEC, "--arch", "sm90", "--family", "gemm_sm90", "--verify", "nvcc", "--sample", "3"]) == 0
    out = capsys.readouterr().out
    assert "nvcc agrees on 3 of 3 tactics (1 family, 2 sources)" in out, out[-2000:]
    assert "not verified" not in out
