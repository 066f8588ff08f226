/* tree_common.cl: what every GPU tree kernel file shares: the accumulation type, the key depth,
 * the node record, the level of the smallest cell holding two keys and key de-interleaving.
 *
 * The node is cpu-tree's (native/octree.hpp, ADR-0010): one array in depth-first order, a node's
 * first child right after it, `skip` one past its subtree (a node is a leaf when skip == its
 * index + 1), 32-bit indices, [first, first + count) its range of key-sorted bodies. In float32
 * the record is 32 bytes, aligned so that one node is two 16-byte loads; in float64 it is 56.
 * Host defines: ACCUM_BITS (64 where the device has doubles: sums and key quantisation in double,
 * as on the host; else 32). */

#if ACCUM_BITS == 64
typedef double accum;
#else
typedef float accum;
#endif

#define MORTON_LEVELS 21

#if REAL_BITS == 32
#define NODE_ALIGNMENT 32
#else
#define NODE_ALIGNMENT 8
#endif

typedef struct ALIGNED(NODE_ALIGNMENT) {
  real cx, cy, cz;  /* centre of mass */
  real mass;
  real open2;       /* squared opening distance: accepted when a target is farther than this */
  uint skip;        /* one past the last node of this subtree */
  uint first;       /* first body (key order) */
  uint count;       /* bodies in the subtree */
} TreeNode;

/* Level of the smallest cell holding both keys (MORTON_LEVELS when they are equal). */
DEVICE int common_level(const ulong a, const ulong b) {
  const ulong differ = a ^ b;
  if (differ == 0) return MORTON_LEVELS;
  const int highest = 63 - CLZ64(differ);
  return MORTON_LEVELS - 1 - highest / 3;
}

/* Gathers bits 0, 3, 6, ... of v into the low bits (the inverse of spreading). */
DEVICE uint compact_bits(ulong v) {
  v &= 0x1249249249249249UL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3UL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fUL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffUL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffUL;
  v = (v ^ (v >> 32)) & 0x1fffffUL;
  return (uint)v;
}
