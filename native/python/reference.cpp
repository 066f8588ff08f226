// Binds the reference gravity (reference.hpp).
#include "python/arrays.hpp"
#include "reference.hpp"

namespace orrery {

void register_reference(py::module_& m) {
  m.def(
      "reference_accelerations",
      [](const CArray<double>& pos, const CArray<double>& mass, double softening, unsigned threads,
         bool want_potential) {
        const std::size_t n = check_positions_and_masses(pos, mass);
        return forces<double>(n, want_potential, [&](double* acc, double* pot) {
          reference_accelerations(pos.data(), mass.data(), n, softening, threads, acc, pot);
        });
      },
      py::arg("pos"), py::arg("mass"), py::arg("softening"), py::arg("threads") = 0, py::arg("potential") = false,
      "Double-precision compensated direct summation: (acc (n,3), potential (n,) or None).");
}

}  // namespace orrery
