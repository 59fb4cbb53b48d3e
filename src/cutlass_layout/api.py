"""The library's front door: one function per question, each a thin call into the module that
answers it. ``import cutlass_layout as cl`` gives these names (see the package docstring);
the command line calls these and nothing else of the library. docs/python-api.md is each
function's full reference.

Every function that reads CUTLASS takes it as ``source``: anything :func:`resolve_cutlass`
accepts (an include dir, a checkout, a ``.whl``, an installed distribution,
``"NAME==VERSION"``, with ``#SUBPATH``), a resolved :class:`CutlassTree`, or a
:class:`Target` from :func:`target` to reuse; ``None`` is the one installed here, else
nvidia-cutlass 4.2.0.0 fetched into the cache. (``cutlass=``, ``src=`` and ``path=``, the
former names, are taken too, with a :class:`DeprecationWarning`.)

Sizes, offsets and capacities are bytes throughout; tiles are ``(M, N, K)`` in elements of
A (``"128x128x64B"``: K in bytes of A's element). A bad value raises :class:`BadInput` with
one line naming the value, never a command-line flag.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from .commands import audit as _audit
from .core.version import VERSION
from .commands.audit.presets import approximations as _approximations
from .commands import diff as _diff
from .commands import scan as _scan
from .commands import shard as _shard
from .commands import sweep as _sweep
from .errors import BadInput, CutlassLayoutError, DoesNotCompile
from .model import (
    AuditResult,
    AuditSet,
    Blocklist,
    BlocklistFormat,
    DiffResult,
    LayoutReport,
    ScanResult,
    SweepRecord,
    SweepResult,
    Tactic,
    schema_verdict,
)
from .commands.exclude_list import exclude_list, write_exclude_list  # audit --exclude-list (CUTLASS's library)
from .engine import loop as engine
from .core import dask as executors, progress as runner
from .engine.abis import with_params
from .engine.loop import Target
from .core.files import LIMITS, OverLimit
from .sources.trees import CutlassTree
from .sources.library import is_kernel_library as _is_kernel_library
from .sources.trees import resolve_cutlass as _resolve_cutlass
from .subjects import probe
from .subjects.config import Config, parse_stages, parse_tile
from .subjects.grid import expand_braces
from .subjects.user_type import UserType


def _renamed(**old_names: str):
    """Keep an argument's former keyword name working: ``@_renamed(cutlass="source")``
    passes ``cutlass=X`` on as ``source=X`` with a :class:`DeprecationWarning`; both at once
    are bad input."""

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for old, new in old_names.items():
                if old in kwargs:
                    value = kwargs.pop(old)
                    if new in kwargs:
                        raise BadInput(f"{f.__name__}(): give {new}= alone ({old}= is its old name)")
                    warnings.warn(
                        f"{f.__name__}({old}=...) is now {f.__name__}({new}=...)", DeprecationWarning, stacklevel=2
                    )
                    kwargs[new] = value
            return f(*args, **kwargs)

        return wrapper

    return decorate


# ------------------------------------------------------------------------------------------
# sources


def resolve_cutlass(source=None) -> CutlassTree:
    """The CUTLASS tree ``source`` names (see the module docstring for what it may be); the
    tree's ``include_root`` holds ``cutlass/version.h`` or ``cutlass/cutlass.h``, its
    ``tree_hash`` is of its files' content (what every cached result is keyed by).

    Raises:
        BadInput: a missing path, no CUTLASS found, several found and none chosen
            (``#SUBPATH`` chooses), a damaged wheel, a version the index does not have.
    """
    return _resolve_cutlass(source)


@_renamed(cutlass="source")
def target(source=None, cuda_path=None) -> Target:
    """A resolved CUTLASS tree plus the CUDA headers libclang parses it with: pass it as
    ``source`` to the other functions to resolve once.

    Args:
        source: a CUTLASS source (see the module docstring); a :class:`Target` as is.
        cuda_path: a CUDA root, ``"pip"`` (the nvidia-cuda-* header wheels), or ``None`` to
            search (``CUDA_HOME``, ``CUDA_PATH``, nvcc on ``PATH``, ``/usr/local/cuda``,
            else the wheels).

    Raises:
        BadInput: an unusable source or CUDA path.
    """
    return engine.target(source, cuda_path)


# ------------------------------------------------------------------------------------------
# the questions


@_renamed(cutlass="source")
def layout(
    config=None,
    source=None,
    *,
    cuda_path=None,
    raise_on_error: bool = False,
    check_kernel_body: bool = False,
    budget: bool = True,
    use_cache: bool = True,
    params: bool = False,
    **config_values,
) -> LayoutReport:
    """The exact SharedStorage layout of one kernel config (``cutlass-layout layout``),
    compared with the arch's capacity (docs/python-api.md#layout: which CUTLASS types).

    Args:
        config: a :class:`Config`, a :class:`UserType`, a tile as typed (``"128x256x128"``,
            ``"128x128x64B"``) or a dict of config values; default SM120 grouped NVFP4
            128x128x128, flashinfer flavour, stages auto.
        source: the CUTLASS source (module docstring).
        cuda_path: see :func:`target`.
        raise_on_error: raise :class:`DoesNotCompile` instead of returning a report with
            ``error`` set.
        check_kernel_body: also instantiate the kernel's device entry point, so asserts in
            its ``operator()`` fire (slow); the report's ``checked`` is then ``"kernel"``.
        budget: also read the builder's stage budget of an auto-stage config
            (``builder_budget``), from the same parse.
        use_cache: read a report cached earlier; a fresh one is stored either way.
        params: also lay out a 3.x kernel's ``Params`` on Linux x86-64 (``params``) and MSVC
            x64 (``params_msvc``), two parses more (:mod:`cutlass_layout.engine.abis`).
        config_values: the ``layout`` command's config values as typed (``arch``, ``tile``,
            ``stages="auto"``, ``preset``, ...).

    Returns:
        A :class:`LayoutReport` (bytes): ``stages``, the ``kernel``/``mainloop``/``epilogue``
        structs, ``capacity_bytes``, ``fits``, ``headroom_bytes``, a preset's
        ``approximation``; a config that does not compile has ``error`` set and no numbers.

    Raises:
        BadInput: an unusable source, CUDA path or config value.
        DoesNotCompile: only with ``raise_on_error``.

    Example: ``layout("128x256x128", "flashinfer-python==0.7.2.post1", preset="trtllm-moe")``
    has ``stages == 3`` and ``kernel.size == 98304``.
    """
    subject = engine.subject(config, **config_values)
    tgt = engine.target(source, cuda_path)
    rep = engine.layout(
        subject,
        tgt,
        raise_on_error=raise_on_error,
        check_kernel_body=check_kernel_body,
        budget=budget,
        use_cache=use_cache,
    )
    if params:
        rep = with_params(tgt, subject, rep)
    return replace(rep, approximation=_approximations([subject], tgt.tree, cuda_path=tgt.cuda.path)[0])


@_renamed(cutlass="source")
def layouts(
    configs, source=None, *, cuda_path=None, check_kernel_body: bool = False, use_cache: bool = True
) -> list[LayoutReport]:
    """:func:`layout` for several configs with as few libclang parses as possible (one
    translation unit per arch; an auto-stage preset config's builder budget comes from the
    same parse, a user type gets none).

    Args:
        configs: a list of what :func:`layout` takes as ``config``, archs mixed freely.
        source, cuda_path, check_kernel_body, use_cache: as for :func:`layout`.

    Returns:
        One :class:`LayoutReport` per config, in order (bytes), each with its
        ``approximation`` as :func:`layout` gives it.

    Raises:
        BadInput: not a list, a bad config, an unusable source or CUDA path.
    """
    if isinstance(configs, (str, Config, UserType, dict)):
        raise BadInput("layouts() takes a list of configs; layout() takes one")
    subjects = [engine.subject(c) for c in configs]
    tgt = engine.target(source, cuda_path)
    reps = engine.layouts(subjects, tgt, check_kernel_body=check_kernel_body, use_cache=use_cache)
    return [
        replace(rep, approximation=appr)
        for rep, appr in zip(reps, _approximations(subjects, tgt.tree, cuda_path=tgt.cuda.path))
    ]


@_renamed(cutlass="source")
def sweep(
    grid=None,
    source=None,
    *,
    cuda_path=None,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
    executor: str | None = None,
    **grid_values,
) -> SweepResult:
    """Lay out every config of a grid and find, for each, the largest ``StageCount<N>`` whose
    kernel SharedStorage fits the capacity (``cutlass-layout sweep``; docs/python-api.md#sweep).

    Args:
        grid: a list of configs (what :func:`layout` takes), or a dict of grid values (a
            value or a list per key, braces expand: ``{"tile": "128x{64,128}x128"}``).
        source: the CUTLASS source (module docstring).
        cuda_path: see :func:`target`.
        jobs: worker processes (default: the CPUs); 1 parses in this process.
        use_cache: read layouts cached earlier (by any command); fresh ones are stored
            either way, as soon as each parse gives them.
        progress: a progress bar (or a line every few seconds) on stderr.
        executor: where the parses run, as for :func:`audit`.
        grid_values: grid values as the ``sweep`` command's repeatable flags take them,
            instead of (or added to a dict) ``grid``: ``tile="128x{32,64}x{128,256}"``.

    Returns:
        A :class:`SweepResult`: one :class:`SweepRecord` per config (``kernel_bytes``,
        ``stages``, ``max_stages_that_fit``, ``verdict``: ``fits``, ``exact_fit``,
        ``over_capacity`` or ``does_not_compile``, with its error; the JSON writes an exact fit
        ``fits`` with ``exact_fit`` true).

    Raises:
        BadInput: an empty or bad grid, an unusable source or CUDA path, a bad ``jobs``;
            a bad or unusable ``executor`` (as for :func:`audit`).
        OverLimit: a grid over :data:`LIMITS` (1024 configs unless lifted).

    Example: ``sweep(tile="128x{32,64}x256", source="flashinfer-python==0.7.2.post1").records``
    """
    with runner.showing(progress), executors.session(executor) as ex:
        return _sweep.sweep(
            grid,
            source,
            cuda_path=cuda_path,
            jobs=jobs,
            use_cache=use_cache,
            progress=progress,
            executor=ex,
            **grid_values,
        )


def diff(
    old,
    new,
    grid=None,
    *,
    structural: bool | None = None,
    numeric: bool | None = None,
    audit: bool = False,
    arch: str | list[str] | None = None,
    family: str | None = None,
    kernels: str | None = None,
    ignore_kernels: str | None = None,
    exclude_kernels: str | None = None,
    instantiation_level: str | None = None,
    cuda_path=None,
    use_cache: bool = True,
    jobs: int | None = None,
    grid_source: str | None = None,
    **grid_values,
) -> DiffResult:
    """Diff the shared-memory layouts of two CUTLASS sources, OLD -> NEW (``cutlass-layout diff``):
    the structural view (tree-sitter: changed ``*Storage`` structs and TMA-bytes, stage and
    capacity constants) and the numeric one (the engine: each config's layout on both sides).
    docs/python-api.md#diff has the rules (the default grid, ``audit``'s pairing).

    Args:
        old, new: the two sources (each a source or a :class:`CutlassTree`, not a
            :class:`Target`).
        grid: the numeric side's configs (a list, or a dict of grid values); default: SM120
            NVFP4 grouped and dense (those both trees have), tiles
            ``{128,256}x{32,64,128,256}x{128,256}``.
        structural, numeric: which views (default both; neither with ``audit``).
        audit: compare the kernels two flashinfer installs (or two CUTLASS kernel libraries)
            build instead; ``arch`` (one, default sm120) and ``family`` as for :func:`audit`.
        kernels, ignore_kernels, exclude_kernels, instantiation_level: with ``audit`` of two
            kernel libraries, the library's own filters, the same on both sides.
        arch: one arch or several: the structural view keeps their headers and structs, and
            the default grid is of them.
        cuda_path, use_cache, jobs: as for :func:`sweep` (jobs: one worker per tree).
        grid_source: how the grid was given, for the report (default ``python``).
        grid_values: grid values instead of ``grid`` (``tile="128x{32,64}x256"``, ...).

    Returns:
        A :class:`DiffResult` (``structural``, ``numeric`` rows, ``audit``, ``has_differences``;
        bytes). Identical trees are reported identical without computing anything.

    Raises:
        BadInput: a side that is missing or has no CUTLASS (``old (SRC): ...``), a bad grid,
            nothing to diff, unusable CUDA headers; with ``audit``, a kernel library on one
            side and a flashinfer install on the other, the library's filters for flashinfer
            installs or without ``audit``, a selection neither library keeps a kernel of.

    Example: ``diff("flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1").numeric``
    """
    chosen = {
        "kernels": kernels,
        "ignore_kernels": ignore_kernels,
        "exclude_kernels": exclude_kernels,
        "instantiation_level": instantiation_level,
    }
    selection = None
    if any(chosen.values()):
        if not audit:
            given = ", ".join(k for k, v in chosen.items() if v)
            raise BadInput(
                f"{given}: the kernel library's own filters, for an audit diff (audit=True) of two "
                "CUTLASS kernel libraries"
            )
        from .installs.kernel_library import Selection

        selection = Selection(**{k: v or "" for k, v in chosen.items()})
    return _diff.diff(
        old,
        new,
        grid,
        structural=structural,
        numeric=numeric,
        audit=audit,
        arch=arch,
        family=family,
        selection=selection,
        cuda_path=cuda_path,
        use_cache=use_cache,
        jobs=jobs,
        grid_source=grid_source,
        **grid_values,
    )


@_renamed(path="source")
def scan(source, grep: str | None = None, *, line_offset: int = 0, as_cutlass: bool = False) -> ScanResult:
    """Every ``*Storage`` struct and TMA-bytes / stages / capacity constant a header, a folder
    or a CUTLASS source declares, read with tree-sitter, without compiling (``cutlass-layout
    scan``): declarations as written, not sizes (docs/python-api.md#scan).

    Args:
        source: a header (scanned alone, whatever its suffix), a folder (its ``.h .hpp
            .cuh .inl .hxx`` files), or a CUTLASS source (its include root).
        grep: keep the structs and constants whose (qualified) name contains this.
        line_offset: a single header only: it is an excerpt starting after this many lines
            of the real file (lines are reported as the real file's).
        as_cutlass: ``source`` is a CUTLASS source even where it is a folder (a site-packages, a
            checkout): its CUTLASS include root is scanned (``scan --cutlass SRC``).

    Returns:
        A :class:`ScanResult` (``structs``, ``constants``, ``diagnostics``; paths relative
        to the scanned root). Damaged C++ never raises: it is reported in ``diagnostics``.

    Raises:
        BadInput: a missing path, an empty or binary header, a folder without headers, a
            source :func:`resolve_cutlass` rejects, a line offset for more than one file.

    Example: ``scan("flashinfer-python==0.7.2.post1", grep="TensorStorage").structs``
    """
    return _scan.scan(source, grep, line_offset=line_offset, as_cutlass=as_cutlass)


@_renamed(src="source")
def audit(
    source=None,
    arch: str | Sequence[str] = "sm120",
    *,
    family: str | None = None,
    grep: str | None = None,
    cuda_path=None,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: bool = False,
    kernels: str | None = None,
    ignore_kernels: str | None = None,
    exclude_kernels: str | None = None,
    instantiation_level: str | None = None,
    executor: str | None = None,
    shard: tuple[int, int] | None = None,
    on_tactic=None,
    **config_values,
) -> AuditResult | AuditSet:
    """Lay out every CUTLASS GEMM kernel a flashinfer install builds for ``arch``
    (``cutlass-layout audit``), read from its own code (its JIT module builders and
    TensorRT-LLM's MoE kernel generator, run in a child process); or, where ``source`` is
    CUTLASS's own kernel library (:func:`~cutlass_layout.sources.library.is_kernel_library`), every kernel its generator keeps
    for ``arch``. docs/python-api.md#audit says how each is read and laid out.

    Args:
        source: a flashinfer install (site-packages or package dir, ``.whl``,
            ``"flashinfer-python==VERSION"``), or CUTLASS's kernel library; ``None``: the
            flashinfer installed here.
        arch: ``sm120`` (the default), ``sm121``, ``sm100``, ``sm103`` or ``sm90``: one audit;
            a list of them, or ``"all"`` (every arch the install has builders for; not for
            CUTLASS's library): one audit each.
        family: keep one family: ``moe`` or a JIT module name; only its sources are parsed.
        grep: keep the tactics whose id, name, launcher or file contains this
            (case-insensitive).
        cuda_path, jobs, use_cache, progress: as for :func:`sweep`.
        kernels, ignore_kernels, exclude_kernels, instantiation_level: CUTLASS's kernel
            library's own filters, as its generator takes ``--kernels`` and the like.
        executor: where the parses run: ``None`` (``DASK_SCHEDULER_ADDRESS``, else this
            machine), ``"local"``, or ``"dask://HOST:PORT"`` (the ``dask`` extra).
        shard: ``(i, n)``: lay out shard ``i`` of ``n`` alone (1 <= i <= n); join the
            shards with :func:`merge_audits`.
        on_tactic: a flashinfer install's tactics as they come in: ``on_tactic(arch,
            tactic)`` for each tactic the filters keep, before the result is returned.
        config_values: filters, as :func:`layout` takes the values (lists allowed):
            ``kernel``, ``a``, ``b``, ``tile``, ``cluster``, ``stages``, ``d``, ``schedule``.

    Returns:
        For one arch (a str), an :class:`AuditResult`: ``sources``, ``tactics``
        (:class:`Tactic`, each with its :class:`LayoutReport`, bytes, and whether the runtime
        would try it), ``notes`` and ``unmatched`` (filters that kept nothing). For several,
        an :class:`AuditSet`: ``results``, one :class:`AuditResult` per arch in the order
        asked; ``to_dict()`` is ``{"audits": [...]}``, ``check_failures()`` the ``(arch,
        tactic)`` pairs ``audit --check`` fails on.

    Raises:
        BadInput: a bad ``shard``; no flashinfer at ``source`` (or one too old for the arch),
            an arch other than sm120, sm121, sm100, sm103 or sm90 (or ``all``), a family the
            install does not build, a filter value no tactic could match, unusable CUDA
            headers; without ``family``, an install whose builders give no kernel for the
            arch; a bad ``executor``, one without ``distributed`` installed, a scheduler that
            does not answer (or has no worker) in time, workers that cannot see the install's
            paths. For CUTLASS's library: no library or headers at ``source``, its generator
            failed or ran past its limits, a selection of its own that keeps no kernel,
            ``"all"``, ``on_tactic``; the library's filters for a flashinfer install.

    Example: ``audit("flashinfer-python==0.7.2.post1", family="moe").tactics``
    """
    chosen = {
        "kernels": kernels,
        "ignore_kernels": ignore_kernels,
        "exclude_kernels": exclude_kernels,
        "instantiation_level": instantiation_level,
    }
    several = (
        isinstance(arch, str)
        and arch.strip().lower() == _audit.ALL
        or not isinstance(arch, str)
        and isinstance(arch, Iterable)
    )
    if shard is not None:
        shard = _shard.check_shard(shard)  # before any work
    with runner.showing(progress), executors.session(executor) as ex:
        common = dict(
            grep=grep,
            cuda_path=cuda_path,
            jobs=jobs,
            use_cache=use_cache,
            progress=progress,
            executor=ex,
            shard=shard,
            **config_values,
        )
        if is_kernel_library(source):
            from .commands.library_audit import audit_library, audit_library_archs
            from .installs.kernel_library import FAMILY, Selection

            if on_tactic is not None:
                raise BadInput(
                    "tactics stream as they come in from a flashinfer install's audit; CUTLASS's "
                    "kernel library gives its tactics at the end (give --json)"
                )
            if family is not None and family != FAMILY:
                raise BadInput(f"unknown family {family!r}: CUTLASS's kernel library is one family, {FAMILY}")
            selection = Selection(**{k: v or "" for k, v in chosen.items()})
            if several:
                return audit_library_archs(source, arch, selection=selection, **common)
            # one arch (cast: anything else is str()-ed and reported by library_arch)
            return audit_library(source, cast(str, arch), selection=selection, **common)
        given = [k for k, v in chosen.items() if v]
        if given:
            raise BadInput(
                f"{', '.join(given)}: the kernel library's own filters, for CUTLASS's library "
                "(nvidia-cutlass==VERSION, its wheel, a cutlass_library folder or a CUTLASS "
                "checkout), not a flashinfer install"
            )
        if on_tactic is not None:
            common["on_tactic"] = on_tactic
        if several:
            return _audit.audit_archs(source, arch, family=family, **common)
        res = _audit.audit(source, cast(str, arch), family=family, **common)  # cast: as above (audit_arch)
        assert res is not None  # None: only for cached_only, not asked here
        return res


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` (``audit --shard``) -> ``(I, N)``.

    Raises:
        BadInput: not two integers ``I/N`` with 1 <= I <= N (the message names the value).
    """
    return _shard.parse_shard(text)


def merge_audits(paths: Sequence) -> AuditResult | AuditSet:
    """The audit of the whole from the ``--json`` files every shard of it wrote
    (``audit(..., shard=(i, n))`` or ``audit --shard I/N --json``; ``audit --merge FILE...``):
    nothing is laid out, and its ``to_dict()`` is the unsharded audit's ``--json``
    (docs/python-api.md#merge_audits).

    Args:
        paths: the files, one per shard, in any order.

    Returns:
        An :class:`AuditResult` (an :class:`AuditSet` for shards of several arches); its
        tactics hold the JSON rows' numbers (``numbers``), not member layouts (``report``
        None); ``candidates``
        is None (``tactics_blocklist`` needs the audit itself).

    Raises:
        BadInput: a file that cannot be read or is not a shard's audit JSON (or not as this
            version writes it); shards of other installs (fingerprint), arches, filters or
            counts; a shard given twice or missing (named); the install gives no kernel for
            the arch (``NothingForArch``).
    """
    from .commands import library_audit as _library_audit

    mergers = {"flashinfer-python": _audit.merge_shards, "cutlass_library": _library_audit.merge_shards}
    return _shard.merge(_shard.read_shards(paths), mergers)


def blocklist_format(source=None, path=None) -> BlocklistFormat:
    """The offline tactics blocklist format of a flashinfer install, read from its own code
    (what its ``TacticsBlocklist.load`` reads; docs/python-api.md#blocklist_format).

    Args:
        source: a flashinfer install, as :func:`audit` takes it.
        path: where the blocklist will be written, checked first (its folder exists), so that
            ``audit --blocklist`` says so before the audit, not after it.

    Raises:
        BadInput: no flashinfer at ``source``, or one without a blocklist loader (0.6.8 has
            none), or a loader of another shape; ``path`` in a folder that does not exist.
    """
    from .commands.blocklist import blocklist_format as _format
    from .commands.blocklist import check_blocklist_path

    if path is not None:
        check_blocklist_path(path)
    from .sources.flashinfer import FlashinferInstall, resolve_flashinfer

    install = source if isinstance(source, FlashinferInstall) else resolve_flashinfer(source)
    return _format(install.root, install.version)


def tactics_blocklist(result: AuditResult, path=None, *, fmt: BlocklistFormat | None = None) -> Blocklist:
    """flashinfer's tactics blocklist of an :func:`audit` (``audit --blocklist FILE``): the
    tactics the runtime would try that are over the arch's capacity, as the CUTLASS MoE
    runner's tactic ids (docs/python-api.md#tactics_blocklist). A process loads it with
    ``FLASHINFER_TACTICS_BLOCKLIST=FILE``.

    Args:
        result: an audit of a flashinfer install (its ``provenance`` names the install).
        path: where to write the file (JSON); None: write nothing.
        fmt: the install's :func:`blocklist_format` (default: read it again).

    Returns:
        A :class:`Blocklist` (``invalid_tactics``, ``blocked``: each tactic with its key
        and id, ``notes``: what the file cannot say, ``left_out``: each tactic ``audit
        --check`` fails on that the file does not hold, with why; empty where it is complete).

    Raises:
        BadInput: the install has no blocklist loader; ``path``'s folder cannot be written.
    """
    from .commands.blocklist import blocklist_format as _format
    from .commands.blocklist import tactics_blocklist as _blocklist
    from .commands.blocklist import write_blocklist

    if fmt is None:
        prov = result.provenance
        fmt = _format(Path(prov["root"]), prov.get("version", "unknown"))
    out = _blocklist(result, fmt)
    if path is not None:
        write_blocklist(out, path)
    return out


#: TensorRT-LLM's MoE tile names (``CtaShape128x256x64B``, or ``128x256x64B``): the moe family's
_MOE_TILE = re.compile(r"ctashape|^\d+x\d+x\d+b(/|$)", re.I)


def tactic(
    id: str, source=None, arch: str = "sm120", *, cuda_path=None, use_cache: bool = True, progress: bool = False
) -> Tactic:
    """One kernel a flashinfer install builds, by its :func:`audit` id or a unique part of it
    (``cutlass-layout layout --tactic ID``); from the results cache when the audit has run. For
    CUTLASS's kernel library, ``id`` is a procedural name (or a ``--kernels`` filter that keeps
    one kernel). docs/python-api.md#tactic says which sources an id makes it read.

    Args:
        id: the tactic's id or a part of it (case-insensitive).
        source, arch, cuda_path, use_cache, progress: as for :func:`audit`.

    Returns:
        The :class:`Tactic` (its ``report`` is a :class:`LayoutReport`, bytes). A flashinfer
        tactic's report has its kernel's ``params`` (``sizeof(Params)``, TMA descriptor
        offsets: read for this tactic alone, one probe, cached apart from the audit's layouts),
        or its ``params_note`` says why not.

    Raises:
        BadInput: as :func:`audit`; no tactic matches, or several do (up to eight listed).

    Example: ``tactic("CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize",
    "flashinfer-python==0.7.2.post1").report``
    """
    if is_kernel_library(source):  # a procedural name is a filter of the library's own
        from .commands.library_audit import audit_library
        from .installs.kernel_library import Selection

        with runner.showing(progress):
            res = audit_library(
                source,
                arch,
                selection=Selection(kernels=id),
                cuda_path=cuda_path,
                use_cache=use_cache,
                progress=progress,
            )
        return _audit.find_tactic(res, id)
    family = id.split("/", 1)[0] if "/" in id else None
    if _MOE_TILE.search(id):  # a 2.x tile enum names its warp shape: the SM80 path's
        family = _audit.SM80_FAMILY if family == _audit.SM80_FAMILY or "_warpshape" in id.lower() else "moe"
    with runner.showing(progress):
        found = _audit.audit(
            source,
            arch,
            family=family,
            cuda_path=cuda_path,
            use_cache=use_cache,
            progress=progress,
            strict_family=False,
            params_for=id,
        )
        if found is not None and family is not None and family not in found.families:  # not a family name
            found = _audit.audit(
                source, arch, cuda_path=cuda_path, use_cache=use_cache, progress=progress, params_for=id
            )
        assert found is not None  # None: only for cached_only
        res = found
    return _audit.find_tactic(res, id)


def is_kernel_library(source) -> bool:
    """Whether ``source`` names CUTLASS's own kernel library (``"nvidia-cutlass==4.2.0.0"``, an
    ``nvidia_cutlass-*.whl``, a folder holding ``cutlass_library``, a CUTLASS checkout), which
    :func:`audit` audits as the profiler's kernels, rather than a flashinfer install. Reads no
    archive, fetches nothing and raises nothing (bytes do not come into it)."""
    return _is_kernel_library(source)


def stream_row(arch: str, tactic: Tactic) -> dict:
    """A tactic's ``audit --format jsonl`` line as its source comes in (``on_tactic`` of
    :func:`audit` gets the tactic): ``{"event": "tactic", "arch": ..., **its --json row}``
    without ``runtime_candidate``, ``fix`` and ``runtime_guard``, which are known only at the
    end (:func:`cutlass_layout.commands.audit.stream_row`). Bytes throughout."""
    return _audit.stream_row(arch, tactic)


def show_progress(enabled: bool = True) -> bool:
    """Show progress on stderr in this process from now on (or stop): each slow step as it
    starts and counts of long runs (docs/python-api.md#show_progress). The command line turns
    it on; the library is quiet unless a call's ``progress=True`` asks. Returns whether it was
    shown before (to put back)."""
    return runner.show_progress(enabled)


# ------------------------------------------------------------------------------------------
# values as typed


def config(value=None, **config_values):
    """What :func:`layout` lays out, from what a user types: a :class:`UserType` as is, else
    a :class:`Config` from a ``Config``, a tile (``"128x256x128"``), a dict of config
    values, or nothing, plus config values as the ``layout`` command takes them (strings as
    typed, ``stages="auto"``); the rest take that command's defaults.

    Raises:
        BadInput: an unknown key, a bad value, a ``Config`` together with values.
    """
    return engine.subject(value, **config_values)


def user_type(header, type: str, *, arch: str | None = None, stages=None, includes=(), defines=()) -> UserType:
    """Your own kernel or collective type (``layout --header FILE --type NAME``) as typed:
    ``arch`` in any case (``None``: the type's arch tag decides), ``stages`` ``"auto"``
    (``None``) or N (the header's ``STAGES`` macro is defined as N).

    Raises:
        BadInput: see :class:`UserType` (missing or binary header, bad name, arch or define).
    """
    return UserType(
        header=header,
        type=type,
        arch=arch.lower() if arch else None,
        stages=parse_stages(stages),
        includes=tuple(includes),
        defines=tuple(defines),
    )


def grid(values: dict) -> list[Config]:
    """The configs of a grid: the product of ``values`` (key -> a value or a list of values,
    braces expanding: ``{"tile": "128x{64,128}x128", "stages": ["auto", 3]}``), as the
    ``sweep`` command's repeatable flags make it.

    Raises:
        BadInput: an unknown key or bad value. OverLimit: more configs than :data:`LIMITS`.
    """
    from .subjects.grid import grid_configs

    return grid_configs(values)


def grid_file(path) -> list[Config]:
    """The configs of a TOML or JSON grid file (``sweep --grid FILE``): each key a value or a
    list of values, their product (under ``grid`` or at the top), or a ``configs`` list of
    such tables, one product each.

    Raises:
        BadInput: an unreadable or malformed file, a bad value. OverLimit: as :func:`grid`.
    """
    from .subjects.grid import load_grid_file

    return load_grid_file(path)


def parse_line_offset(text) -> tuple[str | None, int]:
    """``N`` (an excerpt starting after N lines of the real file) or ``FILE:START`` (the real
    file and the excerpt's first line there) -> (file name or None, lines before the excerpt).

    Raises:
        BadInput: neither form, or out of range.
    """
    return _scan.parse_line_offset(text)


def scan_text(data: bytes, name: str = "<stdin>", *, line_offset: int = 0, grep: str | None = None) -> ScanResult:
    """:func:`scan` of one header's text (``cutlass-layout scan -``: bytes read from stdin, or
    an excerpt), reported as file ``name`` with its lines counted from ``line_offset + 1``.

    Raises:
        BadInput: empty, binary or non-UTF-8 text, a bad ``line_offset``.
    """
    return _scan.scan_text(data, name, line_offset=line_offset, grep=grep)


# ------------------------------------------------------------------------------------------
# the probe and the cross-checks


def probe_text(config=None, **config_values) -> str:
    """The translation unit the engine parses for one config (or :class:`UserType`), with a
    ``main()`` that prints the numbers the engine reads when nvcc builds it (``layout
    --emit-probe``; docs/python-api.md#probe_text has the lines it prints).

    Raises:
        BadInput: as :func:`config`.
    """
    return probe.render([engine.subject(config, **config_values)], with_main=True)


def _include_root(source) -> Path:
    if isinstance(source, Target):
        return source.tree.include_root
    if isinstance(source, CutlassTree):
        return source.include_root
    return _resolve_cutlass(source).include_root


def verify_nvcc(configs: list, reports: list[LayoutReport], source=None):
    """Compare the engine's ``reports`` for ``configs`` with what nvcc's host pass computes
    from the same probe (``layout --verify nvcc``): every struct size, stage count, and member
    offset and size C++ can name; configs that did not compile are left out.

    Returns:
        A :class:`cutlass_layout.checks.verify.Verification` (``agree``, ``sizes``, ``fields``,
        ``mismatches``; ``summary()``).

    Raises:
        BadInput: nvcc missing or failing, an unusable source.
    """
    from .checks.verify import verify_with_nvcc

    return verify_with_nvcc(list(configs), list(reports), _include_root(source))


def find_nvcc(cuda_path=None) -> str:
    """The nvcc ``--verify nvcc`` runs: ``<cuda_path>/bin/nvcc`` where given, else the one on
    ``PATH``, checked by running ``nvcc --version``
    (:func:`cutlass_layout.checks.nvcc_probe.find_nvcc`).

    Raises:
        BadInput: no nvcc there, or one that does not run.
    """
    from .checks.nvcc_probe import find_nvcc as _find_nvcc

    return _find_nvcc(cuda_path)


def verify_audit(
    result: AuditResult, source=None, *, sample: int | None = None, jobs: int | None = None, cuda_path=None
):
    """Compile a sample of an audit's tactics with nvcc's front end (``audit --verify nvcc``)
    and compare every size: the kernel's, mainloop's and epilogue's ``sizeof(SharedStorage)``
    (bytes) and the stage count, from the install's generated sources with its JIT's flags
    (nothing built or run; docs/python-api.md#verify_audit).

    Args:
        result: what :func:`audit` returned for ``source`` (the same install).
        sample: tactics per family; default every over-capacity and exact-fit tactic and 4
            of the rest, spread over their sizes.
        jobs: nvcc runs at once (one per translation unit; default: the CPUs).
        cuda_path: the CUDA whose ``bin/nvcc`` runs (default: nvcc on ``PATH``).

    Returns:
        A :class:`cutlass_layout.model.AuditVerification` (``agree``, ``compared``,
        ``disagreements``, ``not_verified``; ``lines()``).

    Raises:
        BadInput: nvcc missing or unusable, ``sample`` under 1.
    """
    from .commands.audit_nvcc import verify_audit as _verify_audit

    return _verify_audit(result, source, sample=sample, jobs=jobs, cuda_path=cuda_path)


def gpu_device(configs: list):
    """The local GPU, checked before anything is laid out for a launch of ``configs`` on it
    (``--verify gpu``): preset configs of plain element types (dense and grouped GEMMs),
    all of one arch, the GPU's.

    Returns:
        A :class:`cutlass_layout.checks.gpu.GpuDevice`, for :func:`verify_gpu`.

    Raises:
        BadInput: a config the check program cannot launch (a user type, block-scaled,
            sparse, blockwise scales, a D with scale factors), several archs, no NVIDIA GPU
            or one of another arch, no nvcc on ``PATH``.
    """
    from .checks.gpu import check_launchable, preflight

    configs = list(configs)
    check_launchable(configs)
    archs = sorted({c.arch for c in configs})
    if len(archs) != 1:
        raise BadInput(f"a GPU runs one arch; the configs mix {', '.join(archs)}")
    return preflight(archs[0])


def _expected(r) -> tuple:
    """(verdict, kernel SharedStorage bytes, stages) of a layout report or a sweep record: the
    verdict three-valued (:func:`~cutlass_layout.model.schema_verdict`), as the layout and sweep
    JSON write it and the GPU check's files and lines have always said it."""
    if isinstance(r, SweepRecord):
        return (schema_verdict(r.verdict), r.kernel_bytes, r.stages)
    if isinstance(r, LayoutReport):
        return (schema_verdict(r.verdict), r.kernel.size if r.kernel is not None else None, r.stages)
    return tuple(r)


def verify_gpu(configs: list, results: list, source=None, *, device=None):
    """Build each config's kernel for the local GPU with nvcc, launch it with the
    SharedStorage bytes the engine reported, and check the verdict holds (``--verify gpu``):
    a kernel that fits must launch and run, one over capacity must be refused.

    Args:
        configs: preset configs (see :func:`gpu_device`).
        results: per config, its :class:`LayoutReport` or :class:`SweepRecord` (or a
            ``(verdict, kernel bytes, stages)`` tuple).
        source: the CUTLASS source the engine read (nvcc reads the same).
        device: :func:`gpu_device`'s result (default: checked here).

    Returns:
        A :class:`cutlass_layout.checks.gpu.GpuVerification` (``agree``, ``runs``; ``summary()``).

    Raises:
        BadInput: as :func:`gpu_device`; a cache folder that cannot be written.
    """
    from .checks.gpu import verify_on_gpu

    configs = list(configs)
    device = device or gpu_device(configs)
    return verify_on_gpu(
        configs, [_expected(r) for r in results], _include_root(source), arch=device.arch, device=device
    )


__all__ = [
    # the questions
    "layout",
    "layouts",
    "sweep",
    "diff",
    "scan",
    "audit",
    "tactic",
    "target",
    "resolve_cutlass",
    "show_progress",
    "blocklist_format",
    "tactics_blocklist",
    "is_kernel_library",
    "merge_audits",
    "stream_row",
    "exclude_list",
    "write_exclude_list",
    # values as typed, the probe, the cross-checks
    "config",
    "user_type",
    "grid",
    "grid_file",
    "expand_braces",
    "parse_stages",
    "parse_tile",
    "parse_line_offset",
    "parse_shard",
    "scan_text",
    "probe_text",
    "verify_nvcc",
    "gpu_device",
    "verify_gpu",
    "verify_audit",
    "find_nvcc",
    # the data model and the errors
    "AuditResult",
    "AuditSet",
    "BadInput",
    "Blocklist",
    "BlocklistFormat",
    "Config",
    "CutlassLayoutError",
    "CutlassTree",
    "DiffResult",
    "DoesNotCompile",
    "LIMITS",
    "LayoutReport",
    "OverLimit",
    "ScanResult",
    "SweepRecord",
    "SweepResult",
    "Tactic",
    "Target",
    "UserType",
    # the package's version
    "VERSION",
]
