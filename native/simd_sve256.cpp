// The kernels for SVE with 256-bit vectors. CMake compiles this file alone with
// -march=armv8.2-a+sve -msve-vector-bits=256; simd.cpp only calls into it on a CPU whose SVE
// vector length is 256 bits (simd_sve.hpp).
#include "simd_table.hpp"
#include "simd_sve.hpp"

static_assert(__ARM_FEATURE_SVE_BITS == 256, "simd_sve256.cpp is compiled with -msve-vector-bits=256");

namespace orrery {

// 32 registers: two targets a block, as AVX2's level of the same width (not measured on SVE hardware).
const SimdKernels kSve256Kernels = make_simd_kernels<simd_sve::Vec, 2, 2, simd_sve::FlockLanes>(
    "sve256", &simd_sve::narrow_to_half);

}  // namespace orrery
