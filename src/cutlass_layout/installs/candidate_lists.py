"""What the MoE runtime's own functions return, run over or read from an install's code: the
SM10x and SM90 candidate lists (``get_candidate_configs`` in
``tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp``, run by
:class:`~cutlass_layout.cpp.interpret.Eval`: :func:`sm100_lists`, :func:`sm90_lists`), what
``getTmaWarpSpecializedConfigs`` (``moe_gemm/moe_gemm_template_dispatch.h``) does for SM103
(:func:`sm103_rules`, from its tokens), and the bodies of the traits functions
``isValidHopperMOESpecialisation`` and ``isValidAmpereMOESpecialisation``
(``moe_gemm/moe_tma_warp_specialized_traits.h``, read from the text: :func:`hopper_valid_rule`,
:func:`fallback_excludes_fp4`). Assembled into a candidate list by
:func:`cutlass_layout.installs.candidates.read_candidates`.
"""

from __future__ import annotations

from collections import ChainMap
from pathlib import Path
from typing import Any

from .moe_runners import (
    DISPATCH,
    HEURISTIC,
    SM90_RUNNERS,
    SM100_RUNNERS,
    TLLM_TYPE,
    TRAITS,
    runner_flags,
    runner_flags_sm90,
)


def definitions(unit, sources: Path):
    """``(kind, cursor)`` of the function definitions at namespace and class scope of the
    install's own sources (files below ``sources``; see
    :func:`~cutlass_layout.cpp.cursors.function_definitions`)."""
    from ..cpp.cursors import function_definitions

    return function_definitions(unit.tu.cursor, (str(sources), str(sources.resolve())))


def _candidate_function(unit, sources: Path):
    """The definition of ``get_candidate_configs`` (``cutlass_heuristic.cpp``), or None."""
    return next(
        (c for kind, c in definitions(unit, sources) if kind == "function" and c.spelling == "get_candidate_configs"),
        None,
    )


def sm100_lists(unit, sources: Path, sm: int = 100, rules: dict | None = None) -> dict[str, list] | str:
    """``{flags: [[tile enum, cluster_shape, dynamic, epilogue schedule], ...]}``: what the
    install's ``get_candidate_configs(sm, 1, flags)`` (``cutlass_heuristic.cpp``, which calls
    ``get_candidate_configs_sm100`` and its ``..._dynamic_cluster_shape``) returns for the flags of
    each of :data:`~cutlass_layout.installs.moe_runners.SM100_RUNNERS`, run over its code by
    :class:`~cutlass_layout.cpp.interpret.Eval` (``dynamic``: a ``dynamic_cluster_shape`` other than
    ``Undefined``); or the line saying why it cannot be read.

    ``sm`` 103 (``rules``: :func:`sm103_rules`, the runner's list as
    ``getTmaWarpSpecializedConfigs`` builds it): for a runner whose ``to_sm100`` variable is
    true the list of ``sm`` 100, else of 103 with, where its ``append_sm100`` variable is
    true, SM100's list after it; each row gets a fifth entry, the arch tag of the kernel the
    config runs: 103 for a config of ``sm_version`` 103 of a runner whose activation and
    weight are FP4 (the dispatch's SM103 switch), else 100."""
    from ..cpp.interpret import Eval, Unreadable

    rules = rules or {}
    fn = _candidate_function(unit, sources)
    if fn is None:
        return f"runtime candidates: get_candidate_configs not found in {HEURISTIC}"
    out: dict[str, list] = {}
    for act, weight in SM100_RUNNERS:
        flags = runner_flags(act, weight)
        if str(flags) in out:
            continue
        t, w = TLLM_TYPE[act], TLLM_TYPE[weight]
        facts = {"use_fp4": t == "fp4", "use_wfp4afp8": t == "fp8" and w == "fp4"}  # moe_gemm_kernels.h
        calls = [sm]
        if sm == 103:
            if rules.get("to_sm100") and facts[rules["to_sm100"]]:
                calls = [100]
            elif rules.get("append_sm100") and facts[rules["append_sm100"]]:
                calls = [103, 100]
        try:
            rows = []
            for arg in calls:
                for c in Eval().call(fn, [arg, 1, flags]) or []:
                    row = [
                        c["tile_config_sm100"].name,
                        c["cluster_shape"].name,
                        c["dynamic_cluster_shape"].name != "Undefined",
                        c["epilogue_schedule"].name,
                    ]
                    if sm == 103:
                        row.append(103 if c["sm_version"] == 103 and t == w == "fp4" else 100)
                    rows.append(row)
        except (Unreadable, KeyError, AttributeError, TypeError, IndexError) as exc:
            return f"runtime candidates: get_candidate_configs for SM{sm} cannot be followed ({exc})"
        out[str(flags)] = rows
    return out


def sm90_lists(unit, sources: Path, tma_configs, hopper_valid) -> dict[str, list] | str:
    """``{runner: [[tile enum, cluster_shape, mainloop schedule, swap_ab only], ...]}`` for each of
    :data:`~cutlass_layout.installs.moe_runners.SM90_RUNNERS` (keyed as
    :func:`~cutlass_layout.installs.moe_runners.sm90_runner` keys a tactic's): what
    ``MoeGemmRunner::getTmaWarpSpecializedConfigs(90, ...)`` (``tma_configs``, its definition)
    builds, read from the install's code: an empty list where ``isValidHopperMOESpecialisation``
    (``hopper_valid``: :func:`hopper_valid_rule`) refuses the types; else the rows of
    ``get_candidate_configs(90, 1, flags)`` (``cutlass_heuristic.cpp``:
    ``get_candidate_configs_sm90`` over ``get_candidate_tiles_sm90``, run by
    :class:`~cutlass_layout.cpp.interpret.Eval` for
    :func:`~cutlass_layout.installs.moe_runners.runner_flags_sm90`), then the rows of the statement
    of ``getTmaWarpSpecializedConfigs`` that names ``Sm90Wfp4Afp8Mode`` (the Humming pre-MMA block
    after the FINALIZE and swap_ab duplications, which pushes configs with ``swap_ab`` set), run by
    :class:`~cutlass_layout.cpp.interpret.Eval` with the runner's ``use_wfp4afp8``, mode and ``sm``
    90. Or the line saying why it cannot be read: the function has another shape (no such statement,
    or another statement after it than ``return tma_ws_configs;``)."""
    from ..cpp.cursors import body_statements, enumerators_referenced, is_if, tokens
    from ..cpp.interpret import EnumValue, Eval, Unreadable

    fn = _candidate_function(unit, sources)
    if fn is None or tma_configs is None:
        return f"runtime candidates: get_candidate_configs or getTmaWarpSpecializedConfigs not found in {HEURISTIC} / {DISPATCH}"
    stmts = body_statements(tma_configs)
    at = [i for i, st in enumerate(stmts) if is_if(st) and "Sm90Wfp4Afp8Mode" in tokens(st)]
    rest = [tokens(st) for st in stmts[at[0] + 1 :]] if len(at) == 1 else None
    if [[t for t in r if t != ";"] for r in rest or []] != [["return", "tma_ws_configs"]]:
        return (
            "runtime candidates: getTmaWarpSpecializedConfigs has no single last statement naming "
            f"Sm90Wfp4Afp8Mode before its return ({DISPATCH})"
        )
    block = stmts[at[0]]
    modes = {
        name: EnumValue(value, name, "Sm90Wfp4Afp8ScaleMode")
        for name, value in enumerators_referenced(block, "Sm90Wfp4Afp8ScaleMode").items()
    }
    out: dict[str, list] = {}
    for t, w, mode in SM90_RUNNERS:
        key = f"{t}x{w}" + ("" if mode is None else "/humming" if mode == "kHummingPreMmaE8M0" else "/post")
        if mode is not None and mode not in modes:
            return f"runtime candidates: Sm90Wfp4Afp8ScaleMode has no {mode} ({DISPATCH})"
        flags = runner_flags_sm90(t, w, humming=mode == "kHummingPreMmaE8M0")
        rows: list = []
        if hopper_valid(t, w):
            try:
                for c in Eval().call(fn, [90, 1, flags]) or []:
                    rows.append(
                        [c["tile_config_sm90"].name, c["cluster_shape"].name, c["mainloop_schedule"].name, False]
                    )
                env: ChainMap[str, Any] = ChainMap(
                    {
                        "use_wfp4afp8": t == "fp8" and w == "fp4",
                        "sm": 90,
                        "tma_ws_configs": [],
                        "Sm90Wfp4Afp8Mode": modes.get(mode or "kDisabled", EnumValue(0, "kDisabled", "")),
                    }
                )
                Eval().run(block, env)
                for c in env["tma_ws_configs"]:
                    if c.get("swap_ab") is not True:
                        raise Unreadable("a config of the Sm90Wfp4Afp8Mode block without swap_ab")
                    rows.append(
                        [c["tile_config_sm90"].name, c["cluster_shape"].name, c["mainloop_schedule"].name, True]
                    )
            except (Unreadable, KeyError, AttributeError, TypeError, IndexError) as exc:
                return f"runtime candidates: getTmaWarpSpecializedConfigs for SM90 cannot be followed ({exc})"
        if key in out and out[key] != rows:
            return f"runtime candidates: the SM90 runners of {key} have different lists"
        out[key] = rows
    return out


#: ``isValidHopperMOESpecialisation``'s body (``moe_gemm/moe_tma_warp_specialized_traits.h``),
#: its ``#if`` branches taken, without spaces -> which (activation, weight) it allows
_HOPPER_VALID = {
    "ifconstexpr(Fusion==TmaWarpSpecializedGroupedGemmInput::EpilogueFusion::ACTIVATION){returnfalse;}"
    "return(cutlass::platform::is_same<T,WeightType>::value||(cutlass::platform::is_same<cutlass::uint4b_t,"
    "WeightType>::value&&cutlass::platform::is_same<T,__nv_fp8_e4m3>::value)||cutlass::platform::is_same<"
    "Fp4Type,WeightType>::value)&&!cutlass::platform::is_same<T,Fp4Type>::value&&cutlass::platform::"
    "is_same<EpilogueTag,cutlass_extensions::EpilogueOpDefault>::value;": lambda t, w: (
        (t == w or (w == "uint4" and t == "fp8") or w == "fp4") and t != "fp4"
    ),
    "ifconstexpr(Fusion==TmaWarpSpecializedGroupedGemmInput::EpilogueFusion::ACTIVATION){returnfalse;}"
    "return(cutlass::platform::is_same<T,WeightType>::value||(cutlass::platform::is_same<cutlass::uint4b_t,"
    "WeightType>::value&&cutlass::platform::is_same<T,__nv_fp8_e4m3>::value))&&cutlass::platform::"
    "is_same<EpilogueTag,cutlass_extensions::EpilogueOpDefault>::value;": lambda t, w: (
        t == w or (w == "uint4" and t == "fp8")
    ),
    "ifconstexpr(Fusion==TmaWarpSpecializedGroupedGemmInput::EpilogueFusion::ACTIVATION){returnfalse;}"
    "returnfalse;": lambda t, w: False,
}


def hopper_valid_rule(inc: Path, defined: set[str]):
    """Which TensorRT-LLM types (:data:`~cutlass_layout.installs.moe_runners.SM90_RUNNERS`' names)
    ``isValidHopperMOESpecialisation<T,
    WeightType>()`` (``moe_gemm/moe_tma_warp_specialized_traits.h`` below ``inc``) allows, for
    the default epilogue and a fusion other than ACTIVATION: its body with the branches of its
    ``#if defined(X)`` / ``#ifdef X`` taken for the macros in ``defined`` (``ENABLE_FP4``,
    ``CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED``), one of the bodies of
    :data:`_HOPPER_VALID`; None for another body. Read from the text (the audit's parses take
    that header from a precompiled header built without function bodies)."""
    body = traits_function("isValidHopperMOESpecialisation", inc, defined)
    return None if body is None else _HOPPER_VALID.get("".join(body.split()))


def traits_function(name: str, inc: Path, defined) -> str | None:
    """The body of ``constexpr bool name()`` in ``moe_gemm/moe_tma_warp_specialized_traits.h``
    (:data:`~cutlass_layout.installs.moe_runners.TRAITS` below ``inc``), comments blanked, with the
    preprocessor's branches taken for the macros ``defined``
    (:func:`cutlass_layout.cpp.preprocessor.active_text`; the lines of branches not taken and of the
    conditional directives emptied); None where the header or the function is not there, its
    conditionals do not balance or other directives are left in it."""
    import re

    from ..cpp.preprocessor import active_text, directives
    from ..cpp.brackets import blank_comments

    try:
        text = blank_comments((inc / TRAITS).read_text(errors="replace"))
    except OSError:
        return None
    m = re.search(rf"constexpr\s+bool\s+{name}\s*\(\s*\)\s*\{{(.*?)\n\}}", text, re.S)
    if m is None:
        return None
    body = m.group(1)
    depth = 0
    for d in directives(body):
        if d.kind in ("if", "ifdef", "ifndef"):
            depth += 1
        elif d.kind == "endif":
            depth -= 1
        elif d.kind not in ("elif", "else"):
            return None  # a #define, #include...: not followed here
        if depth < 0 or (d.kind in ("elif", "else") and depth == 0):
            return None
    return active_text(body, defined) if depth == 0 else None


#: The runner variables :func:`sm103_rules` knows (``MoeGemmRunner``'s, ``include/moe_gemm_kernels.h``)
_RUNNER_VARS = ("use_fp4", "use_wfp4afp8")


def sm103_rules(words: list[str]) -> dict | str:
    """What ``getTmaWarpSpecializedConfigs`` (its tokens, ``words``) does for ``sm`` 103:
    ``{"to_sm100": VAR}`` from ``sm = VAR && sm == 103 ? 100 : sm;`` (that runner gets SM100's
    list) and ``{"append_sm100": VAR}`` from ``if (sm == 103 && VAR) { ...
    get_candidate_configs(100, ...) ... }`` (SM100's list appended), each None where absent;
    or the line saying why it cannot be read: a ``103`` elsewhere in it, or a variable other
    than :data:`_RUNNER_VARS`."""
    import re

    text = " ".join(words)
    to100 = re.search(r"\bsm = (\w+) && sm == 103 \? 100 : sm ;", text)
    append = re.search(r"\bif \( sm == 103 && (\w+) \) \{ [^{}]*?\bget_candidate_configs \( 100 ,", text)
    found = [m for m in (to100, append) if m is not None]
    if words.count("103") != len(found) or any(m.group(1) not in _RUNNER_VARS for m in found):
        return (
            "runtime candidates: getTmaWarpSpecializedConfigs treats SM103 in a way this reader "
            f"does not follow ({DISPATCH})"
        )
    return {"to_sm100": to100.group(1) if to100 else None, "append_sm100": append.group(1) if append else None}


def fallback_excludes_fp4(inc: Path, flags: list[str]) -> bool:
    """Whether ``isValidAmpereMOESpecialisation`` (``moe_gemm/moe_tma_warp_specialized_traits.h``
    below ``inc``), in the branches of its ``#ifdef ENABLE_FP4`` that ``flags`` (``-DENABLE_FP4``)
    keep (:func:`traits_function`), is exactly ``return !std::is_same_v<T, Fp4Type> && !std::is_same_v<WeightType,
    Fp4Type>;``. Read from the text: the audit's parses take that header from a precompiled
    header built without function bodies."""
    from ..cpp.preprocessor import command_line_defines

    body = traits_function("isValidAmpereMOESpecialisation", inc, command_line_defines(flags))
    return body is not None and "".join(body.split()) == _AMPERE_EXCLUDES_FP4


#: ``isValidAmpereMOESpecialisation``'s body that :func:`fallback_excludes_fp4` looks for, spaces removed
_AMPERE_EXCLUDES_FP4 = "return!std::is_same_v<T,Fp4Type>&&!std::is_same_v<WeightType,Fp4Type>;"
