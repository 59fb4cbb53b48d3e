"""The kernels an install builds, found in its own sources and laid out by the engine:
flashinfer's generated and JIT sources (:mod:`.kernels`), its runtime's candidate list
(:mod:`.candidates`), what fits instead (:mod:`.fixes`), the MoE runner's SM80-path kernels on
SM120 (:mod:`.moe_sm80`) and CUTLASS's own kernel library (:mod:`.kernel_library`)."""
