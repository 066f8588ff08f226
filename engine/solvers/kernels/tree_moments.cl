/* tree_moments.cl: masses, centres of mass, opening distances and (optionally) quadrupoles,
 * bottom-up, as cpu-tree computes them (native/octree.cpp compute_moments).
 *
 * leaf_moments sums each leaf's bodies (in key order); internal_moments then runs once per cell
 * level from the deepest up, each internal node of that level summing its children in order
 * (a child's cell is always deeper than its parent's, so its sums are final). Sums are in
 * `accum` (double where the device has it, as on the host) and kept per node in `sums`
 * (mass, mass-weighted x, y, z), `centres` (centre of mass) and, with QUADRUPOLE, `moments`
 * (traceless: sum of m (3 d_i d_j - |d|^2 delta_ij) about the centre of mass; xx, xy, xz, yy,
 * yz, zz). A node's opening distance is side / theta + |centre of mass - cell centre| (the b_max
 * guard); theta = 0 gives infinity: no cell is accepted.
 * The node count is the root's skip (nodes[0].skip), read on the device: both kernels step over
 * the nodes by the launch's width, which the host sizes without knowing the count.
 * Needs tree_common.cl first. Host defines: QUADRUPOLE. */

/* Stores the node's final sums (mass, m x, m y, m z), then its centre of mass (into centres) and
 * its float record. */
DEVICE void finish_node(const int i, GLOBAL TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT levels,
                        GLOBAL const ulong* RESTRICT keys, GLOBAL const accum* RESTRICT cube,
                        const accum theta, const accum mass, const accum mx, const accum my,
                        const accum mz, GLOBAL accum* RESTRICT sums, GLOBAL accum* RESTRICT centres) {
  sums[4 * i] = mass;
  sums[4 * i + 1] = mx;
  sums[4 * i + 2] = my;
  sums[4 * i + 3] = mz;
  const int level = (int)levels[i];
  const ulong prefix = keys[nodes[i].first] >> (3 * (MORTON_LEVELS - level));
  const uint cell[3] = {compact_bits(prefix >> 2), compact_bits(prefix >> 1), compact_bits(prefix)};
  const accum side = cube[3] / (accum)(1 << level);
  accum offset2 = 0;
  for (int a = 0; a < 3; ++a) {
    const accum centre = cube[a] + ((accum)cell[a] + (accum)0.5) * side;
    /* A massless cell pulls nothing; its centre of mass is put at the cell's centre. */
    const accum com = mass > 0 ? sums[4 * i + 1 + a] / mass : centre;
    centres[4 * i + a] = com;
    offset2 += (com - centre) * (com - centre);
  }
  const accum open = side / theta + SQRT(offset2);
  nodes[i].cx = (real)centres[4 * i];
  nodes[i].cy = (real)centres[4 * i + 1];
  nodes[i].cz = (real)centres[4 * i + 2];
  nodes[i].mass = (real)mass;
  nodes[i].open2 = (real)(open * open);
}

#ifdef QUADRUPOLE
DEVICE void add_quadrupole(accum* q, const accum mass, const accum dx, const accum dy, const accum dz) {
  const accum r2 = dx * dx + dy * dy + dz * dz;
  q[0] += mass * (3 * dx * dx - r2);
  q[1] += mass * (3 * dx * dy);
  q[2] += mass * (3 * dx * dz);
  q[3] += mass * (3 * dy * dy - r2);
  q[4] += mass * (3 * dy * dz);
  q[5] += mass * (3 * dz * dz - r2);
}

DEVICE void store_quadrupole(const int i, const accum* q, GLOBAL accum* RESTRICT moments,
                             GLOBAL real* RESTRICT quadrupoles) {
  for (int c = 0; c < 6; ++c) {
    moments[6 * i + c] = q[c];
    quadrupoles[6 * i + c] = (real)q[c];
  }
}
#endif

DEVICE void leaf_moment(const int i, GLOBAL TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT levels,
                        GLOBAL const ulong* RESTRICT keys, GLOBAL const real4* RESTRICT body,
                        GLOBAL const accum* RESTRICT cube, const accum theta, GLOBAL accum* RESTRICT sums,
                        GLOBAL accum* RESTRICT centres, GLOBAL accum* RESTRICT moments,
                        GLOBAL real* RESTRICT quadrupoles) {
  if (nodes[i].skip != (uint)i + 1) return;
  const int first = (int)nodes[i].first, last = first + (int)nodes[i].count;
  accum mass = 0, mx = 0, my = 0, mz = 0;
  for (int p = first; p < last; ++p) {
    const real4 b = body[p];
    const accum m = (accum)b.w;
    mass += m;
    mx += m * (accum)b.x;
    my += m * (accum)b.y;
    mz += m * (accum)b.z;
  }
  finish_node(i, nodes, levels, keys, cube, theta, mass, mx, my, mz, sums, centres);
#ifdef QUADRUPOLE
  accum q[6] = {0, 0, 0, 0, 0, 0};
  const accum cx = centres[4 * i], cy = centres[4 * i + 1], cz = centres[4 * i + 2];
  for (int p = first; p < last; ++p) {
    const real4 b = body[p];
    add_quadrupole(q, (accum)b.w, (accum)b.x - cx, (accum)b.y - cy, (accum)b.z - cz);
  }
  store_quadrupole(i, q, moments, quadrupoles);
#endif
}

DEVICE void internal_moment(const int i, GLOBAL TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT levels,
                            GLOBAL const ulong* RESTRICT keys, const int level,
                            GLOBAL const accum* RESTRICT cube, const accum theta,
                            GLOBAL accum* RESTRICT sums, GLOBAL accum* RESTRICT centres,
                            GLOBAL accum* RESTRICT moments, GLOBAL real* RESTRICT quadrupoles) {
  if (levels[i] != (uint)level) return;
  const uint skip = nodes[i].skip;
  if (skip == (uint)i + 1) return;
  accum mass = 0, mx = 0, my = 0, mz = 0;
  for (uint c = (uint)i + 1; c < skip; c = nodes[c].skip) {
    mass += sums[4 * c];
    mx += sums[4 * c + 1];
    my += sums[4 * c + 2];
    mz += sums[4 * c + 3];
  }
  finish_node(i, nodes, levels, keys, cube, theta, mass, mx, my, mz, sums, centres);
#ifdef QUADRUPOLE
  accum q[6] = {0, 0, 0, 0, 0, 0};
  const accum cx = centres[4 * i], cy = centres[4 * i + 1], cz = centres[4 * i + 2];
  for (uint c = (uint)i + 1; c < skip; c = nodes[c].skip) {
    for (int k = 0; k < 6; ++k) q[k] += moments[6 * c + k];
    add_quadrupole(q, sums[4 * c], centres[4 * c] - cx, centres[4 * c + 1] - cy, centres[4 * c + 2] - cz);
  }
  store_quadrupole(i, q, moments, quadrupoles);
#endif
}

KERNEL void leaf_moments(GLOBAL TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT levels,
                         GLOBAL const ulong* RESTRICT keys, GLOBAL const real4* RESTRICT body,
                         GLOBAL const accum* RESTRICT cube, const accum theta, GLOBAL accum* RESTRICT sums,
                         GLOBAL accum* RESTRICT centres, GLOBAL accum* RESTRICT moments,
                         GLOBAL real* RESTRICT quadrupoles) {
  const int node_count = (int)nodes[0].skip;
  for (int i = GLOBAL_ID; i < node_count; i += GLOBAL_SIZE)
    leaf_moment(i, nodes, levels, keys, body, cube, theta, sums, centres, moments, quadrupoles);
}

KERNEL void internal_moments(GLOBAL TreeNode* RESTRICT nodes, GLOBAL const uint* RESTRICT levels,
                             GLOBAL const ulong* RESTRICT keys, const int level,
                             GLOBAL const accum* RESTRICT cube, const accum theta,
                             GLOBAL accum* RESTRICT sums, GLOBAL accum* RESTRICT centres,
                             GLOBAL accum* RESTRICT moments, GLOBAL real* RESTRICT quadrupoles) {
  const int node_count = (int)nodes[0].skip;
  for (int i = GLOBAL_ID; i < node_count; i += GLOBAL_SIZE)
    internal_moment(i, nodes, levels, keys, level, cube, theta, sums, centres, moments, quadrupoles);
}
