// Boids on the CPU (flock.hpp): one step with one of three neighbour searches.
#include "flock.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "flock_grid.hpp"
#include "parallel.hpp"
#include "stage_clock.hpp"

namespace orrery {
namespace {

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

}  // namespace

FlockSearch flock_search(const std::string& name) {
  if (name == "naive") return FlockSearch::naive;
  if (name == "scattered-grid") return FlockSearch::scattered_grid;
  if (name == "coherent-grid") return FlockSearch::coherent_grid;
  throw std::invalid_argument("search must be naive, scattered-grid or coherent-grid, got '" + name + "'");
}

FlockStageSeconds flock_step(const float* p, const float* v, std::size_t n, const FlockConstants& c,
                             FlockSearch search, int cell_width, unsigned threads, const SimdKernels& kernels,
                             float* po, float* vo) {
  if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("at most 2^31 - 1 boids");
  if (cell_width != 1 && cell_width != 2) throw std::invalid_argument("cell_width must be 1 or 2");
  if (c.grid < 1 || c.grid > 1024) throw std::invalid_argument("grid must be 1 .. 1024 cells a side");
  if (threads == 0) threads = ThreadPool::hardware_threads();
  FlockStageSeconds seconds;
  FlockGrid& grid = grid_for_thread();
  auto start = StageClock::now();
  if (search == FlockSearch::naive) {
    grid.identity(n);
  } else {
    grid.build(p, n, c, threads);
    seconds.grid = seconds_since(start);
    seconds.sort = grid.sort_seconds;
  }
  if (search != FlockSearch::scattered_grid) {
    start = StageClock::now();
    grid.gather(p, v, threads);
    seconds.gather = seconds_since(start);
  }
  start = StageClock::now();
  if (search == FlockSearch::scattered_grid)
    step_scattered(p, v, grid, cell_width, c, po, vo, kernels, threads);
  else
    step_gathered(grid, search == FlockSearch::naive, cell_width, c, po, vo, kernels, threads);
  seconds.rules = seconds_since(start);
  return seconds;
}

}  // namespace orrery
