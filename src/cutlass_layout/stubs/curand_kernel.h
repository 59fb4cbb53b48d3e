/* cutlass-layout stand-in for cuRAND's device API, used only where the CUDA headers have none
 * (the CUDA header wheels do not ship cuRAND; the nvidia-curand wheel is 77 MB of libraries).
 * CUTLASS's tools/util/include/cutlass/util/reference/device/tensor_fill.h includes it for its
 * random tensor fills: they name curandState_t in function signatures and call these functions
 * in kernel bodies. None of it takes part in a GEMM kernel's layout. Signatures as in cuRAND's
 * curand_kernel.h; the state struct has cuRAND's own members (tensor_fill.h's functors hold one). */
#pragma once
struct curandStateXORWOW {
  unsigned int d, v[5];
  int boxmuller_flag;
  int boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandStateXORWOW_t;
__device__ void curand_init(unsigned long long seed, unsigned long long subsequence,
                            unsigned long long offset, curandState_t* state);
__device__ float curand_uniform(curandState_t* state);
__device__ double curand_uniform_double(curandState_t* state);
__device__ float curand_normal(curandState_t* state);
__device__ double curand_normal_double(curandState_t* state);
