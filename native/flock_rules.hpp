// Boids (Reynolds flocking): the data every neighbour search shares and the per-boid finish
// (steps 3-4), so that a search only decides which boids are visited, never what a visit adds
// (the study's accumulateNeighbor / finalizeVelocityChange split; steps 1-2, the visit, are
// the SIMD loop of flock_kernel.hpp). The same steps, in the same words, are in
// engine/flock/reference.py and engine/flock/kernels/flock.cl.
//
// Determinism: positions lie on a fixed-point grid (FlockConstants::quantum) and velocities on
// another, so an offset p_j - p_i is exact in float32 and the neighbour sums are exact in
// float64. A boid's result therefore does not depend on the order its neighbours are visited in:
// the three searches, any thread count, and the device kernels give the same bits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace orrery {

// What a step needs, as engine/flock/_parameters.py FlockParameters.constants() computes it.
struct FlockConstants {
  float world, half_world;
  float separation_radius2, alignment_radius2, cohesion_radius2;
  double separation_weight, alignment_weight, cohesion_weight;
  double max_speed, dt, quantum, velocity_quantum;
  int grid;  // cells per axis
  float inverse_cell_width;
};

// One boid's neighbour sums (exact) and counts.
struct FlockSums {
  double separation[3] = {0, 0, 0};
  double cohesion[3] = {0, 0, 0};
  double alignment[3] = {0, 0, 0};
  long cohesion_count = 0;
  long alignment_count = 0;
};

// What the per-ISA neighbour loop (flock_kernel.hpp) reads and writes.
struct FlockLoopInput {
  const float *x, *y, *z, *vx, *vy, *vz;  // gathered in cell order, padded by 16 readable entries
                                          // (coherent and naive searches)
  const float* pos;                       // (n, 3) in boid order (scattered search)
  const float* vel;
  const std::uint32_t* start;             // the grid's cell table (unused when all_pairs)
  const std::uint32_t* order;             // sorted position -> boid index
  std::size_t n;
  bool all_pairs;                         // the naive search: one run over every boid
  FlockConstants constants;
  int cell_width;
  float* pos_out;  // (n, 3) in boid order
  float* vel_out;
};

// Internal linkage: every simd_*.cpp compiles its own copy with its own flags, so the linker can
// never hand the baseline path a copy built for a wider instruction set.
namespace {

inline double quantise(double x, double quantum) { return std::nearbyint(x * (1.0 / quantum)) * quantum; }

// Steps 3-4: the new velocity and position of the boid with position p and velocity v.
inline void finish(const FlockSums& s, const FlockConstants& c, const float p[3], const float v[3],
                   float p_out[3], float v_out[3]) {
  double a[3], w[3];
  for (int k = 0; k < 3; ++k) {
    a[k] = -(c.separation_weight * s.separation[k]);
    if (s.cohesion_count > 0)
      a[k] = a[k] + c.cohesion_weight * (s.cohesion[k] / double(s.cohesion_count));
    if (s.alignment_count > 0)
      a[k] = a[k] + c.alignment_weight * (s.alignment[k] / double(s.alignment_count) - double(v[k]));
    w[k] = double(v[k]) + c.dt * a[k];
  }
  const double s2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
  if (s2 > c.max_speed * c.max_speed) {
    const double scale = c.max_speed / std::sqrt(s2);
    for (double& x : w) x = x * scale;
  }
  const double world = c.world;
  for (int k = 0; k < 3; ++k) {
    v_out[k] = float(quantise(w[k], c.velocity_quantum));
    double x = double(p[k]) + c.dt * double(v_out[k]);
    if (x < 0) x = x + world;
    if (x >= world) x = x - world;
    x = quantise(x, c.quantum);
    if (x >= world) x = x - world;
    p_out[k] = float(x);
  }
}

}  // namespace

}  // namespace orrery
