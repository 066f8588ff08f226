// Binds the run-time choice of the instruction set (simd.hpp): what the build and the CPU offer,
// and the float16 narrowing the recorder uses.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "parallel.hpp"
#include "python/arrays.hpp"
#include "simd.hpp"

namespace orrery {
namespace {

std::string compiler_description() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return "unknown compiler";
#endif
}

py::dict build_info() {
  py::dict info;
  info["compiler"] = compiler_description();
  info["build_type"] = ORRERY_BUILD_TYPE;
  info["flags"] = ORRERY_BASE_FLAGS;
  py::dict level_flags;
  py::list compiled;
  for (SimdLevel level : compiled_simd_levels()) compiled.append(simd_name(level));
  level_flags["scalar"] = "";
#ifdef ORRERY_X86_KERNELS
  level_flags["avx2"] = ORRERY_AVX2_FLAGS;
  level_flags["avx512"] = ORRERY_AVX512_FLAGS;
#endif
#ifdef ORRERY_ARM64_KERNELS
  level_flags["neon"] = "";
  level_flags["sve"] = ORRERY_SVE_FLAGS " -msve-vector-bits=128, 256 or 512 (a table each)";
#endif
  info["simd_compiled"] = compiled;
  info["simd_flags"] = level_flags;
  info["simd_cpu"] = simd_name(cpu_simd_level());
  const char* from_env = std::getenv("ORRERY_SIMD");
  info["simd_env"] = from_env ? py::object(py::str(from_env)) : py::object(py::none());
  info["threads"] = ThreadPool::hardware_threads();
  return info;
}

py::dict level_description(const std::string& requested) {
  SimdLevel level = choose_simd_level(requested);
  const SimdKernels& kernels = simd_kernels(level);
  py::dict d;
  d["level"] = simd_name(level);
  d["kernels"] = kernels.name;  // the level's table: sve128, sve256 or sve512 for sve
  d["block_f32"] = kernels.block_f32;
  d["block_f64"] = kernels.block_f64;
  d["rsqrt_f32"] = kernels.rsqrt_f32;
  d["rsqrt_f64"] = kernels.rsqrt_f64;
  return d;
}

void narrow_to_half(py::array source, py::array out, const std::string& simd) {
  // Checked here, not coerced: a silent copy would hide the cost this function exists to save.
  if (!py::isinstance<py::array_t<float>>(source) || !(source.flags() & py::array::c_style))
    throw std::invalid_argument("narrow_to_half: source must be a C-contiguous float32 array");
  if (out.dtype().kind() != 'f' || out.itemsize() != 2 || !(out.flags() & py::array::c_style) ||
      !out.writeable())
    throw std::invalid_argument("narrow_to_half: out must be a writable C-contiguous float16 array");
  if (out.size() != source.size())
    throw std::invalid_argument("narrow_to_half: source and out must hold as many values");
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  const auto* from = static_cast<const float*>(source.data());
  auto* to = static_cast<std::uint16_t*>(out.mutable_data());
  const std::size_t count = static_cast<std::size_t>(source.size());
  py::gil_scoped_release unlocked;  // the recorder's writer thread converts while Python runs
  kernels.narrow_to_half(from, to, count);
}

}  // namespace

void register_simd(py::module_& m) {
  m.def("narrow_to_half", &narrow_to_half, py::arg("source"), py::arg("out"),
        py::arg("simd") = "",
        "Write float32 `source` into float16 `out` (same size, both C-contiguous), rounding to "
        "nearest even: numpy's astype(float16) bits, with F16C/AVX-512 where the CPU has them. "
        "Releases the GIL.");
  m.def("build_info", &build_info,
        "How this module was built: compiler, flags, SIMD levels compiled and the CPU's level.");
  m.def("simd_level", &level_description, py::arg("simd") = "",
        "The SIMD level a call with this `simd` argument would use ('' = ORRERY_SIMD or the "
        "widest available) and how its kernels compute 1/sqrt. Raises ValueError for an unknown "
        "name, RuntimeError for a level this CPU lacks.");
  m.def("simd_levels", [] {
    py::list levels;
    for (SimdLevel level : cpu_simd_levels()) levels.append(simd_name(level));
    return levels;
  }, "The SIMD levels this CPU can run, lowest first.");
}

}  // namespace orrery
