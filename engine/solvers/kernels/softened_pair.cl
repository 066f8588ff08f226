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
