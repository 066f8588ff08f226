// Binds cpu-direct (direct.hpp): the result arrays are made with the GIL held, the sums run
// with it released.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "direct.hpp"
#include "python/arrays.hpp"

namespace orrery {
namespace {

template <typename T>
py::tuple accelerations(const CArray<T>& pos, const CArray<T>& mass, double softening, unsigned threads,
                        bool want_potential, const std::string& simd, std::size_t first, std::ptrdiff_t count) {
  const std::size_t n = check_positions_and_masses(pos, mass);
  // The targets are the sources first .. first + count - 1 (default: all of them).
  if (first > n || (count >= 0 && first + std::size_t(count) > n))
    throw std::invalid_argument("targets first .. first + count must lie within the sources");
  const std::size_t targets = count < 0 ? n - first : std::size_t(count);
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  return forces<T>(targets, want_potential, [&](T* acc, T* pot) {
    direct_accelerations<T>(pos.data(), mass.data(), n, first, targets, softening, threads, kernels, acc, pot);
  });
}

template <typename T, bool Cube>
CArray<T> inverse_power(const CArray<T>& x, const std::string& simd) {
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const std::size_t n = static_cast<std::size_t>(x.size());
  CArray<T> result(n);
  kernel_inverse_power<T, Cube>(x.data(), n, kernels, result.mutable_data());
  return result;
}

}  // namespace

void register_direct(py::module_& m) {
  const char* doc =
      "Softened accelerations (n, 3) and, with potential=True, potentials (n,) by direct "
      "summation (G = 1). threads=0 uses all cores; simd='' picks ORRERY_SIMD or the widest "
      "level this CPU has. first/count evaluate only the sources first .. first + count - 1 as "
      "targets (each the same bits as in a call over all). Returns (acc, pot or None).";
  m.def("direct_accelerations_f32", &accelerations<float>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false,
        py::arg("simd") = "", py::arg("first") = 0, py::arg("count") = -1, doc);
  m.def("direct_accelerations_f64", &accelerations<double>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false,
        py::arg("simd") = "", py::arg("first") = 0, py::arg("count") = -1, doc);
  m.def("kernel_inverse_sqrt_f32", &inverse_power<float, false>, py::arg("x"),
        py::arg("simd") = "",
        "1/sqrt(x) exactly as the float32 direct kernel's potential gets it (to measure its error).");
  m.def("kernel_inverse_sqrt_f64", &inverse_power<double, false>, py::arg("x"),
        py::arg("simd") = "",
        "1/sqrt(x) exactly as the float64 direct kernel's potential gets it (to measure its error).");
  m.def("kernel_inverse_cube_f32", &inverse_power<float, true>, py::arg("x"),
        py::arg("simd") = "",
        "x^(-3/2) exactly as the float32 direct kernel's accelerations get it (unit mass).");
  m.def("kernel_inverse_cube_f64", &inverse_power<double, true>, py::arg("x"),
        py::arg("simd") = "",
        "x^(-3/2) exactly as the float64 direct kernel's accelerations get it (unit mass).");
}

}  // namespace orrery
