/* sampled_reference.cl: accurate accelerations for a sample of targets at any N, for measuring a
 * tree's error where an O(N^2) reference over every body would take too long.
 *
 * Work-item (t, c) sums, in `real` (compile with REAL_BITS 64), the pull of source chunk c on
 * sample target t: partial[t * CHUNKS + c] = (ax, ay, az, 0). The host adds the CHUNKS partials
 * of each target. Self terms (r = 0) are skipped by index. Host define: CHUNKS. */

KERNEL void sampled_accelerations(GLOBAL const real4* RESTRICT body, const int count,
                                  GLOBAL const int* RESTRICT targets, const int target_count,
                                  const real softening2, GLOBAL real4* RESTRICT partial) {
  const int item = GLOBAL_ID;
  if (item >= target_count * CHUNKS) return;
  const int t = item / CHUNKS, chunk = item % CHUNKS;
  const int self = targets[t];
  const real4 target = body[self];
  const int per = (count + CHUNKS - 1) / CHUNKS;
  const int begin = chunk * per, end = MIN(count, begin + per);
  real ax = 0, ay = 0, az = 0;
  for (int j = begin; j < end; ++j) {
    if (j == self) continue;
    const real4 source = body[j];
    const real dx = source.x - target.x, dy = source.y - target.y, dz = source.z - target.z;
    const real r2 = dx * dx + dy * dy + dz * dz + softening2;
    const real w = source.w / (r2 * SQRT(r2));
    ax += w * dx;
    ay += w * dy;
    az += w * dz;
  }
  partial[item] = MAKE_REAL4(ax, ay, az, (real)0);
}
