// cpu-direct: softened direct summation, O(N^2), float32 and float64. Each particle's sum runs
// over j in index order on one thread, so the result is the same for any thread count.
// (Scalar placeholder layout; SIMD paths are dispatched at run time.)
#include <cmath>

#include "arrays.hpp"
#include "parallel.hpp"

namespace orrery {
namespace {

template <typename T>
py::tuple direct_accelerations(const CArray<T>& pos, const CArray<T>& mass, double softening,
                               unsigned threads, bool want_potential) {
  std::size_t n = check_positions_and_masses(pos, mass);
  CArray<T> acc({n, std::size_t(3)});
  CArray<T> pot(want_potential ? n : 0);
  const T* p = pos.data();
  const T* m = mass.data();
  T* a = acc.mutable_data();
  T* phi = want_potential ? pot.mutable_data() : nullptr;
  const T eps2 = static_cast<T>(softening * softening);
  if (threads == 0) threads = ThreadPool::hardware_threads();
  {
    py::gil_scoped_release release;
    ThreadPool::instance().parallel_for(n, 64, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        T ax = 0, ay = 0, az = 0, ui = 0;
        for (std::size_t j = 0; j < n; ++j) {
          if (j == i) continue;
          T dx = p[3 * j] - p[3 * i], dy = p[3 * j + 1] - p[3 * i + 1], dz = p[3 * j + 2] - p[3 * i + 2];
          T r2 = dx * dx + dy * dy + dz * dz + eps2;
          T inv_r = T(1) / std::sqrt(r2);
          T w = m[j] * inv_r * inv_r * inv_r;
          ax += w * dx;
          ay += w * dy;
          az += w * dz;
          ui -= m[j] * inv_r;
        }
        a[3 * i] = ax;
        a[3 * i + 1] = ay;
        a[3 * i + 2] = az;
        if (phi) phi[i] = ui;
      }
    });
  }
  return py::make_tuple(acc, want_potential ? py::object(pot) : py::object(py::none()));
}

}  // namespace

void register_direct(py::module_& m) {
  m.def("direct_accelerations_f32", &direct_accelerations<float>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false);
  m.def("direct_accelerations_f64", &direct_accelerations<double>, py::arg("pos"), py::arg("mass"),
        py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false);
}

}  // namespace orrery
