"""audit: every CUTLASS GEMM kernel an installed flashinfer builds for an arch, laid out exactly.

``audit(src)`` reads what the install builds from its own code (:mod:`cutlass_layout.sources.flashinfer_jit`:
its JIT module builders, the TensorRT-LLM MoE generator, its templates), lays out the kernel
of every launcher in every generated source with the flags its JIT compiles them with
(:mod:`cutlass_layout.installs.source_layout`), and names each as the install does:

* ``moe`` (TensorRT-LLM's MoE grouped GEMM, ``moe_gemm_tma_ws_launcher.inl``): the tile
  enum of its dispatch (``CtaShape128x256x64B``: K in bytes of the activation, as
  ``moe_gemm_template_dispatch_tma_ws.h`` counts it), the epilogue fusion, swap_ab and the
  output type, from the arguments of the launcher macro; and whether the install's runtime
  candidate list for the arch would try it (:mod:`cutlass_layout.installs.candidates`);
* other modules: the launcher (struct or function) and the kernel alias.

A tactic over capacity or an exact fit gets what fits instead (:mod:`cutlass_layout.installs.fixes`:
its launcher laid out again with ``StageCount<N>`` in the mainloop builder).

``audit(src, shard=(i, n))`` lays out shard ``i`` of ``n`` alone (the split:
:mod:`cutlass_layout.commands.shard`), and :func:`merge_shards` joins every shard's JSON into
the audit of the whole, through the same tail (:func:`finish_audit`).

Results are cached per source in the one results cache (:class:`~cutlass_layout.core.cache.ResultCache`,
kind ``audit``), keyed by the install's fingerprint, the CUTLASS tree hash, the source's
text, the clang flags, libclang and this code; sources are parsed in parallel worker processes.

The modules, in the order an audit runs them:

* :mod:`.plan`: what the install builds for the arch, its families, every source with its
  flags, facts and key (twin builds included), the shard's part;
* :mod:`.run`: the results cache, then the units in worker processes (precompiled headers,
  sources, the runtime's candidate list), and the ``moe_sm80`` family;
* :mod:`.tactics`: the kernels named as the install names them
  (:mod:`cutlass_layout.installs.naming`), streamed as they come in;
* :mod:`.judge`: what each source instantiates, and why one gives no kernel;
* :mod:`.filters`: what was asked, the filters, and the nearest values for one that matched nothing;
* :mod:`.finish`: the tail (filters, notes, capacity, order), shards and their merge;
* :mod:`.fixes`: the fix search of the tactics over capacity or exact fits;
* :mod:`.command`: :func:`audit` and :func:`audit_archs`, a page of named steps;
* :mod:`.presets`: what a preset approximates (``layout``, ``sweep``).

The arch vocabulary (:data:`~cutlass_layout.subjects.archs.AUDIT_ARCHS`) is the arch table's,
:mod:`cutlass_layout.subjects.archs`. This package re-exports the names other modules and
tests have imported from ``cutlass_layout.commands.audit``; new code imports from the module
that defines a name.
"""

from __future__ import annotations

from ...installs.moe_sm80 import FAMILY as SM80_FAMILY
from ...installs.naming import (
    BLOCK_SCALED,
    CUDA_TYPES,
    CUTLASS_TYPES,
    INTEGER_KINDS,
    MIXED_LAUNCHERS,
    MOE,
    element_kind,
    family_of,
    kernel_parts,
    macro_params,
    mixed_identity,
    tactic_of,
)
from ...subjects.archs import ALL, AUDIT_ARCHS, SM80_PATH_ARCHS, arch_list, audit_arch, every_arch
from .command import audit, audit_archs
from .filters import (
    ELEMENT_BITS,
    FILTER_KEYS,
    OUTPUTS,
    STREAM_LATER,
    asked_of,
    filter_tests,
    kept_by,
    stream_row,
    tactic_filter,
    unknown_family,
    unmatched_filters,
)
from .finish import VERDICT_ORDER, find_tactic, finish_audit, merge_shards, shard_part, sort_tactics
from .fixes import FIX_PART_MIN, FIX_VERDICTS, fix_parts, search_fixes
from .judge import judge_source, judge_sources, nothing_found, source_facts
from .plan import BATCH_WEIGHT, DEFAULT_WEIGHT, KERNEL_WEIGHTS, STANDINS, kernel_weight, twin_digests
from .presets import PRESET_FAMILIES, PRESET_KERNELS, approximations
from .tactics import over_so_far

__all__ = [
    "ALL",
    "AUDIT_ARCHS",
    "BATCH_WEIGHT",
    "BLOCK_SCALED",
    "CUDA_TYPES",
    "CUTLASS_TYPES",
    "DEFAULT_WEIGHT",
    "ELEMENT_BITS",
    "FILTER_KEYS",
    "FIX_PART_MIN",
    "FIX_VERDICTS",
    "INTEGER_KINDS",
    "KERNEL_WEIGHTS",
    "MIXED_LAUNCHERS",
    "MOE",
    "OUTPUTS",
    "PRESET_FAMILIES",
    "PRESET_KERNELS",
    "SM80_FAMILY",
    "SM80_PATH_ARCHS",
    "STANDINS",
    "STREAM_LATER",
    "VERDICT_ORDER",
    "approximations",
    "arch_list",
    "asked_of",
    "audit",
    "audit_arch",
    "audit_archs",
    "element_kind",
    "every_arch",
    "family_of",
    "filter_tests",
    "find_tactic",
    "finish_audit",
    "fix_parts",
    "judge_source",
    "judge_sources",
    "kernel_parts",
    "kernel_weight",
    "kept_by",
    "macro_params",
    "merge_shards",
    "mixed_identity",
    "nothing_found",
    "over_so_far",
    "search_fixes",
    "shard_part",
    "sort_tactics",
    "source_facts",
    "stream_row",
    "tactic_filter",
    "tactic_of",
    "twin_digests",
    "unknown_family",
    "unmatched_filters",
]
