"""audit against nvcc: real MoE tactics of an install compiled by nvcc's host pass.

The launcher sources are compiled as flashinfer's JIT compiles them (its defines and include
paths), through nvcc's own host pass (the ``gcc -E`` and ``cudafe++`` steps ``nvcc --dryrun``
lists), with one header added: TensorRT-LLM's check macros (``TLLM_CHECK``, ``TLLM_THROW``),
which a launcher uses after declaring ``GemmKernel``, are redefined to instantiate
``cl_show<__LINE__, sizeof(kernel), sizeof(mainloop), sizeof(epilogue), Stages>`` and ask it
for a member it does not have. nvcc's error message then spells the numbers it computed, one
set per launcher line; the test compares them with the audit's. No number the test expects
comes from the tool.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cutlass_layout import engine
from cutlass_layout.commands.audit import audit
from cutlass_layout.flashinfer_jit import jit_modules
from cutlass_layout.frontends.clang import STUB_DIR
from cutlass_layout.sources import resolve_flashinfer

SHOW = r"""
#pragma once
#include "tensorrt_llm/common/assert.h"
#include <type_traits>
struct cl_none {};
using GemmKernel = cl_none;  // before a launcher declares its own
template <int Line, unsigned long Kernel, unsigned long Mainloop, unsigned long Epilogue, int Stages>
struct cl_show {};
template <class K, int Line, class = void> struct cl_sizes { static constexpr int value = 0; };
template <class K, int Line>
struct cl_sizes<K, Line, std::void_t<typename K::SharedStorage, typename K::CollectiveMainloop>> {
  static constexpr int value = cl_show<Line, sizeof(typename K::SharedStorage),
      sizeof(typename K::CollectiveMainloop::SharedStorage),
      sizeof(typename K::CollectiveEpilogue::SharedStorage),
      K::CollectiveMainloop::DispatchPolicy::Stages>::the_sizes_are_in_this_name;
};
#undef TLLM_CHECK
#undef TLLM_CHECK_WITH_INFO
#undef TLLM_THROW
#ifndef CL_SOURCE_INDEX  // which source of a unit of several (one_unit)
#define CL_SOURCE_INDEX 0
#endif
#define CL_SHOW do { static_assert(cl_sizes<GemmKernel, CL_SOURCE_INDEX * 1000000 + __LINE__>::value == 0, ""); } while (0)
#define TLLM_CHECK(...) CL_SHOW
#define TLLM_CHECK_WITH_INFO(...) CL_SHOW
#define TLLM_THROW(...) CL_SHOW
"""
_SHOWN = re.compile(r'cl_show<(\d+), (\d+)UL, (\d+)UL, (\d+)UL, (\d+)>')


def host_pass(source: Path, nvcc_flags: list[str], work: Path) -> str:
    """What nvcc's host pass of ``source`` prints (its messages): the ``gcc -E`` and
    ``cudafe++`` steps ``nvcc --dryrun`` lists for these flags, run in ``work``."""
    cmd = ["nvcc", "--dryrun", *nvcc_flags, "-c", "-o", str(work / "x.o"), str(source)]
    listed = subprocess.run(cmd, capture_output=True, text=True, cwd=work).stderr
    steps = [ln[3:] for ln in listed.splitlines() if ln.startswith("#$ ")]
    host = [next(s for s in steps if s.startswith("gcc") and " -E " in s and "__CUDA_ARCH__=" not in s),
            next(s for s in steps if s.startswith("cudafe++"))]
    out = ""
    for step in host:
        proc = subprocess.run(step, shell=True, capture_output=True, text=True, cwd=work,
                              env={"PATH": str(Path(shutil.which("nvcc")).parent) + ":/usr/bin:/bin"})
        out += proc.stdout + proc.stderr
    return out


def one_unit(sources: list[Path], work: Path) -> Path:
    """One translation unit of several generated sources of one module (the same flags), so
    that one nvcc run parses the headers they share once: each source's own text in turn,
    after ``#line 1 "<source>"`` (nvcc's messages name the source and its lines), with
    ``CL_SOURCE_INDEX`` its index (a launcher of source ``i`` at line ``n`` shows as
    ``cl_show<i * 1000000 + n, ...>``, ``SHOW``). An ``#include`` line an earlier source has
    is left blank (the launcher ``.inl`` files have no include guard)."""
    seen: set[str] = set()
    parts = []
    for i, source in enumerate(sources):
        lines = source.read_text().split("\n")
        for k, line in enumerate(lines):
            if line.lstrip().startswith("#include"):
                if line.strip() in seen:
                    lines[k] = ""
                seen.add(line.strip())
        parts.append(f'#undef CL_SOURCE_INDEX\n#define CL_SOURCE_INDEX {i}\n#line 1 "{source}"\n'
                     + "\n".join(lines) + "\n")
    unit = work / "cl_unit.cu"
    unit.write_text("".join(parts))
    return unit


def nvcc_host_pass_sizes(source: Path, nvcc_flags: list[str], work: Path) -> dict[int, tuple[int, ...]]:
    """``{launcher line: (kernel, mainloop, epilogue, stages)}`` as nvcc's host pass computes them."""
    return nvcc_host_pass_all([source], nvcc_flags, work)[source]


def nvcc_host_pass_all(sources: list[Path], nvcc_flags: list[str], work: Path) -> dict[Path, dict[int, tuple[int, ...]]]:
    """``{source: {launcher line: (kernel, mainloop, epilogue, stages)}}`` as nvcc's host pass
    computes them, the sources in one unit (:func:`one_unit`)."""
    show = work / "cl_show.h"
    show.write_text(SHOW)
    out = host_pass(one_unit(sources, work), [*nvcc_flags, "-include", str(show)], work)
    assert "already been defined" not in out and "redefinition" not in out, out[:3000]
    got: dict[Path, dict[int, tuple[int, ...]]] = {s: {} for s in sources}
    for m in _SHOWN.findall(out):
        index, line = divmod(int(m[0]), 1000000)
        got[sources[index]][line] = tuple(int(x) for x in m[1:])
    return got


def nvcc_flags(module, tree, arch: str = "sm_120a") -> list[str]:
    """nvcc's flags for a source of a flashinfer JIT module (its defines and include paths)."""
    flags = ["-std=c++17", f"-arch={arch}", "-w", "--expt-relaxed-constexpr", f"-I{tree.include_root}"]
    clang = module.clang_flags()
    i = 0
    while i < len(clang):
        f = clang[i]
        if f == "-isystem":
            flags += ["-isystem", clang[i + 1]]
            i += 2
            continue
        flags.append(f)
        i += 1
    return flags + [f"-I{STUB_DIR}"]  # cuBLAS stand-ins where the CUDA toolkit has none


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.parametrize("spec, files", [
    ("flashinfer-python==0.7.2.post1", ("sm120_M256_BS_group0", "sm120_M128_BS_group8")),
    ("flashinfer-python==0.6.8", ("sm120_M128_BS_group0",)),
])
def test_moe_tactics_against_nvcc(spec, files, nvcc, tmp_path):
    res = audit(spec, family="moe")
    install = resolve_flashinfer(spec)
    tgt = engine.target(install.tree)
    moe = next(m for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
               if m.name.startswith("fused_moe"))
    compared = 0
    sources = [next(p for p in moe.generated if part in p.name) for part in files]
    every = nvcc_host_pass_all(sources, nvcc_flags(moe, install.tree), tmp_path)
    for source in sources:
        got = every[source]
        mine = {t.line: t for t in res.tactics if t.file.endswith(source.name)}
        assert got and set(got) == set(mine), (sorted(got), sorted(mine))
        for line, (kernel, mainloop, epilogue, stages) in got.items():
            r = mine[line].report
            assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == \
                (kernel, mainloop, epilogue, stages), mine[line].id
            compared += 1
    assert compared >= 4


def moe_sizes_against_nvcc(res, moe, tree, arch: str, work: Path, capacity: int,
                           sizes=None) -> int:
    """Compare every tactic of ``res`` from the generated sources of ``moe`` (a JIT module)
    with what nvcc computes of those sources for ``arch``, in one unit (``sizes(sources,
    flags, work)``: ``{source: {line: (kernel, mainloop, epilogue, stages)}}``, by default
    :func:`nvcc_host_pass_all`): each launcher line is one tactic, with nvcc's kernel,
    mainloop and epilogue bytes and stages, against ``capacity``. Returns how many were
    compared."""
    compared = 0
    every = (sizes or nvcc_host_pass_all)(list(moe.generated), nvcc_flags(moe, tree, arch), work)
    for source in moe.generated:
        got = every[source]
        mine = {t.line: t for t in res.tactics if t.file.endswith(source.name)}
        assert got and set(got) == set(mine), (sorted(got), sorted(mine))
        for line, (kernel, mainloop, epilogue, stages) in got.items():
            r = mine[line].report
            assert r.capacity.value == capacity
            assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == \
                (kernel, mainloop, epilogue, stages), mine[line].id
            compared += 1
    return compared
