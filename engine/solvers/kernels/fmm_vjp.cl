/* fmm_vjp.cl: the vector-Jacobian product of fmm.cl's evaluation with its tree, lists and
 * centres' key boxes held fixed (engine/fmm_vjp.py states the algebra and is the host's
 * float64 statement of the same sums; docs/adr/0326).
 *
 * Algorithm: the evaluation's stages taken back in reverse over the evaluation's own arrays
 * (its key-ordered bodies, node records, levels, centres, signed multipoles S, local expansions
 * L, M2L and P2P lists), with a_bar, phi_bar the cotangents of the accelerations and
 * potentials (real4 rows in the caller's order): the VJP of an FMM is an FMM pass with the
 * cotangents as its sources. Lbar and Mbar are the local expansions' and multipoles'
 * cotangents; Lbar is kept signed as the multipoles are (Lsbar_n = (-1)^|n| Lbar_n, node rows
 * of MULTIPOLE_STRIDE), so that fmm.cl's M2L takes it as its sources.
 *   vjp_l2p     per leaf (a few lanes a leaf, as upward_leaves): L2P transposed, Lbar(leaf) =
 *               sum over its bodies of the cotangents expanded about its centre (a P2M of
 *               vector sources), and each body's offset's cotangent (the local expansion's
 *               second derivatives dotted with a_bar), which moves the body and, negated, the
 *               leaf's centre, written as the body's row of the output (its far-field
 *               cotangents start there); every other node's centre cotangent starts at zero;
 *               the bodies' cotangent rows copied into key order;
 *   vjp_l2l     per cell level, deepest first, per internal node: L2L transposed, the
 *               children's Lsbar shifted up (upward's signed M2M, fmm.cl's m2m_children);
 *   vjp_shifts  per internal node, all levels in one launch, once the shifts above have run:
 *               the shifts' offsets' cotangents. An offset z_c - z_i moves with the cube's
 *               side alone (lo moves both ends alike), as an M2L term's does (vjp_m2l below),
 *               so each gives the node's side_bar g . (shape_c - shape_i) / 2^(MORTON_LEVELS
 *               + 1); the first of the passes into side_bar writes it;
 *   m2l         (fmm.cl's, launched by the solver over its lists in its schedule) M2L
 *               transposed: its matrix D_{k+n}(z_i - z_j) is symmetric and the lists hold each
 *               pair both ways, so Mbar_k(i) = sum_j sum_n D_{k+n}(z_i - z_j) Lsbar_n(j) is M2L
 *               with Lsbar as the sources (the reversed pair's D(z_j - z_i) = (-1)^|k+n|
 *               D(z_i - z_j) turns Lbar into Lsbar and the signed result into Mbar), written
 *               over the evaluation's L, which only vjp_l2p and vjp_shifts read;
 *   vjp_m2l     per node (M2L_LANES work-items, in M2L's schedule), over its M2L list: the
 *               cube's side's cotangent from node i's terms (_fmm_code.py's m2l_gradient, D
 *               to order p + 1, the gradient g in the offset R = z_i - z_j). A centre is
 *               lo + shape side / 2^(MORTON_LEVELS + 1), so R moves with the side alone (lo
 *               moves both ends alike): each term gives g . (shape_i - shape_j) /
 *               2^(MORTON_LEVELS + 1), added to the node's side_bar, which vjp_cube adds
 *               to the side's; node j's term from node i is in j's list, and j's to count.
 *               (Each node's centre cotangents, i as target and as source, summed to the same
 *               two sums, cost twice the contractions and two rows of terms a work-item.)
 *   l2l         (fmm.cl's, per cell level below the root, shallowest first) M2M transposed:
 *               each node's Mbar shifted down into its children's (L2L's form, over the
 *               evaluation's parents), then vjp_shifts again for these shifts' offsets;
 *   vjp_p2m     per leaf: P2M transposed, each body's mass cotangent sum_n Mbar_n t_n and
 *               position cotangent m grad (an L2P of Mbar), added to its row of the output,
 *               its negation to the centre;
 *   vjp_cube    in two stages (CUBE_GROUP groups' partial results, then one group's fold of
 *               them): the centres' cotangents to the cube's extreme particles
 *               (z = lo + shape / 2^22 side: lo_bar = sum of the centres' cotangents,
 *               side_bar = sum of their dot products with shape / 2^22), and which particles
 *               those are (the first in the caller's order of equal coordinates, as numpy's
 *               argmin, and the first axis of equal extents);
 *   vjp_p2p     fmm.cl's p2p built with P2P_VJP (its work-groups, batches, tiles and parts):
 *               P2P transposed over each leaf and its P2P leaves (softened_pair.cl's
 *               pair_vjp_term, direct_vjp.cl's pair: the lists hold each pair both ways, so
 *               each body gathers its own sum), the sources' cotangent rows streamed beside
 *               them; vjp_p2p_row below adds the far field's (its row of the output so far) and
 *               the cube's cotangents of the body, written at its caller index.
 * Determinism: one work-item per output (a node's cotangents, a body's row), adding its inputs
 * in a fixed order (bodies in key order, children in order, lists in order; vjp_l2p's lanes as
 * upward_leaves', vjp_m2l's lanes and M2L as fmm.cl's m2l says, vjp_p2p's parts as its p2p
 * says); vjp_cube's sums run strided over fixed work-items and fold in a fixed tree. No
 * atomics: every run gives the same bits.
 * Precision: expansions' cotangents in `expansion`, centres' cotangents in `accum`, pair sums
 * and the bodies' far-field cotangents in `real` (the solver's precision, as direct_vjp.cl and
 * the output rows): the far field's two terms of a body are held in its output row between
 * the kernels, not in an `accum` array of their own (32 bytes a body in float32's gradient,
 * ADR 0327).
 * Host defines: fmm.cl's, P2P_VJP, CUBE_GROUP (vjp_cube's work-group and its first stage's count
 * of groups, a power of two), WITH_POTENTIAL (read phi_bar), ZERO_SOFTENING. Needs tree_common.cl,
 * softened_pair.cl and fmm.cl first; the operators below are generated per order
 * (engine/solvers/_fmm_code.py's vjp_code) and appended. */

/* The transposed operators (engine/solvers/_fmm_code.py's docstring states each sum): */
/* L2P's VJP at a body of monomials t: Lbar += the cotangents (ax, ay, az, pbar) expanded, g = the
 * offset's cotangent */
DEVICE void l2p_vjp(const expansion* t, GLOBAL const expansion* RESTRICT L, const expansion ax,
                    const expansion ay, const expansion az, const expansion pbar,
                    expansion* Lbar, expansion* g);
/* g = d/dv of sum_{k+n=s} Y_s X_k t_n(v): a shift's offset's cotangent */
DEVICE void shift_gradient(const expansion* t, GLOBAL const expansion* RESTRICT Y,
                           const expansion* X, expansion* g);
/* g = the gradient in R = z_i - z_j of node i's M2L term from node j (own_bar: node i's unsigned
 * local cotangent; source: node j's signed multipole) */
DEVICE void m2l_gradient(const expansion rx, const expansion ry, const expansion rz, const expansion eps2,
                         const expansion* own_bar, GLOBAL const expansion* RESTRICT source, expansion* g);
/* S_n -> (-1)^|n| S_n */
DEVICE void unsign(expansion* S);

/* A body's cotangent row: (a_bar, phi_bar), phi_bar 0 without WITH_POTENTIAL. */
DEVICE real4 body_cotangent(GLOBAL const real4* RESTRICT cotangent, const uint index) {
  real4 bar = cotangent[index];
#ifndef WITH_POTENTIAL
  bar.w = 0;
#endif
  return bar;
}

DEVICE bool vjp_leaf(GLOBAL const TreeNode* RESTRICT nodes, const int i) { return nodes[i].skip == (uint)i + 1; }

/* The monomials of a body about centre z (l2p_bodies' offsets). */
DEVICE void body_monomials(const real4 b, GLOBAL const accum* RESTRICT centre, const int i, expansion* t) {
  monomials((expansion)((accum)b.x - centre[3 * i]), (expansion)((accum)b.y - centre[3 * i + 1]),
            (expansion)((accum)b.z - centre[3 * i + 2]), t);
}

/* P2M_LANES work-items a node (upward_leaves' lanes): a leaf's lane k takes its bodies k,
 * k + P2M_LANES, ..., and the node's lanes (of one sub-group) add their partial Lbar and centre
 * cotangents by a butterfly of shuffles (a + b and b + a are the same bits, so the sums are fixed
 * by the leaf alone). Also copies each body's cotangent row into key order (`sorted_bar`, phi_bar
 * 0 without WITH_POTENTIAL), for vjp_p2p. `cotangent` and `out` may be one array (not
 * RESTRICT): a body's row is read before it is written, by the one work-item that takes it. */
KERNEL void vjp_l2p(GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                    GLOBAL const real4* RESTRICT body, GLOBAL const uint* RESTRICT order,
                    GLOBAL const real4* cotangent, GLOBAL const accum* RESTRICT centre,
                    GLOBAL const expansion* RESTRICT field, GLOBAL real4* RESTRICT sorted_bar,
                    GLOBAL expansion* RESTRICT local_bar, GLOBAL accum* RESTRICT centre_bar,
                    GLOBAL real4* out) {
  /* every lane of a sub-group reaches every shuffle: no return before the last */
  const int slot = GLOBAL_ID / P2M_LANES, lane = LOCAL_ID % P2M_LANES;
  const int node_count = (int)state[STATE_NODES];
  if (node_count == 0) return; /* every work-item alike */
  const int i = MIN(slot, node_count - 1);
  const bool leaf = slot < node_count && vjp_leaf(nodes, i);
  const uint first = nodes[i].first, end = leaf ? first + nodes[i].count : first;
  accum own[3] = {0, 0, 0};
  expansion Lbar[TERMS], t[TERMS], g[3];
  for (int q = 0; q < TERMS; ++q) Lbar[q] = 0;
  for (uint p = first + (uint)lane; p < end; p += P2M_LANES) {
    const uint k = order[p];
    const real4 bar = body_cotangent(cotangent, k);
    sorted_bar[p] = bar;
    body_monomials(body[p], centre, i, t);
    l2p_vjp(t, field + (ulong)i * TERMS, (expansion)bar.x, (expansion)bar.y, (expansion)bar.z,
            (expansion)bar.w, Lbar, g);
    out[k] = MAKE_REAL4((real)g[0], (real)g[1], (real)g[2], 0);
    for (int a = 0; a < 3; ++a) own[a] -= (accum)g[a];
  }
  for (int mask = 1; mask < P2M_LANES; mask <<= 1) {
    for (int q = 0; q < TERMS; ++q) Lbar[q] += SUBGROUP_SHUFFLE_XOR(Lbar[q], mask);
    for (int a = 0; a < 3; ++a) own[a] += SUBGROUP_SHUFFLE_XOR(own[a], mask);
  }
  if (slot >= node_count) return;
  if (leaf) {
    unsign(Lbar);
    for (int q = 0; q < TERMS; ++q)
      if (q % P2M_LANES == lane) local_bar[(ulong)i * MULTIPOLE_STRIDE + q] = Lbar[q];
  }
  if (lane == 0)
    for (int a = 0; a < 3; ++a) centre_bar[3 * i + a] = own[a];
}

/* The nodes of one cell level a launch, deepest first: L2L transposed, the children's signed
 * local cotangents shifted up (upward's M2M: m2m_children), written over the node's row (an
 * internal node's local expansion feeds its children's alone). */
KERNEL void vjp_l2l(const int level, GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                    GLOBAL const uint* RESTRICT levels, GLOBAL const accum* RESTRICT centre,
                    GLOBAL expansion* local_bar) {
  const int i = GLOBAL_ID;
  if (i >= (int)state[STATE_NODES] || vjp_leaf(nodes, i) || (int)levels[i] != level) return;
  const accum z[3] = {centre[3 * i], centre[3 * i + 1], centre[3 * i + 2]};
  expansion M[TERMS];
  m2m_children(nodes, i, z, centre, local_bar, M);
  for (int q = 0; q < TERMS; ++q) local_bar[(ulong)i * MULTIPOLE_STRIDE + q] = M[q];
}

/* One work-item a node (a leaf's sum is empty), every level in one launch, after the pass's
 * shifts, whose rows it reads final: the cotangents g of its shifts' offsets z_c - z_i,
 * d/dv sum_{k+n} Y_{k+n} X_k t_n(v), with Y the node's unsigned row of `parent_rows` (TERMS a
 * node) and X the child's row of `child_rows` (MULTIPOLE_STRIDE, signed). The offset moves
 * with the cube's side alone, as an M2L term's does (vjp_m2l), so each adds
 * g . (shape_c - shape_i) / 2^(MORTON_LEVELS + 1) to the node's side_bar; `first`: the first
 * pass into side_bar, which writes it. Apart from the shifts, neither kernel holds more than
 * two rows of terms a work-item, and no launch waits on a level (docs/adr/0344). */
KERNEL void vjp_shifts(const int first, GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                       GLOBAL const accum* RESTRICT centre, GLOBAL const accum* RESTRICT shape,
                       GLOBAL const expansion* RESTRICT parent_rows, GLOBAL const expansion* RESTRICT child_rows,
                       GLOBAL accum* RESTRICT side_bar) {
  const int i = GLOBAL_ID;
  if (i >= (int)state[STATE_NODES]) return;
  accum side = 0;
  expansion t[TERMS], X[TERMS], g[3];
  for (uint c = (uint)i + 1; c < nodes[i].skip; c = nodes[c].skip) {
    monomials((expansion)(centre[3 * c] - centre[3 * i]), (expansion)(centre[3 * c + 1] - centre[3 * i + 1]),
              (expansion)(centre[3 * c + 2] - centre[3 * i + 2]), t);
    for (int q = 0; q < TERMS; ++q) X[q] = child_rows[(ulong)c * MULTIPOLE_STRIDE + q];
    unsign(X);
    shift_gradient(t, parent_rows + (ulong)i * TERMS, X, g);
    for (int a = 0; a < 3; ++a) side += (accum)g[a] * (shape[4 * c + a] - shape[4 * i + a]);
  }
  side /= (accum)(2 << MORTON_LEVELS);
  side_bar[i] = first ? side : side_bar[i] + side;
}

/* M2L_LANES work-items a node, the nodes in M2L's schedule (longest list first, as m2l takes
 * them, so that a sub-group's lanes run lists of like lengths): work-item k of a node takes its
 * list's entries k, k + M2L_LANES, ..., and the node's lanes (of one sub-group) add their
 * partial sums by a butterfly of shuffles (a + b and b + a are the same bits, so the sum is
 * fixed by the list alone). The shapes' differences are whole numbers below 2^24: exact in
 * `expansion`. */
KERNEL void vjp_m2l(GLOBAL const uint* RESTRICT state, const int shift, GLOBAL const ulong* RESTRICT schedule,
                    GLOBAL const uint* RESTRICT m2l_start, GLOBAL const uint* RESTRICT m2l_source,
                    GLOBAL const accum* RESTRICT centre, GLOBAL const accum* RESTRICT shape, const expansion eps2,
                    GLOBAL const expansion* RESTRICT multipole, GLOBAL const expansion* RESTRICT local_bar,
                    GLOBAL accum* RESTRICT side_bar) {
  /* every lane of a sub-group reaches every shuffle: no return before the last */
  const int slot = GLOBAL_ID / M2L_LANES, lane = LOCAL_ID % M2L_LANES;
  const int node_count = (int)state[STATE_NODES];
  if (node_count == 0) return; /* every work-item alike */
  const bool active = slot < node_count;
  const uint i = active ? (uint)(schedule[slot] & ((1UL << shift) - 1)) : 0;
  expansion own_bar[TERMS], g[3], side = 0;
  for (int q = 0; q < TERMS; ++q) own_bar[q] = local_bar[(ulong)i * MULTIPOLE_STRIDE + q];
  unsign(own_bar);
  const accum z0 = centre[3 * i], z1 = centre[3 * i + 1], z2 = centre[3 * i + 2];
  const accum h0 = shape[4 * i], h1 = shape[4 * i + 1], h2 = shape[4 * i + 2];
  const uint end = active ? m2l_start[i + 1] : 0;
  for (uint s = m2l_start[i] + (uint)lane; s < end; s += M2L_LANES) {
    const uint j = m2l_source[s];
    m2l_gradient((expansion)(z0 - centre[3 * j]), (expansion)(z1 - centre[3 * j + 1]),
                 (expansion)(z2 - centre[3 * j + 2]), eps2, own_bar, multipole + (ulong)j * MULTIPOLE_STRIDE, g);
    side += g[0] * (expansion)(h0 - shape[4 * j]) + g[1] * (expansion)(h1 - shape[4 * j + 1]) +
            g[2] * (expansion)(h2 - shape[4 * j + 2]);
  }
  for (int mask = 1; mask < M2L_LANES; mask <<= 1) side += SUBGROUP_SHUFFLE_XOR(side, mask);
  if (active && lane == 0) side_bar[i] += (accum)side / (accum)(2 << MORTON_LEVELS);
}

KERNEL void vjp_p2m(GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                    GLOBAL const real4* RESTRICT body, GLOBAL const uint* RESTRICT order,
                    GLOBAL const accum* RESTRICT centre, GLOBAL const expansion* RESTRICT multipole_bar,
                    GLOBAL accum* RESTRICT centre_bar, GLOBAL real4* RESTRICT out) {
  const int i = GLOBAL_ID;
  if (i >= (int)state[STATE_NODES] || !vjp_leaf(nodes, i)) return;
  expansion t[TERMS], f[4];
  accum own[3] = {centre_bar[3 * i], centre_bar[3 * i + 1], centre_bar[3 * i + 2]};
  const uint end = nodes[i].first + nodes[i].count;
  for (uint p = nodes[i].first; p < end; ++p) {
    const real4 b = body[p];
    body_monomials(b, centre, i, t);
    l2p(t, multipole_bar + (ulong)i * TERMS, f);
    const uint k = order[p];
    const real4 far = out[k];
    accum pull[3];
    for (int a = 0; a < 3; ++a) {
      pull[a] = (accum)b.w * (accum)f[a];
      own[a] -= pull[a];
    }
    out[k] = MAKE_REAL4((real)((accum)far.x + pull[0]), (real)((accum)far.y + pull[1]),
                        (real)((accum)far.z + pull[2]), (real)(-(accum)f[3]));
  }
  for (int a = 0; a < 3; ++a) centre_bar[3 * i + a] = own[a];
}

/* A candidate for an extreme coordinate: the value and the caller's index; `better` keeps the
 * smaller value (or the larger, `high`), equal values the smaller index. */
DEVICE bool better(const accum value, const uint index, const accum best, const uint best_index, const bool high) {
  if (value != best) return high ? value > best : value < best;
  return index < best_index;
}

/* A fold of CUBE_GROUP rows of the cube's partial results in local memory into row 0, in a
 * fixed tree: per extreme (0..2 the lowest coordinate on each axis, 3..5 the highest) the value
 * and the caller index (UINT_MAX: none yet), and the four sums. Every work-item of the group
 * calls it. */
DEVICE void fold_cube(LOCAL_ARG accum* value, LOCAL_ARG uint* index, LOCAL_ARG accum* sum, const int lane) {
  SYNC_THREADS;
  for (int stride = CUBE_GROUP / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      for (int e = 0; e < 6; ++e) {
        const int mine = 6 * lane + e, theirs = 6 * (lane + stride) + e;
        if (index[theirs] != 0xffffffffu &&
            (index[mine] == 0xffffffffu || better(value[theirs], index[theirs], value[mine], index[mine], e >= 3))) {
          value[mine] = value[theirs];
          index[mine] = index[theirs];
        }
      }
      for (int a = 0; a < 4; ++a) sum[4 * lane + a] += sum[4 * (lane + stride) + a];
    }
    SYNC_THREADS;
  }
}

/* vjp_cube's first stage, CUBE_GROUP work-groups of CUBE_GROUP: each work-item takes the bodies
 * and nodes GLOBAL_ID, GLOBAL_ID + GLOBAL_SIZE, ..., and its group folds them into a row of
 * `part_*` (a fixed partition and tree: the same bits every run). */
KERNEL LAUNCH_BOUNDS(CUBE_GROUP, 1)
void vjp_cube_parts(GLOBAL const uint* RESTRICT state, GLOBAL const real4* RESTRICT body,
                    GLOBAL const uint* RESTRICT order, const int count, GLOBAL const accum* RESTRICT shape,
                    GLOBAL const accum* RESTRICT centre_bar, GLOBAL const accum* RESTRICT side_bar,
                    GLOBAL accum* RESTRICT part_value,
                    GLOBAL uint* RESTRICT part_index, GLOBAL accum* RESTRICT part_sum) {
  LOCAL accum value[CUBE_GROUP * 6];
  LOCAL uint index[CUBE_GROUP * 6];
  LOCAL accum sum[CUBE_GROUP * 4];
  const int lane = LOCAL_ID;
  accum best[6];
  uint best_index[6];
  for (int e = 0; e < 6; ++e) {
    best[e] = 0;
    best_index[e] = 0xffffffffu;
  }
  for (int p = GLOBAL_ID; p < count; p += GLOBAL_SIZE) {
    const real4 b = body[p];
    const accum x[3] = {(accum)b.x, (accum)b.y, (accum)b.z};
    const uint k = order[p];
    for (int e = 0; e < 6; ++e)
      if (best_index[e] == 0xffffffffu || better(x[e % 3], k, best[e], best_index[e], e >= 3)) {
        best[e] = x[e % 3];
        best_index[e] = k;
      }
  }
  accum own[4] = {0, 0, 0, 0};
  const int nodes = (int)state[STATE_NODES];
  for (int i = GLOBAL_ID; i < nodes; i += GLOBAL_SIZE) {
    for (int a = 0; a < 3; ++a) {
      const accum bar = centre_bar[3 * i + a];
      own[a] += bar;
      own[3] += bar * (shape[4 * i + a] / (accum)(2 << MORTON_LEVELS));
    }
    own[3] += side_bar[i];
  }
  for (int e = 0; e < 6; ++e) {
    value[6 * lane + e] = best[e];
    index[6 * lane + e] = best_index[e];
  }
  for (int a = 0; a < 4; ++a) sum[4 * lane + a] = own[a];
  fold_cube(value, index, sum, lane);
  if (lane < 6) {
    part_value[6 * GROUP_ID + lane] = value[lane];
    part_index[6 * GROUP_ID + lane] = index[lane];
  }
  if (lane < 4) part_sum[4 * GROUP_ID + lane] = sum[lane];
}

/* vjp_cube's second stage, one work-group: the first stage's CUBE_GROUP rows folded.
 * cube_bar: lo_bar (3), then side_bar on the side's axis and 0 on the others (all 0 for the
 * cube of one point, whose side is fixed); cube_index: the particle (caller index) at lo, then
 * the one at the high end, on each axis. */
KERNEL LAUNCH_BOUNDS(CUBE_GROUP, 1)
void vjp_cube(GLOBAL const accum* RESTRICT part_value, GLOBAL const uint* RESTRICT part_index,
              GLOBAL const accum* RESTRICT part_sum, GLOBAL accum* RESTRICT cube_bar,
              GLOBAL int* RESTRICT cube_index) {
  LOCAL accum value[CUBE_GROUP * 6];
  LOCAL uint index[CUBE_GROUP * 6];
  LOCAL accum sum[CUBE_GROUP * 4];
  const int lane = LOCAL_ID;
  for (int e = 0; e < 6; ++e) {
    value[6 * lane + e] = part_value[6 * lane + e];
    index[6 * lane + e] = part_index[6 * lane + e];
  }
  for (int a = 0; a < 4; ++a) sum[4 * lane + a] = part_sum[4 * lane + a];
  fold_cube(value, index, sum, lane);
  if (lane != 0) return;
  int axis = -1;
  accum side = 0;
  for (int a = 0; a < 3; ++a) {
    const accum extent = value[3 + a] - value[a];
    if (extent > side) {
      side = extent;
      axis = a;
    }
  }
  for (int a = 0; a < 3; ++a) {
    cube_bar[a] = sum[a];
    cube_bar[3 + a] = a == axis ? sum[3] : (accum)0;
    cube_index[a] = (int)index[a];
    cube_index[3 + a] = (int)index[3 + a];
  }
}

/* vjp_p2p (fmm.cl's p2p built with P2P_VJP) ends here for each body: its pair sum `sum`, its
 * far-field cotangents (its row of the output so far) and its share of the cube's, rounded once
 * to `real` at its caller index k. */
DEVICE void vjp_p2p_row(const real4 sum, const uint k, GLOBAL const accum* RESTRICT cube_bar,
                        GLOBAL const int* RESTRICT cube_index, GLOBAL real4* RESTRICT out) {
  const real4 far = out[k];
  accum row[4] = {(accum)sum.x + (accum)far.x, (accum)sum.y + (accum)far.y, (accum)sum.z + (accum)far.z,
                  (accum)sum.w + (accum)far.w};
  for (int a = 0; a < 3; ++a) {
    if ((int)k == cube_index[a]) row[a] += cube_bar[a] - cube_bar[3 + a];
    if ((int)k == cube_index[3 + a]) row[a] += cube_bar[3 + a];
  }
  out[k] = MAKE_REAL4((real)row[0], (real)row[1], (real)row[2], (real)row[3]);
}
