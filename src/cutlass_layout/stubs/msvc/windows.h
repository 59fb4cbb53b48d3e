/* cutlass-layout: a stand-in for the Windows SDK's <windows.h>, which is not here, in the
 * MSVC x64 parse: the few declarations the sources laid out call in function bodies
 * (TensorRT-LLM's common/cudaUtils.h: GlobalMemoryStatusEx), with the SDK's member types.
 * Nothing of the SDK appears in a kernel's Params or SharedStorage. */
#ifndef CUTLASS_LAYOUT_MSVC_WINDOWS_H
#define CUTLASS_LAYOUT_MSVC_WINDOWS_H
typedef unsigned long DWORD;
typedef unsigned long long DWORDLONG;
typedef int BOOL;
typedef struct _MEMORYSTATUSEX {
  DWORD dwLength;
  DWORD dwMemoryLoad;
  DWORDLONG ullTotalPhys;
  DWORDLONG ullAvailPhys;
  DWORDLONG ullTotalPageFile;
  DWORDLONG ullAvailPageFile;
  DWORDLONG ullTotalVirtual;
  DWORDLONG ullAvailVirtual;
  DWORDLONG ullAvailExtendedVirtual;
} MEMORYSTATUSEX, *LPMEMORYSTATUSEX;
#ifdef __cplusplus
extern "C"
#endif
    __declspec(dllimport) BOOL __stdcall GlobalMemoryStatusEx(LPMEMORYSTATUSEX);
#endif
