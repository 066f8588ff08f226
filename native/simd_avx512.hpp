// AVX-512 traits (512-bit: 16 floats or 8 doubles). Compiled only in simd_avx512.cpp, with
// -mavx512f -mavx512dq. See simd_scalar.hpp for the interface every traits type shares.
//
// 1/sqrt starts from vrsqrt14 (relative error < 2^-14, so |e| < 2^-13) and is refined by the
// series in rsqrt_refine.hpp: first order for float, third order for double; m/r^3 is refined
// from the same estimate by the series of the cube (cube_series, ADR 0080). docs/performance.md
// gives the measured error of each against a correctly rounded value.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "avx512_lanes.hpp"
#include "rsqrt_refine.hpp"

namespace orrery {
namespace simd_avx512 {

template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using Scalar = float;
  using V = __m512;
  static constexpr std::size_t lanes = 16;
  static constexpr const char* refinement =
      "vrsqrt14ps; m/r^3 by the first-order series of the cube, 1/r by one Newton step";
  // Truncated after e: the dropped 15/8 e^2 is below 2^-25 relative.
  static constexpr double cube_series[] = {1.0, 1.5};

  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_maskz_sqrt_ps(kAllFloats, a); }
  static V min(V a, V b) { return _mm512_maskz_min_ps(kAllFloats, a, b); }
  static constexpr bool has_estimate = true;
  static V zero_lane(V v, std::size_t lane) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~(1u << lane)), v);
  }
  static V rsqrt_estimate(V x) { return _mm512_maskz_rsqrt14_ps(kAllFloats, x); }
  static V two_over_sqrt(V r2) { return refine_two_over_sqrt<Vec, 1>(r2, rsqrt_estimate(r2)); }
  // 16 x 16 in four butterfly stages (distance d = 1, 2, 4, 8), as Vec<double>'s 8 x 8: element c
  // of the new row i (bit d of i clear) is (c & d) ? b[c - d] : a[c], of the new row i + d
  // (c & d) ? b[c] : a[c + d], where a and b are rows i and i + d (an index of 16 or more picks
  // from b).
  static void transpose(const float* const* rows, std::size_t offset, float* out, std::size_t stride) {
    V r[16];
    for (std::size_t i = 0; i < 16; ++i) r[i] = load(rows[i] + offset);
    const __m512i low[4] = {
        _mm512_set_epi32(30, 14, 28, 12, 26, 10, 24, 8, 22, 6, 20, 4, 18, 2, 16, 0),
        _mm512_set_epi32(29, 28, 13, 12, 25, 24, 9, 8, 21, 20, 5, 4, 17, 16, 1, 0),
        _mm512_set_epi32(27, 26, 25, 24, 11, 10, 9, 8, 19, 18, 17, 16, 3, 2, 1, 0),
        _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 7, 6, 5, 4, 3, 2, 1, 0)};
    const __m512i high[4] = {
        _mm512_set_epi32(31, 15, 29, 13, 27, 11, 25, 9, 23, 7, 21, 5, 19, 3, 17, 1),
        _mm512_set_epi32(31, 30, 15, 14, 27, 26, 11, 10, 23, 22, 7, 6, 19, 18, 3, 2),
        _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 23, 22, 21, 20, 7, 6, 5, 4),
        _mm512_set_epi32(31, 30, 29, 28, 27, 26, 25, 24, 15, 14, 13, 12, 11, 10, 9, 8)};
    // Unrolled, so that the rows stay in registers (the loops as written went through memory).
#pragma GCC unroll 4
    for (std::size_t s = 0; s < 4; ++s) {
      const std::size_t d = std::size_t(1) << s;
#pragma GCC unroll 16
      for (std::size_t i = 0; i < 16; ++i)
        if (!(i & d)) {
          const V a = r[i], b = r[i + d];
          r[i] = _mm512_permutex2var_ps(a, low[s], b);
          r[i + d] = _mm512_permutex2var_ps(a, high[s], b);
        }
    }
    for (std::size_t i = 0; i < 16; ++i) store(out + i * stride, r[i]);
  }
};

template <>
struct Vec<double> {
  using Scalar = double;
  using V = __m512d;
  static constexpr std::size_t lanes = 8;
  static constexpr const char* refinement =
      "vrsqrt14pd; m/r^3 by an economised third-order series of the cube, 1/r by the third-order "
      "series";
  // The e^4 term (315/128) economised onto e^2 over |e| <= 2^-13 (Chebyshev: e^4 ~ a^2 e^2 with
  // a = 2^-13), which leaves at most 315/128 * 2^-54 = 0.62 * 2^-52 relative, one FMA fewer than
  // the fourth-order series.
  static constexpr double cube_series[] = {1.0, 1.5, 1.875 + 2.4609375 * 0x1p-26, 2.1875};
  // 1/x = y0^2 / (1 - e) = y0^2 (1 + e + e^2 + e^3 + ...), its e^4 term economised onto e^2 as
  // the cube's (at most 2^-55 relative left); the direct sum's VJP takes z^5 from it.
  static constexpr double inverse_square_series[] = {1.0, 1.0, 1.0 + 0x1p-26, 1.0};

  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V zero() { return _mm512_setzero_pd(); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm512_fnmadd_pd(a, b, c); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V sqrt(V a) { return _mm512_maskz_sqrt_pd(kAllDoubles, a); }
  static V min(V a, V b) { return _mm512_maskz_min_pd(kAllDoubles, a, b); }
  static constexpr bool has_estimate = true;
  static V zero_lane(V v, std::size_t lane) {
    return _mm512_maskz_mov_pd(static_cast<__mmask8>(~(1u << lane)), v);
  }
  static V rsqrt_estimate(V x) { return _mm512_maskz_rsqrt14_pd(kAllDoubles, x); }
  static V two_over_sqrt(V r2) { return refine_two_over_sqrt<Vec, 3>(r2, rsqrt_estimate(r2)); }
  // 8 x 8 in three butterfly stages (distance d = 1, 2, 4): rows i and i + d (bit d of i clear)
  // swap the elements whose column's bit d differs from the row's.
  static void transpose(const double* const* rows, std::size_t offset, double* out, std::size_t stride) {
    V r[8];
    for (std::size_t i = 0; i < 8; ++i) r[i] = load(rows[i] + offset);
    const __m512i low[3] = {_mm512_set_epi64(14, 6, 12, 4, 10, 2, 8, 0), _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0),
                            _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0)};
    const __m512i high[3] = {_mm512_set_epi64(15, 7, 13, 5, 11, 3, 9, 1), _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2),
                             _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4)};
    for (std::size_t s = 0, d = 1; s < 3; ++s, d *= 2)
      for (std::size_t i = 0; i < 8; ++i)
        if (!(i & d)) {
          const V a = r[i], b = r[i + d];
          r[i] = _mm512_permutex2var_pd(a, low[s], b);
          r[i + d] = _mm512_permutex2var_pd(a, high[s], b);
        }
    for (std::size_t i = 0; i < 8; ++i) store(out + i * stride, r[i]);
  }
};

}  // namespace simd_avx512
}  // namespace orrery
