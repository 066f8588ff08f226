/* direct.cl: softened direct-summation gravity (G = 1).
 *
 * Bodies are real4 (x, y, z, mass); the output is real4 (ax, ay, az, potential). A work-group of
 * TILE work-items owns TILE * TARGETS consecutive target bodies (each work-item TARGETS of them,
 * TILE apart, so loads stay coalesced) and stages TILE source bodies at a time in local memory:
 * a source is read from global memory once per work-group, and each local-memory read feeds
 * TARGETS interactions. The host pads the body array to a multiple of TILE * TARGETS with
 * zero-mass bodies at the origin and launches exactly padded / TARGETS work-items: every load
 * and store is in bounds and padding contributes nothing.
 * Force law (the same as the CPU solvers): a_i = sum_j m_j d_ij / (|d_ij|^2 + eps^2)^(3/2),
 * phi_i = -sum_j m_j / (|d_ij|^2 + eps^2)^(1/2) over j != i. The self term adds nothing to the
 * force (d_ii = 0) and stays in the loop; the potential variant masks it by index.
 * Host defines: TILE (= the work-group size), TARGETS (1, 2 or 4), ZERO_SOFTENING (eps = 0: the
 * self term and padding at a body's own position would divide by zero, so r2 = 0 is masked),
 * WITH_POTENTIAL. Cost: 20 flop and one rsqrt per interaction (13 arithmetic instructions). */

/* Residency (CUDA): in float32 the loop fits 32 registers at 1 or 2 targets, so a
 * multiprocessor can hold its full thread count; that measured ~7% faster on the H200 than the
 * compiler's own choice (~50 registers). 4 targets need ~63 registers, and float64 twice as
 * many as float32, so fewer threads are asked for there. None of these spill, except float64
 * with 4 targets in groups of 1024, where the hardware leaves 64 registers a thread. */
#define REGISTER_SCALE ((REAL_BITS / 32) * (TARGETS <= 2 ? 1 : 2))
#define RESIDENT_THREADS (MAX_THREADS_PER_UNIT / REGISTER_SCALE)

KERNEL LAUNCH_BOUNDS(TILE, RESIDENT_THREADS >= TILE ? RESIDENT_THREADS / TILE : 1)
void direct_accelerations(GLOBAL const real4* RESTRICT body, GLOBAL real4* RESTRICT out,
                          const int padded_count, const real softening2) {
  LOCAL real4 tile[TILE];
  const int first = GROUP_ID * (TILE * TARGETS) + LOCAL_ID;
  real tx[TARGETS], ty[TARGETS], tz[TARGETS], ax[TARGETS], ay[TARGETS], az[TARGETS];
#ifdef WITH_POTENTIAL
  real phi[TARGETS];
#endif
#pragma unroll
  for (int t = 0; t < TARGETS; ++t) {
    const real4 target = body[first + t * TILE];
    tx[t] = target.x;
    ty[t] = target.y;
    tz[t] = target.z;
    ax[t] = 0;
    ay[t] = 0;
    az[t] = 0;
#ifdef WITH_POTENTIAL
    phi[t] = 0;
#endif
  }
  for (int start = 0; start < padded_count; start += TILE) {
    tile[LOCAL_ID] = body[start + LOCAL_ID];
    SYNC_THREADS;
#pragma unroll 8
    for (int k = 0; k < TILE; ++k) {
      const real4 source = tile[k];
#pragma unroll
      for (int t = 0; t < TARGETS; ++t) {
        const real dx = source.x - tx[t];
        const real dy = source.y - ty[t];
        const real dz = source.z - tz[t];
        const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, softening2)));
#ifdef ZERO_SOFTENING
        const real inv_r = r2 > 0 ? RSQRT(r2) : (real)0;
#else
        const real inv_r = RSQRT(r2);
#endif
        const real m_inv_r = source.w * inv_r;
        const real w = m_inv_r * inv_r * inv_r;
        ax[t] = FMA(w, dx, ax[t]);
        ay[t] = FMA(w, dy, ay[t]);
        az[t] = FMA(w, dz, az[t]);
#ifdef WITH_POTENTIAL
        phi[t] -= start + k == first + t * TILE ? (real)0 : m_inv_r;
#endif
      }
    }
    SYNC_THREADS;
  }
#pragma unroll
  for (int t = 0; t < TARGETS; ++t) {
#ifdef WITH_POTENTIAL
    out[first + t * TILE] = MAKE_REAL4(ax[t], ay[t], az[t], phi[t]);
#else
    out[first + t * TILE] = MAKE_REAL4(ax[t], ay[t], az[t], (real)0);
#endif
  }
}
