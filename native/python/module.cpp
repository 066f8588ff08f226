// orrery._native: the CPU solvers and probes of the core (native/*.cpp), one registration function
// per binding file (native/python/*.cpp).
#include <pybind11/pybind11.h>

#include "parallel.hpp"

namespace py = pybind11;

namespace orrery {
void register_reference(py::module_& m);
void register_direct(py::module_& m);
void register_direct_vjp(py::module_& m);
void register_tree(py::module_& m);
void register_fmm(py::module_& m);
void register_ceilings(py::module_& m);
void register_simd(py::module_& m);
void register_flock(py::module_& m);
void register_splat(py::module_& m);
void register_tone_map(py::module_& m);
}  // namespace orrery

PYBIND11_MODULE(_native, m) {
  m.doc() = "Orrery's native CPU solvers and machine probes";
  m.def("hardware_threads", &orrery::ThreadPool::hardware_threads,
        "Threads the machine offers (the default thread count).");
  orrery::register_reference(m);
  orrery::register_direct(m);
  orrery::register_direct_vjp(m);
  orrery::register_tree(m);
  orrery::register_fmm(m);
  orrery::register_ceilings(m);
  orrery::register_simd(m);
  orrery::register_flock(m);
  orrery::register_splat(m);
  orrery::register_tone_map(m);
}
