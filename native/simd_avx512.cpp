// The kernels for AVX-512 (F and DQ). CMake compiles this file alone with -mavx512f -mavx512dq;
// simd.cpp only calls into it when the CPU reports both.
#include <immintrin.h>

#include <algorithm>

#include "half_kernel.hpp"
#include "simd_table.hpp"
#include "simd_avx512.hpp"

namespace orrery {

namespace {

void narrow_to_half_avx512(const float* source, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i half = _mm512_maskz_cvtps_ph(simd_avx512::kAllFloats, _mm512_loadu_ps(source + i),
                                                _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), half);
  }
  narrow_to_half_scalar(source + i, out + i, count - i);
}

}  // namespace

// The host splat's sprite row, four pixels at a time: lane 4 p + c is pixel p's channel c (r, g,
// b, alpha), the disc test and the columns beyond the sprite masked off. The same operations as
// the generic SplatRow in the same order (a masked-off or below-one amount adds 0 counts where
// the generic code skips it), so the same bits.
template <>
struct SplatRow<simd_avx512::Vec<float>> {
  static void add(const SplatRowArgs& a, std::uint64_t* pixel) {
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512 colour = _mm512_set_ps(1.0f, a.b, a.g, a.r, 1.0f, a.b, a.g, a.r, 1.0f, a.b, a.g,
                                        a.r, 1.0f, a.b, a.g, a.r);
    const __mmask16 colour_lanes = 0x7777;
    const __m512 oy2 = _mm512_set1_ps(a.oy2), ey = _mm512_set1_ps(a.ey),
                 intensity = _mm512_set1_ps(a.intensity), one = _mm512_set1_ps(a.one),
                 half = _mm512_set1_ps(0.5f), cap = _mm512_set1_ps(a.cap),
                 unit = _mm512_set1_ps(1.0f);
    for (int i = 0; i < a.columns; i += 4, pixel += 4 * kSplatChannels) {
      const int here = std::min(a.columns - i, 4);
      const __mmask16 loaded = static_cast<__mmask16>((1u << here) - 1);
      const __mmask16 present = static_cast<__mmask16>((1u << (4 * here)) - 1);
      const __m512 ox2 = _mm512_maskz_permutexvar_ps(simd_avx512::kAllFloats, spread,
                                                     _mm512_maskz_loadu_ps(loaded, a.ox2 + i));
      const __m512 ex = _mm512_maskz_permutexvar_ps(simd_avx512::kAllFloats, spread,
                                                    _mm512_maskz_loadu_ps(loaded, a.ex + i));
      const __mmask16 inside =
          _mm512_mask_cmp_ps_mask(present, _mm512_add_ps(ox2, oy2), unit, _CMP_LE_OQ);
      if (!inside) continue;
      const __m512 weight = _mm512_mul_ps(ex, ey);
      const __m512 brightness = _mm512_mul_ps(intensity, weight);
      const __m512 value = _mm512_mask_mul_ps(weight, colour_lanes, colour, brightness);
      const __m512 amount = _mm512_maskz_min_ps(simd_avx512::kAllFloats,
                                                _mm512_add_ps(_mm512_mul_ps(value, one), half), cap);
      const __m512i low = _mm512_cvttps_epu64(simd_avx512::low_half(amount));
      const __m512i high = _mm512_cvttps_epu64(_mm512_extractf32x8_ps(amount, 1));
      const __mmask8 low_mask = static_cast<__mmask8>(inside), high_mask = static_cast<__mmask8>(inside >> 8);
      _mm512_mask_storeu_epi64(pixel, low_mask,
                               _mm512_add_epi64(_mm512_maskz_loadu_epi64(low_mask, pixel), low));
      _mm512_mask_storeu_epi64(pixel + 8, high_mask,
                               _mm512_add_epi64(_mm512_maskz_loadu_epi64(high_mask, pixel + 8), high));
    }
  }
};

const SimdKernels kAvx512Kernels = make_simd_kernels<simd_avx512::Vec, 3, 3,
                                                        simd_avx512::FlockLanes>(
    "avx512", &narrow_to_half_avx512);

}  // namespace orrery
