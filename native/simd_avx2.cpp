// The kernels for AVX2 + FMA (+ F16C). CMake compiles this file alone with -mavx2 -mfma -mf16c;
// simd.cpp only calls into it when the CPU reports all three.
#include <immintrin.h>

#include "half_kernel.hpp"
#include "simd_table.hpp"
#include "simd_avx2.hpp"

namespace orrery {

namespace {

void narrow_to_half_f16c(const float* source, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(source + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  narrow_to_half_scalar(source + i, out + i, count - i);
}

}  // namespace

const SimdKernels kAvx2Kernels = make_simd_kernels<simd_avx2::Vec, 2, 2>("avx2",
                                                                          &narrow_to_half_f16c);

}  // namespace orrery
