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

SM100's list has another shape (``get_candidate_configs_sm100`` loops over the epilogue
schedules and dynamic cluster shapes and calls ``get_candidate_configs_sm100_dynamic_cluster_shape``,
which pushes configs under conditions on the runner's flags): it is run over its own code
(:class:`~cutlass_layout.cpp.interpret.Eval`, :func:`sm100_lists`) for the flags of each runner (:func:`runner_flags`), and a
tactic is tried where a config has its tile, 1SM/2SM cluster, static or dynamic cluster and
epilogue schedule (:meth:`Candidates.get`).

SM103 runs the same functions with ``sm`` 103 (``get_candidate_configs(103, ...)``: its FP4
branch has no 128x64 tile and takes the NO_SMEM epilogue too), and ``getTmaWarpSpecializedConfigs``
(``moe_gemm_template_dispatch.h``) changes the list per runner: ``sm = use_wfp4afp8 && sm == 103 ?
100 : sm`` and, ``if (sm == 103 && use_fp4)``, SM100's list appended (:func:`sm103_rules`, read
from its tokens). A config's ``sm_version`` then picks the kernel: the dispatch's switch of
``SHAPE_CASE(103, ...)`` (enum ``CutlassTileConfigSM103``, an alias of SM100's, on the same
``tile_config_sm100`` member) runs the ``Sm103`` kernels, under ``if (gemm_config.sm_version == 103
&& std::is_same_v<T, Fp4Type> && std::is_same_v<WeightType, Fp4Type>)``; every other SM10x config
runs an ``Sm100`` kernel (:attr:`Candidates.dispatched_by`).

SM90's list is run over the code too (:func:`sm90_lists`): ``get_candidate_configs(90, 1, flags)``
for the flags of each runner (:func:`runner_flags_sm90`, :data:`SM90_RUNNERS`; the dispatcher
returns ``{}`` for ``FP4_ONLY`` without ``BLACKWELL``), which calls ``get_candidate_configs_sm90``:
a loop over ``get_candidate_tiles_sm90`` pushing, for grouped non-weight-only runners, AUTO
configs with the clusters ``sm90_supports_mcast_along_m/n`` allow, and for weight-only ones
(W4A8, W4A16, FP8 x FP4 Humming) the four clusters with the one schedule of a ``std::set``
(COOPERATIVE where ``sm90_supports_coop``, else PINGPONG). ``getTmaWarpSpecializedConfigs`` returns
nothing where ``isValidHopperMOESpecialisation`` refuses the types (:func:`hopper_valid_rule`, read
from its text) and, last, appends the Humming pre-MMA block's swap_ab configs (its statement run
by :class:`~cutlass_layout.cpp.interpret.Eval` with the runner's mode). A tactic is tried where a config has its tile, cluster
and (where not AUTO) mainloop schedule, with the FINALIZE and swap_ab duplications, and where the
dispatch maps its tile and cluster: the TMA warp-specialized switches for the macro launchers'
kernels, the mixed-input ones (``sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass``,
``..._gemm_config``) for the mixed-input launchers' (:meth:`Candidates._get_sm90`). The
mixed-input dispatch's schedule switches are not read: a mixed-input kernel is compiled for one
schedule, and the list names it.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path

from ..core.cache import KINDS

#: The cache kind of :func:`runtime_candidates`' answers.
CANDIDATES = KINDS["candidates"]

KERNELS = "tensorrt_llm/kernels/cutlass_kernels"
HEURISTIC = f"{KERNELS}/cutlass_heuristic.cpp"
DISPATCH_TMA_WS = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch_tma_ws.h"
DISPATCH = f"{KERNELS}/moe_gemm/moe_gemm_template_dispatch.h"
TRAITS = f"{KERNELS}/moe_gemm/moe_tma_warp_specialized_traits.h"
#: arch -> (candidate function, tile enum, the config member the dispatch switches on)
ARCH = {"sm120": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120"),
        "sm121": ("get_candidate_configs_sm120", "CutlassTileConfigSM120", "tile_config_sm120"),
        "sm100": ("get_candidate_configs_sm100", "CutlassTileConfigSM100", "tile_config_sm100"),
        # CutlassTileConfigSM103 is an alias of CutlassTileConfigSM100 (gemm_configs.h), on the same member
        "sm103": ("get_candidate_configs_sm100", "CutlassTileConfigSM100", "tile_config_sm100"),
        "sm90": ("get_candidate_configs_sm90", "CutlassTileConfigSM90", "tile_config_sm90")}
#: the archs whose list is run over the install's code (:func:`sm100_lists`), with the ``sm`` it is run for
SM10X = {"sm100": 100, "sm103": 103}
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
    #: SM100: ``{config flags: [[tile enum, cluster_shape, dynamic, epilogue schedule], ...]}``,
    #: what ``get_candidate_configs(100, 1, flags)`` returns (:func:`sm100_lists`); SM103: each
    #: row with a fifth entry, the arch tag of the kernel the config runs (100 or 103)
    sm100: dict[str, list] = field(default_factory=dict)
    #: SM100: whether ``getTmaWarpSpecializedConfigs`` erases the FINALIZE copies of NO_SMEM configs
    finalize_needs_tma: bool = False
    #: SM10x: the tile enums each arch tag's switches of the dispatch map, ``{"100": [...],
    #: "103": [...]}`` (by the enum alias a case names: ``CutlassTileConfigSM103::...`` cases
    #: run ``Sm103`` kernels)
    dispatched_by: dict[str, list] = field(default_factory=dict)
    #: SM90: ``{runner (:func:`sm90_runner`): [[tile enum, cluster_shape, mainloop schedule,
    #: swap_ab only], ...]}``, what ``getTmaWarpSpecializedConfigs(90, ...)`` builds before and
    #: after its duplications (:func:`sm90_lists`): the rows of ``get_candidate_configs(90, 1,
    #: flags)`` (False), then those of its Humming pre-MMA block (True: swap_ab copies only)
    sm90: dict[str, list] = field(default_factory=dict)
    #: SM90: the cluster shapes the TMA warp-specialized dispatch's cluster switch maps
    #: (``dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized``)
    dispatched_clusters: list[str] = field(default_factory=list)
    #: SM90: the tile enums and cluster shapes the mixed-input dispatch maps
    #: (``sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass``, ``..._gemm_config``)
    mixed_dispatched: list[str] = field(default_factory=list)
    mixed_clusters: list[str] = field(default_factory=list)

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
        """SM90: whether a config of the runner's list has the tactic's tile enum, cluster
        shape and, where the config names one other than ``AUTO``, its mainloop schedule; and
        its fusion and swap_ab (FINALIZE and swap_ab copies of ``get_candidate_configs``' rows;
        the Humming rows are swap_ab copies only, without FINALIZE ones). The runner
        (:func:`sm90_runner`): for a kernel of the macro launcher, of the tactic's activation
        and weight kinds; for one of the mixed-input MoE launchers (:data:`SM90_MIXED_MOE`,
        named ``CtaShape..._ClusterShape_..._<schedule>[_<scale mode>]`` by
        :func:`~cutlass_layout.commands.audit.mixed_identity`), of the launcher's first two
        template arguments (the runner's ``T`` and ``WeightType``, which the mixed-input dispatch
        passes on) and its scale mode. The tile and cluster must be ones the dispatch maps: the
        TMA warp-specialized one's switches, or the mixed-input one's. None for the ACTIVATION
        fusion, other launchers (fpA_intB's dense GEMM) and types this reader does not place."""
        import re

        from ..cpp.arguments import template_args

        if tactic.fusion == "activation":
            return None
        launcher = tactic.launcher or ""
        if launcher.split("<")[0].strip() in SM90_MIXED_MOE:
            m = re.fullmatch(r"(CtaShape\d+x\d+x\d+B)_ClusterShape_(\d+x\d+x\d+)_([A-Z][A-Z_]*[A-Z])(?:_(\w+))?",
                             tactic.name)
            types = [_CUDA_TLLM.get(x) for x in template_args(launcher, 2)]
            if m is None or None in types or len(types) != 2:
                return None
            tile, cluster, schedule, scale = m.groups()
            runner = sm90_runner(types[0], types[1], scale)
            tiles, clusters = self.mixed_dispatched, self.mixed_clusters
        elif re.fullmatch(r"CtaShape\d+x\d+x\d+B", tactic.name) and tactic.cluster and len(tactic.cluster) == 3:
            act, weight = (tactic.b, tactic.a) if tactic.swap_ab else (tactic.a, tactic.b)
            if act == "mxfp8" or (act == "e5m2" and weight != "e5m2"):
                return None  # an IsMXFPX runner; FP8 x FP4 runners take e4m3
            tile, cluster, schedule = tactic.name, "x".join(map(str, tactic.cluster)), None
            runner = sm90_runner(_TLLM_TYPE.get(str(act)), _TLLM_TYPE.get(str(weight)), None)
            tiles, clusters = self.dispatched, self.dispatched_clusters
        else:
            return None
        if runner is None or runner not in self.sm90:
            return None
        cluster = f"ClusterShape_{cluster}"
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
        """SM100/SM103: whether a config of the runner's list (:func:`runner_flags` of the
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


#: TensorRT-LLM's ``CutlassGemmConfig::CandidateConfigTypeParam`` bits (``gemm_configs.h``)
CONFIG_BITS = {"WEIGHT_ONLY": 1 << 0, "SIMT_ONLY": 1 << 1, "HOPPER": 1 << 3, "BLACKWELL": 1 << 4,
               "GROUPED_GEMM": 1 << 5, "FP8_ONLY": 1 << 6, "FP4_ONLY": 1 << 7, "FP8FP4_MIXED": 1 << 8}
#: element kinds -> TensorRT-LLM's operand types (``Fp4Type``, ``__nv_fp8_e4m3``, ``cutlass::uint4b_t``, ...)
_TLLM_TYPE = {"nvfp4": "fp4", "mxfp4": "fp4", "e2m1": "fp4", "mxfp8": "fp8", "e4m3": "fp8", "e5m2": "fp8",
              "bf16": "bf16", "f16": "f16", "f32": "f32", "u4": "uint4"}


def runner_flags(activation: str | None, weight: str | None) -> int | None:
    """The config flags ``MoeGemmRunner<T, WeightType>::getTmaWarpSpecializedConfigs`` passes
    to ``get_candidate_configs`` on SM100 (``moe_gemm/moe_gemm_template_dispatch.h``; its
    ``use_fp8``, ``use_fp4``, ``use_wfp4afp8`` from ``include/moe_gemm_kernels.h``): grouped
    and Blackwell always, ``WEIGHT_ONLY`` for T != WeightType, ``SIMT_ONLY`` for float T,
    ``FP8_ONLY`` for FP8 x non-FP4, ``FP4_ONLY`` for FP4 activations or FP8 x FP4, and
    ``FP8FP4_MIXED`` for FP8 x FP4. None for other types."""
    t, w = _TLLM_TYPE.get(str(activation)), _TLLM_TYPE.get(str(weight))
    if t is None or w is None:
        return None
    return _runner_bits(t, w, "BLACKWELL", fp4_only=t == "fp4" or (t == "fp8" and w == "fp4"))


def _runner_bits(t: str, w: str, arch_bit: str, *, fp4_only: bool) -> int:
    """The flags both arches' runners pass (``GROUPED_GEMM``, ``arch_bit``, ``WEIGHT_ONLY``,
    ``SIMT_ONLY``, ``FP8_ONLY``, ``FP8FP4_MIXED``), ``FP4_ONLY`` where ``fp4_only``."""
    b = CONFIG_BITS
    flags = b["GROUPED_GEMM"] | b[arch_bit]
    if t != w:
        flags |= b["WEIGHT_ONLY"]
    if t == "f32":
        flags |= b["SIMT_ONLY"]
    if t == "fp8" and w not in ("fp4", "uint4"):
        flags |= b["FP8_ONLY"]
    if fp4_only:
        flags |= b["FP4_ONLY"]
    if t == "fp8" and w == "fp4":
        flags |= b["FP8FP4_MIXED"]
    return flags


def runner_flags_sm90(t: str, w: str, humming: bool = False) -> int | None:
    """The config flags ``MoeGemmRunner<T, WeightType, ..., Sm90Wfp4Afp8Mode>::
    getTmaWarpSpecializedConfigs(90, ...)`` passes to ``get_candidate_configs``
    (``moe_gemm/moe_gemm_template_dispatch.h``; ``use_fp8``, ``use_fp4``, ``use_wfp4afp8``,
    ``use_sm90_humming_pre_mma`` from ``include/moe_gemm_kernels.h``), for TensorRT-LLM's types
    as :data:`SM90_RUNNERS` names them (``fp8``: ``__nv_fp8_e4m3``): grouped and Hopper
    always, ``WEIGHT_ONLY`` for T != WeightType, ``SIMT_ONLY`` for float T, ``FP8_ONLY`` for
    FP8 x a weight neither ``uint4b_t`` nor FP4, ``FP4_ONLY`` for FP4 activations or FP8 x FP4
    other than in the Humming pre-MMA mode (``humming``), ``FP8FP4_MIXED`` for FP8 x FP4. None
    for other types."""
    known = ("fp8", "bf16", "f16", "f32", "fp4", "uint4")
    if t not in known or w not in known or t == "uint4":
        return None
    return _runner_bits(t, w, "HOPPER", fp4_only=t == "fp4" or (t == "fp8" and w == "fp4" and not humming))


#: The SM90 runners (activation, weight, ``Sm90Wfp4Afp8ScaleMode``) :func:`sm90_lists` reads,
#: as TensorRT-LLM's types: flashinfer's ``moe_gemm_kernels_*.cu`` instantiate these
#: ``MoeGemmRunner``s (the FP8 x FP4 ones in the Humming pre-MMA and both post-MMA modes)
SM90_RUNNERS = (("fp8", "fp8", None), ("bf16", "bf16", None), ("f16", "f16", None), ("f32", "f32", None),
                ("fp8", "uint4", None), ("bf16", "uint4", None), ("f16", "uint4", None),
                ("bf16", "fp4", None), ("f16", "fp4", None), ("fp8", "fp4", "kHummingPreMmaE8M0"),
                ("fp8", "fp4", "kPostMmaFp8Act"), ("fp8", "fp4", "kPostMmaMxfp8Act"))


def sm90_runner(t: str | None, w: str | None, scale: str | None) -> str | None:
    """The key of :attr:`Candidates.sm90` for TensorRT-LLM types (:data:`SM90_RUNNERS`' names)
    and, for a mixed-input kernel, its scale mode (``PreMmaE8M0``, ``PostMma`` or None where
    its name gives none, the launcher's default ``kPostMma``): ``"fp8xfp8"``,
    ``"fp8xuint4"``, ``"fp8xfp4/humming"``, ``"fp8xfp4/post"``, ...; None for other types or
    scale modes."""
    if t is None or w is None:
        return None
    if t == "fp8" and w == "fp4":
        mode = {"PreMmaE8M0": "humming", "PostMma": "post", None: "post"}.get(scale)
        return None if mode is None else f"{t}x{w}/{mode}"
    return f"{t}x{w}" if scale in (None, "PostMma") else None


#: TensorRT-LLM's SM90 mixed-input MoE launchers (``moe_gemm/launchers/moe_gemm_tma_ws_mixed_input_launcher.h``)
SM90_MIXED_MOE = ("sm90_generic_mixed_moe_gemm_kernelLauncher", "sm90_generic_mixed_moe_small_k_kernelLauncher")
#: a launcher's template argument as written -> TensorRT-LLM's type (:data:`SM90_RUNNERS`' names)
_CUDA_TLLM = {"__nv_fp8_e4m3": "fp8", "SafeFP8": "fp8", "cutlass::uint4b_t": "uint4", "SafeFP4": "fp4",
              "__nv_fp4_e2m1": "fp4", "__nv_bfloat16": "bf16", "SafeBF16": "bf16", "half": "f16", "float": "f32"}


#: (activation, weight) kinds of the SM100 MoE runners flashinfer builds
SM100_RUNNERS = (("nvfp4", "nvfp4"), ("mxfp8", "mxfp4"), ("e4m3", "e4m3"), ("bf16", "bf16"), ("f16", "f16"),
                 ("f32", "f32"))


def sm100_lists(unit, sources: Path, sm: int = 100, rules: dict | None = None) -> dict[str, list] | str:
    """``{flags: [[tile enum, cluster_shape, dynamic, epilogue schedule], ...]}``: what the
    install's ``get_candidate_configs(sm, 1, flags)`` (``cutlass_heuristic.cpp``, which calls
    ``get_candidate_configs_sm100`` and its ``..._dynamic_cluster_shape``) returns for the
    flags of each of :data:`SM100_RUNNERS`, run over its code by :class:`~cutlass_layout.cpp.interpret.Eval`
    (``dynamic``: a ``dynamic_cluster_shape`` other than ``Undefined``); or the line saying
    why it cannot be read.

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
        t, w = _TLLM_TYPE[act], _TLLM_TYPE[weight]
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
                    row = [c["tile_config_sm100"].name, c["cluster_shape"].name,
                           c["dynamic_cluster_shape"].name != "Undefined", c["epilogue_schedule"].name]
                    if sm == 103:
                        row.append(103 if c["sm_version"] == 103 and t == w == "fp4" else 100)
                    rows.append(row)
        except (Unreadable, KeyError, AttributeError, TypeError, IndexError) as exc:
            return f"runtime candidates: get_candidate_configs for SM{sm} cannot be followed ({exc})"
        out[str(flags)] = rows
    return out


def sm90_lists(unit, sources: Path, tma_configs, hopper_valid) -> dict[str, list] | str:
    """``{runner: [[tile enum, cluster_shape, mainloop schedule, swap_ab only], ...]}`` for
    each of :data:`SM90_RUNNERS` (keyed as :func:`sm90_runner` keys a tactic's): what
    ``MoeGemmRunner::getTmaWarpSpecializedConfigs(90, ...)`` (``tma_configs``, its
    definition) builds, read from the install's code: an empty list where
    ``isValidHopperMOESpecialisation`` (``hopper_valid``: :func:`hopper_valid_rule`) refuses
    the types; else the rows of ``get_candidate_configs(90, 1, flags)``
    (``cutlass_heuristic.cpp``: ``get_candidate_configs_sm90`` over
    ``get_candidate_tiles_sm90``, run by :class:`~cutlass_layout.cpp.interpret.Eval` for :func:`runner_flags_sm90`),
    then the rows of the statement of ``getTmaWarpSpecializedConfigs`` that names
    ``Sm90Wfp4Afp8Mode`` (the Humming pre-MMA block after the FINALIZE and swap_ab
    duplications, which pushes configs with ``swap_ab`` set), run by :class:`~cutlass_layout.cpp.interpret.Eval` with the
    runner's ``use_wfp4afp8``, mode and ``sm`` 90. Or the line saying why it cannot be read:
    the function has another shape (no such statement, or another statement after it than
    ``return tma_ws_configs;``)."""
    from ..cpp.cursors import body_statements, enumerators_referenced, is_if, tokens
    from ..cpp.interpret import EnumValue, Eval, Unreadable

    fn = _candidate_function(unit, sources)
    if fn is None or tma_configs is None:
        return f"runtime candidates: get_candidate_configs or getTmaWarpSpecializedConfigs not found in {HEURISTIC} / {DISPATCH}"
    stmts = body_statements(tma_configs)
    at = [i for i, st in enumerate(stmts) if is_if(st) and "Sm90Wfp4Afp8Mode" in tokens(st)]
    rest = [tokens(st) for st in stmts[at[0] + 1:]] if len(at) == 1 else None
    if [[t for t in r if t != ";"] for r in rest or []] != [["return", "tma_ws_configs"]]:
        return ("runtime candidates: getTmaWarpSpecializedConfigs has no single last statement naming "
                f"Sm90Wfp4Afp8Mode before its return ({DISPATCH})")
    block = stmts[at[0]]
    modes = {name: EnumValue(value, name, "Sm90Wfp4Afp8ScaleMode")
             for name, value in enumerators_referenced(block, "Sm90Wfp4Afp8ScaleMode").items()}
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
                    rows.append([c["tile_config_sm90"].name, c["cluster_shape"].name,
                                 c["mainloop_schedule"].name, False])
                env = ChainMap({"use_wfp4afp8": t == "fp8" and w == "fp4", "sm": 90, "tma_ws_configs": [],
                                "Sm90Wfp4Afp8Mode": modes.get(mode or "kDisabled", EnumValue(0, "kDisabled", ""))})
                Eval().run(block, env)
                for c in env["tma_ws_configs"]:
                    if c.get("swap_ab") is not True:
                        raise Unreadable("a config of the Sm90Wfp4Afp8Mode block without swap_ab")
                    rows.append([c["tile_config_sm90"].name, c["cluster_shape"].name,
                                 c["mainloop_schedule"].name, True])
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
    "is_same<EpilogueTag,cutlass_extensions::EpilogueOpDefault>::value;":
        lambda t, w: (t == w or (w == "uint4" and t == "fp8") or w == "fp4") and t != "fp4",
    "ifconstexpr(Fusion==TmaWarpSpecializedGroupedGemmInput::EpilogueFusion::ACTIVATION){returnfalse;}"
    "return(cutlass::platform::is_same<T,WeightType>::value||(cutlass::platform::is_same<cutlass::uint4b_t,"
    "WeightType>::value&&cutlass::platform::is_same<T,__nv_fp8_e4m3>::value))&&cutlass::platform::"
    "is_same<EpilogueTag,cutlass_extensions::EpilogueOpDefault>::value;":
        lambda t, w: t == w or (w == "uint4" and t == "fp8"),
    "ifconstexpr(Fusion==TmaWarpSpecializedGroupedGemmInput::EpilogueFusion::ACTIVATION){returnfalse;}"
    "returnfalse;": lambda t, w: False,
}


def hopper_valid_rule(inc: Path, defined: set[str]):
    """Which TensorRT-LLM types (:data:`SM90_RUNNERS`' names) ``isValidHopperMOESpecialisation<T,
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
    (:data:`TRAITS` below ``inc``), comments blanked, with the preprocessor's branches taken for
    the macros ``defined`` (:func:`cutlass_layout.cpp.preprocessor.active_text`; the lines of
    branches not taken and of the conditional directives emptied); None where the header or the
    function is not there, its conditionals do not balance or other directives are left in it."""
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
        return ("runtime candidates: getTmaWarpSpecializedConfigs treats SM103 in a way this reader "
                f"does not follow ({DISPATCH})")
    return {"to_sm100": to100.group(1) if to100 else None, "append_sm100": append.group(1) if append else None}


#: The condition under which the dispatch's SM103 switch runs (its tokens, spaces between)
SM103_CONDITION = ("gemm_config . sm_version == 103 && std :: is_same_v < T , Fp4Type > && "
                   "std :: is_same_v < WeightType , Fp4Type >")


#: Enum constants of the tile and cluster enums that name no config
_NO_CONFIG = ("Undefined", "ChooseWithHeuristic")


def _definitions(unit, sources: Path):
    """``(kind, cursor)`` of the function definitions at namespace and class scope of the
    install's own sources (files below ``sources``; see
    :func:`~cutlass_layout.cpp.cursors.function_definitions`)."""
    from ..cpp.cursors import function_definitions

    return function_definitions(unit.tu.cursor, (str(sources), str(sources.resolve())))


def _candidate_function(unit, sources: Path):
    """The definition of ``get_candidate_configs`` (``cutlass_heuristic.cpp``), or None."""
    return next((c for kind, c in _definitions(unit, sources)
                 if kind == "function" and c.spelling == "get_candidate_configs"), None)


#: Which of the macros :func:`hopper_valid_rule` takes branches on the parse defines: an enum
#: declared in the parsed text for each one defined (read by :func:`_defined`)
PROBE_MACROS = "".join(f"#if defined({m})\nenum cutlass_layout_defined_{m} {{}};\n#endif\n"
                       for m in ("ENABLE_FP4", "CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED"))


def _defined(unit) -> set[str]:
    """The macros of :data:`PROBE_MACROS` that are defined in ``unit``."""
    from ..cpp.cursors import declared_enums

    return {name.removeprefix("cutlass_layout_defined_")
            for name in declared_enums(unit.tu.cursor, "cutlass_layout_defined_")}


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
    dispatch sources (bodies parsed), which lie below ``sources``."""
    from ..cpp.cursors import case_constants, condition_names, enum_references, switches, tokens

    fn_name, enum, member = ARCH[arch]
    out = Candidates()
    fn = disp = dup = None
    sm90_fns: dict = {}
    for kind, c in _definitions(unit, sources):
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

    if fn is None or disp is None:
        out.note = (f"runtime candidates: {fn_name} or the MoE tile dispatch not found in "
                    f"{HEURISTIC} / {DISPATCH_TMA_WS}")
        return out
    # the candidate list: enum constants named outside lambdas
    names, lambdas = enum_references(fn, enum)
    for name in names:
        if name not in out.tiles and name not in _NO_CONFIG:
            out.tiles.append(name)
    for lam in lambdas:
        pruned = _read_pruning(lam, enum)
        if pruned is None:
            out.note = f"runtime candidates: the pruning lambda of {fn_name} has an unexpected shape"
            return out
        out.pruned.update(pruned)
    # the dispatch: cases of every switch on `<config>.tile_config_sm120`, with the condition
    # of the innermost `if` around it that names `sm_version` (SM10x: which configs reach it)
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
        out.note = f"runtime candidates: no switch on {member} in the MoE tile dispatch"
        return out
    if arch == "sm103" and sm103_conditions != [SM103_CONDITION]:
        out.note = ("runtime candidates: the MoE tile dispatch's SM103 switch runs under a condition "
                    f"this reader does not follow ({DISPATCH_TMA_WS})")
        return out
    if dup is not None:
        words = tokens(dup)
        out.duplicated = "FINALIZE" in words and "swap_ab" in words
        if out.duplicated and "get_candidate_configs" in words:
            first = {w: words.index(w) for w in ("get_candidate_configs", "FINALIZE", "swap_ab")}
            if first["get_candidate_configs"] < min(first["FINALIZE"], first["swap_ab"]):
                out.duplication = sorted(("finalize", "swap_ab"),
                                         key=lambda w: first["FINALIZE" if w == "finalize" else w])
    out.no_smem = "NO_SMEM" in tokens(fn)
    if arch in SM10X:
        words = tokens(dup) if dup is not None else []
        rules = sm103_rules(words) if arch == "sm103" else None
        if isinstance(rules, str):
            out.note = rules
            return out
        lists = sm100_lists(unit, sources, SM10X[arch], rules)
        if isinstance(lists, str):
            out.note = lists
            return out
        out.sm100 = lists
        out.finalize_needs_tma = "remove_if" in words and "NO_SMEM" in words
    if arch == "sm90":
        missing = [f for f in _SM90_DISPATCH if f not in sm90_fns]
        if missing:
            out.note = f"runtime candidates: {', '.join(missing)} not found in the MoE dispatch ({DISPATCH})"
            return out
        out.dispatched_clusters = _cases(sm90_fns["dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized"],
                                         "cluster_shape", "ClusterShape")
        out.mixed_dispatched = _cases(sm90_fns["sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass"], member, enum)
        out.mixed_clusters = _cases(sm90_fns["sm90_dispatch_moe_mixed_dtype_gemm_config"],
                                    "cluster_shape", "ClusterShape")
        if not (out.dispatched_clusters and out.mixed_dispatched and out.mixed_clusters):
            out.note = f"runtime candidates: a switch of the SM90 MoE dispatch was not found ({DISPATCH})"
            return out
        valid = hopper_valid_rule(sources, _defined(unit))
        if valid is None:
            out.note = f"runtime candidates: isValidHopperMOESpecialisation has a shape this reader does not follow ({TRAITS})"
            return out
        lists = sm90_lists(unit, sources, dup, valid)
        if isinstance(lists, str):
            out.note = lists
            return out
        out.sm90 = lists
    return out


#: The SM90 dispatch functions :func:`read_candidates` reads the cases of (the TMA
#: warp-specialized cluster switch, the mixed-input tile and cluster switches)
_SM90_DISPATCH = ("dispatchMoeGemmSelectClusterShapeTmaWarpSpecialized",
                  "sm90_dispatch_moe_mixed_dtype_gemm_to_cutlass", "sm90_dispatch_moe_mixed_dtype_gemm_config")


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


def runtime_candidates(install, arch: str, flags: list[str] | None, *, pch_preamble: str | None = None,
                       pch_key: str = "", use_cache: bool = True,
                       cached_only: bool = False) -> Candidates | None:
    """The MoE runtime candidates of ``arch`` in ``install`` (see the module docstring), or
    None where the install has no candidate function for the arch or no MoE module.

    ``flags`` are the MoE module's clang flags; ``pch_preamble`` the includes of one of its
    generated sources (:func:`cutlass_layout.installs.kernels.pch_preamble`): the headers they include
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

    from ..cpp.clang import ProbeUnit, ensure_pch

    unparsed: list[Candidates] = []  # an answer of a parse that failed: not cached

    def compute() -> Candidates:
        # the dispatch header includes the TMA WS dispatch (which has no include guard)
        text = "".join(f'#include "{p}"\n' for p in (DISPATCH, HEURISTIC)) + PROBE_MACROS
        pch = ensure_pch(pch_preamble, list(flags), pch_key) if pch_preamble else None
        try:
            unit = ProbeUnit(text, list(flags) + (["-include-pch", str(pch)] if pch else []),
                             install.tree.include_root, filename="cutlass_layout_candidates.cu",
                             skip_bodies=False)
        except Exception as exc:  # libclang could not parse at all
            unparsed.append(Candidates(note=f"runtime candidates: cannot parse {HEURISTIC}: {exc}"))
            return unparsed[-1]
        errors = unit.errors()
        if errors:
            return Candidates(note=f"runtime candidates: {HEURISTIC} does not parse here ({errors[0].one_line()})")
        out = read_candidates(unit, arch, inc)
        out.fallback_excludes_fp4 = fallback_excludes_fp4(inc, list(flags))
        return out

    return CANDIDATES.memo(candidates_key(install, arch, flags), compute, load=lambda d: Candidates(**d),
                           dump=lambda c: None if unparsed else asdict(c), use_cache=use_cache,
                           cached_only=cached_only)


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
