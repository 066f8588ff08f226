// The FMM's M2L kernel, written once over a SIMD traits type S (simd_*.hpp) and compiled in each
// simd_*.cpp file like the tree kernels, for S of double and of float (the `expansions` option,
// docs/fmm-tuning-log.md#0165: the same code with E = S::Scalar, twice the lanes per vector in float). The
// sources of a batch sit in the lanes: their derivative tensors come from the recurrence of
// fmm_expansions.hpp, one vector per term, and the contraction L_k += D_{k+n} S_n runs on
// whole vectors, so one FMA serves S::lanes cell pairs. A short last batch is padded with
// massless sources at distance 1 (finite tensors times zero moments add exact zeros). The
// per-lane sums are folded in one fixed order at the end, so a target's result depends only on
// its list, never on the thread.
#pragma once

#include <cmath>
#include <cstddef>
#include <utility>

#include "fmm_m2l.hpp"
#include "fmm_static_tables.hpp"

namespace orrery {

constexpr int kFmmKernelMaxTerms = 286;  // order 10
// The moments of a padding source.
template <typename E>
alignas(64) inline constexpr E kFmmZeroMoments[kFmmKernelMaxTerms] = {};

// Sources per batch: 64 bytes of E (8 doubles, 16 floats), in kFmmRegisters<S> registers of
// S::lanes, so that every level runs several independent FMA chains.
template <typename E>
constexpr std::size_t kFmmBatch = 64 / sizeof(E);
template <class S>
constexpr std::size_t kFmmRegisters = kFmmBatch<typename S::Scalar> / S::lanes;

// One batch of W of a task's sources from `begin`: the offsets R (axis-major, W per axis)
// from each source's centre to the target's (differences in double, then rounded to E) and each
// lane's source index (0 for the lanes past the task's end, which get a unit offset and no
// moments).
template <std::size_t W, typename E>
inline void fmm_batch_offsets(const FmmM2LTask<E>& task, const double* zt, std::size_t begin, E* R,
                              std::size_t* sources) {
  for (std::size_t b = 0; b < W; ++b) {
    const bool real = begin + b < task.count;
    const std::size_t j = real ? task.sources[begin + b] : 0;
    const double* zs = task.centre + 3 * j;
    for (int a = 0; a < 3; ++a) R[a * W + b] = E(real ? zt[a] - zs[a] : (a == 0 ? 1.0 : 0.0));
    sources[b] = j;
  }
}

// 1/r^2 of the softened distance of a register of offsets, in lanes (correctly rounded division
// and square root, as they were one lane at a time: a tenth of the M2L time went there).
template <class S>
inline typename S::V fmm_inverse_r2(const typename S::V (&rv)[3], double eps2) {
  using E = typename S::Scalar;
  typename S::V r2 = S::set1(E(eps2));
  for (int a = 0; a < 3; ++a) r2 = S::fma(rv[a], rv[a], r2);
  return S::div(S::set1(E(1)), r2);
}

// The per-lane sums of every k folded in one fixed order, then widened to double.
template <class S, std::size_t NR>
inline void fmm_fold_lanes(typename S::V (*L)[NR], int terms, double* local) {
  using E = typename S::Scalar;
  constexpr std::size_t W = kFmmBatch<E>, LN = S::lanes;
  for (int k = 0; k < terms; ++k) {
    alignas(64) E lanes[W];
    for (std::size_t r = 0; r < NR; ++r) S::store(lanes + r * LN, L[k][r]);
    for (std::size_t half = W / 2; half > 0; half /= 2)
      for (std::size_t b = 0; b < half; ++b) lanes[b] += lanes[b + half];
    local[k] = double(lanes[0]);
  }
}

template <class S>
void fmm_m2l_generic(const FmmM2LTables& tb, const FmmM2LTask<typename S::Scalar>& task) {
  using V = typename S::V;
  using E = typename S::Scalar;
  constexpr std::size_t W = kFmmBatch<E>, NR = kFmmRegisters<S>, LN = S::lanes;
  const int terms = tb.terms;
  alignas(64) E D[kFmmKernelMaxTerms * W];
  alignas(64) E M[kFmmKernelMaxTerms * W];
  alignas(64) E R[3 * W];
  V L[kFmmKernelMaxTerms][NR];
  for (int k = 0; k < terms; ++k)
    for (std::size_t r = 0; r < NR; ++r) L[k][r] = S::zero();
  const double* zt = task.centre + 3 * std::size_t(task.target);
  for (std::size_t begin = 0; begin < task.count; begin += W) {
    std::size_t sources[W];
    fmm_batch_offsets<W>(task, zt, begin, R, sources);
    for (std::size_t b = 0; b < W; ++b) {
      const bool real = begin + b < task.count;
      const E* Mj = task.signed_multipole + sources[b] * terms;
      for (int q = 0; q < terms; ++q) M[q * W + b] = real ? Mj[q] : E(0);
    }
    for (std::size_t r = 0; r < NR; ++r) {
      const std::size_t o = r * LN;
      const V rv[3] = {S::load(R + o), S::load(R + W + o), S::load(R + 2 * W + o)};
      const V ir2 = fmm_inverse_r2<S>(rv, task.eps2);
      // Taylor coefficients a_q first (stored in D), scaled by q! once all are known.
      S::store(D + o, S::sqrt(ir2));
      for (int q = 1; q < terms; ++q) {
        V first = S::zero(), second = S::zero();
        for (int a = 0; a < 3; ++a) {
          const int one = tb.minus_one[a][q], two = tb.minus_two[a][q];
          if (one >= 0) first = S::fma(rv[a], S::load(D + one * W + o), first);
          if (two >= 0) second = S::add(second, S::load(D + two * W + o));
        }
        const V sum = S::fma(S::set1(E(tb.recurrence_first[q])), first,
                             S::mul(S::set1(E(tb.recurrence_second[q])), second));
        S::store(D + q * W + o, S::fnma(sum, ir2, S::zero()));
      }
    }
    for (int q = 1; q < terms; ++q)
      for (std::size_t r = 0; r < NR; ++r)
        S::store(D + q * W + r * LN, S::mul(S::load(D + q * W + r * LN), S::set1(E(tb.factorial[q]))));
    // Four partial sums per register, so that four FMA chains run at once (one chain waits an
    // FMA latency per pair); added in one fixed order.
    for (int k = 0; k < terms; ++k) {
      V acc[4][NR];
      for (int c = 0; c < 4; ++c)
        for (std::size_t r = 0; r < NR; ++r) acc[c][r] = S::zero();
      const int end = tb.pair_start[k + 1];
      int q = tb.pair_start[k];
      for (; q + 4 <= end; q += 4)
        for (int c = 0; c < 4; ++c) {
          const E* d = D + tb.pair_sum[q + c] * W;
          const E* m = M + tb.pair_n[q + c] * W;
          for (std::size_t r = 0; r < NR; ++r)
            acc[c][r] = S::fma(S::load(d + r * LN), S::load(m + r * LN), acc[c][r]);
        }
      for (int c = 0; q < end; ++q, ++c) {
        const E* d = D + tb.pair_sum[q] * W;
        const E* m = M + tb.pair_n[q] * W;
        for (std::size_t r = 0; r < NR; ++r) acc[c][r] = S::fma(S::load(d + r * LN), S::load(m + r * LN), acc[c][r]);
      }
      for (std::size_t r = 0; r < NR; ++r)
        L[k][r] = S::add(L[k][r], S::add(S::add(acc[0][r], acc[1][r]), S::add(acc[2][r], acc[3][r])));
    }
  }
  fmm_fold_lanes<S, NR>(L, terms, task.local);
}

// One order P, with the tables as compile-time constants (fmm_static_tables.hpp): the same
// arithmetic in the same order as fmm_m2l_generic (the same four chains per k, the same fold),
// so the same bits, but as straight-line code. Measured at N = 262144, p 4-6, theta 0.6 on the
// generic kernel, each FMA of the contraction cost about seven instructions (two index loads,
// address arithmetic, two vector loads, the FMA, the loop): here it is one vector load and one
// FMA with a memory operand, and the recurrence has no index loads or branches.
template <class S, int P>
struct FmmM2LFixed {
  using V = typename S::V;
  using E = typename S::Scalar;
  using Tables = FmmStaticTables<P>;
  static constexpr const Tables& tb = kFmmStaticTables<P>;
  static constexpr int terms = Tables::terms;
  static constexpr std::size_t W = kFmmBatch<E>, NR = kFmmRegisters<S>, LN = S::lanes;

  // a_q = -((2|q|-1)/|q| sum_i R_i a_{q-e_i} + (|q|-1)/|q| sum_i a_{q-2e_i}) / r^2, as generic.
  template <int Q>
  static void coefficient(E* D, const V* rv, V ir2, std::size_t o) {
    V first = S::zero(), second = S::zero();
    axis<Q, 0>(D, rv, o, first, second);
    axis<Q, 1>(D, rv, o, first, second);
    axis<Q, 2>(D, rv, o, first, second);
    const V sum =
        S::fma(S::set1(E(tb.recurrence_first[Q])), first, S::mul(S::set1(E(tb.recurrence_second[Q])), second));
    S::store(D + Q * W + o, S::fnma(sum, ir2, S::zero()));
  }
  template <int Q, int A>
  static void axis(const E* D, const V* rv, std::size_t o, V& first, V& second) {
    if constexpr (tb.minus_one[A][Q] >= 0) first = S::fma(rv[A], S::load(D + tb.minus_one[A][Q] * W + o), first);
    if constexpr (tb.minus_two[A][Q] >= 0) second = S::add(second, S::load(D + tb.minus_two[A][Q] * W + o));
  }
  template <std::size_t... Q>
  static void coefficients(E* D, const V* rv, V ir2, std::size_t o, std::index_sequence<Q...>) {
    (coefficient<int(Q) + 1>(D, rv, ir2, o), ...);  // a comma fold runs left to right: q ascending
  }

  // L_k += sum_n D_{k+n} M_n over the pairs of k, in four chains (pair i in chain i % 4).
  template <int K, std::size_t... I>
  static void row(const E* D, const E* M, V (*L)[NR], std::index_sequence<I...>) {
    constexpr int start = tb.pair_start[K];
    V acc[4][NR];
    for (int c = 0; c < 4; ++c)
      for (std::size_t r = 0; r < NR; ++r) acc[c][r] = S::zero();
    (pair<start + int(I), I % 4>(D, M, acc), ...);
    for (std::size_t r = 0; r < NR; ++r)
      L[K][r] = S::add(L[K][r], S::add(S::add(acc[0][r], acc[1][r]), S::add(acc[2][r], acc[3][r])));
  }
  template <int Q, std::size_t C>
  static void pair(const E* D, const E* M, V (*acc)[NR]) {
    const E* d = D + tb.pair_sum[Q] * W;
    const E* m = M + tb.pair_n[Q] * W;
    for (std::size_t r = 0; r < NR; ++r) acc[C][r] = S::fma(S::load(d + r * LN), S::load(m + r * LN), acc[C][r]);
  }
  template <std::size_t... K>
  static void contract(const E* D, const E* M, V (*L)[NR], std::index_sequence<K...>) {
    (row<int(K)>(D, M, L, std::make_index_sequence<std::size_t(tb.pair_start[K + 1] - tb.pair_start[K])>()), ...);
  }

  static void run(const FmmM2LTask<E>& task) {
    alignas(64) E D[terms * W];
    alignas(64) E M[terms * W];
    alignas(64) E R[3 * W];
    V L[terms][NR];
    for (int k = 0; k < terms; ++k)
      for (std::size_t r = 0; r < NR; ++r) L[k][r] = S::zero();
    const double* zt = task.centre + 3 * std::size_t(task.target);
    for (std::size_t begin = 0; begin < task.count; begin += W) {
      const E* rows[W];
      std::size_t sources[W];
      fmm_batch_offsets<W>(task, zt, begin, R, sources);
      for (std::size_t b = 0; b < W; ++b)
        rows[b] = begin + b < task.count ? task.signed_multipole + sources[b] * terms : kFmmZeroMoments<E>;
      // The sources' moments into lanes, M[q * W + b]: whole S::lanes x S::lanes blocks by the
      // traits' in-register transpose (a fifth of the instructions of moving them one by one),
      // the last terms one by one.
      constexpr int blocked = terms / int(LN) * int(LN);
      for (int q = 0; q < blocked; q += int(LN))
        for (std::size_t r = 0; r < NR; ++r) S::transpose(rows + r * LN, std::size_t(q), M + q * W + r * LN, W);
      for (int q = blocked; q < terms; ++q)
        for (std::size_t b = 0; b < W; ++b) M[q * W + b] = rows[b][q];
      for (std::size_t r = 0; r < NR; ++r) {
        const std::size_t o = r * LN;
        const V rv[3] = {S::load(R + o), S::load(R + W + o), S::load(R + 2 * W + o)};
        const V ir2 = fmm_inverse_r2<S>(rv, task.eps2);
        S::store(D + o, S::sqrt(ir2));
        coefficients(D, rv, ir2, o, std::make_index_sequence<std::size_t(terms - 1)>());
      }
      for (int q = 1; q < terms; ++q)
        for (std::size_t r = 0; r < NR; ++r)
          S::store(D + q * W + r * LN, S::mul(S::load(D + q * W + r * LN), S::set1(E(tb.factorial[q]))));
      contract(D, M, L, std::make_index_sequence<std::size_t(terms)>());
    }
    fmm_fold_lanes<S, NR>(L, terms, task.local);
  }
};

// The kernel table's entry: the straight-line kernel of the task's order where there is one.
template <class S>
void fmm_m2l_kernel(const FmmM2LTables& tb, const FmmM2LTask<typename S::Scalar>& task) {
  switch (tb.terms) {
    case fmm_static_terms(1): return FmmM2LFixed<S, 1>::run(task);
    case fmm_static_terms(2): return FmmM2LFixed<S, 2>::run(task);
    case fmm_static_terms(3): return FmmM2LFixed<S, 3>::run(task);
    case fmm_static_terms(4): return FmmM2LFixed<S, 4>::run(task);
    case fmm_static_terms(5): return FmmM2LFixed<S, 5>::run(task);
    case fmm_static_terms(6): return FmmM2LFixed<S, 6>::run(task);
    case fmm_static_terms(7): return FmmM2LFixed<S, 7>::run(task);
    default: return fmm_m2l_generic<S>(tb, task);
  }
}
static_assert(kFmmStaticMaxOrder == 7, "fmm_m2l_kernel dispatches every order that has static tables");

}  // namespace orrery
