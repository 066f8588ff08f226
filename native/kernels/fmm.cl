/* fmm.cl: the fast multipole passes of gpu-fmm on the device-built octree (tree_common.cl's
 * nodes), the same arithmetic as cpu-fmm (native/fmm.cpp, native/fmm_expansions.hpp).
 *
 * Algorithm (docs/adr/0110): Cartesian Taylor expansions of the softened 1/r to order ORDER
 * about the centre of each node's key box. leaf_boxes gives each leaf the box of its bodies'
 * keys (the host's dual walk, native fmm_lists, reads them with the skips and returns the lists
 * and the centres); p2m sums each leaf's bodies into its multipole M_n = sum m t_n(x - z), t_n(v) =
 * v^n / n!; m2m runs once per tree depth, deepest first, each internal node adding its children
 * shifted; signed_multipoles stores (-1)^|n| M_n; m2l sums, per target node, the derivative
 * tensor D_{k+n} of 1/sqrt(r^2 + eps^2) at R = z_target - z_source times the source's signed
 * multipole over its M2L list; l2l runs once per depth, shallowest first, each node adding its
 * parent's local expansion re-expanded about its own centre; evaluate gives every body the
 * pairwise pull of its own leaf (itself excluded) and its P2P leaves, then L2P of its leaf's
 * local expansion. Index tables (fmm_tables in fmm_expansions.hpp) arrive as two arrays, `table`
 * (ints) and `scales` (accum), at the offsets the host defines.
 * Host defines: REAL_BITS, ACCUM_BITS (tree_common.cl), ORDER, TERMS, GRADIENT_TERMS, and the
 * table offsets T_DEGREE, T_MONO_PARENT, T_MONO_AXIS, T_MINUS_ONE, T_MINUS_TWO (3 x TERMS each),
 * T_PAIR_START, T_PAIR_N, T_PAIR_SUM, T_PLUS_ONE (3 x GRADIENT_TERMS); S_MONO_SCALE, S_FACTORIAL;
 * WITH_POTENTIAL.
 * Determinism: one work-item per output (a node's expansion, a body's sum), adding its inputs in
 * the lists' fixed order (sources ascending); no atomics, so every run gives the same bits.
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

/* The smallest and largest quantised coordinates of each leaf's bodies' keys (native
 * fmm_leaf_box), 6 per node: x, y, z lows, then highs. */
KERNEL void leaf_boxes(GLOBAL const uint* RESTRICT leaves, const int leaf_count, GLOBAL const TreeNode* RESTRICT nodes,
                       GLOBAL const ulong* RESTRICT keys, GLOBAL uint* RESTRICT box) {
  const int l = GLOBAL_ID;
  if (l >= leaf_count) return;
  const uint leaf = leaves[l];
  uint low[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, high[3] = {0, 0, 0};
  for (uint p = nodes[leaf].first; p < nodes[leaf].first + nodes[leaf].count; ++p) {
    const ulong key = keys[p];
    const uint q[3] = {compact_bits(key >> 2), compact_bits(key >> 1), compact_bits(key)};
    for (int a = 0; a < 3; ++a) {
      low[a] = MIN(low[a], q[a]);
      high[a] = MAX(high[a], q[a]);
    }
  }
  for (int a = 0; a < 3; ++a) {
    box[6 * leaf + a] = low[a];
    box[6 * leaf + 3 + a] = high[a];
  }
}

KERNEL void p2m(GLOBAL const uint* RESTRICT leaves, const int leaf_count, GLOBAL const TreeNode* RESTRICT nodes,
                GLOBAL const real4* RESTRICT body, GLOBAL const accum* RESTRICT centre,
                GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                GLOBAL accum* RESTRICT multipole) {
  const int l = GLOBAL_ID;
  if (l >= leaf_count) return;
  const uint leaf = leaves[l];
  accum M[TERMS], t[TERMS];
  for (int q = 0; q < TERMS; ++q) M[q] = 0;
  const accum z0 = centre[3 * leaf], z1 = centre[3 * leaf + 1], z2 = centre[3 * leaf + 2];
  const uint end = nodes[leaf].first + nodes[leaf].count;
  for (uint p = nodes[leaf].first; p < end; ++p) {
    const real4 b = body[p];
    monomials(table, scales, (accum)b.x - z0, (accum)b.y - z1, (accum)b.z - z2, t);
    for (int q = 0; q < TERMS; ++q) M[q] += (accum)b.w * t[q];
  }
  for (int q = 0; q < TERMS; ++q) multipole[(ulong)leaf * TERMS + q] = M[q];
}

/* The internal nodes among by_depth[first, first + count) (one tree depth). */
KERNEL void m2m(GLOBAL const uint* RESTRICT by_depth, const int first, const int count,
                GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT centre,
                GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                GLOBAL accum* RESTRICT multipole) {
  const int k = GLOBAL_ID;
  if (k >= count) return;
  const uint i = by_depth[first + k];
  const uint skip = nodes[i].skip;
  if (skip == i + 1) return;
  accum M[TERMS], t[TERMS];
  for (int q = 0; q < TERMS; ++q) M[q] = 0;
  for (uint c = i + 1; c < skip; c = nodes[c].skip) {
    monomials(table, scales, centre[3 * c] - centre[3 * i], centre[3 * c + 1] - centre[3 * i + 1],
              centre[3 * c + 2] - centre[3 * i + 2], t);
    for (int a = 0; a < TERMS; ++a) {
      const accum child = multipole[(ulong)c * TERMS + a];
      for (int q = table[T_PAIR_START + a]; q < table[T_PAIR_START + a + 1]; ++q)
        M[table[T_PAIR_SUM + q]] += child * t[table[T_PAIR_N + q]];
    }
  }
  for (int q = 0; q < TERMS; ++q) multipole[(ulong)i * TERMS + q] = M[q];
}

KERNEL void signed_multipoles(const int node_count, GLOBAL const int* RESTRICT table,
                              GLOBAL accum* RESTRICT multipole) {
  const int i = GLOBAL_ID;
  if (i >= node_count) return;
  for (int q = 0; q < TERMS; ++q)
    if (table[T_DEGREE + q] & 1) multipole[(ulong)i * TERMS + q] = -multipole[(ulong)i * TERMS + q];
}

KERNEL void m2l(const int node_count, GLOBAL const uint* RESTRICT m2l_start,
                GLOBAL const uint* RESTRICT m2l_source, GLOBAL const accum* RESTRICT centre, const accum eps2,
                GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                GLOBAL const accum* RESTRICT multipole, GLOBAL accum* RESTRICT field) {
  const int i = GLOBAL_ID;
  if (i >= node_count) return;
  accum L[TERMS], a[TERMS];
  for (int q = 0; q < TERMS; ++q) L[q] = 0;
  for (uint s = m2l_start[i]; s < m2l_start[i + 1]; ++s) {
    const uint j = m2l_source[s];
    const accum rx = centre[3 * i] - centre[3 * j], ry = centre[3 * i + 1] - centre[3 * j + 1];
    const accum rz = centre[3 * i + 2] - centre[3 * j + 2];
    const accum inv_r2 = 1 / (rx * rx + ry * ry + rz * rz + eps2);
    /* Taylor coefficients a_k = D_k / k! of the softened 1/r (fmm_expansions.hpp); a term's
     * k - e_i and k - 2e_i come before it. */
    a[0] = SQRT(inv_r2);
    for (int q = 1; q < TERMS; ++q) {
      const int n = table[T_DEGREE + q];
      const int x1 = table[T_MINUS_ONE + q], y1 = table[T_MINUS_ONE + TERMS + q];
      const int z1 = table[T_MINUS_ONE + 2 * TERMS + q];
      const int x2 = table[T_MINUS_TWO + q], y2 = table[T_MINUS_TWO + TERMS + q];
      const int z2 = table[T_MINUS_TWO + 2 * TERMS + q];
      const accum first = (x1 >= 0 ? rx * a[x1] : 0) + (y1 >= 0 ? ry * a[y1] : 0) + (z1 >= 0 ? rz * a[z1] : 0);
      const accum second = (x2 >= 0 ? a[x2] : 0) + (y2 >= 0 ? a[y2] : 0) + (z2 >= 0 ? a[z2] : 0);
      a[q] = -((2 * n - 1) * first + (n - 1) * second) * inv_r2 / n;
    }
    for (int q = 0; q < TERMS; ++q) a[q] *= scales[S_FACTORIAL + q];
    GLOBAL const accum* S = multipole + (ulong)j * TERMS;
    for (int k = 0; k < TERMS; ++k) {
      accum sum = 0;
      for (int q = table[T_PAIR_START + k]; q < table[T_PAIR_START + k + 1]; ++q)
        sum += a[table[T_PAIR_SUM + q]] * S[table[T_PAIR_N + q]];
      L[k] += sum;
    }
  }
  for (int q = 0; q < TERMS; ++q) field[(ulong)i * TERMS + q] = L[q];
}

/* Nodes by_depth[first, first + count) (one tree depth below the root). */
KERNEL void l2l(GLOBAL const uint* RESTRICT by_depth, const int first, const int count,
                GLOBAL const uint* RESTRICT parent, GLOBAL const accum* RESTRICT centre,
                GLOBAL const int* RESTRICT table, GLOBAL const accum* RESTRICT scales,
                GLOBAL accum* RESTRICT field) {
  const int k = GLOBAL_ID;
  if (k >= count) return;
  const uint c = by_depth[first + k], p = parent[c];
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

KERNEL void body_leaves(GLOBAL const uint* RESTRICT leaves, const int leaf_count,
                        GLOBAL const TreeNode* RESTRICT nodes, GLOBAL uint* RESTRICT body_leaf) {
  const int l = GLOBAL_ID;
  if (l >= leaf_count) return;
  const uint leaf = leaves[l];
  for (uint p = nodes[leaf].first; p < nodes[leaf].first + nodes[leaf].count; ++p) body_leaf[p] = leaf;
}

DEVICE void pull(const real4 target, GLOBAL const real4* RESTRICT body, const uint begin, const uint end,
                 const uint self, const real eps2, real* ax, real* ay, real* az, real* phi) {
  for (uint j = begin; j < end; ++j) {
    if (j == self) continue;
    const real4 source = body[j];
    const real dx = source.x - target.x;
    const real dy = source.y - target.y;
    const real dz = source.z - target.z;
    const real r2 = FMA(dx, dx, FMA(dy, dy, FMA(dz, dz, eps2)));
    const real inv_r = RSQRT(r2);
    const real m_inv_r = source.w * inv_r;
    const real w = m_inv_r * inv_r * inv_r;
    *ax = FMA(w, dx, *ax);
    *ay = FMA(w, dy, *ay);
    *az = FMA(w, dz, *az);
    *phi -= m_inv_r;
  }
}

KERNEL void evaluate(GLOBAL const real4* RESTRICT body, const int count, GLOBAL const uint* RESTRICT body_leaf,
                     GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT p2p_start,
                     GLOBAL const uint* RESTRICT p2p_source, GLOBAL const accum* RESTRICT centre,
                     GLOBAL const accum* RESTRICT field, GLOBAL const int* RESTRICT table,
                     GLOBAL const accum* RESTRICT scales, const real eps2, GLOBAL real4* RESTRICT result) {
  const int p = GLOBAL_ID;
  if (p >= count) return;
  const real4 target = body[p];
  const uint leaf = body_leaf[p];
  real ax = 0, ay = 0, az = 0, phi = 0;
  pull(target, body, nodes[leaf].first, nodes[leaf].first + nodes[leaf].count, (uint)p, eps2, &ax, &ay, &az, &phi);
  for (uint s = p2p_start[leaf]; s < p2p_start[leaf + 1]; ++s) {
    const uint source = p2p_source[s];
    pull(target, body, nodes[source].first, nodes[source].first + nodes[source].count, 0xffffffffu, eps2, &ax,
         &ay, &az, &phi);
  }
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
