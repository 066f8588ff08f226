// Scalar "vectors" of one lane: the fallback every CPU runs, and the shape the SIMD traits share
// (simd_avx2.hpp, simd_avx512.hpp). Compiled with the baseline flags only.
//
// Every traits type provides: V (the register), lanes, load/store/set1, add/sub/mul,
// fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b, div, sqrt, zero_lane(v, lane) (v with that
// lane set to 0), has_estimate (whether rsqrt_estimate(v) and min(a, b) exist: a fast approximate
// 1/sqrt, and the clamp the tree kernels apply before refining it; a level that has it also gives
// cube_series, the coefficients rsqrt_refine.hpp refines m/r^3 with), and two_over_sqrt(r2) =
// 2/sqrt(r2) to the full precision of the type (the factor 2 is folded into the kernel's mass
// constants, see direct_kernel.hpp), and for double transpose(rows, offset, out, stride): the
// lanes x lanes block rows[i][offset + k] written as out[k * stride + i] (the FMM's M2L moves
// its sources' moments into lanes with it).
#pragma once

#include <cmath>
#include <cstddef>

namespace orrery {
namespace simd_scalar {

template <typename T>
struct Vec {
  using Scalar = T;
  using V = T;
  static constexpr std::size_t lanes = 1;
  static constexpr const char* refinement = "exact: 2 / sqrt(r2)";

  static V load(const T* p) { return *p; }
  static void store(T* p, V v) { *p = v; }
  static V set1(T x) { return x; }
  static V zero() { return T(0); }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  // No hardware FMA in the baseline instruction set: two roundings, deterministically.
  static V fma(V a, V b, V c) { return a * b + c; }
  static V fnma(V a, V b, V c) { return c - a * b; }
  static V div(V a, V b) { return a / b; }
  static V sqrt(V a) { return std::sqrt(a); }
  static constexpr bool has_estimate = false;
  static V zero_lane(V v, std::size_t lane) { return lane == 0 ? T(0) : v; }
  static void transpose(const T* const* rows, std::size_t offset, T* out, std::size_t) { out[0] = rows[0][offset]; }
  static V two_over_sqrt(V r2) { return T(2) / std::sqrt(r2); }
};

}  // namespace simd_scalar
}  // namespace orrery
