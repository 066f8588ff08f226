// The kernels for AVX2 + FMA. CMake compiles this file alone with -mavx2 -mfma; simd.cpp only
// calls into it when the CPU reports both.
#include "isa_table.hpp"
#include "simd_avx2.hpp"

namespace orrery {

const IsaKernels kAvx2Kernels = make_isa_kernels<isa_avx2::Vec, 2, 2, isa_avx2::FlockLanes>("avx2");

}  // namespace orrery
