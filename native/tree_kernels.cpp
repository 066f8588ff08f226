// Tree interaction kernels (see tree_kernels.hpp). The loops are written lane by lane over
// kLanes<T> independent partial sums so that the compiler vectorises them without reordering
// any sum; target_clones compiles each entry point for AVX-512, AVX2 and baseline x86-64 and picks
// one at load time.
#include "tree_kernels.hpp"

#include <cmath>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ORRERY_X86_KERNELS 1
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

namespace {

ORRERY_SIMD_CLONES void monopole_forces_exact(const MonopoleSources<float>& s, const GroupTargets<float>& t,
                                              float eps2, bool potential) {
  if (potential) monopole_kernel<float, true>(s, t, eps2);
  else monopole_kernel<float, false>(s, t, eps2);
}

#ifdef ORRERY_X86_KERNELS
// Single-precision monopole kernels with the hardware reciprocal square root estimate refined by
// one Newton step (relative error about 1e-7, far below a tree's truncation error) and explicit
// FMAs. Same 16 lanes and fold order as the generic kernel; results differ from it, and between
// AVX-512 (14-bit estimate) and AVX2 (12-bit), in the last bits only.
// Padding entries have r2 = inf; clamping r2 to FLT_MAX keeps their Newton step finite, and their
// zero mass then adds exact zeros.

template <bool Potential>
__attribute__((target("avx512f"))) void monopole_rsqrt_avx512(const MonopoleSources<float>& s,
                                                             const GroupTargets<float>& t, float eps2) {
  const __m512 eps2v = _mm512_set1_ps(eps2), half = _mm512_set1_ps(0.5f), three_halves = _mm512_set1_ps(1.5f);
  const __m512 largest = _mm512_set1_ps(std::numeric_limits<float>::max());
  for (std::size_t i = 0; i < t.count; ++i) {
    const __m512 px = _mm512_set1_ps(t.x[i]), py = _mm512_set1_ps(t.y[i]), pz = _mm512_set1_ps(t.z[i]);
    __m512 ax = _mm512_setzero_ps(), ay = _mm512_setzero_ps(), az = _mm512_setzero_ps(), u = _mm512_setzero_ps();
    for (std::size_t j = 0; j < s.count; j += 16) {
      const __m512 dx = _mm512_sub_ps(_mm512_loadu_ps(s.x + j), px);
      const __m512 dy = _mm512_sub_ps(_mm512_loadu_ps(s.y + j), py);
      const __m512 dz = _mm512_sub_ps(_mm512_loadu_ps(s.z + j), pz);
      __m512 r2 = _mm512_fmadd_ps(dx, dx, _mm512_fmadd_ps(dy, dy, _mm512_fmadd_ps(dz, dz, eps2v)));
      r2 = _mm512_min_ps(r2, largest);
      __m512 y = _mm512_rsqrt14_ps(r2);
      const __m512 h = _mm512_mul_ps(_mm512_mul_ps(r2, half), y);
      y = _mm512_mul_ps(y, _mm512_fnmadd_ps(h, y, three_halves));
      const __m512 m_inv_r = _mm512_mul_ps(_mm512_loadu_ps(s.m + j), y);
      const __m512 w = _mm512_mul_ps(m_inv_r, _mm512_mul_ps(y, y));
      ax = _mm512_fmadd_ps(w, dx, ax);
      ay = _mm512_fmadd_ps(w, dy, ay);
      az = _mm512_fmadd_ps(w, dz, az);
      if (Potential) u = _mm512_sub_ps(u, m_inv_r);
    }
    alignas(64) float lanes[4][16];
    _mm512_store_ps(lanes[0], ax);
    _mm512_store_ps(lanes[1], ay);
    _mm512_store_ps(lanes[2], az);
    _mm512_store_ps(lanes[3], u);
    t.ax[i] = fold_lanes(lanes[0]);
    t.ay[i] = fold_lanes(lanes[1]);
    t.az[i] = fold_lanes(lanes[2]);
    if (Potential) t.u[i] = fold_lanes(lanes[3]);
  }
}

template <bool Potential>
__attribute__((target("avx2,fma"))) void monopole_rsqrt_avx2(const MonopoleSources<float>& s,
                                                            const GroupTargets<float>& t, float eps2) {
  const __m256 eps2v = _mm256_set1_ps(eps2), half = _mm256_set1_ps(0.5f), three_halves = _mm256_set1_ps(1.5f);
  const __m256 largest = _mm256_set1_ps(std::numeric_limits<float>::max());
  for (std::size_t i = 0; i < t.count; ++i) {
    const __m256 px = _mm256_set1_ps(t.x[i]), py = _mm256_set1_ps(t.y[i]), pz = _mm256_set1_ps(t.z[i]);
    // Two registers hold lanes 0-7 and 8-15, so the partial sums match the 16-lane layout.
    __m256 ax[2], ay[2], az[2], u[2];
    for (int h = 0; h < 2; ++h) ax[h] = ay[h] = az[h] = u[h] = _mm256_setzero_ps();
    for (std::size_t j = 0; j < s.count; j += 16) {
      for (int h = 0; h < 2; ++h) {
        const std::size_t k = j + 8 * h;
        const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(s.x + k), px);
        const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(s.y + k), py);
        const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(s.z + k), pz);
        __m256 r2 = _mm256_fmadd_ps(dx, dx, _mm256_fmadd_ps(dy, dy, _mm256_fmadd_ps(dz, dz, eps2v)));
        r2 = _mm256_min_ps(r2, largest);
        __m256 y = _mm256_rsqrt_ps(r2);
        const __m256 g = _mm256_mul_ps(_mm256_mul_ps(r2, half), y);
        y = _mm256_mul_ps(y, _mm256_fnmadd_ps(g, y, three_halves));
        const __m256 m_inv_r = _mm256_mul_ps(_mm256_loadu_ps(s.m + k), y);
        const __m256 w = _mm256_mul_ps(m_inv_r, _mm256_mul_ps(y, y));
        ax[h] = _mm256_fmadd_ps(w, dx, ax[h]);
        ay[h] = _mm256_fmadd_ps(w, dy, ay[h]);
        az[h] = _mm256_fmadd_ps(w, dz, az[h]);
        if (Potential) u[h] = _mm256_sub_ps(u[h], m_inv_r);
      }
    }
    alignas(64) float lanes[4][16];
    for (int h = 0; h < 2; ++h) {
      _mm256_store_ps(lanes[0] + 8 * h, ax[h]);
      _mm256_store_ps(lanes[1] + 8 * h, ay[h]);
      _mm256_store_ps(lanes[2] + 8 * h, az[h]);
      _mm256_store_ps(lanes[3] + 8 * h, u[h]);
    }
    t.ax[i] = fold_lanes(lanes[0]);
    t.ay[i] = fold_lanes(lanes[1]);
    t.az[i] = fold_lanes(lanes[2]);
    if (Potential) t.u[i] = fold_lanes(lanes[3]);
  }
}

enum class FloatKernel { exact, avx2, avx512 };

FloatKernel pick_float_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return FloatKernel::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return FloatKernel::avx2;
  return FloatKernel::exact;
}
#endif

}  // namespace

void monopole_forces(const MonopoleSources<float>& s, const GroupTargets<float>& t, float eps2, bool potential) {
#ifdef ORRERY_X86_KERNELS
  static const FloatKernel kernel = pick_float_kernel();
  if (kernel == FloatKernel::avx512) {
    if (potential) monopole_rsqrt_avx512<true>(s, t, eps2);
    else monopole_rsqrt_avx512<false>(s, t, eps2);
    return;
  }
  if (kernel == FloatKernel::avx2) {
    if (potential) monopole_rsqrt_avx2<true>(s, t, eps2);
    else monopole_rsqrt_avx2<false>(s, t, eps2);
    return;
  }
#endif
  monopole_forces_exact(s, t, eps2, potential);
}

const char* float_monopole_kernel_name() {
#ifdef ORRERY_X86_KERNELS
  switch (pick_float_kernel()) {
    case FloatKernel::avx512: return "avx512 rsqrt14+newton";
    case FloatKernel::avx2: return "avx2 rsqrt+newton";
    case FloatKernel::exact: break;
  }
#endif
  return "exact sqrt/div";
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
