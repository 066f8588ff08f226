// P2M and L2P of one expansion order with the index tables as compile-time constants
// (fmm_static_tables.hpp), as straight-line code: the same arithmetic in the same order as
// fmm_monomials, fmm_l2p and the P2M loop of fmm.cpp (so the same bits), without the index
// loads. They run once per body per evaluation, so at N = 262144, p 5 the table-driven loops
// took about a third of the P2P stage (L2P) and most of the upward pass (P2M).
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
  static constexpr int terms = Tables::terms, gradient_terms = fmm_static_terms(P - 1);

  // As fmm_tables(): t_q = t_{q - e_axis} v_axis / n_axis, axis the first with n_axis > 0.
  static constexpr int axis(int q) { return tb.n[0][q] > 0 ? 0 : tb.n[1][q] > 0 ? 1 : 2; }
  static constexpr int plus_one(int k, int i) {
    return fmm_static_index(tb.n[0][k] + (i == 0), tb.n[1][k] + (i == 1), tb.n[2][k] + (i == 2));
  }
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
  template <std::size_t... K>
  static void gradient(const double* t, const double* L, double* a, std::index_sequence<K...>) {
    ((a[0] += L[plus_one(int(K), 0)] * t[K], a[1] += L[plus_one(int(K), 1)] * t[K],
      a[2] += L[plus_one(int(K), 2)] * t[K]),
     ...);
  }
  template <std::size_t... K>
  static void potential(const double* t, const double* L, double& phi, std::index_sequence<K...>) {
    ((phi -= L[K] * t[K]), ...);
  }
  template <std::size_t... K>
  static void moments(const double* t, double m, double* M, std::index_sequence<K...>) {
    ((M[K] += m * t[K]), ...);
  }

  // M += m t(v): one body at offset v from the centre.
  static void p2m(const double v[3], double m, double* M) {
    double t[terms];
    monomials(v, t, std::make_index_sequence<std::size_t(terms - 1)>());
    moments(t, m, M, std::make_index_sequence<std::size_t(terms)>());
  }
  // out = acceleration and (with_potential) potential of the local expansion L at offset v.
  static void l2p(const double v[3], const double* L, bool with_potential, double out[4]) {
    double t[terms];
    monomials(v, t, std::make_index_sequence<std::size_t(terms - 1)>());
    double a[3] = {0.0, 0.0, 0.0}, phi = 0.0;
    gradient(t, L, a, std::make_index_sequence<std::size_t(gradient_terms)>());
    if (with_potential) potential(t, L, phi, std::make_index_sequence<std::size_t(terms)>());
    out[0] = a[0];
    out[1] = a[1];
    out[2] = a[2];
    out[3] = phi;
  }
};

// One order's straight-line P2M and L2P; null above kFmmStaticMaxOrder (then the callers use
// the table-driven fmm_monomials and fmm_l2p).
struct FmmParticleFns {
  void (*p2m)(const double v[3], double m, double* M);
  void (*l2p)(const double v[3], const double* L, bool with_potential, double out[4]);
};

inline FmmParticleFns fmm_particle_fns(int order) {
  switch (order) {
    case 1: return {&FmmParticleTerms<1>::p2m, &FmmParticleTerms<1>::l2p};
    case 2: return {&FmmParticleTerms<2>::p2m, &FmmParticleTerms<2>::l2p};
    case 3: return {&FmmParticleTerms<3>::p2m, &FmmParticleTerms<3>::l2p};
    case 4: return {&FmmParticleTerms<4>::p2m, &FmmParticleTerms<4>::l2p};
    case 5: return {&FmmParticleTerms<5>::p2m, &FmmParticleTerms<5>::l2p};
    case 6: return {&FmmParticleTerms<6>::p2m, &FmmParticleTerms<6>::l2p};
    case 7: return {&FmmParticleTerms<7>::p2m, &FmmParticleTerms<7>::l2p};
    default: return {nullptr, nullptr};
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_particle_fns dispatches every order that has static tables");

}  // namespace orrery
