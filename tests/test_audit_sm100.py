"""audit on SM100 and SM103: flashinfer's dense FP4 GEMMs for Blackwell, checked by nvcc.

``gen_gemm_sm100_module_cutlass_fp4`` (and its ``_sm103_`` twin) writes one source per tile
with one ``INSTANTIATE_FP4_GEMM_KERNEL_LAUNCHER(T, M, N, K, CM, CN, CK, XSM)`` per cluster
shape; each defines ``struct DeviceGemmFp4GemmSm100_<T>_<M>_<N>_<K>_<CM>_<CN>_<CK><XSM>``
whose ``GemmKernel`` is the kernel (``fp4_gemm_template_sm100.h``). The test copies one
generated source, asks nvcc's host pass (the ``gcc -E`` and ``cudafe++`` steps ``nvcc
--dryrun`` lists, with the module's flags) for ``sizeof`` of each struct's
``GemmKernel::SharedStorage``, its mainloop's and epilogue's, and the mainloop's ``Stages``
through an incomplete ``cl_show<...>`` (nvcc's error spells the numbers), and compares them
with the audit's. No number the test expects comes from the tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutlass_layout.checks.nvcc_probe import SHOWN, host_pass, nvcc_flags
from cutlass_layout.commands.audit import audit
from cutlass_layout.engine import loop as engine
from cutlass_layout.sources.flashinfer_jit import jit_modules
from cutlass_layout.sources.flashinfer import resolve_flashinfer

SPEC = "flashinfer-python==0.7.2.post1"
CAPACITY = 232448  # cutlass::arch::sm100_smem_capacity_bytes (cutlass/arch/arch.h), sm100 and sm103


def nvcc_sizes(source: Path, structs: list[str], flags: list[str], work: Path) -> dict[int, tuple[int, ...]]:
    """``{i: (kernel, mainloop, epilogue, stages)}`` of ``structs[i]::GemmKernel`` as nvcc's
    host pass computes them, the source's own text with the probes appended."""
    probe = work / source.name
    lines = [
        source.read_text(),
        "template <int I, unsigned long K, unsigned long M, unsigned long E, int S>",
        "struct cl_show;",
        "namespace flashinfer { namespace gemm {",
    ]
    for i, s in enumerate(structs):
        k = f"{s}::GemmKernel"
        lines.append(
            f"constexpr int cl_{i} = cl_show<{i}, sizeof({k}::SharedStorage), "
            f"sizeof({k}::CollectiveMainloop::SharedStorage), sizeof({k}::CollectiveEpilogue::SharedStorage), "
            f"{k}::CollectiveMainloop::DispatchPolicy::Stages>::value;"
        )
    lines.append("} }")
    probe.write_text("\n".join(lines) + "\n")
    out = host_pass(probe, flags, work)
    return {int(m[0]): tuple(int(x) for x in m[1:]) for m in SHOWN.findall(out)}


@pytest.mark.network
@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize(
    "arch, family, part, nvcc_arch",
    [
        ("sm100", "fp4_gemm_cutlass", "fp4_gemm_cutlass___nv_bfloat16_128_256_128.cu", "sm_100a"),
        ("sm103", "fp4_gemm_cutlass_sm103", "_128_256_128.cu", "sm_103a"),
    ],
)
def test_dense_fp4_tactics_against_nvcc(arch, family, part, nvcc_arch, nvcc, tmp_path, only_sources):
    """One generated source of the family, audited (the builders run, then only it is kept,
    so that the test parses one source) and compiled by nvcc's host pass."""
    only_sources(lambda name: name.endswith(part))
    res = audit(SPEC, arch, family=family)
    assert res.tactics and all(t.report.capacity.value == CAPACITY for t in res.tactics)
    install = resolve_flashinfer(SPEC)
    tgt = engine.target(install.tree)
    mod = next(m for m in jit_modules(install, arch, cuda_version=tgt.cuda.version).modules if m.name == family)
    source = next(p for p in mod.generated if p.name.endswith(part))
    mine = [t for t in res.tactics if t.file.endswith(source.name)]
    assert len(mine) >= 3
    structs = [t.name.removesuffix("::GemmKernel") for t in mine]
    flags = nvcc_flags(mod, install.tree, nvcc_arch)
    tvm = res.provenance["tvm_ffi"]["include"]
    if tvm:
        flags += ["-isystem", tvm]
    got = nvcc_sizes(source, structs, flags, tmp_path)
    assert set(got) == set(range(len(mine))), (sorted(got), structs)
    for i, t in enumerate(mine):
        r = t.report
        assert (r.kernel.size, r.mainloop.size, r.epilogue.size, r.stages) == got[i], t.id
