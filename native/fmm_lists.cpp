// The FMM dual tree walk (see fmm_lists.hpp).
#include "fmm_lists.hpp"

#include <algorithm>
#include <cmath>

#include "bits.hpp"
#include "morton.hpp"
#include "parallel.hpp"

namespace orrery {
namespace {

struct Geometry {
  std::vector<double> centre2;   // twice the box centre, 3 per node, in finest-cell units
  std::vector<double> diagonal;  // the box's diagonal (twice its half diagonal), same units
};

// Boxes of internal nodes as unions of their children's (children follow their parent).
Geometry box_geometry(const std::uint32_t* skip, const std::uint32_t* leaf_box, std::size_t nodes,
                      const BoundingCube& cube, std::vector<double>& centre) {
  std::vector<std::uint32_t> box(6 * nodes);
  for (std::size_t i = nodes; i-- > 0;) {
    std::uint32_t* own = box.data() + 6 * i;
    if (skip[i] == i + 1) {
      std::copy_n(leaf_box + 6 * i, 6, own);
      continue;
    }
    for (int a = 0; a < 3; ++a) {
      own[a] = ~0u;
      own[3 + a] = 0;
    }
    for (std::uint32_t c = std::uint32_t(i) + 1; c < skip[i]; c = skip[c])
      for (int a = 0; a < 3; ++a) {
        own[a] = std::min(own[a], box[6 * c + a]);
        own[3 + a] = std::max(own[3 + a], box[6 * c + 3 + a]);
      }
  }
  Geometry g;
  g.centre2.resize(3 * nodes);
  g.diagonal.resize(nodes);
  centre.resize(3 * nodes);
  const double unit = std::ldexp(cube.side, -kMortonLevels);
  for (std::size_t i = 0; i < nodes; ++i) {
    double d2 = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double low = box[6 * i + a], high = double(box[6 * i + 3 + a]) + 1.0;
      g.centre2[3 * i + a] = low + high;
      d2 += (high - low) * (high - low);
      centre[3 * i + a] = cube.min[a] + 0.5 * (low + high) * unit;
    }
    g.diagonal[i] = std::sqrt(d2);
  }
  return g;
}

struct DualWalk {
  const std::uint32_t* skip;
  const std::uint32_t* count;
  const Geometry& g;
  const FmmOpening& opening;
  // Unordered pairs, (a << 32) | b, appended to the task's lists (FmmWalkStorage).
  std::vector<std::uint64_t>& m2l;
  std::vector<std::uint64_t>& p2p;

  bool leaf(std::uint32_t a) const { return skip[a] == a + 1; }

  // theta |c_A - c_B| > r_A + r_B with doubled centres and radii, squared; theta the heavy
  // angle where the larger node is heavy.
  bool well_separated(std::uint32_t a, std::uint32_t b) const {
    double d2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = g.centre2[3 * a + k] - g.centre2[3 * b + k];
      d2 += d * d;
    }
    const double r = g.diagonal[a] + g.diagonal[b];
    double theta2 = opening.theta2;
    if (opening.heavy != 0) {
      const std::uint32_t c = std::max(count[a], count[b]);
      if (c > opening.heavy) theta2 = opening.heavy_theta2[highest_set_bit(c / opening.heavy)];
    }
    return theta2 * d2 > r * r;
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
    const bool split_a = leaf_b || (!leaf_a && g.diagonal[a] >= g.diagonal[b]);
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

  // One step of self (a == b) or pair (a != b) that leaves the rest as tasks: what run() would
  // visit next. Returns false when the task emits at once (nothing to split).
  bool split(std::uint32_t a, std::uint32_t b, std::vector<std::uint64_t>& out) const {
    if (a == b) {
      if (leaf(a)) return false;
      for (std::uint32_t c = a + 1; c < skip[a]; c = skip[c]) {
        out.push_back((std::uint64_t(c) << 32) | c);
        for (std::uint32_t d = skip[c]; d < skip[a]; d = skip[d]) out.push_back((std::uint64_t(c) << 32) | d);
      }
      return true;
    }
    if (well_separated(a, b) || (leaf(a) && leaf(b))) return false;
    const bool split_a = leaf(b) || (!leaf(a) && g.diagonal[a] >= g.diagonal[b]);
    const std::uint32_t s = split_a ? a : b, other = split_a ? b : a;
    for (std::uint32_t c = s + 1; c < skip[s]; c = skip[c]) out.push_back((std::uint64_t(c) << 32) | other);
    return true;
  }

  void run(std::uint32_t a, std::uint32_t b) {
    if (a == b) self(a);
    else pair(a, b);
  }
};

// Tasks the walk's first steps are unrolled into: a fixed number, so that the pairs' order
// (tasks in order, each walked depth first) does not depend on the thread count.
constexpr std::size_t kWalkTasks = 256;

// The walk in parallel: its first steps are unrolled into independent tasks (each an unordered
// node pair, or a node with itself), which threads walk into their own pair lists; the pairs'
// order is the tasks' order, each task's pairs in its walk's order. Which thread walks a task
// does not matter.
void parallel_walk(const std::uint32_t* skip, const std::uint32_t* count, const Geometry& g, const FmmOpening& opening,
                   std::size_t nodes, unsigned threads, FmmWalkStorage& storage) {
  std::vector<std::uint64_t> none;
  const DualWalk probe{skip, count, g, opening, none, none};
  std::vector<std::uint64_t> tasks{0}, next;
  for (bool split = nodes > 1; split && tasks.size() < kWalkTasks;) {
    split = false;
    next.clear();
    for (std::uint64_t t : tasks) {
      if (probe.split(std::uint32_t(t >> 32), std::uint32_t(t), next)) split = true;
      else next.push_back(t);
    }
    tasks.swap(next);
  }
  storage.m2l.resize(tasks.size());
  storage.p2p.resize(tasks.size());
  ThreadPool::instance().parallel_for(tasks.size(), 1, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      storage.m2l[k].clear();
      storage.p2p[k].clear();
      DualWalk{skip, count, g, opening, storage.m2l[k], storage.p2p[k]}.run(std::uint32_t(tasks[k] >> 32),
                                                                   std::uint32_t(tasks[k]));
    }
  });
}

// Pieces the pairs are cut into to gather them in parallel: a fixed number, and each target's
// entries come out in the pairs' order whichever thread gathers a piece.
constexpr std::size_t kGatherPieces = 8;

// Both directions of every unordered pair, gathered by target in the pairs' order (a counting
// sort: each piece counts its entries per target, then writes them from its own offsets), then
// (when `sorted`) sources ascending. The pairs are the walk tasks' lists in task order, read in
// place (copying them into one list took a tenth of the walk); a piece is a run of whole tasks,
// cut where the pairs before it first reach its share of all of them, so the cuts depend on
// the lists alone.
void directed_lists(const std::vector<const std::vector<std::uint64_t>*>& parts, std::size_t nodes, bool sorted,
                    unsigned threads, std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source) {
  auto& pool = ThreadPool::instance();
  std::size_t total = 0;
  for (const auto* part : parts) total += part->size();
  std::vector<std::size_t> cut(kGatherPieces + 1, parts.size());  // piece c: parts [cut[c], cut[c + 1])
  cut[0] = 0;
  for (std::size_t c = 1, k = 0, before = 0; c < kGatherPieces; ++c) {
    while (k < parts.size() && before < total / kGatherPieces * c) before += parts[k++]->size();
    cut[c] = k;
  }
  auto each_pair = [&](std::size_t c, auto&& visit) {
    for (std::size_t k = cut[c]; k < cut[c + 1]; ++k)
      for (std::uint64_t pair : *parts[k]) visit(std::uint32_t(pair >> 32), std::uint32_t(pair & 0xffffffffu));
  };
  std::vector<std::uint32_t> offset(kGatherPieces * nodes, 0);  // piece-major: entries, then where they go
  pool.parallel_for(kGatherPieces, 1, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) {
      std::uint32_t* count = offset.data() + c * nodes;
      each_pair(c, [count](std::uint32_t a, std::uint32_t b) {
        ++count[a];
        ++count[b];
      });
    }
  });
  start.assign(nodes + 1, 0);
  for (std::size_t i = 0; i < nodes; ++i) {
    std::uint32_t at = start[i];
    for (std::size_t c = 0; c < kGatherPieces; ++c) {
      const std::uint32_t entries = offset[c * nodes + i];
      offset[c * nodes + i] = at;
      at += entries;
    }
    start[i + 1] = at;
  }
  source.resize(start[nodes]);
  pool.parallel_for(kGatherPieces, 1, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) {
      std::uint32_t* fill = offset.data() + c * nodes;
      each_pair(c, [&](std::uint32_t a, std::uint32_t b) {
        source[fill[a]++] = b;
        source[fill[b]++] = a;
      });
    }
  });
  if (sorted) sort_sources(start, source, threads);
}

}  // namespace

void sort_sources(const std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source, unsigned threads) {
  ThreadPool::instance().parallel_for(start.size() - 1, 1024, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) std::sort(source.begin() + start[i], source.begin() + start[i + 1]);
  });
}

void fmm_leaf_box(const std::uint64_t* keys, std::size_t first, std::size_t count, std::uint32_t box[6]) {
  for (int a = 0; a < 3; ++a) {
    box[a] = ~0u;
    box[3 + a] = 0;
  }
  for (std::size_t p = first; p < first + count; ++p) {
    std::uint32_t q[3];
    cell_coordinates(keys[p], kMortonLevels, q);
    for (int a = 0; a < 3; ++a) {
      box[a] = std::min(box[a], q[a]);
      box[3 + a] = std::max(box[3 + a], q[a]);
    }
  }
}

FmmOpening fmm_opening(double theta, int order, double heavy_share, std::size_t bodies) {
  FmmOpening opening;
  opening.theta2 = theta * theta;
  if (heavy_share > 0.0) {
    opening.heavy = std::uint32_t(std::max(1.0, std::floor(heavy_share * double(bodies))));
    for (std::size_t k = 0; k < opening.heavy_theta2.size(); ++k)
      opening.heavy_theta2[k] = opening.theta2 * std::exp2(-2.0 * double(k + 1) / double(order + 1));
  }
  return opening;
}

void fmm_interaction_lists(const std::uint32_t* skip, const std::uint32_t* count, const std::uint32_t* leaf_box,
                           std::size_t nodes, const BoundingCube& cube, const FmmOpening& opening, unsigned threads,
                           FmmWalkStorage& storage, FmmLists& lists) {
  const Geometry g = box_geometry(skip, leaf_box, nodes, cube, lists.centre);
  parallel_walk(skip, count, g, opening, nodes, threads, storage);
  std::vector<const std::vector<std::uint64_t>*> m2l, p2p;
  for (std::size_t k = 0; k < storage.m2l.size(); ++k) {
    m2l.push_back(&storage.m2l[k]);
    p2p.push_back(&storage.p2p[k]);
  }
  directed_lists(m2l, nodes, false, threads, lists.m2l_start, lists.m2l_source);
  directed_lists(p2p, nodes, true, threads, lists.p2p_start, lists.p2p_source);

  lists.parent.assign(nodes, 0);
  lists.leaves.clear();
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
}

}  // namespace orrery
