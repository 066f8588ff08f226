// Binds the VJP of cpu-direct's direct sum (direct_vjp.hpp): the result arrays are made with the
// GIL held, the sums run with it released.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "direct_vjp.hpp"
#include "python/arrays.hpp"

namespace orrery {
namespace {

py::tuple vjp_f64(const CArray<double>& pos, const CArray<double>& mass, const CArray<double>& acc_bar,
                  std::optional<CArray<double>> pot_bar, double softening, unsigned threads, const std::string& simd,
                  bool forces) {
  const std::size_t n = check_positions_and_masses(pos, mass);
  if (acc_bar.ndim() != 2 || std::size_t(acc_bar.shape(0)) != n || acc_bar.shape(1) != 3)
    throw std::invalid_argument("acc_bar must have the positions' shape (n, 3)");
  if (pot_bar && (pot_bar->ndim() != 1 || std::size_t(pot_bar->shape(0)) != n))
    throw std::invalid_argument("pot_bar must have the masses' shape (n,)");
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  CArray<double> pos_bar({n, std::size_t(3)});
  CArray<double> mass_bar(n);
  CArray<double> acc(forces ? std::vector<std::size_t>{n, 3} : std::vector<std::size_t>{0});
  double* a = forces ? acc.mutable_data() : nullptr;
  double* px = pos_bar.mutable_data();
  double* mb = mass_bar.mutable_data();
  {
    py::gil_scoped_release release;
    direct_vjp(pos.data(), mass.data(), acc_bar.data(), pot_bar ? pot_bar->data() : nullptr, n, softening,
               threads, kernels, px, mb, a);
  }
  return py::make_tuple(pos_bar, mass_bar, forces ? py::object(acc) : py::object(py::none()));
}

}  // namespace

void register_direct_vjp(py::module_& m) {
  m.def("direct_vjp_f64", &vjp_f64, py::arg("pos"), py::arg("mass"), py::arg("acc_bar"),
        py::arg("pot_bar"), py::arg("softening"), py::arg("threads") = 0, py::arg("simd") = "",
        py::arg("forces") = false,
        "The VJP of the softened direct sum (G = 1) in float64: (pos_bar (n, 3), mass_bar (n,), "
        "acc (n, 3) or None) from the cotangents of the accelerations acc_bar (n, 3) and of the "
        "potentials pot_bar (n,) or None; with forces=True also the accelerations, the same bits "
        "as direct_accelerations_f64 at the same level. threads=0 uses all cores; simd='' picks "
        "ORRERY_SIMD or the widest level this CPU has. The same bits for any thread count.");
}

}  // namespace orrery
