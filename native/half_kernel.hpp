// float32 -> IEEE 754 binary16 (half), rounding to nearest, ties to even: the conversion a
// float16 recording makes of every position. The scalar function is the definition (the same
// bits as numpy's astype(float16) for every non-NaN input; NaN stays a quiet NaN of the same
// sign); the x86 levels convert 8 or 16 values per instruction with F16C / AVX-512
// (vcvtps2ph, round-to-nearest-even, which gives the same bits) and finish the tail with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace orrery {

inline std::uint16_t float_to_half(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)  // infinity, or NaN (quieted, top payload bits kept)
    return static_cast<std::uint16_t>(
        sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u | ((magnitude >> 13) & 0x3ffu) : 0u));
  if (magnitude >= 0x477ff000u)  // 65520 and up round past the largest half, 65504
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t half, rest, halfway;
  if (magnitude >= 0x38800000u) {  // a normal half: rebias the exponent, drop 13 bits
    half = (magnitude >> 13) - (112u << 10);
    rest = magnitude & 0x1fffu;
    halfway = 0x1000u;
  } else {  // below 2^-14: a subnormal half (units of 2^-24) or zero
    if (magnitude < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below 2^-25
    const std::uint32_t exponent = magnitude >> 23;  // 102 .. 112
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14 .. 24
    half = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
  }
  // A carry out of the mantissa moves to the next exponent, which is the right encoding.
  if (rest > halfway || (rest == halfway && (half & 1u))) half += 1u;
  return static_cast<std::uint16_t>(sign | half);
}

inline void narrow_to_half_scalar(const float* source, std::uint16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = float_to_half(source[i]);
}

}  // namespace orrery
