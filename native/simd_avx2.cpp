// The kernels for AVX2 + FMA. CMake compiles this file alone with -mavx2 -mfma; simd.cpp only
// calls into it when the CPU reports both.
#include "simd_table.hpp"
#include "simd_avx2.hpp"

namespace orrery {

const SimdKernels kAvx2Kernels = make_simd_kernels<simd_avx2::Vec, 2, 2>("avx2");

}  // namespace orrery
