// Binds cpu-fmm (fmm.hpp): the solver state as FmmF32/FmmF64, and its tables, lists and opening
// angles as arrays so that the device FMM can be built and checked with the host's.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "fmm.hpp"
#include "parallel.hpp"
#include "python/arrays.hpp"

namespace orrery {
namespace {

template <typename T>
py::dict stats(const FmmEngine<T>& engine) {
  const FmmStats s = engine.stats();
  py::dict d;
  d["sort_s"] = s.stages.sort;
  d["build_s"] = s.stages.build;
  d["walk_s"] = s.stages.walk;
  d["upward_s"] = s.stages.upward;
  d["m2l_s"] = s.stages.m2l;
  d["p2p_s"] = s.stages.p2p;
  d["downward_s"] = s.stages.downward;
  d["m2l_interactions"] = s.m2l_interactions;
  d["particle_particle"] = s.particle_particle;
  d["nodes"] = s.nodes;
  d["leaves"] = s.leaves;
  d["depth"] = s.depth;
  d["terms"] = s.terms;
  d["expansion_bits"] = s.expansion_bits;
  d["m2l_redone_in_double"] = s.m2l_redone_in_double;
  return d;
}

py::dict lists_as_dict(const FmmLists& lists);

template <typename T>
void register_engine(py::module_& m, const char* name) {
  py::class_<FmmEngine<T>>(m, name, "Fast multipole solver state (buffers reused across evaluations).")
      .def(py::init<>())
      .def(
          "evaluate",
          [](FmmEngine<T>& self, const CArray<T>& pos, const CArray<T>& mass, double softening, double theta,
             int order, std::size_t leaf_capacity, unsigned threads, bool want_potential, const std::string& simd,
             const std::string& expansions, double heavy_share) {
            std::size_t n = check_positions_and_masses(pos, mass);
            check_fmm_parameters(softening, theta, order, leaf_capacity);
            check_heavy_share(heavy_share);
            if (expansions != "f64" && expansions != "f32")
              throw std::invalid_argument("expansions must be f64 or f32, got '" + expansions + "'");
            if (n == 0) throw std::invalid_argument("no particles");
            const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
            return forces<T>(n, want_potential, [&](T* a, T* phi) {
              self.evaluate(pos.data(), mass.data(), n, softening, theta, order, heavy_share, leaf_capacity,
                            expansions == "f32", resolve_threads(threads), kernels, a, phi);
            });
          },
          py::arg("pos"), py::arg("mass"), py::arg("softening"), py::arg("theta"), py::arg("order"),
          py::arg("leaf_capacity"), py::arg("threads") = 0, py::arg("potential") = false, py::arg("simd") = "",
          py::arg("expansions") = "f64", py::arg("heavy_share") = 0.0,
          "Accelerations (n, 3) and potentials (n,) or None, in the caller's order; `expansions` f32 runs M2L "
          "in float lanes (the other expansion stages stay in double); `heavy_share` > 0 opens pairs with a "
          "node holding more than that share of the bodies at a smaller angle (fmm_lists.hpp).")
      .def_property_readonly("stats", &stats<T>,
                             "Last evaluation: stage seconds, interaction counts, node/leaf counts.")
      .def_property_readonly(
          "lists", [](const FmmEngine<T>& self) { return lists_as_dict(self.lists()); },
          "Last evaluation's interaction lists, depth order and centres (fmm_lists.hpp), as arrays.");
}

py::dict tables_dict(int order) {
  const FmmTables tb = fmm_tables(order);
  py::dict d;
  d["order"] = tb.order;
  d["terms"] = tb.terms;
  d["gradient_terms"] = tb.gradient_terms;
  d["degree"] = copy_vector([&] {
    std::vector<std::int32_t> v(tb.terms);
    for (int q = 0; q < tb.terms; ++q) v[q] = tb.nx[q] + tb.ny[q] + tb.nz[q];
    return v;
  }());
  for (auto [key, vec] : {std::pair{"nx", &tb.nx}, {"ny", &tb.ny}, {"nz", &tb.nz}, {"mono_parent", &tb.mono_parent},
                          {"mono_axis", &tb.mono_axis}, {"pair_start", &tb.pair_start}, {"pair_n", &tb.pair_n},
                          {"pair_sum", &tb.pair_sum}})
    d[key] = copy_vector(*vec);
  d["mono_scale"] = copy_vector(tb.mono_scale);
  d["factorial"] = copy_vector(tb.factorial);
  for (int i = 0; i < 3; ++i) {
    d[("minus_one_" + std::to_string(i)).c_str()] = copy_vector(tb.minus_one[i]);
    d[("minus_two_" + std::to_string(i)).c_str()] = copy_vector(tb.minus_two[i]);
    d[("plus_one_" + std::to_string(i)).c_str()] = copy_vector(tb.plus_one[i]);
  }
  return d;
}

// The lists as arrays, each target's M2L sources ascending (fmm_lists.hpp).
py::dict lists_as_dict(const FmmLists& lists) {
  py::dict d;
  std::vector<std::uint32_t> m2l_source = lists.m2l_source;
  sort_sources(lists.m2l_start, m2l_source, resolve_threads(0));
  d["m2l_start"] = copy_vector(lists.m2l_start);
  d["m2l_source"] = copy_vector(m2l_source);
  d["p2p_start"] = copy_vector(lists.p2p_start);
  d["p2p_source"] = copy_vector(lists.p2p_source);
  d["leaves"] = copy_vector(lists.leaves);
  d["parent"] = copy_vector(lists.parent);
  d["depth_start"] = copy_vector(lists.depth_start);
  d["by_depth"] = copy_vector(lists.by_depth);
  py::array_t<double> centre({lists.centre.size() / 3, std::size_t(3)});
  std::copy(lists.centre.begin(), lists.centre.end(), centre.mutable_data());
  d["centre"] = centre;
  return d;
}

using NodeWords = py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>;

py::dict lists_dict(const NodeWords& skip, const NodeWords& leaf_box, const std::array<double, 3>& cube_min,
                    double cube_side, double theta, const NodeWords& count, int order, double heavy_share,
                    unsigned threads) {
  const std::size_t nodes = skip.size();
  if (nodes == 0 || leaf_box.ndim() != 2 || std::size_t(leaf_box.shape(0)) != nodes || leaf_box.shape(1) != 6)
    throw std::invalid_argument("skip must be non-empty and leaf_box of shape (nodes, 6)");
  if (std::size_t(count.size()) != nodes) throw std::invalid_argument("count must hold one entry per node");
  check_heavy_share(heavy_share);
  if (!(cube_side > 0.0)) throw std::invalid_argument("cube_side must be > 0");
  const BoundingCube cube{{cube_min[0], cube_min[1], cube_min[2]}, cube_side};
  for (std::size_t i = 0; i < nodes; ++i) {
    const std::uint32_t s = skip.data()[i];
    if (s <= i || s > nodes) throw std::invalid_argument("not a depth-first node array (skip out of range)");
  }
  if (skip.data()[0] != nodes) throw std::invalid_argument("node 0 must be the root");
  FmmLists lists;
  {
    py::gil_scoped_release release;
    FmmWalkStorage storage;
    fmm_interaction_lists(skip.data(), count.data(), leaf_box.data(), nodes, cube,
                          fmm_opening(theta, order, heavy_share, count.data()[0]), resolve_threads(threads), storage,
                          lists);
  }
  return lists_as_dict(lists);
}

}  // namespace

void register_fmm(py::module_& m) {
  m.attr("FMM_MAX_ORDER") = kFmmMaxOrder;
  register_engine<float>(m, "FmmF32");
  register_engine<double>(m, "FmmF64");
  m.def("fmm_tables", &tables_dict, py::arg("order"),
        "The FMM index tables of one expansion order (fmm_expansions.hpp), as arrays.");
  m.def("fmm_lists", &lists_dict, py::arg("skip"), py::arg("leaf_box"), py::arg("cube_min"),
        py::arg("cube_side"), py::arg("theta"), py::arg("count"), py::arg("order"), py::arg("heavy_share") = 0.0,
        py::arg("threads") = 0,
        "The FMM dual walk's interaction lists of a depth-first node array (fmm_lists.hpp), as arrays: count "
        "holds each node's bodies (the root's: all), order the expansion order the heavy angles follow.");
  m.def(
      "fmm_opening",
      [](double theta, int order, double heavy_share, std::size_t bodies) {
        check_heavy_share(heavy_share);
        const FmmOpening opening = fmm_opening(theta, order, heavy_share, bodies);
        py::dict d;
        d["theta2"] = opening.theta2;
        d["heavy"] = opening.heavy;
        d["heavy_theta2"] = copy_vector(std::vector<double>(opening.heavy_theta2.begin(), opening.heavy_theta2.end()));
        return d;
      },
      py::arg("theta"), py::arg("order"), py::arg("heavy_share"), py::arg("bodies"),
      "The walk's squared angles (fmm_lists.hpp's FmmOpening): theta2, heavy (0: no node is heavy) and "
      "heavy_theta2, so that a device walk decides with the host's values.");
}

}  // namespace orrery
