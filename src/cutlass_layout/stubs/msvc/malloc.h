/* cutlass-layout: <malloc.h> for the MSVC x64 parse: glibc's, plus the UCRT's
 * _aligned_malloc and _aligned_free, which clang's mm_malloc.h calls on Windows
 * (declarations only). */
#ifndef CUTLASS_LAYOUT_MSVC_MALLOC_H
#define CUTLASS_LAYOUT_MSVC_MALLOC_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *_aligned_malloc(size_t, size_t);
void _aligned_free(void *);
#ifdef __cplusplus
}
#endif
#endif
#include_next <malloc.h>
