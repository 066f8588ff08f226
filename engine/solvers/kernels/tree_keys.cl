/* tree_keys.cl: the first stages of the GPU tree: bounding cube, Morton keys, gather into key
 * order, and the scatter of results back to the caller's order.
 *
 * The key definition is cpu-tree's (native/morton.hpp): the cube's lower corner is the minimum
 * of each coordinate, its side the largest extent (1 when every body is at one point); each
 * coordinate is quantised in `accum` precision (double where the device has it, so keys equal the
 * host's bit for bit) as q = floor((x - min) * 2^21 / side) clamped to [0, 2^21 - 1], and the key
 * interleaves the bits with x highest: bit 3g+2 of the key is bit g of x, 3g+1 of y, 3g of z.
 * Needs tree_common.cl first. Host defines: BOX_GROUP (work-group size of the box kernels). */

/* Widens the box [lo, hi] to take in the box [a, b] (x, y and z; w is left alone). */
DEVICE void grow_box(real4* lo, real4* hi, const real4 a, const real4 b) {
  lo->x = MIN(lo->x, a.x); lo->y = MIN(lo->y, a.y); lo->z = MIN(lo->z, a.z);
  hi->x = MAX(hi->x, b.x); hi->y = MAX(hi->y, b.y); hi->z = MAX(hi->z, b.z);
}

/* Folds every work-item's box into work-item 0's (a tree reduction through local memory of
 * BOX_GROUP entries each); all work-items of the group must call it. */
DEVICE void reduce_box_in_group(LOCAL_ARG real4* low, LOCAL_ARG real4* high, real4* lo, real4* hi) {
  low[LOCAL_ID] = *lo;
  high[LOCAL_ID] = *hi;
  SYNC_THREADS;
  for (int stride = BOX_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride) {
      grow_box(lo, hi, low[LOCAL_ID + stride], high[LOCAL_ID + stride]);
      low[LOCAL_ID] = *lo;
      high[LOCAL_ID] = *hi;
    }
    SYNC_THREADS;
  }
}

/* Per work-group minimum and maximum of the first `count` bodies' positions: partial[2g] holds
 * the minimum, partial[2g + 1] the maximum of group g. */
KERNEL void box_partials(GLOBAL const real4* RESTRICT body, const int count,
                         GLOBAL real4* RESTRICT partial) {
  LOCAL real4 low[BOX_GROUP];
  LOCAL real4 high[BOX_GROUP];
  real4 lo = body[0], hi = body[0];
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) grow_box(&lo, &hi, body[i], body[i]);
  reduce_box_in_group(low, high, &lo, &hi);
  if (LOCAL_ID == 0) {
    partial[2 * GROUP_ID] = lo;
    partial[2 * GROUP_ID + 1] = hi;
  }
}

/* One work-group folds the `groups` partials and writes the cube: cube[0..2] = lower corner,
 * cube[3] = side. */
KERNEL void box_finish(GLOBAL const real4* RESTRICT partial, const int groups,
                       GLOBAL accum* RESTRICT cube) {
  LOCAL real4 low[BOX_GROUP];
  LOCAL real4 high[BOX_GROUP];
  real4 lo = partial[0], hi = partial[1];
  for (int g = LOCAL_ID; g < groups; g += LOCAL_SIZE) grow_box(&lo, &hi, partial[2 * g], partial[2 * g + 1]);
  reduce_box_in_group(low, high, &lo, &hi);
  if (LOCAL_ID == 0) {
    const accum sx = (accum)hi.x - (accum)lo.x;
    const accum sy = (accum)hi.y - (accum)lo.y;
    const accum sz = (accum)hi.z - (accum)lo.z;
    const accum side = MAX(sx, MAX(sy, sz));
    cube[0] = (accum)lo.x;
    cube[1] = (accum)lo.y;
    cube[2] = (accum)lo.z;
    cube[3] = side > 0 ? side : (accum)1;
  }
}

/* Spreads the low 21 bits of v so that bit g moves to bit 3g. */
DEVICE ulong spread_bits(ulong v) {
  v &= 0x1fffffUL;
  v = (v | v << 32) & 0x1f00000000ffffUL;
  v = (v | v << 16) & 0x1f0000ff0000ffUL;
  v = (v | v << 8) & 0x100f00f00f00f00fUL;
  v = (v | v << 4) & 0x10c30c30c30c30c3UL;
  v = (v | v << 2) & 0x1249249249249249UL;
  return v;
}

DEVICE ulong quantise(const real x, const accum low, const accum scale) {
  const accum top = (accum)((1 << MORTON_LEVELS) - 1);
  const accum s = floor(((accum)x - low) * scale);
  return (ulong)MIN(MAX(s, (accum)0), top);
}

/* keys[i] = Morton key of body i, order[i] = i, for i < count. */
KERNEL void morton_keys(GLOBAL const real4* RESTRICT body, const int count,
                        GLOBAL const accum* RESTRICT cube, GLOBAL ulong* RESTRICT keys,
                        GLOBAL uint* RESTRICT order) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const accum scale = (accum)(1 << MORTON_LEVELS) / cube[3];
  const real4 p = body[i];
  keys[i] = spread_bits(quantise(p.x, cube[0], scale)) << 2 |
            spread_bits(quantise(p.y, cube[1], scale)) << 1 | spread_bits(quantise(p.z, cube[2], scale));
  order[i] = (uint)i;
}

/* sorted[k] = body[order[k]]: the bodies in key order. */
KERNEL void gather_bodies(GLOBAL const real4* RESTRICT body, GLOBAL const uint* RESTRICT order,
                          const int count, GLOBAL real4* RESTRICT sorted) {
  const int k = GLOBAL_ID;
  if (k >= count) return;
  sorted[k] = body[order[k]];
}

/* out[order[k]] = result[k]: results computed in key order, returned in the caller's order. */
KERNEL void scatter_results(GLOBAL const real4* RESTRICT result, GLOBAL const uint* RESTRICT order,
                            const int count, GLOBAL real4* RESTRICT out) {
  const int k = GLOBAL_ID;
  if (k >= count) return;
  out[order[k]] = result[k];
}
