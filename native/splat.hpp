// The particle pass's splat on the host (splat_kernel.hpp; app/render/kernels/splat.cl is the same
// splat on a compute device): project the particles, list them per band of rows, draw the bands
// on all requested threads. app/render/_host_splat_pass.py calls it through the bindings and
// uploads the light into the accumulation texture.
#pragma once

#include "simd.hpp"
#include "splat_kernel.hpp"

namespace orrery {

// Gaussian point sprites of `in` added into `light` ((in.height, in.width, 4) floats, bottom row
// first, overwritten) with 64-bit fixed-point sums: the same bits for any thread count and SIMD
// level. Throws std::invalid_argument for values out of range (counts, modes, sizes). One
// scratch per calling thread is kept between frames. threads = 0 uses every hardware thread.
void splat_points(const SplatInput& in, float* light, unsigned threads, const SimdKernels& kernels);

}  // namespace orrery
