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
 * Determinism: each body's terms are summed in walk order by one work-item, with no atomics.
 * Needs tree_common.cl first. Host defines: WALK, OPENING, WALK_GROUP_SIZE (work-group size),
 * GROUP_TARGETS, QUADRUPOLE, WITH_POTENTIAL. */

#define WALK_INDEPENDENT 0
#define WALK_COHERENT 1
#define WALK_GROUP 2
#define OPENING_BODY 0
#define OPENING_GROUP 1

DEVICE real4 body_term(real4 a, const real4 source, const real4 target, const real eps2) {
  const real dx = source.x - target.x;
  const real dy = source.y - target.y;
  const real dz = source.z - target.z;
  const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
  const real inv_r = RSQRT(r2);
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

DEVICE real4 cell_term(real4 a, const TreeNode node, GLOBAL const real* RESTRICT quad, const uint i,
                       const real4 target, const real eps2) {
#ifdef QUADRUPOLE
  const real dx = node.cx - target.x;
  const real dy = node.cy - target.y;
  const real dz = node.cz - target.z;
  const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
  const real inv_r = RSQRT(r2);
  const real inv_r2 = inv_r * inv_r;
  const real m_inv_r = node.mass * inv_r;
  const real inv_r5 = inv_r2 * inv_r2 * inv_r;
  GLOBAL const real* q = quad + 6 * (size_t)i;
  const real qx = q[0] * dx + q[1] * dy + q[2] * dz;
  const real qy = q[1] * dx + q[3] * dy + q[4] * dz;
  const real qz = q[2] * dx + q[4] * dy + q[5] * dz;
  const real dqd = dx * qx + dy * qy + dz * qz;
  const real radial = m_inv_r * inv_r2 + (real)2.5 * dqd * inv_r5 * inv_r2;
  a.x += radial * dx - inv_r5 * qx;
  a.y += radial * dy - inv_r5 * qy;
  a.z += radial * dz - inv_r5 * qz;
#ifdef WITH_POTENTIAL
  a.w -= m_inv_r + (real)0.5 * dqd * inv_r5;
#endif
  return a;
#else
  return body_term(a, MAKE_REAL4(node.cx, node.cy, node.cz, node.mass), target, eps2);
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
 * body_group[k] = g for each of its bodies: one work-item per group, in key order. */
KERNEL void group_boxes(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real4* RESTRICT body,
                        GLOBAL const uint* RESTRICT groups, const int group_count,
                        GLOBAL real4* RESTRICT boxes, GLOBAL uint* RESTRICT body_group) {
  const int g = GLOBAL_ID;
  if (g >= group_count) return;
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

KERNEL void tree_walk(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const real* RESTRICT quad,
                      GLOBAL const real4* RESTRICT body, const int count, const real eps2,
                      GLOBAL const uint* RESTRICT groups, const int group_count,
                      GLOBAL const real4* RESTRICT boxes, GLOBAL const uint* RESTRICT body_group,
                      GLOBAL real4* RESTRICT result, GLOBAL ulong* RESTRICT tally) {
  ulong particle_particle = 0, particle_cell = 0;
#if WALK == WALK_GROUP
  const int g = GROUP_ID * SUBGROUP_COUNT + SUBGROUP_ID;
  const int lane = SUBGROUP_LANE;
  if (g < group_count) { /* uniform in the sub-group */
    const uint own = groups[g];
    const uint first = nodes[own].first, members = nodes[own].count;
    real lo_x = body[first].x, lo_y = body[first].y, lo_z = body[first].z;
    real hi_x = lo_x, hi_y = lo_y, hi_z = lo_z;
    for (uint j = first + lane; j < first + members; j += SUBGROUP_SIZE) {
      const real4 b = body[j];
      lo_x = MIN(lo_x, b.x); lo_y = MIN(lo_y, b.y); lo_z = MIN(lo_z, b.z);
      hi_x = MAX(hi_x, b.x); hi_y = MAX(hi_y, b.y); hi_z = MAX(hi_z, b.z);
    }
    const real4 lo = MAKE_REAL4(subgroup_min(lo_x), subgroup_min(lo_y), subgroup_min(lo_z), 0);
    const real4 hi = MAKE_REAL4(subgroup_max(hi_x), subgroup_max(hi_y), subgroup_max(hi_z), 0);
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
        particle_particle = (ulong)members * listed + (ulong)members * (members - 1);
        particle_cell = (ulong)members * cells;
      }
    }
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
