"""Where a kernel comes from: CUTLASS trees, wheels and installs (:mod:`.trees`), what a user
names (:mod:`.inputs`), CUDA's headers (:mod:`.cuda`), and what an installed flashinfer's JIT
builds (:mod:`.flashinfer_jit`, its builders run in a child by ``_flashinfer_harness``;
CUTLASS's own generator by ``_cutlass_library_harness``)."""
