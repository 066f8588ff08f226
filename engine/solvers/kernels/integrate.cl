/* integrate.cl: the leapfrog's kick and drift on device-resident state.
 *
 * body = real4 (x, y, z, mass), velocity = real4 (vx, vy, vz, unused), acceleration = real4
 * (ax, ay, az, potential). Arrays are padded; `count` real bodies are updated and the padding
 * (zero mass) is left where it is. Launched with a global size that is a multiple of the
 * work-group size, so work-items past `count` return at once. `positions_xyz` writes the
 * float32 (x, y, z) rows a frame is made of (what the renderer reads), `locality_order_copy`
 * the frame's copy of the order the compute splat draws its particles in. */

KERNEL void kick(GLOBAL real4* RESTRICT velocity, GLOBAL const real4* RESTRICT acceleration,
                 const int count, const real dt) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  real4 v = velocity[i];
  const real4 a = acceleration[i];
  v.x = FMA(a.x, dt, v.x);
  v.y = FMA(a.y, dt, v.y);
  v.z = FMA(a.z, dt, v.z);
  velocity[i] = v;
}

KERNEL void drift(GLOBAL real4* RESTRICT body, GLOBAL const real4* RESTRICT velocity,
                  const int count, const real dt) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  real4 p = body[i];
  const real4 v = velocity[i];
  p.x = FMA(v.x, dt, p.x);
  p.y = FMA(v.y, dt, p.y);
  p.z = FMA(v.z, dt, p.z);
  body[i] = p;
}

KERNEL void positions_xyz(GLOBAL const real4* RESTRICT body, const int count,
                          GLOBAL float* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const real4 p = body[i];
  const ulong at = 3 * (ulong)i;  /* past 2^31 - 1 above 715,827,882 bodies */
  out[at] = (float)p.x;
  out[at + 1] = (float)p.y;
  out[at + 2] = (float)p.z;
}

/* A frame's copy of the solver's locality order (the next step's sort rewrites the solver's). */
KERNEL void locality_order_copy(GLOBAL const uint* RESTRICT order, const int count,
                                GLOBAL uint* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  out[i] = order[i];
}
