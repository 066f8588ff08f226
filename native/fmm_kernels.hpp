// The FMM's M2L kernel, written once over a SIMD traits type S (simd_*.hpp) and compiled in each
// simd_*.cpp file like the tree kernels. The S::lanes sources of a batch sit in the lanes: their
// derivative tensors come from the recurrence of fmm_expansions.hpp, one vector per term, and
// the contraction L_k += D_{k+n} S_n runs on whole vectors, so one FMA serves S::lanes cell pairs.
// A short last batch is padded with massless sources at distance 1 (finite tensors times zero
// moments add exact zeros). The per-lane sums are folded in one fixed order at the end, so a
// target's result depends only on its list, never on the thread.
#pragma once

#include <cmath>
#include <cstddef>

#include "fmm_m2l.hpp"

namespace orrery {

constexpr int kFmmKernelMaxTerms = 286;  // order 10

// Sources per batch: 64 bytes of doubles, in kFmmRegisters<S> registers of S::lanes, so that
// every level runs several independent FMA chains.
constexpr std::size_t kFmmBatch = 8;
template <class S>
constexpr std::size_t kFmmRegisters = kFmmBatch / S::lanes;

template <class S>
void fmm_m2l_kernel(const FmmM2LTables& tb, const FmmM2LTask& task) {
  using V = typename S::V;
  constexpr std::size_t W = kFmmBatch, NR = kFmmRegisters<S>, LN = S::lanes;
  const int terms = tb.terms;
  alignas(64) double D[kFmmKernelMaxTerms * W];
  alignas(64) double M[kFmmKernelMaxTerms * W];
  alignas(64) double R[3 * W], inv_r2[W], inv_r[W];
  V L[kFmmKernelMaxTerms][NR];
  for (int k = 0; k < terms; ++k)
    for (std::size_t r = 0; r < NR; ++r) L[k][r] = S::zero();
  const double* zt = task.centre + 3 * std::size_t(task.target);
  for (std::size_t begin = 0; begin < task.count; begin += W) {
    for (std::size_t b = 0; b < W; ++b) {
      const bool real = begin + b < task.count;
      const std::size_t j = real ? task.sources[begin + b] : 0;
      const double* zs = task.centre + 3 * j;
      double r2 = task.eps2;
      for (int a = 0; a < 3; ++a) {
        R[a * W + b] = real ? zt[a] - zs[a] : (a == 0 ? 1.0 : 0.0);
        r2 += R[a * W + b] * R[a * W + b];
      }
      inv_r2[b] = 1.0 / r2;
      inv_r[b] = std::sqrt(inv_r2[b]);
      const double* Mj = task.signed_multipole + j * terms;
      for (int q = 0; q < terms; ++q) M[q * W + b] = real ? Mj[q] : 0.0;
    }
    for (std::size_t r = 0; r < NR; ++r) {
      const std::size_t o = r * LN;
      const V rv[3] = {S::load(R + o), S::load(R + W + o), S::load(R + 2 * W + o)};
      const V ir2 = S::load(inv_r2 + o);
      // Taylor coefficients a_q first (stored in D), scaled by q! once all are known.
      S::store(D + o, S::load(inv_r + o));
      for (int q = 1; q < terms; ++q) {
        V first = S::zero(), second = S::zero();
        for (int a = 0; a < 3; ++a) {
          const int one = tb.minus_one[a][q], two = tb.minus_two[a][q];
          if (one >= 0) first = S::fma(rv[a], S::load(D + one * W + o), first);
          if (two >= 0) second = S::add(second, S::load(D + two * W + o));
        }
        const V sum = S::fma(S::set1(tb.recurrence_first[q]), first,
                             S::mul(S::set1(tb.recurrence_second[q]), second));
        S::store(D + q * W + o, S::sub(S::zero(), S::mul(sum, ir2)));
      }
    }
    for (int q = 1; q < terms; ++q)
      for (std::size_t r = 0; r < NR; ++r)
        S::store(D + q * W + r * LN, S::mul(S::load(D + q * W + r * LN), S::set1(tb.factorial[q])));
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
          const double* d = D + tb.pair_sum[q + c] * W;
          const double* m = M + tb.pair_n[q + c] * W;
          for (std::size_t r = 0; r < NR; ++r)
            acc[c][r] = S::fma(S::load(d + r * LN), S::load(m + r * LN), acc[c][r]);
        }
      for (int c = 0; q < end; ++q, ++c) {
        const double* d = D + tb.pair_sum[q] * W;
        const double* m = M + tb.pair_n[q] * W;
        for (std::size_t r = 0; r < NR; ++r) acc[c][r] = S::fma(S::load(d + r * LN), S::load(m + r * LN), acc[c][r]);
      }
      for (std::size_t r = 0; r < NR; ++r)
        L[k][r] = S::add(L[k][r], S::add(S::add(acc[0][r], acc[1][r]), S::add(acc[2][r], acc[3][r])));
    }
  }
  for (int k = 0; k < terms; ++k) {
    alignas(64) double lanes[W];
    for (std::size_t r = 0; r < NR; ++r) S::store(lanes + r * LN, L[k][r]);
    for (std::size_t half = W / 2; half > 0; half /= 2)
      for (std::size_t b = 0; b < half; ++b) lanes[b] += lanes[b + half];
    task.local[k] = lanes[0];
  }
}

}  // namespace orrery
