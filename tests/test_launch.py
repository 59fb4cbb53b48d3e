"""Occupancy of 3.x kernels (issue 44, item 1): CTAs per SM by shared memory, declared registers,
threads and the per-SM block limit, the per-SM limits read from CCCL's
``cuda/__device/arch_traits.h``.

Expected values are derived by hand from the headers (each test says how) or printed by nvcc;
none is the tool's output pasted back.
"""

from __future__ import annotations

import subprocess

import pytest

from cutlass_layout import Config, layouts
from cutlass_layout.model import LayoutReport, Occupancy, PerSmLimits, RegisterSplit, Tactic

#: CCCL's arch_traits.h (flashinfer 0.7.x's data/cccl/libcudacxx/include/cuda/__device/), by hand:
#: sm_120: max_shared_memory_per_multiprocessor = 100 * 1024, max_blocks_per_multiprocessor = 24,
#: max_threads_per_multiprocessor = 1536; __common_arch_traits: reserved_shared_memory_per_block
#: = 1024 (cc >= 80), max_registers_per_multiprocessor = 64 * 1024.
SM120 = PerSmLimits("sm_120a", "arch_traits.h", 102400, 1024, 24, 1536, 65536)
#: sm_90: 228 * 1024 = 233472 B per SM, 32 blocks, 2048 threads (the rest as SM120's).
SM90 = PerSmLimits("sm_90a", "arch_traits.h", 233472, 1024, 32, 2048, 65536)
#: The cooperative kernel's split (gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp):
#: NumLoadWarpGroups 1 at LoadRegisterRequirement 40, NumMmaWarpGroups = 256 / 128 = 2 at
#: MmaRegisterRequirement 232 (HeavyRegisterPressure false).
COOPERATIVE = RegisterSplit(40, 1, 232, 2)


def test_the_sm120_finalize_example_is_one_cta_per_sm():
    """flashinfer 0.7.4's SM120 MoE FINALIZE 128x128x64B tactic (93184 B, 384 threads):
    shared memory 102400 // (93184 + 1024) = 1; registers 128 x 40 + 256 x 232 = 64512,
    65536 // 64512 = 1; threads 1536 // 384 = 4; blocks 24. So 1, by shared memory and registers."""
    o = Occupancy.of(384, 1, 93184, COOPERATIVE, SM120)
    assert COOPERATIVE.per_cta == 64512
    assert (o.by_shared_memory, o.by_registers, o.by_threads, o.by_blocks) == (1, 1, 4, 24)
    assert o.ctas_per_sm == 1 and o.limited_by == ("shared_memory", "registers")
    assert o.one_line() == "1 CTA/SM (limited by shared_memory, registers)"


def test_a_kernel_over_the_sm_holds_none():
    """102400 B (the four FINALIZE tactics over capacity): 102400 // (102400 + 1024) = 0."""
    o = Occupancy.of(384, 1, 102400, COOPERATIVE, SM120)
    assert o.ctas_per_sm == 0 and o.limited_by == ("shared_memory",)


def test_no_split_declared_and_no_limits():
    """Without a split the register factor is None (not a guess); without per-SM limits no
    count at all, and the note says why. SM90, 40 KiB, 128 threads: 233472 // (40960 + 1024)
    = 5, 2048 // 128 = 16, 32 blocks: 5 by shared memory."""
    o = Occupancy.of(128, 1, 40960, None, SM90)
    assert (o.by_shared_memory, o.by_registers, o.by_threads, o.by_blocks) == (5, None, 16, 32)
    # no count, a bound: ptxas's registers a thread (not read) can lower it (an H100 showed it:
    # KernelTmaWarpSpecialized 64x64x64, 6 by shared memory, 4 with ptxas's 64 registers)
    assert o.ctas_per_sm is None and o.at_most == 5 and o.limited_by == ("shared_memory",)
    assert o.one_line() == (
        "at most 5 CTAs/SM (limited by shared_memory; registers not declared: the count ptxas gives each thread can lower it)"
    )
    assert Occupancy.from_dict(o.to_dict()) == o
    bare = Occupancy.of(384, 1, 1000, COOPERATIVE, None, "per-SM limits not found in /x")
    assert bare.ctas_per_sm is None and bare.by_shared_memory is None
    assert bare.one_line() == "CTAs/SM not known: per-SM limits not found in /x"


def test_occupancy_round_trips_through_report_and_tactic_json():
    from cutlass_layout.model import Provenance

    o = Occupancy.of(384, 1, 93184, COOPERATIVE, SM120)
    assert Occupancy.from_dict(o.to_dict()) == o
    assert o.to_dict()["registers"]["per_cta"] == 64512
    rep = LayoutReport(config={"type": "K"}, provenance=Provenance("/r", "4.5.0", "h", "o"), occupancy=o)
    assert LayoutReport.from_dict(rep.to_dict()).occupancy == o
    t = Tactic(
        family="moe",
        name="T",
        a="nvfp4",
        b="nvfp4",
        out="bf16",
        fusion=None,
        swap_ab=None,
        tile=None,
        cluster=None,
        kernel="grouped",
        schedule=None,
        file="f",
        line=1,
        launcher="L",
        report=rep,
    )
    row = t.to_dict()
    assert row["occupancy"]["ctas_per_sm"] == 1
    assert Tactic.from_dict(row).occupancy == o


def _cccl(tgt):
    """flashinfer's own CCCL, beside its CUTLASS tree (data/cccl/libcudacxx/include): unpacked
    with the install (what ``audit`` reads), not with the CUTLASS tree alone."""
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    resolve_flashinfer("flashinfer-python==0.7.2.post1")
    return tgt.tree.include_root.parents[1] / "cccl" / "libcudacxx" / "include"


@pytest.mark.network
def test_per_sm_limits_read_from_flashinfers_cccl(fi072):
    from cutlass_layout.cpp.arch_traits import find_header, per_sm_limits

    header = find_header([_cccl(fi072)])
    assert header is not None
    for want in (SM120, SM90):
        got = per_sm_limits(header, want.arch_id)
        assert got is not None
        assert (
            got.smem_per_sm,
            got.reserved_smem_per_block,
            got.max_blocks_per_sm,
            got.max_threads_per_sm,
            got.registers_per_sm,
        ) == (
            want.smem_per_sm,
            want.reserved_smem_per_block,
            want.max_blocks_per_sm,
            want.max_threads_per_sm,
            want.registers_per_sm,
        )
    assert per_sm_limits(header, "sm_999") is None  # an arch the header does not know


@pytest.mark.network
@pytest.mark.nvcc
def test_per_sm_limits_equal_nvcc(fi072, nvcc, tmp_path):
    """The same translation units compiled by nvcc, one program for the four arches (each
    arch's aliases in a namespace of its own; the header's include guard keeps the one
    definition): every field printed by the program."""
    from cutlass_layout.cpp.arch_traits import FIELDS, find_header, per_sm_limits, probe_text

    header = find_header([_cccl(fi072)])
    assert header is not None
    archs = ("sm_90a", "sm_100a", "sm_120a", "sm_121a")
    src = tmp_path / "limits.cu"
    src.write_text(
        "".join(probe_text(arch).replace("namespace cl_sm {", f"namespace cl_sm_{arch} {{") for arch in archs)
        + "#include <cstdio>\nint main() {\n"
        + "".join(
            f'  std::printf("%s %s %d\\n", "{arch}", "{a}", (int)sizeof(cl_sm_{arch}::{a}) - 1);\n'
            for arch in archs
            for a in FIELDS
        )
        + "}\n"
    )
    exe = tmp_path / "limits"
    subprocess.run(
        [nvcc, "-std=c++17", "-I", str(_cccl(fi072)), str(src), "-o", str(exe)], check=True, capture_output=True
    )
    out: dict = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        arch, a, v = line.split()
        out.setdefault(arch, {})[a] = int(v)
    assert sorted(out) == sorted(archs)
    for arch in archs:
        got = per_sm_limits(header, arch)
        assert got is not None
        assert {a: getattr(got, a) for a in FIELDS} == out[arch]


@pytest.mark.network
def test_sm120_grouped_kernel_occupancy(fi072):
    """The SM120 grouped default (128x128x128 NVFP4, the cooperative ptr-array kernel of
    gemm/kernel/sm90_gemm_array_tma_warpspecialized_cooperative.hpp): MaxThreadsPerBlock 256 +
    128 = 384, MinBlocksPerMultiprocessor 1; RegsPerThread 128 * 128 / 256 = 64 < 128 (block
    scaled), so not HeavyRegisterPressure: 40 and 232. Its SharedStorage is over 50176 B, so
    102400 // (size + 1024) = 1 CTA, as registers allow."""
    _cccl(fi072)
    rep = layouts([Config()], fi072, use_cache=False)[0]
    o = rep.occupancy
    assert o is not None and rep.kernel is not None
    assert (o.threads_per_block, o.min_blocks_per_sm, o.registers) == (384, 1, COOPERATIVE)
    assert o.dynamic_smem_bytes == rep.kernel.size > 50176
    assert o.limits is not None and o.limits.smem_per_sm == 102400 and o.limits.arch_id == "sm_120a"
    assert (o.ctas_per_sm, o.limited_by, o.note) == (1, ("shared_memory", "registers"), None)
    from cutlass_layout.reports.layout import occupancy_lines

    lines = occupancy_lines(rep)
    assert lines[0] == "Occupancy: 1 CTA/SM (limited by shared_memory, registers)"
    assert any("64512 per CTA (128 x 40 x 1 load + 128 x 232 x 2 MMA warp groups) = 1" in x for x in lines)


@pytest.mark.network
def test_no_arch_traits_header_gives_no_count(nc420, monkeypatch, tmp_path):
    """Where no arch_traits.h is found the count is None and the note names where it was looked
    for. SM90 pingpong (sm90_gemm_tma_warpspecialized_pingpong.hpp): 128 x 2 + 128 = 384
    threads, NumMmaWarpGroups 2; RegsPerThread 128 * 128 / 128 = 128 < 208: 40 and 232."""
    from cutlass_layout.engine import numbers

    monkeypatch.setattr(numbers, "cccl_dirs", lambda unit: [tmp_path])
    cfg = Config(
        arch="sm90", kernel="dense", tile=(128, 128, 64), c="bf16", schedule="pingpong", epilogue_schedule="tma"
    )
    o = layouts([cfg], nc420, use_cache=False)[0].occupancy
    assert o is not None
    assert (o.threads_per_block, o.registers) == (384, COOPERATIVE)
    assert o.ctas_per_sm is None and o.limits is None
    assert o.note == f"per-SM limits not found in {tmp_path} (no cuda/__device/arch_traits.h)"


def test_the_pip_cccl_is_the_last_place_looked(monkeypatch, tmp_path):
    """A CUDA 13.0 toolkit's CCCL has no cuda/__device/arch_traits.h (the newcomer's trial:
    "CTAs/SM not known" with nvcc on PATH): the pip CUDA header wheels' CCCL, a dependency, is
    looked in after the unit's own include directories and a CCCL beside the tree."""
    from types import SimpleNamespace

    from cutlass_layout.engine import numbers

    unit = SimpleNamespace(include_root=tmp_path / "a" / "b" / "include", include_dirs=lambda: [tmp_path / "cuda"])
    monkeypatch.setattr(numbers, "pip_cuda_include", lambda: tmp_path / "pip" / "include")
    dirs = numbers.cccl_dirs(unit)
    assert dirs[0] == tmp_path / "cuda" and dirs[-1] == tmp_path / "pip" / "include" / "cccl"
    monkeypatch.setattr(numbers, "pip_cuda_include", lambda: None)
    assert tmp_path / "pip" / "include" / "cccl" not in numbers.cccl_dirs(unit)


def test_params_findings():
    """A descriptor at an offset that is no multiple of 64 is named; a Params over the limit too
    (limits: 4096 B before CUDA 12.1, 32764 B from it on)."""
    from cutlass_layout.model import DescriptorAt, ParamsLayout
    from cutlass_layout.model.launch import param_limit

    assert (param_limit((12, 0)), param_limit((12, 1)), param_limit((13, 0))) == (4096, 32764, 32764)
    good = ParamsLayout(
        2176, 128, (DescriptorAt("mainloop.tma_load_a.tma_desc_", 128, "TmaDescriptor"),), 32764, "13.0"
    )
    assert good.findings() == []
    bad = ParamsLayout(5000, 16, (DescriptorAt("mainloop.x.tma_desc_", 1168, "TmaDescriptor"),), 4096, "12.0")
    assert bad.findings() == [
        "TMA descriptor mainloop.x.tma_desc_ at offset 1168 of Params is not 64-byte aligned",
        "Params is 16-byte aligned: its TMA descriptors are not 64-byte aligned wherever it is placed",
        "sizeof(Params) 5000 B is over the kernel parameter limit of 4096 B (CUDA 12.0)",
    ]
    assert ParamsLayout.from_dict(bad.to_dict()) == bad


def _access(path: str) -> str:
    """A member path as C++ names it: base classes (``.<base cute::Copy_Atom<...>>``) left out,
    their members are the class's."""
    import re

    return re.sub(r"\.<base [^<>]*(?:<\.\.\.>)?>", "", path)


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow  # a whole probe built and run by nvcc, of a read that is off by default
def test_params_size_and_descriptor_offsets_equal_nvcc(fi072, nvcc, tmp_path):
    """A block with ``params`` (:func:`~cutlass_layout.subjects.aliases.subject_block`) gives
    sizeof/alignof(GemmKernel::Params) and every TMA descriptor's offset in it, for an SM120
    grouped and a dense kernel: equal to a probe built by nvcc and run (the descriptors'
    addresses taken from a Params placed in an aligned buffer)."""
    from cutlass_layout.cpp.clang import ProbeUnit
    from cutlass_layout.engine.numbers import params_layout
    from cutlass_layout.subjects import aliases, probe

    configs = [Config(), Config(kernel="dense")]
    text = probe.render(configs) + "".join(
        f"namespace cl_params_{i} {{\n{aliases.subject_block(f'cl_probe_{i}::Subject', '1', params=True)}}}\n"
        for i in range(len(configs))
    )
    unit = ProbeUnit(text, fi072.flags("sm120"), fi072.tree.include_root)
    assert unit.errors() == []
    main = ["#include <cstdio>", "#include <cstddef>", "int main() {"]
    want = []
    for i in range(len(configs)):
        p = params_layout(unit, unit.aliases(f"cl_params_{i}"))
        assert p is not None and p.descriptors and p.findings() == []
        assert p.limit_bytes == 32764 and p.cuda_version == "13.0"
        want.append(f"{i} size {p.size} {p.align}")
        t = f"cl_params_{i}::KernelParams"
        main.append(f'  std::printf("{i} size %d %d\\n", (int)sizeof({t}), (int)alignof({t}));')
        main.append(f"  {{ alignas({t}) static char buf[sizeof({t})]; auto* p = reinterpret_cast<{t}*>(buf);")
        for d in p.descriptors:
            want.append(f"{i} {_access(d.path)} {d.offset}")
            main.append(f'    std::printf("{i} {_access(d.path)} %d\\n", (int)((char*)&p->{_access(d.path)} - buf));')
        main.append("  }")
    src = tmp_path / "params.cu"
    src.write_text(text + "\n".join(main) + "\n  return 0;\n}\n")
    exe = tmp_path / "params"
    subprocess.run(
        [nvcc, "-std=c++17", "-arch=sm_120a", "-w", f"-I{fi072.tree.include_root}", str(src), "-o", str(exe)],
        check=True,
        capture_output=True,
    )
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert got == want


def test_the_per_sm_limits_line_names_the_header_inside_the_install():
    """A report names CCCL's header from the install's own folder, never the cache's path."""
    from cutlass_layout.reports.layout import shown_header

    cached = (
        "/home/u/.cache/cutlass-layout/trees/bfdc/flashinfer/data/cccl/libcudacxx/include/cuda/__device/arch_traits.h"
    )
    assert shown_header(cached) == "flashinfer/data/cccl/libcudacxx/include/cuda/__device/arch_traits.h"
    assert shown_header("/usr/local/cuda/include/cccl/cuda/__device/arch_traits.h") == "cuda/__device/arch_traits.h"
