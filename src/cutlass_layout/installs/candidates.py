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
(:class:`_Eval`, :func:`sm100_lists`) for the flags of each runner (:func:`runner_flags`), and a
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
by :class:`_Eval` with the runner's mode). A tactic is tried where a config has its tile, cluster
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

from ..core.cache import ResultCache
from ..core.cache import key as cache_key

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

        from ..cpp.text import template_args

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
#: a mixed-input kernel's scale mode (its name's last part) -> the runner modes that build it
_SCALE_MODES = {"PreMmaE8M0": ("kHummingPreMmaE8M0",), "PostMma": ("kPostMmaFp8Act", "kPostMmaMxfp8Act")}


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
    flags of each of :data:`SM100_RUNNERS`, run over its code by :class:`_Eval`
    (``dynamic``: a ``dynamic_cluster_shape`` other than ``Undefined``); or the line saying
    why it cannot be read.

    ``sm`` 103 (``rules``: :func:`sm103_rules`, the runner's list as
    ``getTmaWarpSpecializedConfigs`` builds it): for a runner whose ``to_sm100`` variable is
    true the list of ``sm`` 100, else of 103 with, where its ``append_sm100`` variable is
    true, SM100's list after it; each row gets a fifth entry, the arch tag of the kernel the
    config runs: 103 for a config of ``sm_version`` 103 of a runner whose activation and
    weight are FP4 (the dispatch's SM103 switch), else 100."""
    import clang.cindex as ci

    rules = rules or {}
    fn = next((c for c in _declarations(unit.tu.cursor, (str(sources), str(sources.resolve())))
               if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition()
               and c.spelling == "get_candidate_configs"), None)
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
                for c in _Eval().call(fn, [arg, 1, flags]) or []:
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
    ``get_candidate_tiles_sm90``, run by :class:`_Eval` for :func:`runner_flags_sm90`),
    then the rows of the statement of ``getTmaWarpSpecializedConfigs`` that names
    ``Sm90Wfp4Afp8Mode`` (the Humming pre-MMA block after the FINALIZE and swap_ab
    duplications, which pushes configs with ``swap_ab`` set), run by :class:`_Eval` with the
    runner's ``use_wfp4afp8``, mode and ``sm`` 90. Or the line saying why it cannot be read:
    the function has another shape (no such statement, or another statement after it than
    ``return tma_ws_configs;``)."""
    import clang.cindex as ci

    roots = (str(sources), str(sources.resolve()))
    fn = next((c for c in _declarations(unit.tu.cursor, roots)
               if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition()
               and c.spelling == "get_candidate_configs"), None)
    if fn is None or tma_configs is None:
        return f"runtime candidates: get_candidate_configs or getTmaWarpSpecializedConfigs not found in {HEURISTIC} / {DISPATCH}"
    body = next((c for c in tma_configs.get_children() if c.kind == ci.CursorKind.COMPOUND_STMT), None)
    stmts = list(body.get_children()) if body is not None else []
    at = [i for i, st in enumerate(stmts) if st.kind == ci.CursorKind.IF_STMT
          and "Sm90Wfp4Afp8Mode" in [t.spelling for t in st.get_tokens()]]
    rest = [[t.spelling for t in st.get_tokens()] for st in stmts[at[0] + 1:]] if len(at) == 1 else None
    if [[t for t in r if t != ";"] for r in rest or []] != [["return", "tma_ws_configs"]]:
        return ("runtime candidates: getTmaWarpSpecializedConfigs has no single last statement naming "
                f"Sm90Wfp4Afp8Mode before its return ({DISPATCH})")
    block = stmts[at[0]]
    modes = {}
    for c in block.walk_preorder():
        ref = c.referenced if c.kind == ci.CursorKind.DECL_REF_EXPR else None
        if ref is not None and ref.kind == ci.CursorKind.ENUM_CONSTANT_DECL \
                and ref.semantic_parent.spelling == "Sm90Wfp4Afp8ScaleMode":
            modes = {e.spelling: EnumValue(e.enum_value, e.spelling, "Sm90Wfp4Afp8ScaleMode")
                     for e in ref.semantic_parent.get_children()
                     if e.kind == ci.CursorKind.ENUM_CONSTANT_DECL}
            break
    out: dict[str, list] = {}
    for t, w, mode in SM90_RUNNERS:
        key = f"{t}x{w}" + ("" if mode is None else "/humming" if mode == "kHummingPreMmaE8M0" else "/post")
        if mode is not None and mode not in modes:
            return f"runtime candidates: Sm90Wfp4Afp8ScaleMode has no {mode} ({DISPATCH})"
        flags = runner_flags_sm90(t, w, humming=mode == "kHummingPreMmaE8M0")
        rows: list = []
        if hopper_valid(t, w):
            try:
                for c in _Eval().call(fn, [90, 1, flags]) or []:
                    rows.append([c["tile_config_sm90"].name, c["cluster_shape"].name,
                                 c["mainloop_schedule"].name, False])
                env = ChainMap({"use_wfp4afp8": t == "fp8" and w == "fp4", "sm": 90, "tma_ws_configs": [],
                                "Sm90Wfp4Afp8Mode": modes.get(mode or "kDisabled", EnumValue(0, "kDisabled", ""))})
                _Eval().run(block, env)
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
    from ..cpp.text import blank_comments

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


#: Which of the macros :func:`hopper_valid_rule` takes branches on the parse defines: an enum
#: declared in the parsed text for each one defined (read by :func:`_defined`)
PROBE_MACROS = "".join(f"#if defined({m})\nenum cutlass_layout_defined_{m} {{}};\n#endif\n"
                       for m in ("ENABLE_FP4", "CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED"))


def _defined(unit) -> set[str]:
    """The macros of :data:`PROBE_MACROS` that are defined in ``unit``."""
    import clang.cindex as ci

    return {c.spelling.removeprefix("cutlass_layout_defined_") for c in unit.tu.cursor.get_children()
            if c.kind == ci.CursorKind.ENUM_DECL and c.spelling.startswith("cutlass_layout_defined_")}


def _cases(fn, member: str, enum: str) -> list[str]:
    """The enum constants of ``enum`` that the case labels of the switches below ``fn`` whose
    condition names ``member`` name, in order."""
    import clang.cindex as ci

    out: list[str] = []
    for sw, _ in _switches(fn):
        cond = next(sw.get_children(), None)
        if cond is None or not any(t.spelling == member for t in cond.get_tokens()):
            continue
        for case in (c for c in sw.walk_preorder() if c.kind == ci.CursorKind.CASE_STMT):
            label = next(case.get_children(), None)
            for r in ([label] + list(label.walk_preorder())) if label is not None else []:
                name = _enum_constant(r, enum) if r.kind == ci.CursorKind.DECL_REF_EXPR else None
                if name:
                    if name not in out and name not in ("Undefined", "ChooseWithHeuristic"):
                        out.append(name)
                    break
    return out


def read_candidates(unit, arch: str, sources: Path) -> Candidates:
    """Read :class:`Candidates` from a parsed unit that includes the heuristic and both
    dispatch sources (bodies parsed), which lie below ``sources``."""
    import clang.cindex as ci

    fn_name, enum, member = ARCH[arch]
    out = Candidates()
    fn = disp = dup = None
    sm90_fns: dict = {}
    for c in _declarations(unit.tu.cursor, (str(sources), str(sources.resolve()))):
        if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition():
            if c.spelling == fn_name and fn is None:
                fn = c
        elif c.kind == ci.CursorKind.FUNCTION_TEMPLATE and c.is_definition():
            if c.spelling == "dispatchMoeGemmSelectTileShapeTmaWarpSpecialized":
                disp = c
            elif c.spelling in _SM90_DISPATCH:
                sm90_fns.setdefault(c.spelling, c)
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
    # the dispatch: cases of every switch on `<config>.tile_config_sm120`, with the condition
    # of the innermost `if` around it that names `sm_version` (SM10x: which configs reach it)
    sm103_conditions = []
    for sw, guard in _switches(disp):
        cond = next(sw.get_children(), None)
        if cond is None or not any(t.spelling == member for t in cond.get_tokens()):
            continue
        for case in (c for c in sw.walk_preorder() if c.kind == ci.CursorKind.CASE_STMT):
            label = next(case.get_children(), None)
            ref = next((r for r in ([label] + list(label.walk_preorder()))
                        if r.kind == ci.CursorKind.DECL_REF_EXPR and _enum_constant(r, enum)), None) \
                if label else None
            name = _enum_constant(ref, enum) if ref is not None else None
            if not name or name in ("Undefined", "ChooseWithHeuristic"):
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
        words = [t.spelling for t in dup.get_tokens()]
        out.duplicated = "FINALIZE" in words and "swap_ab" in words
        if out.duplicated and "get_candidate_configs" in words:
            first = {w: words.index(w) for w in ("get_candidate_configs", "FINALIZE", "swap_ab")}
            if first["get_candidate_configs"] < min(first["FINALIZE"], first["swap_ab"]):
                out.duplication = sorted(("finalize", "swap_ab"),
                                         key=lambda w: first["FINALIZE" if w == "finalize" else w])
    out.no_smem = "NO_SMEM" in [t.spelling for t in fn.get_tokens()]
    if arch in SM10X:
        words = [t.spelling for t in dup.get_tokens()] if dup is not None else []
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


def _switches(cursor, guard: str | None = None):
    """``(switch statement, guard)`` of every ``switch`` below ``cursor``, with the tokens of
    the condition of the innermost ``if`` it is in whose condition names ``sm_version``
    (spaces between; None where none is)."""
    for c in cursor.get_children():
        yield from _switches_at(c, guard)


def _switches_at(c, guard: str | None):
    """:func:`_switches` of ``c`` itself and what is below it."""
    import clang.cindex as ci

    if c.kind == ci.CursorKind.SWITCH_STMT:
        yield c, guard
    if c.kind == ci.CursorKind.IF_STMT:
        kids = list(c.get_children())
        words = [t.spelling for t in kids[0].get_tokens()] if kids else []
        if "sm_version" in words and len(kids) >= 2:
            yield from _switches_at(kids[0], guard)
            yield from _switches_at(kids[1], " ".join(words))
            for k in kids[2:]:  # the else branch (an `else if` is an if of its own)
                yield from _switches_at(k, guard)
            return
    yield from _switches(c, guard)


def _qualifier_sm(ref) -> str | None:
    """The arch of the enum alias a reference to an enum constant is qualified with
    (``CutlassTileConfigSM103::CtaShape128x128x128B`` -> ``"103"``), None where it names none."""
    import re

    import clang.cindex as ci

    for c in ref.get_children():
        if c.kind == ci.CursorKind.TYPE_REF:
            target = c.referenced
            m = re.fullmatch(r"CutlassTileConfigSM(\d+)", target.spelling if target is not None else "")
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

    k = candidates_key(install, arch, flags)
    cache = ResultCache("candidates")
    hit = cache.get(k, lambda d: Candidates(**d)) if use_cache else None
    if hit is not None or cached_only:
        return hit
    # the dispatch header includes the TMA WS dispatch (which has no include guard)
    text = "".join(f'#include "{p}"\n' for p in (DISPATCH, HEURISTIC)) + PROBE_MACROS
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


def candidates_key(install, arch: str, flags: list[str]) -> str:
    """The results-cache key of :func:`runtime_candidates`' answer for ``install``, ``arch``
    and the MoE module's clang ``flags``."""
    from ..cpp.clang import libclang_version

    return cache_key("candidates/3", subject=[arch, list(flags)], target=[install.fingerprint, libclang_version()],
                     code=("installs/candidates.py", "cpp/text.py", "cpp/preprocessor.py"))


def store_candidates(install, arch: str, flags: list[str], cand: Candidates) -> None:
    """Cache ``cand``, :func:`runtime_candidates`' answer computed elsewhere (a Dask worker,
    whose own cache this process does not read), under :func:`candidates_key`."""
    from dataclasses import asdict

    ResultCache("candidates").put(candidates_key(install, arch, flags), asdict(cand))


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


# ---------------------------------------------------------------------------------------
# SM100: the candidate function run over its own code
class Unreadable(Exception):
    """The code has a construct :class:`_Eval` does not follow (the answer is then None)."""


class EnumValue(int):
    """An enum constant as the code names it: compares as its integer value, keeps its name."""

    def __new__(cls, value: int, name: str, enum: str):
        out = super().__new__(cls, value)
        out.name, out.enum = name, enum
        return out


#: Binary operators :class:`_Eval` follows (``||`` and ``&&`` short-circuit)
_BINARY = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
           "&": lambda a, b: int(a) & int(b), "|": lambda a, b: int(a) | int(b),
           "%": lambda a, b: int(a) % int(b), "/": lambda a, b: int(a) // int(b),
           "*": lambda a, b: a * b, "+": lambda a, b: a + b, "-": lambda a, b: a - b}


#: What ``assert`` calls when it fails (glibc, BSD/macOS, MSVC)
_ASSERT_FAIL = ("__assert_fail", "__assert_rtn", "_wassert", "__assert")

#: Expression kinds a statement made only of has no effect (``((void)0)``)
_NO_EFFECT = ("PAREN_EXPR", "CXX_STATIC_CAST_EXPR", "CSTYLE_CAST_EXPR", "UNEXPOSED_EXPR", "INTEGER_LITERAL")


class _Eval:
    """Runs a C++ function of the install (a libclang definition, bodies parsed) on given
    argument values, for the few constructs TensorRT-LLM's SM100 and SM90 candidate functions
    are written in: local variables (also a structured binding, and declared with a
    constructor's arguments), ``if``, ``?:``, range ``for`` (also over a braced list and with a
    structured binding), ``return``, integer, bool and enum values, ``std::vector``
    ``push_back`` / ``insert(end, v.begin(), v.end())`` / ``size()``, ``std::set`` of enum
    values (``insert``, iterated in ascending order), braced lists and pairs, ``std::get<N>``,
    ``std::make_tuple``, calls of other functions with a body, the constructor of
    ``CutlassGemmConfig`` (a dict keyed by its parameter names), assignment to a variable
    (``config = CutlassGemmConfig(...)``) or to a member of a config (``config.swap_ab =
    true``). ``assert`` statements and ``using`` aliases are skipped. Anything else raises :class:`Unreadable`: the answer is never
    guessed. At most :data:`STEPS` steps."""

    STEPS = 200000

    def __init__(self):
        self.steps = 0

    def call(self, fn, args: list):
        import clang.cindex as ci

        body = fn.get_definition() if not fn.is_definition() else fn
        if body is None:
            raise Unreadable(f"{fn.spelling} has no body here")
        params = [c for c in body.get_children() if c.kind == ci.CursorKind.PARM_DECL]
        if len(params) != len(args):
            raise Unreadable(f"{fn.spelling}: {len(args)} arguments for {len(params)} parameters")
        env = ChainMap({p.spelling: a for p, a in zip(params, args)})
        stmt = next((c for c in body.get_children() if c.kind == ci.CursorKind.COMPOUND_STMT), None)
        if stmt is None:
            raise Unreadable(f"{fn.spelling} has no body here")
        done = self.run(stmt, env)
        return None if done is None else done[1]

    def run(self, c, env):
        """Run a statement; ``("return", value)`` when it returns."""
        import clang.cindex as ci

        self.steps += 1
        if self.steps > self.STEPS:
            raise Unreadable("too many steps")
        k = c.kind
        if k == ci.CursorKind.COMPOUND_STMT:
            env = env.new_child()
            for s in c.get_children():
                done = self.run(s, env)
                if done is not None:
                    return done
            return None
        if k == ci.CursorKind.DECL_STMT:
            for d in c.get_children():
                if d.kind == ci.CursorKind.VAR_DECL:
                    env[d.spelling] = self.init_of(d, env)
                elif d.kind == ci.CursorKind.UNEXPOSED_DECL:  # auto [a, b, c] = ...;
                    self.bind(d, env)
                elif d.kind not in (ci.CursorKind.STATIC_ASSERT, ci.CursorKind.TYPE_ALIAS_DECL,
                                    ci.CursorKind.TYPEDEF_DECL):
                    raise Unreadable(f"declaration {d.kind.name}")
            return None
        if k == ci.CursorKind.IF_STMT:
            kids = list(c.get_children())
            if len(kids) not in (2, 3):
                raise Unreadable("an if with an initializer")
            if self.value(kids[0], env):
                return self.run(kids[1], env)
            return self.run(kids[2], env) if len(kids) == 3 else None
        if k == ci.CursorKind.RETURN_STMT:
            kids = list(c.get_children())
            return ("return", self.value(kids[0], env) if kids else None)
        if k == ci.CursorKind.CXX_FOR_RANGE_STMT:
            kids = list(c.get_children())
            decl, items, body = kids[0], self.value(kids[-2], env), kids[-1]
            names = ([d.spelling for d in decl.get_children() if d.kind == ci.CursorKind.UNEXPOSED_DECL]
                     if decl.kind == ci.CursorKind.UNEXPOSED_DECL else [decl.spelling])
            for item in list(items):
                inner = env.new_child()
                if len(names) == 1:
                    inner[names[0]] = item
                else:
                    if len(item) != len(names):
                        raise Unreadable("a structured binding of another size")
                    inner.update(zip(names, item))
                done = self.run(body, inner)
                if done is not None:
                    return done
            return None
        if k == ci.CursorKind.NULL_STMT:
            return None
        if any(x.kind == ci.CursorKind.CALL_EXPR and x.spelling in _ASSERT_FAIL for x in c.walk_preorder()):
            return None  # assert(...) as the C library expands it
        if all(x.kind.name in _NO_EFFECT for x in c.walk_preorder()):
            return None  # ((void)0): assert(...) under NDEBUG
        if k in (ci.CursorKind.UNEXPOSED_EXPR, ci.CursorKind.CALL_EXPR, ci.CursorKind.BINARY_OPERATOR):
            self.value(c, env, statement=True)
            return None
        raise Unreadable(f"statement {k.name}: {_text(c)}")

    def bind(self, d, env):
        """A structured binding declaration (``auto const [a, b, c] = init;``)."""
        import clang.cindex as ci

        kids = list(d.get_children())
        names = [ch.spelling for ch in kids if ch.kind == ci.CursorKind.UNEXPOSED_DECL]
        inits = [ch for ch in kids if ch.kind != ci.CursorKind.UNEXPOSED_DECL]
        if not names or len(inits) != 1:
            raise Unreadable(f"a structured binding: {_text(d)}")
        value = self.value(inits[0], env)
        if not isinstance(value, (tuple, list)) or len(value) != len(names):
            raise Unreadable(f"a structured binding of another size: {_text(d)}")
        env.update(zip(names, value))

    def assign(self, target, value, env):
        """``target = value`` for a variable of an enclosing scope, or ``var.member = value``
        for a config (a dict) variable."""
        import clang.cindex as ci

        if isinstance(value, dict):
            value = dict(value)  # a copy, as C++ assigns
        if target.kind == ci.CursorKind.DECL_REF_EXPR:
            scope = next((m for m in env.maps if target.spelling in m), None)
            if scope is None:
                raise Unreadable(f"{target.spelling} is not known here")
            scope[target.spelling] = value
            return
        if target.kind == ci.CursorKind.MEMBER_REF_EXPR:
            obj = next(target.get_children(), None)
            name = obj.spelling if obj is not None and obj.kind == ci.CursorKind.DECL_REF_EXPR else None
            if name in env and isinstance(env[name], dict):
                env[name][target.spelling] = value
                return
        raise Unreadable(f"an assignment to {_text(target)}")

    def init_of(self, d, env):
        import clang.cindex as ci

        refs = (ci.CursorKind.TYPE_REF, ci.CursorKind.NAMESPACE_REF, ci.CursorKind.TEMPLATE_REF)
        kids = [ch for ch in d.get_children() if ch.kind not in refs]
        if not kids:
            raise Unreadable(f"{d.spelling} has no initializer")
        return self.value(kids[-1], env)

    def value(self, c, env, statement: bool = False):
        import clang.cindex as ci

        self.steps += 1
        if self.steps > self.STEPS:
            raise Unreadable("too many steps")
        k = c.kind
        kids = list(c.get_children())
        if k in (ci.CursorKind.UNEXPOSED_EXPR, ci.CursorKind.PAREN_EXPR, ci.CursorKind.CXX_STATIC_CAST_EXPR,
                 ci.CursorKind.CSTYLE_CAST_EXPR):
            kids = [ch for ch in kids if ch.kind != ci.CursorKind.TYPE_REF]
            if len(kids) != 1:
                raise Unreadable(f"an expression of {len(kids)} parts: {_text(c)}")
            return self.value(kids[0], env, statement)
        if k == ci.CursorKind.INTEGER_LITERAL:
            return int(next(c.get_tokens()).spelling.rstrip("uUlL"), 0)
        if k == ci.CursorKind.FLOATING_LITERAL:
            return float(next(c.get_tokens()).spelling.rstrip("fFlL"))
        if k == ci.CursorKind.CXX_BOOL_LITERAL_EXPR:
            return next(c.get_tokens()).spelling == "true"
        if k == ci.CursorKind.DECL_REF_EXPR:
            ref = c.referenced
            if ref is not None and ref.kind == ci.CursorKind.ENUM_CONSTANT_DECL:
                return EnumValue(ref.enum_value, ref.spelling, ref.semantic_parent.spelling)
            if c.spelling in env:
                return env[c.spelling]
            raise Unreadable(f"{c.spelling} is not known here")
        if k == ci.CursorKind.BINARY_OPERATOR and c.spelling == "=" and statement:
            self.assign(kids[0], self.value(kids[1], env), env)
            return None
        if k == ci.CursorKind.BINARY_OPERATOR:
            op = c.spelling
            a = self.value(kids[0], env)
            if op == "||":
                return bool(a) or bool(self.value(kids[1], env))
            if op == "&&":
                return bool(a) and bool(self.value(kids[1], env))
            if op not in _BINARY:
                raise Unreadable(f"operator {op}")
            return _BINARY[op](a, self.value(kids[1], env))
        if k == ci.CursorKind.UNARY_OPERATOR:
            op = next(c.get_tokens()).spelling
            if op == "!":
                return not self.value(kids[0], env)
            if op == "-":
                return -self.value(kids[0], env)
            raise Unreadable(f"operator {op}")
        if k == ci.CursorKind.CONDITIONAL_OPERATOR:
            return self.value(kids[1] if self.value(kids[0], env) else kids[2], env)
        if k == ci.CursorKind.INIT_LIST_EXPR:
            return [self.value(ch, env) for ch in kids]
        if k == ci.CursorKind.CALL_EXPR:
            return self.call_expr(c, kids, env, statement)
        raise Unreadable(f"expression {k.name}: {_text(c)}")

    def call_expr(self, c, kids, env, statement):
        import clang.cindex as ci

        ref = c.referenced
        name = c.spelling
        args = list(c.get_arguments())
        if ref is not None and ref.kind == ci.CursorKind.CONSTRUCTOR:
            if name == "vector":  # default arguments (the allocator) are not spelled
                args = [a for a in args if next(a.get_tokens(), None) is not None]
            if name == "vector":  # std::vector<...> v; v{...}; return {}
                if not args:
                    lists = [ch for ch in kids if ch.kind != ci.CursorKind.TYPE_REF]
                    return list(self.value(lists[0], env)) if lists else []
                if len(args) == 1:
                    return list(self.value(args[0], env))
                raise Unreadable(f"a vector built from {len(args)} arguments")
            if name == "set" and not args:  # std::set<...> s;
                return _Set()
            if name == "pair" and len(args) == 2:
                return tuple(self.value(a, env) for a in args)
            params = [p.spelling for p in ref.get_arguments()]
            if name == "CutlassGemmConfig" and len(params) == len(args):
                return {p: self.value(a, env) for p, a in zip(params, args)}
            raise Unreadable(f"constructor {name}")
        if name == "operator=" and statement and len(kids) == 3:  # config = CutlassGemmConfig(...);
            self.assign(_bare(kids[0]), self.value(kids[2], env), env)
            return None
        head = kids[0] if kids else None
        if head is not None and head.kind == ci.CursorKind.MEMBER_REF_EXPR:
            obj = next(head.get_children(), None)
            obj = _bare(obj) if obj is not None else None
            target = obj.spelling if obj is not None and obj.kind == ci.CursorKind.DECL_REF_EXPR else None
            if target in env and isinstance(env[target], _Set):
                if name == "insert" and len(args) == 1 and statement:
                    env[target].insert(self.value(args[0], env))
                    return None
                raise Unreadable(f"{name} of {target}")
            if target not in env or not isinstance(env[target], list):
                raise Unreadable(f"{name} of {_text(head)}")
            if name == "size" and not args:
                return len(env[target])
            if name == "push_back" and len(args) == 1:
                item = self.value(args[0], env)
                env[target].append(tuple(item) if isinstance(item, list)
                                   else dict(item) if isinstance(item, dict) else item)
                return None
            if name == "insert" and len(args) == 3:
                src = [[t.spelling for t in a.get_tokens()] for a in args[1:]]
                if len(src[0]) == 5 and src[0][1:] == [".", "begin", "(", ")"] and \
                        src[1] == [src[0][0], ".", "end", "(", ")"] and src[0][0] in env:
                    env[target].extend(env[src[0][0]])
                    return None
            raise Unreadable(f"{name} of {target}")
        if name == "get" and len(args) == 1:
            n = [int(t.spelling) for t in head.get_tokens() if t.spelling.isdigit()] if head is not None else []
            if len(n) != 1:
                raise Unreadable(_text(c))
            return self.value(args[0], env)[n[0]]
        if name == "make_tuple":
            return tuple(self.value(a, env) for a in args)
        if ref is not None and ref.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE):
            return self.call(ref, [self.value(a, env) for a in args])
        raise Unreadable(f"call {name}: {_text(c)}")


class _Set:
    """A ``std::set`` of integer values (enum constants): iterated in ascending order, as
    ``std::less`` orders it."""

    def __init__(self):
        self.items: list = []

    def insert(self, value) -> None:
        if not isinstance(value, int):
            raise Unreadable(f"a set of {type(value).__name__}")
        if value not in self.items:
            self.items.append(value)
            self.items.sort(key=int)

    def __iter__(self):
        return iter(list(self.items))


def _bare(c):
    """``c`` without the implicit casts libclang shows as unexposed expressions."""
    import clang.cindex as ci

    while c.kind == ci.CursorKind.UNEXPOSED_EXPR:
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _text(c) -> str:
    return " ".join(t.spelling for t in c.get_tokens())[:120]
