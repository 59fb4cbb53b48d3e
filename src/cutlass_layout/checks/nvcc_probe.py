"""Read nvcc's own numbers for the kernels of real sources, without building or running them.

An audit's generated sources are compiled as flashinfer's JIT compiles them (its defines and
include paths: :func:`nvcc_flags`) through one front end of nvcc only, with one header added
(:func:`show_header`): TensorRT-LLM's check macros (``TLLM_CHECK``, ``TLLM_CHECK_WITH_INFO``,
``TLLM_THROW``; ``TLLM_LOG_ERROR``), which a launcher uses right after declaring
``GemmKernel``, are redefined to instantiate ``cl_show<line, sizeof(kernel SharedStorage),
sizeof(mainloop), sizeof(epilogue), Stages>`` and ask it for a member it does not have.
nvcc's error message then spells the numbers it computed (``error: class "cl_show<60,
102400UL, 83968UL, 17408UL, 3>" has no member ...``): no device code, no link, no run, no GPU.

Two front ends, the steps ``nvcc --dryrun`` lists:

* :func:`host_pass`: the host ``gcc -E`` and ``cudafe++`` (launcher macros that define
  functions: TensorRT-LLM's ``INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM``, SM120, SM100,
  SM103 and SM90); the line of a number is the macro call's ``__LINE__``;
* :func:`device_front_end`: the device ``gcc -E`` and ``cicc`` (function templates a source
  instantiates explicitly, TensorRT-LLM's SM90 mixed-input launchers: ``cudafe++`` leaves
  those to the host compiler, ``cicc`` instantiates them); the line is the last
  ``at line N of <source>`` of the error's instantiation notes.

Several sources of one module (the same flags) are compiled as one unit (:func:`one_unit`),
so their headers are parsed once; the instantiations nobody asked about are blanked out of
it (:func:`blank_statements`), so that nvcc instantiates only the kernels asked about.
Mirrors FACTS.md "Reading nvcc's numbers without linking or running".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from ..errors import BadInput
from ..cpp.brackets import blank_comments

#: TensorRT-LLM's check macros a launcher of a macro (host pass) calls after ``GemmKernel``
HOST_MACROS = ("TLLM_CHECK", "TLLM_CHECK_WITH_INFO", "TLLM_THROW")
#: ... and those of the SM90 mixed-input launchers (``TLLM_CHECK_WITH_INFO(total_routed_tokens
#: >= 0, ...)`` in the MoE ``_impl``, ``TLLM_LOG_ERROR`` on a short workspace in fpA_intB's)
DEVICE_MACROS = ("TLLM_CHECK_WITH_INFO", "TLLM_LOG_ERROR")
_MACRO_HEADERS = {"TLLM_LOG_ERROR": "tensorrt_llm/common/logger.h"}
#: One kernel's numbers in nvcc's message: line, kernel, mainloop, epilogue bytes, stages
SHOWN = re.compile(r"cl_show<(\d+), (\d+)UL, (\d+)UL, (\d+)UL, (-?\d+)>")
#: ``cl_show``'s line of a source of a unit: ``index * LINES + line`` (:func:`one_unit`)
LINES = 1000000
#: The class whose name spells the numbers (:data:`SHOWN`): asking it for any member is an error
SHOW_TEMPLATE = (
    "template <int Line, unsigned long Kernel, unsigned long Mainloop, unsigned long Epilogue, "
    "int Stages>\nstruct cl_show {};\n"
)
#: A header for code that shows a 3.x kernel's numbers itself: ``static_assert(cl_sizes<GemmKernel,
#: LINE>::value == 0, "");`` put right after its alias (in a copy of the header declaring it) is an
#: error naming ``cl_show<LINE, kernel, mainloop, epilogue, stages>`` (``LINE`` defaults to 0: the
#: instantiation notes then say which source line it was); a type without ``SharedStorage``
#: shows nothing.
SIZES_SHOW = (
    "#pragma once\n#include <type_traits>\n"
    + SHOW_TEMPLATE
    + "template <class K, int Line = 0, class = void> struct cl_sizes { static constexpr int value = 0; };\n"
    "template <class K, int Line>\n"
    "struct cl_sizes<K, Line, std::void_t<typename K::SharedStorage>> {\n"
    "  static constexpr int value = cl_show<Line, sizeof(typename K::SharedStorage),\n"
    "      sizeof(typename K::CollectiveMainloop::SharedStorage),\n"
    "      sizeof(typename K::CollectiveEpilogue::SharedStorage),\n"
    "      K::CollectiveMainloop::DispatchPolicy::Stages>::the_sizes_are_in_this_name;\n};\n"
)


def show_header(macros: Iterable[str] = HOST_MACROS, *, cutlass2: bool = False) -> str:
    """The header that makes each of ``macros`` spell its ``GemmKernel``'s numbers in an error
    (``cl_show<CL_SOURCE_INDEX * 1000000 + __LINE__, kernel, mainloop, epilogue, stages>``,
    bytes; a ``GemmKernel`` without ``SharedStorage`` shows nothing). ``cutlass2``: a CUTLASS
    2.x kernel, whose ``Mma`` and ``Epilogue`` and ``Mma::kStages`` stand where a 3.x kernel
    has collectives and a dispatch policy (TensorRT-LLM's SM80-path ``MoeFCGemm``)."""
    macros = list(macros)
    mma, epi, stages = (
        ("Mma", "Epilogue", "K::Mma::kStages")
        if cutlass2
        else ("CollectiveMainloop", "CollectiveEpilogue", "K::CollectiveMainloop::DispatchPolicy::Stages")
    )
    includes = ["tensorrt_llm/common/assert.h", *(_MACRO_HEADERS[m] for m in macros if m in _MACRO_HEADERS)]
    return (
        "#pragma once\n" + "".join(f'#include "{i}"\n' for i in includes) + "#include <type_traits>\n"
        "struct cl_none {};\n"
        "using GemmKernel = cl_none;  // before a launcher declares its own\n"
        + SHOW_TEMPLATE
        + "template <class K, int Line, class = void> struct cl_sizes { static constexpr int value = 0; };\n"
        "template <class K, int Line>\n"
        f"struct cl_sizes<K, Line, std::void_t<typename K::SharedStorage, typename K::{mma}>> {{\n"
        "  static constexpr int value = cl_show<Line, sizeof(typename K::SharedStorage),\n"
        f"      sizeof(typename K::{mma}::SharedStorage),\n"
        f"      sizeof(typename K::{epi}::SharedStorage),\n"
        f"      {stages}>::the_sizes_are_in_this_name;\n"
        "};\n"
        + "".join(f"#undef {m}\n" for m in macros)
        + "#ifndef CL_SOURCE_INDEX  // which source of a unit of several (one_unit)\n"
        "#define CL_SOURCE_INDEX 0\n"
        "#endif\n"
        f"#define CL_SHOW do {{ static_assert(cl_sizes<GemmKernel, CL_SOURCE_INDEX * {LINES} + __LINE__>"
        '::value == 0, ""); } while (0)\n' + "".join(f"#define {m}(...) CL_SHOW\n" for m in macros)
    )


def find_nvcc(cuda_path=None) -> str:
    """The nvcc to ask: ``<cuda_path>/bin/nvcc`` where ``cuda_path`` is a CUDA root, else
    (none, or ``"pip"``: the CUDA header wheels, which have no nvcc) the one on ``PATH``;
    checked by running ``nvcc --version``.

    Raises:
        BadInput: no nvcc there, or one that does not run.
    """
    if cuda_path is not None and str(cuda_path) != "pip":
        there = Path(cuda_path).expanduser() / "bin" / "nvcc"
        where = f"the CUDA at {cuda_path} (cuda_path) has no bin/nvcc"
        nvcc = str(there) if there.is_file() and os.access(there, os.X_OK) else None
    else:
        nvcc = shutil.which("nvcc")
        where = "nvcc is not on PATH"
    if nvcc is None:
        raise BadInput(f"verifying with nvcc needs nvcc: {where}")
    try:
        proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInput(f"nvcc at {nvcc} does not run: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise BadInput(f"nvcc at {nvcc} does not run: {last[0]}")
    return nvcc


def nvcc_flags(module, tree, arch: str = "sm_120a") -> list[str]:
    """nvcc's flags for a source of a flashinfer JIT module (``module``: a
    :class:`~cutlass_layout.sources.flashinfer_jit.JitModule`; its defines and include paths, as its
    JIT passes them) for ``arch`` (``sm_120a``), with the CUTLASS tree's include root and the
    cuBLAS stand-ins where the CUDA toolkit has none."""
    from ..cpp.clang import STUB_DIR

    return [
        "-std=c++17",
        f"-arch={arch}",
        "-w",
        "--expt-relaxed-constexpr",
        f"-I{tree.include_root}",
        *module.clang_flags(),
        f"-I{STUB_DIR}",
    ]


def _steps(nvcc: str, source: Path, flags: list[str], work: Path) -> tuple[list[str], str | None]:
    """The commands ``nvcc --dryrun`` lists for compiling ``source`` with ``flags``, and nvcc's
    own folder as it names it (``_HERE_=/usr/local/cuda-13.0/bin``: where its ``cudafe++``
    lies, also when the ``nvcc`` asked is a wrapper script in another folder), or None."""
    listed = subprocess.run(
        [nvcc, "--dryrun", *flags, "-c", "-o", str(work / "x.o"), str(source)],
        capture_output=True,
        text=True,
        cwd=work,
        stdin=subprocess.DEVNULL,
    ).stderr
    steps = [ln[3:] for ln in listed.splitlines() if ln.startswith("#$ ")]
    if not steps:
        raise BadInput(f"nvcc --dryrun listed no steps: {listed.strip()[-300:]}")
    here = next((s.split("=", 1)[1] for s in steps if s.startswith("_HERE_=")), None)
    return steps, here


#: The line :func:`run_probe` adds where a step was killed (``cicc`` of a large unit can run out of
#: memory and be killed: docs/performance.md): a kill is no answer about the kernels, so the numbers it
#: did not show are not compared (:func:`killed`).
KILLED = "nvcc-step-killed"


#: The line :func:`run_probe` adds where a step could not be run at all (bash's exit status 126 or
#: 127: a ``cudafe++`` that is neither in nvcc's folder nor on ``PATH``): no answer either.
NOT_RUN = "nvcc-step-not-run"


def run_probe(script: str, nvcc: str, work: Path, here: str | None = None) -> str:
    """What the step ``script`` prints, run by bash in ``work`` with nvcc's own folder
    (``here``, as its ``--dryrun`` names it) and the ``nvcc`` asked's folder first on
    ``PATH``; a line :data:`KILLED` or :data:`NOT_RUN` added where the step was killed or
    could not be run."""
    path = ":".join(dict.fromkeys([*([here] if here else []), str(Path(nvcc).parent), "/usr/bin", "/bin"]))
    proc = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=work,
        stdin=subprocess.DEVNULL,
        env={"PATH": path, "TMPDIR": str(work)},
    )
    out = proc.stdout + proc.stderr
    step = Path(script.strip().split("\n")[-1].split()[0].strip('"')).name
    if proc.returncode in (126, 127):  # bash: the command was not found, or cannot be executed
        out += f"\n{NOT_RUN}: {step} could not be run ({'not found in ' + path if proc.returncode == 127 else 'not executable'})\n"
        return out
    sig = -proc.returncode if proc.returncode < 0 else proc.returncode - 128 if proc.returncode > 128 else 0
    if sig:  # bash gives 128 + N for a step killed by signal N
        out += f"\n{KILLED}: {step} was killed by signal {sig}{' (out of memory?)' if sig == 9 else ''}\n"
    return out


def killed(messages: str) -> str | None:
    """The line saying a step of the run that printed ``messages`` was killed, or None."""
    m = re.search(rf"^{KILLED}: (.*)$", messages, re.M)
    return m.group(1) if m else None


def unanswered(messages: str) -> str | None:
    """Why the run that printed ``messages`` gave no answer about the kernels it did not
    show (a step killed, or one that could not be run), or None where every step ran."""
    m = re.search(rf"^(?:{KILLED}|{NOT_RUN}): (.*)$", messages, re.M)
    return m.group(1) if m else None


def host_pass(source: Path, flags: list[str], work: Path, nvcc: str | None = None) -> str:
    """What nvcc's host pass of ``source`` prints (its messages): the host ``gcc -E`` and
    ``cudafe++`` steps ``nvcc --dryrun`` lists for ``flags``, run in ``work`` (``nvcc``:
    default :func:`find_nvcc`).

    Raises:
        BadInput: no usable nvcc, or its ``--dryrun`` lists no such steps.
    """
    nvcc = nvcc or find_nvcc()
    steps, here = _steps(nvcc, source, flags, work)
    try:
        host = [
            next(s for s in steps if s.startswith("gcc") and " -E " in s and "__CUDA_ARCH__=" not in s),
            next(s for s in steps if s.startswith("cudafe++")),
        ]
    except StopIteration:
        raise BadInput(f"nvcc --dryrun lists no host gcc -E and cudafe++ steps ({nvcc})") from None
    return "".join(run_probe(step, nvcc, work, here) for step in host)


def device_front_end(source: Path, flags: list[str], work: Path, nvcc: str | None = None) -> str:
    """What nvcc's device front end prints for ``source``: the device ``gcc -E`` (the one
    that defines ``__CUDA_ARCH__``; of several, the arch-specific one, ``sm_100a``'s rather than
    the ``compute_100`` nvcc 13 adds) and ``cicc``, the steps ``nvcc --dryrun`` lists. Unlike
    :func:`host_pass`'s ``cudafe++``, ``cicc`` instantiates the function templates a source
    instantiates explicitly. ``cicc`` reads the module id ``cudafe++`` would write: any name
    does.

    Raises:
        BadInput: no usable nvcc, or its ``--dryrun`` lists no such steps.
    """
    nvcc = nvcc or find_nvcc()
    steps, here = _steps(nvcc, source, flags, work)
    try:
        device = [i for i, s in enumerate(steps) if s.startswith("gcc") and " -E " in s and "__CUDA_ARCH__=" in s]
        # nvcc 13 compiles -arch=sm_100a as compute_100 too (its PTX): the arch-specific pass
        # is the one the source is built for (flashinfer's arch_condition.h refuses the other)
        pre = next((i for i in device if "__CUDA_ARCH_SPECIFIC__=" in steps[i]), device[0] if device else None)
        if pre is None:
            raise StopIteration
        cicc = next(s for s in steps[pre:] if s.split()[0].strip('"').endswith("cicc"))
        cicc_path = next(s.split("=", 1)[1] for s in steps if s.startswith("CICC_PATH="))
    except StopIteration:
        raise BadInput(f"nvcc --dryrun lists no device gcc -E and cicc steps ({nvcc})") from None
    module_id = re.search(r'--module_id_file_name "([^"]+)"', cicc)
    if module_id:
        Path(module_id.group(1)).write_text("cl_probe")
    return run_probe(steps[pre] + "\n" + cicc.replace('"$CICC_PATH/cicc"', f'"{cicc_path}/cicc"'), nvcc, work, here)


def blank_statements(text: str, lines: Iterable[int]) -> str:
    """``text`` with the statement that begins on each of ``lines`` (1-based: a launcher
    macro's call, an explicit instantiation) replaced by spaces, newlines kept (so every
    other line keeps its number). A statement runs from just after the ``;``, brace or
    preprocessor line before it to its ``;`` outside brackets."""
    clean = blank_comments(text)
    starts = [0] + [m.end() for m in re.finditer(r"\n", clean)]
    out = list(text)
    for line in sorted(set(lines)):
        if not 1 <= line <= len(starts):
            continue
        at = starts[line - 1]
        before = max(clean.rfind(c, 0, at) for c in ";{}")
        pp = max((m.end() for m in re.finditer(r"(?m)^[ \t]*#[^\n]*\n", clean[:at])), default=0)
        begin = max(before + 1, pp)
        depth, end = 0, None
        for i in range(at, len(clean)):
            c = clean[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == ";" and depth <= 0:
                end = i
                break
        if end is None:
            continue
        for i in range(begin, end + 1):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def one_unit(sources: list[Path], work: Path, blank: dict | None = None) -> Path:
    """One translation unit of several generated sources of one module (the same flags), so
    that one nvcc run parses the headers they share once: each source's own text in turn,
    after ``#line 1 "<source>"`` (nvcc's messages name the source and its lines), with
    ``CL_SOURCE_INDEX`` its index (a launcher of source ``i`` at line ``n`` shows as
    ``cl_show<i * 1000000 + n, ...>``, :func:`show_header`). An ``#include`` line an earlier
    source has is left blank (the launcher ``.inl`` files have no include guard). ``blank``:
    ``{source: lines}``, statements to leave out (:func:`blank_statements`)."""
    seen: set[str] = set()
    parts = []
    for i, source in enumerate(sources):
        text = source.read_text()
        if blank and blank.get(source):
            text = blank_statements(text, blank[source])
        lines = text.split("\n")
        for k, line in enumerate(lines):
            if line.lstrip().startswith("#include"):
                if line.strip() in seen:
                    lines[k] = ""
                seen.add(line.strip())
        parts.append(
            f'#undef CL_SOURCE_INDEX\n#define CL_SOURCE_INDEX {i}\n#line 1 "{source}"\n' + "\n".join(lines) + "\n"
        )
    unit = work / "cl_unit.cu"
    unit.write_text("".join(parts))
    return unit


def shown_by_line(out: str, sources: list[Path]) -> dict[Path, dict[int, tuple[int, ...]]]:
    """``{source: {line: (kernel, mainloop, epilogue, stages)}}`` from a :func:`host_pass`'s
    messages, each ``cl_show``'s line naming its source in the unit (:func:`one_unit`)."""
    got: dict[Path, dict[int, tuple[int, ...]]] = {s: {} for s in sources}
    for m in SHOWN.findall(out):
        index, line = divmod(int(m[0]), LINES)
        if index < len(sources):
            got[sources[index]][line] = tuple(int(x) for x in m[1:])
    return got


def shown_by_instantiation(out: str, sources: list[Path], *, alias_lines: bool = False) -> dict[Path, dict]:
    """``{source: {line: (kernel, mainloop, epilogue, stages)}}`` from a
    :func:`device_front_end`'s messages: each error names a ``cl_show`` and, last in its
    instantiation notes, the line of the source whose explicit instantiation led to it.
    ``alias_lines``: keyed ``(line, shown)`` instead, ``shown`` the ``cl_show``'s own first
    argument (a header's alias line: one call of a macro can declare two kernels)."""
    got: dict[Path, dict] = {s: {} for s in sources}
    for block in re.split(r"\n(?=\S[^\n]*: error: )", out):
        shown = SHOWN.search(block)
        if not shown:
            continue
        for source in sources:
            lines = re.findall(rf"at line (\d+) of \"?{re.escape(str(source))}", block)
            if lines:
                key = (int(lines[-1]), int(shown.group(1))) if alias_lines else int(lines[-1])
                got[source][key] = tuple(int(x) for x in shown.groups()[1:])
    return got


def unit_sizes(
    sources: list[Path],
    flags: list[str],
    work: Path,
    *,
    device: bool = False,
    by_instantiation: bool | None = None,
    show: str | None = None,
    nvcc: str | None = None,
    blank: dict | None = None,
    alias_lines: bool = False,
) -> tuple[dict, str]:
    """What nvcc computes of the kernels of ``sources`` (one module's, compiled as one unit:
    :func:`one_unit`, ``blank`` left out), through its host pass, or with ``device`` its device
    front end.

    ``show``: the header included first (default :func:`show_header` of :data:`HOST_MACROS`,
    with ``device`` :data:`DEVICE_MACROS`; ``""``: none, the sources name ``cl_show``
    themselves). ``by_instantiation`` (default: with ``device``): a number's line is the last
    ``at line N`` of its instantiation notes (:func:`shown_by_instantiation`), not
    ``cl_show``'s own (:func:`shown_by_line`); ``alias_lines``: see :func:`shown_by_instantiation`.

    Returns:
        ``({source: {line: (kernel, mainloop, epilogue, stages)}}, messages)``: bytes, the
        line of each launcher call or explicit instantiation; ``messages`` nvcc's output.

    Raises:
        BadInput: nvcc missing or unusable (:func:`find_nvcc`).
    """
    nvcc = nvcc or find_nvcc()
    if show is None:
        show = show_header(DEVICE_MACROS if device else HOST_MACROS)
    unit = one_unit(list(sources), work, blank)
    flags = [*flags, "-Xcudafe", "--error_limit=100000"]
    if show:
        (work / "cl_show.h").write_text(show)
        flags += ["-include", str(work / "cl_show.h")]
    out = (device_front_end if device else host_pass)(unit, flags, work, nvcc)
    if device if by_instantiation is None else by_instantiation:
        return shown_by_instantiation(out, list(sources), alias_lines=alias_lines), out
    return shown_by_line(out, list(sources)), out


def first_error(messages: str) -> str | None:
    """nvcc's first error that is not a number shown (``cl_show``), in one line; None where
    there is none."""
    for block in re.split(r"\n(?=\S[^\n]*: error: )", messages):
        if ": error" in block and "cl_show<" not in block and "the_sizes_are_in_this_name" not in block:
            return " ".join(block.split())[:300]
    return None


__all__ = [
    "DEVICE_MACROS",
    "HOST_MACROS",
    "SHOWN",
    "SHOW_TEMPLATE",
    "blank_statements",
    "device_front_end",
    "find_nvcc",
    "first_error",
    "host_pass",
    "killed",
    "nvcc_flags",
    "one_unit",
    "show_header",
    "shown_by_instantiation",
    "shown_by_line",
    "unit_sizes",
]
