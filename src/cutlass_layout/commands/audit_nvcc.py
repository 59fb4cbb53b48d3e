"""``audit --verify nvcc``: a sample of an audit's tactics compiled by nvcc, every number compared.

Each sampled tactic is compiled from the source it came from (the install's own generated
source, :attr:`~cutlass_layout.model.Tactic.file`, with its JIT module's flags), the sources
of one module joined into one translation unit (:func:`cutlass_layout.checks.nvcc_probe.one_unit`;
the instantiations not sampled blanked out), through nvcc's own front end
(:mod:`cutlass_layout.checks.nvcc_probe`): its kernel, mainloop and epilogue ``sizeof(SharedStorage)``
and its stage count as nvcc computes them are compared with the audit's. Units run in
parallel (``jobs``). A family this check cannot compile yet is named, with why.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from ..checks.nvcc_probe import (
    SHOW_TEMPLATE,
    SIZES_SHOW,
    blank_statements,
    find_nvcc,
    first_error,
    killed,
    nvcc_flags,
    show_header,
    unanswered,
    unit_sizes,
)
from ..installs.kernel_library import FAMILY as LIBRARY_FAMILY
from ..installs.moe_sm80 import FAMILY as SM80_FAMILY
from ..model import AuditResult, AuditVerification, Tactic, Verdict
from ..core.pool import default_jobs
from ..engine.schedule import Schedule
from ..core.progress import step
from ..installs.naming import MOE
from ..subjects.archs import AUDIT_ARCHS

#: Tactics that fit, spread over their sizes, that the default sample adds per family to
#: every tactic over capacity and every exact fit
SPREAD = 4
#: Sampled tactics one nvcc unit holds before a module's sources are split over several
#: units (each unit parses the headers again, a fixed cost per unit: docs/performance.md)
UNIT_TACTICS = 8
_VERDICTS = (Verdict.OVER_CAPACITY, Verdict.EXACT_FIT, Verdict.FITS)


def sample_tactics(tactics: list[Tactic], k: int | None = None) -> dict[str, list[Tactic]]:
    """``{family: tactics}`` to compile: by default every tactic over capacity and every exact
    fit, and :data:`SPREAD` of those that fit, evenly spread over the audit's order (largest
    first); with ``k``, ``k`` per family at most, in that order of preference (over capacity,
    exact fits, then the spread). Tactics that do not compile have no numbers to compare."""
    by: dict[str, dict[Verdict, list[Tactic]]] = {}
    for t in tactics:
        if t.verdict in _VERDICTS:
            by.setdefault(t.family, {v: [] for v in _VERDICTS})[t.verdict].append(t)
    out = {}
    for family, groups in by.items():
        first = groups[Verdict.OVER_CAPACITY] + groups[Verdict.EXACT_FIT]
        room = SPREAD if k is None else max(0, k - len(first))
        out[family] = (first if k is None else first[:k]) + spread(groups[Verdict.FITS], room)
    return out


def spread(items: list, n: int) -> list:
    """``n`` of ``items`` evenly spread (the first and the last among them)."""
    if n <= 0 or not items:
        return []
    if n >= len(items):
        return list(items)
    if n == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def _explicit_instantiation(text: str, line: int) -> bool:
    """Whether the statement at ``line`` of ``text`` is an explicit instantiation
    (``template ...;``: a function template's, which only nvcc's device front end
    instantiates), not a launcher macro's call."""
    blanked = blank_statements(text, [line])
    gone = "".join(a for a, b in zip(text, blanked) if a != b)
    return gone.lstrip().startswith("template")


@dataclass
class Unit:
    """One nvcc run: ``sources`` of one module compiled as one translation unit with
    ``flags`` (:func:`cutlass_layout.checks.nvcc_probe.unit_sizes`: ``device``, ``by_instantiation``,
    ``show``, ``blank``, ``alias_lines``), and ``want``: ``(source, line, tactic)`` of each number
    to read (with ``alias_lines``, ``line`` is ``(line, alias line)``)."""

    sources: list[Path]
    flags: list[str]
    want: list[tuple[Path, Any, Tactic]]  # Any: the line, or with alias_lines a pair
    device: bool = False
    by_instantiation: bool | None = None
    show: str | None = None
    blank: dict = field(default_factory=dict)
    alias_lines: bool = False


def verify_audit(
    result: AuditResult,
    source=None,
    *,
    sample: int | None = None,
    jobs: int | None = None,
    cuda_path=None,
    nvcc: str | None = None,
) -> AuditVerification:
    """Compile a sample of ``result``'s tactics (:func:`sample_tactics`) with nvcc and compare
    each one's kernel, mainloop and epilogue ``sizeof(SharedStorage)`` (bytes) and stage count.

    Args:
        result: an audit of ``source`` (as :func:`cutlass_layout.api.audit` took it: a
            flashinfer install or CUTLASS's kernel library).
        sample: tactics per family (default: every over-capacity and exact-fit tactic, and
            :data:`SPREAD` of the rest).
        jobs: nvcc units at once (default: the CPUs).
        cuda_path: the CUDA whose ``bin/nvcc`` to run (default: nvcc on ``PATH``).

    Compiled, each from what the install itself compiles: TensorRT-LLM's MoE launchers
    (``moe``: the generated sources, SM120, SM100, SM103 and SM90; the SM90 mixed-input
    function templates through nvcc's device front end), its SM80-path MoE kernels
    (``moe_sm80``: ``genericMoeGemmKernelLauncher`` instantiated as ``moe_gemm_kernels_*.cu``
    do, tests/test_moe_sm80.py), CUTLASS's library kernels (``cutlass_library``: the
    library emitter's C++, tests/test_library_audit.py) and a family whose every kernel is one
    alias in a header, of a function template or of a struct a macro defines (flashinfer's
    dense SM100 FP8, BF16, groupwise-scaled and SVDQuant GEMMs, SM120's SVDQuant GEMM
    (tests/test_audit_sm120_svdquant.py); the dense FP4 and MXFP8 GEMMs;
    SM90's grouped GEMM, one alias per branch of a runtime ``if``:
    :func:`_template_units`, tests/test_audit_sm100_gemm.py). Each other family is one line of
    ``not_verified``.

    Returns:
        An :class:`~cutlass_layout.model.AuditVerification`.

    Raises:
        BadInput: nvcc missing or unusable (:func:`cutlass_layout.checks.nvcc_probe.find_nvcc`), a
            ``sample`` under 1.
    """
    from ..errors import BadInput

    if sample is not None and sample < 1:
        raise BadInput(f"sample {sample}: give a positive number of tactics per family")
    nvcc = nvcc or find_nvcc(cuda_path)
    out = AuditVerification(nvcc=nvcc)
    chosen = sample_tactics(result.tactics, sample)
    scratch = Path(tempfile.mkdtemp(prefix="cutlass-layout-nvcc-"))
    try:
        units = []
        if result.provenance.get("library") == LIBRARY_FAMILY:
            units += _library_units(chosen.pop(LIBRARY_FAMILY, []), result, source, cuda_path, scratch)
        else:
            if chosen.get(MOE) or chosen.get(SM80_FAMILY):
                units += _install_units(
                    chosen.pop(MOE, []), chosen.pop(SM80_FAMILY, []), result, source, cuda_path, jobs, scratch, out
                )
            for family in [f for f in chosen if all(_in_a_template(t) for t in chosen[f])]:
                units += _template_units(chosen.pop(family), result, source, cuda_path, scratch, out)
        for family in chosen:
            out.not_verified.append(
                f"{family} (the nvcc check reads the numbers of TensorRT-LLM's MoE "
                "launchers, kernels declared in function templates or macro-made structs "
                "of headers and CUTLASS's library kernels only: this family's are not "
                "read yet)"
            )
        run_units(units, nvcc, jobs, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    order = {t.id: i for i, t in enumerate(result.tactics)}
    out.compared.sort(key=lambda i: order.get(i, len(order)))
    out.disagreements.sort(key=lambda d: order.get(d.split(": ", 1)[0], len(order)))
    return out


def run_units(units: list[Unit], nvcc: str, jobs: int | None, out: AuditVerification) -> None:
    """Run ``units`` (``jobs`` at once) and compare each number wanted, into ``out``."""
    if not units:
        return
    tactics = [t for u in units for _, _, t in u.want]
    out.families = len({t.family for t in tactics})
    out.sources = len({p for u in units for p in u.sources})
    out.units = len(units)
    out.compared = [t.id for t in tactics]
    at_once = max(1, min(default_jobs(jobs), len(units)))
    t0 = time.perf_counter()
    with step(
        f"nvcc: {len(tactics)} tactic(s) from {out.sources} source(s) in {len(units)} unit(s), "
        f"{at_once} at a time (nvcc's front end only: nothing built or run)"
    ):
        with Schedule(at_once, threads=True) as s:  # each waits on its nvcc child
            done = dict(s.run((i, run_unit, (u, nvcc)) for i, u in enumerate(units)))
        answers = [done[i] for i in range(len(units))]
        for i, (_, messages) in enumerate(answers):
            if killed(messages) and at_once > 1:  # killed beside others (memory): again alone
                with step(f"nvcc: a unit of {len(units[i].sources)} source(s) again, alone ({killed(messages)})"):
                    answers[i] = run_unit(units[i], nvcc)
    out.seconds = round(time.perf_counter() - t0, 1)
    for unit, (got, messages) in zip(units, answers):
        why = unanswered(messages)  # a killed (or unrunnable) step is no answer about the kernels it did not show
        skipped = set()
        for path, line, t in unit.want:
            theirs = got.get(path, {}).get(line)
            if theirs is None and why is not None:
                skipped.add(t.id)
                continue
            mine = (t.kernel_bytes, t.mainloop_bytes, t.epilogue_bytes, t.stages)
            if theirs is not None and t.family == LIBRARY_FAMILY and theirs[3] == -1:
                theirs = (*theirs[:3], t.stages)  # a sparse mainloop: StagesA/StagesB, no Stages
            if theirs is None:
                err = first_error(messages) or "and no error"
                out.disagreements.append(f"{t.id}: nvcc shows no numbers for it ({err})")
            elif tuple(theirs) != mine:
                out.disagreements.append(
                    f"{t.id}: audit (kernel, mainloop, epilogue, stages) = {mine}, nvcc {tuple(theirs)}"
                )
        if skipped:
            out.compared = [i for i in out.compared if i not in skipped]
            out.not_verified.append(
                f"{len(skipped)} tactic(s) of {', '.join(sorted({t.family for _, _, t in unit.want}))} "
                f"not compared: nvcc's {why} on a unit of {len(unit.sources)} source(s)"
                + (", run alone as well" if at_once > 1 else "")
            )


def _install_context(result: AuditResult, source, cuda_path) -> tuple:
    """What compiling an install's sources needs: ``(install, its JIT modules for the audit's
    arch, the generated sources' root, module by source path, flags(module))``, ``flags`` nvcc's
    for a module's source (:func:`~cutlass_layout.checks.nvcc_probe.nvcc_flags`, and the TVM FFI
    headers the audit used)."""
    from ..engine import loop as engine
    from ..sources.flashinfer_jit import jit_modules
    from ..sources.flashinfer import resolve_flashinfer
    from ..subjects.config import ARCHS

    install = resolve_flashinfer(source)
    tgt = engine.target(install.tree, cuda_path)
    arch = AUDIT_ARCHS[result.arch]
    builds = jit_modules(install, arch, cuda_version=tgt.cuda.version)
    assert builds is not None  # None: only without a run (run=False)
    modules = builds.modules
    tvm = (result.provenance.get("tvm_ffi") or {}).get("include")

    def flags(mod):
        return nvcc_flags(mod, install.tree, ARCHS[arch]) + (["-isystem", tvm] if tvm else [])

    return (
        install,
        modules,
        Path(result.provenance["generated_root"] or "."),
        {p: m for m in modules for p in m.generated},
        flags,
    )


def _install_units(
    moe: list[Tactic],
    sm80: list[Tactic],
    result: AuditResult,
    source,
    cuda_path,
    jobs: int | None,
    scratch: Path,
    out: AuditVerification,
) -> list[Unit]:
    """The units of a flashinfer install's sampled MoE tactics: each generated source's module
    with its flags, at most ``jobs`` units per module and kind of front end; the SM80-path
    kernels in one unit of their own."""
    install, modules, gen_root, of_path, flags = _install_context(result, source, cuda_path)

    every: dict[Path, set[int]] = {}  # every tactic's line per source: those not sampled are blanked
    for t in result.tactics:
        if t.family == MOE and t.line:
            every.setdefault(gen_root / t.file, set()).add(t.line)
    groups: dict[tuple, dict[Path, list[Tactic]]] = {}
    for t in moe:
        path = gen_root / t.file
        mod = of_path.get(path)
        if mod is None or not t.line:
            out.disagreements.append(f"{t.id}: its source {t.file} is not one the install's JIT builds now")
            continue
        device = _explicit_instantiation(path.read_text(), t.line)
        groups.setdefault((mod.name, device), {}).setdefault(path, []).append(t)
    units = []
    for (name, device), by_source in groups.items():
        paths = sorted(by_source)
        n = max(1, min(default_jobs(jobs), len(paths), math.ceil(sum(map(len, by_source.values())) / UNIT_TACTICS)))
        for i in range(n):
            part = paths[i::n]
            units.append(
                Unit(
                    part,
                    flags(next(m for m in modules if m.name == name)),
                    [(p, t.line, t) for p in part for t in by_source[p]],
                    device=device,
                    blank={p: every.get(p, set()) - {t.line for t in by_source[p]} for p in part},
                )
            )
    if sm80:
        mod = next(m for m in modules if m.name.startswith("fused_moe"))
        path = scratch / "cl_sm80.cu"
        text, at = sm80_instantiations(sm80)
        path.write_text(text)
        units.append(
            Unit(
                [path],
                flags(mod),
                [(path, line, t) for line, t in at.items()],
                by_instantiation=True,
                show=show_header(cutlass2=True),
            )
        )
    return units


def _in_a_template(t: Tactic) -> bool:
    """Whether a tactic's kernel is declared in a header, one alias of one path: in a function
    template a source instantiates explicitly, itself or through a macro (flashinfer's dense
    GEMMs: ``genericFp8GemmKernelLauncherSm100<...>::GemmKernel``), or in a struct a macro of
    the header defines where a source calls it (the dense FP4 and MXFP8 GEMMs:
    ``DeviceGemmFp4GemmSm100___nv_bfloat16_128_256_256_2_1_1_2SM::GemmKernel``); one alias of
    each path to a kernel where a template declares several under a runtime branch (SM90's
    ``CutlassSegmentGEMMSM90Run<...>::GemmKernel [weight_column_major]``)."""
    return bool(
        t.launcher_file
        and t.launcher_line
        and t.line
        and not Path(t.launcher_file).is_absolute()
        and re.fullmatch(r"[\w:]+(?:<.*>)?::\w+(?: \[[^\]]*\])?", t.name or "", re.S)
    )


def _alias_of(t: Tactic) -> str:
    """The alias a header's tactic is named by (``GemmKernel`` of ``X<...>::GemmKernel [path]``)."""
    assert t.name is not None  # _in_a_template: a name
    return re.sub(r" \[[^\]]*\]$", "", t.name).rsplit("::", 1)[-1]


def _template_units(
    tactics: list[Tactic], result: AuditResult, source, cuda_path, scratch: Path, out: AuditVerification
) -> list[Unit]:
    """The units of a family whose kernels are declared in headers, in function templates or
    macro-made structs (:func:`_in_a_template`): each source's module flags, with a copy of the
    headers' folder found first, in which each launcher shows its kernel's numbers and its
    alias line right after declaring it (:data:`~cutlass_layout.checks.nvcc_probe.SIZES_SHOW`;
    read per instantiation line and alias line: one macro call can declare two kernels);
    nvcc's device front end instantiates what the sources instantiate explicitly or expand
    (tests/test_audit_sm100_gemm.py does this by hand)."""
    from ..cpp.text import ADAPTER_KERNEL, ANY_ALIAS_RE
    from ..cpp.brackets import statement_end, blank_comments

    install, _, gen_root, of_path, module_flags = _install_context(result, source, cuda_path)
    include = scratch / f"include-{tactics[0].family}"
    copied: dict[Path, Path] = {}  # header -> its copy
    by_source: dict[Path, list[Tactic]] = {}
    for t in tactics:
        path, header = gen_root / t.file, install.root / t.launcher_file
        mod = of_path.get(path)
        if mod is None:
            out.disagreements.append(f"{t.id}: its source {t.file} is not one the install's JIT builds now")
            continue
        if header not in copied:
            flags = mod.clang_flags()
            roots = [Path(flags[i + 1]) for i, f in enumerate(flags[:-1]) if f in ("-I", "-isystem")]
            roots += [Path(f[2:]) for f in flags if f.startswith("-I") and len(f) > 2]
            root = next((r for r in roots if header.is_relative_to(r)), None)
            if root is None:
                out.disagreements.append(
                    f"{t.id}: its launcher's header {t.launcher_file} is on none of the module's include paths"
                )
                continue
            top = header.relative_to(root).parts[0]
            if not (include / top).exists():
                shutil.copytree(root / top, include / top)
            copied[header] = include / header.relative_to(root)
        by_source.setdefault(path, []).append(t)
    shown: dict[Path, dict[int, str]] = {}
    for t in (t for ts in by_source.values() for t in ts):  # after each kernel alias, once
        assert t.launcher_file and t.launcher_line  # _in_a_template
        shown.setdefault(copied[install.root / t.launcher_file], {})[t.launcher_line] = _alias_of(t)
    for copy, lines in shown.items():
        text = copy.read_text()
        clean = blank_comments(text)
        starts = [0] + [m.end() for m in re.finditer(r"\n", clean)]
        inserts = []
        for line, kernel in lines.items():
            m = ANY_ALIAS_RE.search(clean, starts[line - 1])
            end = statement_end(clean, m.end()) if m else None
            if m is None or end is None:
                continue
            # the kernel alias itself, or a device adapter's alias whose GemmKernel the body
            # reads (the re-host's ADAPTER_KERNEL: flashinfer's SVDQuant run_tactic<Config>)
            subject = m.group(1) if m.group(1) == kernel else f"typename {m.group(1)}::{ADAPTER_KERNEL}"
            # shown with its alias line: one call of a macro can declare two kernels (SM120's
            # dense FP4: GemmKernelDefault and a stream-K one)
            inserts.append((end, f' static_assert(cl_sizes<{subject}, {line}>::value == 0, "");'))
        for at, piece in sorted(inserts, reverse=True):
            text = text[:at] + piece + text[at:]
        copy.write_text(text)
    units = []
    for path, ts in sorted(by_source.items()):
        units.append(
            Unit(
                [path],
                [f"-I{include}", *module_flags(of_path[path])],
                [(path, (t.line, t.launcher_line), t) for t in ts],
                device=True,
                by_instantiation=True,
                show=SIZES_SHOW,
                alias_lines=True,
            )
        )
    return units


def sm80_instantiations(tactics: list[Tactic]) -> tuple[str, dict[int, Tactic]]:
    """A source that instantiates each SM80-path MoE tactic's launcher as the install's
    ``moe_gemm_kernels_*.cu`` runners do (``genericMoeGemmKernelLauncher<T, WeightType,
    OutputType, Arch, QuantOp, EpilogueTag, ThreadblockShape, WarpShape, Stages>``,
    ``moe_gemm_template_dispatch.h``; the tactic's config: ``arch_tag``, ``quant``, ``warp``),
    and ``{line: tactic}`` of each explicit instantiation."""
    from ..installs.moe_sm80 import DISPATCH, ELEMENT_KINDS, LAUNCHER

    cpp = {v: k for k, v in ELEMENT_KINDS.items()}
    lines = [
        f'#include "tensorrt_llm/kernels/cutlass_kernels/{DISPATCH}"',
        "namespace tensorrt_llm::kernels::cutlass_kernels_oss {",
    ]
    at = {}
    for t in tactics:
        # laid out here (verify_audit takes an audit of the install, not its JSON)
        assert t.report is not None and t.name is not None and t.tile is not None
        assert t.a is not None and t.b is not None and t.out is not None
        cfg = t.report.config
        tb, wp = t.tile, cfg["warp"]
        m = re.search(r"_Stages(\d+)_", t.name)
        assert m is not None  # the dispatch's stage count, as the id names it
        stages = m.group(1)
        lines.append(
            f"template struct {LAUNCHER}<{cpp[t.a]}, {cpp[t.b]}, {cpp[t.out]}, "
            f"cutlass::arch::{cfg['arch_tag']}, cutlass::WeightOnlyQuantOp::{cfg['quant']}, "
            f"tensorrt_llm::cutlass_extensions::EpilogueOpDefault, cutlass::gemm::GemmShape<{tb[0]}, "
            f"{tb[1]}, {tb[2]}>, cutlass::gemm::GemmShape<{wp[0]}, {wp[1]}, {wp[2]}>, {stages}>;"
        )
        at[len(lines)] = t
    lines.append("}")
    return "\n".join(lines) + "\n", at


def _library_units(tactics: list[Tactic], result: AuditResult, source, cuda_path, scratch: Path) -> list[Unit]:
    """One unit of CUTLASS's library kernels sampled: the library's own emitted C++
    (:func:`library_instances`), host pass."""
    if not tactics:
        return []
    from ..installs.kernel_library import Selection, enumerate_kernels
    from ..engine import loop as engine
    from ..sources.library import resolve_kernel_library

    lib = resolve_kernel_library(source)
    tgt = engine.target(lib.tree, cuda_path)
    names = [t.id for t in tactics]
    kernels = {
        k.name: k
        for k in enumerate_kernels(lib, result.arch, Selection(kernels=",".join(names)), cuda_version=tgt.cuda.version)[
            0
        ]
    }
    path = scratch / "cl_library.cu"
    path.write_text(library_instances([kernels[n] for n in names]))
    return [Unit([path], library_flags(lib, result.arch), [(path, j, t) for j, t in enumerate(tactics)], show="")]


def library_flags(lib, arch: str) -> list[str]:
    """nvcc's flags for the library's emitted instances for ``arch``: its arch, the tree, the
    library's ``tools/util/include`` (as CUTLASS's CMake gives the profiler's files:
    :data:`cutlass_layout.installs.kernel_library.UTIL_HEADER`), and the tool's declarations of CUDA
    headers a toolkit may lack (``curand_kernel.h``, which the utilities include)."""
    from ..cpp.clang import STUB_DIR
    from ..installs.kernel_library import LIBRARY_ARCHS
    from ..subjects.config import ARCHS

    flags = [
        "-std=c++17",
        f"-arch={ARCHS[LIBRARY_ARCHS[arch][2]]}",
        "-w",
        "--expt-relaxed-constexpr",
        f"-I{lib.tree.include_root}",
    ]
    return flags + [f"-I{d}" for d in (lib.util_include, STUB_DIR) if d is not None]


def library_instances(kernels) -> str:
    """The library's emitted instances of ``kernels`` (:class:`~cutlass_layout.installs.kernel_library.LibraryKernel`,
    their includes first) and, for kernel ``j``, ``cl_show<j, sizeof(<name>_base::SharedStorage),
    sizeof(<name>_mainloop::SharedStorage), sizeof(<name>_epilogue::SharedStorage), Stages>``
    named in an error (a mainloop without ``DispatchPolicy::Stages``, the sparse ones with
    ``StagesA``/``StagesB``: -1); with CUTLASS's utilities where an instance uses them, as the
    profiler's own wrapper includes them (:func:`cutlass_layout.installs.kernel_library.includes_head`)."""
    from ..installs.kernel_library import includes_head

    out = [
        includes_head(kernels),
        "#include <cstddef>\n#include <type_traits>\n",
        SHOW_TEMPLATE,
        "template <class T, class = void> struct cl_stages { static constexpr int value = -1; };\n"
        "template <class T> struct cl_stages<T, std::void_t<decltype(T::DispatchPolicy::Stages)>> {\n"
        "  static constexpr int value = T::DispatchPolicy::Stages; };\n",
    ]
    out += [k.instance for k in kernels]
    out.append("#if !defined(__CUDA_ARCH__)\n")
    for j, k in enumerate(kernels):
        n = k.name
        out.append(
            f"constexpr int cl_shown_{j} = cl_show<{j}, sizeof({n}_base::SharedStorage), "
            f"sizeof({n}_mainloop::SharedStorage), sizeof({n}_epilogue::SharedStorage), "
            f"cl_stages<{n}_mainloop>::value>::the_sizes_are_in_this_name;\n"
        )
    out.append("#endif\n")
    return "".join(out)


def run_unit(unit: Unit, nvcc: str):
    """One unit's numbers and messages (:func:`cutlass_layout.checks.nvcc_probe.unit_sizes`), in a
    scratch folder of its own."""
    work = Path(tempfile.mkdtemp(prefix="cutlass-layout-nvcc-"))
    try:
        return unit_sizes(
            unit.sources,
            unit.flags,
            work,
            device=unit.device,
            by_instantiation=unit.by_instantiation,
            show=unit.show,
            nvcc=nvcc,
            blank=unit.blank,
            alias_lines=unit.alias_lines,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


__all__ = [
    "SPREAD",
    "Unit",
    "library_flags",
    "library_instances",
    "sample_tactics",
    "sm80_instantiations",
    "verify_audit",
]
