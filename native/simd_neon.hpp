// NEON (Advanced SIMD) traits for AArch64 (128-bit: 4 floats or 2 doubles). NEON is part of every
// AArch64 CPU, so simd_neon.cpp needs no flags beyond the project's. See simd_scalar.hpp for the
// interface every traits type shares.
//
// 1/sqrt is exact (sqrt and divide, correctly rounded): NEON's estimate (vrsqrte, about 8 bits)
// would need more refinement than the series of rsqrt_refine.hpp give, and no AArch64 machine was
// at hand to measure whether that pays (ADR 0240).
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace orrery {
namespace simd_neon {

template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using Scalar = float;
  using V = float32x4_t;
  static constexpr std::size_t lanes = 4;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fnma(V a, V b, V c) { return vfmsq_f32(c, a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V sqrt(V a) { return vsqrtq_f32(a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) {
    static const std::uint32_t index[4] = {0, 1, 2, 3};
    const uint32x4_t keep = vmvnq_u32(vceqq_u32(vld1q_u32(index), vdupq_n_u32(std::uint32_t(lane))));
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), keep));
  }
  static V two_over_sqrt(V r2) { return vdivq_f32(vdupq_n_f32(2.0f), vsqrtq_f32(r2)); }
  // 4 x 4: pairs of rows exchange single elements (trn on 32 bits), then pairs (trn on 64 bits).
  static void transpose(const float* const* rows, std::size_t offset, float* out, std::size_t stride) {
    const V r0 = load(rows[0] + offset), r1 = load(rows[1] + offset);
    const V r2 = load(rows[2] + offset), r3 = load(rows[3] + offset);
    const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1));
    const float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
    const float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    store(out, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    store(out + stride, vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    store(out + 2 * stride, vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    store(out + 3 * stride, vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
  }
};

template <>
struct Vec<double> {
  using Scalar = double;
  using V = float64x2_t;
  static constexpr std::size_t lanes = 2;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static V load(const double* p) { return vld1q_f64(p); }
  static void store(double* p, V v) { vst1q_f64(p, v); }
  static V set1(double x) { return vdupq_n_f64(x); }
  static V zero() { return vdupq_n_f64(0.0); }
  static V add(V a, V b) { return vaddq_f64(a, b); }
  static V sub(V a, V b) { return vsubq_f64(a, b); }
  static V mul(V a, V b) { return vmulq_f64(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f64(c, a, b); }
  static V fnma(V a, V b, V c) { return vfmsq_f64(c, a, b); }
  static V div(V a, V b) { return vdivq_f64(a, b); }
  static V sqrt(V a) { return vsqrtq_f64(a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) {
    static const std::uint64_t index[2] = {0, 1};
    const uint64x2_t drop = vceqq_u64(vld1q_u64(index), vdupq_n_u64(std::uint64_t(lane)));
    return vreinterpretq_f64_u64(vbicq_u64(vreinterpretq_u64_f64(v), drop));
  }
  static V two_over_sqrt(V r2) { return vdivq_f64(vdupq_n_f64(2.0), vsqrtq_f64(r2)); }
  static void transpose(const double* const* rows, std::size_t offset, double* out, std::size_t stride) {
    const V r0 = load(rows[0] + offset), r1 = load(rows[1] + offset);
    store(out, vtrn1q_f64(r0, r1));
    store(out + stride, vtrn2q_f64(r0, r1));
  }
};

}  // namespace simd_neon
}  // namespace orrery
