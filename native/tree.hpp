// cpu-tree: Barnes-Hut gravity, rebuilt every evaluation: Morton keys and radix sort
// (morton.cpp), depth-first octree and moments (octree.cpp), group walk (tree_walk.cpp).
// Cost about N log N; accuracy set by the opening angle theta (theta = 0 is direct summation).
// The interaction kernels run on the SIMD level chosen at run time, as cpu-direct's (simd.hpp).
// The host tree build alone (TreeEngine::build) lets the GPU tree be compared node for node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "octree.hpp"
#include "simd.hpp"
#include "tree_walk.hpp"

namespace orrery {

// Wall-clock seconds of the last evaluation's stages.
struct TreeStageSeconds {
  double sort = 0, build = 0, moments = 0, walk = 0;
};

// Throws std::invalid_argument for a negative softening or theta or a capacity below 1.
void check_tree_parameters(double softening, double theta, std::size_t leaf_capacity,
                           std::size_t group_capacity = kDefaultGroupCapacity);

// One solver's buffers, kept across evaluations so that large arrays are not reallocated.
// Nothing else carries over: seeding the sort with the last order was measured slower
// (docs/performance.md), so every evaluation starts from the caller's order. `threads` is the
// count to use (not 0).
template <typename T>
class TreeEngine {
 public:
  // The tree of the n particles pos (n, 3), mass (n,): sorted, built, moments computed.
  void build(const T* pos, const T* mass, std::size_t n, std::size_t leaf_capacity, double theta,
             bool quadrupole, unsigned threads);

  // Accelerations acc (n, 3) and, where pot is not null, potentials pot (n,), in the caller's
  // order (G = 1).
  void evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta, bool quadrupole,
                std::size_t leaf_capacity, std::size_t group_capacity, unsigned threads, const SimdKernels& kernels,
                T* acc, T* pot);

  const TreeStageSeconds& stages() const { return stages_; }
  const WalkCounts& counts() const { return counts_; }
  std::size_t particles() const { return n_; }
  const Octree<T>& tree() const { return tree_; }
  const std::vector<std::uint32_t>& order() const { return order_; }
  const std::vector<std::uint64_t>& keys() const { return keys_; }

 private:
  std::vector<std::uint32_t> order_, order_scratch_;
  std::vector<std::uint64_t> keys_, key_scratch_;
  SortedParticles<T> sorted_;
  Octree<T> tree_;
  TreeStageSeconds stages_;
  WalkCounts counts_;
  std::size_t n_ = 0;
};

extern template class TreeEngine<float>;
extern template class TreeEngine<double>;

}  // namespace orrery
