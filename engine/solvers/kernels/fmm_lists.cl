/* fmm_lists.cl: gpu-fmm's per-target interaction lists from the dual walk's unordered pairs
 * (fmm.cl's walk: a << 32 | b, each pair once, never a node with itself), without a global sort
 * (docs/fmm-tuning-log.md#0172). The sources of target t are source[start[t] .. start[t + 1]), ascending:
 * exactly native fmm_lists' directed lists (cpu-fmm's), entry for entry.
 *
 * Algorithm, one list (M2L or P2P) at a time, over the first totals[total] pairs (a count on the
 * device, the walk's state, at most the pair array's capacity: the host launches over the
 * capacity and reads nothing):
 *   list_clear    count[t] = cursor[t] = 0 for every node;
 *   list_count    one work-item per pair adds 1 to count[a] and to count[b] (integer atomics,
 *                 one a run of pairs that share the node: run_heads);
 *   (scan.cl)     start = the exclusive scan of count, in place (the host's DeviceScan over
 *                 node_count entries writes node_count + 1: start[node_count] = 2 pairs);
 *   list_scatter  one work-item per pair writes b into t = a's segment at start[a] + (an atomic
 *                 ticket from cursor[a], taken a run at a time), and a into b's: each segment
 *                 holds its sources in the order the atomics served them (any order);
 *   list_sort     one work-group of LIST_GROUP (one sub-group) per target sorts its segment into
 *                 source (the host gives the pair array's own memory: the pairs are read for the
 *                 last time by list_scatter, and 2 entries fill a pair's 8 bytes): a
 *                 segment of up to LIST_GROUP * LIST_SLOTS entries in registers, LIST_SLOTS a
 *                 work-item, by a bitonic network over the next power of two at least
 *                 LIST_GROUP (padded with 0xffffffff, above every node index; strides below
 *                 LIST_GROUP exchange lanes by shuffles, longer ones slots within a work-item):
 *                 about n log^2 n compare-exchanges against ranking's n^2 compares, whose
 *                 instructions bound it (docs/fmm-tuning-log.md#0182). A longer segment (rare: see below)
 *                 places each entry at
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
 * Host defines: LIST_GROUP (list_sort's work-group size: SUBGROUP_SIZE), LIST_SLOTS (the
 * network's entries a work-item, a power of two), LIST_RANKS (entries per work-item per ranking
 * pass), LIST_TILE (the ranking's local tile, in entries). */

KERNEL void list_clear(const int node_count, GLOBAL uint* RESTRICT count, GLOBAL uint* RESTRICT cursor) {
  const int t = GLOBAL_ID;
  if (t >= node_count) return;
  count[t] = 0u;
  cursor[t] = 0u;
}

/* Runs of one node among a sub-group's consecutive pairs. The walk writes a frontier pair's
 * outputs one after another, and most of them share a node (a split node's children each with
 * the other node, a node's children each with their later siblings), so list_count and
 * list_scatter take one atomic a run rather than one a pair and side: a run's first lane (its
 * head) adds the run's length, and list_scatter's lanes take consecutive tickets from the
 * head's. Lanes past the pairs hold NO_NODE, above every node index, so no run mixes them with
 * pairs. Every lane of the sub-group must call these (ballots and shuffles). */
#define NO_NODE 0xffffffffu

/* The heads of the runs of `node` as a mask of lanes. */
DEVICE uint run_heads(const uint node) {
  const int lane = SUBGROUP_LANE;
  const uint before = SUBGROUP_SHUFFLE(node, lane > 0 ? lane - 1 : 0);
  return SUBGROUP_BALLOT(lane == 0 || node != before);
}

/* The lanes of the run that starts at head lane `lane`. */
DEVICE uint run_length(const uint heads, const int lane) {
  const uint after = lane + 1 < SUBGROUP_SIZE ? heads >> (lane + 1) : 0u;
  return after == 0u ? (uint)(SUBGROUP_SIZE - lane) : (uint)POPCOUNT((after & (0u - after)) - 1u) + 1u;
}

/* The head lane of the run that holds `lane` (the highest head at or below it). */
DEVICE int run_head(const uint heads, const int lane) {
  return 63 - CLZ64((ulong)(heads & ((2u << lane) - 1u)));
}

KERNEL void list_count(GLOBAL const ulong* RESTRICT pairs, GLOBAL const uint* RESTRICT totals, const int total,
                       const uint capacity, GLOBAL uint* RESTRICT count) {
  const int i = GLOBAL_ID, lane = SUBGROUP_LANE;
  const bool valid = (uint)i < MIN(totals[total], capacity);
  const ulong pair = valid ? pairs[i] : ((ulong)NO_NODE << 32) | NO_NODE;
  for (int side = 0; side < 2; ++side) {
    const uint node = side == 0 ? (uint)(pair >> 32) : (uint)pair;
    const uint heads = run_heads(node);
    if (valid && ((heads >> lane) & 1u) != 0u) ATOMIC_ADD(&count[node], run_length(heads, lane));
  }
}

KERNEL void list_scatter(GLOBAL const ulong* RESTRICT pairs, GLOBAL const uint* RESTRICT totals, const int total,
                         const uint capacity, GLOBAL const uint* RESTRICT start, GLOBAL uint* RESTRICT cursor,
                         GLOBAL uint* RESTRICT unsorted) {
  const int i = GLOBAL_ID, lane = SUBGROUP_LANE;
  const bool valid = (uint)i < MIN(totals[total], capacity);
  const ulong pair = valid ? pairs[i] : ((ulong)NO_NODE << 32) | NO_NODE;
  for (int side = 0; side < 2; ++side) {
    const uint node = side == 0 ? (uint)(pair >> 32) : (uint)pair;
    const uint other = side == 0 ? (uint)pair : (uint)(pair >> 32);
    const uint heads = run_heads(node);
    uint ticket = 0u;
    if (valid && ((heads >> lane) & 1u) != 0u) ticket = ATOMIC_ADD(&cursor[node], run_length(heads, lane));
    const int head = run_head(heads, lane);
    ticket = SUBGROUP_SHUFFLE(ticket, head) + (uint)(lane - head);
    if (valid) unsorted[start[node] + ticket] = other;
  }
}

/* Compare-exchange of slots k and k ^ m of every work-item (m and slots constants, so the
 * slots stay registers): ascending where entry k * LIST_GROUP + lane has bit `size` clear. */
#define LIST_SLOT_EXCHANGE(slots, m)                                            \
  for (int k = 0; k < (slots); ++k)                                             \
    if ((m) < (slots) && (k & (m)) == 0) { /* m < slots: other m are not reached */ \
      const uint low = MIN(own[k], own[k | (m)]), high = MAX(own[k], own[k | (m)]); \
      const bool ascending = (((uint)k * LIST_GROUP) & size) == 0;              \
      own[k] = ascending ? low : high;                                          \
      own[k | (m)] = ascending ? high : low;                                    \
    }

/* The segment sorted by a bitonic network of slots * LIST_GROUP entries (slots a constant: each
 * network size its own code, so a short list pays for its own size only). */
#define LIST_NETWORK(slots)                                                     \
  {                                                                             \
    uint own[slots];                                                            \
    for (int k = 0; k < (slots); ++k) {                                         \
      const uint e = (uint)k * LIST_GROUP + lane;                               \
      own[k] = e < n ? segment[e] : 0xffffffffu;                                \
    }                                                                           \
    for (uint size = 2; size <= (uint)((slots) * LIST_GROUP); size <<= 1)       \
      for (uint stride = size >> 1; stride > 0; stride >>= 1) {                 \
        if (stride >= (uint)LIST_GROUP) {                                       \
          const uint m = stride / LIST_GROUP;                                   \
          if (m == 1) { LIST_SLOT_EXCHANGE(slots, 1) }                          \
          else if (m == 2) { LIST_SLOT_EXCHANGE(slots, 2) }                     \
          else if (m == 4) { LIST_SLOT_EXCHANGE(slots, 4) }                     \
          else { LIST_SLOT_EXCHANGE(slots, 8) }                                 \
        } else {                                                                \
          const bool lower = (lane & stride) == 0;                              \
          for (int k = 0; k < (slots); ++k) {                                   \
            const uint other = SUBGROUP_SHUFFLE_XOR(own[k], stride);            \
            const bool ascending = (((uint)k * LIST_GROUP + lane) & size) == 0; \
            own[k] = lower == ascending ? MIN(own[k], other) : MAX(own[k], other); \
          }                                                                     \
        }                                                                       \
      }                                                                         \
    for (int k = 0; k < (slots); ++k) {                                         \
      const uint e = (uint)k * LIST_GROUP + lane;                               \
      if (e < n) source[begin + e] = own[k];                                    \
    }                                                                           \
  }

/* One work-group per target (launched with node_count * LIST_GROUP work-items). n is the same for
 * the whole group, so every barrier and shuffle is reached by every work-item. */
KERNEL void list_sort(const int node_count, GLOBAL const uint* RESTRICT start, GLOBAL const uint* RESTRICT unsorted,
                      GLOBAL uint* RESTRICT source) {
  LOCAL uint tile[LIST_TILE];
  const int t = GROUP_ID;
  if (t >= node_count) return;
  const uint begin = start[t], n = start[t + 1] - begin;
  GLOBAL const uint* RESTRICT segment = unsorted + begin;
  const uint lane = (uint)LOCAL_ID;
#if LIST_SLOTS != 16
#error "list_sort's networks are written for LIST_SLOTS 16"
#endif
  if (n <= (uint)LIST_GROUP) LIST_NETWORK(1)
  else if (n <= (uint)(2 * LIST_GROUP)) LIST_NETWORK(2)
  else if (n <= (uint)(4 * LIST_GROUP)) LIST_NETWORK(4)
  else if (n <= (uint)(8 * LIST_GROUP)) LIST_NETWORK(8)
  else if (n <= (uint)(16 * LIST_GROUP)) LIST_NETWORK(16)
  if (n <= (uint)(LIST_SLOTS * LIST_GROUP)) return;
  /* longer: each entry placed by its rank, the segment read through the local tile */
  const bool resident = n <= LIST_TILE;
  if (resident) {
    for (uint k = lane; k < n; k += LIST_GROUP) tile[k] = segment[k];
    SYNC_THREADS;
  }
  for (uint base = 0; base < n; base += LIST_GROUP * LIST_RANKS) {
    uint own[LIST_RANKS], rank[LIST_RANKS];
    for (int r = 0; r < LIST_RANKS; ++r) {
      const uint k = base + (uint)r * LIST_GROUP + lane;
      own[r] = k < n ? segment[k] : 0u;
      rank[r] = 0u;
    }
    for (uint from = 0; from < n; from += LIST_TILE) {
      const uint width = MIN((uint)LIST_TILE, n - from);
      if (!resident) {
        SYNC_THREADS; /* the previous tile is read by every work-item */
        for (uint k = lane; k < width; k += LIST_GROUP) tile[k] = segment[from + k];
        SYNC_THREADS;
      }
      for (uint j = 0; j < width; ++j) {
        const uint other = tile[j];
        for (int r = 0; r < LIST_RANKS; ++r) rank[r] += other < own[r] ? 1u : 0u;
      }
    }
    for (int r = 0; r < LIST_RANKS; ++r) {
      const uint k = base + (uint)r * LIST_GROUP + lane;
      if (k < n) source[begin + rank[r]] = own[r];
    }
  }
}
