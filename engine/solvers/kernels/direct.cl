/* direct.cl: softened direct-summation gravity (G = 1).
 *
 * Bodies are real4 (x, y, z, mass); the output is real4 (ax, ay, az, potential). A work-group of
 * TILE work-items owns TILE * TARGETS consecutive target bodies (each work-item TARGETS of them,
 * TILE apart, so loads stay coalesced) and stages TILE source bodies at a time in local memory:
 * a source is read from global memory once per work-group, and each local-memory read feeds
 * TARGETS interactions. The host pads the body array to a multiple of TILE * TARGETS with
 * zero-mass bodies at the origin and launches exactly padded / TARGETS work-items: every load
 * and store is in bounds and padding contributes nothing.
 * Force law (the same as the CPU solvers, softened_pair.cl's pair_term): a_i = sum_j m_j d_ij /
 * (|d_ij|^2 + eps^2)^(3/2), phi_i = -sum_j m_j / (|d_ij|^2 + eps^2)^(1/2) over j != i. The self
 * term adds nothing to the force (d_ii = 0) and stays in the loop; the potential variant drops it
 * by index. Needs softened_pair.cl first.
 * Host defines: TILE (= the work-group size), TARGETS (1, 2 or 4), ZERO_SOFTENING (eps = 0: the
 * self term and padding at a body's own position would divide by zero, so pair_term drops
 * r2 = 0), WITH_POTENTIAL. Cost: 20 flop and one rsqrt per interaction (13 arithmetic
 * instructions). */

/* Residency (CUDA): in float32 the loop fits 32 registers at 1 or 2 targets, so a
 * multiprocessor can hold its full thread count; that measured ~7% faster on the H200 than the
 * compiler's own choice (~50 registers). 4 targets need ~63 registers, and float64 twice as
 * many as float32, so fewer threads are asked for there. None of these spill, except float64
 * with 4 targets in groups of 1024, where the hardware leaves 64 registers a thread. */
#define REGISTER_SCALE ((REAL_BITS / 32) * (TARGETS <= 2 ? 1 : 2))
#define RESIDENT_THREADS (MAX_THREADS_PER_UNIT / REGISTER_SCALE)

/* The target itself: a term the potential must not take (the force's is zero, d = 0). */
#ifdef WITH_POTENTIAL
#define SELF(index, t) ((index) == first + (t) * TILE)
#else
#define SELF(index, t) false
#endif

KERNEL LAUNCH_BOUNDS(TILE, RESIDENT_THREADS >= TILE ? RESIDENT_THREADS / TILE : 1)
void direct_accelerations(GLOBAL const real4* RESTRICT body, GLOBAL real4* RESTRICT out,
                          const int padded_count, const real softening2) {
  LOCAL real4 tile[TILE];
  const int first = GROUP_ID * (TILE * TARGETS) + LOCAL_ID;
  real tx[TARGETS], ty[TARGETS], tz[TARGETS];
  real4 a[TARGETS];
#pragma unroll
  for (int t = 0; t < TARGETS; ++t) {
    const real4 target = body[first + t * TILE];
    tx[t] = target.x;
    ty[t] = target.y;
    tz[t] = target.z;
    a[t] = MAKE_REAL4(0, 0, 0, 0);
  }
  for (int start = 0; start < padded_count; start += TILE) {
    tile[LOCAL_ID] = body[start + LOCAL_ID];
    SYNC_THREADS;
#pragma unroll 8
    for (int k = 0; k < TILE; ++k) {
      const real4 source = tile[k];
#pragma unroll
      for (int t = 0; t < TARGETS; ++t)
        a[t] = pair_term(a[t], source, tx[t], ty[t], tz[t], softening2, SELF(start + k, t));
    }
    SYNC_THREADS;
  }
#pragma unroll
  for (int t = 0; t < TARGETS; ++t) out[first + t * TILE] = a[t];
}
