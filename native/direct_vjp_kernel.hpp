// The vector-Jacobian product of the direct sum (engine/force_vjp.py states the formulas),
// float64, written once over a SIMD traits type S like direct_kernel.hpp, optionally fused with
// the accelerations themselves, computed exactly as the direct kernel computes them.
//
// Targets k are vectorised, K registers of S::lanes a block; every source j is broadcast to all
// of them and each target's sums run over j = 0 .. n-1 in index order, so a target's result
// depends neither on its block nor on the thread computing it (the same bits for any thread
// count). With d = x_j - x_k, s = |d|^2 + eps^2 and z = 2/sqrt(s) (the level's refined
// estimate, or an exact square root and divide), the sums are gathered in factored form:
//   A = sum z^3 abar_j, M = sum z^3 m_j, G = sum z^5 (m_k d.abar_j - m_j d.abar_k) d,
//   B = sum z^3 d.abar_j,
// and at the end pos_bar_k = (m_k A - M abar_k - 3/4 G) / 8, mass_bar_k = -B / 8, which is
// sum_j T(d) (m_k abar_j - m_j abar_k) and -sum_j abar_j . d / s^(3/2) (y = z/2). Potential
// cotangents pbar add H = sum z^3 (m_j pbar_k + m_k pbar_j) d and P = sum pbar_j z:
// pos_bar_k -= H / 8, mass_bar_k -= P / 2. The pair j == k is removed by zeroing z (and the
// acceleration's weight) in its lane, which also keeps zero softening's 1/0 out of the sums.
//
// Fused (Forces), the accelerations are the direct kernel's own operations on the same packed
// mass terms in the same order, lane by lane, so they are the same bits as cpu-direct's at the
// same level: the reversible run's backward pass gets its step's force and VJP in one pass.
// Their weights w = m_j/r^3 also give M = 8 sum w, so the fused VJP agrees with the unfused one
// to round-off, not bit for bit (ADR-0222). Where every mass is positive and the level has an
// estimate (Weights), z^3 = w * 8/m_j (8/m_j packed per source) and z^5 = z^3 * 4/s, 1/s the
// series y0^2 (1 + e + e^2 + e^3) of the same estimate y0 (e = 1 - s y0^2, the level's
// inverse_square_series): fewer multiplies than refining z and cubing it.
#pragma once

#include <cstddef>
#include <type_traits>

#include "direct_kernel.hpp"
#include "simd_kernels.hpp"

namespace orrery {

// Values per packed source: DirectVjpInput::fields, the direct kernel's mass terms, then 8/m
// (0 for no mass: the Weights path only runs where every mass is positive).
template <class S>
constexpr std::size_t vjp_source_stride() {
  return DirectVjpInput::fields + SourceLaw<S>::terms + 1;
}

template <class S>
void pack_vjp_source_terms(double mass, double* out) {
  SourceLaw<S>::mass_terms(mass, out);
  out[SourceLaw<S>::terms] = mass > 0 ? 8.0 / mass : 0.0;
}

template <class S, std::size_t K, bool Potential, bool Forces, bool Weights>
void direct_vjp_blocks(const DirectVjpInput& in, std::size_t first_block, std::size_t end_block,
                       const DirectVjpOutput& out) {
  using V = typename S::V;
  using Law = SourceLaw<S>;
  constexpr std::size_t L = S::lanes;
  constexpr std::size_t B = K * L;
  constexpr std::size_t F = DirectVjpInput::fields;
  constexpr std::size_t stride = vjp_source_stride<S>();
  const V eps2 = S::set1(in.eps2);
  const std::size_t n = in.n, padded = in.padded;

  for (std::size_t block = first_block; block < end_block; ++block) {
    const std::size_t i0 = block * B;
    V t[F][K], ax[K], ay[K], az[K], gx[K], gy[K], gz[K], hx[K], hy[K], hz[K];
    V sum_ax[K], sum_ay[K], sum_az[K], sum_m[K], sum_b[K], sum_p[K];
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t f = 0; f < F; ++f) t[f][k] = S::load(in.targets + f * padded + i0 + k * L);
      ax[k] = ay[k] = az[k] = gx[k] = gy[k] = gz[k] = hx[k] = hy[k] = hz[k] = S::zero();
      sum_ax[k] = sum_ay[k] = sum_az[k] = sum_m[k] = sum_b[k] = sum_p[k] = S::zero();
    }

    auto interact = [&](std::size_t j, auto self_block) {
      const double* source = in.sources + stride * j;
      const V xj = S::set1(source[0]), yj = S::set1(source[1]), zj = S::set1(source[2]),
              mj = S::set1(source[3]), ajx = S::set1(source[4]), ajy = S::set1(source[5]),
              ajz = S::set1(source[6]);
      for (std::size_t k = 0; k < K; ++k) {
        const V dx = S::sub(xj, t[0][k]), dy = S::sub(yj, t[1][k]), dz = S::sub(zj, t[2][k]);
        V r2 = S::fma(dx, dx, eps2);
        r2 = S::fma(dy, dy, r2);
        r2 = S::fma(dz, dz, r2);
        // z = 2/sqrt(s) itself (the potential's), z^3, and z^5 (over 4 with Weights).
        V z, z3, z5, w;
        if constexpr (Weights) {
          static_assert(Forces && !Potential, "z^3 comes from the accelerations' weights");
          const V y0 = S::rsqrt_estimate(r2);  // mass_over_cube's own: the compiler shares it
          const V y0_squared = S::mul(y0, y0);
          const V e = S::fnma(r2, y0_squared, S::set1(1.0));
          constexpr auto& c = S::inverse_square_series;
          V inverse_square = S::add(e, S::set1(c[2]));  // c[3] == 1
          inverse_square = S::fma(inverse_square, e, S::set1(c[1]));
          inverse_square = S::fma(inverse_square, e, S::set1(c[0]));
          inverse_square = S::mul(y0_squared, inverse_square);
          w = Law::mass_over_cube(r2, source + F);
          if constexpr (decltype(self_block)::value) {
            const std::size_t lane = j - i0 - k * L;  // wraps to a huge value below this register
            if (lane < L) {
              w = S::zero_lane(w, lane);
              inverse_square = S::zero_lane(inverse_square, lane);
            }
          }
          z3 = S::mul(w, S::set1(source[F + Law::terms]));
          z5 = S::mul(z3, inverse_square);
        } else {
          z = S::two_over_sqrt(r2);
          if constexpr (Forces) w = Law::mass_over_cube(r2, source + F);
          if constexpr (decltype(self_block)::value) {
            const std::size_t lane = j - i0 - k * L;
            if (lane < L) {
              z = S::zero_lane(z, lane);
              if constexpr (Forces) w = S::zero_lane(w, lane);
            }
          }
          const V z2 = S::mul(z, z);
          z3 = S::mul(z, z2);
          z5 = S::mul(z3, z2);
        }
        if constexpr (Forces) {
          ax[k] = S::fma(w, dx, ax[k]);
          ay[k] = S::fma(w, dy, ay[k]);
          az[k] = S::fma(w, dz, az[k]);
        }
        const V d_dot_aj = S::fma(dz, ajz, S::fma(dy, ajy, S::mul(dx, ajx)));
        const V d_dot_ak = S::fma(dz, t[6][k], S::fma(dy, t[5][k], S::mul(dx, t[4][k])));
        const V tidal = S::mul(z5, S::fnma(mj, d_dot_ak, S::mul(t[3][k], d_dot_aj)));
        sum_ax[k] = S::fma(z3, ajx, sum_ax[k]);
        sum_ay[k] = S::fma(z3, ajy, sum_ay[k]);
        sum_az[k] = S::fma(z3, ajz, sum_az[k]);
        // Fused, the accelerations' own weights give M: an add, which runs beside the
        // multiplies this loop is bound by (ADR-0222).
        if constexpr (Forces)
          sum_m[k] = S::add(sum_m[k], w);
        else
          sum_m[k] = S::fma(z3, mj, sum_m[k]);
        gx[k] = S::fma(tidal, dx, gx[k]);
        gy[k] = S::fma(tidal, dy, gy[k]);
        gz[k] = S::fma(tidal, dz, gz[k]);
        sum_b[k] = S::fma(z3, d_dot_aj, sum_b[k]);
        if constexpr (Potential) {
          const V pj = S::set1(source[7]);
          const V c = S::mul(z3, S::fma(mj, t[7][k], S::mul(t[3][k], pj)));
          hx[k] = S::fma(c, dx, hx[k]);
          hy[k] = S::fma(c, dy, hy[k]);
          hz[k] = S::fma(c, dz, hz[k]);
          sum_p[k] = S::fma(pj, z, sum_p[k]);
        }
      }
    };
    const std::size_t self_start = i0 < n ? i0 : n;
    const std::size_t self_end = i0 + B < n ? i0 + B : n;
    for (std::size_t j = 0; j < self_start; ++j) interact(j, std::false_type{});
    for (std::size_t j = self_start; j < self_end; ++j) interact(j, std::true_type{});
    for (std::size_t j = self_end; j < n; ++j) interact(j, std::false_type{});

    // G holds z^5/4 terms with Weights: 3 G instead of 3/4 G.
    const V eighth = S::set1(0.125), tidal_scale = S::set1(Weights ? 3.0 : 0.75),
            half = S::set1(0.5);
    for (std::size_t k = 0; k < K; ++k) {
      const std::size_t at = i0 + k * L;
      // w = m_j/r^3 = z^3 m_j / 8, so fused M is 8 sum w (an exact scaling).
      const V mass_sum = Forces ? S::mul(S::set1(8.0), sum_m[k]) : sum_m[k];
      const V sums[3][3] = {{sum_ax[k], gx[k], hx[k]}, {sum_ay[k], gy[k], hy[k]},
                            {sum_az[k], gz[k], hz[k]}};
      double* pos_bar[3] = {out.px, out.py, out.pz};
      for (std::size_t c = 0; c < 3; ++c) {
        V value = S::fnma(mass_sum, t[4 + c][k], S::mul(t[3][k], sums[c][0]));
        value = S::fnma(tidal_scale, sums[c][1], value);
        if constexpr (Potential) value = S::sub(value, sums[c][2]);
        S::store(pos_bar[c] + at, S::mul(eighth, value));
      }
      V mass_bar = S::mul(eighth, sum_b[k]);
      if constexpr (Potential) mass_bar = S::fma(half, sum_p[k], mass_bar);
      S::store(out.mass + at, S::sub(S::zero(), mass_bar));
      if constexpr (Forces) {
        S::store(out.ax + at, ax[k]);
        S::store(out.ay + at, ay[k]);
        S::store(out.az + at, az[k]);
      }
    }
  }
}

template <class S, std::size_t K>
void direct_vjp_dispatch(const DirectVjpInput& in, std::size_t first_block, std::size_t end_block,
                         const DirectVjpOutput& out) {
  const bool forces = out.ax != nullptr;
  if (in.potential && forces)
    direct_vjp_blocks<S, K, true, true, false>(in, first_block, end_block, out);
  else if (in.potential)
    direct_vjp_blocks<S, K, true, false, false>(in, first_block, end_block, out);
  else if (forces && S::has_estimate && in.positive_masses)
    direct_vjp_blocks<S, K, false, true, S::has_estimate>(in, first_block, end_block, out);
  else if (forces)
    direct_vjp_blocks<S, K, false, true, false>(in, first_block, end_block, out);
  else
    direct_vjp_blocks<S, K, false, false, false>(in, first_block, end_block, out);
}

}  // namespace orrery
