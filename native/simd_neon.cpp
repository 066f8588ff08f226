// The kernels for NEON on AArch64: compiled with the project's flags alone (NEON is part of every
// AArch64 CPU), so simd.cpp offers it wherever the build is for AArch64.
#include <arm_neon.h>

#include "half_kernel.hpp"
#include "simd_table.hpp"
#include "simd_neon.hpp"

namespace orrery {

namespace {

// fcvtn rounds as the FPCR says: to nearest, ties to even, unless a program changed it, which
// nothing here does; NaNs stay quiet NaNs with their top payload bits, as the scalar definition.
void narrow_to_half_neon(const float* source, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4)
    vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(source + i))));
  narrow_to_half_scalar(source + i, out + i, count - i);
}

}  // namespace

// 32 registers: four targets a block, as the scalar level (not measured on AArch64 hardware).
const SimdKernels kNeonKernels = make_simd_kernels<simd_neon::Vec, 4, 4, simd_neon::FlockLanes>(
    "neon", &narrow_to_half_neon);

}  // namespace orrery
