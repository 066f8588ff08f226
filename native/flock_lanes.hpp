// The few lane operations the boids kernel (flock_kernel.hpp) needs, per instruction set:
// float lanes V, a lane mask M, float64 accumulators W, and exact arithmetic only (add, sub, mul, compare, select), so
// every level computes the same bits as the scalar one. Each simd_*.cpp file compiles the
// variants its flags allow (NEON's on every AArch64 build); the namespaces keep the variants apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bits.hpp"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
#include "avx512_lanes.hpp"
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#include <arm_neon.h>
#endif

namespace orrery {

namespace simd_scalar {
struct FlockLanes {
  using V = float;
  using M = bool;
  static constexpr std::size_t lanes = 1;
  static V load(const float* p) { return *p; }
  static V set1(float x) { return x; }
  static V zero() { return 0.0f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static M less(V a, V b) { return a < b; }
  static M both(M a, M b) { return a && b; }
  static V select(M m, V yes, V no) { return m ? yes : no; }
  static V keep(M m, V v) { return m ? v : 0.0f; }
  static M first(std::size_t count) { return count > 0; }
  static long count(M m) { return m ? 1 : 0; }
  using I = std::uint32_t;  // offsets of (n, 3) rows: 3 * boid index
  static I load_rows(const std::uint32_t* p, M live) { return live ? 3 * *p : 0; }
  static V gather(const float* base, I rows, M live) { return live ? base[rows] : 0.0f; }
  using W = double;  // float64 accumulators for one V
  static W wide_zero() { return 0.0; }
  static W widen_add(W sum, V v) { return sum + double(v); }
  static double total(W sum) { return sum; }
};
}  // namespace simd_scalar

#if defined(__AVX2__)
namespace simd_avx2 {
struct FlockLanes {
  using V = __m256;
  using M = __m256;
  static constexpr std::size_t lanes = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static M less(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M both(M a, M b) { return _mm256_and_ps(a, b); }
  static V select(M m, V yes, V no) { return _mm256_blendv_ps(no, yes, m); }
  static V keep(M m, V v) { return _mm256_and_ps(m, v); }
  static M first(std::size_t count) {
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int limit = count < lanes ? int(count) : int(lanes);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(limit), index));
  }
  static long count(M m) { return count_set_bits(unsigned(_mm256_movemask_ps(m))); }
  using I = __m256i;
  static I load_rows(const std::uint32_t* p, M live) {
    const __m256i index = _mm256_maskload_epi32(reinterpret_cast<const int*>(p), _mm256_castps_si256(live));
    return _mm256_add_epi32(index, _mm256_add_epi32(index, index));
  }
  static V gather(const float* base, I rows, M live) {
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, rows, live, 4);
  }
  struct W {
    __m256d low, high;
  };
  static W wide_zero() { return W{_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static W widen_add(W sum, V v) {
    return W{_mm256_add_pd(sum.low, _mm256_cvtps_pd(_mm256_castps256_ps128(v))),
             _mm256_add_pd(sum.high, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)))};
  }
  static double total(W sum) {
    alignas(32) double lane[4];
    _mm256_store_pd(lane, _mm256_add_pd(sum.low, sum.high));
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
  }
};
}  // namespace simd_avx2
#endif

#if defined(__AVX512F__)
namespace simd_avx512 {
struct FlockLanes {
  using V = __m512;
  using M = __mmask16;
  static constexpr std::size_t lanes = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static M less(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M both(M a, M b) { return M(a & b); }
  static V select(M m, V yes, V no) { return _mm512_mask_blend_ps(m, no, yes); }
  static V keep(M m, V v) { return _mm512_maskz_mov_ps(m, v); }
  static M first(std::size_t count) {
    return count >= lanes ? M(0xffff) : M((1u << count) - 1u);
  }
  static long count(M m) { return count_set_bits(m); }
  using I = __m512i;
  static I load_rows(const std::uint32_t* p, M live) {
    const __m512i index = _mm512_maskz_loadu_epi32(live, p);
    return _mm512_add_epi32(index, _mm512_add_epi32(index, index));
  }
  static V gather(const float* base, I rows, M live) {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, rows, base, 4);
  }
  struct W {
    __m512d low, high;
  };
  static W wide_zero() { return W{_mm512_setzero_pd(), _mm512_setzero_pd()}; }
  static W widen_add(W sum, V v) {
    // Through avx512_lanes.hpp, as GCC 12 needs.
    return W{_mm512_add_pd(sum.low, _mm512_maskz_cvtps_pd(kAllDoubles, low_half(v))),
             _mm512_add_pd(sum.high, _mm512_maskz_cvtps_pd(kAllDoubles, high_half(v)))};
  }
  static double total(W sum) { return sum_of_lanes(_mm512_add_pd(sum.low, sum.high)); }
};
}  // namespace simd_avx512
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
namespace simd_neon {
struct FlockLanes {
  using V = float32x4_t;
  using M = uint32x4_t;
  static constexpr std::size_t lanes = 4;
  static V load(const float* p) { return vld1q_f32(p); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static M less(V a, V b) { return vcltq_f32(a, b); }
  static M both(M a, M b) { return vandq_u32(a, b); }
  static V select(M m, V yes, V no) { return vbslq_f32(m, yes, no); }
  static V keep(M m, V v) { return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(v))); }
  static M first(std::size_t count) {
    static const std::uint32_t index[4] = {0, 1, 2, 3};
    const std::uint32_t limit = count < lanes ? std::uint32_t(count) : std::uint32_t(lanes);
    return vcltq_u32(vld1q_u32(index), vdupq_n_u32(limit));
  }
  static long count(M m) { return long(vaddvq_u32(vshrq_n_u32(m, 31))); }
  // NEON has no gather: the rows and values are read lane by lane, dead lanes not at all.
  using I = uint32x4_t;
  static I load_rows(const std::uint32_t* p, M live) {
    std::uint32_t alive[4], rows[4];
    vst1q_u32(alive, live);
    for (std::size_t k = 0; k < lanes; ++k) rows[k] = alive[k] ? 3 * p[k] : 0;
    return vld1q_u32(rows);
  }
  static V gather(const float* base, I rows, M live) {
    std::uint32_t alive[4], row[4];
    float value[4];
    vst1q_u32(alive, live);
    vst1q_u32(row, rows);
    for (std::size_t k = 0; k < lanes; ++k) value[k] = alive[k] ? base[row[k]] : 0.0f;
    return vld1q_f32(value);
  }
  struct W {
    float64x2_t low, high;
  };
  static W wide_zero() { return W{vdupq_n_f64(0.0), vdupq_n_f64(0.0)}; }
  static W widen_add(W sum, V v) {
    return W{vaddq_f64(sum.low, vcvt_f64_f32(vget_low_f32(v))), vaddq_f64(sum.high, vcvt_high_f64_f32(v))};
  }
  static double total(W sum) {
    const float64x2_t lane = vaddq_f64(sum.low, sum.high);
    return vgetq_lane_f64(lane, 0) + vgetq_lane_f64(lane, 1);
  }
};
}  // namespace simd_neon
#endif

}  // namespace orrery
