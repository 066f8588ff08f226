// The VJP of cpu-direct's direct sum, float64: (pos_bar, mass_bar) from the cotangents of the
// accelerations (and potentials), and where asked the accelerations too, the same bits as
// direct_accelerations<double> at the same SIMD level (one pass for a reversible run's backward
// step). Lays the particles out once as packed sources and padded target arrays, hands whole
// blocks of targets to the thread pool and writes the results back; each target's sums are
// independent of the block and thread (direct_vjp_kernel.hpp), so any thread count gives the
// same bits.
#pragma once

#include <cstddef>

#include "simd.hpp"

namespace orrery {

// pos_bar (n, 3) and mass_bar (n,) from the cotangents acc_bar (n, 3) and pot_bar (n,) (null:
// none) of the n particles pos (n, 3), mass (n,) (G = 1); where acc is not null, also the
// accelerations (n, 3). threads = 0 uses every hardware thread.
void direct_vjp(const double* pos, const double* mass, const double* acc_bar, const double* pot_bar, std::size_t n,
                double softening, unsigned threads, const SimdKernels& kernels, double* pos_bar, double* mass_bar,
                double* acc);

}  // namespace orrery
