/* scan.cl: exclusive prefix sum of `uint` counts, in place or not, in three launches.
 *
 * Each work-item owns a contiguous chunk of SCAN_CHUNK entries (serial loops: cache-friendly on
 * a CPU device, and the arrays scanned here are per-body counts, a small part of a tree build):
 *   scan_chunk_totals  totals[t] = sum of chunk t
 *   scan_totals        one work-group of SCAN_GROUP turns totals[] into exclusive offsets and
 *                      writes the grand total into totals[chunks]
 *   scan_apply         out[i] = offset of i's chunk + sum of the entries before i in the chunk;
 *                      out[count] = the grand total (out has count + 1 entries)
 * Host defines: SCAN_CHUNK, SCAN_GROUP. */

KERNEL void scan_chunk_totals(GLOBAL const uint* RESTRICT in, const int count,
                              GLOBAL uint* RESTRICT totals, const int chunks) {
  const int t = GLOBAL_ID;
  if (t >= chunks) return;
  const int begin = t * SCAN_CHUNK;
  const int end = MIN(count, begin + SCAN_CHUNK);
  uint sum = 0;
  for (int i = begin; i < end; ++i) sum += in[i];
  totals[t] = sum;
}

KERNEL void scan_totals(GLOBAL uint* RESTRICT totals, const int chunks) {
  LOCAL uint partial[SCAN_GROUP];
  const int per = (chunks + SCAN_GROUP - 1) / SCAN_GROUP;
  const int begin = MIN(chunks, LOCAL_ID * per);
  const int end = MIN(chunks, begin + per);
  uint sum = 0;
  for (int i = begin; i < end; ++i) sum += totals[i];
  partial[LOCAL_ID] = sum;
  SYNC_THREADS;
  /* Inclusive Hillis-Steele scan of the per-item sums. */
  for (int offset = 1; offset < SCAN_GROUP; offset <<= 1) {
    const uint add = LOCAL_ID >= offset ? partial[LOCAL_ID - offset] : 0u;
    SYNC_THREADS;
    partial[LOCAL_ID] += add;
    SYNC_THREADS;
  }
  uint running = partial[LOCAL_ID] - sum;
  for (int i = begin; i < end; ++i) {
    const uint value = totals[i];
    totals[i] = running;
    running += value;
  }
  if (LOCAL_ID == SCAN_GROUP - 1) totals[chunks] = partial[SCAN_GROUP - 1];
}

KERNEL void scan_apply(GLOBAL const uint* in, const int count, GLOBAL const uint* RESTRICT totals,
                       const int chunks, GLOBAL uint* out) {
  const int t = GLOBAL_ID;
  if (t >= chunks) return;
  const int begin = t * SCAN_CHUNK;
  const int end = MIN(count, begin + SCAN_CHUNK);
  uint running = totals[t];
  for (int i = begin; i < end; ++i) {
    const uint value = in[i];
    out[i] = running;
    running += value;
  }
  if (t == chunks - 1) out[count] = totals[chunks];
}
