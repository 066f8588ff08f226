// The kernels for AVX-512 (F and DQ). CMake compiles this file alone with -mavx512f -mavx512dq;
// simd.cpp only calls into it when the CPU reports both.
#include "isa_table.hpp"
#include "simd_avx512.hpp"

namespace orrery {

const IsaKernels kAvx512Kernels = make_isa_kernels<isa_avx512::Vec, 3, 3, isa_avx512::FlockLanes>("avx512");

}  // namespace orrery
