/* direct_vjp.cl: the vector-Jacobian product of direct.cl's evaluation (engine/force_vjp.py
 * states the sums; cpu-direct's native kernel computes the same in float64 on the host; the
 * pair's terms are softened_pair.cl's pair_vjp_term, which fmm_vjp.cl's P2P shares).
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
 * Cost: about 35 flop and one rsqrt a pair (the potential's terms 8 more).
 * Needs softened_pair.cl first. */

KERNEL LAUNCH_BOUNDS(TILE, 1)
void direct_vjp(GLOBAL const real4* RESTRICT body, GLOBAL const real4* RESTRICT cotangent,
                GLOBAL real4* RESTRICT out, const int padded_count, const real softening2) {
  LOCAL real4 tile_body[TILE];
  LOCAL real4 tile_cotangent[TILE];
  const int k = GROUP_ID * TILE + LOCAL_ID;
  const real4 target = body[k];
  const real4 own = cotangent[k];
  real4 sum = MAKE_REAL4(0, 0, 0, 0);
  for (int start = 0; start < padded_count; start += TILE) {
    tile_body[LOCAL_ID] = body[start + LOCAL_ID];
    tile_cotangent[LOCAL_ID] = cotangent[start + LOCAL_ID];
    SYNC_THREADS;
    for (int index = 0; index < TILE; ++index)
      sum = pair_vjp_term(sum, target, own, tile_body[index], tile_cotangent[index], softening2,
                          start + index == k);
    SYNC_THREADS;
  }
  out[k] = sum;
}
