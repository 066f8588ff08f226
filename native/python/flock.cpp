// Binds the boids step (flock.hpp): the constants come as a dict (FlockParameters.constants()),
// the step runs with the GIL released.
#include <stdexcept>
#include <string>

#include "flock.hpp"
#include "python/arrays.hpp"

namespace orrery {
namespace {

FlockConstants constants_from(const py::dict& d) {
  auto get = [&](const char* key) {
    if (!d.contains(key)) throw std::invalid_argument(std::string("flock constants lack '") + key + "'");
    return d[key];
  };
  FlockConstants c;
  c.world = get("world").cast<float>();
  c.half_world = get("half_world").cast<float>();
  c.separation_radius2 = get("separation_radius2").cast<float>();
  c.alignment_radius2 = get("alignment_radius2").cast<float>();
  c.cohesion_radius2 = get("cohesion_radius2").cast<float>();
  c.separation_weight = get("separation_weight").cast<double>();
  c.alignment_weight = get("alignment_weight").cast<double>();
  c.cohesion_weight = get("cohesion_weight").cast<double>();
  c.max_speed = get("max_speed").cast<double>();
  c.dt = get("dt").cast<double>();
  c.quantum = get("quantum").cast<double>();
  c.velocity_quantum = get("velocity_quantum").cast<double>();
  c.grid = get("grid").cast<int>();
  c.inverse_cell_width = get("inverse_cell_width").cast<float>();
  return c;
}

py::dict step(const CArray<float>& pos, const CArray<float>& vel, CArray<float>& pos_out, CArray<float>& vel_out,
              const py::dict& constants, const std::string& search, int cell_width, unsigned threads,
              const std::string& simd) {
  if (pos.ndim() != 2 || pos.shape(1) != 3) throw std::invalid_argument("positions must have shape (n, 3)");
  const std::size_t n = static_cast<std::size_t>(pos.shape(0));
  for (const py::array* a : {static_cast<const py::array*>(&vel), static_cast<const py::array*>(&pos_out),
                             static_cast<const py::array*>(&vel_out)})
    if (a->ndim() != 2 || a->shape(0) != pos.shape(0) || a->shape(1) != 3)
      throw std::invalid_argument("velocities and outputs must have the positions' shape (n, 3)");
  if (pos_out.data() == pos.data() || vel_out.data() == vel.data())
    throw std::invalid_argument("outputs must not be the inputs");
  const FlockSearch chosen = flock_search(search);
  const FlockConstants c = constants_from(constants);
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const float* p = pos.data();
  const float* v = vel.data();
  float* po = pos_out.mutable_data();
  float* vo = vel_out.mutable_data();
  FlockStageSeconds seconds;
  {
    py::gil_scoped_release release;
    seconds = flock_step(p, v, n, c, chosen, cell_width, threads, kernels, po, vo);
  }
  py::dict timing;
  timing["grid"] = seconds.grid;  // keys, sort and cell table
  timing["sort"] = seconds.sort;
  timing["gather"] = seconds.gather;
  timing["rules"] = seconds.rules;
  return timing;
}

}  // namespace

void register_flock(py::module_& m) {
  m.def("flock_step", &step, py::arg("pos"), py::arg("vel"), py::arg("pos_out").noconvert(),
        py::arg("vel_out").noconvert(), py::arg("constants"), py::arg("search"), py::arg("cell_width"),
        py::arg("threads") = 0, py::arg("simd") = "",
        "One boids step (float32 (n, 3) arrays; constants from FlockParameters.constants()). "
        "Writes pos_out/vel_out; returns the seconds spent on the grid (of which the sort), "
        "the gather and the rules. threads=0 uses all cores; simd='' picks ORRERY_SIMD or the widest level (the coherent search's loop is vectorised).");
}

}  // namespace orrery
