"""Which MoE tactics an install's runtime would try: its candidate list, read from its code.

TensorRT-LLM's MoE GEMM (vendored in flashinfer) profiles a list of tactics at run time. For
SM120 the list is built by ``get_candidate_configs_sm120`` in
``tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp`` (a list of tile enums,
``CutlassTileConfigSM120::CtaShape...B``, less the ones a grouped GEMM never dispatches), each
then duplicated for the FINALIZE fusion and for swap_ab by ``getTmaWarpSpecializedConfigs``
(``moe_gemm/moe_gemm_template_dispatch.h``); ``dispatchMoeGemmSelectTileShapeTmaWarpSpecialized``
(``moe_gemm/moe_gemm_template_dispatch_tma_ws.h``) maps an enum to a kernel with a switch on
``tile_config_sm120``.

:func:`runtime_candidates` reads those with libclang (with the module's own defines, so the
``FAST_BUILD`` branch the build leaves out is left out here too): the enum constants the
candidate function names outside its pruning lambda, the pruning lambda's ``switch`` (a case
that returns ``true`` is pruned for every grouped GEMM; one that returns the variable set from
``FP8FP4_MIXED`` only for FP8 activations), and the dispatch switch's cases. Where the code has
another shape than this, the answer is None ("cannot be read"), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .cache import ResultCache, key as cache_key

KERNELS = "tensorrt_llm/kernels/cutlass_kernels"
HEURISTIC = f"{KERNELS}/cutlass_heuristic.cpp"
DISPATCH_TMA_WS = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch_tma_ws.h"
DISPATCH = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch.h"
TRAITS = f"{KERNELS}/moe_gemm/moe_tma_warp_specialized_traits.h"
#: arch -> (candidate function, tile enum, the config member the dispatch switches on)
ARCH = {"sm120": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120"),
        "sm121": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120")}
#: element kinds that are FP8 activations (the ``FP8FP4_MIXED`` candidate flag)
FP8_KINDS = ("mxfp8", "e4m3", "e5m2")


@dataclass
class Candidates:
    """The runtime candidate tiles of one arch.

    Attributes:
        tiles: enum names in the candidate list, before pruning.
        pruned: enum name -> ``"always"`` (never tried for a grouped GEMM) or ``"fp8"`` (not
            for FP8 activations).
        dispatched: enum names the dispatch switch maps to a kernel.
        duplicated: whether the list is duplicated for FINALIZE and swap_ab.
        note: what could not be read (then tactics get None).
        duplication: the order in which ``getTmaWarpSpecializedConfigs`` appends its
            duplicates (``["finalize", "swap_ab"]``: FINALIZE copies of the list first, then
            swap_ab copies of everything so far), read from the order of the words in its
            body; empty where it has another shape.
        no_smem: whether the candidate function names ``EpilogueScheduleType::NO_SMEM`` (the
            FINALIZE copies of such configs are erased again, which :func:`moe_configs` cannot
            place).
        fallback_excludes_fp4: whether ``isValidAmpereMOESpecialisation`` returns exactly
            ``!is_same_v<T, Fp4Type> && !is_same_v<WeightType, Fp4Type>`` (so
            ``getAmpereConfigs``, appended after the TMA list, adds nothing for a runner with an
            FP4 operand; :func:`fallback_excludes_fp4`).
        tma_first: whether ``MoeGemmRunner::getConfigs(sm, ...)`` puts the TMA
            warp-specialized configs before the Ampere ones.
    """

    tiles: list[str] = field(default_factory=list)
    pruned: dict[str, str] = field(default_factory=dict)
    dispatched: list[str] = field(default_factory=list)
    duplicated: bool = False
    note: str | None = None
    duplication: list[str] = field(default_factory=list)
    no_smem: bool = False
    fallback_excludes_fp4: bool = False
    tma_first: bool = False

    def get(self, tactic) -> bool | None:
        """Whether the runtime would try ``tactic`` (a MoE :class:`~cutlass_layout.model.Tactic`);
        None for other families, or when the list was not read."""
        if tactic.family != "moe" or self.note is not None or tactic.name is None:
            return None
        name = tactic.name
        if name not in self.tiles or name not in self.dispatched:
            return False
        why = self.pruned.get(name)
        activation = tactic.b if tactic.swap_ab else tactic.a  # swap_ab: A is the weight
        if why == "always" or (why == "fp8" and activation in FP8_KINDS):
            return False
        if (tactic.fusion not in (None, "none") or tactic.swap_ab) and not self.duplicated:
            return False
        return True


def _enum_constant(cursor, enum: str) -> str | None:
    import clang.cindex as ci

    ref = cursor.referenced
    if ref is None or ref.kind != ci.CursorKind.ENUM_CONSTANT_DECL:
        return None
    parent = ref.semantic_parent
    return ref.spelling if parent is not None and parent.spelling == enum else None


def _declarations(cursor, roots: tuple[str, ...]):
    """Declarations at namespace and class scope in files below ``roots`` (the install's own
    sources), without entering function bodies or other files' namespaces (walking a whole
    translation unit with its CUTLASS headers costs tens of seconds in Python)."""
    import clang.cindex as ci

    scopes = (ci.CursorKind.NAMESPACE, ci.CursorKind.LINKAGE_SPEC, ci.CursorKind.CLASS_DECL,
              ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_TEMPLATE,
              ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
    for c in cursor.get_children():
        f = c.location.file
        if f is None or not f.name.startswith(roots):
            continue
        yield c
        if c.kind in scopes:
            yield from _declarations(c, roots)


def read_candidates(unit, arch: str, sources: Path) -> Candidates:
    """Read :class:`Candidates` from a parsed unit that includes the heuristic and both
    dispatch sources (bodies parsed), which lie below ``sources``."""
    import clang.cindex as ci

    fn_name, enum, member = ARCH[arch]
    out = Candidates()
    fn = disp = dup = None
    for c in _declarations(unit.tu.cursor, (str(sources), str(sources.resolve()))):
        if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition():
            if c.spelling == fn_name and fn is None:
                fn = c
        elif c.kind == ci.CursorKind.FUNCTION_TEMPLATE and c.is_definition():
            if c.spelling == "dispatchMoeGemmSelectTileShapeTmaWarpSpecialized":
                disp = c
        elif c.kind == ci.CursorKind.CXX_METHOD and c.spelling == "getTmaWarpSpecializedConfigs" \
                and c.is_definition():
            dup = c
        elif c.kind == ci.CursorKind.CXX_METHOD and c.spelling == "getConfigs" and c.is_definition():
            words = [t.spelling for t in c.get_tokens()]
            if "getTmaWarpSpecializedConfigs" in words and "getAmpereConfigs" in words:
                out.tma_first = words.index("getTmaWarpSpecializedConfigs") < words.index("getAmpereConfigs")

    if fn is None or disp is None:
        out.note = (f"runtime candidates: {fn_name} or the MoE tile dispatch not found in "
                    f"{HEURISTIC} / {DISPATCH_TMA_WS}")
        return out
    # the candidate list: enum constants named outside lambdas
    lambdas = []

    def walk(c, in_lambda):
        for ch in c.get_children():
            if ch.kind == ci.CursorKind.LAMBDA_EXPR:
                lambdas.append(ch)
                continue
            if ch.kind == ci.CursorKind.DECL_REF_EXPR:
                name = _enum_constant(ch, enum)
                if name and name not in out.tiles and name not in ("Undefined", "ChooseWithHeuristic"):
                    out.tiles.append(name)
            walk(ch, in_lambda)
    walk(fn, False)
    for lam in lambdas:
        pruned = _read_pruning(lam, enum)
        if pruned is None:
            out.note = f"runtime candidates: the pruning lambda of {fn_name} has an unexpected shape"
            return out
        out.pruned.update(pruned)
    # the dispatch: cases of every switch on `<config>.tile_config_sm120`
    for sw in (c for c in disp.walk_preorder() if c.kind == ci.CursorKind.SWITCH_STMT):
        cond = next(sw.get_children(), None)
        if cond is None or not any(t.spelling == member for t in cond.get_tokens()):
            continue
        for case in (c for c in sw.walk_preorder() if c.kind == ci.CursorKind.CASE_STMT):
            label = next(case.get_children(), None)
            name = next((_enum_constant(r, enum) for r in ([label] + list(label.walk_preorder()))
                         if r.kind == ci.CursorKind.DECL_REF_EXPR), None) if label else None
            if name and name not in out.dispatched and name not in ("Undefined", "ChooseWithHeuristic"):
                out.dispatched.append(name)
    if not out.dispatched:
        out.note = f"runtime candidates: no switch on {member} in the MoE tile dispatch"
        return out
    if dup is not None:
        words = [t.spelling for t in dup.get_tokens()]
        out.duplicated = "FINALIZE" in words and "swap_ab" in words
        if out.duplicated and "get_candidate_configs" in words:
            first = {w: words.index(w) for w in ("get_candidate_configs", "FINALIZE", "swap_ab")}
            if first["get_candidate_configs"] < min(first["FINALIZE"], first["swap_ab"]):
                out.duplication = sorted(("finalize", "swap_ab"),
                                         key=lambda w: first["FINALIZE" if w == "finalize" else w])
    out.no_smem = "NO_SMEM" in [t.spelling for t in fn.get_tokens()]
    return out


def fallback_excludes_fp4(inc: Path, flags: list[str]) -> bool:
    """Whether ``isValidAmpereMOESpecialisation`` (``moe_gemm/moe_tma_warp_specialized_traits.h``
    below ``inc``), in the branch of its ``#ifdef ENABLE_FP4`` that ``flags`` (``-DENABLE_FP4``)
    keep, is exactly ``return !std::is_same_v<T, Fp4Type> && !std::is_same_v<WeightType,
    Fp4Type>;``. Read from the text: the audit's parses take that header from a precompiled
    header built without function bodies."""
    import re

    from .launchers import blank_comments

    try:
        text = blank_comments((inc / TRAITS).read_text(errors="replace"))
    except OSError:
        return False
    m = re.search(r"constexpr\s+bool\s+isValidAmpereMOESpecialisation\s*\(\s*\)\s*\{(.*?)\n\}", text, re.S)
    if m is None:
        return False
    body = m.group(1)
    b = re.fullmatch(r"\s*#\s*ifdef\s+ENABLE_FP4\b(.*?)#\s*else\b(.*?)#\s*endif\s*", body, re.S)
    if b is not None:
        body = b.group(1) if "-DENABLE_FP4" in flags else b.group(2)
    return "".join(body.split()) == "return!std::is_same_v<T,Fp4Type>&&!std::is_same_v<WeightType,Fp4Type>;"


def _read_pruning(lam, enum: str) -> dict[str, str] | None:
    """``{enum name: "always"|"fp8"}`` from a lambda ``switch (c.tile) { case X: ... return
    true|false|<var set from FP8FP4_MIXED>; default: return false; }``; None for another shape."""
    import clang.cindex as ci

    switch = next((c for c in lam.walk_preorder() if c.kind == ci.CursorKind.SWITCH_STMT), None)
    if switch is None:
        return None
    out: dict[str, str] = {}
    body = list(switch.get_children())[-1]
    labels: list[str] = []

    def verdict(ret) -> str | None:
        toks = [t.spelling for t in ret.get_tokens()]
        if toks[:1] == ["return"]:
            toks = toks[1:]
        toks = [t for t in toks if t != ";"]
        if toks == ["true"]:
            return "always"
        if toks == ["false"]:
            return "never"
        if len(toks) == 1 and toks[0].isidentifier():
            return "var:" + toks[0]
        return None

    def case_chain(stmt):
        while stmt is not None and stmt.kind == ci.CursorKind.CASE_STMT:
            kids = list(stmt.get_children())
            label = next((_enum_constant(r, enum) for r in kids[0].walk_preorder()
                          if r.kind == ci.CursorKind.DECL_REF_EXPR), None)
            if label is None:
                return None
            labels.append(label)
            stmt = kids[-1]
        return stmt

    for stmt in body.get_children():
        if stmt.kind == ci.CursorKind.DEFAULT_STMT:
            continue
        if stmt.kind != ci.CursorKind.CASE_STMT:
            return None
        labels.clear()
        ret = case_chain(stmt)
        if ret is None or ret.kind != ci.CursorKind.RETURN_STMT:
            return None
        v = verdict(ret)
        if v is None:
            return None
        if v.startswith("var:"):
            var = v[4:]
            if not _set_from_mixed(lam, var):
                return None
            v = "fp8"
        for label in labels:
            if v != "never":
                out[label] = v
    return out


def _set_from_mixed(lam, var: str) -> bool:
    """Whether the lambda's capture ``var`` is a variable initialized from ``FP8FP4_MIXED``."""
    fn = lam.semantic_parent
    while fn is not None and fn.kind.name not in ("FUNCTION_DECL", "CXX_METHOD"):
        fn = fn.semantic_parent
    scope = fn if fn is not None else lam
    import clang.cindex as ci

    for c in scope.walk_preorder():
        if c.kind == ci.CursorKind.VAR_DECL and c.spelling == var:
            return "FP8FP4_MIXED" in [t.spelling for t in c.get_tokens()]
    return False


def runtime_candidates(install, arch: str, flags: list[str] | None, *, pch_preamble: str | None = None,
                       pch_key: str = "", use_cache: bool = True,
                       cached_only: bool = False) -> Candidates | None:
    """The MoE runtime candidates of ``arch`` in ``install`` (see the module docstring), or
    None where the install has no candidate function for the arch or no MoE module.

    ``flags`` are the MoE module's clang flags; ``pch_preamble`` the includes of one of its
    generated sources (:func:`cutlass_layout.kernels.pch_preamble`): the headers they include
    come from that precompiled header (the same one the sources' parses use), so only the
    heuristic and the dispatch are parsed with their bodies. Cached per (install, arch,
    flags, this code); ``cached_only``: None instead of a parse where nothing is cached.
    """
    if arch not in ARCH or flags is None:
        return None
    inc = install.root / "data" / "csrc" / "nv_internal"
    if not (inc / HEURISTIC).is_file() or not (inc / DISPATCH_TMA_WS).is_file():
        return Candidates(note=f"runtime candidates: {HEURISTIC} or {DISPATCH_TMA_WS} is missing")
    from dataclasses import asdict

    from .frontends.clang import ProbeUnit, ensure_pch, libclang_version

    k = cache_key("candidates/2", subject=[arch, flags], target=[install.fingerprint, libclang_version()],
                  code=("candidates.py", "launchers.py"))
    cache = ResultCache("candidates")
    hit = cache.get(k, lambda d: Candidates(**d)) if use_cache else None
    if hit is not None or cached_only:
        return hit
    # the dispatch header includes the TMA WS dispatch (which has no include guard)
    text = "".join(f'#include "{p}"\n' for p in (DISPATCH, HEURISTIC))
    pch = ensure_pch(pch_preamble, list(flags), pch_key) if pch_preamble else None
    try:
        unit = ProbeUnit(text, list(flags) + (["-include-pch", str(pch)] if pch else []),
                         install.tree.include_root, filename="cutlass_layout_candidates.cu",
                         skip_bodies=False)
    except Exception as exc:  # libclang could not parse at all
        return Candidates(note=f"runtime candidates: cannot parse {HEURISTIC}: {exc}")
    errors = unit.errors()
    if errors:
        out = Candidates(note=f"runtime candidates: {HEURISTIC} does not parse here ({errors[0].one_line()})")
    else:
        out = read_candidates(unit, arch, inc)
        out.fallback_excludes_fp4 = fallback_excludes_fp4(inc, list(flags))
    cache.put(k, asdict(out))
    return out


#: FP4 element kinds (TensorRT-LLM's ``Fp4Type`` operands).
FP4_KINDS = ("nvfp4", "mxfp4", "e2m1")


def moe_configs(cand: Candidates, activation: str, weight: str,
                supports_finalize_fusion: bool) -> list[tuple[str, str, bool]] | None:
    """The SM120 MoE runner's config list in the runtime's order, as
    ``MoeGemmRunner<T, WeightType, ...>::getConfigs(sm, supports_finalize_fusion)``
    (``moe_gemm/moe_gemm_template_dispatch.h``) builds it: the candidate tiles of
    ``get_candidate_configs_sm120`` in the order the function lists them, less the pruned ones
    (``"fp8"`` pruning for FP8 activations, the ``FP8FP4_MIXED`` flag), then the FINALIZE
    copies of that list (when ``supports_finalize_fusion``), then swap_ab copies of all of it
    (``getTmaWarpSpecializedConfigs``), then the Ampere fallback configs, which are none for
    a runner with an FP4 operand (``isValidAmpereMOESpecialisation``).

    ``activation`` and ``weight`` are element kinds as tactics name them (``nvfp4``,
    ``mxfp8``, ...): an FP4 x FP4 runner (TensorRT-LLM's ``use_fp4``) or an FP8 x FP4 one
    (``use_wfp4afp8``). Each entry is ``(tile enum name, "none"|"finalize", swap_ab)``; the
    list's index is what the runner's tactic ids count (GEMM1 is the list without FINALIZE,
    GEMM2 the one with it; see :mod:`cutlass_layout.commands.blocklist`).

    Returns None where the order cannot be read from the install's code: the candidate
    list was not read (``cand.note``), the duplications are not FINALIZE then swap_ab, the
    candidates name ``NO_SMEM``, the fallback list is not empty for FP4 operands, or the
    runner is of other types (its list is not the SM120 TMA one).
    """
    if cand.note is not None or not cand.tiles or cand.duplication != ["finalize", "swap_ab"] \
            or cand.no_smem or not cand.fallback_excludes_fp4 or not cand.tma_first:
        return None
    fp8_act = activation in FP8_KINDS
    if weight not in FP4_KINDS or not (activation in FP4_KINDS or fp8_act):
        return None
    base = [t for t in cand.tiles
            if cand.pruned.get(t) != "always" and not (cand.pruned.get(t) == "fp8" and fp8_act)]
    configs = [(t, "none", False) for t in base]
    if supports_finalize_fusion:
        configs += [(t, "finalize", False) for t in base]
    return configs + [(t, fusion, True) for t, fusion, _ in configs]
