/* cutlass-layout: cuda.h as cl.exe's host pass reads it. cl.exe defines __cplusplus as
 * 199711L unless /Zc:__cplusplus is given (nvcc's front end emulates that on Windows), and
 * cuda.h gives CUtensorMap its alignas only when __cplusplus >= 201103L. The libstdc++ that
 * stands in for the MSVC STL here needs C++17's value (the MSVC STL reads _MSVC_LANG), so the
 * value is set around cuda.h alone, after the headers cuda.h includes. With
 * CUTLASS_LAYOUT_ZC_CPLUSPLUS defined (-Xcompiler /Zc:__cplusplus) it is left as it is. */
#include <stdlib.h>
#include <stdint.h>
#ifndef CUTLASS_LAYOUT_ZC_CPLUSPLUS
#pragma push_macro("__cplusplus")
#undef __cplusplus
#define __cplusplus 199711L
#endif
#include_next <cuda.h>
#ifndef CUTLASS_LAYOUT_ZC_CPLUSPLUS
#pragma pop_macro("__cplusplus")
#endif
