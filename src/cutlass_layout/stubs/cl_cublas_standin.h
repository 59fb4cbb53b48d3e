/* cutlass-layout stand-in for cuBLAS, used only where the CUDA headers have none (the CUDA
 * header wheels do not ship cuBLAS). TensorRT-LLM's tensorrt_llm/common/cudaUtils.h includes
 * cublasLt.h and cublas_v2.h and names only the status enum (in an error-string helper);
 * nothing here takes part in any kernel's layout. Values as in cuBLAS's cublas_api.h, which
 * includes cuComplex.h (and with it math.h: cudaUtils.h's host code calls expf and sqrtf). */
#pragma once
#include <cuComplex.h>
typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;
