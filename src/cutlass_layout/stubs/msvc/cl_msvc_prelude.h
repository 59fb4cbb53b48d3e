/* cutlass-layout: forced into a host parse targeting x86_64-pc-windows-msvc. Declares the
 * MSVC intrinsics that CCCL names on Windows and clang's intrin.h may lack (declarations
 * only: no layout depends on them); the C runtime's own names are declared where the UCRT
 * declares them (this folder's math.h and malloc.h). The MSVC STL and UCRT headers are not
 * modelled: libstdc++'s and glibc's stand in. */
#ifndef CUTLASS_LAYOUT_MSVC_PRELUDE_H
#define CUTLASS_LAYOUT_MSVC_PRELUDE_H
#include <stdint.h> /* the LLP64 fixed-width types (this folder's) */
#ifdef __cplusplus
extern "C" {
#endif
unsigned long long _udiv128(unsigned long long, unsigned long long, unsigned long long, unsigned long long *);
long long _div128(long long, long long, long long, long long *);
#ifdef __cplusplus
}
#endif
#endif
