/* direct_vjp.cl: the vector-Jacobian product of direct.cl's evaluation (engine/force_vjp.py
 * states the sums; cpu-direct's native kernel computes the same in float64 on the host).
 *
 * For each target k, over every other body j with d = x_j - x_k, s = |d|^2 + eps^2:
 *   w = m_k abar_j - m_j abar_k
 *   pos_bar_k  += w / s^(3/2) - 3 (d . w) d / s^(5/2)
 *   mass_bar_k -= (abar_j . d) / s^(3/2)
 * and, WITH_POTENTIAL, the potentials' cotangents pbar:
 *   pos_bar_k  -= (m_j pbar_k + m_k pbar_j) d / s^(3/2)
 *   mass_bar_k -= pbar_j / s^(1/2)
 * Bodies are real4 (x, y, z, mass), cotangents real4 (abar_x, abar_y, abar_z, pbar), the output
 * real4 (pos_bar_x, pos_bar_y, pos_bar_z, mass_bar). The work-group layout is direct.cl's with
 * one target a work-item: TILE work-items own TILE consecutive targets and stage TILE sources
 * and their cotangents at a time in local memory. The host pads both arrays to a multiple of
 * TILE with zero rows (a zero-mass body at the origin with a zero cotangent): its w and abar
 * are zero, so padding adds nothing. Each target's sum runs over j in index order, so the
 * result does not depend on the launch.
 * The target itself: d = 0 and w = m_k abar_k - m_k abar_k = 0 add exact zeros to the force
 * terms; its potential term is dropped by index, and with ZERO_SOFTENING every pair at r2 = 0
 * is (as direct.cl's pair_term drops it).
 * Host defines: TILE (= the work-group size), ZERO_SOFTENING, WITH_POTENTIAL.
 * Cost: about 35 flop and one rsqrt a pair (the potential's terms 8 more). */

KERNEL LAUNCH_BOUNDS(TILE, 1)
void direct_vjp(GLOBAL const real4* RESTRICT body, GLOBAL const real4* RESTRICT cotangent,
                GLOBAL real4* RESTRICT out, const int padded_count, const real softening2) {
  LOCAL real4 tile_body[TILE];
  LOCAL real4 tile_cotangent[TILE];
  const int k = GROUP_ID * TILE + LOCAL_ID;
  const real4 target = body[k];
  const real tx = target.x, ty = target.y, tz = target.z, tm = target.w;
  const real4 own = cotangent[k];
  const real ox = own.x, oy = own.y, oz = own.z;
#ifdef WITH_POTENTIAL
  const real op = own.w;
#endif
  real px = 0, py = 0, pz = 0, pm = 0;
  for (int start = 0; start < padded_count; start += TILE) {
    tile_body[LOCAL_ID] = body[start + LOCAL_ID];
    tile_cotangent[LOCAL_ID] = cotangent[start + LOCAL_ID];
    SYNC_THREADS;
    for (int index = 0; index < TILE; ++index) {
      const real4 source = tile_body[index];
      const real4 bar = tile_cotangent[index];
      const real dx = source.x - tx;
      const real dy = source.y - ty;
      const real dz = source.z - tz;
      const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, softening2)));
      const real root = RSQRT(r2);
#ifdef ZERO_SOFTENING
      const bool drop = !(r2 > 0);
#else
      const bool drop = false;
#endif
      const real inv_r = drop ? (real)0 : root;
      const real inv_r3 = inv_r * inv_r * inv_r;
      /* Each product rounded apart: the target's own w is then exactly zero (an FMA would
       * leave the second product's rounding error, times 1 / eps^3). */
      const real wx = MUL_RN(tm, bar.x) - MUL_RN(source.w, ox);
      const real wy = MUL_RN(tm, bar.y) - MUL_RN(source.w, oy);
      const real wz = MUL_RN(tm, bar.z) - MUL_RN(source.w, oz);
      const real d_dot_w = FMA(dx, wx, FMA(dy, wy, dz * wz));
      real along = -3 * inv_r3 * inv_r * inv_r * d_dot_w;
#ifdef WITH_POTENTIAL
      const bool self = start + index == k;
      const real inv_r_other = self ? (real)0 : inv_r;
      along -= inv_r_other * inv_r * inv_r * FMA(source.w, op, tm * bar.w);
      pm -= bar.w * inv_r_other;
#endif
      px = FMA(inv_r3, wx, FMA(along, dx, px));
      py = FMA(inv_r3, wy, FMA(along, dy, py));
      pz = FMA(inv_r3, wz, FMA(along, dz, pz));
      pm -= inv_r3 * FMA(bar.x, dx, FMA(bar.y, dy, bar.z * dz));
    }
    SYNC_THREADS;
  }
  out[k] = MAKE_REAL4(px, py, pz, pm);
}
