/* plummer.cl: a Plummer sphere drawn on the device, into a device state's own rows, so that a
 * run of a billion bodies starts without building its particles on the host
 * (engine/initial_conditions/on_device.py).
 *
 * The distribution is ics.plummer's: Hénon units, radii from the mass profile cut at
 * MASS_CUTOFF, r = a / sqrt(x^(-2/3) - 1) for x uniform in [0, MASS_CUTOFF), speeds q v_esc with
 * q drawn by the Aarseth-Hénon-Wielen rejection (density q^2 (1 - q^2)^(7/2) under the bound
 * 0.1), isotropic directions, every mass 1/count. The random numbers are not NumPy's stream but
 * a counter-based generator: body i's k-th uniform is splitmix64's finaliser of
 * (key(seed, i) + (k + 1) * golden), so each body is drawn on its own, whatever the launch, and
 * a seed gives the same bodies on every device up to the math library's rounding of pow, sqrt,
 * sin and cos. Draws 0: the mass fraction x; 1, 2: the position's direction; 3, 4: the
 * velocity's; 5 + 2t, 6 + 2t: rejection trial t.
 *
 * plummer_bodies writes rows [0, count) of body (x, y, z, 1/count) and velocity (vx, vy, vz, 0).
 * centre_partials adds the positions and velocities per work-group (grid-strided, then a tree
 * reduction in local memory, as energy.cl: the order depends only on count and the launch), the
 * host adds the groups' sums in float64, and centre_shift moves every body by minus the means,
 * as ics.plummer does on the host (the centre-of-mass frame).
 *
 * Host defines: REAL_BITS, ACCUM_BITS (64 where the device has doubles), PLUMMER_SCALE,
 * MASS_CUTOFF, TWO_PI, CENTRE_GROUP (a power of two). */

#if ACCUM_BITS == 64
typedef double accum;
#else
typedef float accum;
#endif

#define GOLDEN ((ulong)0x9e3779b97f4a7c15UL)

DEVICE ulong mix64(ulong z) {
  z = (z ^ (z >> 30)) * (ulong)0xbf58476d1ce4e5b9UL;
  z = (z ^ (z >> 27)) * (ulong)0x94d049bb133111ebUL;
  return z ^ (z >> 31);
}

/* Draw k of the body whose key is `key`, uniform in [0, 1): the top 53 bits (24 in float). */
DEVICE accum uniform_draw(const ulong key, const ulong k) {
  const ulong z = mix64(key + (k + 1) * GOLDEN);
#if ACCUM_BITS == 64
  return (accum)(z >> 11) * (accum)(1.0 / 9007199254740992.0);
#else
  return (accum)(uint)(z >> 40) * (accum)(1.0f / 16777216.0f);
#endif
}

/* A vector of length `length` in the direction of draws k, k + 1 (cos theta, phi uniform). */
DEVICE void isotropic(const ulong key, const ulong k, const accum length, accum* x, accum* y, accum* z) {
  const accum cos_theta = 2 * uniform_draw(key, k) - 1;
  const accum phi = (accum)TWO_PI * uniform_draw(key, k + 1);
  const accum sin_theta = sqrt(1 - cos_theta * cos_theta);
  *x = length * sin_theta * cos(phi);
  *y = length * sin_theta * sin(phi);
  *z = length * cos_theta;
}

KERNEL void plummer_bodies(const ulong seed, const int count, GLOBAL real4* RESTRICT body,
                           GLOBAL real4* RESTRICT velocity) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const ulong key = mix64(mix64(seed) ^ (ulong)i);
  const accum a = (accum)PLUMMER_SCALE;
  const accum fraction = (accum)MASS_CUTOFF * uniform_draw(key, 0);
  const accum r = a / sqrt(pow(fraction, (accum)(-2.0 / 3.0)) - 1);
  accum q;
  for (ulong k = 5;; k += 2) {
    q = uniform_draw(key, k);
    const accum s = 1 - q * q;
    if ((accum)0.1 * uniform_draw(key, k + 1) < q * q * s * s * s * sqrt(s)) break;
  }
  const accum escape = sqrt((accum)2) * pow(r * r + a * a, (accum)(-0.25));
  accum x, y, z, vx, vy, vz;
  isotropic(key, 1, r, &x, &y, &z);
  isotropic(key, 3, q * escape, &vx, &vy, &vz);
  body[i] = MAKE_REAL4((real)x, (real)y, (real)z, (real)((accum)1 / (accum)count));
  velocity[i] = MAKE_REAL4((real)vx, (real)vy, (real)vz, 0);
}

/* partial[6g .. 6g + 5]: work-group g's sums of x, y, z, vx, vy, vz over its strided rows. */
KERNEL void centre_partials(GLOBAL const real4* RESTRICT body, GLOBAL const real4* RESTRICT velocity,
                            const int count, GLOBAL accum* RESTRICT partial) {
  LOCAL accum sums[6][CENTRE_GROUP];
  accum s[6] = {0, 0, 0, 0, 0, 0};
  for (int i = GLOBAL_ID; i < count; i += GLOBAL_SIZE) {
    const real4 p = body[i], v = velocity[i];
    s[0] += (accum)p.x;
    s[1] += (accum)p.y;
    s[2] += (accum)p.z;
    s[3] += (accum)v.x;
    s[4] += (accum)v.y;
    s[5] += (accum)v.z;
  }
  for (int c = 0; c < 6; ++c) sums[c][LOCAL_ID] = s[c];
  SYNC_THREADS;
  for (int stride = CENTRE_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride)
      for (int c = 0; c < 6; ++c) sums[c][LOCAL_ID] += sums[c][LOCAL_ID + stride];
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0)
    for (int c = 0; c < 6; ++c) partial[6 * GROUP_ID + c] = sums[c][0];
}

/* Every body moved by minus the mean position and velocity. */
KERNEL void centre_shift(const int count, const accum px, const accum py, const accum pz, const accum vx,
                         const accum vy, const accum vz, GLOBAL real4* RESTRICT body,
                         GLOBAL real4* RESTRICT velocity) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 p = body[i], v = velocity[i];
  body[i] = MAKE_REAL4((real)((accum)p.x - px), (real)((accum)p.y - py), (real)((accum)p.z - pz), p.w);
  velocity[i] = MAKE_REAL4((real)((accum)v.x - vx), (real)((accum)v.y - vy), (real)((accum)v.z - vz), 0);
}
