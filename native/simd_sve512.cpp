// The kernels for SVE with 512-bit vectors. CMake compiles this file alone with
// -march=armv8.2-a+sve -msve-vector-bits=512; simd.cpp only calls into it on a CPU whose SVE
// vector length is 512 bits (simd_sve.hpp).
#include "simd_table.hpp"
#include "simd_sve.hpp"

static_assert(__ARM_FEATURE_SVE_BITS == 512, "simd_sve512.cpp is compiled with -msve-vector-bits=512");

namespace orrery {

// 32 registers: three targets a block, as AVX-512's level of the same width (not measured on SVE hardware).
const SimdKernels kSve512Kernels = make_simd_kernels<simd_sve::Vec, 3, 3, simd_sve::FlockLanes>(
    "sve512", &simd_sve::narrow_to_half);

}  // namespace orrery
