// The kernels at the baseline instruction set (no flags beyond the project's): the fallback,
// and the path ORRERY_SIMD=scalar selects.
#include "half_kernel.hpp"
#include "simd_table.hpp"
#include "simd_scalar.hpp"

namespace orrery {

// Four targets at a time give the out-of-order core independent chains to overlap.
const SimdKernels kScalarKernels = make_simd_kernels<simd_scalar::Vec, 4, 4>("scalar",
                                                                      &narrow_to_half_scalar);

}  // namespace orrery
