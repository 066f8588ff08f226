/* plummer.cl: a Plummer sphere drawn on the device, into a device state's own rows, so that a
 * run of a billion bodies starts without building its particles on the host
 * (engine/initial_conditions/on_device.py), after counter_random.cl (the random numbers).
 *
 * The distribution is ics.plummer's: Hénon units, radii from the mass profile cut at
 * MASS_CUTOFF, r = a / sqrt(x^(-2/3) - 1) for x uniform in [0, MASS_CUTOFF), speeds q v_esc with
 * q drawn by the Aarseth-Hénon-Wielen rejection (density q^2 (1 - q^2)^(7/2) under the bound
 * 0.1), isotropic directions, every mass 1/count. Draws of body i's stream 0: the mass
 * fraction x; 1, 2: the position's direction; 3, 4: the velocity's; 5 + 2t, 6 + 2t: rejection
 * trial t.
 *
 * plummer_bodies writes rows [0, count) of body (x, y, z, 1/count) and velocity (vx, vy, vz, 0);
 * centre_of_mass.cl then moves them to their centre-of-mass frame, as ics.plummer does. A row
 * depends on the seed and its index only, so a seed gives the same bodies on every launch and
 * device up to the math library's rounding (counter_random.cl).
 *
 * Host defines: REAL_BITS, ACCUM_BITS, PLUMMER_SCALE, MASS_CUTOFF, TWO_PI. */

KERNEL void plummer_bodies(const ulong seed, const int count, GLOBAL real4* RESTRICT body,
                           GLOBAL real4* RESTRICT velocity) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const ulong key = body_key(seed, (ulong)i);
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
