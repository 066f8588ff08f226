// The kernels for AVX-512 (F and DQ). CMake compiles this file alone with -mavx512f -mavx512dq;
// simd.cpp only calls into it when the CPU reports both.
#include "simd_table.hpp"
#include "simd_avx512.hpp"

namespace orrery {

const SimdKernels kAvx512Kernels = make_simd_kernels<simd_avx512::Vec, 3, 3>("avx512");

}  // namespace orrery
