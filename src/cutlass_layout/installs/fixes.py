"""What fits instead: the stage count with which an over-capacity (or exact-fit) tactic fits.

A tactic's kernel is laid out again with its launcher's text changed in one place only: the
stage-count argument of its mainloop ``CollectiveBuilder`` (``StageCountAutoCarveout<...>``
in TensorRT-LLM's MoE launcher) becomes ``cutlass::gemm::collective::StageCount<N>``
(:func:`cutlass_layout.cpp.text.with_stage_count`), for N below the builder's own count.
Nothing is estimated from per-stage bytes: each N is a kernel type clang lays out.

How (:func:`search_fixes`):

* the launcher macro is redefined as ``CL_FIX_<digest>(CL_STAGES, <its parameters>)``, cut
  after its kernel alias with the engine's in-place probe after it
  (:func:`cutlass_layout.cpp.text.trimmed_macro`, :func:`cutlass_layout.installs.preludes.in_place_probe`)
  and, beside the probe, the builder's own stage formula evaluated by the compiler
  (:data:`FORMULAS`: the builder's reduced capacity, its bytes per stage, the carve-out it was
  given, and the smallest carve-out for which it chooses N), in an ``-include`` header;
* each candidate (tactic, N) is one block: the macro's invocation as the generated source
  writes it, with N first, in the namespaces the source invokes it in and a namespace
  ``cl_probe_<i>`` of its own; the blocks of all tactics of one folder, flags and includes
  follow the source's text (its invocations blanked) in one translation unit, through the
  engine's one layout loop (:func:`cutlass_layout.engine.loop.lay_out`: numbers only from a
  parse without errors, each error tied to its block);
* first N = S - 1 for every tactic (S its stage count); then, for those that still do not
  fit, the N that the two layouts predict (:func:`predicted_stages`: the kernel's bytes fall by
  the same amount with each stage) and N + 1, or, where S - 1 does not compile (a collective
  that takes even stage counts only), S - 2 and S - 3; only where those do not settle it, every
  N from 2 to S - 2 not laid out yet, at once (the SM90/SM120 collectives refuse fewer than
  2). The prediction only picks what to lay out: the answer is always a layout clang gave,
  checked against the ones above it.

The fix is the largest N below S whose kernel fits (:attr:`cutlass_layout.model.LayoutReport.fits`:
headroom >= 0, the rule of ``layout``'s verdict and of ``sweep``'s ``max that fits``): N + 1 is
S, or was laid out and does not fit, or does not compile and the same holds of N + 2 (a
kernel's bytes grow with its stages). An exact fit fits: CUDA takes a
dynamic shared-memory size up to the opt-in limit, and TensorRT-LLM's TMA warp-specialized
MoE launchers run no occupancy check (``moe_gemm_tma_ws_launcher.inl``: "TMA WS kernels do
not support calculating occupancy"; its ``compute_occupancy_for_kernel``, ``smem_size +
static >= max``, serves the SM80 MoE and fpA_intB launchers). Measured on an H200 (opt-in
limit 232448 B): ``cudaFuncSetAttribute(MaxDynamicSharedMemorySize, 232448)`` and a launch
with 232448 B of dynamic shared memory succeed, 232449 is "invalid argument". N is below S, so an exact-fit
tactic's fix has fewer stages than the tactic. Each tactic's answer is cached (kind
``fixes``; :func:`fix_key`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ..model import BuilderBudget, Constant, Fix, LayoutReport, Provenance

if TYPE_CHECKING:
    from .kernels import Source

#: The smallest stage count searched (``sm120_blockscaled_mma_array_tma.hpp`` and the SM90
#: collectives static_assert 2 or more stages).
MIN_STAGES = 2
#: Prefix of the stage-count macros (upper case: the source scanners take macro calls so).
MACRO_PREFIX = "CL_FIX_"


#: Per arch family: the builder's stage function, as it calls it (capacity ``CAP``, carve-out
#: ``CO``, ``TileShape`` the builder's tile), the members it needs, the reduced-capacity
#: member and the capacity constant where the builder has none, and the formula in words.
class _Formula(TypedDict):
    fn: str  # the builder's stage-count call (CAP, CO: the capacity and the carve-out)
    members: tuple[str, ...]  # the collective builder's members it reads
    reduced: str  # the builder's reduced capacity's name
    capacity: str  # the arch's capacity constant
    words: str  # the formula in words, with where it is


FORMULAS: dict[str, _Formula] = {
    "sm120": {
        "fn": (
            "cutlass::gemm::collective::detail::sm100_compute_stage_count_or_override_blockscaled<"
            "static_cast<int>(CAP), typename B::SmemAllocTypeA, typename B::SmemAllocTypeB, TileShape, "
            "typename B::SmemLayoutAtomSFA, typename B::SmemLayoutAtomSFB>("
            "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(CO)>{})"
        ),
        "members": ("SmemAllocTypeA", "SmemAllocTypeB", "SmemLayoutAtomSFA", "SmemLayoutAtomSFB"),
        "reduced": "ReducedSmemCapacityBytes",
        "capacity": "cutlass::arch::sm120_smem_capacity_bytes",
        "words": (
            "(ReducedSmemCapacityBytes - C) / (A + B bytes + round_up(pipeline, 128) + SFA + SFB "
            "bytes per stage): sm100_compute_stage_count_or_override_blockscaled "
            "(gemm/collective/builders/sm100_blockscaled_umma_builder.inl), as "
            "sm120_blockscaled_mma_builder.inl calls it"
        ),
    },
    "sm90": {
        "fn": (
            "cutlass::gemm::collective::detail::compute_stage_count_or_override<static_cast<int>(CAP), "
            "typename B::ElementAMma, typename B::ElementBMma, TileShape>("
            "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(CO)>{})"
        ),
        "members": ("ElementAMma", "ElementBMma"),
        "reduced": "Sm90ReducedSmemCapacityBytes",
        "capacity": "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes",
        "words": (
            "(capacity / 128 * 128 - round_up(C, 128)) / (round_up(A + B bytes, 128) + pipeline "
            "bytes per stage): compute_stage_count_or_override (gemm/collective/builders/"
            "sm90_common.inl)"
        ),
    },
}


def fix_header(family: str) -> str:
    """The helpers the stage-count macros use (namespace ``cl_fix``): ``carveout_of<S>::value``
    (``S::bytes`` of a ``StageCountAutoCarveout``, -1 for anything else), ``budget<B>``
    (``reduced``: the builder's reduced capacity, or the arch's capacity constant where it has
    none; ``stage_bytes_1000``: 1000 x its bytes per stage, the smallest capacity for which
    its stage function gives 1000 stages; ``stages<C>()``: its stage count for carve-out C;
    all -1 where the builder lacks the members the function takes) and
    ``carveout_for<B, N>()``: the smallest carve-out C in [0, reduced] with ``stages<C>() ==
    N`` (the function does not grow with C: a binary search), -1 where none gives N."""
    f = FORMULAS[family]
    needed = ", ".join(f"typename B::{m}" for m in f["members"])
    fn = f["fn"]
    red = f["reduced"]
    return f"""// cutlass-layout: the builder's stage formula, evaluated for the stage-count macros below
#include <type_traits>
namespace cl_fix {{
template <class S, class = void> struct carveout_of {{ static constexpr long long value = -1; }};
template <class S> struct carveout_of<S, std::void_t<decltype(S::bytes)>> {{
  static constexpr long long value = S::bytes; }};
template <class B, class = void> struct budget {{
  static constexpr long long reduced = -1, stage_bytes_1000 = -1;
  template <long long CO> static constexpr long long stages() {{ return -1; }}
}};
template <class B> struct budget<B, std::void_t<{needed}, decltype(B::PipelineStages)>> {{
  using TileShape = typename B::CollectiveOp::TileShape;
  static constexpr long long reduced = cl_detail::has_{red}<B>::value > 1
      ? cl_detail::has_{red}<B>::value - 1 : static_cast<long long>({f["capacity"]});
  template <long long CO> static constexpr long long stages() {{
    constexpr long long CAP = reduced; return {fn}; }}
  struct Fn0 {{ template <int CAP> static constexpr int stages() {{
    constexpr long long CO = 0; return {fn}; }} }};
  static constexpr long long stage_bytes_1000 = cl_detail::min_capacity<Fn0, 0, 2000000000>();
}};
template <class B, long long N, long long Lo, long long Hi>
constexpr long long least_carveout() {{
  if constexpr (Lo >= Hi) {{ return Lo; }}
  else {{
    constexpr long long Mid = (Lo + Hi) / 2;
    if constexpr (budget<B>::template stages<Mid>() <= N) {{ return least_carveout<B, N, Lo, Mid>(); }}
    else {{ return least_carveout<B, N, Mid + 1, Hi>(); }}
  }}
}}
template <class B, long long N> constexpr long long carveout_for() {{
  if constexpr (budget<B>::reduced < 0) {{ return -1; }}
  else {{
    constexpr long long c = least_carveout<B, N, 0, budget<B>::reduced>();
    if constexpr (budget<B>::template stages<c>() == N) {{ return c; }} else {{ return -1; }}
  }}
}}
}}  // namespace cl_fix
"""


def fix_macro(
    name: str, params: str, body: str, capacity: str, family: str, with_params: bool = False
) -> tuple[str, str] | None:
    """``(macro name, its #define lines)``: launcher macro ``name`` (``params``, ``body``) with
    its mainloop builder's stage count a first parameter ``CL_STAGES``, cut after its kernel
    alias with the engine's in-place probe after it and the builder's budget
    (:func:`fix_header`) as aliases ``cl_k<i>_Fix*`` (``char[2 + value]``): ``FixReduced``,
    ``FixStageBytes1000``, ``FixCarveout`` (for ``CL_STAGES``) and ``FixGiven`` (the carve-out
    the launcher gives); None when the body has no mainloop builder. ``with_params``: the probe
    completes the kernel's ``Params`` too (:func:`lay_out_again`; another macro name)."""
    from ..cpp.text import KERNEL_ALIAS_RE, mainloop_builder, trimmed_macro, with_stage_count
    from ..cpp.brackets import blank_comments
    from .preludes import in_place_probe

    found = mainloop_builder(body)
    fixed = with_stage_count(body, "CL_STAGES")
    if found is None or fixed is None:
        return None
    given = " ".join(blank_comments(body[found[1][0] : found[1][1]]).split())
    (b0, _), (s, e) = found
    shift = len(fixed) - len(body)
    builder = " ".join(blank_comments(fixed[b0 : found[0][1] + shift]).split())
    digest = (
        hashlib.sha256(f"{name}({params}){body}{'+params' if with_params else ''}".encode()).hexdigest()[:12].upper()
    )
    new = f"{MACRO_PREFIX}{digest}"
    last = len(KERNEL_ALIAS_RE.findall(blank_comments(fixed))) - 1
    place = in_place_probe(capacity, params=with_params)

    def probe(i: int, alias: str, in_class: bool) -> str:
        text = place(i, alias, in_class)
        if i != last or in_class:
            return text
        p = f"cl_k{i}_"
        return (
            text + f" using {p}FixReduced = char[2 + cl_fix::budget<{builder}>::reduced];"
            f" using {p}FixStageBytes1000 = char[2 + cl_fix::budget<{builder}>::stage_bytes_1000];"
            f" using {p}FixCarveout = char[2 + cl_fix::carveout_for<{builder}, CL_STAGES>()];"
            f" using {p}FixGiven = char[2 + cl_fix::carveout_of<{given}>::value];"
        )

    text = trimmed_macro(new, f"CL_STAGES, {params}", fixed, probe=probe)
    return (new, text) if text is not None else None


@dataclass
class Want:
    """One tactic to search: where its launcher is invoked and how it was laid out.

    Attributes:
        key: the caller's name for it (the tactic's id).
        source: the generated source (:class:`cutlass_layout.installs.kernels.Source`).
        line: the line of the launcher macro's invocation; macro: ``(name, [arguments])``.
        launcher_file, launcher_line: the file defining the macro (absolute) and the line of
            its kernel alias there.
        report: the tactic's layout (its stage count, kernel and mainloop).
        cache_key: the key its fix is cached under (:func:`fix_key`).
    """

    key: str
    source: Source
    line: int
    macro: tuple
    launcher_file: str
    launcher_line: int | None
    report: LayoutReport
    cache_key: str | None = None


def fix_key(want: Want, target: list, kind: str = "fixes") -> str:
    """The results-cache key of ``want``'s fix: the source's text, its flags, the invocation,
    the launcher file's text, the tactic's stage count, ``target`` (install, tree, libclang,
    CUDA) and this code with the engine's (the cache kind ``kind``'s row: ``fixes``, or
    ``tactic-params`` for :func:`lay_out_again`'s Params)."""
    from ..core.cache import KINDS

    def digest(path) -> str:
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return ""

    return KINDS[kind].key(
        subject=[
            digest(want.source.path),
            list(want.source.flags),
            want.line,
            [want.macro[0], list(want.macro[1])],
            digest(want.launcher_file),
            want.report.stages,
        ],
        target=list(target),
    )


def is_fix(rep: LayoutReport) -> bool:
    """Whether a layout of the search, ``StageCount<N>``'s, can be the fix: it compiled and
    its kernel fits (:attr:`~cutlass_layout.model.LayoutReport.fits`, headroom >= 0: an exact
    fit too, as ``layout``'s verdict and ``sweep``'s ``max that fits`` count it)."""
    return rep.error is None and bool(rep.fits)


@dataclass
class _Candidate:
    want: int  # index into the group's wants
    stages: int
    macro: str
    args: list
    namespaces: list


def uncounted(rep: LayoutReport, budget: BuilderBudget) -> tuple[int, dict]:
    """``(bytes, by kind)``: the kernel bytes of ``rep`` that ``budget`` (the builder's count:
    carve-out + stages x bytes per stage) does not account for, and where they are in the
    kernel's SharedStorage: ``padding`` (alignment gaps and tail padding between and after its
    parts), ``pipelines`` (the kernel's pipelines but the scheduler's and the epilogue's),
    ``scheduler`` (its pipeline and responses), ``descriptors`` (the mainloop's TMA
    descriptors), and ``counted_differently`` (the rest: per stage the builder counts a
    pipeline rounded up to 128 bytes, and the carve-out the epilogue's whole storage, which
    the kernel splits between its parts). The kinds add up to the bytes."""
    k = rep.kernel
    assert k is not None  # the fix of a kernel (its report has one)
    gap = k.size - budget.budgeted_bytes
    parts = {"padding": 0, "pipelines": 0, "scheduler": 0, "descriptors": 0}
    covered = 0
    for f in k.fields:
        subs = f.fields if f.name in ("tensors", "pipelines", "tensormaps") and f.fields else [f]
        for s in subs:
            covered += s.size
            name, parent = s.name.lower(), (f.name if s is not f else None)
            if "epi" in name or parent == "tensors":
                continue  # the epilogue's (the carve-out) and the stages' tensors: counted
            if "sched" in name:
                parts["scheduler"] += s.size
            elif parent == "tensormaps":
                parts["descriptors"] += s.size
            elif parent == "pipelines":
                parts["pipelines"] += s.size
    parts["padding"] = k.size - covered
    parts["counted_differently"] = gap - sum(parts.values())
    return gap, parts


def search_fixes(wants: list[Want], provenance: Provenance, pch, family: str, capacity: str) -> list[Fix]:
    """The :class:`~cutlass_layout.model.Fix` of each of ``wants`` (one folder, flags and
    leading includes: one translation unit per round, see the module docstring); also run in
    a worker process. ``pch``: the precompiled header of their includes (a path, None, or a
    function returning one, called only when there is something to parse); ``family``: the
    :data:`FORMULAS` entry of the arch; ``capacity``: its capacity constant's C++ name.

    Never raises for a launcher that cannot be searched: its fix says why (``error``).
    Its steps, in order: :func:`_plans`, :func:`_write_fix_header`, :func:`_fix_batch`,
    :func:`_search`, :func:`_fill_fixes`."""
    fixes, plans, texts = _plans(wants, family, capacity)
    if not plans:
        return fixes
    if callable(pch):
        pch = pch()
    hpath = _write_fix_header(family, plans)
    batch, extras = _fix_batch(wants, plans, texts, provenance, pch, hpath)
    best = _search(batch, wants, fixes, plans)
    if best is not None:  # None: the engine failed, and every fix searched says why
        _fill_fixes(fixes, wants, best, extras, family)
    return fixes


def _plans(
    wants: list[Want], family: str, capacity: str, with_params: bool = False
) -> tuple[list[Fix], list[tuple], dict[str, str]]:
    """``(fixes, plans, texts)``: a :class:`~cutlass_layout.model.Fix` per want (with its
    ``error``, or ``fewest_stages`` where nothing below its stage count compiles, for a want
    not searched), ``(want index, (fixed macro name, its definition), namespaces)`` of each
    want to search, and the sources' texts read (by path). ``with_params``: the macros of
    :func:`lay_out_again` (every want planned, whatever its stage count)."""
    from ..core.files import read_text
    from ..cpp.declarations import enclosing_namespaces
    from ..errors import BadInput

    fixes: list[Fix] = []
    macros: dict[tuple, tuple] = {}
    texts: dict[str, str] = {}
    plans = []  # (want index, fixed macro, namespaces)
    for i, w in enumerate(wants):
        fixes.append(Fix(formula=FORMULAS[family]["words"]))
        if w.report.stages is None:
            fixes[i].error = "the tactic's stage count is not known: nothing to search below it"
            continue
        if w.report.stages <= MIN_STAGES and not with_params:  # nothing below it compiles: none fits
            fixes[i].fewest_stages = MIN_STAGES
            continue
        made = _fixed_macro(w, macros, capacity, family, with_params)
        if made[0] == "error":
            fixes[i].error = made[1]
            continue
        path = str(w.source.path)
        if path not in texts:
            try:
                texts[path] = read_text(w.source.path, what="source", limit=False)
            except BadInput as exc:
                texts[path] = ""
                fixes[i].error = str(exc)
                continue
        ns = enclosing_namespaces(texts[path], w.line)
        if ns is None:
            fixes[i].error = "the launcher is invoked inside a class or function: not searched"
            continue
        plans.append((i, made, ns))
    return fixes, plans, texts


def _fixed_macro(
    w: Want, macros: dict[tuple, tuple], capacity: str, family: str, with_params: bool = False
) -> tuple[str, str]:
    """:func:`fix_macro` of ``w``'s launcher macro (read once per file, macro and line, in
    ``macros``), or ``("error", why)``."""
    from ..cpp.macros import macro_definition

    mkey = (w.launcher_file, w.macro[0], w.launcher_line, with_params)
    if mkey not in macros:
        try:
            text = Path(w.launcher_file).read_text(errors="replace")
        except OSError as exc:
            text = None
            macros[mkey] = ("error", f"cannot read {w.launcher_file}: {exc.strerror or exc}")
        if text is not None:
            found = macro_definition(text, w.macro[0], near_line=w.launcher_line)
            made = fix_macro(w.macro[0], found[0], found[1], capacity, family, with_params) if found else None
            macros[mkey] = made or (
                "error",
                f"{w.macro[0]} names no mainloop CollectiveBuilder whose stage count could be replaced",
            )
    return macros[mkey]


def _write_fix_header(family: str, plans: list[tuple]) -> Path:
    """The ``-include`` file of the search's parses in the cache (``preludes/fix-<hash>.h``):
    :func:`fix_header` and the fixed macros, each once; written where its bytes differ."""
    from ..core.cache import cache_dir, write_atomic

    header = fix_header(family) + "".join(dict.fromkeys(m[1] for _, m, _ in plans))
    hpath = cache_dir("preludes") / ("fix-" + hashlib.sha256(header.encode()).hexdigest()[:24] + ".h")
    data = header.encode()
    try:
        same = hpath.read_bytes() == data
    except OSError:
        same = False
    if not same:
        write_atomic(hpath, data)
    return hpath


def _fix_batch(
    wants: list[Want],
    plans: list[tuple],
    texts: dict[str, str],
    prov: Provenance,
    pch,
    hpath: Path,
    msvc: bool = False,
) -> tuple:
    """``(batch, extras)``: the engine's :class:`~cutlass_layout.engine.loop.Batch` of the
    search (the first planned source's text, its launcher calls blanked, with one
    ``namespace cl_probe_<i>`` block per candidate calling the fixed macro with its stage
    count), and the dict its reader fills with each candidate's ``Fix*`` constants (by the
    candidate's ``id``). ``msvc``: parsed on the MSVC x64 host ABI
    (:func:`cutlass_layout.cpp.clang.msvc_flags`; ``pch`` then one built with those flags)."""
    from ..cpp.macros import blank_calls
    from ..engine.loop import Batch
    from .kernels import split_preamble

    first = wants[plans[0][0]].source
    _, head = split_preamble(texts[str(first.path)])
    head = blank_calls(head, sorted({wants[i].macro[0] for i, _, _ in plans}))
    extras: dict[int, dict] = {}

    def parse(text: str, _members):
        from ..cpp.clang import ProbeUnit, msvc_flags

        flags = msvc_flags(list(first.flags)) if msvc else list(first.flags)
        flags += ["-include-pch", pch] if pch else []
        flags += ["-iquote", str(first.path.parent), "-include", str(hpath)]
        return ProbeUnit(text, flags, first.include_root, filename=str(first.path), skip_bodies=False)

    def block(c: _Candidate, index: int, _budget: bool) -> tuple[str, str]:
        opening = " ".join(f"namespace {n} {{" for n in c.namespaces)
        closing = " ".join("}" for _ in c.namespaces)
        return (
            f"\n{opening} namespace cl_probe_{index} {{\n{c.macro}({c.stages}, {', '.join(c.args)});\n}} {closing}\n"
        ), ""

    def read(unit, c: _Candidate, index: int) -> LayoutReport:
        from ..cpp.clang import ProbeUnit
        from ..engine.numbers import read_subject

        names = _probe_names(unit, f"cl_probe_{index}")
        rep = read_subject(unit, {k: v for k, v in names.items() if not k.startswith("Fix")}, _Subject(c), prov)
        try:
            extras[id(c)] = {k: ProbeUnit.int_alias(v) - 2 for k, v in names.items() if k.startswith("Fix")}
        except ValueError:
            extras[id(c)] = {}
        return rep

    def failed(c: _Candidate, err) -> LayoutReport:
        return LayoutReport(config={}, provenance=prov, error=err)

    batch = Batch(head=head, parse=parse, block=block, read=read, failed=failed, where=f"source {first.path}")
    return batch, extras


def lay_out_again(
    wants: list[Want], provenance: Provenance, pch, family: str, capacity: str, *, msvc: bool = False
) -> list:
    """Each of ``wants``' kernels laid out again at its own stage count S, its ``Params``
    completed (``layout --tactic``'s :attr:`~cutlass_layout.model.LayoutReport.params`: one
    probe per tactic, never part of an audit): its launcher macro as the fix search writes it
    (:func:`fix_macro`, ``with_params``) invoked with ``StageCount<S>``, through the engine's
    one layout loop. One entry per want: its :class:`~cutlass_layout.model.LayoutReport`, or
    why there is none (a str: the launcher cannot be re-invoked). The caller checks that the
    kernel is the tactic's (its SharedStorage and stages equal the tactic's) before taking
    anything from it: ``StageCount<S>`` in place of the launcher's own stage-count argument
    builds the same collective only where the builder chose S itself. ``msvc``: parsed on the
    MSVC x64 host ABI (``pch``: one built with its flags), the report's ``params`` then that
    ABI's."""
    from ..engine.loop import lay_out

    fixes, plans, texts = _plans(wants, family, capacity, with_params=True)
    out: list = [f.error or "not laid out again" for f in fixes]
    if not plans:
        return out
    if callable(pch):
        pch = pch()
    hpath = _write_fix_header(family, plans)
    batch, _ = _fix_batch(wants, plans, texts, provenance, pch, hpath, msvc)
    cands = [_Candidate(i, _stages(wants[i]), made[0], list(wants[i].macro[1]), ns) for i, made, ns in plans]
    for c, rep in zip(cands, lay_out(batch, cands)):
        out[c.want] = rep
    return out


def _search(batch, wants: list[Want], fixes: list[Fix], plans: list[tuple]) -> dict | None:
    """The rounds of the search (:func:`_one_less`, :func:`_predicted`, :func:`_rest`), each
    one :func:`~cutlass_layout.engine.loop.lay_out` of the candidates of the tactics not yet
    :func:`_settled`; each layout recorded in its fix's ``searched`` (N -> bytes, None: does
    not compile). ``{want index: (candidate, report)}`` of the largest N that fits, or None
    where the engine failed (each fix searched then says why)."""
    from ..engine.loop import lay_out
    from ..errors import BadInput

    todo = {i: (made, ns) for i, made, ns in plans}
    best: dict[int, tuple[_Candidate, LayoutReport]] = {}
    for pick in (_one_less, _predicted, _rest):
        cands = [
            _Candidate(i, n, made[0], list(wants[i].macro[1]), ns)
            for i, (made, ns) in todo.items()
            for n in pick(wants[i], fixes[i])
        ]
        if not cands:
            continue
        try:
            reps = lay_out(batch, cands)
        except BadInput as exc:
            for i in todo:
                fixes[i].error = str(exc)
            return None
        for c, rep in zip(cands, reps):
            fix = fixes[c.want]
            fix.searched[c.stages] = None if rep.error is not None else rep.smem_bytes
            if is_fix(rep):
                if c.want not in best or best[c.want][0].stages < c.stages:
                    best[c.want] = (c, rep)
            elif rep.error is not None and fix.error is None:
                fix.error = f"StageCount<{c.stages}>: {rep.error.one_line()}"
        todo = {i: v for i, v in todo.items() if not _settled(wants[i], fixes[i], best.get(i))}
    return best


def _stages(w: Want) -> int:
    """The tactic's stage count S, known for a want searched (:func:`_plans`)."""
    assert w.report.stages is not None
    return w.report.stages


def _settled(w: Want, fix: Fix, best: tuple | None) -> bool:
    """Whether a tactic's search is done: its largest N that fits (``best``) is known, and the
    first N above it that compiles is S or does not fit."""
    if best is None:
        return False
    for m in range(best[0].stages + 1, _stages(w)):
        if m not in fix.searched:
            return False
        if fix.searched[m] is not None:
            return True  # compiles, and does not fit (else it would be the best)
    return True


def _one_less(w: Want, fix: Fix) -> list[int]:
    """The first round: S - 1."""
    return [_stages(w) - 1]


def _predicted(w: Want, fix: Fix) -> list[int]:
    """The second round: two layouts give the bytes a stage takes: N and N + 1 around the
    capacity (:func:`predicted_stages`); else (S - 1 does not compile: some collectives take
    even stage counts only) the two below."""
    rep, searched = w.report, fix.searched
    s = _stages(w)
    n = predicted_stages(rep.smem_bytes, searched.get(s - 1), s, rep.capacity_bytes)
    picks: tuple[int, ...]
    if n is not None:
        picks = (n, n + 1)
    elif s - 1 in searched and searched[s - 1] is None:
        picks = (s - 3, s - 2)
    else:
        picks = ()
    return [m for m in picks if MIN_STAGES <= m <= s - 2]


def _rest(w: Want, fix: Fix) -> list[int]:
    """The last round: every N from :data:`MIN_STAGES` below S - 1 not laid out yet."""
    return [n for n in range(MIN_STAGES, _stages(w) - 1) if n not in fix.searched]


def _fill_fixes(fixes: list[Fix], wants: list[Want], best: dict, extras: dict[int, dict], family: str) -> None:
    """Each tactic's fix from its best layout: its stage count and bytes, and, where the fixed
    macro's ``Fix*`` constants were read, the builder's budget and what it does not count
    (:func:`uncounted`)."""
    for i, (c, rep) in best.items():
        fix, w = fixes[i], wants[i]
        fix.error = None
        fix.stages, fix.kernel_bytes, fix.headroom_bytes = c.stages, rep.smem_bytes, rep.headroom_bytes
        fix.mainloop_bytes = rep.mainloop.size if rep.mainloop is not None else None
        got = extras.get(id(c), {})
        carve = got.get("FixCarveout", -1)
        fix.carveout_bytes = carve if carve >= 0 else None
        reduced, per1000, given = got.get("FixReduced", -1), got.get("FixStageBytes1000", -1), got.get("FixGiven", -1)
        if reduced > 0 and per1000 > 0 and given >= 0 and w.report.kernel is not None:
            fix.builder = BuilderBudget(
                capacity=Constant(name=FORMULAS[family]["reduced"], value=reduced),
                carveout_bytes=given,
                stage_bytes=per1000 // 1000,
                stages=w.report.stages,
            )
            fix.uncounted_bytes, fix.uncounted = uncounted(w.report, fix.builder)


def predicted_stages(
    kernel_bytes: int | None, below_bytes: int | None, stages: int, capacity: int | None
) -> int | None:
    """The largest stage count whose kernel would fit ``capacity`` (bytes) if each stage took
    the bytes that one stage less took off: ``kernel_bytes`` (the tactic's
    ``sizeof(SharedStorage)``, with ``stages``) less ``below_bytes`` (the kernel's with
    ``stages - 1``, as clang laid it out); None where that cannot be said (a size unknown, or
    one stage less not smaller). Only what :func:`search_fixes` lays out next depends on it:
    the mainloop's ``smem_A``/``smem_B`` arrays and its pipeline's barriers grow by a stage each
    (``sm90_mma_*``' ``SharedStorage``), and alignment can add or take a few bytes, which the
    layout of N + 1 checks."""
    if kernel_bytes is None or below_bytes is None or capacity is None or below_bytes >= kernel_bytes:
        return None
    over = below_bytes - capacity  # > 0: stages - 1 does not fit
    return stages - 1 - max(0, -(-over // (kernel_bytes - below_bytes)))


class _Subject:
    """What :func:`cutlass_layout.engine.numbers.read_subject` needs of a candidate: its config dict."""

    def __init__(self, c: _Candidate):
        self.c = c

    def to_dict(self) -> dict:
        return {"stages": self.c.stages}


def _probe_names(unit, namespace: str) -> dict:
    """The in-place probe's declarations (``cl_k<i>_<name>`` -> ``name``) in the function
    bodies of the namespaces named ``namespace`` of the unit's main file (at any depth)."""
    from ..cpp.cursors import namespace_functions, statement_declarations

    out: dict = {}
    pattern = re.compile(r"^cl_k\d+_(\w+)$")
    for fn in namespace_functions(unit.tu.cursor, unit.filename, namespace):
        for c in statement_declarations(fn):
            m = pattern.match(c.spelling)
            if m:
                out[m.group(1)] = c
    return out


__all__ = ["FORMULAS", "Want", "fix_header", "fix_key", "fix_macro", "lay_out_again", "search_fixes", "uncounted"]
