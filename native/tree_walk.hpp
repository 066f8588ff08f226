// The Barnes-Hut walk: the particles of a group walk the tree together (docs/adr/0011).
//
// A group is the first node met in depth-first order that holds at most group_capacity
// particles (or a leaf over capacity, when its particles coincide); its targets are that
// subtree's particles. A node is accepted for the whole group when the squared distance from the
// node's centre of mass to the group's bounding box exceeds the node's open2, i.e.
// d > side/theta + |com - cell centre| (Salmon & Warren's b_max guard, so a centre of mass near
// its cell's edge cannot sit too close to a target). Accepted nodes join the group's list of
// cells, opened leaves outside the group the list of particles, and the group's own particles
// are summed pair by pair without self-interactions. The walk follows skip indices, so it keeps
// no stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simd_kernels.hpp"
#include "octree.hpp"
#include "parallel.hpp"

namespace orrery {

// Most particles that share one walk, unless a leaf over capacity holds more (see the sweep in
// docs/performance.md).
constexpr std::size_t kDefaultGroupCapacity = 256;

template <typename T>
struct SortedParticles {
  std::vector<T> x, y, z, m;
};

// Particle k of `sorted` is caller particle order[k] (positions xyz-interleaved, n of them): the
// gather after the Morton sort, shared by the tree and the FMM.
template <typename T>
void gather_sorted(const T* pos, const T* mass, const std::uint32_t* order, std::size_t n,
                   unsigned threads, SortedParticles<T>& sorted) {
  for (auto* v : {&sorted.x, &sorted.y, &sorted.z, &sorted.m}) v->resize(n);
  ThreadPool::instance().parallel_for(n, 16384, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const std::size_t i = order[k];
      sorted.x[k] = pos[3 * i];
      sorted.y[k] = pos[3 * i + 1];
      sorted.z[k] = pos[3 * i + 2];
      sorted.m[k] = mass[i];
    }
  });
}

struct WalkCounts {
  std::uint64_t particle_particle = 0;  // pairwise terms evaluated (i != j)
  std::uint64_t particle_cell = 0;      // cell terms evaluated
};

// Accelerations (and potentials when pot != nullptr) written in the caller's order:
// particle k of the sorted arrays is caller particle order[k]. The interactions run on the tree
// kernels of `kernels` (one SIMD level's table, simd.hpp). Groups are shared among
// `threads` threads in dynamic chunks; each group's arithmetic is fixed, so results do not depend
// on the thread count.
template <typename T>
WalkCounts walk_tree(const Octree<T>& tree, const SortedParticles<T>& particles, const std::uint32_t* order,
                     T eps2, bool quadrupole, std::size_t group_capacity, unsigned threads,
                     const SimdKernels& kernels, T* acc, T* pot);

}  // namespace orrery
