// Morton keys and the parallel LSD radix sort behind the tree (see morton.hpp).
#include "morton.hpp"

#include <algorithm>
#include <cmath>

#include "parallel.hpp"

namespace orrery {
namespace {

// Spreads the low 21 bits of v so that bit g moves to bit 3g.
std::uint64_t spread_bits(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

// Inverse of spread_bits: gathers bits 0, 3, 6, ... into the low bits.
std::uint32_t compact_bits(std::uint64_t v) {
  v &= 0x1249249249249249ULL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ULL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fULL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffULL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffULL;
  v = (v ^ (v >> 32)) & 0x1fffff;
  return static_cast<std::uint32_t>(v);
}

constexpr int kDigitBits = 11;
constexpr std::size_t kBuckets = std::size_t(1) << kDigitBits;
constexpr int kPasses = (3 * kMortonLevels + kDigitBits - 1) / kDigitBits;
// Below this many keys one block sorts faster than a split (thread start-up dominates).
constexpr std::size_t kParallelSortMinimum = 32768;

bool is_sorted_keys(const std::vector<std::uint64_t>& keys) {
  for (std::size_t k = 1; k < keys.size(); ++k) {
    if (keys[k] < keys[k - 1]) return false;
  }
  return true;
}

}  // namespace

template <typename T>
BoundingCube bounding_cube(const T* pos, std::size_t n) {
  double lo[3], hi[3];
  for (int a = 0; a < 3; ++a) lo[a] = hi[a] = static_cast<double>(pos[a]);
  for (std::size_t i = 1; i < n; ++i) {
    for (int a = 0; a < 3; ++a) {
      double x = static_cast<double>(pos[3 * i + a]);
      lo[a] = std::min(lo[a], x);
      hi[a] = std::max(hi[a], x);
    }
  }
  BoundingCube cube;
  double side = 0.0;
  for (int a = 0; a < 3; ++a) {
    cube.min[a] = lo[a];
    side = std::max(side, hi[a] - lo[a]);
  }
  // All particles at one point: any positive side gives every key 0 and one leaf.
  cube.side = side > 0.0 ? side : 1.0;
  return cube;
}

template <typename T>
void morton_keys(const T* pos, std::size_t n, const BoundingCube& cube, std::uint64_t* keys, unsigned threads) {
  const double scale = static_cast<double>(std::uint64_t(1) << kMortonLevels) / cube.side;
  const double top = static_cast<double>((std::uint64_t(1) << kMortonLevels) - 1);
  ThreadPool::instance().parallel_for(n, 8192, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const T* p = pos + 3 * k;
      std::uint64_t q[3];
      for (int a = 0; a < 3; ++a) {
        double s = std::floor((static_cast<double>(p[a]) - cube.min[a]) * scale);
        q[a] = static_cast<std::uint64_t>(std::min(std::max(s, 0.0), top));
      }
      keys[k] = spread_bits(q[0]) << 2 | spread_bits(q[1]) << 1 | spread_bits(q[2]);
    }
  });
}

void cell_coordinates(std::uint64_t key, int level, std::uint32_t coords[3]) {
  std::uint64_t prefix = key >> (3 * (kMortonLevels - level));
  coords[0] = compact_bits(prefix >> 2);
  coords[1] = compact_bits(prefix >> 1);
  coords[2] = compact_bits(prefix);
}

void sort_keys(std::vector<std::uint64_t>& keys, std::vector<std::uint32_t>& order,
               std::vector<std::uint64_t>& key_scratch, std::vector<std::uint32_t>& order_scratch,
               unsigned threads, int key_bits) {
  const int passes = key_bits > 0 ? (key_bits + kDigitBits - 1) / kDigitBits : kPasses;
  const std::size_t n = keys.size();
  if (n < 2 || is_sorted_keys(keys)) return;
  key_scratch.resize(n);
  order_scratch.resize(n);
  const std::size_t blocks = n < kParallelSortMinimum ? 1 : std::max(1u, threads);
  std::vector<std::size_t> counts(blocks * kBuckets);
  auto block_begin = [&](std::size_t b) { return b * n / blocks; };

  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * kDigitBits;
    std::fill(counts.begin(), counts.end(), 0);
    ThreadPool::instance().parallel_for(blocks, 1, threads, [&](std::size_t b0, std::size_t b1) {
      for (std::size_t b = b0; b < b1; ++b) {
        std::size_t* c = &counts[b * kBuckets];
        for (std::size_t k = block_begin(b); k < block_begin(b + 1); ++k) ++c[(keys[k] >> shift) & (kBuckets - 1)];
      }
    });
    // Column-major exclusive scan: bucket by bucket, block by block, which keeps the sort stable.
    std::size_t running = 0;
    bool one_bucket = false;
    for (std::size_t d = 0; d < kBuckets; ++d) {
      std::size_t bucket_total = 0;
      for (std::size_t b = 0; b < blocks; ++b) {
        std::size_t c = counts[b * kBuckets + d];
        counts[b * kBuckets + d] = running;
        running += c;
        bucket_total += c;
      }
      if (bucket_total == n) one_bucket = true;
    }
    if (one_bucket) continue;  // this digit is the same for every key: nothing to move
    ThreadPool::instance().parallel_for(blocks, 1, threads, [&](std::size_t b0, std::size_t b1) {
      for (std::size_t b = b0; b < b1; ++b) {
        std::size_t* offset = &counts[b * kBuckets];
        for (std::size_t k = block_begin(b); k < block_begin(b + 1); ++k) {
          std::size_t slot = offset[(keys[k] >> shift) & (kBuckets - 1)]++;
          key_scratch[slot] = keys[k];
          order_scratch[slot] = order[k];
        }
      }
    });
    keys.swap(key_scratch);
    order.swap(order_scratch);
  }
}

template BoundingCube bounding_cube<float>(const float*, std::size_t);
template BoundingCube bounding_cube<double>(const double*, std::size_t);
template void morton_keys<float>(const float*, std::size_t, const BoundingCube&, std::uint64_t*, unsigned);
template void morton_keys<double>(const double*, std::size_t, const BoundingCube&, std::uint64_t*, unsigned);

}  // namespace orrery
