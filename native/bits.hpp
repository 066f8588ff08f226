// Bit counts the core needs, with each compiler's own instruction: GCC's and Clang's builtins,
// MSVC's intrinsics (which have no __builtin_ names).
#pragma once

#include <bitset>
#include <cstdint>

#if defined(_MSC_VER)
#include <intrin.h>
#endif

namespace orrery {

// The index of the highest set bit of x, which must not be 0.
inline int highest_set_bit(std::uint64_t x) {
#if defined(_MSC_VER)
  unsigned long index = 0;
  _BitScanReverse64(&index, x);
  return static_cast<int>(index);
#else
  return 63 - __builtin_clzll(x);
#endif
}

inline long count_set_bits(std::uint32_t x) { return static_cast<long>(std::bitset<32>(x).count()); }

}  // namespace orrery
