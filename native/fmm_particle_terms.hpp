// L2L of one expansion order with the index tables as compile-time constants
// (fmm_static_tables.hpp), as straight-line code: the same arithmetic in the same order as
// fmm_monomials and fmm_l2l, without the index loads. (P2M and M2M run in lanes,
// fmm_upward_kernel.hpp; L2P too, fmm_l2p_kernel.hpp.)
#pragma once

#include <cstddef>
#include <utility>

#include "fmm_expansions.hpp"
#include "fmm_static_tables.hpp"

namespace orrery {

template <int P>
struct FmmParticleTerms {
  using Tables = FmmStaticTables<P>;
  static constexpr const Tables& tb = kFmmStaticTables<P>;
  static constexpr int terms = Tables::terms;

  // As fmm_tables(): t_q = t_{q - e_axis} v_axis / n_axis, axis the first with n_axis > 0.
  static constexpr int axis(int q) { return tb.n[0][q] > 0 ? 0 : tb.n[1][q] > 0 ? 1 : 2; }
  template <int Q>
  static void monomial(const double* v, double* t) {
    constexpr int a = axis(Q);
    t[Q] = t[tb.minus_one[a][Q]] * v[a] * (1.0 / tb.n[a][Q]);
  }
  template <std::size_t... Q>
  static void monomials(const double* v, double* t, std::index_sequence<Q...>) {
    t[0] = 1.0;
    (monomial<int(Q) + 1>(v, t), ...);
  }

  // child L_k += sum_n parent L_{k+n} t_n(d), each k's pairs in table order (as fmm_l2l).
  template <int K, std::size_t... I>
  static void shift_down_row(const double* t, const double* parent, double* child, std::index_sequence<I...>) {
    constexpr int start = tb.pair_start[K];
    double sum = 0.0;
    ((sum += parent[tb.pair_sum[start + int(I)]] * t[tb.pair_n[start + int(I)]]), ...);
    child[K] += sum;
  }
  template <std::size_t... K>
  static void shift_down(const double* t, const double* parent, double* child, std::index_sequence<K...>) {
    (shift_down_row<int(K)>(t, parent, child,
                            std::make_index_sequence<std::size_t(tb.pair_start[K + 1] - tb.pair_start[K])>()),
     ...);
  }
  // L2L: child L += parent L re-expanded about z_child, d = z_child - z_parent.
  static void l2l(const double d[3], const double* parent, double* child) {
    double t[terms];
    monomials(d, t, std::make_index_sequence<std::size_t(terms - 1)>());
    shift_down(t, parent, child, std::make_index_sequence<std::size_t(terms)>());
  }
};

// One order's straight-line L2L; null above kFmmStaticMaxOrder (then the callers use the
// table-driven ones of fmm_expansions.hpp).
struct FmmParticleFns {
  void (*l2l)(const double d[3], const double* parent, double* child);
};

inline FmmParticleFns fmm_particle_fns(int order) {
  using T1 = FmmParticleTerms<1>;
  using T2 = FmmParticleTerms<2>;
  using T3 = FmmParticleTerms<3>;
  using T4 = FmmParticleTerms<4>;
  using T5 = FmmParticleTerms<5>;
  using T6 = FmmParticleTerms<6>;
  using T7 = FmmParticleTerms<7>;
  switch (order) {
    case 1: return {&T1::l2l};
    case 2: return {&T2::l2l};
    case 3: return {&T3::l2l};
    case 4: return {&T4::l2l};
    case 5: return {&T5::l2l};
    case 6: return {&T6::l2l};
    case 7: return {&T7::l2l};
    default: return {nullptr};
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_particle_fns dispatches every order that has static tables");

}  // namespace orrery
