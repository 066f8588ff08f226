// Builds the SimdKernels table an simd_*.cpp file exports from the kernel templates.
#pragma once

#include <cstddef>

#include "ceilings_kernel.hpp"
#include "direct_kernel.hpp"
#include "direct_vjp_kernel.hpp"
#include "flock_kernel.hpp"
#include "flock_lanes.hpp"
#include "fmm_kernels.hpp"
#include "fmm_l2p_kernel.hpp"
#include "fmm_p2p_kernel.hpp"
#include "fmm_passes_kernel.hpp"
#include "simd_kernels.hpp"
#include "tree_kernels.hpp"

namespace orrery {

// Registers of targets per block in the direct sum's VJP: it keeps about twenty values a
// target (two registers each measured no faster with AVX-512).
inline constexpr std::size_t kVjpRegisters = 1;

// The table an simd_*.cpp file exports: Vec is its traits template, K32/K64 the registers of
// targets per block in the direct kernel, FlockLanes the boids kernel's lane traits;
// narrow_to_half the file's own conversion loop (its instructions are not Vec operations).
template <template <typename> class Vec, std::size_t K32, std::size_t K64, class FlockLanes>
constexpr SimdKernels make_simd_kernels(const char* name, NarrowToHalfFn narrow_to_half) {
  return SimdKernels{name,
                    K32 * Vec<float>::lanes,
                    K64 * Vec<double>::lanes,
                    Vec<float>::refinement,
                    Vec<double>::refinement,
                    SourceLaw<Vec<float>>::stride,
                    SourceLaw<Vec<double>>::stride,
                    &pack_sources<Vec<float>>,
                    &pack_sources<Vec<double>>,
                    &direct_blocks_dispatch<Vec<float>, K32>,
                    &direct_blocks_dispatch<Vec<double>, K64>,
                    kVjpRegisters * Vec<double>::lanes,
                    vjp_source_stride<Vec<double>>(),
                    &pack_vjp_source_terms<Vec<double>>,
                    &direct_vjp_dispatch<Vec<double>, kVjpRegisters>,
                    &kernel_inverse_sqrt<Vec<float>>,
                    &kernel_inverse_sqrt<Vec<double>>,
                    &kernel_inverse_cube<Vec<float>>,
                    &kernel_inverse_cube<Vec<double>>,
                    &fma_probe<Vec<float>>,
                    &fma_probe<Vec<double>>,
                    &sqrt_div_probe<Vec<float>>,
                    &sqrt_div_probe<Vec<double>>,
                    estimate_probe_or_null<Vec<float>>(),
                    estimate_probe_or_null<Vec<double>>(),
                    &read_probe<Vec<double>>,
                    &tree_monopole_dispatch<Vec<float>>,
                    &tree_monopole_dispatch<Vec<double>>,
                    &tree_quadrupole_dispatch<Vec<float>>,
                    &tree_quadrupole_dispatch<Vec<double>>,
                    &flock_blocks<FlockLanes, false>,
                    &flock_blocks<FlockLanes, true>,
                    &fmm_m2l_kernel<Vec<float>>,
                    &fmm_m2l_kernel<Vec<double>>,
                    &fmm_p2p_dispatch<Vec<float>>,
                    &fmm_p2p_dispatch<Vec<double>>,
                    &fmm_upward_lanes<Vec<double>, true>,
                    &fmm_upward_lanes<Vec<double>, false>,
                    &fmm_downward_lanes<Vec<double>>,
                    &fmm_l2p_lanes<Vec<double>>,
                    narrow_to_half,
                    &splat_project<Vec<float>>,
                    &splat_band<Vec<float>>};
}

}  // namespace orrery
