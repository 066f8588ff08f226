// cpu-fmm's mutual P2P kernel, written once over a SIMD traits type S (simd_*.hpp) and compiled
// in each simd_*.cpp file like the tree kernels (tree_kernels.hpp, whose fold it shares).
// Target i is broadcast against the bodies after it in its own leaf, then against the other
// leaves' bodies, in lanes (MutualBodies): one 2/r per pair serves i's sum
// (kLanes<T> partial sums, folded in one fixed order) and body j's, added in place. So the
// leaf's own pairs count once, and both halves of a pair cost one distance, one estimate and its
// refinement. Targets run in index order, so every sum takes its terms in one fixed order.
#pragma once

#include <cstddef>
#include <type_traits>

#include "fmm_p2p.hpp"
#include "tree_kernels.hpp"

namespace orrery {

// 0 then 1, kLanes<T> of each: loaded at an offset, the lanes before a target's successors.
template <typename T>
struct MutualRamp {
  alignas(64) static constexpr T values[2 * kLanes<T>] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
};
template <>
struct MutualRamp<double> {
  alignas(64) static constexpr double values[2 * kLanes<double>] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
};

// With v = 2/r and d = x_j - x_i: 8 a_i += m_j v^3 d, 8 a_j -= m_i v^3 d, -2 u += m v.
// Padding (zero mass at the body before it, MutualBodies) adds exact zeros to the targets;
// the reactions it takes are never read. In a target's first block of its own leaf the lanes up
// to i itself get zero masses and 1 added to r^2 (so no 0 * inf at i itself without
// softening): exact zeros too. Every 2/r is of a real distance, so no subnormal arises (each
// costs a microcode assist: padding at the largest coordinate made the kernel 3x slower).
template <class S, bool Potential>
void fmm_p2p_mutual(const MutualBodies<typename S::Scalar>& b, typename S::Scalar eps2) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t L = S::lanes, R = kTreeRegisters<S>, W = kLanes<T>;
  const V eps2v = S::set1(eps2), one = S::set1(T(1));
  T* const sum_x = b.sum_x;
  T* const sum_y = b.sum_y;
  T* const sum_z = b.sum_z;
  T* const sum_u = b.sum_u;
  auto target = [&](std::size_t i, auto first) {
    constexpr bool First = decltype(first)::value;
    const V px = S::set1(b.x[i]), py = S::set1(b.y[i]), pz = S::set1(b.z[i]), mi = S::set1(b.m[i]);
    V ax[R], ay[R], az[R], u[R];
    for (std::size_t r = 0; r < R; ++r) ax[r] = ay[r] = az[r] = u[r] = S::zero();
    // One block of W bodies from j; `keep` (when masked): 1 on the lanes kept.
    auto block = [&](std::size_t j, auto masked, const T* keep, auto write) {
      constexpr bool Write = decltype(write)::value;
      for (std::size_t r = 0; r < R; ++r) {
        const std::size_t c = j + r * L;
        const V dx = S::sub(S::load(b.x + c), px), dy = S::sub(S::load(b.y + c), py);
        const V dz = S::sub(S::load(b.z + c), pz);
        V r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, eps2v)));
        V mj = S::load(b.m + c), mt = mi;
        if constexpr (decltype(masked)::value) {
          const V k = S::load(keep + r * L);
          mj = S::mul(mj, k);
          mt = S::mul(mt, k);
          r2 = S::add(r2, S::sub(one, k));
        }
        const V v = S::two_over_sqrt(r2);
        const V v3 = S::mul(v, S::mul(v, v));
        const V pull = S::mul(mj, v3), react = S::mul(mt, v3);
        ax[r] = S::fma(pull, dx, ax[r]);
        ay[r] = S::fma(pull, dy, ay[r]);
        az[r] = S::fma(pull, dz, az[r]);
        // The first target reaches every block past the own leaf: it writes their sums.
        const V zero = S::zero();
        S::store(sum_x + c, S::fnma(react, dx, Write ? zero : S::load(sum_x + c)));
        S::store(sum_y + c, S::fnma(react, dy, Write ? zero : S::load(sum_y + c)));
        S::store(sum_z + c, S::fnma(react, dz, Write ? zero : S::load(sum_z + c)));
        if constexpr (Potential) {
          u[r] = S::fma(mj, v, u[r]);
          S::store(sum_u + c, S::fma(mt, v, Write ? zero : S::load(sum_u + c)));
        }
      }
    };
    // Its own leaf: the block holding i + 1 with the lanes up to i masked, then whole blocks;
    // then the other leaves' bodies, whole blocks.
    const std::size_t next = i + 1, start = next / W * W;
    if (next < b.targets) {
      block(start, std::true_type(), MutualRamp<T>::values + W - (next - start), std::false_type());
      for (std::size_t j = start + W; j < b.own; j += W) block(j, std::false_type(), nullptr, std::false_type());
    }
    for (std::size_t j = b.own; j < b.count; j += W)
      block(j, std::false_type(), nullptr, std::integral_constant<bool, First>());
    sum_x[i] += fold_partial_sums<S>(ax);
    sum_y[i] += fold_partial_sums<S>(ay);
    sum_z[i] += fold_partial_sums<S>(az);
    if constexpr (Potential) sum_u[i] += fold_partial_sums<S>(u);
  };
  target(0, std::true_type());
  for (std::size_t i = 1; i < b.targets; ++i) target(i, std::false_type());
}

template <class S>
void fmm_p2p_dispatch(const MutualBodies<typename S::Scalar>& b, typename S::Scalar eps2) {
  if (b.sum_u)
    fmm_p2p_mutual<S, true>(b, eps2);
  else
    fmm_p2p_mutual<S, false>(b, eps2);
}

}  // namespace orrery
