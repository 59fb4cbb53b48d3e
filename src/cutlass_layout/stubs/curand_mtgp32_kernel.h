/* Empty stand-in written for cutlass-layout.  clang's CUDA runtime wrapper includes
 * curand_mtgp32_kernel.h, which the pip CUDA header wheels do not ship.  Nothing of it
 * is needed to lay out host-side types, so this file is placed on a late include path
 * (-idirafter) and is only found when the real header is missing. */
