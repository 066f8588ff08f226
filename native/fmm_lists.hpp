// The FMM's dual tree walk: which node pairs interact through their expansions (M2L) and which
// leaf pairs pair by pair (P2P), plus the tree's parent links and depth ordering that the upward
// and downward passes follow. One algorithm for both FMM solvers: cpu-fmm calls it on its host
// tree, gpu-fmm on the topology of the device-built tree (the same tree, ADR-0010), so both
// evaluate the same lists.
//
// Opening criterion (docs/adr/0110), on integer geometry only: a node's box is the smallest box
// of finest Morton cells (2^-21 of the cube) holding all its bodies' keys; c is its centre and r
// its half diagonal, so every body lies within r of c. Nodes A and B interact through
// expansions when theta * |c_A - c_B| > r_A + r_B (then the Taylor series about c_A and c_B
// converge: the bodies' offsets sum to less than theta times the distance). The boxes come from
// the keys alone, so the lists depend only on the keys, the topology and theta, never on how a
// device rounded a centre of mass; expansions are about the box centres.
//
// Heavy nodes (docs/fmm-tuning-log.md#0189): a pair whose larger node holds more than a share of all bodies
// (`heavy` of them) takes a smaller angle, theta * 2^(-(k+1)/(p+1)) for c bodies with
// floor(log2(c / heavy)) = k: its expansion error, about rho^(p+1) of its pull, is the largest
// part of a target's force where one node pulls most of it (a Plummer sphere's outskirts,
// pulled by a node holding its core), so it is held to share / (c / N) of that. Counts are
// integers and the angles one table the host computes, so both walks decide alike.
//
// Walk (Dehnen 2002, ExaFMM's horizontalPass): interact(A, A) splits A into all pairs of its
// children (each unordered pair once); interact(A, B) for A != B emits M2L when the criterion
// holds, P2P when both are leaves, else splits the larger cell (the one at the coarser level;
// a leaf is never split). Each unordered pair is visited once; the lists store it in both
// directions, gathered by target: the P2P lists sorted by source index, the M2L lists in the
// walk's order (a fixed split into tasks, each walked depth first: sorting 2.6 M entries took
// half the walk's time at N = 262144), so every target sums its sources in one fixed order (no
// atomics, the same sums on any thread count). The lists' public view (fmm_lists, cpu-fmm's
// last_lists) has the M2L lists sorted too, as gpu-fmm's device walk makes them: the same
// lists entry for entry, summed in another order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "morton.hpp"

namespace orrery {

struct FmmLists {
  std::vector<std::uint32_t> m2l_start, m2l_source;  // sources of node i: [m2l_start[i], m2l_start[i+1]), walk order
  std::vector<std::uint32_t> p2p_start, p2p_source;  // other leaves of leaf node i (not itself), ascending
  std::vector<std::uint32_t> leaves;                  // leaf nodes in index order
  std::vector<std::uint32_t> parent;                  // parent of each node (the root's is itself)
  std::vector<std::uint32_t> depth_start, by_depth;   // nodes of tree depth d: by_depth[depth_start[d] ..]
  std::vector<double> centre;  // expansion centre of each node (3 per node): its box centre
};

// The criterion's squared angles: theta2 for every pair, heavy_theta2[k] for a pair whose larger
// node holds c > heavy bodies with floor(log2(c / heavy)) = k (heavy 0: no node is heavy).
struct FmmOpening {
  double theta2 = 0.0;
  std::uint32_t heavy = 0;
  std::array<double, 32> heavy_theta2{};
};

// The angles of theta at expansion order `order` for `bodies` bodies, heavy_share of which make
// a node heavy (0: none does).
FmmOpening fmm_opening(double theta, int order, double heavy_share, std::size_t bodies);

// The walk tasks' pair lists, kept from one call to the next by a caller that walks again
// (cpu-fmm, every evaluation), so that they are neither regrown nor faulted in afresh.
struct FmmWalkStorage {
  std::vector<std::vector<std::uint64_t>> m2l, p2p;  // per task: unordered pairs, (a << 32) | b
};

// skip: one past each node's subtree (depth-first layout); count: each node's bodies (read only
// with heavy nodes); leaf_box: 6 per node, read for leaves only: the smallest and largest
// quantised coordinates of its bodies' keys (x, y, z, then x, y, z; morton.hpp); cube: the cube
// the keys quantise. Fills `lists` (its buffers reused).
void fmm_interaction_lists(const std::uint32_t* skip, const std::uint32_t* count, const std::uint32_t* leaf_box,
                           std::size_t nodes, const BoundingCube& cube, const FmmOpening& opening, unsigned threads,
                           FmmWalkStorage& storage, FmmLists& lists);

// Sorts each target's sources: [start[i], start[i+1]) of `source`, ascending.
void sort_sources(const std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source, unsigned threads);

// The leaf_box rows of one leaf from its bodies' sorted keys [first, first + count).
void fmm_leaf_box(const std::uint64_t* keys, std::size_t first, std::size_t count, std::uint32_t box[6]);

}  // namespace orrery
