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

SM100's list has another shape (``get_candidate_configs_sm100`` loops over the epilogue schedules
and dynamic cluster shapes and calls ``get_candidate_configs_sm100_dynamic_cluster_shape``, which
pushes configs under conditions on the runner's flags): it is run over its own code
(:class:`~cutlass_layout.cpp.interpret.Eval`,
:func:`~cutlass_layout.installs.candidate_lists.sm100_lists`) for the flags of each runner
(:func:`~cutlass_layout.installs.moe_runners.runner_flags`), and a tactic is tried where a config
has its tile, 1SM/2SM cluster, static or dynamic cluster and epilogue schedule
(:meth:`Candidates.get`).

SM103 runs the same functions with ``sm`` 103 (``get_candidate_configs(103, ...)``: its FP4 branch
has no 128x64 tile and takes the NO_SMEM epilogue too), and ``getTmaWarpSpecializedConfigs``
(``moe_gemm_template_dispatch.h``) changes the list per runner: ``sm = use_wfp4afp8 && sm == 103 ?
100 : sm`` and, ``if (sm == 103 && use_fp4)``, SM100's list appended
(:func:`~cutlass_layout.installs.candidate_lists.sm103_rules`, read from its tokens). A config's
``sm_version`` then picks the kernel: the dispatch's switch of ``SHAPE_CASE(103, ...)`` (enum
``CutlassTileConfigSM103``, an alias of SM100's, on the same ``tile_config_sm100`` member) runs the
``Sm103`` kernels, under ``if (gemm_config.sm_version == 103 && std::is_same_v<T, Fp4Type> &&
std::is_same_v<WeightType, Fp4Type>)``; every other SM10x config runs an ``Sm100`` kernel
(:attr:`Candidates.dispatched_by`).

SM90's list is run over the code too (:func:`~cutlass_layout.installs.candidate_lists.sm90_lists`):
``get_candidate_configs(90, 1, flags)`` for the flags of each runner
(:func:`~cutlass_layout.installs.moe_runners.runner_flags_sm90`,
:data:`~cutlass_layout.installs.moe_runners.SM90_RUNNERS`; the dispatcher returns ``{}`` for
``FP4_ONLY`` without ``BLACKWELL``), which calls ``get_candidate_configs_sm90``: a loop over
``get_candidate_tiles_sm90`` pushing, for grouped non-weight-only runners, AUTO configs with the
clusters ``sm90_supports_mcast_along_m/n`` allow, and for weight-only ones (W4A8, W4A16, FP8 x FP4
Humming) the four clusters with the one schedule of a ``std::set`` (COOPERATIVE where
``sm90_supports_coop``, else PINGPONG). ``getTmaWarpSpecializedConfigs`` returns nothing where
``isValidHopperMOESpecialisation`` refuses the types
(:func:`~cutlass_layout.installs.candidate_lists.hopper_valid_rule`, read from its text) and, last,
appends the Humming pre-MMA block's swap_ab configs (its statement run by
:class:`~cutlass_layout.cpp.interpret.Eval` with the runner's mode). A tactic is tried where a
config has its tile, cluster and (where not AUTO) mainloop schedule, with the FINALIZE and swap_ab
duplications, and where the dispatch maps its tile and cluster: the TMA warp-specialized switches
for the macro launchers' kernels, the mixed-input ones
(``sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass``, ``..._gemm_config``) for the mixed-input
launchers' (:meth:`Candidates._get_sm90`). The mixed-input dispatch's schedule switches are not
read: a mixed-input kernel is compiled for one schedule, and the list names it.

This module holds :class:`Candidates`, the reader of the candidate function and the dispatch
(:func:`read_candidates`), the cached :func:`runtime_candidates` and the SM120 runner's config
order (:func:`moe_configs`); the runners' flags and types are
:mod:`cutlass_layout.installs.moe_runners`', the lists run over the code
:mod:`cutlass_layout.installs.candidate_lists`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.cache import KINDS
from ..core.progress import audit_label, step
from .candidate_lists import (
    definitions,
    fallback_excludes_fp4,
    hopper_valid_rule,
    sm90_lists,
    sm100_lists,
    sm103_rules,
)
from .moe_runners import (
    ARCH,
    CUDA_TLLM,
    DISPATCH,
    DISPATCH_TMA_WS,
    FP4_KINDS,
    FP8_KINDS,
    HEURISTIC,
    SM10X,
    SM90_MIXED_MOE,
    TLLM_TYPE,
    TRAITS,
    runner_flags,
    sm90_runner,
)

#: The cache kind of :func:`runtime_candidates`' answers.
CANDIDATES = KINDS["candidates"]


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
            FP4 operand; :func:`~cutlass_layout.installs.candidate_lists.fallback_excludes_fp4`).
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
    #: SM100: ``{config flags: [[tile enum, cluster_shape, dynamic, epilogue schedule], ...]}``,
    #: what ``get_candidate_configs(100, 1, flags)`` returns
    #: (:func:`~cutlass_layout.installs.candidate_lists.sm100_lists`); SM103: each row with a fifth
    #: entry, the arch tag of the kernel the config runs (100 or 103)
    sm100: dict[str, list] = field(default_factory=dict)
    #: SM100: whether ``getTmaWarpSpecializedConfigs`` erases the FINALIZE copies of NO_SMEM configs
    finalize_needs_tma: bool = False
    #: SM10x: the tile enums each arch tag's switches of the dispatch map, ``{"100": [...],
    #: "103": [...]}`` (by the enum alias a case names: ``CutlassTileConfigSM103::...`` cases
    #: run ``Sm103`` kernels)
    dispatched_by: dict[str, list] = field(default_factory=dict)
    #: SM90: ``{runner (:func:`~cutlass_layout.installs.moe_runners.sm90_runner`): [[tile enum,
    #: cluster_shape, mainloop schedule, swap_ab only], ...]}``, what
    #: ``getTmaWarpSpecializedConfigs(90, ...)`` builds before and after its duplications
    #: (:func:`~cutlass_layout.installs.candidate_lists.sm90_lists`): the rows of
    #: ``get_candidate_configs(90, 1, flags)`` (False), then those of its Humming pre-MMA block
    #: (True: swap_ab copies only)
    sm90: dict[str, list] = field(default_factory=dict)
    #: SM90: the cluster shapes the TMA warp-specialized dispatch's cluster switch maps
    #: (``dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized``)
    dispatched_clusters: list[str] = field(default_factory=list)
    #: SM90: the tile enums and cluster shapes the mixed-input dispatch maps
    #: (``sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass``, ``..._gemm_config``)
    mixed_dispatched: list[str] = field(default_factory=list)
    mixed_clusters: list[str] = field(default_factory=list)
    #: SM90: whether the install's code shows the mixed-input runners' order
    #: (:func:`read_sm90_mixed_order`): ``getTmaWarpSpecializedConfigs`` erases the configs
    #: without swap_ab ``if (use_sm90_mixed_input_gemm)``, and ``mayHaveFinalizeFused(int sm)``
    #: is false for them (no FINALIZE copies in GEMM2's list)
    sm90_mixed_order: bool = False

    def get(self, tactic) -> bool | None:
        """Whether the runtime would try ``tactic`` (a MoE :class:`~cutlass_layout.model.Tactic`);
        None for other families, or when the list was not read."""
        if tactic.family != "moe" or self.note is not None or tactic.name is None:
            return None
        name = tactic.name
        if self.sm100:
            return self._get_sm100(tactic)
        if self.sm90:
            return self._get_sm90(tactic)
        if name not in self.tiles or name not in self.dispatched:
            return False
        why = self.pruned.get(name)
        activation = tactic.b if tactic.swap_ab else tactic.a  # swap_ab: A is the weight
        if why == "always" or (why == "fp8" and activation in FP8_KINDS):
            return False
        if (tactic.fusion not in (None, "none") or tactic.swap_ab) and not self.duplicated:
            return False
        return True

    def _get_sm90(self, tactic) -> bool | None:
        """SM90: whether a config of the runner's list has the tactic's tile enum, cluster shape
        and, where the config names one other than ``AUTO``, its mainloop schedule; and its fusion
        and swap_ab (FINALIZE and swap_ab copies of ``get_candidate_configs``' rows; the Humming
        rows are swap_ab copies only, without FINALIZE ones). The runner
        (:func:`~cutlass_layout.installs.moe_runners.sm90_runner`): for a kernel of the macro
        launcher, of the tactic's activation and weight kinds; for one of the mixed-input MoE
        launchers (:data:`~cutlass_layout.installs.moe_runners.SM90_MIXED_MOE`, named
        ``CtaShape..._ClusterShape_..._<schedule>[_<scale mode>]`` by
        :func:`~cutlass_layout.commands.audit.mixed_identity`), of the launcher's first two template
        arguments (the runner's ``T`` and ``WeightType``, which the mixed-input dispatch passes on)
        and its scale mode. The tile and cluster must be ones the dispatch maps: the TMA
        warp-specialized one's switches, or the mixed-input one's. None for the ACTIVATION fusion,
        other launchers (fpA_intB's dense GEMM) and types this reader does not place."""
        if tactic.fusion == "activation":
            return None
        place = sm90_place(tactic)
        if place is None:
            return None
        runner, tile, cluster, schedule, mixed = place
        tiles, clusters = (
            (self.mixed_dispatched, self.mixed_clusters) if mixed else (self.dispatched, self.dispatched_clusters)
        )
        if runner is None or runner not in self.sm90:
            return None
        if tile not in tiles or cluster not in clusters:
            return False
        if (tactic.fusion == "finalize" or tactic.swap_ab) and not self.duplicated:
            return False
        for row_tile, row_cluster, row_schedule, swap_only in self.sm90[runner]:
            if (row_tile, row_cluster) != (tile, cluster):
                continue
            if row_schedule != "AUTO" and row_schedule != schedule:
                continue
            if swap_only and (not tactic.swap_ab or tactic.fusion == "finalize"):
                continue
            return True
        return False

    def _get_sm100(self, tactic) -> bool | None:
        """SM100/SM103: whether a config of the runner's list
        (:func:`~cutlass_layout.installs.moe_runners.runner_flags` of the
        tactic's types) has its tile enum, 1SM/2SM ``cluster_shape``, static or dynamic
        cluster and epilogue schedule, and its fusion (FINALIZE copies, less NO_SMEM ones
        where the duplication erases them) and swap_ab; and, on SM103, runs a kernel of the
        tactic's arch tag (``sm_version``, 100 where None); the tile must be one the dispatch
        switch of that arch tag maps. None for the ACTIVATION fusion (its configs are not this
        list) and unknown types."""
        if tactic.fusion == "activation" or tactic.mma_sms is None:
            return None
        flags = runner_flags(tactic.b if tactic.swap_ab else tactic.a, tactic.a if tactic.swap_ab else tactic.b)
        if flags is None or str(flags) not in self.sm100:
            return None
        sm = tactic.sm_version or 100
        if tactic.name not in (self.dispatched_by.get(str(sm), []) if self.dispatched_by else self.dispatched):
            return False
        if (tactic.fusion == "finalize" or tactic.swap_ab) and not self.duplicated:
            return False
        cluster = f"ClusterShape_{tactic.mma_sms}x1x1"
        epilogue = {"tma": "TMA", "nosmem": "NO_SMEM"}.get(tactic.epilogue_schedule)
        for row in self.sm100[str(flags)]:
            tile, shape, dynamic, sched = row[:4]
            if (tile, shape, dynamic, sched) != (tactic.name, cluster, bool(tactic.dynamic_cluster), epilogue):
                continue
            if len(row) > 4 and row[4] != sm:
                continue
            if tactic.fusion == "finalize" and sched == "NO_SMEM" and self.finalize_needs_tma:
                continue
            return True
        return False


def sm90_place(tactic) -> tuple[str | None, str, str, str | None, bool] | None:
    """SM90: ``(runner, tile enum, "ClusterShape_MxNxK", mainloop schedule, mixed)`` of a MoE
    tactic, as :meth:`Candidates._get_sm90` matches it with a list's rows: for a kernel of the
    mixed-input launchers (:data:`~cutlass_layout.installs.moe_runners.SM90_MIXED_MOE`, ``mixed``
    True), the runner of the launcher's first two template arguments and the name's scale mode,
    the tile, cluster and schedule its name
    (``CtaShape..._ClusterShape_..._<schedule>[_<scale mode>]``) gives; for one of the macro
    launcher, the runner of its activation and weight kinds, its tile enum name and cluster, no
    schedule. None for other names and the IsMXFPX runners' kinds (``runner`` is None for
    types :func:`~cutlass_layout.installs.moe_runners.sm90_runner` does not key)."""
    import re

    from ..cpp.arguments import template_args

    launcher = tactic.launcher or ""
    if launcher.split("<")[0].strip() in SM90_MIXED_MOE:
        m = re.fullmatch(
            r"(CtaShape\d+x\d+x\d+B)_ClusterShape_(\d+x\d+x\d+)_([A-Z][A-Z_]*[A-Z])(?:_(\w+))?", tactic.name or ""
        )
        types = [CUDA_TLLM.get(x) for x in template_args(launcher, 2)]
        if m is None or None in types or len(types) != 2:
            return None
        tile, cluster, schedule, scale = m.groups()
        return sm90_runner(types[0], types[1], scale), tile, f"ClusterShape_{cluster}", schedule, True
    if re.fullmatch(r"CtaShape\d+x\d+x\d+B", tactic.name or "") and tactic.cluster and len(tactic.cluster) == 3:
        act, weight = (tactic.b, tactic.a) if tactic.swap_ab else (tactic.a, tactic.b)
        if act == "mxfp8" or (act == "e5m2" and weight != "e5m2"):
            return None  # an IsMXFPX runner; FP8 x FP4 runners take e4m3
        runner = sm90_runner(TLLM_TYPE.get(str(act)), TLLM_TYPE.get(str(weight)), None)
        return runner, tactic.name, "ClusterShape_" + "x".join(map(str, tactic.cluster)), None, False
    return None


#: The condition under which the dispatch's SM103 switch runs (its tokens, spaces between)
SM103_CONDITION = (
    "gemm_config . sm_version == 103 && std :: is_same_v < T , Fp4Type > && std :: is_same_v < WeightType , Fp4Type >"
)


#: Enum constants of the tile and cluster enums that name no config
_NO_CONFIG = ("Undefined", "ChooseWithHeuristic")

#: Which of the macros :func:`~cutlass_layout.installs.candidate_lists.hopper_valid_rule` takes
#: branches on the parse defines: an enum declared in the parsed text for each one defined (read by
#: :func:`_defined`)
PROBE_MACROS = "".join(
    f"#if defined({m})\nenum cutlass_layout_defined_{m} {{}};\n#endif\n"
    for m in ("ENABLE_FP4", "CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED")
)


def _defined(unit) -> set[str]:
    """The macros of :data:`PROBE_MACROS` that are defined in ``unit``."""
    from ..cpp.cursors import declared_enums

    return {
        name.removeprefix("cutlass_layout_defined_")
        for name in declared_enums(unit.tu.cursor, "cutlass_layout_defined_")
    }


def _cases(fn, member: str, enum: str) -> list[str]:
    """The enum constants of ``enum`` that the case labels of the switches below ``fn`` whose
    condition names ``member`` name, in order (:data:`_NO_CONFIG` left out)."""
    from ..cpp.cursors import case_constants, condition_names, switches

    out: list[str] = []
    for sw, _ in switches(fn, _GUARD):
        if not condition_names(sw, member):
            continue
        for name, _ref in case_constants(sw, enum):
            if name not in out and name not in _NO_CONFIG:
                out.append(name)
    return out


def read_candidates(unit, arch: str, sources: Path) -> Candidates:
    """Read :class:`Candidates` from a parsed unit that includes the heuristic and both
    dispatch sources (bodies parsed), which lie below ``sources``. Its steps, in order: the
    definitions, the candidate list and its pruning, the dispatch's switches, the
    duplications, then SM10x's or SM90's lists; the first that cannot be read sets
    :attr:`Candidates.note` (what the steps before it read is kept)."""
    fn_name, enum, member = ARCH[arch]
    out = Candidates()
    fn, disp, dup, sm90_fns = _find_definitions(unit, sources, fn_name, out)
    if fn is None or disp is None:
        out.note = (
            f"runtime candidates: {fn_name} or the MoE tile dispatch not found in {HEURISTIC} / {DISPATCH_TMA_WS}"
        )
        return out
    note = _read_list(out, fn, fn_name, enum) or _read_dispatch(out, disp, arch, enum, member)
    if note is None:
        _read_duplication(out, fn, dup)
        if arch in SM10X:
            note = _read_sm10x_lists(out, unit, sources, arch, dup)
        elif arch == "sm90":
            note = _read_sm90_lists(out, unit, sources, dup, sm90_fns, enum, member)
    out.note = note
    return out


def _find_definitions(unit, sources: Path, fn_name: str, out: Candidates) -> tuple:
    """``(candidate function, tile dispatch, getTmaWarpSpecializedConfigs, {SM90 dispatch
    function: definition})`` among the install's definitions (None where absent); whether
    ``getConfigs`` puts the TMA configs first goes into ``out.tma_first``."""
    from ..cpp.cursors import tokens

    fn = disp = dup = None
    sm90_fns: dict = {}
    for kind, c in definitions(unit, sources):
        if kind == "function":
            if c.spelling == fn_name and fn is None:
                fn = c
        elif kind == "function template":
            if c.spelling == "dispatchMoeGemmSelectTileShapeTmaWarpSpecialized":
                disp = c
            elif c.spelling in _SM90_DISPATCH:
                sm90_fns.setdefault(c.spelling, c)
        elif kind == "method" and c.spelling == "getTmaWarpSpecializedConfigs":
            dup = c
        elif kind == "method" and c.spelling == "getConfigs":
            words = tokens(c)
            if "getTmaWarpSpecializedConfigs" in words and "getAmpereConfigs" in words:
                out.tma_first = words.index("getTmaWarpSpecializedConfigs") < words.index("getAmpereConfigs")
    return fn, disp, dup, sm90_fns


def _read_list(out: Candidates, fn, fn_name: str, enum: str) -> str | None:
    """The candidate list: the enum constants ``fn`` names outside lambdas (``out.tiles``), and
    what its pruning lambdas prune (``out.pruned``); the note where a lambda cannot be read."""
    from ..cpp.cursors import enum_references

    names, lambdas = enum_references(fn, enum)
    for name in names:
        if name not in out.tiles and name not in _NO_CONFIG:
            out.tiles.append(name)
    for lam in lambdas:
        pruned = _read_pruning(lam, enum)
        if pruned is None:
            return f"runtime candidates: the pruning lambda of {fn_name} has an unexpected shape"
        out.pruned.update(pruned)
    return None


def _read_dispatch(out: Candidates, disp, arch: str, enum: str, member: str) -> str | None:
    """The dispatch: cases of every switch on ``<config>.tile_config_sm120`` (``member``), with
    the condition of the innermost ``if`` around it that names ``sm_version`` (SM10x: which
    configs reach it), into ``out.dispatched`` and ``out.dispatched_by``; the note where there
    is none, or SM103's runs under another condition than :data:`SM103_CONDITION`."""
    from ..cpp.cursors import case_constants, condition_names, switches

    sm103_conditions = []
    for sw, guard in switches(disp, _GUARD):
        if not condition_names(sw, member):
            continue
        for name, ref in case_constants(sw, enum):
            if name in _NO_CONFIG:
                continue
            if name not in out.dispatched:
                out.dispatched.append(name)
            if arch in SM10X:  # the alias the case names: CutlassTileConfigSM103 -> 103
                sm = _qualifier_sm(ref) or "100"
                if name not in out.dispatched_by.setdefault(sm, []):
                    out.dispatched_by[sm].append(name)
                if sm == "103" and guard not in sm103_conditions:
                    sm103_conditions.append(guard)
    if not out.dispatched:
        return f"runtime candidates: no switch on {member} in the MoE tile dispatch"
    if arch == "sm103" and sm103_conditions != [SM103_CONDITION]:
        return (
            "runtime candidates: the MoE tile dispatch's SM103 switch runs under a condition "
            f"this reader does not follow ({DISPATCH_TMA_WS})"
        )
    return None


def _read_duplication(out: Candidates, fn, dup) -> None:
    """Whether ``getTmaWarpSpecializedConfigs`` (``dup``) duplicates the list for FINALIZE and
    swap_ab, in which order; whether the candidate function names ``NO_SMEM``."""
    from ..cpp.cursors import tokens

    if dup is not None:
        words = tokens(dup)
        out.duplicated = "FINALIZE" in words and "swap_ab" in words
        if out.duplicated and "get_candidate_configs" in words:
            first = {w: words.index(w) for w in ("get_candidate_configs", "FINALIZE", "swap_ab")}
            if first["get_candidate_configs"] < min(first["FINALIZE"], first["swap_ab"]):
                out.duplication = sorted(
                    ("finalize", "swap_ab"), key=lambda w: first["FINALIZE" if w == "finalize" else w]
                )
    out.no_smem = "NO_SMEM" in tokens(fn)


def _read_sm10x_lists(out: Candidates, unit, sources: Path, arch: str, dup) -> str | None:
    """SM10x: the runners' lists (:func:`~cutlass_layout.installs.candidate_lists.sm100_lists`,
    SM103's with :func:`~cutlass_layout.installs.candidate_lists.sm103_rules`) and whether the
    duplication erases NO_SMEM configs' FINALIZE copies; the note where they cannot be read."""
    from ..cpp.cursors import tokens

    words = tokens(dup) if dup is not None else []
    rules = sm103_rules(words) if arch == "sm103" else None
    if isinstance(rules, str):
        return rules
    lists = sm100_lists(unit, sources, SM10X[arch], rules)
    if isinstance(lists, str):
        return lists
    out.sm100 = lists
    out.finalize_needs_tma = "remove_if" in words and "NO_SMEM" in words
    return None


def _read_sm90_lists(out: Candidates, unit, sources: Path, dup, sm90_fns: dict, enum: str, member: str) -> str | None:
    """SM90: the cases of the cluster and mixed-input dispatch switches, and the runners' lists
    (:func:`~cutlass_layout.installs.candidate_lists.sm90_lists`, with
    ``isValidHopperMOESpecialisation``'s rule); the note where they cannot be read."""
    from ..cpp.cursors import tokens

    missing = [f for f in _SM90_DISPATCH if f not in sm90_fns]
    if missing:
        return f"runtime candidates: {', '.join(missing)} not found in the MoE dispatch ({DISPATCH})"
    out.dispatched_clusters = _cases(
        sm90_fns["dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized"], "cluster_shape", "ClusterShape"
    )
    out.mixed_dispatched = _cases(sm90_fns["sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass"], member, enum)
    out.mixed_clusters = _cases(sm90_fns["sm90_dispatch_moe_mixed_dtype_gemm_config"], "cluster_shape", "ClusterShape")
    if not (out.dispatched_clusters and out.mixed_dispatched and out.mixed_clusters):
        return f"runtime candidates: a switch of the SM90 MoE dispatch was not found ({DISPATCH})"
    valid = hopper_valid_rule(sources, _defined(unit))
    if valid is None:
        return f"runtime candidates: isValidHopperMOESpecialisation has a shape this reader does not follow ({TRAITS})"
    lists = sm90_lists(unit, sources, dup, valid)
    if isinstance(lists, str):
        return lists
    out.sm90 = lists
    out.sm90_mixed_order = read_sm90_mixed_order(tokens(dup) if dup is not None else [], sources)
    return None


#: ``getTmaWarpSpecializedConfigs``' statement that keeps the SM90 mixed-input runners' swap_ab
#: configs alone, its tokens joined by spaces
_MIXED_SWAP_ONLY = (
    "if ( use_sm90_mixed_input_gemm ) { tma_ws_configs . erase ( std :: remove_if ( "
    "tma_ws_configs . begin ( ) , tma_ws_configs . end ( ) , [ ] ( auto & config ) { "
    "return ! config . swap_ab ; } ) , tma_ws_configs . end ( ) ) ; }"
)
#: ``CutlassMoeFCRunner``'s (``include/moe_kernels.h``) definitions the SM90 mixed-input order
#: rests on, spaces removed: which runners are mixed-input, and that their GEMM2 has no FINALIZE
_MIXED_DEFINITIONS = (
    "staticconstexprbooluse_sm90_mixed_input_gemm=use_w4afp8||use_wfp4a16||use_sm90_wfp4afp8;",
    "staticconstexprbooluse_wfp4a16=std::is_same_v<WeightType,Fp4Type>&&(std::is_same_v<T,half>||"
    "std::is_same_v<T,__nv_bfloat16>);",
    "staticboolmayHaveFinalizeFused(intsm){usingRunnerType=decltype(moe_gemm_runner_);returnRunnerType::"
    "supportsTmaWarpSpecialized(sm)&&sm>=90&&!use_sm90_mixed_input_gemm;}",
)
#: the runner class's header, below ``csrc/nv_internal``
MOE_KERNELS = "tensorrt_llm/kernels/cutlass_kernels/include/moe_kernels.h"


def read_sm90_mixed_order(words: list[str], inc: Path) -> bool:
    """Whether the install's code gives the SM90 mixed-input runners' tactic order that
    :func:`sm90_moe_configs` builds: ``getTmaWarpSpecializedConfigs`` (its tokens, ``words``)
    has :data:`_MIXED_SWAP_ONLY` after its swap_ab copies and before the ``Sm90Wfp4Afp8Mode``
    block, and ``include/moe_kernels.h`` (below ``inc``) has each of
    :data:`_MIXED_DEFINITIONS` (BF16 or F16 activations with FP4 weights are mixed-input, and
    ``mayHaveFinalizeFused(sm)`` is false for mixed-input runners). Read from the text."""
    text = " ".join(w for w in words if not w.startswith(("//", "/*")))
    at = text.find(_MIXED_SWAP_ONLY)
    if (
        at < 0
        or text.count(_MIXED_SWAP_ONLY) != 1
        or not (text.rfind("swap_ab = true", 0, at) >= 0 and "Sm90Wfp4Afp8Mode" in text[at:])
    ):
        return False
    from ..cpp.brackets import blank_comments

    try:
        header = "".join(blank_comments((inc / MOE_KERNELS).read_text(errors="replace")).split())
    except OSError:
        return False
    return all(d in header for d in _MIXED_DEFINITIONS)


#: The SM90 dispatch functions :func:`read_candidates` reads the cases of (the TMA
#: warp-specialized cluster switch, the mixed-input tile and cluster switches)
_SM90_DISPATCH = (
    "dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized",
    "sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass",
    "sm90_dispatch_moe_mixed_dtype_gemm_config",
)


#: The word whose ``if`` around a switch the dispatch's reader takes as the switch's guard
_GUARD = "sm_version"


def _qualifier_sm(ref) -> str | None:
    """The arch of the enum alias a reference to an enum constant is qualified with
    (``CutlassTileConfigSM103::CtaShape128x128x128B`` -> ``"103"``), None where it names none."""
    import re

    from ..cpp.cursors import type_qualifiers

    for spelling in type_qualifiers(ref):
        m = re.fullmatch(r"CutlassTileConfigSM(\d+)", spelling)
        if m:
            return m.group(1)
    return None


def _read_pruning(lam, enum: str) -> dict[str, str] | None:
    """``{enum name: "always"|"fp8"}`` from a lambda ``switch (c.tile) { case X: ... return
    true|false|<var set from FP8FP4_MIXED>; default: return false; }``; None for another shape."""
    from ..cpp.cursors import switch_returns

    arms = switch_returns(lam, enum)
    if arms is None:
        return None
    out: dict[str, str] = {}
    for labels, words in arms:
        v = _verdict(words)
        if v is None:
            return None
        if v.startswith("var:"):
            if not _set_from_mixed(lam, v[4:]):
                return None
            v = "fp8"
        for label in labels:
            if v != "never":
                out[label] = v
    return out


def _verdict(words: list[str]) -> str | None:
    """What a pruning lambda's ``return`` statement (its tokens) says: ``"always"`` (``true``),
    ``"never"`` (``false``), ``"var:NAME"`` (a variable), None for anything else."""
    toks = words[1:] if words[:1] == ["return"] else words
    toks = [t for t in toks if t != ";"]
    if toks == ["true"]:
        return "always"
    if toks == ["false"]:
        return "never"
    if len(toks) == 1 and toks[0].isidentifier():
        return "var:" + toks[0]
    return None


def _set_from_mixed(lam, var: str) -> bool:
    """Whether the lambda's capture ``var`` is a variable initialized from ``FP8FP4_MIXED``."""
    from ..cpp.cursors import variable_tokens

    return "FP8FP4_MIXED" in (variable_tokens(lam, var) or [])


def runtime_candidates(
    install,
    arch: str,
    flags: list[str] | None,
    *,
    pch_preamble: str | None = None,
    pch_key: str = "",
    use_cache: bool = True,
    cached_only: bool = False,
) -> Candidates | None:
    """The MoE runtime candidates of ``arch`` in ``install`` (see the module docstring), or
    None where the install has no candidate function for the arch or no MoE module.

    ``flags`` are the MoE module's clang flags; ``pch_preamble`` the includes of one of its
    generated sources (:func:`cutlass_layout.installs.kernels.pch_preamble`): the headers they include
    come from that precompiled header (the same one the sources' parses use), so only the
    heuristic and the dispatch are parsed with their bodies. Cached per (install, arch,
    flags, this code); ``cached_only``: None instead of a parse where nothing is cached. A parse
    is said as a progress step (:func:`~cutlass_layout.core.progress.step`: seconds to a minute).
    """
    if arch not in ARCH or flags is None:
        return None
    inc = install.root / "data" / "csrc" / "nv_internal"
    if not (inc / HEURISTIC).is_file() or not (inc / DISPATCH_TMA_WS).is_file():
        return Candidates(note=f"runtime candidates: {HEURISTIC} or {DISPATCH_TMA_WS} is missing")
    from dataclasses import asdict

    from ..cpp.clang import ProbeUnit, ensure_pch

    unparsed: list[Candidates] = []  # an answer of a parse that failed: not cached

    def compute() -> Candidates:
        with step(audit_label(arch, "reading the runtime's candidate list (its heuristic, with libclang)")):
            return parse()

    def parse() -> Candidates:
        # the dispatch header includes the TMA WS dispatch (which has no include guard)
        text = "".join(f'#include "{p}"\n' for p in (DISPATCH, HEURISTIC)) + PROBE_MACROS
        pch = ensure_pch(pch_preamble, list(flags), pch_key) if pch_preamble else None
        try:
            unit = ProbeUnit(
                text,
                list(flags) + (["-include-pch", str(pch)] if pch else []),
                install.tree.include_root,
                filename="cutlass_layout_candidates.cu",
                skip_bodies=False,
            )
        except Exception as exc:  # libclang could not parse at all
            unparsed.append(Candidates(note=f"runtime candidates: cannot parse {HEURISTIC}: {exc}"))
            return unparsed[-1]
        errors = unit.errors()
        if errors:
            return Candidates(note=f"runtime candidates: {HEURISTIC} does not parse here ({errors[0].one_line()})")
        out = read_candidates(unit, arch, inc)
        out.fallback_excludes_fp4 = fallback_excludes_fp4(inc, list(flags))
        return out

    return CANDIDATES.memo(
        candidates_key(install, arch, flags),
        compute,
        load=lambda d: Candidates(**d),
        dump=lambda c: None if unparsed else asdict(c),
        use_cache=use_cache,
        cached_only=cached_only,
    )


def candidates_key(install, arch: str, flags: list[str]) -> str:
    """The results-cache key of :func:`runtime_candidates`' answer for ``install``, ``arch``
    and the MoE module's clang ``flags``."""
    from ..cpp.clang import libclang_version

    return CANDIDATES.key(subject=[arch, list(flags)], target=[install.fingerprint, libclang_version()])


def store_candidates(install, arch: str, flags: list[str], cand: Candidates) -> None:
    """Cache ``cand``, :func:`runtime_candidates`' answer computed elsewhere (a Dask worker,
    whose own cache this process does not read), under :func:`candidates_key`."""
    from dataclasses import asdict

    CANDIDATES.put(candidates_key(install, arch, flags), asdict(cand))


#: The SM90 runners (:func:`~cutlass_layout.installs.moe_runners.sm90_runner` keys) whose tactic
#: order :func:`sm90_moe_configs` gives: mixed-input runners with FP4 weights (``use_wfp4a16``,
#: ``use_sm90_wfp4afp8``), whose ``getAmpereConfigs`` adds nothing
SM90_FP4_MIXED = ("bf16xfp4", "f16xfp4", "fp8xfp4/humming", "fp8xfp4/post")


def sm90_moe_configs(cand: Candidates, runner: str) -> list[tuple[str, str, str, bool]] | None:
    """An SM90 mixed-input MoE runner's config list in the runtime's order, GEMM1's and
    GEMM2's alike, as ``CutlassMoeFCRunner::getTactics`` (``include/moe_kernels.h``) gets it
    from ``MoeGemmRunner::getConfigs(90, mayHaveFinalizeFused(90))``
    (``moe_gemm/moe_gemm_template_dispatch.h``): ``getTmaWarpSpecializedConfigs`` takes the rows
    of ``get_candidate_configs(90, 1, flags)``, adds no FINALIZE copies (``mayHaveFinalizeFused``
    is false for a mixed-input runner), appends swap_ab copies of them, erases the configs
    without swap_ab (``if (use_sm90_mixed_input_gemm)``), then appends the Humming pre-MMA
    block's configs (swap_ab set); ``getAmpereConfigs`` adds none (an FP4 weight:
    ``isValidAmpereMOESpecialisation``, and ``use_wfp4a16`` returns early). So the list is
    the swap_ab copies of :attr:`Candidates.sm90`'s rows, in order. Each entry is ``(tile
    enum, cluster shape, mainloop schedule, swap_ab)``; GEMM2's tactic ids follow GEMM1's
    (:mod:`cutlass_layout.commands.blocklist`).

    None where the order cannot be read from the install's code (:attr:`Candidates.sm90_mixed_order`,
    the duplications not FINALIZE then swap_ab, the TMA configs not first, the Ampere list not
    empty for FP4 operands) or for another runner than :data:`SM90_FP4_MIXED`'s."""
    if (
        cand.note is not None
        or not cand.sm90_mixed_order
        or cand.duplication != ["finalize", "swap_ab"]
        or not cand.fallback_excludes_fp4
        or not cand.tma_first
        or runner not in SM90_FP4_MIXED
        or runner not in cand.sm90
    ):
        return None
    return [(tile, cluster, schedule, True) for tile, cluster, schedule, _humming in cand.sm90[runner]]


def moe_configs(
    cand: Candidates, activation: str, weight: str, supports_finalize_fusion: bool
) -> list[tuple[str, str, bool]] | None:
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
    if (
        cand.note is not None
        or not cand.tiles
        or cand.duplication != ["finalize", "swap_ab"]
        or cand.no_smem
        or not cand.fallback_excludes_fp4
        or not cand.tma_first
    ):
        return None
    fp8_act = activation in FP8_KINDS
    if weight not in FP4_KINDS or not (activation in FP4_KINDS or fp8_act):
        return None
    base = [t for t in cand.tiles if cand.pruned.get(t) != "always" and not (cand.pruned.get(t) == "fp8" and fp8_act)]
    configs = [(t, "none", False) for t in base]
    if supports_finalize_fusion:
        configs += [(t, "finalize", False) for t in base]
    return configs + [(t, fusion, True) for t, fusion, _ in configs]
