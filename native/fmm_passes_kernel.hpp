// cpu-fmm's upward and downward passes in lanes, written once over a SIMD traits type S of
// double (simd_*.hpp) and compiled in each simd_*.cpp file. P2M: S::lanes bodies of a leaf at a
// time; M2M and L2L: S::lanes children of a node at a time. The monomials t_k(u) one vector per
// term (fmm_monomial_lanes.hpp, as in L2P), each lane's terms summed in its own vector, then each term's lanes folded
// pairwise (lane k with lane k + half) in one fixed order and added to the multipole. So a
// multipole's terms are summed in an order fixed by the tree alone (not body after body or child
// after child as in fmm_expansions.hpp's loops: the same sums up to rounding). One body or child
// at a time in the baseline instruction set, they took the upward pass's time (docs/fmm-tuning-log.md#0169).
// L2L needs no fold (each lane is one child's): each lane does exactly the arithmetic of
// fmm_monomials and fmm_l2l (fmm_expansions.hpp), in the same order, so the same bits.
#pragma once

#include <cstddef>
#include <utility>

#include "fmm_monomial_lanes.hpp"
#include "fmm_static_tables.hpp"
#include "fmm_passes.hpp"

namespace orrery {

template <class S, int P>
struct FmmPassLanes : FmmMonomialLanes<S, P> {
  using Monomials = FmmMonomialLanes<S, P>;
  using typename Monomials::V;
  using Monomials::monomials;
  using Monomials::tb;
  using Monomials::terms;
  using Tables = typename Monomials::Tables;

  // The k of pair q: the row whose range holds q.
  static constexpr int pair_k(int q) {
    int k = 0;
    while (tb.pair_start[k + 1] <= q) ++k;
    return k;
  }
  template <std::size_t... K>
  static void moments(const V* t, V m, V* sums, std::index_sequence<K...>) {
    ((sums[K] = S::fma(m, t[K], sums[K])), ...);
  }
  // sums_{k+n} += M_k t_n, pairs in table order (as fmm_m2m).
  template <std::size_t... Q>
  static void shift_up(const V* t, const V* child, V* sums, std::index_sequence<Q...>) {
    ((sums[tb.pair_sum[Q]] = S::fma(child[pair_k(int(Q))], t[tb.pair_n[Q]], sums[tb.pair_sum[Q]])), ...);
  }

  // child L_k = sum_n parent L_{k+n} t_n, each k's pairs in table order (as fmm_l2l).
  template <int K, std::size_t... I>
  static V shift_down_row(const V* t, const double* parent, std::index_sequence<I...>) {
    constexpr int start = tb.pair_start[K];
    V sum = S::zero();
    ((sum = S::add(sum, S::mul(S::set1(parent[tb.pair_sum[start + int(I)]]), t[tb.pair_n[start + int(I)]]))), ...);
    return sum;
  }
  template <std::size_t... K>
  static void shift_down(const V* t, const FmmDownwardLanes& b, std::size_t i, std::index_sequence<K...>) {
    (S::store(b.children + K * b.count + i,
              shift_down_row<int(K)>(t, b.local,
                                     std::make_index_sequence<std::size_t(tb.pair_start[K + 1] - tb.pair_start[K])>())),
     ...);
  }
  static void run_down(const FmmDownwardLanes& b) {
    for (std::size_t i = 0; i < b.count; i += S::lanes) {
      const V v[3] = {S::load(b.ux + i), S::load(b.uy + i), S::load(b.uz + i)};
      V t[terms];
      monomials(v, t);
      shift_down(t, b, i, std::make_index_sequence<std::size_t(terms)>());
    }
  }

  template <bool Bodies>
  static void run(const FmmUpwardLanes& b, double* M) {
    V sums[terms];
    for (int q = 0; q < terms; ++q) sums[q] = S::zero();
    for (std::size_t i = 0; i < b.count; i += S::lanes) {
      const V v[3] = {S::load(b.ux + i), S::load(b.uy + i), S::load(b.uz + i)};
      V t[terms];
      monomials(v, t);
      if constexpr (Bodies) {
        moments(t, S::load(b.weights + i), sums, std::make_index_sequence<std::size_t(terms)>());
      } else {
        V child[terms];
        for (int k = 0; k < terms; ++k) child[k] = S::load(b.weights + k * b.count + i);
        shift_up(t, child, sums, std::make_index_sequence<std::size_t(Tables::pairs)>());
      }
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

template <class S, bool Bodies>
bool fmm_upward_lanes(int order, const FmmUpwardLanes& lanes, double* multipole) {
  switch (order) {
    case 1: FmmPassLanes<S, 1>::template run<Bodies>(lanes, multipole); return true;
    case 2: FmmPassLanes<S, 2>::template run<Bodies>(lanes, multipole); return true;
    case 3: FmmPassLanes<S, 3>::template run<Bodies>(lanes, multipole); return true;
    case 4: FmmPassLanes<S, 4>::template run<Bodies>(lanes, multipole); return true;
    case 5: FmmPassLanes<S, 5>::template run<Bodies>(lanes, multipole); return true;
    case 6: FmmPassLanes<S, 6>::template run<Bodies>(lanes, multipole); return true;
    case 7: FmmPassLanes<S, 7>::template run<Bodies>(lanes, multipole); return true;
    default: return false;
  }
}

template <class S>
bool fmm_downward_lanes(int order, const FmmDownwardLanes& lanes) {
  switch (order) {
    case 1: FmmPassLanes<S, 1>::run_down(lanes); return true;
    case 2: FmmPassLanes<S, 2>::run_down(lanes); return true;
    case 3: FmmPassLanes<S, 3>::run_down(lanes); return true;
    case 4: FmmPassLanes<S, 4>::run_down(lanes); return true;
    case 5: FmmPassLanes<S, 5>::run_down(lanes); return true;
    case 6: FmmPassLanes<S, 6>::run_down(lanes); return true;
    case 7: FmmPassLanes<S, 7>::run_down(lanes); return true;
    default: return false;
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_upward_lanes and fmm_downward_lanes dispatch every order with static tables");

}  // namespace orrery
