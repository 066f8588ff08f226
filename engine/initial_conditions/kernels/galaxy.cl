/* galaxy.cl: the disk galaxies of galaxy.galaxy_collision drawn on the device, into a device
 * state's own rows, so that a run of a billion bodies starts without building its particles on
 * the host (engine/initial_conditions/on_device.py), after counter_random.cl.
 *
 * One launch draws one component (disk, bulge or halo) of one galaxy into the rows
 * [start, start + count), as galaxy.py's _sample_disk and _sample_spheroid draw it, mirrored as
 * _mirrored mirrors it: rows start + j, j < drawn = (count + 1) / 2, are drawn from the streams of
 * rows start + j; row start + drawn + j is the mirror image (-x, -v) of row start + j, so the
 * component's centre of mass sits at the origin but for the one unpaired body of an odd count
 * (centre_of_mass.cl then moves it there as disk_galaxy does). The radius comes from the share
 * of the component's mass inside it, u uniform, through w = sqrt(u): the radii of an exponential
 * disk and of a Hernquist cusp rise linearly in w from the centre, so a table on a uniform grid
 * of w interpolates them, and what depends on the radius, linearly (on_device.py tabulates the
 * model on the host from GalaxyModel's own methods; tests/engine/gpu/test_gpu_drawn.py bounds
 * the interpolation's error).
 *
 * Disk (table rows DISK_*: radius, sigma_R², the epicyclic factor kappa² R² / (4 v_c²), mean
 * rotation, sigma_z²): draws 0: u (the truncated Gamma(2) radius, the host's redraw beyond the
 * cutoff being the same distribution); 1: phi; 2: the logistic z of scale z0 / 2 (sech²(z / z0)),
 * by its inverse z0 / 2 ln(u / (1 - u)); 3, 4: the normals of v_R and of v_phi's scatter; 5, 6:
 * v_z's (its pair's second normal unused).
 * Spheroid (rows SPHEROID_*: radius, the escape cap ESCAPE_CAP sqrt(-2 Phi), the capped
 * Gaussian's width): draws 0: u; 1, 2: the direction; 3 + 4t .. 6 + 4t: trial t's three normals
 * (two Box-Muller pairs, the fourth unused), redrawn while the speed exceeds the cap.
 *
 * Every body weighs body_mass. frame (24 values) places the galaxy: the position map (3 x 3,
 * row-major: the disk's rotation times the length scale), the orbit position, the velocity map
 * (the rotation times the speed scale) and the orbit velocity.
 *
 * Deterministic: a row depends on the seed, the index of the stream it draws from, the tables
 * and the frame only (no sums across rows, no atomics), so a seed gives the same bodies on
 * every launch and device up to the math library's rounding (counter_random.cl).
 *
 * Host defines: REAL_BITS, ACCUM_BITS, TWO_PI, TABLE_SIZE (entries of a table row), the rows
 * DISK_* and SPHEROID_*. */

/* Table row `row` at w in [0, 1], interpolated linearly. */
DEVICE accum tabulated(GLOBAL const accum* RESTRICT table, const int row, const accum w) {
  const accum x = w * (accum)(TABLE_SIZE - 1);
  const int k = MIN((int)x, TABLE_SIZE - 2);
  const accum t = x - (accum)k;
  GLOBAL const accum* RESTRICT values = table + row * TABLE_SIZE;
  return values[k] + t * (values[k + 1] - values[k]);
}

/* Component c of the row-major 3 x 3 matrix `map` times x. */
DEVICE accum mapped(GLOBAL const accum* RESTRICT map, const int c, const accum x[3]) {
  return map[3 * c] * x[0] + map[3 * c + 1] * x[1] + map[3 * c + 2] * x[2];
}

/* Row i: the body at local position p and velocity v (mirrored by sign), placed by frame. */
DEVICE void place(GLOBAL const accum* RESTRICT frame, const accum sign, const accum p[3], const accum v[3],
                  const real body_mass, const int i, GLOBAL real4* RESTRICT body,
                  GLOBAL real4* RESTRICT velocity) {
  accum placed[6];
  for (int c = 0; c < 3; ++c) {
    placed[c] = frame[9 + c] + sign * mapped(frame, c, p);
    placed[3 + c] = frame[21 + c] + sign * mapped(frame + 12, c, v);
  }
  body[i] = MAKE_REAL4((real)placed[0], (real)placed[1], (real)placed[2], body_mass);
  velocity[i] = MAKE_REAL4((real)placed[3], (real)placed[4], (real)placed[5], 0);
}

/* The stream a row of the component draws from (its own, or its mirror's), and the mirror's sign. */
DEVICE ulong component_key(const ulong seed, const int start, const int count, const int j, accum* sign) {
  const int drawn = (count + 1) / 2;  /* the rows with their own streams */
  *sign = j < drawn ? (accum)1 : (accum)-1;
  return body_key(seed, (ulong)(start + (j < drawn ? j : j - drawn)));
}

KERNEL void disk_bodies(const ulong seed, const int start, const int count, const real body_mass,
                        const accum disk_height, GLOBAL const accum* RESTRICT table,
                        GLOBAL const accum* RESTRICT frame, GLOBAL real4* RESTRICT body,
                        GLOBAL real4* RESTRICT velocity) {
  const int j = GLOBAL_ID;
  if (j >= count) return;
  accum sign;
  const ulong key = component_key(seed, start, count, j, &sign);
  const accum w = sqrt(uniform_draw(key, 0));
  const accum radius = tabulated(table, DISK_RADIUS, w);
  const accum phi = (accum)TWO_PI * uniform_draw(key, 1);
  const accum u = open_uniform_draw(key, 2);
  accum radial_normal, azimuthal_normal, vertical_normal, unused;
  normal_pair(key, 3, &radial_normal, &azimuthal_normal);
  normal_pair(key, 5, &vertical_normal, &unused);
  const accum sigma_r_squared = tabulated(table, DISK_SIGMA_R_SQUARED, w);
  const accum v_r = radial_normal * sqrt(sigma_r_squared);
  const accum v_phi = tabulated(table, DISK_MEAN_ROTATION, w) +
                      azimuthal_normal * sqrt(sigma_r_squared * tabulated(table, DISK_EPICYCLIC, w));
  const accum v_z = vertical_normal * sqrt(tabulated(table, DISK_SIGMA_Z_SQUARED, w));
  const accum cos_phi = cos(phi), sin_phi = sin(phi);
  const accum p[3] = {radius * cos_phi, radius * sin_phi, (accum)0.5 * disk_height * log(u / (1 - u))};
  const accum v[3] = {v_r * cos_phi - v_phi * sin_phi, v_r * sin_phi + v_phi * cos_phi, v_z};
  place(frame, sign, p, v, body_mass, start + j, body, velocity);
}

KERNEL void spheroid_bodies(const ulong seed, const int start, const int count, const real body_mass,
                            GLOBAL const accum* RESTRICT table, GLOBAL const accum* RESTRICT frame,
                            GLOBAL real4* RESTRICT body, GLOBAL real4* RESTRICT velocity) {
  const int j = GLOBAL_ID;
  if (j >= count) return;
  accum sign;
  const ulong key = component_key(seed, start, count, j, &sign);
  const accum w = sqrt(uniform_draw(key, 0));
  const accum cap = tabulated(table, SPHEROID_ESCAPE_CAP, w);
  const accum width = tabulated(table, SPHEROID_WIDTH, w);
  accum p[3], v[3], unused;
  isotropic(key, 1, tabulated(table, SPHEROID_RADIUS, w), &p[0], &p[1], &p[2]);
  for (ulong k = 3;; k += 4) {
    normal_pair(key, k, &v[0], &v[1]);
    normal_pair(key, k + 2, &v[2], &unused);
    for (int c = 0; c < 3; ++c) v[c] *= width;
    if (v[0] * v[0] + v[1] * v[1] + v[2] * v[2] <= cap * cap) break;
  }
  place(frame, sign, p, v, body_mass, start + j, body, velocity);
}
