/* tree_walk.cl: the Barnes-Hut walk over the depth-first node array, three ways (WALK):
 *
 *   WALK_INDEPENDENT  one body per work-item, each with its own node index (lanes of a
 *                     sub-group drift apart and the hardware runs the union of their paths
 *                     under a divergence mask);
 *   WALK_COHERENT     one body per work-item, the whole sub-group at one node: each lane makes
 *                     its own opening decision, a lane that accepted a cell (or summed a leaf)
 *                     is masked until the sub-group leaves that subtree, and the sub-group steps
 *                     into a node when any lane opens it, over it otherwise;
 *   WALK_GROUP        cpu-tree's group walk: one sub-group per walk group (a node of at most
 *                     GROUP_CAPACITY bodies, or a leaf), each lane GROUP_TARGETS of its bodies.
 * The opening test is cpu-tree's (ADR-0010): a node is accepted when its centre of mass is
 * farther than sqrt(open2) from a box. The group walk and, under OPENING_GROUP, the per-body
 * walks use the box of the body's walk group (group_boxes below computes them), so every walk
 * makes cpu-tree's decisions and has its interaction counts and its accuracy at the same theta
 * (ADR-0071). Under OPENING_BODY a per-body walk uses the body itself (a box of zero size):
 * fewer interactions at the same theta, and a larger error.
 * A walk follows skip indices and keeps no stack. Results are written in key order: result[k] =
 * (ax, ay, az, potential); tally holds per work-group (particle-particle, particle-cell)
 * interaction counts.
 * Force law as in direct.cl, with traceless quadrupoles for accepted cells under QUADRUPOLE
 * (the formulas of native/tree_lists.hpp). A body never interacts with itself.
 * Determinism: each body's terms are summed in walk order by one work-item, with no atomics
 * on them (the group walks take their groups from an integer counter: which sub-group walks a
 * group changes nothing in its results).
 * Needs tree_common.cl and softened_pair.cl first. Host defines: WALK, OPENING, WALK_GROUP_SIZE (work-group size),
 * GROUP_TARGETS, QUADRUPOLE, WITH_POTENTIAL. */

#define WALK_INDEPENDENT 0
#define WALK_COHERENT 1
#define WALK_GROUP 2
#define WALK_LIST 3
#define SUBGROUPS (WALK_GROUP_SIZE / SUBGROUP_SIZE)
#define OPENING_BODY 0
#define OPENING_GROUP 1

/* A body's pull (softened_pair.cl); the callers skip the target itself by its index. */
DEVICE real4 body_term(real4 a, const real4 source, const real4 target, const real eps2) {
  return pair_term(a, source, target.x, target.y, target.z, eps2, false);
}

/* An accepted cell's monopole (source: centre of mass, mass) and traceless quadrupole q0..q5
 * (xx, xy, xz, yy, yz, zz). */
DEVICE real4 quadrupole_term(real4 a, const real4 source, const real q0, const real q1, const real q2,
                             const real q3, const real q4, const real q5, const real4 target,
                             const real eps2) {
  const real dx = source.x - target.x;
  const real dy = source.y - target.y;
  const real dz = source.z - target.z;
  const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
  const real inv_r = RSQRT(r2);
  const real inv_r2 = inv_r * inv_r;
  const real m_inv_r = source.w * inv_r;
  const real inv_r5 = inv_r2 * inv_r2 * inv_r;
  const real qx = q0 * dx + q1 * dy + q2 * dz;
  const real qy = q1 * dx + q3 * dy + q4 * dz;
  const real qz = q2 * dx + q4 * dy + q5 * dz;
  const real dqd = dx * qx + dy * qy + dz * qz;
  const real radial = m_inv_r * inv_r2 + (real)2.5 * dqd * inv_r5 * inv_r2;
  a.x += radial * dx - inv_r5 * qx;
  a.y += radial * dy - inv_r5 * qy;
  a.z += radial * dz - inv_r5 * qz;
#ifdef WITH_POTENTIAL
  a.w -= m_inv_r + (real)0.5 * dqd * inv_r5;
#endif
  return a;
}

DEVICE real4 cell_term(real4 a, const TreeNode node, GLOBAL const real* RESTRICT quad, const uint i,
                       const real4 target, const real eps2) {
  const real4 source = MAKE_REAL4(node.cx, node.cy, node.cz, node.mass);
#ifdef QUADRUPOLE
  GLOBAL const real* q = quad + 6 * (size_t)i;
  return quadrupole_term(a, source, q[0], q[1], q[2], q[3], q[4], q[5], target, eps2);
#else
  return body_term(a, source, target, eps2);
#endif
}

/* Sums one leaf's bodies into a, skipping the target itself (index self). */
DEVICE real4 leaf_terms(real4 a, GLOBAL const real4* RESTRICT body, const uint first, const uint count,
                        const uint self, const real4 target, const real eps2) {
  for (uint j = first; j < first + count; ++j)
    if (j != self) a = body_term(a, body[j], target, eps2);
  return a;
}

/* Squared distance from the node's centre of mass to the box [lo, hi] (zero inside), in real,
 * without FMA, left to right: cpu-tree's d2 (ADR-0010). For a box of zero size, lo = hi = x,
 * it is |com - x|^2 bit for bit. */
DEVICE real box_distance2(const TreeNode node, const real4 lo, const real4 hi) {
  const real dx = MAX(MAX(lo.x - node.cx, node.cx - hi.x), (real)0);
  const real dy = MAX(MAX(lo.y - node.cy, node.cy - hi.y), (real)0);
  const real dz = MAX(MAX(lo.z - node.cz, node.cz - hi.z), (real)0);
  return dx * dx + dy * dy + dz * dz;
}

/* boxes[2g], boxes[2g + 1] = the lower and upper corner of walk group g's bodies, and
 * body_group[k] = g for each of its bodies: one work-item per group (stepping by the launch's
 * width: the group count, group_starts[count], is read here), in key order. */
KERNEL void group_boxes(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real4* RESTRICT body,
                        GLOBAL const uint* RESTRICT groups, GLOBAL const uint* RESTRICT group_starts,
                        const int count, GLOBAL real4* RESTRICT boxes, GLOBAL uint* RESTRICT body_group) {
  const int group_count = (int)group_starts[count];
  for (int g = GLOBAL_ID; g < group_count; g += GLOBAL_SIZE) {
    const TreeNode own = nodes[groups[g]];
    real4 lo = body[own.first], hi = lo;
    for (uint j = own.first; j < own.first + own.count; ++j) {
      const real4 b = body[j];
      lo.x = MIN(lo.x, b.x); lo.y = MIN(lo.y, b.y); lo.z = MIN(lo.z, b.z);
      hi.x = MAX(hi.x, b.x); hi.y = MAX(hi.y, b.y); hi.z = MAX(hi.z, b.z);
      body_group[j] = (uint)g;
    }
    boxes[2 * g] = lo;
    boxes[2 * g + 1] = hi;
  }
}

#if WALK != WALK_GROUP
/* One body per work-item (key order); the sub-group's lanes hold consecutive bodies. */
DEVICE real4 walk_body(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real* RESTRICT quad,
                       GLOBAL const real4* RESTRICT body, GLOBAL const real4* RESTRICT boxes,
                       GLOBAL const uint* RESTRICT body_group, const int k, const int valid,
                       const real eps2, ulong* particle_particle, ulong* particle_cell) {
  const real4 target = body[k];
#if OPENING == OPENING_GROUP
  const real4 lo = boxes[2 * body_group[k]], hi = boxes[2 * body_group[k] + 1];
#else
  const real4 lo = target, hi = target;
#endif
  real4 a = MAKE_REAL4(0, 0, 0, 0);
  const uint node_count = nodes[0].skip;
  uint pp = 0, pc = 0;
  uint i = 0;
#if WALK == WALK_COHERENT
  uint resume = valid ? 0u : node_count; /* this lane waits until the sub-group reaches resume */
  while (i < node_count) {
    const TreeNode node = nodes[i];
    int open = 0;
    if (i >= resume) {
      if (box_distance2(node, lo, hi) > node.open2) {
        a = cell_term(a, node, quad, i, target, eps2);
        ++pc;
        resume = node.skip;
      } else if (node.skip == i + 1) {
        a = leaf_terms(a, body, node.first, node.count, (uint)k, target, eps2);
        pp += node.count - ((uint)k - node.first < node.count);
        resume = node.skip;
      } else {
        open = 1;
      }
    }
    i = SUBGROUP_ANY(open) ? i + 1 : node.skip;
  }
#else
  while (valid && i < node_count) {
    const TreeNode node = nodes[i];
    if (box_distance2(node, lo, hi) > node.open2) {
      a = cell_term(a, node, quad, i, target, eps2);
      ++pc;
      i = node.skip;
    } else if (node.skip == i + 1) {
      a = leaf_terms(a, body, node.first, node.count, (uint)k, target, eps2);
      pp += node.count - ((uint)k - node.first < node.count);
      i = node.skip;
    } else {
      ++i;
    }
  }
#endif
  *particle_particle = pp;
  *particle_cell = pc;
  return a;
}
#endif

DEVICE real subgroup_min(real v) {
  for (int mask = SUBGROUP_SIZE / 2; mask > 0; mask >>= 1) v = MIN(v, SUBGROUP_SHUFFLE_XOR(v, mask));
  return v;
}

DEVICE real subgroup_max(real v) {
  for (int mask = SUBGROUP_SIZE / 2; mask > 0; mask >>= 1) v = MAX(v, SUBGROUP_SHUFFLE_XOR(v, mask));
  return v;
}

/* The box [lo, hi] of bodies [first, first + count), computed by the whole sub-group. */
DEVICE void subgroup_box(GLOBAL const real4* RESTRICT body, const uint first, const uint count,
                         real4* lo, real4* hi) {
  real lo_x = body[first].x, lo_y = body[first].y, lo_z = body[first].z;
  real hi_x = lo_x, hi_y = lo_y, hi_z = lo_z;
  for (uint j = first + SUBGROUP_LANE; j < first + count; j += SUBGROUP_SIZE) {
    const real4 b = body[j];
    lo_x = MIN(lo_x, b.x); lo_y = MIN(lo_y, b.y); lo_z = MIN(lo_z, b.z);
    hi_x = MAX(hi_x, b.x); hi_y = MAX(hi_y, b.y); hi_z = MAX(hi_z, b.z);
  }
  *lo = MAKE_REAL4(subgroup_min(lo_x), subgroup_min(lo_y), subgroup_min(lo_z), 0);
  *hi = MAKE_REAL4(subgroup_max(hi_x), subgroup_max(hi_y), subgroup_max(hi_z), 0);
}

#if WALK == WALK_LIST
/* The list walk's local memory, per sub-group: a stack of node ranges to visit and the sources
 * waiting to be summed. */
#define SOURCE_CAPACITY (2 * SUBGROUP_SIZE)
/* A walk step pops at most as many ranges as leave the stack STACK_SLACK entries below full, and
 * at least one: a run of single pops grows the stack by at most one range per tree level. */
#define STACK_SLACK (MORTON_LEVELS + 3)
#define STACK_CAPACITY (6 * SUBGROUP_SIZE + STACK_SLACK)

DEVICE uint subgroup_inclusive_sum(uint v) {
  const int lane = SUBGROUP_LANE;
  for (int d = 1; d < SUBGROUP_SIZE; d <<= 1) {
    const uint below = SUBGROUP_SHUFFLE(v, lane >= d ? lane - d : lane);
    if (lane >= d) v += below;
  }
  return v;
}

/* The first lane whose value exceeds q, for values that do not decrease with the lane (the
 * last lane when none does): a binary search over the sub-group. */
DEVICE uint subgroup_first_above(const uint value, const uint q) {
  uint lane = 0;
  for (int step = SUBGROUP_SIZE / 2; step > 0; step >>= 1)
    if (SUBGROUP_SHUFFLE(value, lane + step - 1) <= q) lane += step;
  return lane;
}

/* Sums the list's first SUBGROUP_SIZE sources (term: of sum, source index k and target tgt)
 * into every full target slot, slot by slot, each source a broadcast read of local memory; and
 * into the partial slot, whose `ways` lanes per target take every ways-th source. Uniform in
 * the sub-group. */
#define SUM_SOURCES(term)                                                             \
  do {                                                                                \
    _Pragma("unroll") for (int t = 0; t < GROUP_TARGETS; ++t) {                       \
      if ((uint)t < full) {                                                           \
        real4 sum = a[t];                                                             \
        const real4 tgt = target[t];                                                  \
        _Pragma("unroll 8") for (int k = 0; k < SUBGROUP_SIZE; ++k) sum = term;       \
        a[t] = sum;                                                                   \
      }                                                                               \
    }                                                                                 \
    if (ways == 1) {                                                                  \
      real4 sum = a_part;                                                             \
      const real4 tgt = target_part;                                                  \
      _Pragma("unroll 8") for (int k = 0; k < SUBGROUP_SIZE; ++k) sum = term;         \
      a_part = sum;                                                                   \
    } else if (ways > 1) {                                                            \
      real4 sum = a_part;                                                             \
      const real4 tgt = target_part;                                                  \
      for (int k = lane / width; k < SUBGROUP_SIZE; k += ways) sum = term;            \
      a_part = sum;                                                                   \
    }                                                                                 \
  } while (0)

/* One sub-group walks walk group `own` for all its bodies at once, in batches of at most
 * GROUP_TARGETS * SUBGROUP_SIZE targets: full slots of SUBGROUP_SIZE targets, one a lane, and a
 * partial slot of the rest, where `ways` = SUBGROUP_SIZE / `width` lanes share a target (width:
 * the rest rounded up to a power of two) and add their partial sums at the end. Each walk step pops up to SUBGROUP_SIZE node ranges
 * [begin, end) (the subtrees begin, skip(begin), ... before end) and tests their first nodes in
 * parallel against the group's box: an accepted cell goes to the source list, an opened node
 * pushes its children [i + 1, skip), the range's rest [skip, end) is pushed again, and the
 * bodies of the step's opened leaves are then copied into the source list, a sub-group of them
 * at a time (lane p copies the p-th). Whenever the list holds SUBGROUP_SIZE sources, every lane
 * sums them into its targets; the last, partial batch is padded with massless copies of a
 * source (no source lies on a target: bodies at one point share a leaf, hence a group).
 * The group's own bodies are summed first, pair by pair without the self term, and its node is
 * skipped in the walk. The decisions and counters are the group walk's. */
DEVICE void walk_list(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real* RESTRICT quad,
                      GLOBAL const real4* RESTRICT body, const uint own, const real eps2,
                      GLOBAL real4* RESTRICT result, LOCAL_ARG uint* stack_begin,
                      LOCAL_ARG uint* stack_end, LOCAL_ARG real4* sources,
                      LOCAL_ARG real4* cells, LOCAL_ARG real* cell_quad,
                      ulong* particle_particle, ulong* particle_cell) {
  const int lane = SUBGROUP_LANE;
  const uint lanes_below = (1u << lane) - 1u;
  const uint first = nodes[own].first, members = nodes[own].count;
  real4 lo, hi;
  subgroup_box(body, first, members, &lo, &hi);
  const uint node_count = nodes[0].skip;
  uint listed = 0, accepted = 0; /* this lane's share of the first batch's decisions */
  for (uint base = 0; base < members; base += GROUP_TARGETS * SUBGROUP_SIZE) {
    real4 target[GROUP_TARGETS], a[GROUP_TARGETS];
    const uint remaining = members - base;
    const uint full = MIN((uint)GROUP_TARGETS, remaining / SUBGROUP_SIZE);
    const uint rest = full < GROUP_TARGETS ? remaining - full * SUBGROUP_SIZE : 0;
    uint width = 1;
    while (width < rest) width <<= 1;
    const uint ways = rest > 0 ? SUBGROUP_SIZE / width : 0;
#pragma unroll
    for (int t = 0; t < GROUP_TARGETS; ++t) {
      const uint index = first + base + (uint)lane + (uint)(t * SUBGROUP_SIZE);
      target[t] = body[(uint)t < full ? index : first];
      a[t] = MAKE_REAL4(0, 0, 0, 0);
      if ((uint)t < full) a[t] = leaf_terms(a[t], body, first, members, index, target[t], eps2);
    }
    const uint part_index = first + base + full * SUBGROUP_SIZE + ((uint)lane & (width - 1));
    const real4 target_part = body[((uint)lane & (width - 1)) < rest ? part_index : first];
    real4 a_part = MAKE_REAL4(0, 0, 0, 0);
    if (ways > 0)
      for (uint j = first + (uint)lane / width; j < first + members; j += ways)
        if (j != part_index) a_part = body_term(a_part, body[j], target_part, eps2);
    uint stack_size = 1, source_size = 0, cell_size = 0;
    /* The last walk step's opened leaves, one per lane (count 0 elsewhere): bodies
     * [leaf_first, +leaf_count) at positions [leaf_end - leaf_count, leaf_end) of the bodies
     * to copy, leaf_done of leaf_total of them copied. */
    uint leaf_first = 0, leaf_start = 0, leaf_end = 0, leaf_done = 0, leaf_total = 0;
    if (lane == 0) {
      stack_begin[0] = 0;
      stack_end[0] = node_count;
    }
    SYNC_SUBGROUP;
    for (;;) {
      const int drain = stack_size == 0 && leaf_done == leaf_total;
      if (source_size >= SUBGROUP_SIZE || (drain && source_size > 0)) {
        if (source_size < SUBGROUP_SIZE) {
          const real4 any = sources[0];
          if ((uint)lane >= source_size) sources[lane] = MAKE_REAL4(any.x, any.y, any.z, 0);
          source_size = SUBGROUP_SIZE;
          SYNC_SUBGROUP;
        }
        SUM_SOURCES(body_term(sum, sources[k], tgt, eps2));
        source_size -= SUBGROUP_SIZE;
        const real4 rest = sources[SUBGROUP_SIZE + lane];
        SYNC_SUBGROUP;
        if ((uint)lane < source_size) sources[lane] = rest;
        SYNC_SUBGROUP;
        continue;
      }
#ifdef QUADRUPOLE
      if (cell_size >= SUBGROUP_SIZE || (drain && cell_size > 0)) {
        if (cell_size < SUBGROUP_SIZE) {
          const real4 any = cells[0];
          if ((uint)lane >= cell_size) {
            cells[lane] = MAKE_REAL4(any.x, any.y, any.z, 0);
            for (int c = 0; c < 6; ++c) cell_quad[6 * lane + c] = 0;
          }
          cell_size = SUBGROUP_SIZE;
          SYNC_SUBGROUP;
        }
        SUM_SOURCES(quadrupole_term(sum, cells[k], cell_quad[6 * k], cell_quad[6 * k + 1],
                                    cell_quad[6 * k + 2], cell_quad[6 * k + 3], cell_quad[6 * k + 4],
                                    cell_quad[6 * k + 5], tgt, eps2));
        cell_size -= SUBGROUP_SIZE;
        const real4 rest = cells[SUBGROUP_SIZE + lane];
        real rest_quad[6];
        for (int c = 0; c < 6; ++c) rest_quad[c] = cell_quad[6 * (SUBGROUP_SIZE + lane) + c];
        SYNC_SUBGROUP;
        if ((uint)lane < cell_size) {
          cells[lane] = rest;
          for (int c = 0; c < 6; ++c) cell_quad[6 * lane + c] = rest_quad[c];
        }
        SYNC_SUBGROUP;
        continue;
      }
#endif
      if (leaf_done < leaf_total) {
        /* Fewer than SUBGROUP_SIZE sources are waiting: room for a sub-group of bodies. */
        const uint chunk = MIN(leaf_total - leaf_done, (uint)SUBGROUP_SIZE);
        const uint q = leaf_done + (uint)lane;
        const uint owner = subgroup_first_above(leaf_end, q);
        const uint from = SUBGROUP_SHUFFLE(leaf_first, owner) + q - SUBGROUP_SHUFFLE(leaf_start, owner);
        if ((uint)lane < chunk) sources[source_size + lane] = body[from];
        source_size += chunk;
        leaf_done += chunk;
        SYNC_SUBGROUP;
        continue;
      }
      if (stack_size == 0) break;
      /* A walk step: the lists have room for SUBGROUP_SIZE more cells. */
      const uint headroom = STACK_CAPACITY - STACK_SLACK > stack_size ? STACK_CAPACITY - STACK_SLACK - stack_size : 1u;
      const uint take = MIN(MIN((uint)SUBGROUP_SIZE, stack_size), headroom);
      const uint top = stack_size - take;
      const int active = (uint)lane < take;
      const uint i = active ? stack_begin[top + lane] : 0;
      const uint end = active ? stack_end[top + lane] : 0;
      SYNC_SUBGROUP;
      const TreeNode node = nodes[i];
      const int considered = active && i != own;
      const int is_cell = considered && box_distance2(node, lo, hi) > node.open2;
      const int is_leaf = considered && !is_cell && node.skip == i + 1;
      const int is_open = considered && !is_cell && !is_leaf;
      const int has_rest = active && node.skip < end;
      const uint open_bits = SUBGROUP_BALLOT(is_open), rest_bits = SUBGROUP_BALLOT(has_rest);
      const uint cell_bits = SUBGROUP_BALLOT(is_cell);
      uint slot = top + POPCOUNT(open_bits & lanes_below) + POPCOUNT(rest_bits & lanes_below);
      if (has_rest) {
        stack_begin[slot] = node.skip;
        stack_end[slot] = end;
        ++slot;
      }
      if (is_open) {
        stack_begin[slot] = i + 1;
        stack_end[slot] = node.skip;
      }
      stack_size = top + POPCOUNT(open_bits) + POPCOUNT(rest_bits);
      const real4 com = MAKE_REAL4(node.cx, node.cy, node.cz, node.mass);
#ifdef QUADRUPOLE
      if (is_cell) {
        const uint c = cell_size + POPCOUNT(cell_bits & lanes_below);
        cells[c] = com;
        for (int q = 0; q < 6; ++q) cell_quad[6 * c + q] = quad[6 * (size_t)i + q];
      }
      cell_size += POPCOUNT(cell_bits);
#else
      if (is_cell) sources[source_size + POPCOUNT(cell_bits & lanes_below)] = com;
      source_size += POPCOUNT(cell_bits);
#endif
      const uint leaf_count = is_leaf ? node.count : 0;
      leaf_first = node.first;
      leaf_end = subgroup_inclusive_sum(leaf_count);
      leaf_start = leaf_end - leaf_count;
      leaf_total = SUBGROUP_SHUFFLE(leaf_end, SUBGROUP_SIZE - 1);
      leaf_done = 0;
      if (base == 0) {
        accepted += is_cell;
        listed += leaf_count;
      }
      SYNC_SUBGROUP;
    }
#pragma unroll
    for (int t = 0; t < GROUP_TARGETS; ++t)
      if ((uint)t < full) result[first + base + (uint)lane + (uint)(t * SUBGROUP_SIZE)] = a[t];
    for (uint mask = ways > 0 ? width : SUBGROUP_SIZE; mask < SUBGROUP_SIZE; mask <<= 1) { /* fixed order */
      a_part.x += SUBGROUP_SHUFFLE_XOR(a_part.x, mask);
      a_part.y += SUBGROUP_SHUFFLE_XOR(a_part.y, mask);
      a_part.z += SUBGROUP_SHUFFLE_XOR(a_part.z, mask);
      a_part.w += SUBGROUP_SHUFFLE_XOR(a_part.w, mask);
    }
    if ((uint)lane < rest) result[part_index] = a_part;
  }
  const ulong cells_total = SUBGROUP_REDUCE_ADD(accepted), listed_total = SUBGROUP_REDUCE_ADD(listed);
  if (lane == 0) {
    *particle_particle += (ulong)members * listed_total + (ulong)members * (members - 1);
    *particle_cell += (ulong)members * cells_total;
  }
}
#endif

#if WALK == WALK_GROUP || WALK == WALK_LIST
/* The next walk group for the calling sub-group (uniform in it): lane 0 takes it from the
 * shared counter, so sub-groups take groups as they finish, as the hardware hands out
 * work-groups; which sub-group walks a group changes no bit of its bodies' results. */
DEVICE uint take_group(GLOBAL uint* next_group) {
  uint g = 0;
  if (SUBGROUP_LANE == 0) g = ATOMIC_ADD(next_group, 1u);
  return SUBGROUP_BROADCAST(g, 0);
}
#endif

/* Zeroes the group walks' counter before a walk. */
KERNEL void start_walk(GLOBAL uint* RESTRICT next_group) {
  if (GLOBAL_ID == 0) next_group[0] = 0;
}

/* The group walks run a fixed number of work-groups whatever the group count (group_starts[count],
 * read here, so the host never waits for it), each sub-group taking groups until none is left. */
KERNEL void tree_walk(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real* RESTRICT quad,
                      GLOBAL const real4* RESTRICT body, const int count, const real eps2,
                      GLOBAL const uint* RESTRICT groups, GLOBAL const uint* RESTRICT group_starts,
                      GLOBAL uint* RESTRICT next_group,
                      GLOBAL const real4* RESTRICT boxes, GLOBAL const uint* RESTRICT body_group,
                      GLOBAL real4* RESTRICT result, GLOBAL ulong* RESTRICT tally) {
  ulong particle_particle = 0, particle_cell = 0;
#if WALK == WALK_GROUP
  const uint group_count = group_starts[count];
  const int lane = SUBGROUP_LANE;
  for (;;) {
    const uint g = take_group(next_group);
    if (g >= group_count) break;
    const uint own = groups[g];
    const uint first = nodes[own].first, members = nodes[own].count;
    real4 lo, hi;
    subgroup_box(body, first, members, &lo, &hi);
    const uint node_count = nodes[0].skip;
    for (uint base = 0; base < members; base += GROUP_TARGETS * SUBGROUP_SIZE) {
      real4 target[GROUP_TARGETS], a[GROUP_TARGETS];
      uint index[GROUP_TARGETS];
      /* Target slots this batch fills in some lane (uniform): small groups skip the rest. */
      const uint used = MIN((uint)GROUP_TARGETS, (members - base + SUBGROUP_SIZE - 1) / SUBGROUP_SIZE);
      for (int t = 0; t < GROUP_TARGETS; ++t) {
        index[t] = first + base + (uint)lane + (uint)(t * SUBGROUP_SIZE);
        target[t] = body[index[t] < first + members ? index[t] : first];
        a[t] = MAKE_REAL4(0, 0, 0, 0);
      }
      ulong listed = 0, cells = 0;
      uint i = 0;
      while (i < node_count) {
        const TreeNode node = nodes[i];
        if (i == own) {
          for (int t = 0; t < GROUP_TARGETS; ++t)
            if ((uint)t < used) a[t] = leaf_terms(a[t], body, first, members, index[t], target[t], eps2);
          i = node.skip;
          continue;
        }
        if (box_distance2(node, lo, hi) > node.open2) {
          for (int t = 0; t < GROUP_TARGETS; ++t)
            if ((uint)t < used) a[t] = cell_term(a[t], node, quad, i, target[t], eps2);
          ++cells;
          i = node.skip;
        } else if (node.skip == i + 1) {
          for (int t = 0; t < GROUP_TARGETS; ++t)
            if ((uint)t < used) a[t] = leaf_terms(a[t], body, node.first, node.count, index[t], target[t], eps2);
          listed += node.count;
          i = node.skip;
        } else {
          ++i;
        }
      }
      for (int t = 0; t < GROUP_TARGETS; ++t)
        if (index[t] < first + members) result[index[t]] = a[t];
      if (base == 0 && lane == 0) {
        particle_particle += (ulong)members * listed + (ulong)members * (members - 1);
        particle_cell += (ulong)members * cells;
      }
    }
  }
#elif WALK == WALK_LIST
  LOCAL uint stack_begin[SUBGROUPS * STACK_CAPACITY];
  LOCAL uint stack_end[SUBGROUPS * STACK_CAPACITY];
  LOCAL real4 sources[SUBGROUPS * SOURCE_CAPACITY];
#ifdef QUADRUPOLE
  LOCAL real4 cells[SUBGROUPS * SOURCE_CAPACITY];
  LOCAL real cell_quad[SUBGROUPS * SOURCE_CAPACITY * 6];
#else
  LOCAL real4 cells[1];
  LOCAL real cell_quad[1];
#endif
  const int s = SUBGROUP_ID;
  const uint group_count = group_starts[count];
  for (;;) {
    const uint g = take_group(next_group);
    if (g >= group_count) break;
    walk_list(nodes, quad, body, groups[g], eps2, result, stack_begin + s * STACK_CAPACITY,
              stack_end + s * STACK_CAPACITY, sources + s * SOURCE_CAPACITY,
#ifdef QUADRUPOLE
              cells + s * SOURCE_CAPACITY, cell_quad + 6 * s * SOURCE_CAPACITY,
#else
              cells, cell_quad,
#endif
              &particle_particle, &particle_cell);
  }
#else
  const int k = GLOBAL_ID;
  const int valid = k < count;
  const real4 a = walk_body(nodes, quad, body, boxes, body_group, valid ? k : count - 1, valid,
                            eps2, &particle_particle, &particle_cell);
  if (valid) result[k] = a;
#endif
  /* Per work-group totals of the interaction counters. */
  LOCAL ulong pp_sum[WALK_GROUP_SIZE];
  LOCAL ulong pc_sum[WALK_GROUP_SIZE];
  pp_sum[LOCAL_ID] = particle_particle;
  pc_sum[LOCAL_ID] = particle_cell;
  SYNC_THREADS;
  for (int stride = WALK_GROUP_SIZE / 2; stride > 0; stride >>= 1) {
    if (LOCAL_ID < stride) {
      pp_sum[LOCAL_ID] += pp_sum[LOCAL_ID + stride];
      pc_sum[LOCAL_ID] += pc_sum[LOCAL_ID + stride];
    }
    SYNC_THREADS;
  }
  if (LOCAL_ID == 0) {
    tally[2 * GROUP_ID] = pp_sum[0];
    tally[2 * GROUP_ID + 1] = pc_sum[0];
  }
}
