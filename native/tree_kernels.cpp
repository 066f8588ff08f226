// Tree interaction kernels (see tree_kernels.hpp). The loops are written lane by lane over
// kLanes<T> independent partial sums so that the compiler vectorises them without reordering
// any sum; target_clones compiles each entry point for AVX-512, AVX2 and baseline x86-64 and picks
// one at load time.
#include "tree_kernels.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

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

ORRERY_SIMD_CLONES void quadrupole_forces_exact(const QuadrupoleSources<float>& s, const GroupTargets<float>& t,
                                                float eps2, bool potential) {
  if (potential) quadrupole_kernel<float, true>(s, t, eps2);
  else quadrupole_kernel<float, false>(s, t, eps2);
}

#ifdef ORRERY_X86_KERNELS
// Single-precision kernels with the hardware reciprocal square root estimate refined by one
// Newton step (relative error about 1e-7, far below a tree's truncation error) and explicit FMAs:
// tree_kernels_rsqrt.inc, compiled once for AVX-512 and once for AVX2+FMA. Same 16 lanes and
// fold order as the exact kernels; results differ from them, and between AVX-512 (14-bit
// estimate) and AVX2 (12-bit), in the last bits only.

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
struct Vec {
  __m512 v;
};
inline Vec load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store(float* p, const Vec& a) { _mm512_store_ps(p, a.v); }
inline Vec set1(float x) { return {_mm512_set1_ps(x)}; }
inline Vec zero() { return {_mm512_setzero_ps()}; }
inline Vec add(Vec a, Vec b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vec sub(Vec a, Vec b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline Vec mul(Vec a, Vec b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vec fmadd(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return {_mm512_fnmadd_ps(a.v, b.v, c.v)}; }
inline Vec min(Vec a, Vec b) { return {_mm512_min_ps(a.v, b.v)}; }
inline Vec rsqrt_estimate(Vec a) { return {_mm512_rsqrt14_ps(a.v)}; }
#include "tree_kernels_rsqrt.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
// Two registers hold lanes 0-7 and 8-15, so the partial sums match the 16-lane layout.
struct Vec {
  __m256 lo, hi;
};
inline Vec load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store(float* p, const Vec& a) {
  _mm256_store_ps(p, a.lo);
  _mm256_store_ps(p + 8, a.hi);
}
inline Vec set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
inline Vec zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline Vec add(Vec a, Vec b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline Vec sub(Vec a, Vec b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline Vec mul(Vec a, Vec b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline Vec fmadd(Vec a, Vec b, Vec c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
inline Vec fnmadd(Vec a, Vec b, Vec c) {
  return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)};
}
inline Vec min(Vec a, Vec b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
inline Vec rsqrt_estimate(Vec a) { return {_mm256_rsqrt_ps(a.lo), _mm256_rsqrt_ps(a.hi)}; }
#include "tree_kernels_rsqrt.inc"
}  // namespace avx2
#pragma GCC pop_options

enum class FloatKernel { exact, avx2, avx512 };

// The best kernel the CPU supports; ORRERY_TREE_KERNEL=avx2 or =exact asks for a lesser one
// (how the tests cover every path on one machine).
FloatKernel pick_float_kernel() {
  __builtin_cpu_init();
  const char* requested = std::getenv("ORRERY_TREE_KERNEL");
  const std::string ask = requested ? requested : "";
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (ask == "exact") return FloatKernel::exact;
  if (__builtin_cpu_supports("avx512f") && ask != "avx2") return FloatKernel::avx512;
  return avx2 ? FloatKernel::avx2 : FloatKernel::exact;
}
#endif

}  // namespace

void monopole_forces(const MonopoleSources<float>& s, const GroupTargets<float>& t, float eps2, bool potential) {
#ifdef ORRERY_X86_KERNELS
  static const FloatKernel kernel = pick_float_kernel();
  if (kernel == FloatKernel::avx512) {
    if (potential) avx512::monopole<true>(s, t, eps2);
    else avx512::monopole<false>(s, t, eps2);
    return;
  }
  if (kernel == FloatKernel::avx2) {
    if (potential) avx2::monopole<true>(s, t, eps2);
    else avx2::monopole<false>(s, t, eps2);
    return;
  }
#endif
  monopole_forces_exact(s, t, eps2, potential);
}

const char* float_kernel_name() {
#ifdef ORRERY_X86_KERNELS
  static const FloatKernel kernel = pick_float_kernel();
  switch (kernel) {
    case FloatKernel::avx512: return "avx512 rsqrt14+newton";
    case FloatKernel::avx2: return "avx2+fma rsqrt+newton";
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

void quadrupole_forces(const QuadrupoleSources<float>& s, const GroupTargets<float>& t, float eps2,
                       bool potential) {
#ifdef ORRERY_X86_KERNELS
  static const FloatKernel kernel = pick_float_kernel();
  if (kernel == FloatKernel::avx512) {
    if (potential) avx512::quadrupole<true>(s, t, eps2);
    else avx512::quadrupole<false>(s, t, eps2);
    return;
  }
  if (kernel == FloatKernel::avx2) {
    if (potential) avx2::quadrupole<true>(s, t, eps2);
    else avx2::quadrupole<false>(s, t, eps2);
    return;
  }
#endif
  quadrupole_forces_exact(s, t, eps2, potential);
}

ORRERY_SIMD_CLONES void quadrupole_forces(const QuadrupoleSources<double>& s, const GroupTargets<double>& t,
                                          double eps2, bool potential) {
  if (potential) quadrupole_kernel<double, true>(s, t, eps2);
  else quadrupole_kernel<double, false>(s, t, eps2);
}

}  // namespace orrery
