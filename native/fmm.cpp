// cpu-fmm (fmm.hpp): the passes, their schedule and the engine that runs them.
#include "fmm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "fmm_kernels.hpp"
#include "fmm_p2p.hpp"
#include "morton.hpp"
#include "octree.hpp"
#include "parallel.hpp"
#include "stage_clock.hpp"
#include "tree_walk.hpp"

namespace orrery {
namespace {

static_assert(fmm_terms(kFmmMaxOrder) <= kFmmKernelMaxTerms, "the M2L kernel's scratch holds every order");

FmmP2PFn<float> mutual_for(const SimdKernels& k, float) { return k.fmm_p2p_f32; }
FmmP2PFn<double> mutual_for(const SimdKernels& k, double) { return k.fmm_p2p_f64; }

// Bodies per group of the mutual P2P's schedule (docs/fmm-tuning-log.md#0161): a fixed count, so the
// schedule, and with it every sum's order, depends on the tree alone; large enough that most
// pairs stay inside a group, small enough for a few hundred tasks at N = 10^6.
constexpr std::size_t kP2PGroupBodies = 2048;

template <typename T>
constexpr std::size_t padded(std::size_t size) {
  return (size + kLanes<T> - 1) / kLanes<T> * kLanes<T>;
}

}  // namespace

// The engine's state and passes (FmmEngine holds one).
template <typename T>
class FmmPasses {
 public:
  void evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta, int order,
                double heavy_share, std::size_t leaf_capacity, bool float_expansions, unsigned threads,
                const SimdKernels& kernels, T* acc, T* pot) {
    if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("cpu-fmm holds fewer than 2^31 particles");
    if (tables_.order != order) tables_ = fmm_tables(order);
    build(pos, mass, n, leaf_capacity, threads);
    auto start = StageClock::now();
    fmm_interaction_lists(skip_.data(), count_.data(), leaf_box_.data(), skip_.size(), tree_.cube,
                          fmm_opening(theta, order, heavy_share, n), threads, walk_storage_, lists_);
    stages_.walk = seconds_since(start);
    start = StageClock::now();
    upward(kernels, threads);
    stages_.upward = seconds_since(start);
    start = StageClock::now();
    m2l(softening * softening, kernels, float_expansions, threads);
    expansion_bits_ = float_expansions ? 32 : 64;
    stages_.m2l = seconds_since(start);
    start = StageClock::now();
    downward(kernels, threads);
    stages_.downward = seconds_since(start);
    start = StageClock::now();
    p2p(n, static_cast<T>(softening * softening), mutual_for(kernels, T()), kernels.fmm_l2p, threads, acc, pot);
    stages_.p2p = seconds_since(start);
  }

  const FmmLists& lists() const { return lists_; }

  FmmStats stats() const {
    FmmStats s;
    s.stages = stages_;
    s.m2l_interactions = lists_.m2l_source.size();
    s.particle_particle = particle_pairs_;
    s.nodes = tree_.nodes.size();
    s.leaves = tree_.leaves.size();
    s.depth = tree_.depth;
    s.terms = tables_.terms;
    s.expansion_bits = expansion_bits_;
    s.m2l_redone_in_double = m2l_redone_;
    return s;
  }

 private:
  void build(const T* pos, const T* mass, std::size_t n, std::size_t leaf_capacity, unsigned threads) {
    auto start = StageClock::now();
    tree_.cube = bounding_cube(pos, n);
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    keys_.resize(n);
    morton_keys(pos, n, tree_.cube, keys_.data(), threads);
    sort_keys(keys_, order_, key_scratch_, order_scratch_, threads);
    gather_sorted(pos, mass, order_.data(), n, threads, sorted_);
    stages_.sort = seconds_since(start);
    start = StageClock::now();
    build_topology(keys_.data(), n, leaf_capacity, tree_);
    const std::size_t nodes = tree_.nodes.size();
    skip_.resize(nodes);
    count_.resize(nodes);
    for (std::size_t i = 0; i < nodes; ++i) {
      skip_[i] = tree_.nodes[i].skip;
      count_[i] = tree_.nodes[i].count;
    }
    leaf_box_.resize(6 * nodes);
    ThreadPool::instance().parallel_for(tree_.leaves.size(), 256, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t l = begin; l < end; ++l) {
        const std::uint32_t leaf = tree_.leaves[l];
        fmm_leaf_box(keys_.data(), tree_.nodes[leaf].first, tree_.nodes[leaf].count, leaf_box_.data() + 6 * leaf);
      }
    });
    stages_.build = seconds_since(start);
  }

  const double* centre(std::size_t node) const { return lists_.centre.data() + 3 * node; }

  // A leaf's bodies as offsets from its centre, in lanes: `rows` rows of `count` doubles (its
  // body count padded to 8, zeros after it), the offsets' x, y, z in the first three; returns
  // the row length. P2M fills a fourth row with masses, L2P leaves four for its results.
  std::size_t leaf_lanes(const TreeNode<T>& node, std::size_t leaf, std::size_t rows,
                         std::vector<double>& lanes) const {
    const double* z = centre(leaf);
    const std::size_t count = (node.count + 7) / 8 * 8;
    lanes.assign(rows * count, 0.0);
    double* u = lanes.data();
    for (std::size_t j = 0; j < node.count; ++j) {
      const std::size_t p = node.first + j;
      u[j] = sorted_.x[p] - z[0];
      u[count + j] = sorted_.y[p] - z[1];
      u[2 * count + j] = sorted_.z[p] - z[2];
    }
    return count;
  }

  // P2M and M2M in double lanes (fmm_passes_kernel.hpp): each leaf's bodies as offsets from its
  // centre, padded to 8 with zero mass; then, deepest internal nodes first (a node's children
  // are one level deeper), each node's children, padded to 8 with zero multipoles.
  void upward(const SimdKernels& kernels, unsigned threads) {
    const int terms = tables_.terms;
    const std::size_t nodes = skip_.size();
    multipole_.assign(nodes * terms, 0.0);
    auto& pool = ThreadPool::instance();
    pool.parallel_for(lists_.leaves.size(), 64, threads, [&](std::size_t begin, std::size_t end) {
      std::vector<double> t(terms), lanes;
      for (std::size_t l = begin; l < end; ++l) {
        const std::uint32_t leaf = lists_.leaves[l];
        const TreeNode<T>& node = tree_.nodes[leaf];
        double* M = multipole_.data() + leaf * terms;
        const std::size_t count = leaf_lanes(node, leaf, 4, lanes);
        double* u = lanes.data();
        for (std::size_t j = 0; j < node.count; ++j) u[3 * count + j] = sorted_.m[node.first + j];
        if (kernels.fmm_p2m(tables_.order, FmmUpwardLanes{u, u + count, u + 2 * count, u + 3 * count, count}, M))
          continue;
        for (std::size_t j = 0; j < node.count; ++j) {
          const double v[3] = {u[j], u[count + j], u[2 * count + j]};
          fmm_monomials(tables_, v, t.data());
          for (int q = 0; q < terms; ++q) M[q] += u[3 * count + j] * t[q];
        }
      }
    });
    const std::size_t depths = lists_.depth_start.size() - 1;
    for (std::size_t d = depths; d-- > 0;) {
      const std::uint32_t first = lists_.depth_start[d], last = lists_.depth_start[d + 1];
      pool.parallel_for(last - first, 16, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<double> t(terms), lanes;
        std::vector<std::uint32_t> children;
        for (std::size_t k = first + begin; k < first + end; ++k) {
          const std::uint32_t i = lists_.by_depth[k];
          if (skip_[i] == i + 1) continue;
          double* M = multipole_.data() + i * terms;
          children.clear();
          for (std::uint32_t c = i + 1; c < skip_[i]; c = skip_[c]) children.push_back(c);
          const std::size_t count = (children.size() + 7) / 8 * 8;
          lanes.assign((3 + terms) * count, 0.0);
          double* u = lanes.data();
          for (std::size_t j = 0; j < children.size(); ++j) {
            const std::uint32_t c = children[j];
            for (int a = 0; a < 3; ++a) u[a * count + j] = centre(c)[a] - centre(i)[a];
            for (int q = 0; q < terms; ++q) u[(3 + q) * count + j] = multipole_[c * terms + q];
          }
          if (kernels.fmm_m2m(tables_.order, FmmUpwardLanes{u, u + count, u + 2 * count, u + 3 * count, count}, M))
            continue;
          for (std::uint32_t c : children) {
            const double dz[3] = {centre(c)[0] - centre(i)[0], centre(c)[1] - centre(i)[1],
                                  centre(c)[2] - centre(i)[2]};
            fmm_monomials(tables_, dz, t.data());
            fmm_m2m(tables_, t.data(), multipole_.data() + c * terms, M);
          }
        }
      });
    }
    // M2L wants (-1)^|n| M_n.
    pool.parallel_for(nodes, 256, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        for (int q = 0; q < terms; ++q)
          if ((tables_.nx[q] + tables_.ny[q] + tables_.nz[q]) & 1) multipole_[i * terms + q] = -multipole_[i * terms + q];
    });
  }

  // The signed multipoles rounded to float, for M2L in float lanes.
  void narrow_multipoles(unsigned threads) {
    multipole_f32_.resize(multipole_.size());
    ThreadPool::instance().parallel_for(multipole_.size(), 65536, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) multipole_f32_[i] = static_cast<float>(multipole_[i]);
    });
  }

  // M2L per target cell, in double or (float_expansions) in float lanes. Float's range is
  // narrower: a target whose float sum is not finite (a derivative tensor or multipole past
  // 3.4e38, e.g. 5040 / r^8 at order 7 for cells closer than 4e-5 with little softening) is redone in
  // double, so float expansions never return inf or NaN where double would not. Which targets
  // are redone depends on the data alone, not on the threads.
  void m2l(double eps2, const SimdKernels& kernels, bool float_expansions, unsigned threads) {
    const int terms = tables_.terms;
    const std::size_t nodes = skip_.size();
    local_.assign(nodes * terms, 0.0);
    if (float_expansions) narrow_multipoles(threads);
    FmmM2LTables view{terms, tables_.pair_start.data(), tables_.pair_n.data(), tables_.pair_sum.data(),
                      {tables_.minus_one[0].data(), tables_.minus_one[1].data(), tables_.minus_one[2].data()},
                      {tables_.minus_two[0].data(), tables_.minus_two[1].data(), tables_.minus_two[2].data()},
                      tables_.recurrence_first.data(), tables_.recurrence_second.data(), tables_.factorial.data()};
    std::vector<std::uint8_t> redone(nodes, 0);
    ThreadPool::instance().parallel_for(nodes, 16, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const std::uint32_t first = lists_.m2l_start[i], count = lists_.m2l_start[i + 1] - first;
        if (count == 0) continue;
        double* local = local_.data() + i * terms;
        const std::uint32_t* sources = lists_.m2l_source.data() + first;
        const auto target = static_cast<std::uint32_t>(i);
        if (float_expansions) {
          kernels.fmm_m2l_f32(view, FmmM2LTask<float>{lists_.centre.data(), multipole_f32_.data(), sources, count,
                                                      target, eps2, local});
          if (std::all_of(local, local + terms, [](double v) { return std::isfinite(v); })) continue;
          redone[i] = 1;
        }
        kernels.fmm_m2l_f64(view, FmmM2LTask<double>{lists_.centre.data(), multipole_.data(), sources, count, target,
                                                     eps2, local});
      }
    });
    m2l_redone_ = float_expansions ? std::size_t(std::count(redone.begin(), redone.end(), 1)) : 0;
  }

  // L2L in double lanes (fmm_passes_kernel.hpp), by depth from the root: each internal node's
  // children, padded to 8, take their shares of its local expansion (complete: its own parent's
  // share came the depth before); one task per parent writes its children, in child order.
  void downward(const SimdKernels& kernels, unsigned threads) {
    const int terms = tables_.terms;
    auto& pool = ThreadPool::instance();
    const std::size_t depths = lists_.depth_start.size() - 1;
    for (std::size_t d = 0; d + 1 < depths; ++d) {
      const std::uint32_t first = lists_.depth_start[d], last = lists_.depth_start[d + 1];
      pool.parallel_for(last - first, 16, threads, [&](std::size_t begin, std::size_t end) {
        std::vector<double> t(terms), lanes;
        std::vector<std::uint32_t> children;
        for (std::size_t k = first + begin; k < first + end; ++k) {
          const std::uint32_t p = lists_.by_depth[k];
          if (skip_[p] == p + 1) continue;
          const double* L = local_.data() + p * terms;
          children.clear();
          for (std::uint32_t c = p + 1; c < skip_[p]; c = skip_[c]) children.push_back(c);
          const std::size_t count = (children.size() + 7) / 8 * 8;
          lanes.assign((3 + terms) * count, 0.0);
          double* u = lanes.data();
          for (std::size_t j = 0; j < children.size(); ++j)
            for (int a = 0; a < 3; ++a) u[a * count + j] = centre(children[j])[a] - centre(p)[a];
          double* shares = u + 3 * count;
          if (kernels.fmm_l2l(tables_.order, FmmDownwardLanes{u, u + count, u + 2 * count, L, count, shares})) {
            for (std::size_t j = 0; j < children.size(); ++j) {
              double* child = local_.data() + children[j] * terms;
              for (int q = 0; q < terms; ++q) child[q] += shares[q * count + j];
            }
            continue;
          }
          for (std::uint32_t c : children) {
            const double dz[3] = {centre(c)[0] - centre(p)[0], centre(c)[1] - centre(p)[1],
                                  centre(c)[2] - centre(p)[2]};
            fmm_monomials(tables_, dz, t.data());
            fmm_l2l(tables_, t.data(), L, local_.data() + c * terms);
          }
        }
      });
    }
  }

  // The mutual P2P's schedule (docs/fmm-tuning-log.md#0161), from the tree and lists alone: leaves in
  // contiguous groups of at least kP2PGroupBodies bodies; each leaf a's list entries with a
  // source b > a (the upper half of its sorted list) get the place b's reactions go: b's own
  // sums when b is in a's group, else the group's slot for b (past the n bodies' sums, one per
  // group and foreign leaf, in order of first use); each leaf's imports list the slots kept for
  // it, groups ascending.
  void p2p_schedule(std::size_t n, unsigned threads) {
    const std::size_t nodes = skip_.size(), leaves = lists_.leaves.size();
    group_start_.assign(1, 0);
    std::vector<std::uint32_t> group_of(nodes, 0);
    std::size_t bodies = 0;
    for (std::size_t l = 0; l < leaves; ++l) {
      group_of[lists_.leaves[l]] = std::uint32_t(group_start_.size() - 1);
      bodies += tree_.nodes[lists_.leaves[l]].count;
      if (bodies >= kP2PGroupBodies || l + 1 == leaves) {
        group_start_.push_back(std::uint32_t(l + 1));
        bodies = 0;
      }
    }
    const std::size_t groups = group_start_.size() - 1;
    upper_start_.resize(nodes);
    reaction_at_.assign(lists_.p2p_source.size(), 0);
    std::vector<std::vector<std::uint32_t>> foreign(groups);  // per group: other groups' leaves, by first use
    std::vector<std::size_t> slot_size(groups + 1, 0);
    ThreadPool::instance().parallel_for(groups, 1, threads, [&](std::size_t begin, std::size_t end) {
      // Per foreign leaf: the last group here that gave it a slot, and the slot's offset there.
      std::vector<std::uint32_t> stamp(nodes, ~0u), slot(nodes, 0);
      for (std::size_t g = begin; g < end; ++g)
        for (std::uint32_t l = group_start_[g]; l < group_start_[g + 1]; ++l) {
          const std::uint32_t a = lists_.leaves[l];
          const std::uint32_t* list = lists_.p2p_source.data();
          upper_start_[a] = std::uint32_t(
              std::upper_bound(list + lists_.p2p_start[a], list + lists_.p2p_start[a + 1], a) - list);
          for (std::uint32_t s = upper_start_[a]; s < lists_.p2p_start[a + 1]; ++s) {
            const std::uint32_t b = list[s];
            if (group_of[b] == g) {
              reaction_at_[s] = tree_.nodes[b].first;
              continue;
            }
            if (stamp[b] != g) {
              stamp[b] = std::uint32_t(g);
              slot[b] = std::uint32_t(slot_size[g + 1]);
              foreign[g].push_back(b);
              slot_size[g + 1] += tree_.nodes[b].count;
            }
            reaction_at_[s] = slot[b];  // made absolute below
          }
        }
    });
    for (std::size_t g = 0; g < groups; ++g) slot_size[g + 1] += slot_size[g];
    sums_size_ = n + slot_size[groups];
    ThreadPool::instance().parallel_for(groups, 1, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t g = begin; g < end; ++g)
        for (std::uint32_t l = group_start_[g]; l < group_start_[g + 1]; ++l) {
          const std::uint32_t a = lists_.leaves[l];
          for (std::uint32_t s = upper_start_[a]; s < lists_.p2p_start[a + 1]; ++s)
            if (group_of[lists_.p2p_source[s]] != g) reaction_at_[s] += std::uint32_t(n + slot_size[g]);
        }
    });
    import_start_.assign(nodes + 1, 0);
    for (std::size_t g = 0; g < groups; ++g)
      for (std::uint32_t b : foreign[g]) ++import_start_[b + 1];
    for (std::size_t i = 0; i < nodes; ++i) import_start_[i + 1] += import_start_[i];
    import_slot_.resize(import_start_[nodes]);
    std::vector<std::uint32_t> fill(import_start_.begin(), import_start_.end() - 1);
    for (std::size_t g = 0; g < groups; ++g) {
      std::size_t slot = n + slot_size[g];
      for (std::uint32_t b : foreign[g]) {
        import_slot_[fill[b]++] = std::uint32_t(slot);
        slot += tree_.nodes[b].count;
      }
    }
  }

  // Mutual P2P (docs/fmm-tuning-log.md#0161): phase one, one task per group, its leaves in index order: each
  // leaf's own pairs and its pairs with the upper half of its list, each pair once by fmm_p2p,
  // both halves: the target's into its sums, the source's into its sums or the group's slot for
  // it. A task writes only its group's sums and slots. Phase two, per leaf: its imports' slots
  // in group order, then L2P, in the caller's order. So every sum takes its terms in an order
  // fixed by the tree and the lists, whatever the thread count.
  void p2p(std::size_t n, T eps2, FmmP2PFn<T> mutual, FmmL2PFn l2p, unsigned threads, T* acc, T* pot) {
    p2p_schedule(n, threads);
    for (auto* v : {&sums_.x, &sums_.y, &sums_.z, &sums_.m}) v->assign(sums_size_, T(0));
    const std::size_t groups = group_start_.size() - 1;
    std::vector<std::uint64_t> pairs(lists_.leaves.size(), 0);
    ThreadPool::instance().parallel_for(groups, 1, threads, [&](std::size_t begin, std::size_t end) {
      SortedParticles<T> bodies, reactions;
      for (std::size_t g = begin; g < end; ++g)
        for (std::uint32_t l = group_start_[g]; l < group_start_[g + 1]; ++l) {
          const std::uint32_t leaf = lists_.leaves[l];
          const TreeNode<T>& node = tree_.nodes[leaf];
          const std::uint32_t first_upper = upper_start_[leaf], last = lists_.p2p_start[leaf + 1];
          std::size_t listed = 0, upper = 0;
          for (std::uint32_t s = lists_.p2p_start[leaf]; s < last; ++s)
            (s < first_upper ? listed : upper) += tree_.nodes[lists_.p2p_source[s]].count;
          pairs[l] = std::uint64_t(node.count) * (node.count - 1 + listed + upper);
          const std::size_t own = padded<T>(node.count), count = own + upper;
          gather(node, own, first_upper, last, count + kLanes<T>, bodies);
          for (auto* v : {&reactions.x, &reactions.y, &reactions.z, &reactions.m}) {
            v->resize(count + kLanes<T>);
            std::fill_n(v->begin(), own, T(0));
          }
          mutual(MutualBodies<T>{bodies.x.data(), bodies.y.data(), bodies.z.data(), bodies.m.data(), reactions.x.data(),
                                 reactions.y.data(), reactions.z.data(), pot ? reactions.m.data() : nullptr,
                                 node.count, own, count},
                 eps2);
          add_sums(reactions, 0, node.first, node.count, pot != nullptr);
          std::size_t at = own;
          for (std::uint32_t s = first_upper; s < last; ++s) {
            const std::uint32_t size = tree_.nodes[lists_.p2p_source[s]].count;
            add_sums(reactions, at, reaction_at_[s], size, pot != nullptr);
            at += size;
          }
        }
    });
    const int terms = tables_.terms;
    ThreadPool::instance().parallel_for(lists_.leaves.size(), 8, threads, [&](std::size_t begin, std::size_t end) {
      std::vector<double> t(terms);
      // The leaf's offsets and far field (acceleration, potential) in lanes, padded to 8.
      std::vector<double> lanes;
      for (std::size_t l = begin; l < end; ++l) {
        const std::uint32_t leaf = lists_.leaves[l];
        const TreeNode<T>& own = tree_.nodes[leaf];
        for (std::uint32_t k = import_start_[leaf]; k < import_start_[leaf + 1]; ++k)
          add_sums(sums_, import_slot_[k], own.first, own.count, pot != nullptr);
        const double* L = local_.data() + leaf * terms;
        const std::size_t count = leaf_lanes(own, leaf, 7, lanes);
        double* u = lanes.data();
        double* far = u + 3 * count;
        const bool in_lanes = l2p(tables_.order, L, FmmL2PBodies{u, u + count, u + 2 * count, count, far,
                                                                  far + count, far + 2 * count,
                                                                  pot ? far + 3 * count : nullptr});
        for (std::size_t j = 0; j < own.count; ++j) {
          const std::size_t p = own.first + j;
          double body[4];
          if (in_lanes) {
            for (int c = 0; c < 4; ++c) body[c] = far[c * count + j];
          } else {
            const double v[3] = {u[j], u[count + j], u[2 * count + j]};
            fmm_monomials(tables_, v, t.data());
            fmm_l2p(tables_, t.data(), L, body);
          }
          // The sums are in the kernel's units (8 a, -2 u): exact scalings.
          const std::size_t i = order_[p];
          acc[3 * i] = static_cast<T>(T(0.125) * sums_.x[p] + body[0]);
          acc[3 * i + 1] = static_cast<T>(T(0.125) * sums_.y[p] + body[1]);
          acc[3 * i + 2] = static_cast<T>(T(0.125) * sums_.z[p] + body[2]);
          if (pot) pot[i] = static_cast<T>(T(-0.5) * sums_.m[p] + body[3]);
        }
      }
    });
    particle_pairs_ = std::accumulate(pairs.begin(), pairs.end(), std::uint64_t(0));
  }

  // sums_[to + j] += from[at + j] for j < count (m: the potentials'). 
  void add_sums(const SortedParticles<T>& from, std::size_t at, std::size_t to, std::size_t count, bool potential) {
    auto add = [count](const T* __restrict a, T* __restrict b) {
      for (std::size_t j = 0; j < count; ++j) b[j] += a[j];
    };
    add(from.x.data() + at, sums_.x.data() + to);
    add(from.y.data() + at, sums_.y.data() + to);
    add(from.z.data() + at, sums_.z.data() + to);
    if (potential) add(from.m.data() + at, sums_.m.data() + to);
  }

  // A leaf's bodies padded to `own`, then those of its list entries [first, last), into
  // `bodies` of `size` entries (MutualBodies: padding has zero mass, at the body before it).
  void gather(const TreeNode<T>& node, std::size_t own, std::uint32_t first, std::uint32_t last, std::size_t size,
              SortedParticles<T>& bodies) const {
    for (auto* v : {&bodies.x, &bodies.y, &bodies.z, &bodies.m}) v->resize(size);
    std::size_t at = 0;
    auto append = [&](const TreeNode<T>& leaf) {
      std::copy_n(sorted_.x.data() + leaf.first, leaf.count, bodies.x.data() + at);
      std::copy_n(sorted_.y.data() + leaf.first, leaf.count, bodies.y.data() + at);
      std::copy_n(sorted_.z.data() + leaf.first, leaf.count, bodies.z.data() + at);
      std::copy_n(sorted_.m.data() + leaf.first, leaf.count, bodies.m.data() + at);
      at += leaf.count;
    };
    auto pad = [&](std::size_t to) {
      for (auto* v : {&bodies.x, &bodies.y, &bodies.z}) std::fill(v->begin() + at, v->begin() + to, (*v)[at - 1]);
      std::fill(bodies.m.begin() + at, bodies.m.begin() + to, T(0));
      at = to;
    };
    append(node);
    pad(own);
    for (std::uint32_t s = first; s < last; ++s) append(tree_.nodes[lists_.p2p_source[s]]);
    pad(size);
  }

  FmmTables tables_;
  std::vector<std::uint32_t> order_, order_scratch_, skip_, count_, leaf_box_;  // count_: bodies a node (heavy nodes)
  std::vector<std::uint64_t> keys_, key_scratch_;
  SortedParticles<T> sorted_;
  Octree<T> tree_;
  FmmLists lists_;
  FmmWalkStorage walk_storage_;
  std::vector<double> multipole_, local_;
  std::vector<float> multipole_f32_;  // float expansions: the signed multipoles M2L reads
  int expansion_bits_ = 64;
  std::size_t m2l_redone_ = 0;  // float expansions: targets whose float M2L was not finite
  FmmStageSeconds stages_;
  std::uint64_t particle_pairs_ = 0;
  // The mutual P2P's schedule (p2p_schedule) and sums: n bodies' (key order), then the slots.
  std::vector<std::uint32_t> group_start_, upper_start_, reaction_at_, import_start_, import_slot_;
  std::size_t sums_size_ = 0;
  SortedParticles<T> sums_;  // in the kernel's units: x, y, z 8 a; m -2 u
};

template <typename T>
FmmEngine<T>::FmmEngine() : passes_(std::make_unique<FmmPasses<T>>()) {}

template <typename T>
FmmEngine<T>::~FmmEngine() = default;

template <typename T>
void FmmEngine<T>::evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta, int order,
                            double heavy_share, std::size_t leaf_capacity, bool float_expansions, unsigned threads,
                            const SimdKernels& kernels, T* acc, T* pot) {
  passes_->evaluate(pos, mass, n, softening, theta, order, heavy_share, leaf_capacity, float_expansions, threads,
                    kernels, acc, pot);
}

template <typename T>
FmmStats FmmEngine<T>::stats() const {
  return passes_->stats();
}

template <typename T>
const FmmLists& FmmEngine<T>::lists() const {
  return passes_->lists();
}

template class FmmEngine<float>;
template class FmmEngine<double>;

void check_fmm_parameters(double softening, double theta, int order, std::size_t leaf_capacity) {
  if (!(softening >= 0.0)) throw std::invalid_argument("softening must be >= 0");
  if (!(theta >= 0.0 && theta < 1.0)) throw std::invalid_argument("FMM theta must be in [0, 1)");
  if (order < 1 || order > kFmmMaxOrder)
    throw std::invalid_argument("FMM order must be between 1 and " + std::to_string(kFmmMaxOrder));
  if (leaf_capacity < 1) throw std::invalid_argument("leaf_capacity must be >= 1");
}

void check_heavy_share(double heavy_share) {
  if (!(heavy_share >= 0.0 && heavy_share < 1.0)) throw std::invalid_argument("heavy_share must be in [0, 1)");
}

}  // namespace orrery
