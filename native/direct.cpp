// cpu-direct: softened direct summation, O(N^2), float32 and float64, on the SIMD level chosen at
// run time (simd.hpp) and all requested threads. Each call lays the particles out once as
// packed sources and padded target arrays, hands whole blocks of targets to the thread pool in
// dynamic chunks, and writes the results back as (n, 3). The kernel (direct_kernel.hpp) makes
// every target's sum independent of the block and thread it runs on, so the result is the same
// bits for any thread count. The GIL is released from layout to write-back.
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "parallel.hpp"
#include "simd.hpp"

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

template <typename T>
py::tuple direct_accelerations(const CArray<T>& pos, const CArray<T>& mass, double softening,
                               unsigned threads, bool want_potential, const std::string& simd,
                               std::size_t first, std::ptrdiff_t count) {
  const std::size_t n = check_positions_and_masses(pos, mass);
  // The targets are the sources first .. first + count - 1 (default: all of them).
  if (first > n || (count >= 0 && first + std::size_t(count) > n))
    throw std::invalid_argument("targets first .. first + count must lie within the sources");
  const std::size_t nt = count < 0 ? n - first : std::size_t(count);
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const DirectBlocksFn<T> kernel = KernelFor<T>::fn(kernels);
  const std::size_t block = KernelFor<T>::block(kernels);
  const std::size_t blocks = (nt + block - 1) / block;
  const std::size_t padded = blocks * block;
  if (threads == 0) threads = ThreadPool::hardware_threads();

  CArray<T> acc({nt, std::size_t(3)});
  CArray<T> pot(want_potential ? nt : 0);
  const T* p = pos.data();
  const T* m = mass.data();
  T* a = acc.mutable_data();
  T* phi = want_potential ? pot.mutable_data() : nullptr;
  {
    py::gil_scoped_release release;
    // Padding targets sit at the origin; their lanes are computed and never written back.
    std::vector<T> sources(KernelFor<T>::stride(kernels) * n), targets(3 * padded, T(0)),
        out((want_potential ? 4 : 3) * padded);
    KernelFor<T>::pack(kernels)(p, m, n, sources.data());
    for (std::size_t i = 0; i < nt; ++i)
      for (std::size_t d = 0; d < 3; ++d) targets[d * padded + i] = p[3 * (first + i) + d];
    const DirectInput<T> in{sources.data(), targets.data(), targets.data() + padded,
                            targets.data() + 2 * padded, n, static_cast<T>(softening * softening),
                            first};
    const DirectOutput<T> result{out.data(), out.data() + padded, out.data() + 2 * padded,
                                 want_potential ? out.data() + 3 * padded : nullptr};
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
  return py::make_tuple(acc, want_potential ? py::object(pot) : py::object(py::none()));
}

// The direct kernel's 1/sqrt (potential) or x^(-3/2) (accelerations) on an array, for
// measuring its error (tests, docs).
template <typename T, bool Cube>
CArray<T> kernel_inverse_power(const CArray<T>& x, const std::string& simd) {
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const InverseSqrtFn<T> fn =
      Cube ? KernelFor<T>::inverse_cube(kernels) : KernelFor<T>::inverse_sqrt(kernels);
  const std::size_t n = static_cast<std::size_t>(x.size());
  const std::size_t padded = (n + 15) / 16 * 16;  // a multiple of every level's lane count
  std::vector<T> in(padded, T(1)), out(padded);
  std::copy(x.data(), x.data() + n, in.begin());
  fn(in.data(), out.data(), padded);
  CArray<T> result(n);
  std::copy(out.begin(), out.begin() + n, result.mutable_data());
  return result;
}

}  // namespace

void register_direct(py::module_& m) {
  const char* doc =
      "Softened accelerations (n, 3) and, with potential=True, potentials (n,) by direct "
      "summation (G = 1). threads=0 uses all cores; simd='' picks ORRERY_SIMD or the widest "
      "level this CPU has. first/count evaluate only the sources first .. first + count - 1 as "
      "targets (each the same bits as in a call over all). Returns (acc, pot or None).";
  m.def("direct_accelerations_f32", &direct_accelerations<float>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false,
        py::arg("simd") = "", py::arg("first") = 0, py::arg("count") = -1, doc);
  m.def("direct_accelerations_f64", &direct_accelerations<double>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false,
        py::arg("simd") = "", py::arg("first") = 0, py::arg("count") = -1, doc);
  m.def("kernel_inverse_sqrt_f32", &kernel_inverse_power<float, false>, py::arg("x"),
        py::arg("simd") = "",
        "1/sqrt(x) exactly as the float32 direct kernel's potential gets it (to measure its error).");
  m.def("kernel_inverse_sqrt_f64", &kernel_inverse_power<double, false>, py::arg("x"),
        py::arg("simd") = "",
        "1/sqrt(x) exactly as the float64 direct kernel's potential gets it (to measure its error).");
  m.def("kernel_inverse_cube_f32", &kernel_inverse_power<float, true>, py::arg("x"),
        py::arg("simd") = "",
        "x^(-3/2) exactly as the float32 direct kernel's accelerations get it (unit mass).");
  m.def("kernel_inverse_cube_f64", &kernel_inverse_power<double, true>, py::arg("x"),
        py::arg("simd") = "",
        "x^(-3/2) exactly as the float64 direct kernel's accelerations get it (unit mass).");
}

}  // namespace orrery
