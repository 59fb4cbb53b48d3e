"""CUTLASS's own kernel library: the kernels its generator emits for an arch, laid out exactly.

CUTLASS's profiler and library are built from what ``python/cutlass_library`` enumerates:
``generator.py``'s ``Generate{SM90,SM100,SM120}`` append operations to a ``Manifest``, whose
``filter`` keeps those the build's ``--kernels`` / ``--ignore-kernels`` /
``--exclude-kernels`` / ``--instantiation-level`` select (and prunes by its own shared-memory
estimate, ``CalculateSmemUsage``), and ``gemm_operation.py``'s emitters write each kept
operation's C++. Here:

* :func:`enumerate_kernels` runs that code, the library's own, in a sandboxed child process
  (:mod:`cutlass_layout.sources._cutlass_library_harness`, started by
  :func:`cutlass_layout.sources.flashinfer_jit.run_sandboxed` as flashinfer's generator is), and
  returns each kept kernel (:class:`LibraryKernel`): its procedural name, the C++ its emitter
  writes (the ``CollectiveBuilder`` chain and ``<name>_base``, a ``GemmUniversal``), and what
  the library says of it. Cached per library fingerprint, arch and selection.
* :func:`lay_out_kernels` lays out ``<name>_base``'s SharedStorage of many kernels in one
  translation unit, through the engine's one layout loop (:func:`cutlass_layout.engine.loop.lay_out`
  over :func:`cutlass_layout.engine.loop.text_batch`): each kernel's emitted text and its probe
  block in a namespace of its own, so an error is tied to its kernel; numbers only from a
  parse without errors. Each report is cached under :func:`report_key`.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..model import LayoutReport
from ..core.cache import KINDS
from ..sources.library import KernelLibrary
from ..subjects import aliases
from ..subjects.archs import capacity_of  # the C++ name of an arch's capacity constant
from ..cpp.arguments import template_args

HARNESS = Path(__file__).resolve().parent.parent / "sources" / "_cutlass_library_harness.py"
#: The family of the library's tactics in an audit.
FAMILY = "cutlass_library"
#: arch -> (the library's ``--architectures``, its ``Generate...`` functions, the arch whose
#: clang flags parse the kernels), as CUTLASS's CMake passes ``CUTLASS_NVCC_ARCHS``
#: (``generator.py``'s ``__main__`` calls ``GenerateSM100`` and ``GenerateSM120`` for any
#: Blackwell arch: each emits its own family's kernels). SM101 (Thor before CUDA 13) and SM110
#: (Thor from CUDA 13: ``generator.py``'s ``ThorSMRenumbering``) are SM100-family kernels judged
#: against SM100's capacity (:func:`~cutlass_layout.subjects.archs.capacity_of`); which of these
#: a version's generator takes is :func:`generator_archs`.
LIBRARY_ARCHS = {
    "sm120": ("120a", ("GenerateSM120",), "sm120"),
    "sm121": ("121a", ("GenerateSM120",), "sm120"),
    "sm100": ("100a", ("GenerateSM100",), "sm100"),
    "sm101": ("101a", ("GenerateSM100",), "sm101"),
    "sm103": ("103a", ("GenerateSM100",), "sm103"),
    "sm110": ("110a", ("GenerateSM100",), "sm110"),
    "sm90": ("90a", ("GenerateSM90",), "sm90"),
}
#: The emitter whose output is a CUTLASS 3.x ``GemmUniversal`` (``<name>_base``): the kernels
#: laid out here
EMITTER_3X = "EmitGemmUniversal3xInstance"
#: Kernels laid out in one translation unit at most (libclang's memory grows with each)
BATCH_KERNELS = 24
#: The header of CUTLASS's utilities (``tools/util/include``) the library's own operation
#: wrapper includes (``tools/library/src/gemm_operation_3x.hpp``: ``#include
#: "cutlass/util/mixed_dtype_utils.hpp"``), so that every file of a profiler build has it: the
#: emitted instances of shuffled mixed-input SM90 kernels (``..._cvt_shfl_...``) call its
#: ``cutlass::compute_memory_reordering_atom``
UTIL_HEADER = "cutlass/util/mixed_dtype_utils.hpp"
#: What in an emitted instance needs :data:`UTIL_HEADER`
_UTIL_USE = "compute_memory_reordering_atom"
#: The cache kinds of a kernel's layout and of the generator's kernels for an arch.
_LAYOUTS = KINDS["library-layouts"]
_ENUMERATED = KINDS["library-kernels"]


@dataclass(frozen=True)
class Selection:
    """Which kernels the library's manifest keeps, as its build takes them
    (``CUTLASS_LIBRARY_KERNELS`` and the like; ``generator.py --kernels``): comma-separated
    name filters, each ``*``-separated substrings that must appear in order
    (``Manifest._filter_string_matches``). ``kernels`` empty: the default set (``all``: every
    kernel); ``ignore_kernels`` applies only with ``kernels`` set, ``exclude_kernels`` always;
    ``instantiation_level``: the SM90/SM100 instantiation level (``max``, or a number such as
    ``1111``)."""

    kernels: str = ""
    ignore_kernels: str = ""
    exclude_kernels: str = ""
    instantiation_level: str = ""

    def request(self) -> dict:
        """The harness request's filter fields."""
        return asdict(self)

    def words(self) -> str:
        """The selection as the generator's flags: ``--kernels '*gemm_e4m3*'``, or ``the
        default kernel filter``."""
        flags = [f"--{k.replace('_', '-')} {v!r}" for k, v in asdict(self).items() if v]
        return " ".join(flags) if flags else "the default kernel filter"


@dataclass
class LibraryKernel:
    """One kernel the library's manifest keeps (the harness's answer for one operation).

    Attributes:
        name: its procedural name (``cutlass_profiler --kernels`` takes it).
        operation_kind, gemm_kind: the library's ``OperationKind`` and ``GemmKind`` names.
        arch: the operation's arch (120).
        emitter: the emitter class its ``GemmKind`` maps to (``EmitGemmUniversal3xInstance``).
        instance: the C++ that emitter writes for it (namespace-scope aliases, ending with
            ``struct <name> : <name>_base``); includes: the emitter's includes.
        tile, cluster: the library's ``TileDescription`` threadblock and cluster shapes;
        stages: its stage count (0: auto).
        kernel_schedule, epilogue_schedule, tile_scheduler: the library's enum names.
        elements: A, B, C, D as the library names them; accumulator.
        estimate_kib: ``CalculateSmemUsage`` (KiB); estimate_error: what it raised instead;
        capacity_kib: ``SharedMemPerCC`` entries for the kernel's compute-capability range.
    """

    name: str
    operation_kind: str | None = None
    gemm_kind: str | None = None
    arch: int | None = None
    emitter: str | None = None
    instance: str | None = None
    includes: list = field(default_factory=list)
    tile: list = field(default_factory=list)
    cluster: list = field(default_factory=list)
    stages: int | None = None
    kernel_schedule: str | None = None
    epilogue_schedule: str | None = None
    tile_scheduler: str | None = None
    elements: dict = field(default_factory=dict)
    accumulator: str | None = None
    estimate_kib: int | None = None
    estimate_error: str | None = None
    capacity_kib: dict = field(default_factory=dict)

    @property
    def base(self) -> str:
        """The ``GemmUniversal`` type the emitter names: ``<name>_base``."""
        return f"{self.name}_base"

    @property
    def layable(self) -> bool:
        """Whether it is a CUTLASS 3.x GEMM this module lays out (:data:`EMITTER_3X`)."""
        return self.emitter == EMITTER_3X and bool(self.instance)

    def to_dict(self) -> dict:
        """A report's config: the kernel's name."""
        return {"kernel": self.name}


def _kernel(d: dict) -> LibraryKernel:
    if not isinstance(d.get("name"), str):
        raise TypeError("name")
    given: dict[str, Any] = {k: d.get(k) for k in LibraryKernel.__dataclass_fields__ if k in d}
    return LibraryKernel(**given)


def _cuda_version(cuda: tuple[int, int]) -> str:
    return f"{cuda[0]}.{cuda[1]}.0"


def missing_generators(lib: KernelLibrary, generators) -> list[str]:
    """The ``Generate...`` functions of ``generators`` that ``lib``'s ``generator.py`` does not
    define (nvidia-cutlass 3.8.0.0 has no ``GenerateSM120``: its ``Manifest`` cannot even
    parse ``--architectures 120a``). Reads the file's text; runs nothing."""
    try:
        text = (Path(lib.root) / "cutlass_library" / "generator.py").read_text(errors="replace")
    except OSError:
        return []  # the generator's own run says what is wrong with it
    return [g for g in generators if not re.search(rf"^def {re.escape(g)}\(", text, re.M)]


#: ``generator.py``'s ``__main__`` list of the Blackwell ``--architectures`` it generates for
#: (CUTLASS 4.2.0 and 4.7.0: ``blackwell_arch_list = ["100a", "100f", "101a", ..., "121f"]``).
_BLACKWELL_LIST = re.compile(r"^[ \t]*blackwell_arch_list[ \t]*=[ \t]*\[([^\]]*)\]", re.M)


def generator_archs(lib: KernelLibrary) -> list[str] | None:
    """The arches of :data:`LIBRARY_ARCHS` that ``lib``'s generator takes, in that table's order:
    read from its ``generator.py`` (runs nothing): ``sm90`` where it defines ``GenerateSM90``,
    and each ``NNNa`` of its ``__main__``'s ``blackwell_arch_list`` (the arches for which it
    calls ``GenerateSM100`` and ``GenerateSM120``). None where the file has no such list
    (older generators, stand-ins): nothing is known, nothing is refused here."""
    try:
        text = (Path(lib.root) / "cutlass_library" / "generator.py").read_text(errors="replace")
    except OSError:
        return None
    m = _BLACKWELL_LIST.search(text)
    if m is None:
        return None
    named = {f"{cc}a" for cc in re.findall(r"[\"'](\d+)[af][\"']", m.group(1))}
    if re.search(r"^def GenerateSM90\(", text, re.M):
        named.add("90a")
    return [a for a, (arch_flag, _, _) in LIBRARY_ARCHS.items() if arch_flag in named]


def enumerate_kernels(
    lib: KernelLibrary,
    arch: str,
    selection: Selection = Selection(),
    *,
    cuda_version: tuple[int, int] = (13, 0),
    use_cache: bool = True,
) -> tuple[list[LibraryKernel], dict]:
    """The kernels CUTLASS's library at ``lib`` keeps for ``arch`` under ``selection``, in the
    order its manifest appends them, and the manifest's filters as it parsed them. Runs the
    library's own generator (the module docstring) once per library fingerprint, arch,
    selection and CUDA version (``--cuda-version``, which gates some kernels): cached.

    Raises:
        BadInput: an arch the library is not enumerated for here; the generator ran past its
            limits or failed (one line, :func:`cutlass_layout.sources.flashinfer_jit.run_sandboxed`).
    """
    from ..core.progress import step
    from ..sources.flashinfer_jit import run_sandboxed

    if arch not in LIBRARY_ARCHS:
        raise BadInput(f"arch {arch!r}: CUTLASS's library is audited for {', '.join(LIBRARY_ARCHS)}")
    archs, generators, _ = LIBRARY_ARCHS[arch]
    request = {
        "root": str(lib.root),
        "architectures": archs,
        "generators": list(generators),
        "cuda_version": _cuda_version(cuda_version),
        **selection.request(),
    }
    k = _ENUMERATED.key(subject=[{x: v for x, v in request.items() if x != "root"}], target=[lib.fingerprint])

    def load(d):
        return [_kernel(x) for x in d["kernels"]], dict(d["filters"])

    def compute():  # (what it reads, the generator's answer: what is stored)
        who = f"CUTLASS's kernel generator ({lib.root}/cutlass_library, {', '.join(generators)})"
        with step(f"running CUTLASS {lib.version}'s kernel generator for {arch} ({', '.join(generators)})"):
            answer = run_sandboxed(HARNESS, request, who)
        try:
            return load(answer), answer
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(f"{who} gave an answer this reader cannot use: {exc!r}") from None

    return _ENUMERATED.memo(k, compute, load=lambda d: (load(d), d), dump=lambda r: r[1], use_cache=use_cache)[0]


# ---------------------------------------------------------------------------------------
# what the emitted C++ says


def builder_args(instance: str, which: str) -> list[str]:
    """The template arguments of the ``cutlass::{which}::collective::CollectiveBuilder<...>``
    (``gemm``: the mainloop's, ``epilogue``: the epilogue's) an emitted instance writes
    (``EmitGemmUniversal3xInstance.gemm_template``: mainloop ``arch, opclass, A, layout A,
    align A, B, layout B, align B, accumulator, tile, cluster, stages, schedule``; epilogue
    ``arch, opclass, tile, cluster, epilogue tile, accumulator, compute, C, layout C, align C,
    D, layout D, align D, schedule, fusion``); [] where there is none."""
    at = instance.find(f"cutlass::{which}::collective::CollectiveBuilder<")
    return template_args(instance[at:]) if at >= 0 else []


def emitted_shape(text: str) -> list[int] | None:
    """``[128, 128, 128]`` of ``cute::Shape<cute::_128, cute::_128, cute::_128>`` as emitted;
    None for anything else (a runtime cluster's ``int``)."""
    dims = re.findall(r"\b_(\d+)\b", text)
    return [int(d) for d in dims] if len(dims) == 3 and text.count(",") == 2 else None


def stage_spec(kernel: LibraryKernel, spelled: str | None) -> str | None:
    """The mainloop builder's stage-count argument as emitted, the epilogue's name shortened:
    ``StageCountAutoCarveout<sizeof(<epilogue>::SharedStorage)>`` (as emitted:
    ``static_cast<int>(sizeof(typename <name>_epilogue::SharedStorage))``), ``StageCount<2>``."""
    if not spelled:
        return None
    s = " ".join(spelled.split()).replace(f"{kernel.name}_epilogue", "<epilogue>")
    s = s.replace("static_cast<int>(sizeof(typename <epilogue>::SharedStorage))", "sizeof(<epilogue>::SharedStorage)")
    return s.replace("cutlass::gemm::collective::", "")


# ---------------------------------------------------------------------------------------
# laying them out


def block_text(kernel: LibraryKernel, index: int, capacity: str | None) -> str:
    """Kernel ``index``'s block: its emitted instance and a probe block of ``<name>_base``, in
    ``namespace cl_probe_<index>`` (:func:`cutlass_layout.subjects.aliases.subject_block`)."""
    ns = f"{aliases.NAMESPACE}{index}"
    return (
        f"\nnamespace {ns} {{\n{kernel.instance}\n{aliases.subject_block(kernel.base, capacity)}}}  // namespace {ns}\n"
    )


def needs_util(kernels: list[LibraryKernel]) -> bool:
    """Whether an emitted instance of ``kernels`` uses CUTLASS's utilities (:data:`UTIL_HEADER`)."""
    return any(_UTIL_USE in (k.instance or "") for k in kernels)


def includes_head(kernels: list[LibraryKernel]) -> str:
    """The emitters' includes of ``kernels`` (each once, in order), and :data:`UTIL_HEADER`
    where an instance uses it (as the profiler's own wrapper brings it in)."""
    incs = dict.fromkeys(i for k in kernels for i in k.includes)
    if needs_util(kernels):
        incs[UTIL_HEADER] = None
    return "".join(f"#include <{i}>\n" for i in incs)


def util_flags(kernels: list[LibraryKernel], util_include: Path | None) -> list[str]:
    """The include flag of CUTLASS's ``tools/util/include`` (``util_include``) where
    ``kernels`` need it (:func:`needs_util`), as CUTLASS's CMake gives the library
    (``cutlass_tools_util_includes``); else none."""
    return [f"-I{util_include}"] if util_include is not None and needs_util(kernels) else []


def report_key(tgt, kernel: LibraryKernel, arch: str, util_include: Path | None = None) -> str:
    """The results-cache key of a kernel's report: its block and includes as parsed, the clang
    flags (include root left out; the utilities' include folder where the kernel needs it),
    the tree hash, libclang and the engine's code."""
    from ..cpp.clang import libclang_version

    root = str(tgt.tree.include_root)
    flags = [f.replace(root, "<cutlass>") for f in tgt.flags(arch)]
    flags += ["-I<cutlass-util>" for _ in util_flags([kernel], util_include)]
    return _LAYOUTS.key(
        subject=[includes_head([kernel]), block_text(kernel, 0, capacity_of(arch)), flags],
        target=[tgt.tree.tree_hash, libclang_version()],
    )


def cached_reports(
    tgt, kernels: list[LibraryKernel], arch: str, util_include: Path | None = None
) -> list[LayoutReport | None]:
    """The cached report of each kernel (None where there is none), with ``tgt``'s provenance."""
    from ..engine.loop import load_report

    prov = tgt.provenance(arch)
    out = []
    for k in kernels:
        rep = _LAYOUTS.get(report_key(tgt, k, arch, util_include), load_report)
        if rep is not None:
            rep = replace(rep, config=k.to_dict(), provenance=prov)
        out.append(rep)
    return out


def store_report(tgt, kernel: LibraryKernel, arch: str, rep: LayoutReport, util_include: Path | None = None) -> None:
    """Cache a kernel's report (a types-only answer from a parse: an error is an answer too)."""
    _LAYOUTS.put(report_key(tgt, kernel, arch, util_include), rep.to_dict())


def kin(kernel: LibraryKernel) -> tuple | None:
    """What kernels likely to share the instantiations that fail have in common
    (:attr:`cutlass_layout.engine.loop.Batch.kin`): the tile and the D element of the epilogue's
    ``CollectiveBuilder`` (the epilogue's shared memory atoms are chosen from these: CUTLASS
    4.7.0's SM120 kernels that do not compile fail there, in ``ss_smem_selector``,
    ``sm120_builder.inl``'s FP6 tile check and the block-scale-factor store's
    ``EpilogueTileN``); ``None`` without such a builder."""
    args = builder_args(kernel.instance or "", "epilogue")
    return (" ".join(args[2].split()), " ".join(args[10].split())) if len(args) > 10 else None


def twin(kernel: LibraryKernel) -> tuple[str, int] | None:
    """Kernels whose emitted instances begin with the same first ``CollectiveBuilder`` (the
    epilogue's: the same template arguments), and the lines of a block
    (:func:`block_text`) through that declaration (:attr:`cutlass_layout.engine.loop.Batch.twin`):
    the instance's text up to its first ``::CollectiveOp;``, the kernel's name left out. CUTLASS
    4.7.0's SM120 library: the 338 kernels that do not compile are of 28 such keys, each with
    one error alone."""
    text = kernel.instance or ""
    at = text.find("::CollectiveOp;")
    if at < 0:
        return None
    head = text[: at + len("::CollectiveOp;")]
    return " ".join(head.replace(kernel.name, "<name>").split()), 3 + head.count("\n")


def lay_out_kernels(
    tgt, kernels: list[LibraryKernel], arch: str, util_include: Path | None = None, *, defer: bool = False
) -> list[LayoutReport | None]:
    """The report of each of ``kernels`` (laid out together: the module docstring); bytes.
    ``util_include``: the library's ``tools/util/include``
    (:attr:`~cutlass_layout.sources.library.KernelLibrary.util_include`), for kernels whose instance
    uses :data:`UTIL_HEADER`; without it those kernels do not compile. ``defer``: the kernels
    that only looked clean beside others that failed are left ``None``
    (:func:`~cutlass_layout.engine.loop.lay_out_deferring`), for the caller to lay out with those of its
    other batches.

    Raises:
        BadInput: an include is missing (the tree is not the one the library emits for).
    """
    from ..engine.loop import lay_out_deferring, text_batch

    cap = capacity_of(arch)
    batch = text_batch(
        tgt,
        arch,
        lambda k, i: block_text(k, i, cap),
        head=includes_head(kernels),
        extra=util_flags(kernels, util_include),
        where=f"CUTLASS tree {tgt.tree.include_root}",
        kin=kin,
        twin=twin,
    )
    return lay_out_deferring(batch, kernels, defer=defer)


def lay_out_batch(
    tgt, kernels: list[dict], arch: str, util_include: Path | None = None, defer: bool = False
) -> tuple[list[dict | None], float]:
    """:func:`lay_out_kernels` in a worker process: ``([report as a dict, or None where
    deferred], CPU seconds)``."""
    t0 = time.process_time()
    reps = lay_out_kernels(tgt, [_kernel(k) for k in kernels], arch, util_include, defer=defer)
    return [r.to_dict() if r is not None else None for r in reps], round(time.process_time() - t0, 2)


def batches(items: list, jobs: int) -> list[list]:
    """``items`` in groups of at most :data:`BATCH_KERNELS`, and in at least ``jobs`` groups
    where there are enough (every worker has one)."""
    per = max(1, min(BATCH_KERNELS, -(-len(items) // max(1, jobs))))
    return [items[i : i + per] for i in range(0, len(items), per)]


__all__ = [
    "FAMILY",
    "LIBRARY_ARCHS",
    "LibraryKernel",
    "Selection",
    "builder_args",
    "enumerate_kernels",
    "generator_archs",
    "lay_out_kernels",
    "missing_generators",
]
