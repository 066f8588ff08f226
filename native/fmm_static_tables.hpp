// The index tables of fmm_expansions.hpp for one order as compile-time constants, so that the
// M2L kernel of that order (fmm_kernels.hpp) is straight-line code: every table index is an
// immediate offset, no index loads, no branches on absent terms (docs/fmm-tuning-log.md#0116).
// The same numbering as fmm_tables.cpp; fmm_tables() checks, for every order that has these,
// that both generators agree entry for entry, so there is still one definition in effect.
#pragma once

#include <cstdint>

namespace orrery {

constexpr int kFmmStaticMaxOrder = 7;

constexpr int fmm_static_terms(int order) { return (order + 1) * (order + 2) * (order + 3) / 6; }

// Pairs (k, n) with |k| + |n| <= p: sum over degrees q of (terms of degree q) * T(p - q).
constexpr int fmm_static_pairs(int order) {
  int pairs = 0;
  for (int q = 0; q <= order; ++q) pairs += (q + 1) * (q + 2) / 2 * fmm_static_terms(order - q);
  return pairs;
}

constexpr int fmm_static_index(int x, int y, int z) {
  const int d = x + y + z;
  return d * (d + 1) * (d + 2) / 6 + (d - x) * (d - x + 1) / 2 + (d - x - y);
}

template <int P>
struct FmmStaticTables {
  static constexpr int terms = fmm_static_terms(P);
  static constexpr int pairs = fmm_static_pairs(P);
  int n[3][terms] = {};
  int minus_one[3][terms] = {};
  int minus_two[3][terms] = {};
  double recurrence_first[terms] = {};
  double recurrence_second[terms] = {};
  double factorial[terms] = {};
  int pair_start[terms + 1] = {};
  int pair_n[pairs] = {};
  int pair_sum[pairs] = {};

  constexpr FmmStaticTables() {
    int q = 0;
    for (int d = 0; d <= P; ++d)
      for (int x = d; x >= 0; --x)
        for (int y = d - x; y >= 0; --y, ++q) {
          n[0][q] = x;
          n[1][q] = y;
          n[2][q] = d - x - y;
        }
    for (q = 0; q < terms; ++q) {
      const int degree = n[0][q] + n[1][q] + n[2][q];
      factorial[q] = 1.0;
      for (int i = 0; i < 3; ++i) {
        for (int f = 2; f <= n[i][q]; ++f) factorial[q] *= f;
        int m[3] = {n[0][q], n[1][q], n[2][q]};
        m[i] -= 1;
        minus_one[i][q] = m[i] < 0 ? -1 : fmm_static_index(m[0], m[1], m[2]);
        m[i] -= 1;
        minus_two[i][q] = m[i] < 0 ? -1 : fmm_static_index(m[0], m[1], m[2]);
      }
      if (degree > 0) {
        recurrence_first[q] = (2.0 * degree - 1.0) / degree;
        recurrence_second[q] = (degree - 1.0) / degree;
      }
    }
    int at = 0;
    for (int k = 0; k < terms; ++k) {
      pair_start[k] = at;
      const int dk = n[0][k] + n[1][k] + n[2][k];
      for (int s = 0; s < fmm_static_terms(P - dk); ++s, ++at) {
        pair_n[at] = s;
        pair_sum[at] = fmm_static_index(n[0][k] + n[0][s], n[1][k] + n[1][s], n[2][k] + n[2][s]);
      }
    }
    pair_start[terms] = at;
  }
};

template <int P>
inline constexpr FmmStaticTables<P> kFmmStaticTables{};

}  // namespace orrery
