// Tree interaction kernels, written once over a SIMD traits type S (simd_*.hpp) and compiled in
// each simd_*.cpp file like the direct kernel; the walk (tree_walk.cpp) reaches them through the
// SimdKernels table of the level simd.cpp chose.
//
// One target at a time against the whole list: kLanes<T> / S::lanes registers hold the target's
// kLanes<T> partial sums (tree_lists.hpp), so every level keeps the same partial sums, folded in
// the same order; a target's result depends neither on its group's neighbours nor on the thread.
// Levels differ only in how each interaction rounds (FMA or not, and S::two_over_sqrt: exact on
// scalar and AVX2 double, a refined hardware estimate elsewhere, see rsqrt_refine.hpp).
//
// Padding sources sit at the largest finite coordinate, so their r^2 overflows to infinity.
// An exact 2/sqrt gives 0 there; a refined estimate would compute inf * 0, so levels with an
// estimate (S::has_estimate) clamp r^2 to the largest finite value first. Either way the
// padding's zero mass and moments then add exact zeros.
#pragma once

#include <cstddef>
#include <limits>

#include "tree_lists.hpp"

namespace orrery {

// Registers of partial sums per target.
template <class S>
constexpr std::size_t kTreeRegisters = kLanes<typename S::Scalar> / S::lanes;

// Folds the partial sums pairwise (lane k with lane k + half), always in this order.
template <class S>
typename S::Scalar fold_partial_sums(const typename S::V (&sums)[kTreeRegisters<S>]) {
  using T = typename S::Scalar;
  constexpr std::size_t W = kLanes<T>;
  alignas(64) T lanes[W];
  for (std::size_t r = 0; r < kTreeRegisters<S>; ++r) S::store(lanes + r * S::lanes, sums[r]);
  for (std::size_t half = W / 2; half > 0; half /= 2)
    for (std::size_t k = 0; k < half; ++k) lanes[k] += lanes[k + half];
  return lanes[0];
}

// v = 2/r with r^2 = |d|^2 + eps^2 (the callers undo two_over_sqrt's factor 2).
template <class S>
typename S::V tree_two_over_r(typename S::V dx, typename S::V dy, typename S::V dz, typename S::V eps2) {
  using T = typename S::Scalar;
  typename S::V r2 = S::fma(dx, dx, eps2);
  r2 = S::fma(dy, dy, r2);
  r2 = S::fma(dz, dz, r2);
  if constexpr (S::has_estimate) r2 = S::min(r2, S::set1(std::numeric_limits<T>::max()));
  return S::two_over_sqrt(r2);
}

// With v = 2/r: m v^3 = 8 m/r^3 and m v = 2 m/r, so the sums are scaled by 1/8 and -1/2 once at
// the end (exact), which saves a multiply per interaction.
template <class S, bool Potential>
void tree_monopole(const MonopoleSources<typename S::Scalar>& s, const GroupTargets<typename S::Scalar>& t,
                   typename S::Scalar eps2) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t L = S::lanes, R = kTreeRegisters<S>, W = kLanes<T>;
  const V eps2v = S::set1(eps2);
  for (std::size_t i = 0; i < t.count; ++i) {
    const V px = S::set1(t.x[i]), py = S::set1(t.y[i]), pz = S::set1(t.z[i]);
    V ax[R], ay[R], az[R], u[R];
    for (std::size_t r = 0; r < R; ++r) ax[r] = ay[r] = az[r] = u[r] = S::zero();
    for (std::size_t j = 0; j < s.count; j += W) {
      for (std::size_t r = 0; r < R; ++r) {
        const std::size_t c = j + r * L;
        const V dx = S::sub(S::load(s.x + c), px), dy = S::sub(S::load(s.y + c), py);
        const V dz = S::sub(S::load(s.z + c), pz);
        const V v = tree_two_over_r<S>(dx, dy, dz, eps2v);
        const V mv = S::mul(S::load(s.m + c), v);
        const V w = S::mul(mv, S::mul(v, v));
        ax[r] = S::fma(w, dx, ax[r]);
        ay[r] = S::fma(w, dy, ay[r]);
        az[r] = S::fma(w, dz, az[r]);
        if constexpr (Potential) u[r] = S::add(u[r], mv);
      }
    }
    t.ax[i] = T(0.125) * fold_partial_sums<S>(ax);
    t.ay[i] = T(0.125) * fold_partial_sums<S>(ay);
    t.az[i] = T(0.125) * fold_partial_sums<S>(az);
    if constexpr (Potential) t.u[i] = T(-0.5) * fold_partial_sums<S>(u);
  }
}

// With v = 2/r and g = v^5 / 4 = 8/r^5: 8 a = v^2 (m v + (5/8) dQd g) d - g Q d and
// 2 u = -(m v + (1/8) dQd g); the sums are scaled by 1/8 and -1/2 once at the end (exact), which
// keeps the operation count of the textbook form in 1/r.
template <class S, bool Potential>
void tree_quadrupole(const QuadrupoleSources<typename S::Scalar>& s, const GroupTargets<typename S::Scalar>& t,
                     typename S::Scalar eps2) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t L = S::lanes, R = kTreeRegisters<S>, W = kLanes<T>;
  const V eps2v = S::set1(eps2), quarter = S::set1(T(0.25)), five_eighths = S::set1(T(0.625));
  const V eighth = S::set1(T(0.125));
  for (std::size_t i = 0; i < t.count; ++i) {
    const V px = S::set1(t.x[i]), py = S::set1(t.y[i]), pz = S::set1(t.z[i]);
    V ax[R], ay[R], az[R], u[R];
    for (std::size_t r = 0; r < R; ++r) ax[r] = ay[r] = az[r] = u[r] = S::zero();
    for (std::size_t j = 0; j < s.count; j += W) {
      for (std::size_t r = 0; r < R; ++r) {
        const std::size_t c = j + r * L;
        const V dx = S::sub(S::load(s.x + c), px), dy = S::sub(S::load(s.y + c), py);
        const V dz = S::sub(S::load(s.z + c), pz);
        const V v = tree_two_over_r<S>(dx, dy, dz, eps2v);
        const V v2 = S::mul(v, v);
        const V mv = S::mul(S::load(s.m + c), v);
        const V g = S::mul(S::mul(v2, v2), S::mul(v, quarter));
        const V qxx = S::load(s.qxx + c), qxy = S::load(s.qxy + c), qxz = S::load(s.qxz + c);
        const V qyy = S::load(s.qyy + c), qyz = S::load(s.qyz + c), qzz = S::load(s.qzz + c);
        const V qx = S::fma(qxx, dx, S::fma(qxy, dy, S::mul(qxz, dz)));
        const V qy = S::fma(qxy, dx, S::fma(qyy, dy, S::mul(qyz, dz)));
        const V qz = S::fma(qxz, dx, S::fma(qyz, dy, S::mul(qzz, dz)));
        const V dqd = S::fma(dx, qx, S::fma(dy, qy, S::mul(dz, qz)));
        const V radial = S::mul(v2, S::fma(S::mul(five_eighths, dqd), g, mv));
        ax[r] = S::fnma(g, qx, S::fma(radial, dx, ax[r]));
        ay[r] = S::fnma(g, qy, S::fma(radial, dy, ay[r]));
        az[r] = S::fnma(g, qz, S::fma(radial, dz, az[r]));
        if constexpr (Potential) u[r] = S::add(u[r], S::fma(S::mul(eighth, dqd), g, mv));
      }
    }
    t.ax[i] = T(0.125) * fold_partial_sums<S>(ax);
    t.ay[i] = T(0.125) * fold_partial_sums<S>(ay);
    t.az[i] = T(0.125) * fold_partial_sums<S>(az);
    if constexpr (Potential) t.u[i] = T(-0.5) * fold_partial_sums<S>(u);
  }
}

template <class S>
void tree_monopole_dispatch(const MonopoleSources<typename S::Scalar>& s, const GroupTargets<typename S::Scalar>& t,
                            typename S::Scalar eps2) {
  if (t.u)
    tree_monopole<S, true>(s, t, eps2);
  else
    tree_monopole<S, false>(s, t, eps2);
}

template <class S>
void tree_quadrupole_dispatch(const QuadrupoleSources<typename S::Scalar>& s,
                              const GroupTargets<typename S::Scalar>& t, typename S::Scalar eps2) {
  if (t.u)
    tree_quadrupole<S, true>(s, t, eps2);
  else
    tree_quadrupole<S, false>(s, t, eps2);
}

}  // namespace orrery
