// Binds the probes of this machine's ceilings (ceilings.hpp), the GIL released while they run.
#include <cstdint>
#include <string>

#include "ceilings.hpp"
#include "python/arrays.hpp"

namespace orrery {

void register_ceilings(py::module_& m) {
  m.def(
      "probe_operations",
      [](const std::string& probe, const std::string& precision, std::uint64_t rounds, unsigned threads,
         const std::string& simd) {
        const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
        py::gil_scoped_release release;
        return probe_operations(probe, precision, rounds, threads, kernels);
      },
      py::arg("probe"), py::arg("precision"), py::arg("rounds"), py::arg("threads") = 0, py::arg("simd") = "",
      "Run a throughput probe ('fma': flop, 'sqrt_div': sqrt+divide pairs, 'rsqrt_estimate': "
      "approximate 1/sqrt) on every thread; returns the operations performed.");
  m.def(
      "probe_read_bytes",
      [](const CArray<double>& buffer, unsigned threads, const std::string& simd) {
        const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
        py::gil_scoped_release release;
        return probe_read_bytes(buffer.data(), static_cast<std::size_t>(buffer.size()), threads, kernels);
      },
      py::arg("buffer"), py::arg("threads") = 0, py::arg("simd") = "",
      "Read a float64 buffer once across the threads; returns the bytes read (whole MiB).");
}

}  // namespace orrery
