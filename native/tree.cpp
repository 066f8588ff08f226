// cpu-tree: Barnes-Hut gravity, rebuilt every evaluation: Morton keys and radix sort
// (morton.cpp), depth-first octree and moments (octree.cpp), group walk (tree_walk.cpp).
// Cost about N log N; accuracy set by the opening angle theta (theta = 0 is direct summation).
// The interaction kernels run on the SIMD level chosen at run time, as cpu-direct's (simd.hpp).
// Also exposes the host tree build (build_tree_f32/_f64) so the GPU tree can be compared node for node.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "morton.hpp"
#include "octree.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "stage_clock.hpp"
#include "tree_walk.hpp"

namespace orrery {
namespace {

struct StageSeconds {
  double sort = 0, build = 0, moments = 0, walk = 0;
};

// One solver's buffers, kept across evaluations so that large arrays are not reallocated.
// Nothing else carries over: seeding the sort with the last order was measured slower
// (docs/performance.md), so every evaluation starts from the caller's order.
template <typename T>
class TreeEngine {
 public:
  void build(const T* pos, const T* mass, std::size_t n, std::size_t leaf_capacity, double theta,
             bool quadrupole, unsigned threads) {
    // 32-bit particle and node indices (ADR-0010): a tree has fewer than 2N nodes.
    if (n >= (std::size_t(1) << 31)) throw std::invalid_argument("cpu-tree holds fewer than 2^31 particles");
    auto start = StageClock::now();
    tree_.cube = bounding_cube(pos, n);
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    keys_.resize(n);
    morton_keys(pos, n, tree_.cube, keys_.data(), threads);
    sort_keys(keys_, order_, key_scratch_, order_scratch_, threads);
    gather(pos, mass, n, threads);
    stages_.sort = seconds_since(start);

    start = StageClock::now();
    build_topology(keys_.data(), n, leaf_capacity, tree_);
    stages_.build = seconds_since(start);

    start = StageClock::now();
    compute_moments(sorted_.x.data(), sorted_.y.data(), sorted_.z.data(), sorted_.m.data(), theta, quadrupole,
                    threads, tree_);
    stages_.moments = seconds_since(start);
  }

  void evaluate(const T* pos, const T* mass, std::size_t n, double softening, double theta, bool quadrupole,
                std::size_t leaf_capacity, std::size_t group_capacity, unsigned threads, const SimdKernels& kernels,
                T* acc, T* pot) {
    build(pos, mass, n, leaf_capacity, theta, quadrupole, threads);
    auto start = StageClock::now();
    counts_ = walk_tree(tree_, sorted_, order_.data(), static_cast<T>(softening * softening), quadrupole,
                        group_capacity, threads, kernels, acc, pot);
    stages_.walk = seconds_since(start);
    n_ = n;
  }

  py::dict stats() const {
    py::dict d;
    d["sort_s"] = stages_.sort;
    d["build_s"] = stages_.build;
    d["moments_s"] = stages_.moments;
    d["walk_s"] = stages_.walk;
    d["particle_particle"] = counts_.particle_particle;
    d["particle_cell"] = counts_.particle_cell;
    d["interactions_per_particle"] =
        n_ ? double(counts_.particle_particle + counts_.particle_cell) / double(n_) : 0.0;
    d["nodes"] = tree_.nodes.size();
    d["leaves"] = tree_.leaves.size();
    d["depth"] = tree_.depth;
    return d;
  }

  const Octree<T>& tree() const { return tree_; }
  const std::vector<std::uint32_t>& order() const { return order_; }
  const std::vector<std::uint64_t>& keys() const { return keys_; }

 private:
  void gather(const T* pos, const T* mass, std::size_t n, unsigned threads) {
    for (auto* v : {&sorted_.x, &sorted_.y, &sorted_.z, &sorted_.m}) v->resize(n);
    ThreadPool::instance().parallel_for(n, 16384, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t k = begin; k < end; ++k) {
        const std::size_t i = order_[k];
        sorted_.x[k] = pos[3 * i];
        sorted_.y[k] = pos[3 * i + 1];
        sorted_.z[k] = pos[3 * i + 2];
        sorted_.m[k] = mass[i];
      }
    });
  }

  std::vector<std::uint32_t> order_, order_scratch_;
  std::vector<std::uint64_t> keys_, key_scratch_;
  SortedParticles<T> sorted_;
  Octree<T> tree_;
  StageSeconds stages_;
  WalkCounts counts_;
  std::size_t n_ = 0;
};

void check_tree_parameters(double softening, double theta, std::size_t leaf_capacity,
                           std::size_t group_capacity = kDefaultGroupCapacity) {
  if (!(softening >= 0.0)) throw std::invalid_argument("softening must be >= 0");
  if (!(theta >= 0.0)) throw std::invalid_argument("theta must be >= 0");
  if (leaf_capacity < 1) throw std::invalid_argument("leaf_capacity must be >= 1");
  if (group_capacity < 1) throw std::invalid_argument("group_capacity must be >= 1");
}

unsigned resolve_threads(unsigned threads) { return threads == 0 ? ThreadPool::hardware_threads() : threads; }

// The node array as a numpy structured array with the exact C layout (docs/adr/0010).
template <typename T>
py::array node_array(const std::vector<TreeNode<T>>& nodes) {
  const std::string real = sizeof(T) == 4 ? "<f4" : "<f8";
  py::list names, formats, offsets;
  auto field = [&](const char* name, const std::string& format, std::size_t offset) {
    names.append(name);
    formats.append(format);
    offsets.append(offset);
  };
  field("com", "(3,)" + real, offsetof(TreeNode<T>, com));
  field("mass", real, offsetof(TreeNode<T>, mass));
  field("open2", real, offsetof(TreeNode<T>, open2));
  field("skip", "<u4", offsetof(TreeNode<T>, skip));
  field("first", "<u4", offsetof(TreeNode<T>, first));
  field("count", "<u4", offsetof(TreeNode<T>, count));
  py::dtype dtype(names, formats, offsets, sizeof(TreeNode<T>));
  py::array out(dtype, std::vector<py::ssize_t>{static_cast<py::ssize_t>(nodes.size())});
  std::memcpy(out.mutable_data(), nodes.data(), nodes.size() * sizeof(TreeNode<T>));
  return out;
}

template <typename T>
py::dict build_tree(const CArray<T>& pos, const CArray<T>& mass, std::size_t leaf_capacity, bool quadrupole,
                    double theta, unsigned threads) {
  std::size_t n = check_positions_and_masses(pos, mass);
  check_tree_parameters(0.0, theta, leaf_capacity);
  if (n == 0) throw std::invalid_argument("a tree needs at least one particle");
  TreeEngine<T> engine;
  {
    py::gil_scoped_release release;
    engine.build(pos.data(), mass.data(), n, leaf_capacity, theta, quadrupole, resolve_threads(threads));
  }
  const Octree<T>& tree = engine.tree();
  py::dict d;
  d["order"] = copy_vector(engine.order());
  d["keys"] = copy_vector(engine.keys());
  d["nodes"] = node_array(tree.nodes);
  d["leaves"] = copy_vector(tree.leaves);
  d["cell_level"] = copy_vector(tree.cell_level);
  if (quadrupole) {
    py::array_t<T> q({tree.nodes.size(), std::size_t(kQuadrupoleComponents)});
    std::copy(tree.quadrupoles.begin(), tree.quadrupoles.end(), q.mutable_data());
    d["quadrupoles"] = q;
  } else {
    d["quadrupoles"] = py::none();
  }
  d["cube_min"] = py::make_tuple(tree.cube.min[0], tree.cube.min[1], tree.cube.min[2]);
  d["cube_side"] = tree.cube.side;
  d["depth"] = tree.depth;
  return d;
}

template <typename T>
void register_engine(py::module_& m, const char* name) {
  py::class_<TreeEngine<T>>(m, name, "Barnes-Hut tree solver state (buffers reused across evaluations).")
      .def(py::init<>())
      .def(
          "evaluate",
          [](TreeEngine<T>& self, const CArray<T>& pos, const CArray<T>& mass, double softening, double theta,
             bool quadrupole, std::size_t leaf_capacity, std::size_t group_capacity, unsigned threads,
             bool want_potential, const std::string& simd) {
            std::size_t n = check_positions_and_masses(pos, mass);
            check_tree_parameters(softening, theta, leaf_capacity, group_capacity);
            if (n == 0) throw std::invalid_argument("no particles");
            const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
            return forces<T>(n, want_potential, [&](T* a, T* phi) {
              self.evaluate(pos.data(), mass.data(), n, softening, theta, quadrupole, leaf_capacity,
                            group_capacity, resolve_threads(threads), kernels, a, phi);
            });
          },
          py::arg("pos"), py::arg("mass"), py::arg("softening"), py::arg("theta"), py::arg("quadrupole"),
          py::arg("leaf_capacity"), py::arg("group_capacity") = kDefaultGroupCapacity, py::arg("threads") = 0, py::arg("potential") = false,
          py::arg("simd") = "",
          "Accelerations (n, 3) and potentials (n,) or None, in the caller's order. simd='' picks "
          "ORRERY_SIMD or the widest level this CPU has.")
      .def_property_readonly("stats", &TreeEngine<T>::stats,
                             "Last evaluation: stage seconds, interaction counts, node/leaf counts, depth.");
}

}  // namespace

void register_tree(py::module_& m) {
  m.attr("TREE_GROUP_CAPACITY") = kDefaultGroupCapacity;
  register_engine<float>(m, "TreeF32");
  register_engine<double>(m, "TreeF64");
  const char* doc =
      "Host octree build: dict of order (sorted -> caller index), keys, nodes (structured array, ADR-0010 "
      "layout), leaves, cell_level, quadrupoles ((nodes, 6) or None), cube_min, cube_side, depth.";
  // Precision is in the name, as for every other function of the module (_f32, _f64).
  m.def("build_tree_f32", &build_tree<float>, py::arg("pos"), py::arg("mass"), py::arg("leaf_capacity") = 16,
        py::arg("quadrupole") = false, py::arg("theta") = 0.5, py::arg("threads") = 0, doc);
  m.def("build_tree_f64", &build_tree<double>, py::arg("pos"), py::arg("mass"), py::arg("leaf_capacity") = 16,
        py::arg("quadrupole") = false, py::arg("theta") = 0.5, py::arg("threads") = 0, doc);
}

}  // namespace orrery
