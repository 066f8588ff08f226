// The few lane operations the boids kernel (flock_kernel.hpp) needs, per instruction set:
// float lanes V, a lane mask M, float64 accumulators W, and exact arithmetic only (add, sub, mul, compare, select), so
// every level computes the same bits as the scalar one. Each simd_*.cpp file compiles the
// variants its flags allow; the namespaces keep the variants apart.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
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
  static long count(M m) { return __builtin_popcount(unsigned(_mm256_movemask_ps(m))); }
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
  static long count(M m) { return __builtin_popcount(unsigned(m)); }
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
    return W{_mm512_add_pd(sum.low, _mm512_cvtps_pd(_mm512_castps512_ps256(v))),
             _mm512_add_pd(sum.high, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))))};
  }
  static double total(W sum) { return _mm512_reduce_add_pd(_mm512_add_pd(sum.low, sum.high)); }
};
}  // namespace simd_avx512
#endif

}  // namespace orrery
