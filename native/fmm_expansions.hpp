// Cartesian Taylor expansions of the softened 1/r for the fast multipole solvers (docs/adr/0110).
//
// A term is a multi-index n = (nx, ny, nz) with |n| = nx + ny + nz <= p (the order); terms are
// numbered by degree, then by descending nx, then descending ny, so the first T(q) terms are
// those of degree < q for every q, and tables built for order p serve every lower order too.
// With t_n(v) = v^n / n! (n! = nx! ny! nz!):
//   multipole   M_n = sum_j m_j t_n(x_j - z)                          (about the centre z)
//   derivatives D_k = d^k (1/r) at R = z_target - z_source, with r^2 = |R|^2 + eps^2 (softened
//               like the direct sums), from the Taylor coefficients a_k = D_k / k!, which obey
//               |k| r^2 a_k = -(2|k| - 1) sum_i R_i a_{k-e_i} - (|k| - 1) sum_i a_{k-2e_i}
//               (the constant eps^2 differentiates away, so 1/r's recurrence holds as it is)
//   M2L         L_k += sum_{|n| <= p-|k|} (-1)^|n| D_{k+n} M_n
//   potential   phi(x) = -sum_k L_k t_k(x - z), acceleration a_i = sum_{|k|<p} L_{k+e_i} t_k(x - z)
//   M2M         M_{k+n}(parent) += M_k(child) t_n(z_child - z_parent)
//   L2L         L_k(child) += L_{k+n}(parent) t_n(z_child - z_parent)
// The same tables drive the C++ (this header's P2M/M2M/L2L/L2P, the M2L kernel in
// fmm_kernels.hpp) and the device kernels (engine/solvers/kernels/fmm.cl), which get them from
// fmm_tables() through the Python binding, as arrays.
// Truncation keeps exactly the pairs |k| + |n| <= p in M2L, a set symmetric under swapping source
// and target, so the total force cell A's expansion puts on B is minus the one B's puts on A:
// symmetric lists conserve momentum to rounding (Dehnen 2000).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace orrery {

constexpr int kFmmMaxOrder = 10;

constexpr int fmm_terms(int order) { return (order + 1) * (order + 2) * (order + 3) / 6; }

struct FmmTables {
  int order = 0;
  int terms = 0;
  std::vector<std::int32_t> nx, ny, nz;  // the multi-index of each term
  // t_n = t_{mono_parent} * v[mono_axis] * mono_scale (= 1 / n_axis); term 0 is 1.
  std::vector<std::int32_t> mono_parent, mono_axis;
  std::vector<double> mono_scale;
  // a_k recursion: the terms k - e_i and k - 2e_i (-1 when absent), per axis i.
  std::vector<std::int32_t> minus_one[3], minus_two[3];
  std::vector<double> factorial;  // k!
  std::vector<double> recurrence_first, recurrence_second;  // (2|k| - 1) / |k| and (|k| - 1) / |k|
  // M2L / M2M / L2L pairs (k, n) with |k| + |n| <= p, grouped by k (pair_start[k] .. [k+1]).
  std::vector<std::int32_t> pair_start, pair_n, pair_sum;
  // L2P: for |k| < p the terms k + e_x, k + e_y, k + e_z.
  std::vector<std::int32_t> plus_one[3];
  int gradient_terms = 0;  // terms with |k| < p

  int index(int x, int y, int z) const;
};

FmmTables fmm_tables(int order);

// One expansion's coefficients in a row of `terms` doubles.
// t_n(v) for every term.
inline void fmm_monomials(const FmmTables& tb, const double v[3], double* t) {
  t[0] = 1.0;
  for (int q = 1; q < tb.terms; ++q) t[q] = t[tb.mono_parent[q]] * v[tb.mono_axis[q]] * tb.mono_scale[q];
}

// parent M += child M shifted by d = z_child - z_parent (t = t_n(d)).
inline void fmm_m2m(const FmmTables& tb, const double* t, const double* child, double* parent) {
  for (int k = 0; k < tb.terms; ++k) {
    const double c = child[k];
    for (int q = tb.pair_start[k]; q < tb.pair_start[k + 1]; ++q) parent[tb.pair_sum[q]] += c * t[tb.pair_n[q]];
  }
}

// child L += parent L re-expanded about z_child (t = t_n(z_child - z_parent)).
inline void fmm_l2l(const FmmTables& tb, const double* t, const double* parent, double* child) {
  for (int k = 0; k < tb.terms; ++k) {
    double sum = 0.0;
    for (int q = tb.pair_start[k]; q < tb.pair_start[k + 1]; ++q) sum += parent[tb.pair_sum[q]] * t[tb.pair_n[q]];
    child[k] += sum;
  }
}

// Acceleration (and potential) of the local expansion at offset u (t = t_k(u)).
inline void fmm_l2p(const FmmTables& tb, const double* t, const double* local, double out[4]) {
  double a[3] = {0.0, 0.0, 0.0}, phi = 0.0;
  for (int k = 0; k < tb.gradient_terms; ++k)
    for (int i = 0; i < 3; ++i) a[i] += local[tb.plus_one[i][k]] * t[k];
  for (int k = 0; k < tb.terms; ++k) phi -= local[k] * t[k];
  out[0] = a[0];
  out[1] = a[1];
  out[2] = a[2];
  out[3] = phi;
}

}  // namespace orrery
