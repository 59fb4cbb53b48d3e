"""Where a kernel comes from: CUTLASS trees (:mod:`.trees`: find one in a directory, checkout,
wheel or install; a tree's files and hash, :mod:`.digests`; wheels read, fetched and unpacked,
:mod:`.wheels`), flashinfer installs (:mod:`.flashinfer`, the TVM FFI headers their bindings
include, :mod:`.tvm_ffi`), CUTLASS's own kernel library (:mod:`.library`), CUDA's headers
(:mod:`.cuda`), and what an installed flashinfer's JIT builds (:mod:`.flashinfer_jit`, its
builders run in a child by ``_flashinfer_harness``; CUTLASS's own generator by
``_cutlass_library_harness``)."""
