// SVE traits for AArch64 at one vector length, fixed when compiling: each simd_sve*.cpp file is
// compiled with -msve-vector-bits=128, 256 or 512 (__ARM_FEATURE_SVE_BITS), which makes
// svfloat32_t of that many bits an ordinary type with a lane count known at compile time, as
// the kernel templates need (arrays of registers, `lanes`). simd.cpp gives an SVE CPU the table
// of its own vector length (ADR 0242); the code would be wrong on another length. See
// simd_scalar.hpp for the interface every traits type shares.
//
// Everything here is in an unnamed namespace: each width's file gets traits types of its own, so
// the kernels instantiated for one width are never merged by the linker with another width's.
//
// 1/sqrt is exact (sqrt and divide, correctly rounded), as NEON's (ADR 0240): SVE's estimate
// (frsqrte) has NEON's 8 bits.
#pragma once

#include <arm_sve.h>

#include <cstddef>
#include <cstdint>

#if !defined(__ARM_FEATURE_SVE_BITS) || __ARM_FEATURE_SVE_BITS == 0
#error "simd_sve.hpp needs a fixed vector length: compile with -msve-vector-bits=128, 256 or 512"
#endif

namespace orrery {
namespace {
namespace simd_sve {

constexpr std::size_t kBits = __ARM_FEATURE_SVE_BITS;
using F32 = svfloat32_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
using F64 = svfloat64_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
using U32 = svuint32_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
using Predicate = svbool_t __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));

template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using Scalar = float;
  using V = F32;
  static constexpr std::size_t lanes = kBits / 32;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static Predicate all() { return svptrue_b32(); }
  static V load(const float* p) { return svld1_f32(all(), p); }
  static void store(float* p, V v) { svst1_f32(all(), p, v); }
  static V set1(float x) { return svdup_n_f32(x); }
  static V zero() { return svdup_n_f32(0.0f); }
  static V add(V a, V b) { return svadd_f32_x(all(), a, b); }
  static V sub(V a, V b) { return svsub_f32_x(all(), a, b); }
  static V mul(V a, V b) { return svmul_f32_x(all(), a, b); }
  static V fma(V a, V b, V c) { return svmla_f32_x(all(), c, a, b); }
  static V fnma(V a, V b, V c) { return svmls_f32_x(all(), c, a, b); }
  static V div(V a, V b) { return svdiv_f32_x(all(), a, b); }
  static V sqrt(V a) { return svsqrt_f32_x(all(), a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) {
    return svsel_f32(svcmpeq_n_u32(all(), svindex_u32(0, 1), std::uint32_t(lane)), zero(), v);
  }
  static V two_over_sqrt(V r2) { return div(set1(2.0f), sqrt(r2)); }
  // Row i loaded whole and scattered down column i (element k to out[k * stride + i]): written
  // out, as GCC 12 vectorised the element-by-element loop at 512 bits into gathers whose offsets
  // the assembler refuses. Not measured on SVE hardware, where a permute network like AVX-512's
  // may pay.
  static void transpose(const float* const* rows, std::size_t offset, float* out, std::size_t stride) {
    const svuint32_t column = svindex_u32(0, std::uint32_t(stride));
    for (std::size_t i = 0; i < lanes; ++i)
      svst1_scatter_u32index_f32(all(), out + i, column, load(rows[i] + offset));
  }
};

template <>
struct Vec<double> {
  using Scalar = double;
  using V = F64;
  static constexpr std::size_t lanes = kBits / 64;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static Predicate all() { return svptrue_b64(); }
  static V load(const double* p) { return svld1_f64(all(), p); }
  static void store(double* p, V v) { svst1_f64(all(), p, v); }
  static V set1(double x) { return svdup_n_f64(x); }
  static V zero() { return svdup_n_f64(0.0); }
  static V add(V a, V b) { return svadd_f64_x(all(), a, b); }
  static V sub(V a, V b) { return svsub_f64_x(all(), a, b); }
  static V mul(V a, V b) { return svmul_f64_x(all(), a, b); }
  static V fma(V a, V b, V c) { return svmla_f64_x(all(), c, a, b); }
  static V fnma(V a, V b, V c) { return svmls_f64_x(all(), c, a, b); }
  static V div(V a, V b) { return svdiv_f64_x(all(), a, b); }
  static V sqrt(V a) { return svsqrt_f64_x(all(), a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) {
    return svsel_f64(svcmpeq_n_u64(all(), svindex_u64(0, 1), std::uint64_t(lane)), zero(), v);
  }
  static V two_over_sqrt(V r2) { return div(set1(2.0), sqrt(r2)); }
  static void transpose(const double* const* rows, std::size_t offset, double* out, std::size_t stride) {
    const svuint64_t column = svindex_u64(0, stride);
    for (std::size_t i = 0; i < lanes; ++i)
      svst1_scatter_u64index_f64(all(), out + i, column, load(rows[i] + offset));
  }
};

// The boids kernel's lanes (flock_lanes.hpp has the other levels'): exact operations only, so the
// same bits as every level; the rows and values are gathered (SVE has a gather, NEON has not).
struct FlockLanes {
  using V = F32;
  using M = Predicate;
  static constexpr std::size_t lanes = kBits / 32;
  static Predicate all() { return svptrue_b32(); }
  static V load(const float* p) { return svld1_f32(all(), p); }
  static V set1(float x) { return svdup_n_f32(x); }
  static V zero() { return svdup_n_f32(0.0f); }
  static V add(V a, V b) { return svadd_f32_x(all(), a, b); }
  static V sub(V a, V b) { return svsub_f32_x(all(), a, b); }
  static V mul(V a, V b) { return svmul_f32_x(all(), a, b); }
  static M less(V a, V b) { return svcmplt_f32(all(), a, b); }
  static M both(M a, M b) { return svand_b_z(all(), a, b); }
  static V select(M m, V yes, V no) { return svsel_f32(m, yes, no); }
  static V keep(M m, V v) { return svsel_f32(m, v, zero()); }
  static M first(std::size_t count) { return svwhilelt_b32_u64(0, count); }
  static long count(M m) { return long(svcntp_b32(all(), m)); }
  using I = U32;  // offsets of (n, 3) rows: 3 * boid index
  static I load_rows(const std::uint32_t* p, M live) { return svmul_n_u32_z(live, svld1_u32(live, p), 3); }
  static V gather(const float* base, I rows, M live) { return svld1_gather_u32index_f32(live, base, rows); }
  // The even lanes and the odd ones (moved down by trn2), each widened where it stands.
  struct W {
    F64 even, odd;
  };
  static W wide_zero() { return W{svdup_n_f64(0.0), svdup_n_f64(0.0)}; }
  static W widen_add(W sum, V v) {
    const svbool_t doubles = svptrue_b64();
    return W{svadd_f64_x(doubles, sum.even, svcvt_f64_f32_x(doubles, v)),
             svadd_f64_x(doubles, sum.odd, svcvt_f64_f32_x(doubles, svtrn2_f32(v, v)))};
  }
  static double total(W sum) {
    const svbool_t doubles = svptrue_b64();
    return svaddv_f64(doubles, svadd_f64_x(doubles, sum.even, sum.odd));
  }
};

// float32 -> half with fcvt, a predicate covering the tail: fcvt rounds as the FPCR says (to
// nearest, ties to even, which nothing here changes) and keeps NaNs quiet with their top payload
// bits, as the scalar definition (half_kernel.hpp) does.
inline void narrow_to_half(const float* source, std::uint16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; i += Vec<float>::lanes) {
    const svbool_t live = svwhilelt_b32_u64(i, count);
    const svfloat16_t half = svcvt_f16_f32_x(live, svld1_f32(live, source + i));
    // Each half sits in the low 16 bits of its 32-bit lane; st1h stores those bits.
    svst1h_u32(live, out + i, svreinterpret_u32_f16(half));
  }
}

}  // namespace simd_sve
}  // namespace
}  // namespace orrery
