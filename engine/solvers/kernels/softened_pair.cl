/* softened_pair.cl: the pull of one source body on one target (G = 1), the inner loop of every
 * pairwise sum on the device (direct.cl, tree_walk.cl's bodies, fmm.cl's p2p):
 *   d = source - target, r2 = |d|^2 + eps^2 (FMA'd),
 *   a += m d / r2^(3/2), potential -= m / r2^(1/2),
 * 13 arithmetic instructions and one RSQRT (the potential one more). A dropped pair adds exact
 * zeros: the target itself where its own term would not vanish (the potential, or no softening:
 * d = 0 gives 0 / 0), and with ZERO_SOFTENING (a host define) every pair at r2 = 0.
 * WITH_POTENTIAL: a.w accumulates the potential. */
DEVICE real4 pair_term(real4 a, const real4 source, const real tx, const real ty, const real tz, const real eps2,
                       const bool drop) {
  const real dx = source.x - tx;
  const real dy = source.y - ty;
  const real dz = source.z - tz;
  const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
  const real root = RSQRT(r2); /* a select after it, not a branch around it */
#ifdef ZERO_SOFTENING
  const real inv_r = drop || !(r2 > 0) ? (real)0 : root;
#else
  const real inv_r = drop ? (real)0 : root;
#endif
  const real m_inv_r = source.w * inv_r;
  const real w = m_inv_r * inv_r * inv_r;
  a.x = FMA(w, dx, a.x);
  a.y = FMA(w, dy, a.y);
  a.z = FMA(w, dz, a.z);
#ifdef WITH_POTENTIAL
  a.w -= m_inv_r;
#endif
  return a;
}

/* The VJP of pair_term for the pair of target k and source j (direct_vjp.cl states the sums;
 * engine/force_vjp.py derives them): with d = x_j - x_k, s = |d|^2 + eps^2, the cotangents
 * own = (abar_k, pbar_k) and bar = (abar_j, pbar_j), w = m_k abar_j - m_j abar_k,
 *   v.xyz += w / s^(3/2) - 3 (d . w) d / s^(5/2),   v.w -= (abar_j . d) / s^(3/2)
 * and, WITH_POTENTIAL, v.xyz -= (m_j pbar_k + m_k pbar_j) d / s^(3/2), v.w -= pbar_j / s^(1/2):
 * target k's (pos_bar, mass_bar) from this pair. The target itself (`self`): d = 0 and w = 0
 * add exact zeros to the force terms (w's products are rounded apart, MUL_RN, so that its
 * own w is exactly zero), its potential term is dropped, and with ZERO_SOFTENING every pair at
 * r2 = 0 is (as pair_term drops it). About 35 flop and one rsqrt (the potential 8 more). */
DEVICE real4 pair_vjp_term(real4 v, const real4 target, const real4 own, const real4 source, const real4 bar,
                           const real eps2, const bool self) {
  const real dx = source.x - target.x;
  const real dy = source.y - target.y;
  const real dz = source.z - target.z;
  const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
  const real root = RSQRT(r2);
#ifdef ZERO_SOFTENING
  const bool drop = !(r2 > 0);
#else
  const bool drop = false;
#endif
  const real inv_r = drop ? (real)0 : root;
  const real inv_r3 = inv_r * inv_r * inv_r;
  const real wx = MUL_RN(target.w, bar.x) - MUL_RN(source.w, own.x);
  const real wy = MUL_RN(target.w, bar.y) - MUL_RN(source.w, own.y);
  const real wz = MUL_RN(target.w, bar.z) - MUL_RN(source.w, own.z);
  const real d_dot_w = FMA(dx, wx, FMA(dy, wy, dz * wz));
  real along = -3 * inv_r3 * inv_r * inv_r * d_dot_w;
#ifdef WITH_POTENTIAL
  const real inv_r_other = self ? (real)0 : inv_r;
  along -= inv_r_other * inv_r * inv_r * FMA(source.w, own.w, target.w * bar.w);
  v.w -= bar.w * inv_r_other;
#endif
  v.x = FMA(inv_r3, wx, FMA(along, dx, v.x));
  v.y = FMA(inv_r3, wy, FMA(along, dy, v.y));
  v.z = FMA(inv_r3, wz, FMA(along, dz, v.z));
  v.w -= inv_r3 * FMA(bar.x, dx, FMA(bar.y, dy, bar.z * dz));
  return v;
}
