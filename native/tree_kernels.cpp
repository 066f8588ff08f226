// Tree interaction kernels (see tree_kernels.hpp). The loops are written lane by lane over
// kLanes<T> independent partial sums so that the compiler vectorises them without reordering
// any sum; target_clones compiles each entry point for AVX-512, AVX2 and baseline x86-64 and picks
// one at load time.
#include "tree_kernels.hpp"

#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#define ORRERY_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ORRERY_SIMD_CLONES
#endif

namespace orrery {
namespace {

// Folds lane partial sums pairwise (lane k with lane k + half), always in this order.
template <typename T>
inline __attribute__((always_inline)) T fold_lanes(T* lanes) {
  for (std::size_t half = kLanes<T> / 2; half > 0; half /= 2)
    for (std::size_t k = 0; k < half; ++k) lanes[k] += lanes[k + half];
  return lanes[0];
}

template <typename T, bool Potential>
inline __attribute__((always_inline)) void monopole_kernel(const MonopoleSources<T>& s,
                                                           const GroupTargets<T>& t, T eps2) {
  constexpr std::size_t W = kLanes<T>;
  for (std::size_t i = 0; i < t.count; ++i) {
    const T px = t.x[i], py = t.y[i], pz = t.z[i];
    alignas(64) T ax[W] = {}, ay[W] = {}, az[W] = {}, u[W] = {};
    for (std::size_t j = 0; j < s.count; j += W) {
      for (std::size_t k = 0; k < W; ++k) {
        const T dx = s.x[j + k] - px, dy = s.y[j + k] - py, dz = s.z[j + k] - pz;
        const T r2 = dx * dx + dy * dy + dz * dz + eps2;
        const T inv_r = T(1) / std::sqrt(r2);
        const T m_inv_r = s.m[j + k] * inv_r;
        const T w = m_inv_r * inv_r * inv_r;
        ax[k] += w * dx;
        ay[k] += w * dy;
        az[k] += w * dz;
        if (Potential) u[k] -= m_inv_r;
      }
    }
    t.ax[i] = fold_lanes(ax);
    t.ay[i] = fold_lanes(ay);
    t.az[i] = fold_lanes(az);
    if (Potential) t.u[i] = fold_lanes(u);
  }
}

template <typename T, bool Potential>
inline __attribute__((always_inline)) void quadrupole_kernel(const QuadrupoleSources<T>& s,
                                                             const GroupTargets<T>& t, T eps2) {
  constexpr std::size_t W = kLanes<T>;
  for (std::size_t i = 0; i < t.count; ++i) {
    const T px = t.x[i], py = t.y[i], pz = t.z[i];
    alignas(64) T ax[W] = {}, ay[W] = {}, az[W] = {}, u[W] = {};
    for (std::size_t j = 0; j < s.count; j += W) {
      for (std::size_t k = 0; k < W; ++k) {
        const std::size_t c = j + k;
        const T dx = s.x[c] - px, dy = s.y[c] - py, dz = s.z[c] - pz;
        const T r2 = dx * dx + dy * dy + dz * dz + eps2;
        const T inv_r = T(1) / std::sqrt(r2);
        const T inv_r2 = inv_r * inv_r;
        const T m_inv_r = s.m[c] * inv_r;
        const T inv_r5 = inv_r2 * inv_r2 * inv_r;
        const T qx = s.qxx[c] * dx + s.qxy[c] * dy + s.qxz[c] * dz;
        const T qy = s.qxy[c] * dx + s.qyy[c] * dy + s.qyz[c] * dz;
        const T qz = s.qxz[c] * dx + s.qyz[c] * dy + s.qzz[c] * dz;
        const T dqd = dx * qx + dy * qy + dz * qz;
        const T radial = m_inv_r * inv_r2 + T(2.5) * dqd * inv_r5 * inv_r2;
        ax[k] += radial * dx - inv_r5 * qx;
        ay[k] += radial * dy - inv_r5 * qy;
        az[k] += radial * dz - inv_r5 * qz;
        if (Potential) u[k] -= m_inv_r + T(0.5) * dqd * inv_r5;
      }
    }
    t.ax[i] = fold_lanes(ax);
    t.ay[i] = fold_lanes(ay);
    t.az[i] = fold_lanes(az);
    if (Potential) t.u[i] = fold_lanes(u);
  }
}

}  // namespace

ORRERY_SIMD_CLONES void monopole_forces(const MonopoleSources<float>& s, const GroupTargets<float>& t,
                                        float eps2, bool potential) {
  if (potential) monopole_kernel<float, true>(s, t, eps2);
  else monopole_kernel<float, false>(s, t, eps2);
}

ORRERY_SIMD_CLONES void monopole_forces(const MonopoleSources<double>& s, const GroupTargets<double>& t,
                                        double eps2, bool potential) {
  if (potential) monopole_kernel<double, true>(s, t, eps2);
  else monopole_kernel<double, false>(s, t, eps2);
}

ORRERY_SIMD_CLONES void quadrupole_forces(const QuadrupoleSources<float>& s, const GroupTargets<float>& t,
                                          float eps2, bool potential) {
  if (potential) quadrupole_kernel<float, true>(s, t, eps2);
  else quadrupole_kernel<float, false>(s, t, eps2);
}

ORRERY_SIMD_CLONES void quadrupole_forces(const QuadrupoleSources<double>& s, const GroupTargets<double>& t,
                                          double eps2, bool potential) {
  if (potential) quadrupole_kernel<double, true>(s, t, eps2);
  else quadrupole_kernel<double, false>(s, t, eps2);
}

}  // namespace orrery
