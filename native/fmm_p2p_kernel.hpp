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
// Targets whose other leaves' blocks run together, each block's bodies and reaction sums loaded
// once for them: two where a block is one register (AVX-512), one otherwise (the registers do not
// hold two targets' partial sums). At N = 262144, p 5 (avx512, f32) two took P2P from 67-72 to
// 62-64 ms a thread; three and four were slower than two.
template <class S>
constexpr std::size_t kMutualTargets = kTreeRegisters<S> == 1 ? 2 : 1;

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
  // K consecutive targets from i: each one's own leaf alone, then the other leaves' blocks for
  // all K at once. Every sum still takes its terms target by target in index order (an own
  // body's only from own targets, another leaf's only from the other leaves' blocks), so the
  // results are those of one target at a time, bit for bit.
  auto targets = [&](std::size_t i, auto k, auto first) {
    constexpr std::size_t K = decltype(k)::value;
    constexpr bool First = decltype(first)::value;
    V px[K], py[K], pz[K], mi[K];
    V ax[K][R], ay[K][R], az[K][R], u[K][R];
    for (std::size_t t = 0; t < K; ++t) {
      px[t] = S::set1(b.x[i + t]);
      py[t] = S::set1(b.y[i + t]);
      pz[t] = S::set1(b.z[i + t]);
      mi[t] = S::set1(b.m[i + t]);
      for (std::size_t r = 0; r < R; ++r) ax[t][r] = ay[t][r] = az[t][r] = u[t][r] = S::zero();
    }
    // Target t's pair with register r of a block (keep: 1 on the lanes kept, when masked) into its
    // partial sums and the block's reactions.
    auto pair = [&](std::size_t t, std::size_t r, V xj, V yj, V zj, V mj, const T* keep, V& rx, V& ry, V& rz,
                    V& ru) {
      const V dx = S::sub(xj, px[t]), dy = S::sub(yj, py[t]), dz = S::sub(zj, pz[t]);
      V r2 = S::fma(dz, dz, S::fma(dy, dy, S::fma(dx, dx, eps2v)));
      V mt = mi[t];
      if (keep) {
        const V kept = S::load(keep + r * L);
        mj = S::mul(mj, kept);
        mt = S::mul(mt, kept);
        r2 = S::add(r2, S::sub(one, kept));
      }
      const V v = S::two_over_sqrt(r2);
      const V v3 = S::mul(v, S::mul(v, v));
      const V pull = S::mul(mj, v3), react = S::mul(mt, v3);
      ax[t][r] = S::fma(pull, dx, ax[t][r]);
      ay[t][r] = S::fma(pull, dy, ay[t][r]);
      az[t][r] = S::fma(pull, dz, az[t][r]);
      rx = S::fnma(react, dx, rx);
      ry = S::fnma(react, dy, ry);
      rz = S::fnma(react, dz, rz);
      if constexpr (Potential) {
        u[t][r] = S::fma(mj, v, u[t][r]);
        ru = S::fma(mt, v, ru);
      }
    };
    // One block of W bodies from j for targets [t0, t1); Write: its sums start at zero (the
    // first target reaches every block past the own leaf: it writes their sums).
    auto block = [&](std::size_t j, std::size_t t0, std::size_t t1, const T* keep, auto write) {
      constexpr bool Write = decltype(write)::value;
      for (std::size_t r = 0; r < R; ++r) {
        const std::size_t c = j + r * L;
        const V xj = S::load(b.x + c), yj = S::load(b.y + c), zj = S::load(b.z + c), mj = S::load(b.m + c);
        const V zero = S::zero();
        V rx = Write ? zero : S::load(sum_x + c), ry = Write ? zero : S::load(sum_y + c);
        V rz = Write ? zero : S::load(sum_z + c), ru = zero;
        if constexpr (Potential) ru = Write ? zero : S::load(sum_u + c);
        for (std::size_t t = t0; t < t1; ++t) pair(t, r, xj, yj, zj, mj, keep, rx, ry, rz, ru);
        S::store(sum_x + c, rx);
        S::store(sum_y + c, ry);
        S::store(sum_z + c, rz);
        if constexpr (Potential) S::store(sum_u + c, ru);
      }
    };
    // Each target's own leaf: the block holding its successor with the lanes up to it masked,
    // then whole blocks.
    for (std::size_t t = 0; t < K; ++t) {
      const std::size_t next = i + t + 1, start = next / W * W;
      if (next >= b.targets) continue;
      block(start, t, t + 1, MutualRamp<T>::values + W - (next - start), std::false_type());
      for (std::size_t j = start + W; j < b.own; j += W) block(j, t, t + 1, nullptr, std::false_type());
    }
    // The other leaves' bodies, whole blocks, all K targets.
    for (std::size_t j = b.own; j < b.count; j += W)
      block(j, 0, K, nullptr, std::integral_constant<bool, First>());
    for (std::size_t t = 0; t < K; ++t) {
      sum_x[i + t] += fold_partial_sums<S>(ax[t]);
      sum_y[i + t] += fold_partial_sums<S>(ay[t]);
      sum_z[i + t] += fold_partial_sums<S>(az[t]);
      if constexpr (Potential) sum_u[i + t] += fold_partial_sums<S>(u[t]);
    }
  };
  constexpr std::size_t K = kMutualTargets<S>;
  using Many = std::integral_constant<std::size_t, K>;
  using One = std::integral_constant<std::size_t, 1>;
  std::size_t i = 0;
  if (b.targets >= K) {
    targets(0, Many(), std::true_type());
    for (i = K; i + K <= b.targets; i += K) targets(i, Many(), std::false_type());
  } else {
    targets(0, One(), std::true_type());
    i = 1;
  }
  for (; i < b.targets; ++i) targets(i, One(), std::false_type());
}

template <class S>
void fmm_p2p_dispatch(const MutualBodies<typename S::Scalar>& b, typename S::Scalar eps2) {
  if (b.sum_u)
    fmm_p2p_mutual<S, true>(b, eps2);
  else
    fmm_p2p_mutual<S, false>(b, eps2);
}

}  // namespace orrery
