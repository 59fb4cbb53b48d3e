"""Cross-checks of the engine's numbers: nvcc given the same probe (:mod:`.verify`), nvcc's
numbers for an install's real sources (:mod:`.nvcc_probe`), and a launch on a local GPU
(:mod:`.gpu`)."""
