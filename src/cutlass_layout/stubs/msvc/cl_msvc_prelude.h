/* cutlass-layout: forced first in a host parse targeting x86_64-pc-windows-msvc. Declares
 * the MSVC C runtime's functions that CUDA's crt/math_functions.hpp, clang's mm_malloc.h and
 * CCCL name on Windows and glibc does not have (declarations only: no layout depends on
 * them). The MSVC STL and UCRT headers are not modelled: glibc's and libstdc++'s stand in. */
#ifndef CUTLASS_LAYOUT_MSVC_PRELUDE_H
#define CUTLASS_LAYOUT_MSVC_PRELUDE_H
#include <stddef.h>
#include <stdint.h> /* the LLP64 fixed-width types (this folder's), before any glibc header types them */
#ifdef __cplusplus
extern "C" {
#endif
double _j0(double);
double _j1(double);
double _jn(int, double);
double _y0(double);
double _y1(double);
double _yn(int, double);
void *_aligned_malloc(size_t, size_t);
void _aligned_free(void *);
unsigned long long _udiv128(unsigned long long, unsigned long long, unsigned long long, unsigned long long *);
long long _div128(long long, long long, long long, long long *);
#ifdef __cplusplus
}
#endif
#endif
