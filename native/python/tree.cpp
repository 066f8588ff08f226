// Binds cpu-tree (tree.hpp): the solver state as TreeF32/TreeF64 and the host tree build as a
// dict of arrays, the trees built with the GIL released.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel.hpp"
#include "python/arrays.hpp"
#include "tree.hpp"

namespace orrery {
namespace {

template <typename T>
py::dict stats(const TreeEngine<T>& engine) {
  const TreeStageSeconds& stages = engine.stages();
  const WalkCounts& counts = engine.counts();
  const std::size_t n = engine.particles();
  py::dict d;
  d["sort_s"] = stages.sort;
  d["build_s"] = stages.build;
  d["moments_s"] = stages.moments;
  d["walk_s"] = stages.walk;
  d["particle_particle"] = counts.particle_particle;
  d["particle_cell"] = counts.particle_cell;
  d["interactions_per_particle"] =
      n ? double(counts.particle_particle + counts.particle_cell) / double(n) : 0.0;
  d["nodes"] = engine.tree().nodes.size();
  d["leaves"] = engine.tree().leaves.size();
  d["depth"] = engine.tree().depth;
  return d;
}

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
      .def_property_readonly("stats", &stats<T>,
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
