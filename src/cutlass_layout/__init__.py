"""cutlass-layout: exact shared-memory layouts of CUTLASS GEMM kernels.

From Python, with the command line's values and defaults::

    import cutlass_layout as cl

    src = "flashinfer-python==0.7.2.post1"          # any CUTLASS source, as --cutlass takes it
    rep = cl.layout("128x256x128", src, preset="trtllm-moe")           # or cl.Config(...)
    rep.stages, rep.kernel.size, rep.fits, rep.headroom_bytes           # (3, 98304, True, 3072)
    many = cl.layouts(["128x128x128", "256x128x128"], src)              # one parse
    res = cl.sweep(tile="128x{32,64,128,256}x{128,256}", preset=["flashinfer", "trtllm-moe"],
                   source=src)                                           # res.records
    d = cl.diff("flashinfer-python==0.6.8", src, tile="128x{32,64}x256")  # d.numeric, d.structural
    s = cl.scan(src, grep="TensorStorage")                              # s.structs, s.constants
    a = cl.audit(src, family="moe")                     # the kernels flashinfer builds: a.tactics
    every = cl.audit(src, arch="all", family="moe")     # every arch it builds: every.results
    part = cl.audit(src, family="moe", shard=(1, 2))    # shard 1 of 2 (another machine runs 2/2)
    whole = cl.merge_audits(["1.json", "2.json"])        # the shards' --json joined: the whole audit
    t = cl.tactic("CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize", src)  # one of them: t.report
    lib = cl.audit("nvidia-cutlass==4.2.0.0", kernels="*spgemm*")  # CUTLASS's own kernel library
    tgt = cl.target(src)                                # resolve once, pass as the source
    cl.show_progress()                                  # slow steps said on stderr, as the CLI does

Every function that reads CUTLASS calls it ``source`` (:func:`diff` takes ``old`` and
``new``); sizes are bytes. Each returns a dataclass of :mod:`cutlass_layout.model` whose
``to_dict()`` is the command's ``--json``; :mod:`cutlass_layout.reports` prints them as the
command does. A bad value raises :class:`BadInput` with one line; a layout reported with
``error`` set did not compile (``layout(..., raise_on_error=True)`` raises
:class:`DoesNotCompile` instead).

These names come from :mod:`cutlass_layout.api` (which also has the steps a command runs
around them: :func:`~cutlass_layout.api.grid`, :func:`~cutlass_layout.api.verify_nvcc`,
...); docs/python-api.md is each function's full reference. No name here is also a module's: the commands' modules are
:mod:`cutlass_layout.commands.sweep`, ``.diff``, ``.scan`` and ``.audit``
(``from cutlass_layout.commands.sweep import MAX_STAGES``).

Folders are layers, each using only those before it (``tests/test_imports.py`` checks every
import): ``errors`` -> :mod:`~cutlass_layout.core` (cache, files, pool, progress, Dask) ->
:mod:`~cutlass_layout.model` -> :mod:`~cutlass_layout.cpp` (the one reader of C++) ->
:mod:`~cutlass_layout.subjects` (what is laid out) -> :mod:`~cutlass_layout.sources` (where a
kernel comes from) -> :mod:`~cutlass_layout.engine` (the one engine) ->
:mod:`~cutlass_layout.installs` (what an install builds) -> :mod:`~cutlass_layout.checks` (nvcc,
a GPU) -> :mod:`~cutlass_layout.commands` -> :mod:`~cutlass_layout.reports` ->
:mod:`~cutlass_layout.api` (this facade) -> :mod:`~cutlass_layout.cli`.
"""

from .api import (
    LIMITS,
    VERSION,
    AuditResult,
    AuditSet,
    BadInput,
    Config,
    CutlassLayoutError,
    CutlassTree,
    DiffResult,
    DoesNotCompile,
    LayoutReport,
    OverLimit,
    ScanResult,
    SweepRecord,
    SweepResult,
    Tactic,
    Target,
    UserType,
    audit,
    diff,
    layout,
    layouts,
    merge_audits,
    parse_tile,
    resolve_cutlass,
    scan,
    show_progress,
    sweep,
    tactic,
    target,
)

__version__ = VERSION  # the one version: pyproject.toml's

__all__ = [
    "layout",
    "layouts",
    "sweep",
    "diff",
    "scan",
    "audit",
    "merge_audits",
    "tactic",
    "target",
    "resolve_cutlass",
    "parse_tile",
    "show_progress",
    "LIMITS",
    "AuditResult",
    "AuditSet",
    "BadInput",
    "Config",
    "CutlassLayoutError",
    "CutlassTree",
    "DiffResult",
    "DoesNotCompile",
    "LayoutReport",
    "OverLimit",
    "ScanResult",
    "SweepRecord",
    "SweepResult",
    "Tactic",
    "Target",
    "UserType",
]
