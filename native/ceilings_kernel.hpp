// Throughput probes, written once over a SIMD traits type S (simd_*.hpp): each runs many
// independent dependency chains of one operation, enough of them to cover its latency, so the
// execution units rather than the chains set the pace. Results feed `orrery bench ceilings`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd_kernels.hpp"

namespace orrery {

template <class S, std::size_t Chains>
double lane_sum(const typename S::V (&values)[Chains]) {
  using T = typename S::Scalar;
  T lanes[S::lanes];
  double total = 0;
  for (std::size_t c = 0; c < Chains; ++c) {
    S::store(lanes, values[c]);
    for (std::size_t l = 0; l < S::lanes; ++l) total += lanes[l];
  }
  return total;
}

// a <- a*b + c on 12 chains (4-cycle latency x 2 pipes needs 8): converges to c/(1-b).
template <class S>
ProbeCount fma_probe(std::uint64_t rounds) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t chains = 12;
  V acc[chains];
  for (std::size_t c = 0; c < chains; ++c) acc[c] = S::set1(T(0.01) * T(c + 1));
  const V b = S::set1(T(0.999)), c0 = S::set1(T(1e-4));
  for (std::uint64_t r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < chains; ++c) acc[c] = S::fma(acc[c], b, c0);
  return {2.0 * double(rounds) * chains * S::lanes, lane_sum<S, chains>(acc)};
}

// a <- 1/sqrt(a) exactly (a square root and a divide) on 8 chains: converges to 1.
template <class S>
ProbeCount sqrt_div_probe(std::uint64_t rounds) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t chains = 8;
  V acc[chains];
  for (std::size_t c = 0; c < chains; ++c) acc[c] = S::set1(T(1) + T(0.01) * T(c));
  const V one = S::set1(T(1));
  for (std::uint64_t r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < chains; ++c) acc[c] = S::div(one, S::sqrt(acc[c]));
  return {double(rounds) * chains * S::lanes, lane_sum<S, chains>(acc)};
}

// a <- estimate of 1/sqrt(a) (vrsqrt14 or vrsqrtps) on 12 chains: converges to 1.
template <class S>
ProbeCount estimate_probe(std::uint64_t rounds) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr std::size_t chains = 12;
  V acc[chains];
  for (std::size_t c = 0; c < chains; ++c) acc[c] = S::set1(T(1) + T(0.01) * T(c));
  for (std::uint64_t r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < chains; ++c) acc[c] = S::rsqrt_estimate(acc[c]);
  return {double(rounds) * chains * S::lanes, lane_sum<S, chains>(acc)};
}

template <class S>
constexpr ProbeFn estimate_probe_or_null() {
  if constexpr (S::has_estimate)
    return &estimate_probe<S>;
  else
    return nullptr;
}

// Sums count doubles (a multiple of 4 * lanes) with four accumulators: reads, nothing written.
template <class S>
ProbeCount read_probe(const double* data, std::size_t count) {
  using V = typename S::V;
  static_assert(sizeof(typename S::Scalar) == sizeof(double), "read probe takes double traits");
  constexpr std::size_t L = S::lanes;
  V acc[4] = {S::zero(), S::zero(), S::zero(), S::zero()};
  for (std::size_t i = 0; i + 4 * L <= count; i += 4 * L)
    for (std::size_t k = 0; k < 4; ++k) acc[k] = S::add(acc[k], S::load(data + i + k * L));
  return {8.0 * double(count), lane_sum<S, 4>(acc)};
}

}  // namespace orrery
