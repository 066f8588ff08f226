// The uniform grid behind the scattered and coherent searches.
//
// build(): every boid's cell key (z-major: (cz * G + cy) * G + cx), the boid indices sorted by
// key with morton.cpp's radix sort (stable: a cell lists its boids in index order), and the
// cell table, start[c] .. start[c + 1] being cell c's run in the sorted order (start has G^3 + 1
// entries; empty cells have start[c] == start[c + 1]). gather() then copies positions and
// velocities into that order as structure-of-arrays for the coherent search.
//
// visit_cells(): the cells one boid visits, as runs of consecutive keys.
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

// Internal linkage, as in flock_rules.hpp: each instruction-set unit inlines its own copy.
namespace {

// The cell of a coordinate already scaled by 1 / cell width. Coordinates lie in [0, world)
// (FlockSimulation wraps them); anything else, NaN included, is clamped to a valid cell so
// that bad input can never index outside the cell table.
inline int axis_cell(float scaled, int grid) {
  if (!(scaled >= 0.0f)) return 0;
  if (!(scaled < float(grid))) return grid - 1;
  return static_cast<int>(scaled);
}

// Which cells a boid at x visits on one axis, as a number: its own cell times 2, plus 1 when
// the cell-width-2 layout takes the upper neighbour. Boids with equal codes on all three axes
// visit the same cells (the coherent loop reuses the runs of the boid before).
inline int axis_code(float x, const FlockConstants& c, int cell_width) {
  const float scaled = x * c.inverse_cell_width;
  const int own = axis_cell(scaled, c.grid);
  return 2 * own + (cell_width == 2 && !(scaled - float(own) < 0.5f) ? 1 : 0);
}

// The distinct cells on one axis for a code, lowest first; returns how many.
inline int axis_cells(int code, int grid, int cell_width, int cells[3]) {
  const int own = code >> 1;
  if (grid == 1) {
    cells[0] = own;
    return 1;
  }
  if (cell_width == 2 || grid == 2) {
    int other = grid == 2 ? 1 - own : (code & 1) ? own + 1 : own - 1;
    if (other < 0) other += grid;
    if (other >= grid) other -= grid;
    cells[0] = own < other ? own : other;
    cells[1] = own < other ? other : own;
    return 2;
  }
  if (own == 0) {
    cells[0] = 0, cells[1] = 1, cells[2] = grid - 1;
  } else if (own == grid - 1) {
    cells[0] = 0, cells[1] = grid - 2, cells[2] = grid - 1;
  } else {
    cells[0] = own - 1, cells[1] = own, cells[2] = own + 1;
  }
  return 3;
}

// The cells a boid with axis codes (cx, cy, cz) visits, as runs of consecutive keys: with cell
// width 1 the 3 x 3 x 3 block around its cell, with width 2 the 2 x 2 x 2 block towards its
// position in the cell; periodic, and without repeats when the grid has fewer than 3 (or 2)
// cells a side. Writes at most 27 runs, returns how many.
inline int visit_cells(const FlockConstants& c, int cell_width, int cx, int cy, int cz,
                       CellRun* runs) {
  int xs[3], ys[3], zs[3];
  const int nx = axis_cells(cx, c.grid, cell_width, xs);
  const int ny = axis_cells(cy, c.grid, cell_width, ys);
  const int nz = axis_cells(cz, c.grid, cell_width, zs);
  const std::uint32_t g = static_cast<std::uint32_t>(c.grid);
  int count = 0;
  for (int iz = 0; iz < nz; ++iz) {
    for (int iy = 0; iy < ny; ++iy) {
      const std::uint32_t row = (std::uint32_t(zs[iz]) * g + std::uint32_t(ys[iy])) * g;
      // Cells adjacent along x are adjacent in key order: one run instead of several.
      int ix = 0;
      while (ix < nx) {
        int last = ix;
        while (last + 1 < nx && xs[last + 1] == xs[last] + 1) ++last;
        runs[count++] = CellRun{row + std::uint32_t(xs[ix]), row + std::uint32_t(xs[last]) + 1};
        ix = last + 1;
      }
    }
  }
  return count;
}

}  // namespace

}  // namespace orrery
