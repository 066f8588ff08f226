// Probes of this machine's ceilings for `orrery bench ceilings`: multiply-add, sqrt+divide and
// approximate 1/sqrt throughput per precision, and read bandwidth, on the SIMD level given and
// all requested threads. Each call does a fixed amount of work and returns how many operations
// (or bytes) that was; Python times the calls with the benchmark harness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "simd.hpp"

namespace orrery {

// Runs `probe` (fma: flop, sqrt_div: sqrt+divide pairs, rsqrt_estimate: approximate 1/sqrt) at
// `precision` (f32 or f64) for `rounds` rounds, four units per thread; returns the operations
// performed. threads = 0 uses every hardware thread.
double probe_operations(const std::string& probe, const std::string& precision, std::uint64_t rounds,
                        unsigned threads, const SimdKernels& kernels);

// Reads the whole MiB of `data` (size doubles, at least 1 MiB) once across the threads; returns
// the bytes read.
double probe_read_bytes(const double* data, std::size_t size, unsigned threads, const SimdKernels& kernels);

}  // namespace orrery
