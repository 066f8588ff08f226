/* direct.cl: softened direct-summation gravity (G = 1), one work-item per target body.
 *
 * Bodies are real4 (x, y, z, mass); the output is real4 (ax, ay, az, potential). Each work-group
 * stages TILE source bodies at a time in local memory, so a source is read from global memory
 * once per work-group rather than once per work-item. The host pads the body array to a multiple
 * of TILE with zero-mass bodies and launches exactly that many work-items: every load and store
 * is in bounds and padding contributes nothing.
 * Force law (the same as the CPU solvers): a_i = sum_j m_j d_ij / (|d_ij|^2 + eps^2)^(3/2),
 * phi_i = -sum_j m_j / (|d_ij|^2 + eps^2)^(1/2) over j != i.
 * The self term adds nothing to the force (d_ii = 0) and is left in the loop; the potential
 * variant masks it by index.
 * Host defines: TILE (= the work-group size), ZERO_SOFTENING (eps = 0: the self term and
 * zero-mass padding at a body's own position would divide by zero, so r2 = 0 is masked),
 * WITH_POTENTIAL. Cost: ~20 flop per interaction, one rsqrt. */

KERNEL void direct_accelerations(GLOBAL const real4* RESTRICT body, GLOBAL real4* RESTRICT out,
                                 const int padded_count, const real softening2) {
  LOCAL real4 tile[TILE];
  const real4 target = body[GLOBAL_ID];
  real ax = 0, ay = 0, az = 0;
#ifdef WITH_POTENTIAL
  real phi = 0;
#endif
  for (int start = 0; start < padded_count; start += TILE) {
    tile[LOCAL_ID] = body[start + LOCAL_ID];
    SYNC_THREADS;
#pragma unroll 16
    for (int k = 0; k < TILE; ++k) {
      const real4 source = tile[k];
      const real dx = source.x - target.x;
      const real dy = source.y - target.y;
      const real dz = source.z - target.z;
      const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, softening2)));
#ifdef ZERO_SOFTENING
      const real inv_r = r2 > 0 ? RSQRT(r2) : (real)0;
#else
      const real inv_r = RSQRT(r2);
#endif
      const real m_inv_r = source.w * inv_r;
      const real w = m_inv_r * inv_r * inv_r;
      ax = FMA(w, dx, ax);
      ay = FMA(w, dy, ay);
      az = FMA(w, dz, az);
#ifdef WITH_POTENTIAL
      phi -= start + k == GLOBAL_ID ? (real)0 : m_inv_r;
#endif
    }
    SYNC_THREADS;
  }
#ifdef WITH_POTENTIAL
  out[GLOBAL_ID] = MAKE_REAL4(ax, ay, az, phi);
#else
  out[GLOBAL_ID] = MAKE_REAL4(ax, ay, az, (real)0);
#endif
}
