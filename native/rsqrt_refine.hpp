// Refining an estimate y0 of 1/sqrt(x) to the full precision of the type.
//
// With e = 1 - x*y0^2, 1/sqrt(x) = y0 (1 - e)^(-1/2), and the binomial series gives
//   2/sqrt(x) = 2 y0 + y0 * e * (1 + 3/4 e + 5/8 e^2 + 35/64 e^3 + ...).
// Keeping terms up to e^Order leaves a relative error of about c * e^(Order+1): with vrsqrt14
// (|e| <= 2^-13) order 1 (one Newton step) is enough for float and order 3 for double; with
// vrsqrtps (|e| <= 2^-10.4) float needs order 2. The last step is one fused multiply-add around
// 2*y0, so the rounding of the small correction hardly matters. Returning 2/sqrt(x) instead of
// 1/sqrt(x) saves a multiply per interaction: the kernel folds the factor 2 into the masses.
//
// The accelerations need m/r^3, not 1/r, so that is refined directly (ADR 0080): the cube of the
// same series is
//   x^(-3/2) = y0^3 (1 - e)^(-3/2) = y0^3 (1 + 3/2 e + 15/8 e^2 + 35/16 e^3 + 315/128 e^4 + ...),
// and with the mass folded into the coefficients (m * c_k, packed once per source; c_0 = 1, so
// the first is m exactly) m/r^3 = (y0 * y0^2) * sum_k (m c_k) e^k costs the same multiplies as
// refining 1/sqrt alone, and none for the mass or the cube.
#pragma once

#include <iterator>

namespace orrery {

template <class S, int Order>
inline typename S::V refine_two_over_sqrt(typename S::V x, typename S::V y0) {
  static_assert(Order >= 1 && Order <= 4, "series order 1..4");
  using T = typename S::Scalar;
  using V = typename S::V;
  // Coefficients of e^k in (1 - e)^(-1/2) * 2, from k = 1: 1, 3/4, 5/8, 35/64.
  constexpr T coefficient[] = {T(1), T(0.75), T(0.625), T(0.546875)};
  const V e = S::fnma(x, S::mul(y0, y0), S::set1(T(1)));
  V correction = e;
  if constexpr (Order > 1) {
    V p = S::set1(coefficient[Order - 1]);
    for (int k = Order - 2; k >= 0; --k) p = S::fma(p, e, S::set1(coefficient[k]));
    correction = S::mul(p, e);
  }
  return S::fma(y0, correction, S::add(y0, y0));
}

// m * x^(-3/2) from the estimate y0 = S::rsqrt_estimate(x) and the source's m * c_k, where c_k
// are S::cube_series (the series above, truncated or economised per level; see the traits).
template <class S>
inline typename S::V refine_mass_over_cube(typename S::V x, typename S::V y0,
                                           const typename S::Scalar* mass_terms) {
  using T = typename S::Scalar;
  using V = typename S::V;
  constexpr int last = static_cast<int>(std::size(S::cube_series)) - 1;
  const V y0_squared = S::mul(y0, y0);
  const V e = S::fnma(x, y0_squared, S::set1(T(1)));
  V series = S::set1(mass_terms[last]);
  for (int k = last - 1; k >= 0; --k) series = S::fma(series, e, S::set1(mass_terms[k]));
  return S::mul(series, S::mul(y0, y0_squared));
}

}  // namespace orrery
