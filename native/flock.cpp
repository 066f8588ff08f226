// Boids on the CPU: one flocking step with one of three neighbour searches, on all requested
// threads, the GIL released. Every search runs the same per-ISA neighbour loop
// (flock_kernel.hpp) and the same finish() (flock_rules.hpp), whose exact sums make the result
// independent of visiting order, search, SIMD level and thread count.
//
//  naive           every boid visits every other boid: O(N^2), the yardstick (in SIMD lanes over
//                  a structure-of-arrays copy, as the coherent search)
//  scattered-grid  the grid's cell runs, neighbours gathered (SIMD gathers) from the boid-order
//                  arrays through the sorted index array
//  coherent-grid   the same runs over positions and velocities gathered into cell order first,
//                  so the loop reads contiguous memory
//
// State stays in boid order: the step reads pos/vel and writes pos_out/vel_out (no aliasing).
#include <cstring>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "flock_grid.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "stage_clock.hpp"

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
  if (c.grid < 1 || c.grid > 1024) throw std::invalid_argument("grid must be 1 .. 1024 cells a side");
  return c;
}

// Boids per chunk a thread takes: small enough to balance clustered flocks.
constexpr std::size_t kChunk = 512;

void step_scattered(const float* pos, const float* vel, const FlockGrid& grid, int cell_width,
                    const FlockConstants& c, float* pos_out, float* vel_out,
                    const SimdKernels& kernels, unsigned threads) {
  const FlockLoopInput in{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, pos, vel,
                          grid.start.data(), grid.order.data(), grid.n, false, c, cell_width,
                          pos_out, vel_out};
  ThreadPool::instance().parallel_for(grid.n, kChunk, threads, [&](std::size_t begin, std::size_t end) {
    kernels.flock_scattered(in, begin, end);
  });
}

// The coherent search, or with all_pairs the naive one (over the boids in index order).
void step_gathered(const FlockGrid& grid, bool all_pairs, int cell_width, const FlockConstants& c,
                   float* pos_out, float* vel_out, const SimdKernels& kernels, unsigned threads) {
  const float* x = grid.sorted.data();
  const std::size_t stride = grid.stride;
  const FlockLoopInput in{x, x + stride, x + 2 * stride, x + 3 * stride, x + 4 * stride,
                          x + 5 * stride, nullptr, nullptr, grid.start.data(), grid.order.data(),
                          grid.n, all_pairs, c, cell_width, pos_out, vel_out};
  const std::size_t chunk = all_pairs ? kChunk / 8 : kChunk;
  ThreadPool::instance().parallel_for(grid.n, chunk, threads, [&](std::size_t begin, std::size_t end) {
    kernels.flock_gathered(in, begin, end);
  });
}

// One grid per process thread calling in: the Python layer serialises steps of one flock.
FlockGrid& grid_for_thread() {
  thread_local FlockGrid grid;
  return grid;
}

py::dict flock_step(const CArray<float>& pos, const CArray<float>& vel, CArray<float>& pos_out,
                    CArray<float>& vel_out, const py::dict& constants, const std::string& search,
                    int cell_width, unsigned threads, const std::string& simd) {
  if (pos.ndim() != 2 || pos.shape(1) != 3) throw std::invalid_argument("positions must have shape (n, 3)");
  const std::size_t n = static_cast<std::size_t>(pos.shape(0));
  for (const py::array* a : {static_cast<const py::array*>(&vel), static_cast<const py::array*>(&pos_out),
                             static_cast<const py::array*>(&vel_out)})
    if (a->ndim() != 2 || a->shape(0) != pos.shape(0) || a->shape(1) != 3)
      throw std::invalid_argument("velocities and outputs must have the positions' shape (n, 3)");
  if (pos_out.data() == pos.data() || vel_out.data() == vel.data())
    throw std::invalid_argument("outputs must not be the inputs");
  if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("at most 2^31 - 1 boids");
  if (search != "naive" && search != "scattered-grid" && search != "coherent-grid")
    throw std::invalid_argument("search must be naive, scattered-grid or coherent-grid, got '" + search + "'");
  if (cell_width != 1 && cell_width != 2) throw std::invalid_argument("cell_width must be 1 or 2");
  const FlockConstants c = constants_from(constants);
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  if (threads == 0) threads = ThreadPool::hardware_threads();
  const float* p = pos.data();
  const float* v = vel.data();
  float* po = pos_out.mutable_data();
  float* vo = vel_out.mutable_data();
  double grid_seconds = 0, sort_seconds = 0, gather_seconds = 0, rules_seconds = 0;
  {
    py::gil_scoped_release release;
    FlockGrid& grid = grid_for_thread();
    auto start = StageClock::now();
    if (search == "naive") {
      grid.identity(n);
    } else {
      grid.build(p, n, c, threads);
      grid_seconds = seconds_since(start);
      sort_seconds = grid.sort_seconds;
    }
    if (search != "scattered-grid") {
      start = StageClock::now();
      grid.gather(p, v, threads);
      gather_seconds = seconds_since(start);
    }
    start = StageClock::now();
    if (search == "scattered-grid")
      step_scattered(p, v, grid, cell_width, c, po, vo, kernels, threads);
    else
      step_gathered(grid, search == "naive", cell_width, c, po, vo, kernels, threads);
    rules_seconds = seconds_since(start);
  }
  py::dict timing;
  timing["grid"] = grid_seconds;  // keys, sort and cell table
  timing["sort"] = sort_seconds;
  timing["gather"] = gather_seconds;
  timing["rules"] = rules_seconds;
  return timing;
}

}  // namespace

void register_flock(py::module_& m) {
  m.def("flock_step", &flock_step, py::arg("pos"), py::arg("vel"), py::arg("pos_out").noconvert(),
        py::arg("vel_out").noconvert(), py::arg("constants"), py::arg("search"), py::arg("cell_width"),
        py::arg("threads") = 0, py::arg("simd") = "",
        "One boids step (float32 (n, 3) arrays; constants from FlockParameters.constants()). "
        "Writes pos_out/vel_out; returns the seconds spent on the grid (of which the sort), "
        "the gather and the rules. threads=0 uses all cores; simd='' picks ORRERY_SIMD or the widest level (the coherent search's loop is vectorised).");
}

}  // namespace orrery
