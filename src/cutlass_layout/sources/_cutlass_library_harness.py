"""Enumerate CUTLASS's own kernel library (``cutlass_library``) for an arch, with its own code.

Run by path in a sandboxed child process (``python _cutlass_library_harness.py REQUEST``: a
JSON request in a file, a JSON answer on stdout), as
:mod:`cutlass_layout.sources._flashinfer_harness` is (:func:`cutlass_layout.sources.flashinfer_jit.run_sandboxed`
starts both); it imports nothing from cutlass_layout but that harness's :func:`set_limits`.

What runs is the library's code, as CUTLASS's CMake build runs it to pick the profiler's
kernels (``python/cutlass_library/generator.py``'s ``__main__``): ``define_parser()`` with
``--architectures A --kernels K --ignore-kernels I --exclude-kernels E
--instantiation-level L --generator-target none --cuda-version V``, then ``Manifest(args)``
and the request's ``Generate...`` functions (``GenerateSM120(manifest, cuda_version)``), whose
``manifest.append`` keeps what ``Manifest.filter`` keeps (its name filters, its
``CalculateSmemUsage`` pruning against ``SharedMemPerCC``). Each kept operation
(``manifest.operations_by_name``, in the order appended) is answered with its procedural name,
the C++ its own emitter writes for it (``gemm_operation.EmitGemmConfigurationLibrary``'s
``instance_emitter[gemm_kind]``: the 3.x one, ``EmitGemmUniversal3xInstance``, writes the
``CollectiveBuilder`` chain and a ``GemmUniversal`` type named ``<name>_base``) with that
emitter's includes, and what the library says of it: tile, cluster, stages (0: auto),
schedules, element types, and its own estimate (``library.CalculateSmemUsage``, KiB) with the
capacity it prunes against (``SharedMemPerCC``, KiB; None where the table has no entry).

The request: ``{"root": folder holding the cutlass_library package, "architectures": "120a",
"generators": ["GenerateSM120"], "cuda_version": "13.0.0", "kernels": "", "ignore_kernels":
"", "exclude_kernels": "", "instantiation_level": "", "limits": {"cpu_s": N, "memory_mb": M}}``.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _limits():
    """:func:`cutlass_layout.sources._flashinfer_harness.set_limits` and its memory exit status, imported
    by path (this folder then leaves ``sys.path``: its modules must not shadow the library's)."""
    sys.path.insert(0, HERE)
    try:
        import _flashinfer_harness as fh
    finally:
        sys.path.remove(HERE)
    return fh.set_limits, fh.EXIT_MEMORY


def _name(value) -> str:
    """An enum member's name (``KernelScheduleType.Mxf8f6f4TmaWarpSpecializedCooperativeSm120`` ->
    its last part), else the value as text."""
    return getattr(value, "name", None) or str(value).rsplit(".", 1)[-1]


def describe(op, lib, emitters) -> dict:
    """What the library says of one operation (see the module docstring)."""
    td = op.tile_description
    gemm_kind = getattr(op, "gemm_kind", None)  # GEMMs only: rank-k, TRMM, convolutions have none
    emitter_cls = emitters.get(gemm_kind) if _name(op.operation_kind) == "Gemm" else None
    emitter = emitter_cls() if emitter_cls is not None else None
    estimate_error: str | None
    try:
        estimate = lib.CalculateSmemUsage(op)
    except Exception as exc:  # noqa: BLE001 - the library's own failure, said per kernel
        estimate = None
        estimate_error = f"{type(exc).__name__}: {exc}"
    else:
        estimate_error = None
    ccs = sorted(
        cc for cc in lib.SharedMemPerCC if td.minimum_compute_capability <= cc <= td.maximum_compute_capability
    )
    names = lib.DataTypeNames

    def element(t):
        return None if t is None else names.get(t.element, _name(t.element))

    return {
        "name": op.procedural_name(),
        "operation_kind": _name(op.operation_kind),
        "gemm_kind": None if gemm_kind is None else _name(gemm_kind),
        "arch": getattr(op, "arch", None),
        "emitter": None if emitter_cls is None else emitter_cls.__name__,
        "instance": emitter.emit(op) if emitter is not None else None,
        "includes": list(getattr(emitter, "includes", []) or []),
        "tile": list(td.threadblock_shape),
        "cluster": list(td.cluster_shape),
        "stages": td.stages,
        "kernel_schedule": _name(getattr(op, "kernel_schedule", None)),
        "epilogue_schedule": _name(getattr(op, "epilogue_schedule", None)),
        "tile_scheduler": _name(getattr(op, "tile_scheduler", None)),
        "elements": {k: element(getattr(op, k, None)) for k in ("A", "B", "C", "D")},
        "accumulator": names.get(getattr(getattr(td, "math_instruction", None), "element_accumulator", None)),
        "estimate_kib": estimate,
        "estimate_error": estimate_error,
        "capacity_kib": {str(cc): lib.SharedMemPerCC[cc] for cc in ccs},
    }


def run(request: dict) -> dict:
    """Enumerate (see the module docstring): ``{"kernels": [describe(op)], "filters": the
    manifest's name filters as it parsed them}``."""
    sys.path.insert(0, request["root"])
    sys.dont_write_bytecode = True  # nothing is written into the library's folder (a checkout's, the cache's)
    sys.argv = ["generator.py"]  # the library parses sys.argv at import (--disable-cutlass-package-imports)
    import logging

    logging.disable(logging.CRITICAL)
    from cutlass_library import gemm_operation, generator, library
    from cutlass_library import manifest as mf

    argv = [
        "--architectures",
        request["architectures"],
        "--kernels",
        request.get("kernels", ""),
        "--ignore-kernels",
        request.get("ignore_kernels", ""),
        "--exclude-kernels",
        request.get("exclude_kernels", ""),
        "--instantiation-level",
        request.get("instantiation_level", ""),
        "--generator-target",
        "none",
        "--cuda-version",
        request.get("cuda_version", "13.0.0"),
    ]
    args = generator.define_parser().parse_args(argv)
    manifest = mf.Manifest(args)
    for name in request["generators"]:
        getattr(generator, name)(manifest, args.cuda_version)
    # the emitters the library's own .cu writer uses (its constructor opens no file)
    emitters = gemm_operation.EmitGemmConfigurationLibrary(os.getcwd(), "cl_probe").instance_emitter
    kernels = [describe(op, library, emitters) for op in manifest.operations_by_name.values()]
    return {
        "kernels": kernels,
        "filters": {
            "kernels": manifest.kernel_names,
            "ignore": manifest.ignore_kernel_names,
            "exclude": manifest.exclude_kernel_names,
            "instantiation_level": getattr(manifest, "instantiation_level", None),
        },
    }


def main(argv: list[str]) -> int:
    """Read the request file ``argv[1]``, apply its limits, write :func:`run`'s answer as JSON
    on stdout (what the library prints goes to stderr); out of memory: the memory exit status."""
    set_limits, exit_memory = _limits()
    with open(argv[1]) as f:
        request = json.load(f)
    set_limits(request.get("limits", {}))
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        real_stdout.write(json.dumps(run(request)))
        real_stdout.flush()
    except MemoryError:
        os._exit(exit_memory)
    return 0


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
        sys.path.pop(0)  # this folder's modules (trees.py, cuda.py, ...) must not shadow the library's
    sys.exit(main(sys.argv))
