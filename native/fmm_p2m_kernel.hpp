// cpu-fmm's P2M in lanes, written once over a SIMD traits type S of double (simd_*.hpp) and
// compiled in each simd_*.cpp file: S::lanes bodies of a leaf at a time, the monomials t_k(u) one
// vector per term as in L2P (fmm_l2p_kernel.hpp), m t_k(u) summed per lane, then each term's
// lanes folded pairwise (lane k with lane k + half) in one fixed order and added to the
// multipole. So a multipole's terms are summed in an order fixed by the leaf alone (not the one
// body after another of fmm_particle_terms.hpp's p2m: the same sums up to rounding). One body at
// a time in the baseline instruction set, P2M took most of the upward pass (docs/adr/0169).
#pragma once

#include <cstddef>
#include <utility>

#include "fmm_p2m.hpp"
#include "fmm_static_tables.hpp"

namespace orrery {

template <class S, int P>
struct FmmP2MLanes {
  using V = typename S::V;
  using Tables = FmmStaticTables<P>;
  static constexpr const Tables& tb = kFmmStaticTables<P>;
  static constexpr int terms = Tables::terms;

  static constexpr int axis(int q) { return tb.n[0][q] > 0 ? 0 : tb.n[1][q] > 0 ? 1 : 2; }
  template <int Q>
  static void monomial(const V* v, V* t) {
    constexpr int a = axis(Q);
    t[Q] = S::mul(S::mul(t[tb.minus_one[a][Q]], v[a]), S::set1(1.0 / tb.n[a][Q]));
  }
  template <std::size_t... Q>
  static void monomials(const V* v, V* t, std::index_sequence<Q...>) {
    t[0] = S::set1(1.0);
    (monomial<int(Q) + 1>(v, t), ...);
  }
  template <std::size_t... K>
  static void moments(const V* t, V m, V* sums, std::index_sequence<K...>) {
    ((sums[K] = S::fma(m, t[K], sums[K])), ...);
  }

  static void run(const FmmP2MBodies& b, double* M) {
    V sums[terms];
    for (int q = 0; q < terms; ++q) sums[q] = S::zero();
    for (std::size_t i = 0; i < b.count; i += S::lanes) {
      const V v[3] = {S::load(b.ux + i), S::load(b.uy + i), S::load(b.uz + i)};
      V t[terms];
      monomials(v, t, std::make_index_sequence<std::size_t(terms - 1)>());
      moments(t, S::load(b.m + i), sums, std::make_index_sequence<std::size_t(terms)>());
    }
    alignas(64) double lanes[S::lanes];
    for (int q = 0; q < terms; ++q) {
      S::store(lanes, sums[q]);
      for (std::size_t half = S::lanes / 2; half > 0; half /= 2)
        for (std::size_t k = 0; k < half; ++k) lanes[k] += lanes[k + half];
      M[q] += lanes[0];
    }
  }
};

template <class S>
bool fmm_p2m_lanes(int order, const FmmP2MBodies& bodies, double* multipole) {
  switch (order) {
    case 1: FmmP2MLanes<S, 1>::run(bodies, multipole); return true;
    case 2: FmmP2MLanes<S, 2>::run(bodies, multipole); return true;
    case 3: FmmP2MLanes<S, 3>::run(bodies, multipole); return true;
    case 4: FmmP2MLanes<S, 4>::run(bodies, multipole); return true;
    case 5: FmmP2MLanes<S, 5>::run(bodies, multipole); return true;
    case 6: FmmP2MLanes<S, 6>::run(bodies, multipole); return true;
    case 7: FmmP2MLanes<S, 7>::run(bodies, multipole); return true;
    default: return false;
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_p2m_lanes dispatches every order that has static tables");

}  // namespace orrery
