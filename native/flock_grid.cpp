// The boids' uniform grid (see flock_grid.hpp).
#include "flock_grid.hpp"

#include <algorithm>
#include <chrono>

#include "morton.hpp"
#include "parallel.hpp"

namespace orrery {
namespace {

// The cell of coordinate x in [0, world): monotonic in x, so boids that are within a cell
// width of each other land in the same or adjacent cells.
inline int cell_of(float x, const FlockConstants& c) {
  return axis_cell(x * c.inverse_cell_width, c.grid);
}

}  // namespace

void FlockGrid::build(const float* pos, std::size_t count, const FlockConstants& c, unsigned threads) {
  n = count;
  keys_.resize(n);
  order.resize(n);
  const std::uint64_t g = static_cast<std::uint64_t>(c.grid);
  ThreadPool::instance().parallel_for(n, 16384, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float* p = pos + 3 * i;
      keys_[i] = (std::uint64_t(cell_of(p[2], c)) * g + std::uint64_t(cell_of(p[1], c))) * g +
                 std::uint64_t(cell_of(p[0], c));
      order[i] = static_cast<std::uint32_t>(i);
    }
  });
  const auto sort_begin = std::chrono::steady_clock::now();
  const std::size_t cells = static_cast<std::size_t>(g * g * g);
  int key_bits = 1;  // the bits of the largest key, cells - 1 (at most 30)
  while (key_bits < 64 && (cells - 1) >> key_bits) ++key_bits;
  sort_keys(keys_, order, key_scratch_, order_scratch_, threads, key_bits);
  sort_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sort_begin).count();
  // Cell c starts where the first key >= c sits: each sorted position fills the cells between
  // its predecessor's key and its own, so every cell (empty ones too) is written exactly once.
  start.resize(cells + 1);
  ThreadPool::instance().parallel_for(n + 1, 16384, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const std::size_t previous = k == 0 ? 0 : static_cast<std::size_t>(keys_[k - 1]) + 1;
      const std::size_t own = k == n ? cells : static_cast<std::size_t>(keys_[k]);
      for (std::size_t cell = previous; cell <= own && cell <= cells; ++cell)
        start[cell] = static_cast<std::uint32_t>(k);
    }
  });
}

void FlockGrid::gather(const float* pos, const float* vel, unsigned threads) {
  stride = n + kGatherPadding;
  sorted.assign(6 * stride, 0.0f);
  float* out = sorted.data();
  ThreadPool::instance().parallel_for(n, 16384, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const std::size_t i = order[k];
      for (int a = 0; a < 3; ++a) {
        out[a * stride + k] = pos[3 * i + a];
        out[(3 + a) * stride + k] = vel[3 * i + a];
      }
    }
  });
}

void FlockGrid::identity(std::size_t count) {
  n = count;
  order.resize(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
}

}  // namespace orrery
