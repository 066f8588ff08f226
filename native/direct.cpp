// cpu-direct (direct.hpp): layout, blocks of targets on the thread pool, write-back.
#include "direct.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "parallel.hpp"

namespace orrery {
namespace {

template <typename T>
struct KernelFor;
template <>
struct KernelFor<float> {
  static DirectBlocksFn<float> fn(const SimdKernels& k) { return k.direct_f32; }
  static std::size_t block(const SimdKernels& k) { return k.block_f32; }
  static std::size_t stride(const SimdKernels& k) { return k.source_stride_f32; }
  static PackSourcesFn<float> pack(const SimdKernels& k) { return k.pack_sources_f32; }
  static InverseSqrtFn<float> inverse_sqrt(const SimdKernels& k) { return k.inverse_sqrt_f32; }
  static InverseSqrtFn<float> inverse_cube(const SimdKernels& k) { return k.inverse_cube_f32; }
};
template <>
struct KernelFor<double> {
  static DirectBlocksFn<double> fn(const SimdKernels& k) { return k.direct_f64; }
  static std::size_t block(const SimdKernels& k) { return k.block_f64; }
  static std::size_t stride(const SimdKernels& k) { return k.source_stride_f64; }
  static PackSourcesFn<double> pack(const SimdKernels& k) { return k.pack_sources_f64; }
  static InverseSqrtFn<double> inverse_sqrt(const SimdKernels& k) { return k.inverse_sqrt_f64; }
  static InverseSqrtFn<double> inverse_cube(const SimdKernels& k) { return k.inverse_cube_f64; }
};

}  // namespace

template <typename T>
void direct_accelerations(const T* p, const T* m, std::size_t n, std::size_t first, std::size_t nt,
                          double softening, unsigned threads, const SimdKernels& kernels, T* a, T* phi) {
  const DirectBlocksFn<T> kernel = KernelFor<T>::fn(kernels);
  const std::size_t block = KernelFor<T>::block(kernels);
  const std::size_t blocks = (nt + block - 1) / block;
  const std::size_t padded = blocks * block;
  if (threads == 0) threads = ThreadPool::hardware_threads();
  // Padding targets sit at the origin; their lanes are computed and never written back.
  std::vector<T> sources(KernelFor<T>::stride(kernels) * n), targets(3 * padded, T(0)),
      out((phi ? 4 : 3) * padded);
  KernelFor<T>::pack(kernels)(p, m, n, sources.data());
  for (std::size_t i = 0; i < nt; ++i)
    for (std::size_t d = 0; d < 3; ++d) targets[d * padded + i] = p[3 * (first + i) + d];
  const DirectInput<T> in{sources.data(), targets.data(), targets.data() + padded,
                          targets.data() + 2 * padded, n, static_cast<T>(softening * softening),
                          first};
  const DirectOutput<T> result{out.data(), out.data() + padded, out.data() + 2 * padded,
                               phi ? out.data() + 3 * padded : nullptr};
  // Chunks of about 2^18 interactions (a block when n is in the thousands, ~60 us on one
  // core): taking one costs nothing next to computing it, and the threads finish within one
  // chunk of each other (eight chunks per thread left up to 5% of a 2-thread N = 8192 call
  // with one thread idle at the end).
  const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 18) / (block * n));
  ThreadPool::instance().parallel_for(blocks, chunk, threads, [&](std::size_t b0, std::size_t b1) {
    kernel(in, b0, b1, result);
  });
  for (std::size_t i = 0; i < nt; ++i) {
    for (std::size_t d = 0; d < 3; ++d) a[3 * i + d] = out[d * padded + i];
    if (phi) phi[i] = result.pot[i];
  }
}

template <typename T, bool Cube>
void kernel_inverse_power(const T* x, std::size_t n, const SimdKernels& kernels, T* result) {
  const InverseSqrtFn<T> fn =
      Cube ? KernelFor<T>::inverse_cube(kernels) : KernelFor<T>::inverse_sqrt(kernels);
  const std::size_t padded = (n + 15) / 16 * 16;  // a multiple of every level's lane count
  std::vector<T> in(padded, T(1)), out(padded);
  std::copy(x, x + n, in.begin());
  fn(in.data(), out.data(), padded);
  std::copy(out.begin(), out.begin() + n, result);
}

template void direct_accelerations<float>(const float*, const float*, std::size_t, std::size_t, std::size_t,
                                          double, unsigned, const SimdKernels&, float*, float*);
template void direct_accelerations<double>(const double*, const double*, std::size_t, std::size_t, std::size_t,
                                           double, unsigned, const SimdKernels&, double*, double*);
template void kernel_inverse_power<float, false>(const float*, std::size_t, const SimdKernels&, float*);
template void kernel_inverse_power<float, true>(const float*, std::size_t, const SimdKernels&, float*);
template void kernel_inverse_power<double, false>(const double*, std::size_t, const SimdKernels&, double*);
template void kernel_inverse_power<double, true>(const double*, std::size_t, const SimdKernels&, double*);

}  // namespace orrery
