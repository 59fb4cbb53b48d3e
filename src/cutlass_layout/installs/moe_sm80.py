"""The CUTLASS 2.x grouped kernels TensorRT-LLM's MoE runner falls back to on SM120 (its SM80 path).

On SM120/SM121 ``MoeGemmRunner::dispatchToArch`` (``moe_gemm/moe_gemm_template_dispatch.h``)
sends pure FP8 MoE to ``dispatchMoeGemmToCutlass<..., cutlass::arch::Sm89, ...>`` (no native
SM120 FP8 grouped GEMM) and 16-bit, float and weight-only (16-bit x u4/u8) MoE, which have no
SM120 TMA kernels, to its
"Ampere case", ``dispatchMoeGemmToCutlass<..., cutlass::arch::Sm80, ...>``. Those pick a tile
from ``gemm_config.tile_config_sm80`` in a switch (``CutlassTileConfig`` case ->
``GemmShape`` ThreadblockShape and WarpShape), ``dispatchGemmConfig`` maps the config's stage
count to the template's ``Stages`` in another switch, and ``genericMoeGemmKernelLauncher``
builds ``MoeFCGemm<DefaultGemmGrouped<...>::Mma, ...::Epilogue, ...>``, whose ``SharedStorage``
it launches with. Its guard: ``GemmGrouped::maximum_active_blocks()``
(``cutlass/gemm/device/base_grouped.h``) sets the kernel's dynamic shared memory and asks the
occupancy; a kernel over the device's opt-in limit gets -1, ``queryOccupancyForConfig``
reports occupancy <= 0 for it (flashinfer's autotuner skips such tactics) and a launch fails
``TLLM_CHECK`` "GPU lacks the shared memory resources to run GroupedGEMM kernel".

Everything here is read from the install's own text, never from a table:

* :func:`runners`: the ``template class MoeGemmRunner<...>;`` lines of the runner sources,
  under the ``#ifdef ENABLE_*`` the module defines;
* :func:`overloads`: each ``dispatchMoeGemmToCutlass`` / ``dispatchGemmConfig`` overload, its
  ``enable_if`` condition (evaluated for a runner's types by :func:`holds`) and its switch
  (:func:`tile_cases`, :func:`stage_cases`);
* :func:`arch_on_sm120`: the arch tag ``dispatchToArch`` names for the runner on SM120;
* :func:`candidate_tiles` and :func:`candidate_stages`: ``cutlass_heuristic.cpp``
  ``get_candidate_tiles`` / ``get_candidate_configs`` for ``sm`` 120 (what the runtime tries);
* :func:`kernel_header`: the launcher's type chain re-hosted into a class template of the same
  parameters (its ``using`` declarations up to ``GemmKernel``), so that each kernel is a named
  type laid out through the engine's one loop as a user type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..cpp.preprocessor import active_text, evaluate
from ..cpp.brackets import blank_comments, matching
from ..cpp.arguments import template_args

if TYPE_CHECKING:
    from pathlib import Path

#: The header holding the dispatch (relative to TensorRT-LLM's ``cutlass_kernels`` folder).
DISPATCH = "moe_gemm/moe_gemm_template_dispatch.h"
#: The header of ``isValidAmpereMOESpecialisation`` (same folder).
TRAITS = "moe_gemm/moe_tma_warp_specialized_traits.h"
#: The header declaring ``MoeGemmRunner`` and its ``use_*`` flags (same folder).
RUNNER_HEADER = "include/moe_gemm_kernels.h"
#: The runtime's heuristic (same folder).
HEURISTIC = "cutlass_heuristic.cpp"
#: The runner sources' glob (same folder).
RUNNER_SOURCES = "moe_gemm/moe_gemm_kernels_*.cu"
#: The launcher whose type chain is re-hosted.
LAUNCHER = "genericMoeGemmKernelLauncher"

_RUNNER_RE = re.compile(r"template\s+class\s+MoeGemmRunner\s*<(?P<args>[^;]*)>\s*;")
_SAME_RE = re.compile(r"(?:std::|cutlass::platform::)is_same(?:_v\s*<([^<>]*)>|\s*<([^<>]*)>\s*::\s*value)")
_CASE_RE = re.compile(r"case\s+(?:[\w:]*::)?CutlassTileConfig::(\w+)\s*:")
_SHAPE_RE = re.compile(r"cutlass::gemm::GemmShape\s*<\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*>")
_CONSTEXPR_RE = re.compile(r"constexpr\s+int\s+(\w+)\s*=\s*([^;]*);")
_SIZEOF_BITS_RE = re.compile(r"cutlass::sizeof_bits\s*<\s*(\w+)\s*>\s*::\s*value")
#: ``cutlass::sizeof_bits<T>::value`` of the runners' activation types (their C++ widths)
BITS = {"half": 16, "__nv_bfloat16": 16, "__nv_fp8_e4m3": 8, "__nv_fp8_e5m2": 8, "float": 32}
_STAGE_CASE_RE = re.compile(r"case\s+(\d+)\s*:\s*dispatch\s*<[^;]*?,\s*(\d+)\s*>\s*\(")


@dataclass(frozen=True)
class Runner:
    """One ``MoeGemmRunner`` a runner source instantiates explicitly.

    Attributes:
        t, weight, out: its ``T``, ``WeightType`` and ``OutputType`` as spelled (``half``,
            ``__nv_bfloat16``, ``__nv_fp8_e4m3``); ``out`` defaults to ``t`` as the class
            template's declaration does.
        args: every template argument as spelled; file, line: where.
    """

    t: str
    weight: str
    out: str
    args: tuple[str, ...]
    file: str
    line: int


@dataclass(frozen=True)
class Overload:
    """One overload of a dispatch function: its ``enable_if`` condition (C++ text, ``""`` for
    none), its body and the line it starts on."""

    condition: str
    body: str
    line: int


@dataclass(frozen=True)
class TileCase:
    """One case of ``dispatchMoeGemmToCutlass``'s switch: the enum name
    (``CtaShape64x128x64_WarpShape64x32x64``), ThreadblockShape and WarpShape (M, N, K in
    elements, as the ``GemmShape`` arguments spell them) and its line."""

    enum: str
    threadblock: tuple[int, int, int]
    warp: tuple[int, int, int]
    line: int


@dataclass(frozen=True)
class Sm80Kernel:
    """One SM80-path kernel the SM120 runtime can reach.

    Attributes:
        t, weight, out: the launcher's ``T``, ``WeightType``, ``GemmOutputType``.
        arch: the arch tag (``Sm89``, ``Sm80``); case: the tile case; stages: the template's
            ``Stages``; config_stages: the ``gemm_config.stages`` values that reach it.
        runners: the ``MoeGemmRunner`` argument lists that reach it.
        tried: whether ``get_candidate_configs(120, ...)`` lists its tile and a stage count
            that reaches it (None where that list could not be read).
    """

    t: str
    weight: str
    out: str
    arch: str
    case: TileCase
    stages: int
    config_stages: tuple[int, ...]
    runners: tuple[str, ...] = ()
    tried: bool | None = None
    #: the launcher's ``cutlass::WeightOnlyQuantOp`` (``UNDEFINED``; a weight-only runner's
    #: groupwise ``FINEGRAINED_SCALE_ONLY`` / ``FINEGRAINED_SCALE_AND_ZEROS``)
    quant: str = "UNDEFINED"

    def type_name(self, struct: str) -> str:
        """The re-hosted kernel type (:func:`kernel_header`) of this kernel."""
        tb, wp = self.case.threadblock, self.case.warp
        return (
            f"{_NS}::{struct}<{self.t}, {self.weight}, {self.out}, cutlass::arch::{self.arch}, "
            f"cutlass::WeightOnlyQuantOp::{self.quant}, tensorrt_llm::cutlass_extensions::"
            f"EpilogueOpDefault, cutlass::gemm::GemmShape<{tb[0]}, {tb[1]}, {tb[2]}>, "
            f"cutlass::gemm::GemmShape<{wp[0]}, {wp[1]}, {wp[2]}>, {self.stages}>::GemmKernel"
        )


_NS = "tensorrt_llm::kernels::cutlass_kernels_oss"


# ---------------------------------------------------------------------------------------
# conditions (the preprocessor's: :func:`cutlass_layout.cpp.preprocessor.active_text`)
def holds(condition: str, names: dict[str, str]) -> bool | None:
    """Whether a C++ condition made of ``is_same`` tests, ``true``/``false``, ``!``, ``&&``,
    ``||`` and parentheses holds for the template parameters ``names`` (``{"T": "half", "WeightType":
    "half"}``): each ``std::is_same<A, B>::value`` / ``std::is_same_v<A, B>`` (also
    ``cutlass::platform::``) compares the spellings with the parameters replaced. ``True`` for
    an empty condition; ``None`` where anything else is left (it cannot be told here)."""

    def same(m: re.Match) -> str:
        a, b = [names.get(x.strip(), x.strip()) for x in (m.group(1) or m.group(2)).split(",", 1)]
        return f" {_truth(a == b)} "

    literal = _SAME_RE.sub(same, condition)
    if not literal.strip():
        return True
    return _truth_of(literal)


def _truth(v: bool) -> str:
    """``true``/``false``: a fact put into C++ text for :func:`_truth_of`."""
    return "true" if v else "false"


def _truth_of(condition: str, sm: int | None = None) -> bool | None:
    """A C++ condition reduced to literals (and ``sm``, where given), evaluated
    (:func:`cutlass_layout.cpp.preprocessor.evaluate`, strict); None where a name is left."""
    v = evaluate(condition, {} if sm is None else {"sm": sm}, strict=True)
    return None if v is None else bool(v)


# ---------------------------------------------------------------------------------------
# reading the install's text
def runners(text: str, file: str, defined: set[str]) -> list[Runner]:
    """The ``MoeGemmRunner`` explicit instantiations of one runner source that the module's
    defines keep (``template class MoeGemmRunner<__nv_fp8_e4m3, __nv_fp8_e4m3, half>;``)."""
    clean = active_text(blank_comments(text), defined)
    out = []
    for m in _RUNNER_RE.finditer(clean):
        args = tuple(template_args(f"X<{m.group('args')}>"))
        if len(args) < 2:
            continue
        out.append(
            Runner(
                t=args[0],
                weight=args[1],
                out=args[2] if len(args) > 2 else args[0],
                args=args,
                file=file,
                line=clean.count("\n", 0, m.start()) + 1,
            )
        )
    return out


def _close(text: str, start: int, open_: str, close: str) -> int:
    """The bracket closing the one at ``start`` (:func:`cutlass_layout.cpp.brackets.matching`),
    or the end of ``text`` where it is not closed."""
    end = matching(text, start, open_, close)
    return len(text) if end is None else end


def overloads(text: str, name: str) -> list[Overload]:
    """Every definition of the function template ``name`` in ``text`` (comments blanked,
    preprocessor branches already resolved): its ``std::enable_if<COND>`` condition (``""``
    where the template has none) and its body."""
    out = []
    for m in re.finditer(rf"\b(?:void|static\s+void)\s+{name}\s*\(", text):
        close = _close(text, m.end() - 1, "(", ")")
        brace = text.find("{", close)
        if brace < 0 or text[close + 1 : brace].strip() not in ("", "const"):
            continue  # a declaration or a call
        head_start = text.rfind("template", 0, m.start())
        head = text[head_start : m.start()] if head_start >= 0 else ""
        cond = ""
        e = head.find("enable_if<")
        if e >= 0:
            lt = head_start + e + len("enable_if")
            gt = _close(text, lt, "<", ">")
            cond = text[lt + 1 : gt]
        end = _close(text, brace, "{", "}")
        out.append(Overload(cond, text[brace : end + 1], text.count("\n", 0, m.start()) + 1))
    return out


def body_constants(body: str, names: dict[str, str]) -> dict[str, int]:
    """The ``constexpr int NAME = EXPR;`` of a function body, evaluated for the template
    parameters ``names``: integer literals, ``* / + -``, parentheses and
    ``cutlass::sizeof_bits<T>::value`` (:data:`BITS`); one that cannot be is left out
    (``tile_shape_k = 128 * 8 / cutlass::sizeof_bits<T>::value`` is 64 for a 16-bit ``T``)."""
    out = {}
    for m in _CONSTEXPR_RE.finditer(body):
        expr = _SIZEOF_BITS_RE.sub(lambda b: str(BITS.get(names.get(b.group(1), b.group(1)), "x")), m.group(2))
        if re.fullmatch(r"[\d\s*/+()-]+", expr):
            v = evaluate(expr, strict=True)
            if v is not None:
                out[m.group(1)] = int(v)
    return out


def tile_cases(body: str, first_line: int = 1, constants: dict[str, int] | None = None) -> list[TileCase]:
    """The cases of a ``switch (inputs.gemm_config.tile_config_sm80)`` body whose statements
    name two ``cutlass::gemm::GemmShape<M, N, K>`` (ThreadblockShape, then WarpShape), in
    order, each value a literal or a name of ``constants`` (:func:`body_constants`). A case
    without (``Undefined``, ``ChooseWithHeuristic``, ``default``, or a value it cannot tell)
    is left out."""
    marks = list(_CASE_RE.finditer(body))
    consts = constants or {}
    out = []
    for i, m in enumerate(marks):
        seg = body[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(body)]
        shapes = []
        for sh in _SHAPE_RE.finditer(seg):
            tm, tn, tk = (int(x) if x.isdigit() else consts.get(x) for x in sh.groups())
            if tm is not None and tn is not None and tk is not None:
                shapes.append((tm, tn, tk))
        if len(shapes) >= 2:
            out.append(TileCase(m.group(1), shapes[0], shapes[1], first_line + body.count("\n", 0, m.start())))
    return out


def stage_cases(body: str) -> dict[int, int]:
    """``dispatchGemmConfig``'s switch: ``gemm_config.stages`` -> the ``Stages`` its
    ``dispatch<..., Stages>`` call passes (``{2: 3, 3: 3, 4: 4}`` for FP8 with another weight
    type: a 2-stage config runs 3 stages)."""
    return {int(a): int(b) for a, b in _STAGE_CASE_RE.findall(body)}


def pick(overs: list[Overload], names: dict[str, str]) -> Overload | None:
    """The one overload whose condition holds for ``names`` (None: none, or more than one,
    or one that cannot be told)."""
    hits = [o for o in overs if holds(o.condition, names)]
    unknown = [o for o in overs if holds(o.condition, names) is None]
    return hits[0] if len(hits) == 1 and not unknown else None


def arch_on_sm120(dispatch_text: str, is_fp8: bool) -> str | None:
    """The arch tag ``dispatchToArch`` dispatches a runner to on SM120 (``sm_ >= 120``), read
    from its body: for pure FP8 the ``if (sm_ >= 120)`` redirect (``Sm89``), otherwise the
    "Ampere case" fallback's ``if constexpr (use_fp8) ... else ...`` (``Sm80``)."""
    m = re.search(r"\bdispatchToArch\s*\([^)]*\)\s*\{", dispatch_text)
    if m is None:
        return None
    body = dispatch_text[m.end() - 1 : _close(dispatch_text, m.end() - 1, "{", "}") + 1]
    if is_fp8:
        r = re.search(r"if\s*\(\s*sm_\s*>=\s*120\s*\)\s*\{[^}]*?cutlass::arch::(Sm\d+)", body)
        if r:
            return r.group(1)
    r = re.search(
        r"if\s+constexpr\s*\(\s*use_fp8\s*\)\s*\{[^}]*?cutlass::arch::(Sm\d+)[^}]*\}\s*"
        r"else\s*\{[^}]*?cutlass::arch::(Sm\d+)",
        body,
    )
    if r is None:
        return None
    return r.group(1) if is_fp8 else r.group(2)


# ---------------------------------------------------------------------------------------
# the runtime's candidates (cutlass_heuristic.cpp)
def _cond_true(cond: str, sm: int, flags: set[str]) -> bool | None:
    """A heuristic's ``if`` condition over ``sm`` and ``config_type_param &
    CutlassGemmConfig::FLAG`` tests, evaluated; None where anything else is left."""
    literal = re.sub(
        r"config_type_param\s*&\s*CutlassGemmConfig::(\w+)", lambda m: f" {_truth(m.group(1) in flags)} ", cond
    )
    return _truth_of(literal, sm)


def _branch(seg: str, sm: int, flags: set[str]) -> list[str] | None:
    """The tile list a ``case`` of ``get_candidate_tiles`` returns for ``sm`` and ``flags``:
    ``if (...) { ... } else { ... }`` followed where it holds, the first ``return {...}``."""
    pos = 0
    while True:
        m = re.compile(r"\bif\s*\(|\breturn\s*(\{|base_configs)").search(seg, pos)
        if m is None:
            return None
        if m.group().startswith("return"):
            if m.group(1) == "base_configs":
                return ["base_configs"]
            close = _close(seg, m.end() - 1, "{", "}")
            return re.findall(r"CutlassTileConfig::(\w+)", seg[m.end() - 1 : close])
        close = _close(seg, m.end() - 1, "(", ")")
        ok = _cond_true(seg[m.end() : close], sm, flags)
        if ok is None:
            return None
        brace = seg.find("{", close)
        end = _close(seg, brace, "{", "}")
        if ok:
            return _branch(seg[brace + 1 : end], sm, flags)
        rest = seg[end + 1 :]
        e = re.match(r"\s*else\s*", rest)
        if e:
            after = rest[e.end() :]
            if after.startswith("{"):
                return _branch(after[1 : _close(after, 0, "{", "}")], sm, flags)
            seg, pos = after, 0
            continue
        seg, pos = rest, 0


def candidate_tiles(heuristic_text: str, sm: int, flags: set[str]) -> list[str] | None:
    """``get_candidate_tiles(sm, config_type_param)`` of ``cutlass_heuristic.cpp``, evaluated
    for ``sm`` and the ``CutlassGemmConfig`` flags set (``{"GROUPED_GEMM", "FP8_ONLY"}``): the
    ``CutlassTileConfig`` names it returns, in order; None where it cannot be read."""
    clean = blank_comments(heuristic_text)
    m = re.search(r"std::vector<CutlassTileConfig>\s+get_candidate_tiles\s*\([^)]*\)\s*\{", clean)
    if m is None:
        return None
    body = clean[m.end() - 1 : _close(clean, m.end() - 1, "{", "}") + 1]
    kind = "Default"
    for flag, name in (
        ("SIMT_ONLY", "Simt"),
        ("WEIGHT_ONLY", "WeightOnly"),
        ("INT8_ONLY", "Int8"),
        ("FP8_ONLY", "Fp8"),
    ):
        if flag in flags:
            kind = name
            break
    base = None
    b = re.search(r"base_configs\s*\{([^}]*)\}", body)
    if b:
        base = re.findall(r"CutlassTileConfig::(\w+)", b.group(1))
        for p in re.finditer(
            r"if\s*\(([^)]*)\)\s*\{\s*base_configs\.push_back\(\s*"
            r"CutlassTileConfig::(\w+)\s*\)",
            body,
        ):
            if _cond_true(p.group(1), sm, flags):
                base.append(p.group(2))
    cases = list(re.finditer(r"case\s+CutlassGemmType::(\w+)\s*:|default\s*:", body))
    # the gemm type's case, else the switch's default (a type with no case of its own)
    hit = next((i for i, c in enumerate(cases) if c.group(1) == kind), None)
    if hit is None:
        hit = next((i for i, c in enumerate(cases) if c.group(1) is None), None)
    if hit is None:
        return base if kind == "Default" else None
    seg = body[cases[hit].end() : cases[hit + 1].start() if hit + 1 < len(cases) else len(body)]
    got = _branch(seg, sm, flags)
    return base if got == ["base_configs"] else got


def candidate_stages(heuristic_text: str, sm: int, flags: set[str]) -> range | None:
    """The stage counts ``get_candidate_configs`` pairs each tile with on the SM80 path
    (``min_stages``..``max_stages``, evaluated for ``sm`` and ``flags``); None where the two
    lines cannot be read."""
    clean = blank_comments(heuristic_text)
    int8 = "INT8_ONLY" in flags
    vals = []
    for name in ("min_stages", "max_stages"):
        m = re.search(rf"int\s+const\s+{name}\s*=\s*([^;]*);", clean)
        if m is None:
            return None
        v = _ternary(re.sub(r"\bint8_configs_only\b", _truth(int8), m.group(1)), sm)
        if v is None:
            return None
        vals.append(v)
    return range(vals[0], vals[1] + 1)


def _ternary(expr: str, sm: int) -> int | None:
    """``(sm == 89) ? 3 : int8 ? 3 : 2`` evaluated for ``sm`` (a C expression of ``sm``,
    ``true``/``false`` and integer literals): a number, None where it gives a truth value or
    names anything else."""
    v = evaluate(expr, {"sm": sm}, strict=True)
    return int(v) if v is not None and not isinstance(v, bool) else None


# ---------------------------------------------------------------------------------------
# the kernels
#: CutlassGemmConfig flags of ``getAmpereConfigs`` by what the runner is (``T`` float: SIMT;
#: another weight type: weight-only; FP8 activation: FP8_ONLY), always with GROUPED_GEMM.
def ampere_flags(t: str, weight: str) -> set[str]:
    """The ``config_type_param`` flags ``MoeGemmRunner::getAmpereConfigs`` passes for a runner
    of ``T`` ``t`` and ``WeightType`` ``weight`` (``moe_gemm_template_dispatch.h``)."""
    flags = {"GROUPED_GEMM"}
    if t != weight:
        flags.add("WEIGHT_ONLY")
    if t == "float":
        flags.add("SIMT_ONLY")
    if t in ("__nv_fp8_e4m3", "__nv_fp8_e5m2"):
        flags.add("FP8_ONLY")
    return flags


@dataclass
class Reading:
    """What :func:`sm80_kernels` read: the kernels, and why a runner gave none."""

    kernels: list[Sm80Kernel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def runner_flags(runner_text: str, names: dict[str, str], defined: set[str]) -> dict[str, bool]:
    """``MoeGemmRunner``'s ``static constexpr bool use_X = ...;`` flags (:data:`RUNNER_HEADER`)
    that :func:`holds` can tell for ``names``, under the module's defines (the first active
    definition of each; ``use_fp8``, ``use_w4afp8``, ``use_wfp4a16``, ...)."""
    out: dict[str, bool] = {}
    for m in re.finditer(
        r"static\s+constexpr\s+bool\s+(use_\w+)\s*=\s*([^;]*);", active_text(blank_comments(runner_text), defined)
    ):
        if m.group(1) not in out:
            v = holds(m.group(2), names)
            if v is not None:
                out[m.group(1)] = v
    return out


def ampere_configs_empty(dispatch_text: str, flags: dict[str, bool], valid: bool, sm: int) -> bool | None:
    """Whether ``MoeGemmRunner::getAmpereConfigs`` returns no config for ``sm``: its
    ``if (COND) { return {}; }`` with ``isValidAmpereMOESpecialisation<...>()`` = ``valid``
    and the runner's ``use_*`` ``flags`` put in (None where it cannot be told)."""
    m = re.search(r"::getAmpereConfigs\s*\(\s*int\s+sm\s*\)\s*\{", dispatch_text)
    if m is None:
        return None
    body = dispatch_text[m.end() - 1 : _close(dispatch_text, m.end() - 1, "{", "}") + 1]
    c = re.search(r"\bif\s*\(", body)
    if c is None:
        return False
    cond = body[c.end() : _close(body, c.end() - 1, "(", ")")]
    cond = re.sub(r"[\w:]*isValidAmpereMOESpecialisation\s*<[^>]*>\s*\(\s*\)", f" {_truth(valid)} ", cond)
    cond = re.sub(r"\buse_\w+\b", lambda u: f" {_truth(flags[u.group()])} " if u.group() in flags else u.group(), cond)
    return _cond_true(cond, sm, set())


def empty_launchers(dispatch_text: str) -> set[tuple[str, str]]:
    """``(T, WeightType)`` of the partial specializations of :data:`LAUNCHER` whose ``call``
    does nothing (``genericMoeGemmKernelLauncher<__nv_bfloat16, __nv_fp8_e4m3, ...>``)."""
    out = set()
    for m in re.finditer(rf"struct\s+{LAUNCHER}\s*<", dispatch_text):
        gt = _close(dispatch_text, m.end() - 1, "<", ">")
        args = template_args("X" + dispatch_text[m.end() - 1 : gt + 1])
        rest = dispatch_text[gt + 1 :]
        if len(args) >= 2 and re.match(r"\s*\{\s*static\s+void\s+call\s*\([^)]*\)\s*\{\s*\}", rest):
            out.add((args[0], args[1]))
    return out


def quant_ops(dispatch_text: str) -> list[str]:
    """The ``cutlass::WeightOnlyQuantOp`` values the SM80 ``dispatch`` function instantiates
    the launcher with, in order (``UNDEFINED``, then the groupwise ones a weight-only runner
    picks by ``inputs.zeros``)."""
    m = re.search(r"static\s+void\s+dispatch\s*\([^)]*\)\s*\{", dispatch_text)
    if m is None:
        return []
    body = dispatch_text[m.end() - 1 : _close(dispatch_text, m.end() - 1, "{", "}") + 1]
    return list(dict.fromkeys(re.findall(r"cutlass::WeightOnlyQuantOp::(\w+)", body)))


def sm80_kernels(
    dispatch_text: str,
    traits_text: str,
    heuristic_text: str | None,
    found: list[Runner],
    defined: set[str],
    sm: int = 120,
    *,
    runner_text: str = "",
) -> Reading:
    """The SM80-path kernels the runners ``found`` reach on ``sm`` (120), each once (runners
    that build the same kernel are listed on it), for the ``EpilogueOpDefault`` epilogue (what
    ``moeGemm`` and ``queryOccupancyForConfig`` run).

    ``traits_text`` holds ``isValidAmpereMOESpecialisation`` (:data:`TRAITS`): a runner it
    rejects (FP4) has no SM80 path; ``runner_text`` (:data:`RUNNER_HEADER`) the runner's
    ``use_*`` flags: one whose ``getAmpereConfigs`` is empty on ``sm`` (W4A-FP8 off SM89) or
    whose launcher is specialized to do nothing (bf16 x FP8) is left out, with a note. A
    weight-only runner (``T != WeightType``) reaches a kernel per
    :func:`quant_ops` value (its groupwise scales are staged too); one with ``T ==
    WeightType``, ``UNDEFINED`` only. A runner whose overload, arch or tiles cannot be told
    gets a note instead."""
    text = active_text(blank_comments(dispatch_text), defined)
    tiles_over = overloads(text, "dispatchMoeGemmToCutlass")
    stage_over = overloads(text, "dispatchGemmConfig")
    traits = active_text(blank_comments(traits_text), defined)
    valid = re.search(r"isValidAmpereMOESpecialisation\s*\(\s*\)\s*\{([^}]*)\}", traits)
    out: dict[tuple, Sm80Kernel] = {}
    notes, unread = [], []
    empty = empty_launchers(text)
    quants = quant_ops(text) or ["UNDEFINED"]
    for r in found:
        names = {"T": r.t, "WeightType": r.weight}
        label = f"MoeGemmRunner<{', '.join(r.args)}>"
        ok = True  # (a specialisation that holds, or none written)
        if valid is not None:
            held = holds(re.sub(r"^\s*return|;\s*$", "", valid.group(1).strip()), names)
            if held is False:
                continue  # no SM80 path (FP4)
            if held is None:
                notes.append(f"{label}: isValidAmpereMOESpecialisation could not be told")
                continue
        flags = runner_flags(runner_text, names, defined)
        if (r.t, r.weight) in empty:
            unread.append(f"{label} (its {LAUNCHER} is specialized to do nothing)")
            continue
        if ampere_configs_empty(text, flags, ok, sm):
            unread.append(f"{label} (getAmpereConfigs gives no config on sm {sm})")
            continue
        arch = arch_on_sm120(text, flags.get("use_fp8", r.t in ("__nv_fp8_e4m3", "__nv_fp8_e5m2")))
        tile_o, stage_o = pick(tiles_over, names), pick(stage_over, names)
        if arch is None or tile_o is None or stage_o is None:
            notes.append(f"{label}: its dispatch overload or arch could not be told")
            continue
        cases = tile_cases(tile_o.body, tile_o.line, body_constants(tile_o.body, names))
        stages = stage_cases(stage_o.body)
        tried_tiles = tried_stages = None
        if heuristic_text is not None:
            tried_tiles = candidate_tiles(heuristic_text, sm, ampere_flags(r.t, r.weight))
            tried_stages = candidate_stages(heuristic_text, sm, ampere_flags(r.t, r.weight))
        for case in cases:
            by_stage: dict[int, list[int]] = {}
            for cfg_st, st in stages.items():
                by_stage.setdefault(st, []).append(cfg_st)
            for (st, cfgs), quant in (
                (x, q) for x in sorted(by_stage.items()) for q in (quants if r.t != r.weight else quants[:1])
            ):
                key = (r.t, r.weight, r.out, arch, case.enum, st, quant)
                tried = None
                if tried_tiles is not None and tried_stages is not None:
                    tried = case.enum in tried_tiles and any(c in tried_stages for c in cfgs)
                k = out.get(key)
                if k is None:
                    out[key] = Sm80Kernel(r.t, r.weight, r.out, arch, case, st, tuple(cfgs), (label,), tried, quant)
                else:
                    out[key] = Sm80Kernel(
                        k.t,
                        k.weight,
                        k.out,
                        k.arch,
                        k.case,
                        k.stages,
                        k.config_stages,
                        k.runners + (label,),
                        k.tried,
                        k.quant,
                    )
    if unread:
        notes.append(f"{len(unread)} runner(s) with no SM80 path on sm {sm}: {', '.join(unread)}")
    return Reading(list(out.values()), notes)


def kernel_header(dispatch_text: str, struct: str) -> str | None:
    """C++ text re-hosting ``genericMoeGemmKernelLauncher``'s type chain: the primary
    template's ``using`` declarations in ``call`` up to ``using GemmKernel = ...;`` copied into
    ``template <same parameters> struct <struct> { ... };`` in the launcher's namespace, after
    the dispatch header's own ``cutlass``/``cutlass_extensions`` includes and
    ``cutlass_type_conversion.h``. None where the launcher or its alias is not found."""
    clean = blank_comments(dispatch_text, strings=False)
    m = re.search(rf"struct\s+{LAUNCHER}\s*\{{", clean)
    if m is None:
        return None
    head = clean.rfind("template", 0, m.start())
    params = clean[head : m.start()].strip()
    end = _close(clean, m.end() - 1, "{", "}")
    body = clean[m.end() : end]
    decls = []
    for u in re.finditer(r"\busing\s+(\w+)\s*=[^;]*;", body):
        decls.append(" ".join(u.group().split()))
        if u.group(1) == "GemmKernel":
            break
    else:
        return None
    includes = [ln for ln in clean.splitlines() if re.match(r'\s*#\s*include\s+"cutlass(?:_extensions)?/', ln)]
    includes.append('#include "tensorrt_llm/kernels/cutlass_kernels/cutlass_type_conversion.h"')
    ns = re.findall(r"namespace\s+([\w:]+)\s*\{", clean[: m.start()])
    namespace = ns[-1] if ns else _NS
    lines = "\n  ".join(decls)
    return (
        "#pragma once\n" + "\n".join(includes) + f"\nnamespace {namespace} {{\n{params}\n"
        f"struct {struct} {{\n  {lines}\n}};\n}}  // namespace {namespace}\n"
    )


# ---------------------------------------------------------------------------------------
# laid out, as audit tactics
#: The audit family of these kernels.
FAMILY = "moe_sm80"
#: The re-hosted launcher's class template (:func:`kernel_header`).
STRUCT = "cl_sm80_moe_kernel"
#: The flag names of the runner's element types (``layout``'s ``--a``/``--b`` names).
ELEMENT_KINDS = {
    "half": "f16",
    "__nv_bfloat16": "bf16",
    "__nv_fp8_e4m3": "e4m3",
    "__nv_fp8_e5m2": "e5m2",
    "float": "f32",
    "uint8_t": "u8",
    "cutlass::uint4b_t": "u4",
}
_GUARD = re.compile(r"maximum_active_blocks\s*\(\s*\)")
_GUARD_MESSAGE = "GPU lacks the shared memory resources to run GroupedGEMM kernel"


@dataclass
class Sm80Audit:
    """The SM80-path kernels of an install for SM120, laid out (:func:`audit_sm80_path`).

    Attributes:
        tactics: one :class:`~cutlass_layout.model.Tactic` per kernel (family
            :data:`FAMILY`), ``runtime_candidate`` from ``get_candidate_configs(120, ...)``.
        notes: what could not be read, and the runtime guard where the launcher has it.
        guard: the launcher's occupancy guard, in words, where its text has it (else None).
    """

    tactics: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    guard: str | None = None


def folder(install) -> "Path":
    """TensorRT-LLM's ``cutlass_kernels`` folder in a flashinfer install (``root`` the
    ``flashinfer`` package dir)."""
    from pathlib import Path

    return Path(install.root) / "data" / "csrc" / "nv_internal" / "tensorrt_llm" / "kernels" / "cutlass_kernels"


def has_sm80_path(install) -> bool:
    """Whether the install ships TensorRT-LLM's MoE dispatch (:data:`DISPATCH`) with the SM80
    path: its text defines :data:`LAUNCHER` and names ``dispatchMoeGemmToCutlass``."""
    try:
        text = (folder(install) / DISPATCH).read_text(errors="replace")
    except OSError:
        return False
    return re.search(rf"struct\s+{LAUNCHER}\b", text) is not None and "dispatchMoeGemmToCutlass" in text


def tactic_name(k: Sm80Kernel) -> str:
    """``CtaShape64x128x64_WarpShape32x64x64_Stages3_Sm80``: the install's tile enum, the
    template's ``Stages`` and the arch tag the dispatch passes, then the quantization where
    it is not ``UNDEFINED`` (``_FINEGRAINED_SCALE_ONLY``)."""
    return f"{k.case.enum}_Stages{k.stages}_{k.arch}" + ("" if k.quant == "UNDEFINED" else f"_{k.quant}")


def _read(install, defined: set[str]) -> "tuple[str, str | None, Reading] | None":
    """The install's dispatch text, its heuristic's (None where it has none) and the SM80-path
    kernels read from them (:func:`sm80_kernels`); None where it has no dispatch."""
    base = folder(install)
    try:
        dispatch = (base / DISPATCH).read_text(errors="replace")
        traits = (base / TRAITS).read_text(errors="replace")
        runner_text = (base / RUNNER_HEADER).read_text(errors="replace")
    except OSError:
        return None
    try:
        heuristic = (base / HEURISTIC).read_text(errors="replace")
    except OSError:
        heuristic = None
    found = []
    for path in sorted(base.glob(RUNNER_SOURCES)):
        found += runners(path.read_text(errors="replace"), path.name, defined)
    return dispatch, heuristic, sm80_kernels(dispatch, traits, heuristic, found, defined, runner_text=runner_text)


def kernel_count(install, defined: set[str]) -> int:
    """How many kernels :func:`audit_sm80_path` lays out for the install (its text read, nothing
    parsed): what an audit's shards weigh this family by (:func:`cutlass_layout.commands.shard.shard_of`)."""
    read = _read(install, defined)
    return 0 if read is None else len(read[2].kernels)


def audit_sm80_path(
    install, tgt, defined: set[str], *, use_cache: bool = True, cached_only: bool = False
) -> "Sm80Audit | None":
    """Lay out the CUTLASS 2.x grouped kernels TensorRT-LLM's ``MoeGemmRunner`` reaches on SM120
    (module docstring), each ``MoeFCGemm``'s ``SharedStorage`` as the launcher builds it,
    against SM120's capacity as the tree gives it (``sm120_smem_capacity_bytes``, bytes).

    Args:
        install: a :class:`~cutlass_layout.sources.flashinfer.FlashinferInstall`; tgt: its
            :class:`~cutlass_layout.engine.loop.Target`.
        defined: the macros the SM120 MoE module defines (``ENABLE_BF16``, ``ENABLE_FP8``, ...).
        use_cache: read the results cache (kind ``moe_sm80``); cached_only: parse nothing
            (None where the layouts are not cached).

    Returns:
        An :class:`Sm80Audit` (no tactics and a note where the install has no such dispatch).
    """
    from pathlib import Path

    from ..cpp.clang import libclang_version
    from ..model import LayoutReport, Tactic
    from ..engine import loop as engine
    from ..core.cache import KINDS, cache_dir, write_atomic
    from ..subjects import user_type

    read = _read(install, defined)
    if read is None:
        return Sm80Audit(notes=[f"{FAMILY}: no {DISPATCH} in the install: no SM80-path MoE kernels read"])
    dispatch, heuristic, reading = read
    base = folder(install)
    out = Sm80Audit(notes=[f"{FAMILY}: {n}" for n in reading.notes])
    if heuristic is None:
        out.notes.append(f"{FAMILY}: runtime candidates: no {HEURISTIC} in the install")
    header_text = kernel_header(dispatch, STRUCT)
    if header_text is None or not reading.kernels:
        out.notes.append(f"{FAMILY}: {LAUNCHER}'s kernel type could not be read from {DISPATCH}")
        return out
    clean = blank_comments(dispatch, strings=False)
    if _GUARD.search(clean) and _GUARD_MESSAGE in clean:
        core = Path(install.root) / "fused_moe" / "core.py"
        skip = (
            " (flashinfer's get_valid_tactics, fused_moe/core.py, drops such tactics before autotuning)"
            if core.is_file() and "get_tactic_occupancy" in core.read_text(errors="replace")
            else ""
        )
        out.guard = (
            "rejected at run time by the runner's occupancy check: "
            "GemmGrouped::maximum_active_blocks() (cutlass/gemm/device/base_grouped.h) "
            "gets no dynamic shared memory over the device's limit and returns -1, so "
            f'queryOccupancyForConfig reports occupancy <= 0{skip} and {LAUNCHER} fails TLLM_CHECK "{_GUARD_MESSAGE}" '
            f'({DISPATCH}), not "Error Internal"'
        )
    nv = base.parent.parent.parent  # csrc/nv_internal
    includes = (str(nv), str(nv / "tensorrt_llm" / "cutlass_extensions" / "include"), str(nv / "include"))
    types = [k.type_name(STRUCT) for k in reading.kernels]
    kind = KINDS["moe_sm80"]
    rkey = kind.key(
        subject=[header_text, types, sorted(defined)],
        target=[install.fingerprint, install.tree.tree_hash, libclang_version(), str(tgt.cuda.path)],
    )

    def compute():
        header = Path(cache_dir("moe_sm80")) / f"{rkey[:16]}.h"
        if not header.is_file():
            write_atomic(header, header_text.encode())
        users = [
            user_type.UserType(header=header, type=t, arch="sm120", includes=includes, defines=tuple(sorted(defined)))
            for t in types
        ]
        return engine.layouts(users, tgt)

    def dump(reps):  # kept where every error is the headers' (one without a file may pass)
        return [r.to_dict() for r in reps] if all(r.error is None or r.error.file for r in reps) else None

    reps = kind.memo(
        rkey,
        compute,
        load=lambda hit: [LayoutReport.from_dict(d) for d in hit],
        dump=dump,
        use_cache=use_cache,
        cached_only=cached_only,
    )
    if reps is None:
        return None
    disp_rel = f"csrc/nv_internal/tensorrt_llm/kernels/cutlass_kernels/{DISPATCH}"
    for k, rep in zip(reading.kernels, reps):
        t = Tactic(
            family=FAMILY,
            name=tactic_name(k),
            a=ELEMENT_KINDS.get(k.t, k.t),
            b=ELEMENT_KINDS.get(k.weight, k.weight),
            out=ELEMENT_KINDS.get(k.out, k.out),
            fusion=None,
            swap_ab=None,
            tile=list(k.case.threadblock),
            cluster=None,
            kernel="grouped",
            schedule=None,
            file=disp_rel,
            line=k.case.line,
            launcher=LAUNCHER,
            launcher_file=disp_rel,
            runtime_candidate=k.tried,
            report=rep,
        )
        t.report = replace(
            rep,
            config={
                "tactic": t.id,
                **t.identity(),
                "warp": list(k.case.warp),
                "arch_tag": k.arch,
                "quant": k.quant,
                "runners": list(k.runners),
            },
        )
        out.tactics.append(t)
    return out


__all__ = [
    "DISPATCH",
    "ELEMENT_KINDS",
    "FAMILY",
    "HEURISTIC",
    "STRUCT",
    "TRAITS",
    "Sm80Audit",
    "audit_sm80_path",
    "kernel_count",
    "folder",
    "has_sm80_path",
    "RUNNER_HEADER",
    "BITS",
    "ampere_configs_empty",
    "body_constants",
    "empty_launchers",
    "quant_ops",
    "runner_flags",
    "tactic_name",
    "LAUNCHER",
    "RUNNER_SOURCES",
    "Overload",
    "Reading",
    "Runner",
    "Sm80Kernel",
    "TileCase",
    "active_text",
    "ampere_flags",
    "arch_on_sm120",
    "candidate_stages",
    "candidate_tiles",
    "holds",
    "kernel_header",
    "overloads",
    "pick",
    "runners",
    "sm80_kernels",
    "stage_cases",
    "tile_cases",
]
