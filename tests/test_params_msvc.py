"""A kernel's ``Params`` on both host ABIs nvcc pairs with (issue 44): Linux x86-64 (GCC/Clang)
and Windows x64 (MSVC, cl.exe's default ``__cplusplus`` of 199711L), and NVIDIA/cutlass#2905
(``prefetch.tensormap`` faulted on an RTX 5090 under Windows: descriptors not 64-byte aligned).

Every value is derived by hand below (from cuda.h and CUTLASS's headers) or checked by nvcc's
own host pass; the MSVC layouts by static_asserts of hand values compiled for clang's MSVC
target (its Microsoft record layout), in a parse of their own.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cutlass_layout.cpp.clang import ProbeUnit, clang_flags, msvc_flags
from cutlass_layout.engine.numbers import params_layout
from cutlass_layout.model import DescriptorAt, ParamsLayout
from cutlass_layout.sources.cuda import find_cuda

HEADERS = Path(__file__).resolve().parent.parent / "fixtures" / "headers"
FIXTURE = HEADERS / "params_descriptor.hpp"
EXAMPLE_87A = HEADERS / "sm120_blockwise_fp8.hpp"
#: A CUTLASS v4.3.3 checkout (the CUTLASS of NVIDIA/cutlass#2905; the package index stops at
#: nvidia-cutlass 4.2.0.0, whose tree has the same SM120 blockwise collective)
CHECKOUT_433 = os.environ.get("CUTLASS_LAYOUT_TEST_CUTLASS_433", "")


def _cuda():
    cuda = find_cuda()
    if not (cuda.path / "include" / "cuda.h").is_file():
        pytest.skip(f"no cuda.h under {cuda.path}/include")
    return cuda


def _descriptor_align(cuda) -> int:
    """The alignas cuda.h gives CUtensorMap under C++11 and later: 128 from CUDA 13.0 on, 64
    before (read from the header's text)."""
    text = (cuda.path / "include" / "cuda.h").read_text(errors="replace")
    m = re.search(r"typedef struct CUtensorMap_st \{\s*#if[^\n]*__cplusplus >= 201103L\)\s*alignas\((\d+)\)", text)
    assert m, "cuda.h: no alignas on CUtensorMap"
    return int(m.group(1))


def _unit(text: str, msvc: bool, zc: bool = False) -> ProbeUnit:
    cuda = _cuda()
    flags = clang_flags(HEADERS, cuda.path, cuda.cccl, "sm_120a", cuda.version)
    return ProbeUnit(text, msvc_flags(flags, zc_cplusplus=zc) if msvc else flags, HEADERS)


_PROBE = f"""#include "{FIXTURE}"
#include <cstddef>
#include <cstdint>
namespace cl_probe_0 {{
using KernelParams = params_fixture::Params;
using KernelParamsBytes = char[sizeof(KernelParams)];
}}
"""


def test_a_descriptor_after_an_int_on_both_abis():
    """``struct Params {{ int mode; CUtensorMap desc; int tail; }}`` by hand. CUtensorMap is
    ``cuuint64_t opaque[16]``: 128 B, and ``alignas(A)`` (A = 128 in CUDA 13's cuda.h, 64
    before) where ``__cplusplus >= 201103L``, else the alignment of its ``unsigned long long``
    elements, 8.

    * Linux x86-64 (``__cplusplus`` 201703L): desc at A (4 rounded up to A), tail at A + 128,
      sizeof = A + 132 rounded up to A, align A: A = 128 gives 128, 256, 384.
    * MSVC x64, cl.exe's default ``__cplusplus`` 199711L: no alignas, so desc at 8, tail at
      136, sizeof 140 rounded up to 8 = 144, align 8; desc is not 64-byte aligned.
    * MSVC with ``/Zc:__cplusplus``: the standard's value, the Linux layout again."""
    a = _descriptor_align(_cuda())
    rnd = lambda n, m: -(-n // m) * m  # noqa: E731
    want = {
        "linux": (rnd(a + 132, a), a, a),
        "msvc": (144, 8, 8),
        "zc": (rnd(a + 132, a), a, a),
    }
    for abi, msvc, zc in (("linux", False, False), ("msvc", True, False), ("zc", True, True)):
        unit = _unit(_PROBE, msvc, zc)
        assert unit.errors() == []
        p = params_layout(unit, unit.aliases("cl_probe_0"))
        size, align, at = want[abi]
        assert p is not None and (p.size, p.align) == (size, align), abi
        assert p.descriptors == (DescriptorAt("desc", at, "CUtensorMap", align),), abi
        assert p.abi == ("msvc-x64" if msvc else "linux-x86_64")
        assert bool(p.findings()) == (abi == "msvc"), abi
    msvc = ParamsLayout(144, 8, (DescriptorAt("desc", 8, "CUtensorMap", 8),), 32764, "13.0", "msvc-x64")
    assert msvc.findings() == [
        "TMA descriptor desc at offset 8 of Params is not 64-byte aligned on MSVC: cuda.h drops the alignas "
        "of CUtensorMap (128 from CUDA 13, 64 before) when __cplusplus < 201103L, cl.exe's default; "
        "-Xcompiler /Zc:__cplusplus fixes it",
        "Params is 8-byte aligned on MSVC: its TMA descriptors are not 64-byte aligned wherever it is placed",
    ]


def test_the_msvc_parse_is_llp64_and_clexe_where_it_matters():
    """A static_assert program of hand values, compiled for the MSVC parse: LLP64 (``long`` 4
    bytes, every fixed-width type and ``size_t``/``ptrdiff_t``/``intptr_t`` its width), MSVC's
    macros, cl.exe's ``__cplusplus`` inside cuda.h only (the libstdc++ standing in for the MSVC
    STL needs C++17's, as the MSVC STL reads ``_MSVC_LANG``), and the fixture's layout."""
    checks = (
        _PROBE
        + """
static_assert(sizeof(long) == 4 && sizeof(unsigned long) == 4 && sizeof(long long) == 8, "LLP64");
static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "int");
static_assert(sizeof(uint8_t) == 1 && sizeof(uint16_t) == 2 && sizeof(uint32_t) == 4 && sizeof(uint64_t) == 8, "u");
static_assert(sizeof(std::int64_t) == 8 && sizeof(std::uint64_t) == 8 && alignof(int64_t) == 8, "std");
static_assert(sizeof(int_least64_t) == 8 && sizeof(int_fast64_t) == 8 && sizeof(intmax_t) == 8, "least");
static_assert(sizeof(size_t) == 8 && sizeof(ptrdiff_t) == 8 && sizeof(intptr_t) == 8, "ptr");
static_assert(sizeof(uintptr_t) == 8 && sizeof(void *) == 8 && sizeof(cuuint64_t) == 8, "uptr");
static_assert(INT64_MAX == 9223372036854775807LL && UINT32_MAX == 4294967295u, "limits");
#if !defined(_MSC_VER) || !defined(_WIN64) || !defined(_MSVC_LANG) || __cplusplus < 201703L
#error "not the MSVC target with C++17's __cplusplus outside cuda.h"
#endif
static_assert(alignof(CUtensorMap) == 8 && sizeof(CUtensorMap) == 128, "cl.exe's cuda.h");
static_assert(__builtin_offsetof(params_fixture::Params, desc) == 8, "desc");
static_assert(__builtin_offsetof(params_fixture::Params, tail) == 136, "tail");
static_assert(sizeof(params_fixture::Params) == 144 && alignof(params_fixture::Params) == 8, "Params");
"""
    )
    assert _unit(checks, msvc=True).errors() == []


# ---------------------------------------------------------------------------------------
# NVIDIA/cutlass#2905: CUTLASS example 87a's kernel (fixtures/headers/sm120_blockwise_fp8.hpp)

#: The first descriptor's offset, by hand. GemmUniversal's Params (kernel/
#: sm90_gemm_tma_warpspecialized_cooperative.hpp, which the SM120 blockwise kernel uses)
#: starts ``GemmUniversalMode mode`` (an enum class of int: 4 B at 0), ``ProblemShape
#: problem_shape`` (``Shape<int,int,int,int>``: 16 B, align 4, at 4), then ``MainloopParams
#: mainloop``, whose first member (gemm/collective/sm120_mma_tma_blockwise_scaling.hpp) is
#: ``TMA_A tma_load_a``, a TiledCopy whose Copy_Traits<SM90_TMA_LOAD, ...> base starts with
#: ``TmaDescriptor tma_desc_`` (cute/atom/copy_traits_sm90_tma.hpp): 20 rounded up to the
#: descriptor's alignment, 128 on Linux (CUDA 13's alignas(128)), 8 on MSVC: 24. The second,
#: tma_load_b, follows TMA_A: its descriptor (128 B) and aux params (the rest of the
#: difference), padded to the descriptor's alignment on Linux.
FIRST = {"linux": 128, "msvc": 24}
DESC = "mainloop.tma_load_a.<base cute::Copy_Atom<...>>.<base cute::Copy_Traits<...>>.tma_desc_"


def _example_87a(tgt):
    from cutlass_layout.engine.abis import read_params
    from cutlass_layout.subjects.user_type import UserType

    user = UserType(header=str(EXAMPLE_87A), type="example87a::GemmKernel", arch="sm120")
    got = {
        "linux": read_params(tgt, user, msvc=False),
        "msvc": read_params(tgt, user, msvc=True),
        "zc": read_params(tgt, user, msvc=True, zc_cplusplus=True),
    }
    for abi, p in got.items():
        assert isinstance(p, ParamsLayout), f"{abi}: {p}"
    return got


def _check_2905(got: dict) -> None:
    linux, msvc, zc = got["linux"], got["msvc"], got["zc"]
    assert (linux.align, msvc.align) == (128, 8)
    assert linux.descriptors[0].path == msvc.descriptors[0].path == DESC
    assert (linux.descriptors[0].offset, msvc.descriptors[0].offset) == (FIRST["linux"], FIRST["msvc"])
    # four descriptors (A, B; the epilogue's C load and D store) on both, in the same order
    paths = [d.path.split(".")[:2] for d in linux.descriptors]
    assert paths == [["mainloop", "tma_load_a"], ["mainloop", "tma_load_b"], ["epilogue", "tma_load_c"],
                     ["epilogue", "tma_store_d"]]  # fmt: skip
    assert [d.path for d in msvc.descriptors] == [d.path for d in linux.descriptors]
    assert linux.findings() == [] and zc.findings() == []
    assert all(d.offset % 64 == 0 for d in linux.descriptors)
    # the misaligned member named, with the cause and the fix
    assert msvc.findings()[0] == (
        f"TMA descriptor {DESC} at offset 24 of Params is not 64-byte aligned on MSVC: cuda.h drops "
        "alignas(128) from CUtensorMap when __cplusplus < 201103L, cl.exe's default; -Xcompiler "
        "/Zc:__cplusplus fixes it"
    )
    # /Zc:__cplusplus: the Linux layout exactly (the descriptors' alignment decides it all)
    assert (zc.size, zc.align, zc.descriptors) == (linux.size, linux.align, linux.descriptors)


@pytest.mark.slow
def test_cutlass_2905_on_a_42_tree(nc420):
    """nvidia-cutlass 4.2.0.0 holds the same collective (gemm/collective/
    sm120_mma_tma_blockwise_scaling.hpp) and epilogue as the 4.3.3 of the issue."""
    assert (nc420.tree.include_root / "cutlass/gemm/collective/sm120_mma_tma_blockwise_scaling.hpp").is_file()
    got = _example_87a(nc420)
    _check_2905(got)
    # every MSVC offset, confirmed by static_asserts compiled in a parse of their own
    msvc = got["msvc"]
    asserts = "using P = example87a::GemmKernel::Params;\n" + "".join(
        f'static_assert(__builtin_offsetof(P, {_designator(d.path)}) == {d.offset}, "{d.path}");\n'
        for d in msvc.descriptors
    )
    asserts += f'static_assert(sizeof(P) == {msvc.size} && alignof(P) == {msvc.align}, "Params");\n'
    flags = msvc_flags(
        clang_flags(nc420.tree.include_root, nc420.cuda.path, nc420.cuda.cccl, "sm_120a", nc420.cuda.version)
    )
    unit = ProbeUnit(f'#include "{EXAMPLE_87A}"\n{asserts}', flags, nc420.tree.include_root)
    assert unit.errors() == []


def _designator(path: str) -> str:
    """A member path of the report as an offsetof designator (base classes, ``<base T>``, left
    out: their names hold dots of their own, ``Copy_Atom<...>``)."""
    return re.sub(r"\.<base .*?>(?=\.|$)", "", path)


@pytest.mark.slow
@pytest.mark.skipif(
    not CHECKOUT_433,
    reason="needs a CUTLASS v4.3.3 checkout's include/ (the issue's; no wheel holds it): "
    "name it in CUTLASS_LAYOUT_TEST_CUTLASS_433",
)
def test_cutlass_2905_on_433():
    from cutlass_layout import target

    _check_2905(_example_87a(target(CHECKOUT_433)))


@pytest.mark.slow
def test_layout_params_text(nc420, capsys):
    """``layout --params``: both ABIs' sizes, offsets and findings in the text."""
    from cutlass_layout.cli import main

    argv = ["layout", "--cutlass", str(nc420.tree.include_root), "--header", str(EXAMPLE_87A), "--type",
            "example87a::GemmKernel", "--arch", "sm120", "--params"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Params on Windows x64 (MSVC), cl.exe's default __cplusplus: sizeof " in out
    assert f"      24  {DESC}  (not 64-byte aligned)" in out
    assert f"     128  {DESC}\n" in out
    assert "finding: Params is 8-byte aligned on MSVC" in out


@pytest.mark.nvcc
@pytest.mark.slow
def test_nvcc_host_pass_agrees_on_linux(nc420, nvcc, tmp_path):
    """nvcc's host pass (g++ on Linux) prints sizeof(Params), alignof and each descriptor's
    offset as an address difference: equal to the tool's Linux layout."""
    got = _example_87a(nc420)["linux"]
    lines = "".join(
        f'  std::printf("%lld\\n", (long long)((char const*)&p->{_designator(d.path)} - (char const*)p));\n'
        for d in got.descriptors
    )
    src = tmp_path / "params.cu"
    src.write_text(
        f'#include "{EXAMPLE_87A}"\n#include <cstdio>\nint main() {{\n'
        "  using P = example87a::GemmKernel::Params;\n"
        "  alignas(P) static unsigned char buf[sizeof(P)];\n"
        "  P const* p = reinterpret_cast<P const*>(buf);\n"
        '  std::printf("%zu %zu\\n", sizeof(P), alignof(P));\n'
        f"{lines}  return 0;\n}}\n"
    )
    exe = tmp_path / "params"
    built = subprocess.run(
        [nvcc, "-std=c++17", "-arch=sm_120a", "-w", f"-I{nc420.tree.include_root}", str(src), "-o", str(exe)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, "\n".join(line for line in built.stderr.splitlines() if "error" in line)[:3000]
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    assert out[0] == f"{got.size} {got.align}"
    assert [int(x) for x in out[1 : 1 + len(got.descriptors)]] == [d.offset for d in got.descriptors]
