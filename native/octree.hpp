// The Barnes-Hut octree: one array of nodes in depth-first order, no pointers.
//
// A node's first child (if any) is the node right after it; `skip` is one past its subtree, so a
// walk that accepts a node jumps to `skip` and one that opens it steps to the next index, and no
// stack is needed. A node is a leaf exactly when skip == its own index + 1. Every node covers the
// contiguous run [first, first + count) of the key-sorted particles. docs/adr/0010 fixes this
// layout, which the GPU tree reproduces node for node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "morton.hpp"

namespace orrery {

template <typename T>
struct TreeNode {
  T com[3];        // centre of mass
  T mass;          // total mass
  T open2;         // squared opening distance: accepted when the target is farther than this
  std::uint32_t skip;   // one past the last node of this subtree
  std::uint32_t first;  // first particle (key order)
  std::uint32_t count;  // particles in the subtree
};
static_assert(sizeof(TreeNode<float>) == 32, "float nodes are half a cache line (ADR-0010)");
static_assert(sizeof(TreeNode<double>) == 56, "double nodes: 52 bytes padded to 56");

// Quadrupole components per node, traceless: sum of m (3 d_i d_j - |d|^2 delta_ij) about the
// node's centre of mass, in the order xx, xy, xz, yy, yz, zz.
constexpr int kQuadrupoleComponents = 6;

template <typename T>
struct Octree {
  BoundingCube cube{};
  std::vector<TreeNode<T>> nodes;
  std::vector<std::uint64_t> cell_key;  // a key inside each node's cell (its first particle's)
  std::vector<std::uint8_t> cell_level; // level of each node's cell: side = cube.side / 2^level
  std::vector<std::uint32_t> leaves;    // node index of every leaf, in key order
  std::vector<T> quadrupoles;           // kQuadrupoleComponents per node, when requested
  int depth = 0;                        // most nodes on a path from the root to a leaf
};

// Topology from sorted keys: each node's cell is the smallest Morton cell holding all its
// particles' keys; a node with more than leaf_capacity particles and distinct keys is split by
// octant at the next level, the non-empty octants becoming its children in key order. Particles
// that share one key (coincident at 2^-21 of the cube) stay in one leaf over capacity.
template <typename T>
void build_topology(const std::uint64_t* keys, std::size_t n, std::size_t leaf_capacity, Octree<T>& tree);

// Masses, centres of mass (summed in double: particles in key order within a leaf, children in
// order within a node), opening distances open2 = (side/theta + |com - cell centre|)^2, and
// quadrupoles when asked. x, y, z, m are the key-sorted particles.
template <typename T>
void compute_moments(const T* x, const T* y, const T* z, const T* m, double theta, bool quadrupole,
                     unsigned threads, Octree<T>& tree);

}  // namespace orrery
