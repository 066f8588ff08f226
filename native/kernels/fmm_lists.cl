/* fmm_lists.cl: gpu-fmm's per-target interaction lists from the dual walk's unordered pairs
 * (fmm.cl's walk: a << 32 | b, each pair once, never a node with itself), without a global sort
 * (docs/adr/0172). The sources of target t are source[start[t] .. start[t + 1]), ascending:
 * exactly native fmm_lists' directed lists (cpu-fmm's), entry for entry.
 *
 * Algorithm, one list (M2L or P2P) at a time:
 *   list_clear    count[t] = cursor[t] = 0 for every node;
 *   list_count    one work-item per pair adds 1 to count[a] and to count[b] (integer atomics);
 *   (scan.cl)     start = the exclusive scan of count, in place (the host's DeviceScan over
 *                 node_count entries writes node_count + 1: start[node_count] = 2 pairs);
 *   list_scatter  one work-item per pair writes b into t = a's segment at start[a] + (an atomic
 *                 ticket from cursor[a]), and a into b's: each segment holds its sources in the
 *                 order the atomics served them (any order);
 *   list_sort     one work-group of LIST_GROUP per target places each entry of its segment at
 *                 start[t] + rank, rank = how many of the segment's sources are smaller. The
 *                 sources of a segment are distinct (the walk emits each unordered pair once and
 *                 no node with itself), so the ranks are a permutation of 0 .. n - 1 and the
 *                 segment comes out ascending. A work-item holds LIST_RANKS entries in registers
 *                 and counts against the segment read through local memory in tiles of
 *                 LIST_TILE; a segment of up to LIST_TILE entries is read into local memory once
 *                 (the usual case), a longer one tile after tile for each LIST_GROUP * LIST_RANKS
 *                 of its entries (slower, the same result). n^2 comparisons per target: cheap
 *                 because lists are short. An M2L list holds the cells that are well separated
 *                 from the target while their parents are not from its parent: a shell of
 *                 comparable cells whose size the opening angle bounds (H200, 10M Plummer,
 *                 theta 0.7: mean 110, at most 282); a P2P list the leaves near one leaf (mean
 *                 26.5, at most 121). Only theta near 0, where every leaf pairs with every
 *                 other, gives segments of every leaf (a direct sum anyway).
 * Determinism: the counts and so start[] are integer sums (any order gives the same values);
 * the scatter's order within a segment depends on the atomics, but list_sort's output depends
 * only on the segment's set of sources (each value's rank among them), so start[] and source[]
 * are the same arrays on every run and every device.
 * Host defines: LIST_GROUP (list_sort's work-group size, a multiple of SUBGROUP_SIZE),
 * LIST_RANKS (entries per work-item per pass), LIST_TILE (the local tile, in entries). */

KERNEL void list_clear(const int node_count, GLOBAL uint* RESTRICT count, GLOBAL uint* RESTRICT cursor) {
  const int t = GLOBAL_ID;
  if (t >= node_count) return;
  count[t] = 0u;
  cursor[t] = 0u;
}

KERNEL void list_count(GLOBAL const ulong* RESTRICT pairs, const int pair_count, GLOBAL uint* RESTRICT count) {
  const int i = GLOBAL_ID;
  if (i >= pair_count) return;
  ATOMIC_ADD(&count[(uint)(pairs[i] >> 32)], 1u);
  ATOMIC_ADD(&count[(uint)pairs[i]], 1u);
}

KERNEL void list_scatter(GLOBAL const ulong* RESTRICT pairs, const int pair_count, GLOBAL const uint* RESTRICT start,
                         GLOBAL uint* RESTRICT cursor, GLOBAL uint* RESTRICT unsorted) {
  const int i = GLOBAL_ID;
  if (i >= pair_count) return;
  const uint a = (uint)(pairs[i] >> 32), b = (uint)pairs[i];
  unsorted[start[a] + ATOMIC_ADD(&cursor[a], 1u)] = b;
  unsorted[start[b] + ATOMIC_ADD(&cursor[b], 1u)] = a;
}

/* One work-group per target (launched with node_count * LIST_GROUP work-items). n is the same for
 * the whole group, so every barrier is reached by every work-item. */
KERNEL void list_sort(const int node_count, GLOBAL const uint* RESTRICT start, GLOBAL const uint* RESTRICT unsorted,
                      GLOBAL uint* RESTRICT source) {
  LOCAL uint tile[LIST_TILE];
  const int t = GROUP_ID;
  if (t >= node_count) return;
  const uint begin = start[t], n = start[t + 1] - begin;
  GLOBAL const uint* RESTRICT segment = unsorted + begin;
  const bool resident = n <= LIST_TILE;
  if (resident) {
    for (uint k = (uint)LOCAL_ID; k < n; k += LIST_GROUP) tile[k] = segment[k];
    SYNC_THREADS;
  }
  for (uint base = 0; base < n; base += LIST_GROUP * LIST_RANKS) {
    uint own[LIST_RANKS], rank[LIST_RANKS];
    for (int r = 0; r < LIST_RANKS; ++r) {
      const uint k = base + (uint)(r * LIST_GROUP + LOCAL_ID);
      own[r] = k < n ? segment[k] : 0u;
      rank[r] = 0u;
    }
    for (uint from = 0; from < n; from += LIST_TILE) {
      const uint width = MIN((uint)LIST_TILE, n - from);
      if (!resident) {
        SYNC_THREADS; /* the previous tile is read by every work-item */
        for (uint k = (uint)LOCAL_ID; k < width; k += LIST_GROUP) tile[k] = segment[from + k];
        SYNC_THREADS;
      }
      for (uint j = 0; j < width; ++j) {
        const uint other = tile[j];
        for (int r = 0; r < LIST_RANKS; ++r) rank[r] += other < own[r] ? 1u : 0u;
      }
    }
    for (int r = 0; r < LIST_RANKS; ++r) {
      const uint k = base + (uint)(r * LIST_GROUP + LOCAL_ID);
      if (k < n) source[begin + rank[r]] = own[r];
    }
  }
}
