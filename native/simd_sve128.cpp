// The kernels for SVE with 128-bit vectors. CMake compiles this file alone with
// -march=armv8.2-a+sve -msve-vector-bits=128; simd.cpp only calls into it on a CPU whose SVE
// vector length is 128 bits (simd_sve.hpp).
#include "simd_table.hpp"
#include "simd_sve.hpp"

static_assert(__ARM_FEATURE_SVE_BITS == 128, "simd_sve128.cpp is compiled with -msve-vector-bits=128");

namespace orrery {

// 32 registers: four targets a block, as NEON's level of the same width (not measured on SVE hardware).
const SimdKernels kSve128Kernels = make_simd_kernels<simd_sve::Vec, 4, 4, simd_sve::FlockLanes>(
    "sve128", &simd_sve::narrow_to_half);

}  // namespace orrery
