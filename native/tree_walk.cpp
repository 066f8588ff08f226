// Group walk over the depth-first octree (see tree_walk.hpp).
#include "tree_walk.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "parallel.hpp"

namespace orrery {
namespace {

// Groups per chunk taken from the shared counter: small, because group costs vary widely.
constexpr std::size_t kGroupsPerChunk = 4;

// The interaction kernels of one SIMD level for precision T.
template <typename T>
struct Kernels {
  TreeMonopoleFn<T> monopole;
  TreeQuadrupoleFn<T> quadrupole;
};

Kernels<float> kernels_for(const SimdKernels& k, float) { return {k.tree_monopole_f32, k.tree_quadrupole_f32}; }
Kernels<double> kernels_for(const SimdKernels& k, double) { return {k.tree_monopole_f64, k.tree_quadrupole_f64}; }

// A growable array of sources written by index; reallocates only when a list outgrows it.
template <typename T>
struct SourceColumn {
  std::vector<T> data;
  void ensure(std::size_t size) {
    if (data.size() < size) data.resize(size);
  }
};

// Per-thread interaction lists and per-target partial results, reused across groups and calls.
template <typename T>
struct GroupScratch {
  SourceColumn<T> px, py, pz, pm;                                  // particles and monopole cells
  SourceColumn<T> cx, cy, cz, cm, qxx, qxy, qxz, qyy, qyz, qzz;    // quadrupole cells
  SourceColumn<T> gx, gy, gz, gm;                                  // the group's own particles
  std::vector<T> list_a[4], cell_a[4], own_a[4];                   // per target: ax, ay, az, u
};

template <typename T>
constexpr std::size_t padded(std::size_t size) {
  return (size + kLanes<T> - 1) / kLanes<T> * kLanes<T>;
}

// Padding entries: massless and at the largest finite coordinate, so they add exact zeros.
template <typename T>
void pad(std::initializer_list<SourceColumn<T>*> coordinates, std::initializer_list<SourceColumn<T>*> zeros,
         std::size_t begin, std::size_t end) {
  for (auto* c : coordinates) std::fill(c->data.begin() + begin, c->data.begin() + end, std::numeric_limits<T>::max());
  for (auto* c : zeros) std::fill(c->data.begin() + begin, c->data.begin() + end, T(0));
}

template <typename T>
GroupTargets<T> targets_into(const SortedParticles<T>& p, std::size_t first, std::size_t count, std::vector<T>* out,
                             bool potential) {
  for (int a = 0; a < 4; ++a) out[a].resize(count);
  return {p.x.data() + first, p.y.data() + first, p.z.data() + first, count,
          out[0].data(), out[1].data(), out[2].data(), potential ? out[3].data() : nullptr};
}

// Pairs inside the group (i != j): the group's particles are the sources, and each target's own
// entry is swapped for a padding entry while that target is summed.
template <typename T>
void own_group_forces(const SortedParticles<T>& p, std::size_t first, std::size_t count, T eps2, bool potential,
                      const Kernels<T>& kernels, GroupScratch<T>& s) {
  const std::size_t size = padded<T>(count);
  for (auto* c : {&s.gx, &s.gy, &s.gz, &s.gm}) c->ensure(size);
  std::copy_n(p.x.data() + first, count, s.gx.data.data());
  std::copy_n(p.y.data() + first, count, s.gy.data.data());
  std::copy_n(p.z.data() + first, count, s.gz.data.data());
  std::copy_n(p.m.data() + first, count, s.gm.data.data());
  pad<T>({&s.gx, &s.gy, &s.gz}, {&s.gm}, count, size);
  for (int a = 0; a < 4; ++a) s.own_a[a].resize(count);
  const MonopoleSources<T> sources{s.gx.data.data(), s.gy.data.data(), s.gz.data.data(), s.gm.data.data(), size};
  for (std::size_t t = 0; t < count; ++t) {
    const T keep[4] = {s.gx.data[t], s.gy.data[t], s.gz.data[t], s.gm.data[t]};
    s.gx.data[t] = s.gy.data[t] = s.gz.data[t] = std::numeric_limits<T>::max();
    s.gm.data[t] = T(0);
    const GroupTargets<T> target{p.x.data() + first + t, p.y.data() + first + t, p.z.data() + first + t, 1,
                                 &s.own_a[0][t], &s.own_a[1][t], &s.own_a[2][t],
                                 potential ? &s.own_a[3][t] : nullptr};
    kernels.monopole(sources, target, eps2);
    s.gx.data[t] = keep[0];
    s.gy.data[t] = keep[1];
    s.gz.data[t] = keep[2];
    s.gm.data[t] = keep[3];
  }
}

template <typename T>
WalkCounts walk_group(const Octree<T>& tree, const SortedParticles<T>& particles, std::uint32_t own, T eps2,
                      bool quadrupole, bool potential, const Kernels<T>& kernels, GroupScratch<T>& s,
                      const std::uint32_t* order, T* acc, T* pot) {
  const auto& nodes = tree.nodes;
  const std::size_t first = nodes[own].first, count = nodes[own].count;
  T box[6] = {particles.x[first], particles.y[first], particles.z[first],
              particles.x[first], particles.y[first], particles.z[first]};
  for (std::size_t p = first; p < first + count; ++p) {
    box[0] = std::min(box[0], particles.x[p]);
    box[1] = std::min(box[1], particles.y[p]);
    box[2] = std::min(box[2], particles.z[p]);
    box[3] = std::max(box[3], particles.x[p]);
    box[4] = std::max(box[4], particles.y[p]);
    box[5] = std::max(box[5], particles.z[p]);
  }
  const std::uint32_t node_count = static_cast<std::uint32_t>(nodes.size());
  // Every list is bounded by the particle count plus the node count (plus padding).
  const std::size_t bound = padded<T>(particles.x.size() + nodes.size());
  for (auto* c : {&s.px, &s.py, &s.pz, &s.pm}) c->ensure(bound);
  if (quadrupole)
    for (auto* c : {&s.cx, &s.cy, &s.cz, &s.cm, &s.qxx, &s.qxy, &s.qxz, &s.qyy, &s.qyz, &s.qzz}) c->ensure(bound);
  T *px = s.px.data.data(), *py = s.py.data.data(), *pz = s.pz.data.data(), *pm = s.pm.data.data();
  std::size_t listed = 0, cells = 0, listed_particles = 0;
  for (std::uint32_t i = 0; i < node_count;) {
    const TreeNode<T>& node = nodes[i];
    if (i == own) {
      i = node.skip;  // the group's own particles are summed pair by pair below
      continue;
    }
    const T dx = std::max(std::max(box[0] - node.com[0], node.com[0] - box[3]), T(0));
    const T dy = std::max(std::max(box[1] - node.com[1], node.com[1] - box[4]), T(0));
    const T dz = std::max(std::max(box[2] - node.com[2], node.com[2] - box[5]), T(0));
    const T d2 = dx * dx + dy * dy + dz * dz;
    if (d2 > node.open2) {
      if (quadrupole) {
        const T* q = &tree.quadrupoles[std::size_t(i) * kQuadrupoleComponents];
        s.cx.data[cells] = node.com[0];
        s.cy.data[cells] = node.com[1];
        s.cz.data[cells] = node.com[2];
        s.cm.data[cells] = node.mass;
        s.qxx.data[cells] = q[0];
        s.qxy.data[cells] = q[1];
        s.qxz.data[cells] = q[2];
        s.qyy.data[cells] = q[3];
        s.qyz.data[cells] = q[4];
        s.qzz.data[cells] = q[5];
      } else {
        px[listed] = node.com[0];
        py[listed] = node.com[1];
        pz[listed] = node.com[2];
        pm[listed] = node.mass;
        ++listed;
      }
      ++cells;
      i = node.skip;
    } else if (node.skip == i + 1) {
      const std::size_t b = node.first, n = node.count;
      std::copy_n(particles.x.data() + b, n, px + listed);
      std::copy_n(particles.y.data() + b, n, py + listed);
      std::copy_n(particles.z.data() + b, n, pz + listed);
      std::copy_n(particles.m.data() + b, n, pm + listed);
      listed += n;
      listed_particles += n;
      ++i;
    } else {
      ++i;
    }
  }

  const std::size_t list_size = padded<T>(listed);
  pad<T>({&s.px, &s.py, &s.pz}, {&s.pm}, listed, list_size);
  kernels.monopole(MonopoleSources<T>{px, py, pz, pm, list_size},
                   targets_into(particles, first, count, s.list_a, potential), eps2);
  if (quadrupole) {
    const std::size_t cell_size = padded<T>(cells);
    pad<T>({&s.cx, &s.cy, &s.cz}, {&s.cm, &s.qxx, &s.qxy, &s.qxz, &s.qyy, &s.qyz, &s.qzz}, cells, cell_size);
    kernels.quadrupole(QuadrupoleSources<T>{s.cx.data.data(), s.cy.data.data(), s.cz.data.data(), s.cm.data.data(),
                                            s.qxx.data.data(), s.qxy.data.data(), s.qxz.data.data(), s.qyy.data.data(),
                                            s.qyz.data.data(), s.qzz.data.data(), cell_size},
                       targets_into(particles, first, count, s.cell_a, potential), eps2);
  }
  own_group_forces(particles, first, count, eps2, potential, kernels, s);

  for (std::size_t t = 0; t < count; ++t) {
    const std::size_t out = order[first + t];
    for (int a = 0; a < (potential ? 4 : 3); ++a) {
      T sum = s.list_a[a][t];
      if (quadrupole) sum += s.cell_a[a][t];
      sum += s.own_a[a][t];
      if (a < 3) acc[3 * out + a] = sum;
      else pot[out] = sum;
    }
  }
  WalkCounts counts;
  counts.particle_particle = count * listed_particles + count * (count - 1);
  counts.particle_cell = count * cells;
  return counts;
}

// Walk groups in depth-first order: the first node met with at most group_capacity particles,
// or a leaf (over capacity when its particles coincide); its subtree is then passed over.
template <typename Node>
std::vector<std::uint32_t> find_groups(const std::vector<Node>& nodes, std::size_t group_capacity) {
  std::vector<std::uint32_t> groups;
  for (std::uint32_t i = 0; i < nodes.size();) {
    if (nodes[i].count <= group_capacity || nodes[i].skip == i + 1) {
      groups.push_back(i);
      i = nodes[i].skip;
    } else {
      ++i;
    }
  }
  return groups;
}

}  // namespace

template <typename T>
WalkCounts walk_tree(const Octree<T>& tree, const SortedParticles<T>& particles, const std::uint32_t* order,
                     T eps2, bool quadrupole, std::size_t group_capacity, unsigned threads,
                     const SimdKernels& table, T* acc, T* pot) {
  const std::vector<std::uint32_t> groups = find_groups(tree.nodes, group_capacity);
  const Kernels<T> kernels = kernels_for(table, T());
  std::atomic<std::uint64_t> particle_particle{0}, particle_cell{0};
  ThreadPool::instance().parallel_for(
      groups.size(), kGroupsPerChunk, threads, [&](std::size_t g0, std::size_t g1) {
        thread_local GroupScratch<T> scratch;
        WalkCounts chunk;
        for (std::size_t g = g0; g < g1; ++g) {
          WalkCounts c = walk_group(tree, particles, groups[g], eps2, quadrupole, pot != nullptr, kernels,
                                    scratch, order, acc, pot);
          chunk.particle_particle += c.particle_particle;
          chunk.particle_cell += c.particle_cell;
        }
        particle_particle += chunk.particle_particle;
        particle_cell += chunk.particle_cell;
      });
  WalkCounts total;
  total.particle_particle = particle_particle.load();
  total.particle_cell = particle_cell.load();
  return total;
}

template WalkCounts walk_tree<float>(const Octree<float>&, const SortedParticles<float>&, const std::uint32_t*, float,
                                     bool, std::size_t, unsigned, const SimdKernels&, float*, float*);
template WalkCounts walk_tree<double>(const Octree<double>&, const SortedParticles<double>&, const std::uint32_t*,
                                      double, bool, std::size_t, unsigned, const SimdKernels&, double*, double*);

}  // namespace orrery
