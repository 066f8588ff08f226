// cpu-direct: softened direct summation, O(N^2), float32 and float64, on the SIMD level chosen at
// run time (simd.hpp) and all requested threads. Each call lays the particles out once as
// packed sources and padded target arrays, hands whole blocks of targets to the thread pool in
// dynamic chunks, and writes the results back as (n, 3). The kernel (direct_kernel.hpp) makes
// every target's sum independent of the block and thread it runs on, so the result is the same
// bits for any thread count.
#pragma once

#include <cstddef>

#include "simd.hpp"

namespace orrery {

// Softened accelerations acc (count, 3) and, where pot is not null, potentials pot (count,) of
// the sources first .. first + count - 1 (G = 1), each the same bits as in a call over all n.
// The caller checks that the targets lie within the sources; threads = 0 uses every hardware
// thread.
template <typename T>
void direct_accelerations(const T* pos, const T* mass, std::size_t n, std::size_t first, std::size_t count,
                          double softening, unsigned threads, const SimdKernels& kernels, T* acc, T* pot);

// The direct kernel's 1/sqrt (potential) or, with Cube, x^(-3/2) (accelerations) of x (n,)
// into out (n,), for measuring its error (tests, docs).
template <typename T, bool Cube>
void kernel_inverse_power(const T* x, std::size_t n, const SimdKernels& kernels, T* out);

}  // namespace orrery
