// Morton (Z-order) keys and their parallel sort: the first stage of the Barnes-Hut tree.
//
// A key interleaves 21 bits of each quantised coordinate into 63 bits. Bit 3g+2 holds bit g of
// x, bit 3g+1 of y, bit 3g of z, so the three bits at the top of a key name the octant of the
// root cube, the next three the octant inside that, and so on for 21 levels. Sorting particles
// by key puts every octree cell's particles in one contiguous run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace orrery {

constexpr int kMortonLevels = 21;  // bits per axis, and the deepest level of the tree

// The cube the keys quantise: its lower corner and side (side > 0 even for one point).
struct BoundingCube {
  double min[3];
  double side;
};

template <typename T>
BoundingCube bounding_cube(const T* pos, std::size_t n);

// keys[i] = key of particle i (positions are (n, 3)).
// Quantisation, in double: q = floor((x - min) * (2^21 / side)), clamped to [0, 2^21 - 1].
template <typename T>
void morton_keys(const T* pos, std::size_t n, const BoundingCube& cube, std::uint64_t* keys, unsigned threads);

// The quantised coordinates (ix, iy, iz) of the cell at `level` whose key prefix is that of `key`.
void cell_coordinates(std::uint64_t key, int level, std::uint32_t coords[3]);

// Sorts the pairs (keys[k], order[k]) by key; the sort is stable, so pairs that start in index
// order end with ties in index order. LSD radix sort, 11-bit digits, parallel over blocks; passes
// whose digit is the same for every key are skipped, and input already in key order costs one
// check. Scratch vectors are resized as needed. `key_bits`: how many low bits of the keys are
// significant (the rest are zero), so only their digits are sorted; 0 means a Morton key's 63.
void sort_keys(std::vector<std::uint64_t>& keys, std::vector<std::uint32_t>& order,
               std::vector<std::uint64_t>& key_scratch, std::vector<std::uint32_t>& order_scratch,
               unsigned threads, int key_bits = 0);

}  // namespace orrery
