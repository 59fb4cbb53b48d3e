"""audit against nvcc: real MoE tactics of an install compiled by nvcc's host pass.

The launcher sources are compiled as flashinfer's JIT compiles them (its defines and include
paths), through nvcc's own host pass (the ``gcc -E`` and ``cudafe++`` steps ``nvcc --dryrun``
lists), with one header added (:mod:`cutlass_layout.checks.nvcc_probe`, which ``audit --verify nvcc``
runs too): TensorRT-LLM's check macros (``TLLM_CHECK``, ``TLLM_THROW``), which a launcher uses
after declaring ``GemmKernel``, are redefined to instantiate ``cl_show<__LINE__, sizeof(kernel),
sizeof(mainloop), sizeof(epilogue), Stages>`` and ask it for a member it does not have. nvcc's
error message then spells the numbers it computed, one set per launcher line; the test
compares them with the audit's. No number the test expects comes from the tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_audit
from cutlass_layout.checks.nvcc_probe import nvcc_flags, unit_sizes
from cutlass_layout.engine import loop as engine
from cutlass_layout.sources.flashinfer_jit import jit_modules
from cutlass_layout.sources.flashinfer import resolve_flashinfer


def nvcc_host_pass_sizes(source: Path, nvcc_flags: list[str], work: Path) -> dict[int, tuple[int, ...]]:
    """``{launcher line: (kernel, mainloop, epilogue, stages)}`` as nvcc's host pass computes them."""
    return nvcc_host_pass_all([source], nvcc_flags, work)[source]


def nvcc_host_pass_all(
    sources: list[Path], nvcc_flags: list[str], work: Path
) -> dict[Path, dict[int, tuple[int, ...]]]:
    """``{source: {launcher line: (kernel, mainloop, epilogue, stages)}}`` as nvcc's host pass
    computes them, the sources in one unit (:func:`cutlass_layout.checks.nvcc_probe.one_unit`)."""
    got, out = unit_sizes(sources, nvcc_flags, work)
    assert "already been defined" not in out and "redefinition" not in out, out[:3000]
    return got


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.parametrize(
    "spec, files",
    [
        ("flashinfer-python==0.7.2.post1", ("sm120_M256_BS_group0", "sm120_M128_BS_group8")),
        pytest.param("flashinfer-python==0.6.8", ("sm120_M128_BS_group0",), marks=pytest.mark.slow),  # the 2nd version
    ],
)
def test_moe_tactics_against_nvcc(spec, files, nvcc, tmp_path):
    res = shared_audit(spec, family="moe")
    install = resolve_flashinfer(spec)
    tgt = engine.target(install.tree)
    moe = next(
        m
        for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
        if m.name.startswith("fused_moe")
    )
    compared = 0
    sources = [next(p for p in moe.generated if part in p.name) for part in files]
    every = nvcc_host_pass_all(sources, nvcc_flags(moe, install.tree), tmp_path)
    for source in sources:
        got = every[source]
        mine = {t.line: t for t in res.tactics if t.file.endswith(source.name)}
        assert got and set(got) == set(mine), (sorted(got), sorted(mine))
        for line, (kernel, mainloop, epilogue, stages) in got.items():
            r = mine[line].report
            assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == (
                kernel,
                mainloop,
                epilogue,
                stages,
            ), mine[line].id
            compared += 1
    assert compared >= 4


def moe_sizes_against_nvcc(res, moe, tree, arch: str, work: Path, capacity: int, sizes=None) -> int:
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
            assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == (
                kernel,
                mainloop,
                epilogue,
                stages,
            ), mine[line].id
            compared += 1
    return compared
