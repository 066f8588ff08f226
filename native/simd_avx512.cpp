// The kernels for AVX-512 (F and DQ). CMake compiles this file alone with -mavx512f -mavx512dq;
// simd.cpp only calls into it when the CPU reports both.
#include <immintrin.h>

#include "half_kernel.hpp"
#include "simd_table.hpp"
#include "simd_avx512.hpp"

namespace orrery {

namespace {

void narrow_to_half_avx512(const float* source, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i half = _mm512_cvtps_ph(_mm512_loadu_ps(source + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), half);
  }
  narrow_to_half_scalar(source + i, out + i, count - i);
}

}  // namespace

const SimdKernels kAvx512Kernels = make_simd_kernels<simd_avx512::Vec, 3, 3>(
    "avx512", &narrow_to_half_avx512);

}  // namespace orrery
