/* energy.cl: the energies, momentum and angular momentum of device-resident state, summed on the
 * device, so a sample of them downloads a few kilobytes instead of the whole state (at a billion
 * bodies the state is tens of gigabytes).
 *
 * Each work-item adds, over a grid-strided range of the first `count` bodies (body = real4 x, y,
 * z, mass; velocity = real4; potential = the accelerations' real4 rows, potential in .w), in
 * `accum`: 0.5 m |v|^2, 0.5 m phi, m v (three) and m r x v (three); each work-group folds its
 * items by a tree reduction in local memory and writes its DIAGNOSTIC_SUMS sums at
 * partial[DIAGNOSTIC_SUMS g ..] in that order; the host adds the groups' sums in float64. The
 * order of every sum depends only on `count` and the launch size, so the same state gives the
 * same values on every run (the kinetic and potential sums are those this kernel gave before it
 * also summed the momenta: each is its own chain of adds).
 *
 * Host defines: REAL_BITS, ACCUM_BITS (64 where the device has doubles), ENERGY_GROUP (the
 * work-group size, a power of two), DIAGNOSTIC_SUMS (8). */

#if ACCUM_BITS == 64
typedef double accum;
#else
typedef float accum;
#endif

KERNEL void energy_partials(GLOBAL const real4* RESTRICT body,
                            GLOBAL const real4* RESTRICT velocity,
                            GLOBAL const real4* RESTRICT potential, const int count,
                            GLOBAL accum* RESTRICT partial) {
  LOCAL accum group_sums[DIAGNOSTIC_SUMS][ENERGY_GROUP];
  accum sums[DIAGNOSTIC_SUMS];
  for (int c = 0; c < DIAGNOSTIC_SUMS; ++c) sums[c] = 0;
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) {
    const real4 p = body[i], v = velocity[i];
    const accum m = (accum)p.w, x = (accum)p.x, y = (accum)p.y, z = (accum)p.z;
    const accum vx = (accum)v.x, vy = (accum)v.y, vz = (accum)v.z;
    sums[0] += (accum)0.5 * m * (vx * vx + vy * vy + vz * vz);
    sums[1] += (accum)0.5 * m * (accum)potential[i].w;
    sums[2] += m * vx;
    sums[3] += m * vy;
    sums[4] += m * vz;
    sums[5] += m * (y * vz - z * vy);
    sums[6] += m * (z * vx - x * vz);
    sums[7] += m * (x * vy - y * vx);
  }
  for (int c = 0; c < DIAGNOSTIC_SUMS; ++c) group_sums[c][LOCAL_ID] = sums[c];
  SYNC_THREADS;
  for (int stride = ENERGY_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride)
      for (int c = 0; c < DIAGNOSTIC_SUMS; ++c) group_sums[c][LOCAL_ID] += group_sums[c][LOCAL_ID + stride];
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0)
    for (int c = 0; c < DIAGNOSTIC_SUMS; ++c) partial[DIAGNOSTIC_SUMS * GROUP_ID + c] = group_sums[c][0];
}
