/* lattice.cl: the reversible integrator's lattice steps and the gradient's adjoint on the device
 * (engine/lattice.py states the integrator, engine/gradients.py the backward pass; these are
 * the same operations on device arrays, so a run here takes the host run's integers bit for bit).
 *
 * qpos and qvel are the lattice points, `long` (count x 3, C order); positions are
 * qpos * position_unit, velocities qvel * velocity_unit (powers of two). Every increment is
 * computed in float64 and rounded to the nearest integer, ties to even (rint, as numpy's), so
 * the device needs float64 whatever the solver's precision.
 * An increment of LATTICE_LIMIT or more in magnitude (or NaN), or a result beyond LATTICE_LIMIT,
 * leaves that coordinate unchanged and writes the particle's index into `left` (the first
 * for positions, the second for velocities) through an atomic minimum, so the particle named
 * does not depend on the order the work-items run in; the host reads `left` once a pass.
 * The adjoint (x_bar, v_bar: double count x 3; m_bar: double count) stays in float64 as on
 * the host. `body` and `cotangent` are the force kernels' padded real4 rows: only their first
 * `count` rows are written here, the padding stays zero. */

#ifdef __OPENCL_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define LATTICE_LIMIT 4611686018427387904.0 /* 2**62 */
#define LATTICE_LIMIT_INT 4611686018427387904L

/* q += rint(increment), or `left` names particle i and q stays as it was. */
DEVICE void lattice_add(GLOBAL long* RESTRICT q, const double increment, const int i,
                        GLOBAL int* RESTRICT left) {
  const double rounded = rint(increment);
  if (!(fabs(rounded) < LATTICE_LIMIT)) {
    ATOMIC_MIN(left, i);
    return;
  }
  const long moved = *q + (long)rounded;
  if (moved > LATTICE_LIMIT_INT || moved < -LATTICE_LIMIT_INT) {
    ATOMIC_MIN(left, i);
    return;
  }
  *q = moved;
}

/* qpos += rint(qvel * factor), factor = dt * velocity_unit / position_unit. */
KERNEL void lattice_drift(GLOBAL long* RESTRICT qpos, GLOBAL const long* RESTRICT qvel,
                          const int count, const double factor, GLOBAL int* RESTRICT left) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  for (int c = 0; c < 3; ++c) lattice_add(&qpos[3 * i + c], (double)qvel[3 * i + c] * factor, i, &left[0]);
}

/* qvel += rint(a * factor), factor = dt / velocity_unit; a from the force kernel's rows. */
KERNEL void lattice_kick(GLOBAL long* RESTRICT qvel, GLOBAL const real4* RESTRICT acceleration,
                         const int count, const double factor, GLOBAL int* RESTRICT left) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 a = acceleration[i];
  lattice_add(&qvel[3 * i], (double)a.x * factor, i, &left[1]);
  lattice_add(&qvel[3 * i + 1], (double)a.y * factor, i, &left[1]);
  lattice_add(&qvel[3 * i + 2], (double)a.z * factor, i, &left[1]);
}

/* The force kernels' rows at the lattice positions: (real)(qpos * position_unit), the mass
 * (already in the rows) kept. */
KERNEL void lattice_bodies(GLOBAL const long* RESTRICT qpos, const int count,
                           const double position_unit, GLOBAL real4* RESTRICT body) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  real4 row = body[i];
  row.x = (real)((double)qpos[3 * i] * position_unit);
  row.y = (real)((double)qpos[3 * i + 1] * position_unit);
  row.z = (real)((double)qpos[3 * i + 2] * position_unit);
  body[i] = row;
}

/* A half drift's adjoint: v_bar += half_dt * x_bar. */
KERNEL void adjoint_drift(GLOBAL double* RESTRICT v_bar, GLOBAL const double* RESTRICT x_bar,
                          const int count, const double half_dt) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  for (int c = 0; c < 3; ++c) v_bar[3 * i + c] += half_dt * x_bar[3 * i + c];
}

/* The kick's cotangent of the accelerations, dt * v_bar, as the VJP kernel's rows. */
KERNEL void adjoint_cotangent(GLOBAL const double* RESTRICT v_bar, const int count,
                              const double dt, GLOBAL real4* RESTRICT cotangent) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  cotangent[i] = MAKE_REAL4((real)(dt * v_bar[3 * i]), (real)(dt * v_bar[3 * i + 1]),
                            (real)(dt * v_bar[3 * i + 2]), (real)0);
}

/* The force's VJP into the adjoint: x_bar += its pos_bar, m_bar += its mass_bar. */
KERNEL void adjoint_add(GLOBAL double* RESTRICT x_bar, GLOBAL double* RESTRICT m_bar,
                        GLOBAL const real4* RESTRICT vjp, const int count) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 step = vjp[i];
  x_bar[3 * i] += (double)step.x;
  x_bar[3 * i + 1] += (double)step.y;
  x_bar[3 * i + 2] += (double)step.z;
  m_bar[i] += (double)step.w;
}
