// cpu-fmm: Cartesian fast multipole method on cpu-tree's octree (docs/adr/0110).
// Stages: Morton keys and sort (morton.cpp), topology (octree.cpp), the dual
// walk's interaction lists (fmm_lists.cpp), upward pass (P2M at leaves, M2M by tree depth),
// M2L per target cell, downward pass (L2L by depth), and P2P with L2P at the leaves: each leaf
// pair once for both leaves (fmm_p2p_kernel.hpp, docs/fmm-tuning-log.md#0161), then each body's far field.
// Expansions are about the centres of the nodes' key boxes (fmm_lists.hpp), which depend only
// on the keys; expansion arithmetic is in double at both precisions, the
// particle sums in T, except M2L with float expansions (docs/fmm-tuning-log.md#0165): the signed multipoles
// rounded to float, the cell pairs in float lanes, each local widened back to double.
// Determinism: every output is written in an order fixed by the tree and the lists, never by
// the threads. A cell's expansion and a body's far field are written by one task that adds its
// inputs in list order. A mutual P2P pair writes two leaves, so the leaves are cut into groups
// of consecutive leaves (a fixed body count, not a thread count): one task per group evaluates
// the pairs whose lower leaf is in it, in leaf order, adding the other leaf's half into that
// leaf's sums when it is in the group and into a slot of the group's own otherwise; no two tasks
// write the same place. Then each leaf adds its slots in group order. No atomics, no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "fmm_expansions.hpp"
#include "fmm_lists.hpp"
#include "simd.hpp"

namespace orrery {

// Wall-clock seconds of the last evaluation's stages.
struct FmmStageSeconds {
  double sort = 0, build = 0, walk = 0, upward = 0, m2l = 0, p2p = 0, downward = 0;
};

// What the last evaluation did.
struct FmmStats {
  FmmStageSeconds stages;
  std::size_t m2l_interactions = 0;
  std::uint64_t particle_particle = 0;
  std::size_t nodes = 0, leaves = 0;
  int depth = 0, terms = 0;
  int expansion_bits = 64;             // of M2L's multipoles: 32 with float expansions
  std::size_t m2l_redone_in_double = 0;  // float expansions: targets whose float M2L was not finite
};

// Throw std::invalid_argument for parameters out of range (softening < 0, theta outside [0, 1),
// an order outside 1 .. kFmmMaxOrder, a leaf capacity below 1; a heavy share outside [0, 1)).
void check_fmm_parameters(double softening, double theta, int order, std::size_t leaf_capacity);
void check_heavy_share(double heavy_share);

template <typename T>
class FmmPasses;

// One solver's buffers and tables, kept across evaluations (its passes are in fmm.cpp).
template <typename T>
class FmmEngine {
 public:
  FmmEngine();
  ~FmmEngine();
  FmmEngine(const FmmEngine&) = delete;
  FmmEngine& operator=(const FmmEngine&) = delete;

  // Accelerations acc (n, 3) and, where pot is not null, potentials pot (n,) of the n particles
  // pos (n, 3), mass (n,), in the caller's order (G = 1). float_expansions runs M2L in float
  // lanes (the other expansion stages stay in double); heavy_share > 0 opens pairs with a node
  // holding more than that share of the bodies at a smaller angle (fmm_lists.hpp). `threads` is
  // the count to use (not 0).
  void evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta, int order,
                double heavy_share, std::size_t leaf_capacity, bool float_expansions, unsigned threads,
                const SimdKernels& kernels, T* acc, T* pot);

  FmmStats stats() const;

  // The last evaluation's interaction lists, depth order and centres (fmm_lists.hpp).
  const FmmLists& lists() const;

 private:
  std::unique_ptr<FmmPasses<T>> passes_;
};

extern template class FmmEngine<float>;
extern template class FmmEngine<double>;

}  // namespace orrery
