"""Known-good values from tests/handed.md, computed by nvcc 13.0 (bytes)."""

#: Section A, SM120 NVFP4 grouped GEMM (flashinfer-python 0.7.2.post1; the same on
#: nvidia-cutlass 4.2.0.0): (tile, preset) -> (stages, mainloop, epilogue, kernel, fits 101376)
SECTION_A = {
    ((128, 128, 128), "flashinfer"): (4, 74752, 9216, 84992, True),
    ((128, 256, 128), "flashinfer"): (3, 83968, 9216, 94208, True),
    ((256, 128, 128), "flashinfer"): (3, 83968, 9216, 94208, True),
    ((128, 128, 128), "trtllm-moe"): (4, 74752, 13312, 89088, True),
    ((128, 256, 128), "trtllm-moe"): (3, 83968, 13312, 98304, True),
}
