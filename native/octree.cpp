// Octree build and moments (see octree.hpp for the layout and docs/adr/0010 for why).
#include "octree.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "bits.hpp"
#include "parallel.hpp"

namespace orrery {
namespace {

// Level of the smallest cell holding both keys (kMortonLevels when they are equal).
int common_level(std::uint64_t a, std::uint64_t b) {
  std::uint64_t differ = a ^ b;
  if (differ == 0) return kMortonLevels;
  int highest = highest_set_bit(differ);
  return kMortonLevels - 1 - highest / 3;
}

template <typename T>
struct TopologyBuilder {
  const std::uint64_t* keys;
  std::size_t leaf_capacity;
  Octree<T>& tree;

  void emit(std::size_t begin, std::size_t end, int depth) {
    const int level = common_level(keys[begin], keys[end - 1]);
    const std::size_t index = tree.nodes.size();
    TreeNode<T> node{};
    node.first = static_cast<std::uint32_t>(begin);
    node.count = static_cast<std::uint32_t>(end - begin);
    tree.nodes.push_back(node);
    tree.cell_key.push_back(keys[begin]);
    tree.cell_level.push_back(static_cast<std::uint8_t>(level));
    tree.depth = std::max(tree.depth, depth);
    if (end - begin > leaf_capacity && level < kMortonLevels) {
      const int shift = 3 * (kMortonLevels - level - 1);
      for (std::size_t child = begin; child < end;) {
        const std::uint64_t octant = keys[child] >> shift;
        std::size_t child_end = std::partition_point(
            keys + child, keys + end, [&](std::uint64_t k) { return (k >> shift) == octant; }) - keys;
        emit(child, child_end, depth + 1);
        child = child_end;
      }
    } else {
      tree.leaves.push_back(static_cast<std::uint32_t>(index));
    }
    tree.nodes[index].skip = static_cast<std::uint32_t>(tree.nodes.size());
  }
};

struct MassSums {
  double mass, x, y, z;
};

}  // namespace

template <typename T>
void build_topology(const std::uint64_t* keys, std::size_t n, std::size_t leaf_capacity, Octree<T>& tree) {
  if (n == 0) throw std::invalid_argument("a tree needs at least one particle");
  if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("a tree holds fewer than 2^31 particles");
  tree.nodes.clear();
  tree.cell_key.clear();
  tree.cell_level.clear();
  tree.leaves.clear();
  tree.depth = 0;
  TopologyBuilder<T>{keys, std::max<std::size_t>(1, leaf_capacity), tree}.emit(0, n, 1);
}

template <typename T>
void compute_moments(const T* x, const T* y, const T* z, const T* m, double theta, bool quadrupole,
                     unsigned threads, Octree<T>& tree) {
  auto& nodes = tree.nodes;
  const std::size_t node_count = nodes.size();
  std::vector<MassSums> sums(node_count);
  std::vector<std::array<double, 3>> com(node_count);
  std::vector<double> quad(quadrupole ? node_count * kQuadrupoleComponents : 0);

  // Centre of mass and opening distance once node i's sums are final, and the cast to T.
  auto finish = [&](std::size_t i) {
    const MassSums& s = sums[i];
    std::uint32_t cell[3];
    const int level = tree.cell_level[i];
    cell_coordinates(tree.cell_key[i], level, cell);
    const double side = std::ldexp(tree.cube.side, -level);
    const double weighted[3] = {s.x, s.y, s.z};
    double offset2 = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double centre = tree.cube.min[a] + (cell[a] + 0.5) * side;
      // A massless cell pulls nothing; put its centre of mass at the cell's centre.
      com[i][a] = s.mass > 0.0 ? weighted[a] / s.mass : centre;
      offset2 += (com[i][a] - centre) * (com[i][a] - centre);
    }
    // theta = 0 gives side/0 = inf: no cell is ever accepted, which is direct summation.
    const double open = side / theta + std::sqrt(offset2);
    TreeNode<T>& node = nodes[i];
    for (int a = 0; a < 3; ++a) node.com[a] = static_cast<T>(com[i][a]);
    node.mass = static_cast<T>(s.mass);
    node.open2 = static_cast<T>(open * open);
  };

  auto add_quadrupole = [](double* q, double mass, double dx, double dy, double dz) {
    const double r2 = dx * dx + dy * dy + dz * dz;
    q[0] += mass * (3.0 * dx * dx - r2);
    q[1] += mass * (3.0 * dx * dy);
    q[2] += mass * (3.0 * dx * dz);
    q[3] += mass * (3.0 * dy * dy - r2);
    q[4] += mass * (3.0 * dy * dz);
    q[5] += mass * (3.0 * dz * dz - r2);
  };

  // Leaves from their particles, in parallel (each leaf writes only its own entries).
  ThreadPool::instance().parallel_for(tree.leaves.size(), 64, threads, [&](std::size_t l0, std::size_t l1) {
    for (std::size_t l = l0; l < l1; ++l) {
      const std::size_t i = tree.leaves[l];
      const std::size_t first = nodes[i].first, last = first + nodes[i].count;
      MassSums s{0.0, 0.0, 0.0, 0.0};
      for (std::size_t p = first; p < last; ++p) {
        const double mp = m[p];
        s.mass += mp;
        s.x += mp * x[p];
        s.y += mp * y[p];
        s.z += mp * z[p];
      }
      sums[i] = s;
      finish(i);
      if (quadrupole) {
        double* q = &quad[i * kQuadrupoleComponents];
        for (std::size_t p = first; p < last; ++p)
          add_quadrupole(q, m[p], x[p] - com[i][0], y[p] - com[i][1], z[p] - com[i][2]);
      }
    }
  });

  // Internal nodes from their children; reverse depth-first order meets children first.
  for (std::size_t i = node_count; i-- > 0;) {
    if (nodes[i].skip == i + 1) continue;
    MassSums s{0.0, 0.0, 0.0, 0.0};
    for (std::size_t c = i + 1; c < nodes[i].skip; c = nodes[c].skip) {
      s.mass += sums[c].mass;
      s.x += sums[c].x;
      s.y += sums[c].y;
      s.z += sums[c].z;
    }
    sums[i] = s;
    finish(i);
    if (quadrupole) {
      double* q = &quad[i * kQuadrupoleComponents];
      for (std::size_t c = i + 1; c < nodes[i].skip; c = nodes[c].skip) {
        const double* qc = &quad[c * kQuadrupoleComponents];
        for (int k = 0; k < kQuadrupoleComponents; ++k) q[k] += qc[k];
        add_quadrupole(q, sums[c].mass, com[c][0] - com[i][0], com[c][1] - com[i][1], com[c][2] - com[i][2]);
      }
    }
  }

  tree.quadrupoles.resize(quad.size());
  std::transform(quad.begin(), quad.end(), tree.quadrupoles.begin(), [](double q) { return static_cast<T>(q); });
}

template void build_topology<float>(const std::uint64_t*, std::size_t, std::size_t, Octree<float>&);
template void build_topology<double>(const std::uint64_t*, std::size_t, std::size_t, Octree<double>&);
template void compute_moments<float>(const float*, const float*, const float*, const float*, double, bool,
                                     unsigned, Octree<float>&);
template void compute_moments<double>(const double*, const double*, const double*, const double*, double,
                                      bool, unsigned, Octree<double>&);

}  // namespace orrery
