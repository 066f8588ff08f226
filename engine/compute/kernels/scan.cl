/* scan.cl: exclusive prefix sum of `uint` counts, in place or not, in three launches.
 *
 * The entries are cut into tiles of SCAN_GROUP * SCAN_ITEM, one work-group each; a work-item
 * owns SCAN_ITEM consecutive entries of its group's tile (a group reads its tile in one
 * contiguous sweep: coalesced on a GPU, cache lines in order on a CPU device):
 *   scan_tile_totals   totals[t] = sum of tile t (per-item sums, then a reduction in the group)
 *   scan_totals        one work-group of SCAN_GROUP turns totals[] into exclusive offsets and
 *                      writes the grand total into totals[tiles]
 *   scan_apply         out[i] = offset of i's tile + the sum of the entries before i in the
 *                      tile (the per-item sums scanned in the group); out[count] = the grand
 *                      total (out has count + 1 entries)
 * Integer sums: any grouping gives the same result. In place: every entry is read, before it
 * is written, by the one work-item that writes it.
 * Host defines: SCAN_GROUP (a power of two: the launches' work-group size), SCAN_ITEM. */

#define SCAN_TILE (SCAN_GROUP * SCAN_ITEM)

/* Inclusive Hillis-Steele scan of partial[0 .. SCAN_GROUP - 1] by the whole group. */
DEVICE void scan_group(LOCAL_ARG uint* partial) {
  for (int offset = 1; offset < SCAN_GROUP; offset <<= 1) {
    const uint add = LOCAL_ID >= offset ? partial[LOCAL_ID - offset] : 0u;
    SYNC_THREADS;
    partial[LOCAL_ID] += add;
    SYNC_THREADS;
  }
}

KERNEL void scan_tile_totals(GLOBAL const uint* RESTRICT in, const int count,
                             GLOBAL uint* RESTRICT totals) {
  LOCAL uint partial[SCAN_GROUP];
  const int begin = GROUP_ID * SCAN_TILE + LOCAL_ID * SCAN_ITEM;
  uint sum = 0;
  for (int k = 0; k < SCAN_ITEM; ++k)
    if (begin + k < count) sum += in[begin + k];
  partial[LOCAL_ID] = sum;
  SYNC_THREADS;
  for (int stride = SCAN_GROUP / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride) partial[LOCAL_ID] += partial[LOCAL_ID + stride];
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0) totals[GROUP_ID] = partial[0];
}

KERNEL void scan_totals(GLOBAL uint* RESTRICT totals, const int tiles) {
  LOCAL uint partial[SCAN_GROUP];
  const int per = (tiles + SCAN_GROUP - 1) / SCAN_GROUP;
  const int begin = MIN(tiles, LOCAL_ID * per);
  const int end = MIN(tiles, begin + per);
  uint sum = 0;
  for (int i = begin; i < end; ++i) sum += totals[i];
  partial[LOCAL_ID] = sum;
  SYNC_THREADS;
  scan_group(partial);
  uint running = partial[LOCAL_ID] - sum;
  for (int i = begin; i < end; ++i) {
    const uint value = totals[i];
    totals[i] = running;
    running += value;
  }
  if (LOCAL_ID == SCAN_GROUP - 1) totals[tiles] = partial[SCAN_GROUP - 1];
}

KERNEL void scan_apply(GLOBAL const uint* in, const int count, GLOBAL const uint* RESTRICT totals,
                       const int tiles, GLOBAL uint* out) {
  LOCAL uint partial[SCAN_GROUP];
  const int begin = GROUP_ID * SCAN_TILE + LOCAL_ID * SCAN_ITEM;
  uint values[SCAN_ITEM];
  uint sum = 0;
  for (int k = 0; k < SCAN_ITEM; ++k) {
    values[k] = begin + k < count ? in[begin + k] : 0u;
    sum += values[k];
  }
  partial[LOCAL_ID] = sum;
  SYNC_THREADS;
  scan_group(partial);
  uint running = totals[GROUP_ID] + partial[LOCAL_ID] - sum;
  for (int k = 0; k < SCAN_ITEM; ++k) {
    if (begin + k < count) out[begin + k] = running;
    running += values[k];
  }
  if (GROUP_ID == 0 && LOCAL_ID == 0) out[count] = totals[tiles];
}
