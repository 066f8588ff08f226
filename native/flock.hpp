// Boids on the CPU: one flocking step with one of three neighbour searches, on all requested
// threads. Every search runs the same per-ISA neighbour loop (flock_kernel.hpp) and the same
// finish() (flock_rules.hpp), whose exact sums make the result independent of visiting order,
// search, SIMD level and thread count.
//
//  naive           every boid visits every other boid: O(N^2), the yardstick (in SIMD lanes over
//                  a structure-of-arrays copy, as the coherent search)
//  scattered-grid  the grid's cell runs, neighbours gathered (SIMD gathers) from the boid-order
//                  arrays through the sorted index array
//  coherent-grid   the same runs over positions and velocities gathered into cell order first,
//                  so the loop reads contiguous memory
//
// State stays in boid order: the step reads pos/vel and writes pos_out/vel_out (no aliasing).
#pragma once

#include <cstddef>
#include <string>

#include "flock_rules.hpp"
#include "simd.hpp"

namespace orrery {

enum class FlockSearch { naive, scattered_grid, coherent_grid };

// The search of this name (naive, scattered-grid or coherent-grid); throws std::invalid_argument
// for another.
FlockSearch flock_search(const std::string& name);

// Seconds a step spent on the grid (keys, sort and cell table; of which the sort), the gather
// and the rules.
struct FlockStageSeconds {
  double grid = 0, sort = 0, gather = 0, rules = 0;
};

// One step of the n boids pos, vel (n, 3) into pos_out, vel_out (n, 3), which must not be the
// inputs. One grid per calling thread is kept between steps: steps of one flock are serialised
// by the caller. threads = 0 uses every hardware thread.
FlockStageSeconds flock_step(const float* pos, const float* vel, std::size_t n, const FlockConstants& constants,
                             FlockSearch search, int cell_width, unsigned threads, const SimdKernels& kernels,
                             float* pos_out, float* vel_out);

}  // namespace orrery
