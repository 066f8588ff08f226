/* energy.cl: the kinetic and potential energy of device-resident state, summed on the device,
 * so an energy sample downloads a few kilobytes instead of the whole state.
 *
 * Each work-item adds 0.5 m |v|^2 and 0.5 m phi over a grid-strided range of the first `count`
 * bodies (body = real4 x, y, z, mass; velocity = real4; potential = the accelerations' real4
 * rows, potential in .w) in `accum`; each work-group folds its items by a tree reduction in
 * local memory and writes partial[2g] (kinetic) and partial[2g + 1] (potential); the host adds
 * the groups' pairs in float64. The order of every sum depends only on `count` and the launch
 * size, so the same state gives the same energy on every run.
 *
 * Host defines: REAL_BITS, ACCUM_BITS (64 where the device has doubles), ENERGY_GROUP (the
 * work-group size, a power of two). */

#if ACCUM_BITS == 64
typedef double accum;
#else
typedef float accum;
#endif

KERNEL void energy_partials(GLOBAL const real4* RESTRICT body,
                            GLOBAL const real4* RESTRICT velocity,
                            GLOBAL const real4* RESTRICT potential, const int count,
                            GLOBAL accum* RESTRICT partial) {
  LOCAL accum kinetic_sums[ENERGY_GROUP];
  LOCAL accum potential_sums[ENERGY_GROUP];
  accum kinetic = 0, potential_energy = 0;
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) {
    const accum m = (accum)body[i].w;
    const real4 v = velocity[i];
    const accum vx = (accum)v.x, vy = (accum)v.y, vz = (accum)v.z;
    kinetic += (accum)0.5 * m * (vx * vx + vy * vy + vz * vz);
    potential_energy += (accum)0.5 * m * (accum)potential[i].w;
  }
  kinetic_sums[LOCAL_ID] = kinetic;
  potential_sums[LOCAL_ID] = potential_energy;
  SYNC_THREADS;
  for (int stride = ENERGY_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride) {
      kinetic_sums[LOCAL_ID] += kinetic_sums[LOCAL_ID + stride];
      potential_sums[LOCAL_ID] += potential_sums[LOCAL_ID + stride];
    }
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0) {
    partial[2 * GROUP_ID] = kinetic_sums[0];
    partial[2 * GROUP_ID + 1] = potential_sums[0];
  }
}
