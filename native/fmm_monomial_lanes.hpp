// The monomials t_k(u) = u^n / n! of expansion order P over S::lanes offsets at a time (S a SIMD
// traits type of double, simd_*.hpp), one vector per term: t_0 = 1, then t_k = t_{k - e_a} u_a /
// n_a on the first axis a with n_a > 0, term after term. Each lane does exactly the arithmetic
// of fmm_monomials (fmm_expansions.hpp), in the same order. What the lanes kernels of P2M, M2M,
// L2L (fmm_passes_kernel.hpp) and L2P (fmm_l2p_kernel.hpp) start from.
#pragma once

#include <cstddef>
#include <utility>

#include "fmm_static_tables.hpp"

namespace orrery {

template <class S, int P>
struct FmmMonomialLanes {
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
  // t[0 .. terms) for the offsets v[0..2] (one vector per axis).
  static void monomials(const V* v, V* t) {
    monomials(v, t, std::make_index_sequence<std::size_t(terms - 1)>());
  }
};

}  // namespace orrery
