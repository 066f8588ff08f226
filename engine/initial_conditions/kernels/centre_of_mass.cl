/* centre_of_mass.cl: moving bodies drawn on the device (plummer.cl, galaxy.cl) to where their
 * centre of mass belongs (engine/initial_conditions/on_device.py), after counter_random.cl
 * (the type accum).
 *
 * centre_partials adds the mass-weighted positions and velocities and the masses of the rows
 * [start, start + count) per work-group (grid-strided, then a tree reduction in local memory,
 * as energy.cl: the order depends only on count and the launch); the host adds the groups'
 * sums in float64 and divides by the mass. centre_shift moves those rows by minus a shift.
 *
 * Host defines: REAL_BITS, ACCUM_BITS, CENTRE_GROUP (a power of two), CENTRE_SUMS (7). */

/* partial[7g .. 7g + 6]: work-group g's sums of m x, m y, m z, m vx, m vy, m vz and m. */
KERNEL void centre_partials(GLOBAL const real4* RESTRICT body, GLOBAL const real4* RESTRICT velocity,
                            const int start, const int count, GLOBAL accum* RESTRICT partial) {
  LOCAL accum sums[CENTRE_SUMS][CENTRE_GROUP];
  accum s[CENTRE_SUMS] = {0, 0, 0, 0, 0, 0, 0};
  for (int j = GLOBAL_ID; j < count; j += GLOBAL_SIZE) {
    const real4 p = body[start + j], v = velocity[start + j];
    const accum m = (accum)p.w;
    s[0] += m * (accum)p.x;
    s[1] += m * (accum)p.y;
    s[2] += m * (accum)p.z;
    s[3] += m * (accum)v.x;
    s[4] += m * (accum)v.y;
    s[5] += m * (accum)v.z;
    s[6] += m;
  }
  for (int c = 0; c < CENTRE_SUMS; ++c) sums[c][LOCAL_ID] = s[c];
  SYNC_THREADS;
  for (int stride = CENTRE_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride)
      for (int c = 0; c < CENTRE_SUMS; ++c) sums[c][LOCAL_ID] += sums[c][LOCAL_ID + stride];
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0)
    for (int c = 0; c < CENTRE_SUMS; ++c) partial[CENTRE_SUMS * GROUP_ID + c] = sums[c][0];
}

/* Rows [start, start + count) moved by minus (px, py, pz) and (vx, vy, vz). */
KERNEL void centre_shift(const int start, const int count, const accum px, const accum py, const accum pz,
                         const accum vx, const accum vy, const accum vz, GLOBAL real4* RESTRICT body,
                         GLOBAL real4* RESTRICT velocity) {
  const int j = GLOBAL_ID;
  if (j >= count) return;
  const int i = start + j;
  const real4 p = body[i], v = velocity[i];
  body[i] = MAKE_REAL4((real)((accum)p.x - px), (real)((accum)p.y - py), (real)((accum)p.z - pz), p.w);
  velocity[i] = MAKE_REAL4((real)((accum)v.x - vx), (real)((accum)v.y - vy), (real)((accum)v.z - vz), 0);
}
