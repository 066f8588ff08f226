// The VJP of cpu-direct's direct sum, float64: (pos_bar, mass_bar) from the cotangents of the
// accelerations (and potentials), and with forces=True the accelerations too, the same bits as
// direct_accelerations_f64 at the same SIMD level (one pass for a reversible run's backward step). Lays the particles out once as packed sources and padded
// target arrays, hands whole blocks of targets to the thread pool and writes the results back;
// each target's sums are independent of the block and thread (direct_vjp_kernel.hpp), so any
// thread count gives the same bits. The GIL is released from layout to write-back.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "arrays.hpp"
#include "parallel.hpp"
#include "simd.hpp"

namespace orrery {
namespace {

py::tuple direct_vjp_f64(const CArray<double>& pos, const CArray<double>& mass,
                         const CArray<double>& acc_bar, std::optional<CArray<double>> pot_bar,
                         double softening, unsigned threads, const std::string& simd,
                         bool forces) {
  const std::size_t n = check_positions_and_masses(pos, mass);
  if (acc_bar.ndim() != 2 || std::size_t(acc_bar.shape(0)) != n || acc_bar.shape(1) != 3)
    throw std::invalid_argument("acc_bar must have the positions' shape (n, 3)");
  if (pot_bar && (pot_bar->ndim() != 1 || std::size_t(pot_bar->shape(0)) != n))
    throw std::invalid_argument("pot_bar must have the masses' shape (n,)");
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const std::size_t block = kernels.block_vjp_f64;
  const std::size_t blocks = (n + block - 1) / block;
  const std::size_t padded = blocks * block;
  if (threads == 0) threads = ThreadPool::hardware_threads();
  constexpr std::size_t F = DirectVjpInput::fields;
  const std::size_t stride = kernels.vjp_source_stride;

  CArray<double> pos_bar({n, std::size_t(3)});
  CArray<double> mass_bar(n);
  CArray<double> acc(forces ? std::vector<std::size_t>{n, 3} : std::vector<std::size_t>{0});
  double* a = forces ? acc.mutable_data() : nullptr;
  const double* p = pos.data();
  const double* m = mass.data();
  const double* ab = acc_bar.data();
  const double* pb = pot_bar ? pot_bar->data() : nullptr;
  double* px = pos_bar.mutable_data();
  double* mb = mass_bar.mutable_data();
  {
    py::gil_scoped_release release;
    // Padding targets sit at the origin with no mass and no cotangent; their lanes are
    // computed and never written back.
    std::vector<double> sources(stride * n), targets(F * padded, 0.0),
        out((forces ? 7 : 4) * padded);
    bool positive_masses = true;
    for (std::size_t i = 0; i < n; ++i) {
      positive_masses = positive_masses && m[i] > 0 && std::isfinite(8.0 / m[i]);
      const double fields[F] = {p[3 * i], p[3 * i + 1], p[3 * i + 2], m[i],
                                ab[3 * i], ab[3 * i + 1], ab[3 * i + 2], pb ? pb[i] : 0.0};
      for (std::size_t f = 0; f < F; ++f) {
        sources[stride * i + f] = fields[f];
        targets[f * padded + i] = fields[f];
      }
      kernels.vjp_mass_terms(m[i], sources.data() + stride * i + F);
    }
    const DirectVjpInput in{sources.data(), targets.data(), padded, n, softening * softening,
                            pb != nullptr, positive_masses};
    double* o = out.data();
    const DirectVjpOutput result{o, o + padded, o + 2 * padded, o + 3 * padded,
                                 forces ? o + 4 * padded : nullptr,
                                 forces ? o + 5 * padded : nullptr,
                                 forces ? o + 6 * padded : nullptr};
    // Chunks of about 2^18 pairs, as cpu-direct's.
    const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 18) / (block * n));
    ThreadPool::instance().parallel_for(blocks, chunk, threads, [&](std::size_t b0, std::size_t b1) {
      kernels.direct_vjp_f64(in, b0, b1, result);
    });
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t d = 0; d < 3; ++d) px[3 * i + d] = out[d * padded + i];
      mb[i] = result.mass[i];
      if (a)
        for (std::size_t d = 0; d < 3; ++d) a[3 * i + d] = out[(4 + d) * padded + i];
    }
  }
  return py::make_tuple(pos_bar, mass_bar, forces ? py::object(acc) : py::object(py::none()));
}

}  // namespace

void register_direct_vjp(py::module_& m) {
  m.def("direct_vjp_f64", &direct_vjp_f64, py::arg("pos"), py::arg("mass"), py::arg("acc_bar"),
        py::arg("pot_bar"), py::arg("softening"), py::arg("threads") = 0, py::arg("simd") = "",
        py::arg("forces") = false,
        "The VJP of the softened direct sum (G = 1) in float64: (pos_bar (n, 3), mass_bar (n,), "
        "acc (n, 3) or None) from the cotangents of the accelerations acc_bar (n, 3) and of the "
        "potentials pot_bar (n,) or None; with forces=True also the accelerations, the same bits "
        "as direct_accelerations_f64 at the same level. threads=0 uses all cores; simd='' picks "
        "ORRERY_SIMD or the widest level this CPU has. The same bits for any thread count.");
}

}  // namespace orrery
