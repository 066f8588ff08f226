// Direct-summation kernel, written once over a SIMD traits type S (simd_*.hpp).
//
// Targets are vectorised: K registers of S::lanes targets form one block, and every source j
// is broadcast to all of them, so each target's sum runs over j = 0 .. n-1 in index order,
// lane by lane. A target's result therefore depends neither on the block it sits in nor on the
// thread that computes it: any thread count gives the same bits. The target itself (j == i) is
// removed by zeroing its lane, so zero softening and coincident points never reach a sum.
//
// Per interaction: r2 = dx^2 + dy^2 + dz^2 + eps^2, v = 2/sqrt(r2) (S::two_over_sqrt),
// w = (m/8) v^3 = m/r^3, a += w * d, and for the potential sum (m/8) v = m/(4r), scaled by -4
// at the end. The factors of two are exact, so this rounds like the textbook form.
#pragma once

#include <cstddef>
#include <type_traits>

#include "isa_kernels.hpp"

namespace orrery {

template <class S, std::size_t K, bool Potential>
void direct_blocks(const DirectInput<typename S::Scalar>& in, std::size_t first_block,
                   std::size_t end_block, const DirectOutput<typename S::Scalar>& out) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t B = K * L;
  const V eps2 = S::set1(in.eps2);
  const std::size_t n = in.n;

  for (std::size_t block = first_block; block < end_block; ++block) {
    const std::size_t i0 = block * B;
    V xi[K], yi[K], zi[K], ax[K], ay[K], az[K], pot[K];
    for (std::size_t k = 0; k < K; ++k) {
      xi[k] = S::load(in.x + i0 + k * L);
      yi[k] = S::load(in.y + i0 + k * L);
      zi[k] = S::load(in.z + i0 + k * L);
      ax[k] = ay[k] = az[k] = pot[k] = S::zero();
    }

    auto interact = [&](std::size_t j, auto self_block) {
      const T* source = in.sources + 4 * j;
      const V xj = S::set1(source[0]), yj = S::set1(source[1]), zj = S::set1(source[2]);
      const V m8 = S::set1(source[3]);
      for (std::size_t k = 0; k < K; ++k) {
        const V dx = S::sub(xj, xi[k]), dy = S::sub(yj, yi[k]), dz = S::sub(zj, zi[k]);
        V r2 = S::fma(dx, dx, eps2);
        r2 = S::fma(dy, dy, r2);
        r2 = S::fma(dz, dz, r2);
        V v = S::two_over_sqrt(r2);
        if constexpr (decltype(self_block)::value) {
          const std::size_t lane = j - i0 - k * L;  // wraps to a huge value below this register
          if (lane < L) v = S::zero_lane(v, lane);
        }
        const V mv = S::mul(m8, v);
        const V w = S::mul(mv, S::mul(v, v));
        ax[k] = S::fma(w, dx, ax[k]);
        ay[k] = S::fma(w, dy, ay[k]);
        az[k] = S::fma(w, dz, az[k]);
        if constexpr (Potential) pot[k] = S::add(pot[k], mv);
      }
    };
    const std::size_t self_end = i0 + B < n ? i0 + B : n;
    for (std::size_t j = 0; j < i0; ++j) interact(j, std::false_type{});
    for (std::size_t j = i0; j < self_end; ++j) interact(j, std::true_type{});
    for (std::size_t j = self_end; j < n; ++j) interact(j, std::false_type{});

    for (std::size_t k = 0; k < K; ++k) {
      S::store(out.ax + i0 + k * L, ax[k]);
      S::store(out.ay + i0 + k * L, ay[k]);
      S::store(out.az + i0 + k * L, az[k]);
      if constexpr (Potential) S::store(out.pot + i0 + k * L, S::mul(pot[k], S::set1(T(-4))));
    }
  }
}

template <class S, std::size_t K>
void direct_blocks_dispatch(const DirectInput<typename S::Scalar>& in, std::size_t first_block,
                            std::size_t end_block, const DirectOutput<typename S::Scalar>& out) {
  if (out.pot)
    direct_blocks<S, K, true>(in, first_block, end_block, out);
  else
    direct_blocks<S, K, false>(in, first_block, end_block, out);
}

template <class S>
void kernel_inverse_sqrt(const typename S::Scalar* x, typename S::Scalar* out, std::size_t count) {
  const typename S::V half = S::set1(typename S::Scalar(0.5));
  for (std::size_t i = 0; i < count; i += S::lanes)
    S::store(out + i, S::mul(half, S::two_over_sqrt(S::load(x + i))));
}

}  // namespace orrery
