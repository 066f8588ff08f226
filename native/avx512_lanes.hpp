// Every lane of an AVX-512 register through the zero-masked intrinsics: GCC 12's unmasked forms of
// some intrinsics (sqrt, min, rsqrt14, conversions, extracts, and the casts and reductions built
// on them) start from a self-initialised "undefined" register, which its link-time optimiser
// reports as maybe-uninitialized (GCC bug 105593, fixed in GCC 13). The zero-masked form with
// every lane set compiles to the same instruction with GCC and Clang. Included only where
// __AVX512F__ is defined (simd_avx512.cpp).
#pragma once

#include <immintrin.h>

namespace orrery {
namespace simd_avx512 {

inline constexpr __mmask16 kAllFloats = 0xffff;
inline constexpr __mmask8 kAllDoubles = 0xff;
inline constexpr __mmask8 kHalfDoubles = 0xf;

inline __m256d low_half(__m512d v) { return _mm512_maskz_extractf64x4_pd(kHalfDoubles, v, 0); }
inline __m256d high_half(__m512d v) { return _mm512_maskz_extractf64x4_pd(kHalfDoubles, v, 1); }
inline __m256 low_half(__m512 v) { return _mm256_castpd_ps(low_half(_mm512_castps_pd(v))); }
inline __m256 high_half(__m512 v) { return _mm256_castpd_ps(high_half(_mm512_castps_pd(v))); }

// The sum of the lanes in _mm512_reduce_add_pd's order: halves, then quarters, then the pair.
inline double sum_of_lanes(__m512d v) {
  const __m256d half = _mm256_add_pd(high_half(v), low_half(v));
  const __m128d quarter = _mm_add_pd(_mm256_extractf128_pd(half, 1), _mm256_castpd256_pd128(half));
  return _mm_cvtsd_f64(quarter) + _mm_cvtsd_f64(_mm_unpackhi_pd(quarter, quarter));
}

}  // namespace simd_avx512
}  // namespace orrery
