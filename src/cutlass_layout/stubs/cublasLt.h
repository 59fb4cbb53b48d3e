/* cutlass-layout stand-in (see cl_cublas_standin.h) */
#pragma once
#include "cl_cublas_standin.h"
