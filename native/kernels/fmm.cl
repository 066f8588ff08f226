/* fmm.cl: the fast multipole passes of gpu-fmm on the device-built octree (tree_common.cl's
 * nodes), the same arithmetic as cpu-fmm (native/fmm.cpp, native/fmm_expansions.hpp).
 *
 * Algorithm (docs/adr/0110): Cartesian Taylor expansions of the softened 1/r to order ORDER
 * about the centre of each node's key box, every stage on the device (docs/adr/0154):
 *   upward       once per cell level, deepest first: each node's key box, centre and walk
 *                geometry, and its signed multipole S_n = (-1)^|n| M_n, M_n = sum m t_n(x - z),
 *                t_n(v) = v^n / n! (P2M at leaves, M2M from the children elsewhere);
 *   walk         the dual tree walk of native fmm_lists.cpp breadth first, one launch pair per
 *                step (walk_count, scan.cl, walk_emit), then both directions of each pair sorted
 *                (the compute layer's key sort) into per-target lists with sources ascending
 *                (directed_keys, list_starts): exactly the host's lists;
 *   m2l          per target node, the derivative tensor D_{k+n} of 1/sqrt(r^2 + eps^2) at
 *                R = z_target - z_source times the source's signed multipole, over its M2L list;
 *   l2l          once per cell level, shallowest first, each node adding its parent's local
 *                expansion re-expanded about its own centre;
 *   evaluate     every body: the pairwise pull of its own leaf (itself excluded) and its P2P
 *                leaves, then L2P of its leaf's local expansion.
 * Index tables (fmm_tables in fmm_expansions.hpp) arrive as two arrays, `table`
 * (ints) and `scales` (accum), at the offsets the host defines.
 * Host defines: REAL_BITS, ACCUM_BITS (tree_common.cl), ORDER, TERMS, GRADIENT_TERMS, and the
 * table offsets T_DEGREE, T_MONO_PARENT, T_MONO_AXIS, T_MINUS_ONE, T_MINUS_TWO (3 x TERMS each),
 * T_PAIR_START, T_PAIR_N, T_PAIR_SUM, T_PLUS_ONE (3 x GRADIENT_TERMS); S_MONO_SCALE, S_FACTORIAL;
 * WITH_POTENTIAL.
 * Determinism: one work-item per output (a node's box and expansion, a walk pair's outputs at
 * offsets from a prefix sum, a list start, a body's sum), adding its inputs in the lists' fixed
 * order (sources ascending); no atomics, so every run gives the same bits.
 * Expansions are in `accum` (double where the device has it, as cpu-fmm), pair sums in `real`
 * with the direct kernel's inner loop (FMA'd r^2 + eps^2, RSQRT).
 * Needs tree_common.cl first. */

DEVICE void monomials(GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                      const accum v0, const accum v1, const accum v2, accum* t) {
  t[0] = 1;
  for (int q = 1; q < TERMS; ++q) {
    const int axis = table[T_MONO_AXIS + q];
    const accum v = axis == 0 ? v0 : (axis == 1 ? v1 : v2);
    t[q] = t[table[T_MONO_PARENT + q]] * v * scales[S_MONO_SCALE + q];
  }
}

/* Expansion centres, the walk's geometry and the signed multipoles of one cell level, deepest
 * first (a child's cell is always deeper than its parent's, so its box and multipole are final).
 * A leaf's box is the smallest and largest quantised coordinates of its bodies' keys (native
 * fmm_leaf_box), an internal node's the union of its children's; from it `centre` (3 per node,
 * the box centre in coordinates) and `shape` (4 per node: twice the centre and the diagonal, in
 * finest-cell units, the host's Geometry: exact integers and one correctly rounded sqrt, so the
 * walk decides as the host does). The multipole is stored signed, S_n = (-1)^|n| M_n, which
 * is P2M and M2M with the offsets negated (t_n is homogeneous of degree |n|, and negation is
 * exact, so the bits equal the host's M_n with the sign flipped). */
KERNEL void upward(const int level, const int node_count, GLOBAL const TreeNode* RESTRICT nodes,
                   GLOBAL const uint* RESTRICT levels, GLOBAL const ulong* RESTRICT keys,
                   GLOBAL const real4* RESTRICT body, GLOBAL const accum* RESTRICT cube,
                   GLOBAL uint* RESTRICT box, GLOBAL accum* RESTRICT shape, GLOBAL accum* RESTRICT centre,
                   GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                   GLOBAL accum* RESTRICT multipole) {
  const int i = GLOBAL_ID;
  if (i >= node_count || (int)levels[i] != level) return;
  const uint skip = nodes[i].skip, first = nodes[i].first, end = first + nodes[i].count;
  const bool leaf = skip == (uint)i + 1;
  uint low[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, high[3] = {0, 0, 0};
  if (leaf) {
    for (uint p = first; p < end; ++p) {
      const ulong key = keys[p];
      const uint q[3] = {compact_bits(key >> 2), compact_bits(key >> 1), compact_bits(key)};
      for (int a = 0; a < 3; ++a) {
        low[a] = MIN(low[a], q[a]);
        high[a] = MAX(high[a], q[a]);
      }
    }
  } else {
    for (uint c = (uint)i + 1; c < skip; c = nodes[c].skip)
      for (int a = 0; a < 3; ++a) {
        low[a] = MIN(low[a], box[6 * c + a]);
        high[a] = MAX(high[a], box[6 * c + 3 + a]);
      }
  }
  const accum unit = cube[3] / (accum)(1 << MORTON_LEVELS);
  accum z[3], d2 = 0;
  for (int a = 0; a < 3; ++a) {
    box[6 * i + a] = low[a];
    box[6 * i + 3 + a] = high[a];
    const accum lo = (accum)low[a], hi = (accum)high[a] + 1;
    shape[4 * i + a] = lo + hi;
    d2 += MUL_RN(hi - lo, hi - lo);
    z[a] = cube[a] + MUL_RN((accum)0.5 * (lo + hi), unit);
    centre[3 * i + a] = z[a];
  }
  shape[4 * i + 3] = SQRT(d2);
  accum M[TERMS], t[TERMS];
  for (int q = 0; q < TERMS; ++q) M[q] = 0;
  if (leaf) {
    for (uint p = first; p < end; ++p) {
      const real4 b = body[p];
      monomials(table, scales, z[0] - (accum)b.x, z[1] - (accum)b.y, z[2] - (accum)b.z, t);
      for (int q = 0; q < TERMS; ++q) M[q] += (accum)b.w * t[q];
    }
  } else {
    for (uint c = (uint)i + 1; c < skip; c = nodes[c].skip) {
      monomials(table, scales, z[0] - centre[3 * c], z[1] - centre[3 * c + 1], z[2] - centre[3 * c + 2], t);
      for (int a = 0; a < TERMS; ++a) {
        const accum child = multipole[(ulong)c * TERMS + a];
        for (int q = table[T_PAIR_START + a]; q < table[T_PAIR_START + a + 1]; ++q)
          M[table[T_PAIR_SUM + q]] += child * t[table[T_PAIR_N + q]];
      }
    }
  }
  for (int q = 0; q < TERMS; ++q) multipole[(ulong)i * TERMS + q] = M[q];
}

/* parent[c] for every node (the root's is itself), from the skips. */
KERNEL void node_parents(const int node_count, GLOBAL const TreeNode* RESTRICT nodes, GLOBAL uint* RESTRICT parent) {
  const int i = GLOBAL_ID;
  if (i >= node_count) return;
  if (i == 0) parent[0] = 0;
  for (uint c = (uint)i + 1; c < nodes[i].skip; c = nodes[c].skip) parent[c] = (uint)i;
}

/* ---- The dual tree walk, breadth first (native fmm_lists.cpp's DualWalk, one step per launch).
 * A frontier of node pairs (a << 32 | b; a == b is a node with itself). walk_count gives each
 * pair its outputs: 1 M2L pair, 1 P2P pair, or the pairs it splits into (a node with itself: each
 * child with itself and each later sibling; else the larger cell's children with the other,
 * the host's split rule), stored as three runs counts[0, n), [n, 2n), [2n, 3n) so that one
 * exclusive scan (scan.cl) over 3n entries places every output: M2L pairs first, P2P pairs next,
 * then the next frontier, each in the frontier's order. walk_emit writes them there; nothing is
 * contended and the order is fixed, so every run gives the same arrays. */

DEVICE bool walk_leaf(GLOBAL const TreeNode* RESTRICT nodes, const uint a) { return nodes[a].skip == a + 1; }

/* theta |c_A - c_B| > r_A + r_B with doubled centres and radii, squared (the host's test, on the
 * same exact integers and rounded diagonals). */
DEVICE bool well_separated(GLOBAL const accum* RESTRICT shape, const accum theta2, const uint a, const uint b) {
  accum d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const accum d = shape[4 * a + k] - shape[4 * b + k];
    d2 += MUL_RN(d, d);
  }
  const accum r = shape[4 * a + 3] + shape[4 * b + 3];
  return MUL_RN(theta2, d2) > MUL_RN(r, r);
}

/* 0: M2L, 1: P2P, 2: split (into *split's children, each paired with *other), 3: a node with
 * itself to split, 4: nothing (a leaf with itself). */
DEVICE int walk_kind(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT shape, const accum theta2,
                     const uint a, const uint b, uint* split, uint* other) {
  if (a == b) return walk_leaf(nodes, a) ? 4 : 3;
  if (well_separated(shape, theta2, a, b)) return 0;
  const bool leaf_a = walk_leaf(nodes, a), leaf_b = walk_leaf(nodes, b);
  if (leaf_a && leaf_b) return 1;
  const bool split_a = leaf_b || (!leaf_a && shape[4 * a + 3] >= shape[4 * b + 3]);
  *split = split_a ? a : b;
  *other = split_a ? b : a;
  return 2;
}

KERNEL void walk_count(GLOBAL const ulong* RESTRICT pairs, const int count, GLOBAL const TreeNode* RESTRICT nodes,
                       GLOBAL const accum* RESTRICT shape, const accum theta2, GLOBAL uint* RESTRICT counts) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const uint a = (uint)(pairs[i] >> 32), b = (uint)pairs[i];
  uint split = 0, other = 0;
  const int kind = walk_kind(nodes, shape, theta2, a, b, &split, &other);
  uint children = 0;
  if (kind >= 2 && kind <= 3) {
    const uint s = kind == 2 ? split : a;
    for (uint c = s + 1; c < nodes[s].skip; c = nodes[c].skip) ++children;
  }
  counts[i] = kind == 0;
  counts[count + i] = kind == 1;
  counts[2 * count + i] = kind == 2 ? children : (kind == 3 ? children * (children + 1) / 2 : 0);
}

/* offsets: the exclusive scan of walk_count's 3n counts (3n + 1 entries). */
KERNEL void walk_emit(GLOBAL const ulong* RESTRICT pairs, const int count, GLOBAL const TreeNode* RESTRICT nodes,
                      GLOBAL const accum* RESTRICT shape, const accum theta2, GLOBAL const uint* RESTRICT offsets,
                      GLOBAL ulong* RESTRICT m2l, const uint m2l_base, GLOBAL ulong* RESTRICT p2p,
                      const uint p2p_base, GLOBAL ulong* RESTRICT next) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const ulong pair = pairs[i];
  const uint a = (uint)(pair >> 32), b = (uint)pair;
  uint split = 0, other = 0;
  const int kind = walk_kind(nodes, shape, theta2, a, b, &split, &other);
  const uint m2l_end = offsets[count], p2p_end = offsets[2 * count];
  if (kind == 0) m2l[m2l_base + offsets[i]] = pair;
  else if (kind == 1) p2p[p2p_base + offsets[count + i] - m2l_end] = pair;
  else if (kind == 2) {
    uint at = offsets[2 * count + i] - p2p_end;
    for (uint c = split + 1; c < nodes[split].skip; c = nodes[c].skip) next[at++] = ((ulong)c << 32) | other;
  } else if (kind == 3) {
    uint at = offsets[2 * count + i] - p2p_end;
    for (uint c = a + 1; c < nodes[a].skip; c = nodes[c].skip) {
      next[at++] = ((ulong)c << 32) | c;
      for (uint d = nodes[c].skip; d < nodes[a].skip; d = nodes[d].skip) next[at++] = ((ulong)c << 32) | d;
    }
  }
}

/* The step's three totals (M2L pairs, P2P pairs, next frontier), the one read per step. */
KERNEL void walk_totals(GLOBAL const uint* RESTRICT offsets, const int count, GLOBAL uint* RESTRICT totals) {
  if (GLOBAL_ID != 0) return;
  totals[0] = offsets[count];
  totals[1] = offsets[2 * count] - offsets[count];
  totals[2] = offsets[3 * count] - offsets[2 * count];
}

KERNEL void copy_pairs(GLOBAL const ulong* RESTRICT from, const int count, GLOBAL ulong* RESTRICT to) {
  const int i = GLOBAL_ID;
  if (i < count) to[i] = from[i];
}

/* Both directions of each unordered pair, as target << 32 | source: sorted, they are the lists
 * gathered by target with sources ascending (the host's directed_lists). */
KERNEL void directed_keys(GLOBAL const ulong* RESTRICT pairs, const int count, GLOBAL ulong* RESTRICT keys) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const ulong pair = pairs[i];
  keys[2 * i] = pair;
  keys[2 * i + 1] = (pair << 32) | (pair >> 32);
}

/* From the sorted directed keys: source[k] and start[t] = the first k whose target is >= t
 * (start has node_count + 1 entries), each entry written by exactly one work-item. */
KERNEL void list_starts(GLOBAL const ulong* RESTRICT keys, const int count, const int node_count,
                        GLOBAL uint* RESTRICT start, GLOBAL uint* RESTRICT source) {
  const int k = GLOBAL_ID;
  if (k > count) return;
  const long target = k < count ? (long)(keys[k] >> 32) : (long)node_count;
  const long before = k > 0 ? (long)(keys[k - 1] >> 32) : -1;
  for (long t = before + 1; t <= target; ++t) start[t] = (uint)k;
  if (k < count) source[k] = (uint)keys[k];
}

/* One source's M2L added to a local expansion L: L_k += sum_n D_{k+n}(R) S_n over |k| + |n| <=
 * ORDER, with D the derivative tensor of 1/sqrt(r^2 + eps2) at R = (rx, ry, rz) from the Taylor
 * recurrence a_k = D_k / k! (fmm_expansions.hpp; a term's k - e_i and k - 2e_i come before it).
 * The host appends the definition, generated per order with every index a constant
 * (engine/solvers/_fmm_code.py), so the tensor and L stay in registers. */
DEVICE void m2l_accumulate(const accum rx, const accum ry, const accum rz, const accum eps2,
                           GLOBAL const accum* RESTRICT S, accum* L);

KERNEL void m2l(const int node_count, GLOBAL const uint* RESTRICT m2l_start,
                GLOBAL const uint* RESTRICT m2l_source, GLOBAL const accum* RESTRICT centre, const accum eps2,
                GLOBAL const accum* RESTRICT multipole, GLOBAL accum* RESTRICT field) {
  const int i = GLOBAL_ID;
  if (i >= node_count) return;
  accum L[TERMS];
  for (int q = 0; q < TERMS; ++q) L[q] = 0;
  const accum z0 = centre[3 * i], z1 = centre[3 * i + 1], z2 = centre[3 * i + 2];
  for (uint s = m2l_start[i]; s < m2l_start[i + 1]; ++s) {
    const uint j = m2l_source[s];
    m2l_accumulate(z0 - centre[3 * j], z1 - centre[3 * j + 1], z2 - centre[3 * j + 2], eps2,
                   multipole + (ulong)j * TERMS, L);
  }
  for (int q = 0; q < TERMS; ++q) field[(ulong)i * TERMS + q] = L[q];
}

/* The nodes of one cell level below the root, shallowest first (a parent's cell is shallower,
 * so its local expansion is final): each adds its parent's local expansion re-expanded about its
 * own centre. */
KERNEL void l2l(const int level, const int node_count, GLOBAL const uint* RESTRICT levels,
                GLOBAL const uint* RESTRICT parent, GLOBAL const accum* RESTRICT centre,
                GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                GLOBAL accum* RESTRICT field) {
  const int c = GLOBAL_ID;
  if (c >= node_count || (int)levels[c] != level) return;
  const uint p = parent[c];
  accum t[TERMS];
  monomials(table, scales, centre[3 * c] - centre[3 * p], centre[3 * c + 1] - centre[3 * p + 1],
            centre[3 * c + 2] - centre[3 * p + 2], t);
  GLOBAL const accum* P = field + (ulong)p * TERMS;
  for (int a = 0; a < TERMS; ++a) {
    accum sum = 0;
    for (int q = table[T_PAIR_START + a]; q < table[T_PAIR_START + a + 1]; ++q)
      sum += P[table[T_PAIR_SUM + q]] * t[table[T_PAIR_N + q]];
    field[(ulong)c * TERMS + a] += sum;
  }
}

/* P2P and L2P, one work-group of P2P_GROUP work-items per leaf (the direct kernel's scheme):
 * the group's work-items take the leaf's bodies P2P_GROUP at a time, and the sources - the own
 * leaf, then its P2P leaves in list order - stream through local memory as one concatenated
 * sequence, tiles of P2P_GROUP bodies filled across leaf boundaries, so every work-item runs the
 * same loop over the same sources (no divergence; a source is read from global memory once per
 * group instead of once per target body). A body's sum is in the per-body order of the lists
 * (own leaf ascending, itself skipped by its place in the sequence, then each listed leaf). */
KERNEL LAUNCH_BOUNDS(P2P_GROUP, 1)
void evaluate(GLOBAL const real4* RESTRICT body, const int node_count, GLOBAL const TreeNode* RESTRICT nodes,
              GLOBAL const uint* RESTRICT p2p_start, GLOBAL const uint* RESTRICT p2p_source,
              GLOBAL const accum* RESTRICT centre, GLOBAL const accum* RESTRICT field,
              GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales, const real eps2,
              GLOBAL real4* RESTRICT result) {
  LOCAL real4 tile[P2P_GROUP];
  const int leaf = GROUP_ID;
  if (leaf >= node_count || nodes[leaf].skip != (uint)leaf + 1) return;  /* the whole group */
  const uint first = nodes[leaf].first, end = first + nodes[leaf].count;
  const uint list_end = p2p_start[leaf + 1];
  for (uint base = first; base < end; base += P2P_GROUP) {
    const uint p = base + (uint)LOCAL_ID;
    const bool active = p < end;
    const real4 target = body[active ? p : first];
    real ax = 0, ay = 0, az = 0, phi = 0;
    /* The sequence's cursor: the next source body `at` of the current leaf [.., stop), the next
     * list entry `entry`; `streamed` counts the bodies before the current tile. */
    uint at = first, stop = end, entry = p2p_start[leaf], streamed = 0;
    for (;;) {
      uint filled = 0;
      while (filled < P2P_GROUP) {
        if (at == stop) {
          if (entry == list_end) break;
          const uint source = p2p_source[entry++];
          at = nodes[source].first;
          stop = at + nodes[source].count;
          continue;
        }
        const uint take = MIN((uint)P2P_GROUP - filled, stop - at);
        if ((uint)LOCAL_ID >= filled && (uint)LOCAL_ID < filled + take) tile[LOCAL_ID] = body[at + LOCAL_ID - filled];
        filled += take;
        at += take;
      }
      if (filled == 0) break;
      SYNC_THREADS;
      const uint self = p - first - streamed; /* the target's own place in this tile, if any */
      for (uint k = 0; k < filled; ++k) {
        const real4 source = tile[k];
        const real dx = source.x - target.x;
        const real dy = source.y - target.y;
        const real dz = source.z - target.z;
        const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
        const real inv_r = k == self ? (real)0 : RSQRT(r2);
        const real m_inv_r = source.w * inv_r;
        const real w = m_inv_r * inv_r * inv_r;
        ax = FMA(w, dx, ax);
        ay = FMA(w, dy, ay);
        az = FMA(w, dz, az);
        phi -= m_inv_r;
      }
      streamed += filled;
      SYNC_THREADS;
    }
    if (!active) continue;
    accum t[TERMS];
    monomials(table, scales, (accum)target.x - centre[3 * leaf], (accum)target.y - centre[3 * leaf + 1],
              (accum)target.z - centre[3 * leaf + 2], t);
    GLOBAL const accum* L = field + (ulong)leaf * TERMS;
    accum fx = 0, fy = 0, fz = 0, fphi = 0;
    for (int k = 0; k < GRADIENT_TERMS; ++k) {
      fx += L[table[T_PLUS_ONE + k]] * t[k];
      fy += L[table[T_PLUS_ONE + GRADIENT_TERMS + k]] * t[k];
      fz += L[table[T_PLUS_ONE + 2 * GRADIENT_TERMS + k]] * t[k];
    }
#ifdef WITH_POTENTIAL
    for (int k = 0; k < TERMS; ++k) fphi -= L[k] * t[k];
#else
    phi = 0;
#endif
    result[p] = MAKE_REAL4((real)((accum)ax + fx), (real)((accum)ay + fy), (real)((accum)az + fz),
                           (real)((accum)phi + fphi));
  }
}
