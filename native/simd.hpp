// Run-time choice of the instruction set: the widest level both this build and this CPU have,
// lowered by ORRERY_SIMD=scalar|avx2|avx512|neon|sve or by an explicit request (tests check every
// path). x86-64 builds have scalar, avx2 and avx512; AArch64 builds scalar, neon and sve, whose
// table is the one of the CPU's vector length (128, 256 or 512 bits; other lengths have no sve).
#pragma once

#include <string>
#include <vector>

#include "simd_kernels.hpp"

namespace orrery {

enum class SimdLevel : int { scalar = 0, avx2 = 1, avx512 = 2, neon = 3, sve = 4 };

const char* simd_name(SimdLevel level);

// Levels compiled into this build, lowest first.
std::vector<SimdLevel> compiled_simd_levels();

// The compiled levels this CPU (and its operating system) can run, lowest first.
std::vector<SimdLevel> cpu_simd_levels();

// The widest of them.
SimdLevel cpu_simd_level();

// `requested` names a level, or is empty for ORRERY_SIMD if set, else cpu_simd_level().
// Throws std::invalid_argument for an unknown name and std::runtime_error for a level this CPU
// or build lacks.
SimdLevel choose_simd_level(const std::string& requested);

const SimdKernels& simd_kernels(SimdLevel level);

}  // namespace orrery
