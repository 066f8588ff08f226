// Direct-summation kernel, written once over a SIMD traits type S (simd_*.hpp).
//
// Targets are vectorised: K registers of S::lanes targets form one block, and every source j
// is broadcast to all of them, so each target's sum runs over j = 0 .. n-1 in index order,
// lane by lane. A target's result therefore depends neither on the block it sits in nor on the
// thread that computes it: any thread count gives the same bits. The target itself (j == i) is
// removed by zeroing its lane in the one block of sources that holds it (the j range is split
// around it, so no other source pays for the test), so zero softening and coincident points
// never reach a sum. Targets may be a contiguous range of the sources starting at `first`:
// target i is then source first + i, and its sum is the same bits as in a call over all.
//
// Per interaction: r2 = dx^2 + dy^2 + dz^2 + eps^2, w = m/r^3 (SourceLaw), a += w * d, and
// for the potential a multiple of m/r, scaled once at the end.
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>

#include "simd_kernels.hpp"
#include "rsqrt_refine.hpp"

namespace orrery {

// What one source contributes, and the per-source values it is computed from: x, y, z, then
// `terms` values derived from the mass once per call (pack_sources), so that no multiply per
// interaction goes to constant factors.
//  - Levels with an estimate: m * c_k for the cube series (ADR 0080), w = refined m/r^3; the
//    potential sums m * (2/r) and is scaled by -1/2.
//  - Exact levels (sqrt and divide): m/8, v = 2/sqrt(r2), w = (m/8) v^3 = m/r^3 (ADR 0001); the
//    potential sums (m/8) v = m/(4r) and is scaled by -4. The factors of two are exact.
template <class S>
struct SourceLaw {
  using T = typename S::Scalar;
  using V = typename S::V;

  static constexpr std::size_t term_count() {
    if constexpr (S::has_estimate)
      return std::size(S::cube_series);
    else
      return 1;
  }
  static constexpr std::size_t terms = term_count();
  static constexpr std::size_t stride = 3 + terms;
  static constexpr T potential_scale = S::has_estimate ? T(-0.5) : T(-4);

  static void mass_terms(T m, T* out) {
    if constexpr (S::has_estimate) {
      for (std::size_t k = 0; k < terms; ++k) out[k] = T(double(m) * S::cube_series[k]);
    } else {
      out[0] = m * T(0.125);
    }
  }

  static V mass_over_cube(V r2, const T* mass_terms) {
    if constexpr (S::has_estimate) {
      return refine_mass_over_cube<S>(r2, S::rsqrt_estimate(r2), mass_terms);
    } else {
      const V v = S::two_over_sqrt(r2);
      return S::mul(S::mul(S::set1(mass_terms[0]), v), S::mul(v, v));
    }
  }

  // m/r times -1/potential_scale (the compiler shares the estimate with mass_over_cube).
  static V scaled_mass_over_r(V r2, const T* mass_terms) {
    return S::mul(S::set1(mass_terms[0]), S::two_over_sqrt(r2));
  }
};

// Lays out the sources as the kernel reads them: SourceLaw<S>::stride values per particle.
template <class S>
void pack_sources(const typename S::Scalar* pos, const typename S::Scalar* mass, std::size_t n,
                  typename S::Scalar* out) {
  using Law = SourceLaw<S>;
  for (std::size_t i = 0; i < n; ++i) {
    typename S::Scalar* source = out + Law::stride * i;
    for (std::size_t d = 0; d < 3; ++d) source[d] = pos[3 * i + d];
    Law::mass_terms(mass[i], source + 3);
  }
}

template <class S, std::size_t K, bool Potential>
void direct_blocks(const DirectInput<typename S::Scalar>& in, std::size_t first_block,
                   std::size_t end_block, const DirectOutput<typename S::Scalar>& out) {
  using T = typename S::Scalar;
  using V = typename S::V;
  using Law = SourceLaw<S>;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t B = K * L;
  const V eps2 = S::set1(in.eps2);
  const std::size_t n = in.n;

  for (std::size_t block = first_block; block < end_block; ++block) {
    const std::size_t i0 = block * B;
    const std::size_t s0 = in.first + i0;  // the source index of this block's first target
    V xi[K], yi[K], zi[K], ax[K], ay[K], az[K], pot[K];
    for (std::size_t k = 0; k < K; ++k) {
      xi[k] = S::load(in.x + i0 + k * L);
      yi[k] = S::load(in.y + i0 + k * L);
      zi[k] = S::load(in.z + i0 + k * L);
      ax[k] = ay[k] = az[k] = pot[k] = S::zero();
    }

    auto interact = [&](std::size_t j, auto self_block) {
      const T* source = in.sources + Law::stride * j;
      const V xj = S::set1(source[0]), yj = S::set1(source[1]), zj = S::set1(source[2]);
      for (std::size_t k = 0; k < K; ++k) {
        const V dx = S::sub(xj, xi[k]), dy = S::sub(yj, yi[k]), dz = S::sub(zj, zi[k]);
        V r2 = S::fma(dx, dx, eps2);
        r2 = S::fma(dy, dy, r2);
        r2 = S::fma(dz, dz, r2);
        V w = Law::mass_over_cube(r2, source + 3);
        V phi;
        if constexpr (Potential) phi = Law::scaled_mass_over_r(r2, source + 3);
        if constexpr (decltype(self_block)::value) {
          const std::size_t lane = j - s0 - k * L;  // wraps to a huge value below this register
          if (lane < L) {
            w = S::zero_lane(w, lane);
            if constexpr (Potential) phi = S::zero_lane(phi, lane);
          }
        }
        ax[k] = S::fma(w, dx, ax[k]);
        ay[k] = S::fma(w, dy, ay[k]);
        az[k] = S::fma(w, dz, az[k]);
        if constexpr (Potential) pot[k] = S::add(pot[k], phi);
      }
    };
    const std::size_t self_start = s0 < n ? s0 : n;
    const std::size_t self_end = s0 + B < n ? s0 + B : n;
    for (std::size_t j = 0; j < self_start; ++j) interact(j, std::false_type{});
    for (std::size_t j = self_start; j < self_end; ++j) interact(j, std::true_type{});
    for (std::size_t j = self_end; j < n; ++j) interact(j, std::false_type{});

    const V scale = S::set1(Law::potential_scale);
    for (std::size_t k = 0; k < K; ++k) {
      S::store(out.ax + i0 + k * L, ax[k]);
      S::store(out.ay + i0 + k * L, ay[k]);
      S::store(out.az + i0 + k * L, az[k]);
      if constexpr (Potential) S::store(out.pot + i0 + k * L, S::mul(pot[k], scale));
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

// x^(-3/2) exactly as the accelerations get it (a source of unit mass).
template <class S>
void kernel_inverse_cube(const typename S::Scalar* x, typename S::Scalar* out, std::size_t count) {
  typename S::Scalar terms[SourceLaw<S>::terms];
  SourceLaw<S>::mass_terms(typename S::Scalar(1), terms);
  for (std::size_t i = 0; i < count; i += S::lanes)
    S::store(out + i, SourceLaw<S>::mass_over_cube(S::load(x + i), terms));
}

}  // namespace orrery
