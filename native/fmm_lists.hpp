// The FMM's dual tree walk: which cell pairs interact through their expansions (M2L) and which
// leaf pairs pair by pair (P2P), plus the tree's parent links and depth ordering that the upward
// and downward passes follow. One algorithm for both FMM solvers: cpu-fmm calls it on its host
// tree, gpu-fmm on the topology of the device-built tree (the same tree, ADR-0010), so both
// evaluate the same lists.
//
// Opening criterion (docs/adr/0080), on the cells' geometry only: cells A and B interact
// through expansions when theta * |c_A - c_B| > r_A + r_B, with c the cell's geometric centre and
// r = (sqrt 3 / 2) side its half diagonal. Evaluated exactly, in units of the finest Morton cell
// (integers below 2^22, squares below 2^46: exact in double), so the lists depend only on the
// keys, the topology and theta, never on how a device rounded a centre of mass.
//
// Walk (Dehnen 2002, ExaFMM's horizontalPass): interact(A, A) splits A into all pairs of its
// children (each unordered pair once); interact(A, B) for A != B emits M2L when the criterion
// holds, P2P when both are leaves, else splits the larger cell (the one at the coarser level;
// a leaf is never split). Each unordered pair is visited once; the lists store it in both
// directions, gathered by target and sorted by source index, so every target sums its sources
// in one fixed order (no atomics, the same sums on any thread count or device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "morton.hpp"

namespace orrery {

struct FmmLists {
  std::vector<std::uint32_t> m2l_start, m2l_source;  // sources of node i: [m2l_start[i], m2l_start[i+1])
  std::vector<std::uint32_t> p2p_start, p2p_source;  // other leaves of leaf node i (not itself)
  std::vector<std::uint32_t> leaves;                  // leaf nodes in index order
  std::vector<std::uint32_t> parent;                  // parent of each node (the root's is itself)
  std::vector<std::uint32_t> depth_start, by_depth;   // nodes of tree depth d: by_depth[depth_start[d] ..]
  std::vector<double> centre;  // expansion centre of each node (3 per node): its cell's geometric centre
};

// skip: one past each node's subtree (depth-first layout); level: each node's cell level;
// cell_key: a Morton key inside each node's cell; cube: the cube the keys quantise.
template <typename Level>
FmmLists fmm_interaction_lists(const std::uint32_t* skip, const Level* level, const std::uint64_t* cell_key,
                               std::size_t nodes, const BoundingCube& cube, double theta, unsigned threads);

}  // namespace orrery
