/* cutlass-layout: <math.h> for the MSVC x64 parse: glibc's, plus the Bessel functions the
 * UCRT declares there (corecrt_math.h) and glibc does not under these names; CUDA's
 * crt/math_functions.hpp calls them when _MSC_VER >= 1700 (declarations only). */
#ifndef CUTLASS_LAYOUT_MSVC_MATH_H
#define CUTLASS_LAYOUT_MSVC_MATH_H
#ifdef __cplusplus
extern "C" {
#endif
double _j0(double);
double _j1(double);
double _jn(int, double);
double _y0(double);
double _y1(double);
double _yn(int, double);
#ifdef __cplusplus
}
#endif
#endif
#include_next <math.h>
