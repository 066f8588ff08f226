#include "simd.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cpu_support.hpp"

namespace orrery {

const char* simd_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::neon: return "neon";
    case SimdLevel::sve: return "sve";
    default: return "scalar";
  }
}

std::vector<SimdLevel> compiled_simd_levels() {
#if defined(ORRERY_X86_KERNELS)
  return {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512};
#elif defined(ORRERY_ARM64_KERNELS)
  return {SimdLevel::scalar, SimdLevel::neon, SimdLevel::sve};
#else
  return {SimdLevel::scalar};
#endif
}

namespace {

#ifdef ORRERY_ARM64_KERNELS
// The SVE table of this process's vector length, null for a length without one.
const SimdKernels* sve_kernels() {
  switch (cpu_sve_vector_bits()) {
    case 128: return &kSve128Kernels;
    case 256: return &kSve256Kernels;
    case 512: return &kSve512Kernels;
    default: return nullptr;
  }
}
#endif

bool cpu_runs(SimdLevel level) {
  switch (level) {
#ifdef ORRERY_X86_KERNELS
    case SimdLevel::avx512: return cpu_runs_avx512();
    case SimdLevel::avx2: return cpu_runs_avx2();
#endif
#ifdef ORRERY_ARM64_KERNELS
    case SimdLevel::sve: return sve_kernels() != nullptr;
#endif
    // Every AArch64 CPU has NEON; a level this build lacks is not in compiled_simd_levels().
    default: return true;
  }
}

}  // namespace

std::vector<SimdLevel> cpu_simd_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel level : compiled_simd_levels())
    if (cpu_runs(level)) levels.push_back(level);
  return levels;
}

SimdLevel cpu_simd_level() { return cpu_simd_levels().back(); }

namespace {

SimdLevel parse_simd_level(const std::string& name, const char* source) {
  constexpr SimdLevel kEveryLevel[] = {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512,
                                       SimdLevel::neon, SimdLevel::sve};
  std::string names;
  for (SimdLevel level : kEveryLevel) {
    if (name == simd_name(level)) return level;
    names += std::string(names.empty() ? "" : level == SimdLevel::sve ? " or " : ", ") + simd_name(level);
  }
  throw std::invalid_argument(std::string(source) + " must be " + names + ", got '" + name + "'");
}

}  // namespace

SimdLevel choose_simd_level(const std::string& requested) {
  const std::vector<SimdLevel> runnable = cpu_simd_levels();
  const char* from_env = std::getenv("ORRERY_SIMD");
  SimdLevel level = runnable.back();
  if (!requested.empty())
    level = parse_simd_level(requested, "simd");
  else if (from_env && *from_env)
    level = parse_simd_level(from_env, "ORRERY_SIMD");
  for (SimdLevel available : runnable)
    if (available == level) return level;
  throw std::runtime_error(std::string("SIMD level ") + simd_name(level) +
                           " is not available: this CPU and build go up to " + simd_name(runnable.back()));
}

const SimdKernels& simd_kernels(SimdLevel level) {
#ifdef ORRERY_X86_KERNELS
  if (level == SimdLevel::avx512) return kAvx512Kernels;
  if (level == SimdLevel::avx2) return kAvx2Kernels;
#endif
#ifdef ORRERY_ARM64_KERNELS
  if (level == SimdLevel::neon) return kNeonKernels;
  if (level == SimdLevel::sve && sve_kernels()) return *sve_kernels();
#endif
  return kScalarKernels;
}

}  // namespace orrery
