// cpu-fmm's L2P in lanes, written once over a SIMD traits type S of double (simd_*.hpp) and
// compiled in each simd_*.cpp file: S::lanes bodies of a leaf at a time against its one local
// expansion, the monomials t_k(u) one vector per term, the gradient and potential by broadcasts
// of the expansion's coefficients. Each lane does exactly the arithmetic of fmm_monomials and
// fmm_l2p (fmm_expansions.hpp), in the same order, so the same bits as the loop the orders above
// 7 take. One body at a time in the baseline instruction set, L2P took 7% of a single-thread
// evaluation at N = 262144, p 5 (docs/fmm-tuning-log.md#0165).
#pragma once

#include <cstddef>
#include <utility>

#include "fmm_l2p.hpp"
#include "fmm_monomial_lanes.hpp"
#include "fmm_static_tables.hpp"

namespace orrery {

template <class S, int P>
struct FmmL2PLanes : FmmMonomialLanes<S, P> {
  using Monomials = FmmMonomialLanes<S, P>;
  using typename Monomials::V;
  using Monomials::monomials;
  using Monomials::tb;
  using Monomials::terms;
  static constexpr int gradient_terms = fmm_static_terms(P - 1);

  static constexpr int plus_one(int k, int i) {
    return fmm_static_index(tb.n[0][k] + (i == 0), tb.n[1][k] + (i == 1), tb.n[2][k] + (i == 2));
  }
  template <std::size_t... K>
  static void gradient(const V* t, const double* L, V* a, std::index_sequence<K...>) {
    ((a[0] = S::add(a[0], S::mul(S::set1(L[plus_one(int(K), 0)]), t[K])),
      a[1] = S::add(a[1], S::mul(S::set1(L[plus_one(int(K), 1)]), t[K])),
      a[2] = S::add(a[2], S::mul(S::set1(L[plus_one(int(K), 2)]), t[K]))),
     ...);
  }
  template <std::size_t... K>
  static void potential(const V* t, const double* L, V& phi, std::index_sequence<K...>) {
    ((phi = S::sub(phi, S::mul(S::set1(L[K]), t[K]))), ...);
  }

  static void run(const double* L, const FmmL2PBodies& b) {
    for (std::size_t i = 0; i < b.count; i += S::lanes) {
      const V v[3] = {S::load(b.ux + i), S::load(b.uy + i), S::load(b.uz + i)};
      V t[terms];
      monomials(v, t);
      V a[3] = {S::zero(), S::zero(), S::zero()};
      gradient(t, L, a, std::make_index_sequence<std::size_t(gradient_terms)>());
      S::store(b.ax + i, a[0]);
      S::store(b.ay + i, a[1]);
      S::store(b.az + i, a[2]);
      if (b.phi) {
        V phi = S::zero();
        potential(t, L, phi, std::make_index_sequence<std::size_t(terms)>());
        S::store(b.phi + i, phi);
      }
    }
  }
};

template <class S>
bool fmm_l2p_lanes(int order, const double* local, const FmmL2PBodies& bodies) {
  switch (order) {
    case 1: FmmL2PLanes<S, 1>::run(local, bodies); return true;
    case 2: FmmL2PLanes<S, 2>::run(local, bodies); return true;
    case 3: FmmL2PLanes<S, 3>::run(local, bodies); return true;
    case 4: FmmL2PLanes<S, 4>::run(local, bodies); return true;
    case 5: FmmL2PLanes<S, 5>::run(local, bodies); return true;
    case 6: FmmL2PLanes<S, 6>::run(local, bodies); return true;
    case 7: FmmL2PLanes<S, 7>::run(local, bodies); return true;
    default: return false;
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_l2p_lanes dispatches every order that has static tables");

}  // namespace orrery
