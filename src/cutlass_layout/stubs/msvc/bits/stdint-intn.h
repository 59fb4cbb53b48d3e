/* cutlass-layout: glibc's bits/stdint-intn.h for the MSVC x64 (LLP64) parse: the
 * fixed-width types of this folder's stdint.h (glibc's type the 64-bit ones as long, 4 bytes
 * on LLP64). */
#include <stdint.h>
