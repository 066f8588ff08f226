// AVX2 + FMA traits (256-bit: 8 floats or 4 doubles). Compiled only in simd_avx2.cpp, with
// -mavx2 -mfma. See simd_scalar.hpp for the interface every traits type shares.
//
// 1/sqrt: float starts from vrsqrtps (relative error <= 1.5 * 2^-12) and refines 1/r and m/r^3
// with second-order series (rsqrt_refine.hpp); AVX2 has no double-precision estimate, and going
// through float would fail outside float's exponent range, so double uses sqrt and divide.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "rsqrt_refine.hpp"

namespace orrery {
namespace simd_avx2 {

template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using Scalar = float;
  using V = __m256;
  static constexpr std::size_t lanes = 8;
  static constexpr const char* refinement =
      "vrsqrtps (12 bits); m/r^3 and 1/r by second-order series";
  // |e| <= 3 * 2^-12: the dropped 35/16 e^3 is below 2^-30 relative.
  static constexpr double cube_series[] = {1.0, 1.5, 1.875};

  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static constexpr bool has_estimate = true;
  static V zero_lane(V v, std::size_t lane) {
    const V index = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_ps(v, _mm256_cmp_ps(index, _mm256_set1_ps(float(lane)), _CMP_NEQ_OQ));
  }
  static V rsqrt_estimate(V x) { return _mm256_rsqrt_ps(x); }
  static V two_over_sqrt(V r2) { return refine_two_over_sqrt<Vec, 2>(r2, rsqrt_estimate(r2)); }
  // 8 x 8: pairs of rows exchange single elements (unpack), then pairs (shuffle), then halves
  // (permute2f128).
  static void transpose(const float* const* rows, std::size_t offset, float* out, std::size_t stride) {
    V r[8], a[8], b[8];
    for (int i = 0; i < 8; ++i) r[i] = load(rows[i] + offset);
    for (int i = 0; i < 8; i += 2) {
      a[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      a[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
      for (int j = 0; j < 2; ++j) {
        b[i + j] = _mm256_shuffle_ps(a[i + j], a[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
        b[i + j + 2] = _mm256_shuffle_ps(a[i + j], a[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
      }
    // b[0]: column 0 of rows 0-3 | column 4; b[2]: column 1 | 5; b[1]: 2 | 6; b[3]: 3 | 7;
    // b[4..7] the same for rows 4-7.
    const int column_of[4] = {0, 2, 1, 3};
    for (int i = 0; i < 4; ++i) {
      store(out + column_of[i] * stride, _mm256_permute2f128_ps(b[i], b[i + 4], 0x20));
      store(out + (column_of[i] + 4) * stride, _mm256_permute2f128_ps(b[i], b[i + 4], 0x31));
    }
  }
};

template <>
struct Vec<double> {
  using Scalar = double;
  using V = __m256d;
  static constexpr std::size_t lanes = 4;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V zero() { return _mm256_setzero_pd(); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V fnma(V a, V b, V c) { return _mm256_fnmadd_pd(a, b, c); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_pd(a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) {
    const V index = _mm256_setr_pd(0, 1, 2, 3);
    return _mm256_and_pd(v, _mm256_cmp_pd(index, _mm256_set1_pd(double(lane)), _CMP_NEQ_OQ));
  }
  static V two_over_sqrt(V r2) { return _mm256_div_pd(_mm256_set1_pd(2.0), _mm256_sqrt_pd(r2)); }
  // 4 x 4: pairs of rows exchange single elements (unpack), then halves (permute2f128).
  static void transpose(const double* const* rows, std::size_t offset, double* out, std::size_t stride) {
    const V r0 = load(rows[0] + offset), r1 = load(rows[1] + offset);
    const V r2 = load(rows[2] + offset), r3 = load(rows[3] + offset);
    const V a0 = _mm256_unpacklo_pd(r0, r1), a1 = _mm256_unpackhi_pd(r0, r1);
    const V a2 = _mm256_unpacklo_pd(r2, r3), a3 = _mm256_unpackhi_pd(r2, r3);
    store(out, _mm256_permute2f128_pd(a0, a2, 0x20));
    store(out + stride, _mm256_permute2f128_pd(a1, a3, 0x20));
    store(out + 2 * stride, _mm256_permute2f128_pd(a0, a2, 0x31));
    store(out + 3 * stride, _mm256_permute2f128_pd(a1, a3, 0x31));
  }
};

}  // namespace simd_avx2
}  // namespace orrery
