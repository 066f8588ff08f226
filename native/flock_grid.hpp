// The uniform grid behind the scattered and coherent searches.
//
// build(): every boid's cell key (z-major: (cz * G + cy) * G + cx), the boid indices sorted by
// key with morton.cpp's radix sort (stable: a cell lists its boids in index order), and the
// cell table, start[c] .. start[c + 1] being cell c's run in the sorted order (start has G^3 + 1
// entries; empty cells have start[c] == start[c + 1]). gather() then copies positions and
// velocities into that order as structure-of-arrays for the coherent search.
//
// visit_cells(): the cells one boid visits, as runs of consecutive keys: with cell width 1 the
// 3 x 3 x 3 block around its cell, with width 2 the 2 x 2 x 2 block towards its position in
// the cell; periodic, and without repeats when the grid has fewer than 3 (or 2) cells a side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "flock_rules.hpp"

namespace orrery {

constexpr std::size_t kGatherPadding = 16;  // the widest level's lanes

struct CellRun {
  std::uint32_t first_cell, end_cell;  // keys [first_cell, end_cell)
};

class FlockGrid {
 public:
  void build(const float* pos, std::size_t n, const FlockConstants& c, unsigned threads);
  void gather(const float* pos, const float* vel, unsigned threads);
  // The naive search's layout: order = 0 .. n-1 (no keys, no cell table), then gather().
  void identity(std::size_t count);

  // Writes at most 27 runs, returns how many.
  static int visit_cells(const FlockConstants& c, int cell_width, float x, float y, float z,
                         CellRun* runs);

  std::vector<std::uint32_t> order;  // sorted position -> boid index
  std::vector<std::uint32_t> start;  // cell -> first sorted position
  // gathered (coherent search): x, y, z, vx, vy, vz, each `stride` values (n, then zeros up
  // to kGatherPadding, so a full vector of lanes may be loaded at any j < n)
  std::vector<float> sorted;
  std::size_t stride = 0;
  std::size_t n = 0;
  double sort_seconds = 0;

 private:
  std::vector<std::uint64_t> keys_, key_scratch_;
  std::vector<std::uint32_t> order_scratch_;
};

}  // namespace orrery
