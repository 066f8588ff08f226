// The FMM dual tree walk (see fmm_lists.hpp).
#include "fmm_lists.hpp"

#include <algorithm>
#include <cmath>

#include "morton.hpp"
#include "parallel.hpp"

namespace orrery {
namespace {

struct Geometry {
  std::vector<double> centre2;  // twice the cell centre, 3 per node, in finest-cell units
  std::vector<double> side;     // cell side in finest-cell units (a power of two)
};

template <typename Level>
Geometry cell_geometry(const Level* level, const std::uint64_t* cell_key, std::size_t nodes, const BoundingCube& cube,
                       std::vector<double>& centre) {
  Geometry g;
  g.centre2.resize(3 * nodes);
  g.side.resize(nodes);
  centre.resize(3 * nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    std::uint32_t cell[3];
    const int l = static_cast<int>(level[i]);
    cell_coordinates(cell_key[i], l, cell);
    const double side = std::ldexp(1.0, kMortonLevels - l);
    g.side[i] = side;
    const double cube_side = std::ldexp(cube.side, -l);
    for (int a = 0; a < 3; ++a) {
      g.centre2[3 * i + a] = (2.0 * cell[a] + 1.0) * side;
      centre[3 * i + a] = cube.min[a] + (cell[a] + 0.5) * cube_side;
    }
  }
  return g;
}

struct DualWalk {
  const std::uint32_t* skip;
  const Geometry& g;
  double theta2;
  std::vector<std::uint64_t> m2l, p2p;  // unordered pairs, (a << 32) | b

  bool leaf(std::uint32_t a) const { return skip[a] == a + 1; }

  // theta |c_A - c_B| > (sqrt3/2)(s_A + s_B), squared and with doubled centres:
  // theta^2 |C_A - C_B|^2 > 3 (s_A + s_B)^2.
  bool well_separated(std::uint32_t a, std::uint32_t b) const {
    double d2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = g.centre2[3 * a + k] - g.centre2[3 * b + k];
      d2 += d * d;
    }
    const double s = g.side[a] + g.side[b];
    return theta2 * d2 > 3.0 * s * s;
  }

  void pair(std::uint32_t a, std::uint32_t b) {
    if (well_separated(a, b)) {
      m2l.push_back((std::uint64_t(a) << 32) | b);
      return;
    }
    const bool leaf_a = leaf(a), leaf_b = leaf(b);
    if (leaf_a && leaf_b) {
      p2p.push_back((std::uint64_t(a) << 32) | b);
      return;
    }
    const bool split_a = leaf_b || (!leaf_a && g.side[a] >= g.side[b]);
    const std::uint32_t split = split_a ? a : b, other = split_a ? b : a;
    for (std::uint32_t c = split + 1; c < skip[split]; c = skip[c]) pair(c, other);
  }

  void self(std::uint32_t a) {
    if (leaf(a)) return;
    for (std::uint32_t c = a + 1; c < skip[a]; c = skip[c]) {
      self(c);
      for (std::uint32_t d = skip[c]; d < skip[a]; d = skip[d]) pair(c, d);
    }
  }
};

// Both directions of every unordered pair, gathered by target, sources ascending.
void directed_lists(const std::vector<std::uint64_t>& pairs, std::size_t nodes, unsigned threads,
                    std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source) {
  start.assign(nodes + 1, 0);
  for (std::uint64_t p : pairs) {
    ++start[(p >> 32) + 1];
    ++start[(p & 0xffffffffu) + 1];
  }
  for (std::size_t i = 0; i < nodes; ++i) start[i + 1] += start[i];
  source.resize(start[nodes]);
  std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
  for (std::uint64_t p : pairs) {
    const std::uint32_t a = std::uint32_t(p >> 32), b = std::uint32_t(p & 0xffffffffu);
    source[fill[a]++] = b;
    source[fill[b]++] = a;
  }
  ThreadPool::instance().parallel_for(nodes, 1024, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) std::sort(source.begin() + start[i], source.begin() + start[i + 1]);
  });
}

}  // namespace

template <typename Level>
FmmLists fmm_interaction_lists(const std::uint32_t* skip, const Level* level, const std::uint64_t* cell_key,
                               std::size_t nodes, const BoundingCube& cube, double theta, unsigned threads) {
  FmmLists lists;
  const Geometry g = cell_geometry(level, cell_key, nodes, cube, lists.centre);
  DualWalk walk{skip, g, theta * theta, {}, {}};
  walk.self(0);
  directed_lists(walk.m2l, nodes, threads, lists.m2l_start, lists.m2l_source);
  directed_lists(walk.p2p, nodes, threads, lists.p2p_start, lists.p2p_source);

  lists.parent.assign(nodes, 0);
  std::vector<std::uint32_t> depth(nodes, 0);
  std::uint32_t deepest = 0;
  for (std::uint32_t i = 0; i < nodes; ++i) {
    if (skip[i] == i + 1) lists.leaves.push_back(i);
    for (std::uint32_t c = i + 1; c < skip[i]; c = skip[c]) {
      lists.parent[c] = i;
      depth[c] = depth[i] + 1;
      deepest = std::max(deepest, depth[c]);
    }
  }
  lists.depth_start.assign(deepest + 2, 0);
  for (std::uint32_t d : depth) ++lists.depth_start[d + 1];
  for (std::uint32_t d = 0; d <= deepest; ++d) lists.depth_start[d + 1] += lists.depth_start[d];
  lists.by_depth.resize(nodes);
  std::vector<std::uint32_t> fill(lists.depth_start.begin(), lists.depth_start.end() - 1);
  for (std::uint32_t i = 0; i < nodes; ++i) lists.by_depth[fill[depth[i]]++] = i;
  return lists;
}

template FmmLists fmm_interaction_lists<std::uint8_t>(const std::uint32_t*, const std::uint8_t*, const std::uint64_t*,
                                                      std::size_t, const BoundingCube&, double, unsigned);
template FmmLists fmm_interaction_lists<std::uint32_t>(const std::uint32_t*, const std::uint32_t*,
                                                       const std::uint64_t*, std::size_t, const BoundingCube&, double, unsigned);

}  // namespace orrery
