/* fmm.cl: the fast multipole passes of gpu-fmm on the device-built octree (tree_common.cl's
 * nodes), the same arithmetic as cpu-fmm (native/fmm.cpp, native/fmm_expansions.hpp).
 *
 * Algorithm (docs/adr/0110): Cartesian Taylor expansions of the softened 1/r to order ORDER
 * about the centre of each node's key box, every stage on the device (docs/fmm-tuning-log.md#0157):
 *   upward       the leaves (upward_leaves, a few lanes a leaf), then the cells once per
 *                level, deepest first (upward): each node's key box, centre and walk geometry,
 *                and its signed multipole S_n = (-1)^|n| M_n, M_n = sum m t_n(x - z),
 *                t_n(v) = v^n / n! (P2M at leaves, M2M from the children elsewhere);
 *   walk         the dual tree walk of native fmm_lists.cpp breadth first, one launch a step
 *                (walk_step), then both directions of each pair gathered into per-target lists
 *                with sources ascending (fmm_lists.cl: counted, scattered by atomic tickets and
 *                ordered by rank within each list): exactly the host's lists;
 *   m2l          per target node, the derivative tensor D_{k+n} of 1/sqrt(r^2 + eps^2) at
 *                R = z_target - z_source times the source's signed multipole, over its M2L list,
 *                the nodes taken longest list first (m2l_schedule, the key sort);
 *   l2l          once per cell level, shallowest first, each node adding its parent's local
 *                expansion re-expanded about its own centre;
 *   p2p          every body: the pairwise pull of its own leaf (itself excluded) and its P2P
 *                leaves, a work-group per leaf whose lanes split the sources among a few
 *                lanes per target (docs/fmm-tuning-log.md#0173), written at the body's place
 *                in the caller's order;
 *   l2p_bodies   every body adds its leaf's local expansion (L2P) to that.
 * The expansion operators (monomials, M2M, M2L, L2L, L2P) are generated per order from the index
 * tables of fmm_expansions.hpp (engine/solvers/_fmm_code.py) and appended after this file.
 * Host defines: REAL_BITS, ACCUM_BITS (tree_common.cl), EXPANSION_BITS, TERMS, WALK_GROUP,
 * MULTIPOLE_STRIDE, P2M_LANES, M2L_GROUP, M2L_LANES, SCHEDULE_LENGTH_BITS, P2P_GROUP,
 * P2P_TARGETS, P2P_TILE, P2P_SPLIT_COST, P2P_MOST_PARTS, P2P_MASK_SELF, WITH_POTENTIAL,
 * STATE_NODES, STATE_TREE_NODES, STATE_LEVELS (the evaluation's state: below).
 * Node counts stay on the device (docs/fmm-tuning-log.md#0191): the host launches the node passes over the
 * node slots its arrays hold and the level passes for the levels it planned, and every pass
 * takes the tree's node count from the evaluation's state (plan_nodes).
 * Determinism: one work-item per output (a node's box and expansion, a body's sum), adding its
 * inputs in the lists' fixed order (sources ascending); upward_leaves, M2L and p2p split a sum
 * among a fixed set of work-items and add their partial sums in a fixed order (see there); so
 * every run gives the same bits. The walk alone uses atomics (integer adds reserving room in its pair arrays):
 * the set of pairs it writes is fixed, their order is not, and the lists leave no trace of it
 * (fmm_lists.cl's integer atomics neither: its header says why).
 * Expansions are in `expansion` (double by default, as cpu-fmm), pair sums in `real`
 * with the direct kernel's inner loop (softened_pair.cl's pair_term).
 * Needs tree_common.cl and softened_pair.cl first. */

/* The expansions' type: double, or float where the host asks for it (half the bytes, twice the
 * FMA rate of a GPU); the geometry (boxes, centres, offsets) stays in accum. */
#if EXPANSION_BITS == 64
typedef double expansion;
typedef double2 expansion_pack;
#define PACK_WIDTH 2
#define SOURCE_QUAD(from, v, s)                                          \
  {                                                                      \
    const expansion_pack a_ = (from)[2 * (v)], b_ = (from)[2 * (v) + 1]; \
    (s)[0] = a_.x; (s)[1] = a_.y; (s)[2] = b_.x; (s)[3] = b_.y;          \
  }
#else
typedef float expansion;
typedef float4 expansion_pack;
#define PACK_WIDTH 4
#define SOURCE_QUAD(from, v, s)                                          \
  {                                                                      \
    const expansion_pack a_ = (from)[v];                                 \
    (s)[0] = a_.x; (s)[1] = a_.y; (s)[2] = a_.z; (s)[3] = a_.w;          \
  }
#endif
/* SOURCE_QUAD: terms 4v .. 4v + 3 of the multipole at `from` into s[0..3] */
/* 16 bytes of expansion terms, one load (CUDA's and OpenCL's double2 and float4 alike); a
 * node's multipole takes MULTIPOLE_STRIDE terms (a host define: TERMS rounded up to a multiple
 * of 4), so that every node's starts on a 16-byte boundary and M2L reads a source's in TERMS / 4 loads rather
 * than TERMS: a sub-group's M2L reads as many sources as it has work-items, each its own cache
 * lines, and each load instruction costs the memory unit a pass per line it touches. */

/* The expansion operators of order ORDER, generated by the host with every index a constant
 * (engine/solvers/_fmm_code.py, appended after this file), so that the expansions stay in
 * registers: */
/* t_n(v) = v^n / n!, n over the TERMS multi-indices of degree <= ORDER */
DEVICE void monomials(const expansion v0, const expansion v1, const expansion v2, expansion* t);
/* M2M: M_{k+n} += C_k t_n(offset) for |k + n| <= ORDER (a child's multipole C into M) */
DEVICE void m2m_accumulate(const expansion* t, GLOBAL const expansion* RESTRICT C, expansion* M);
/* L2L: out_k += sum_n P_{k+n} t_n(offset) (a parent's local expansion P into out) */
DEVICE void l2l_accumulate(const expansion* t, GLOBAL const expansion* RESTRICT P, GLOBAL expansion* RESTRICT out);
/* M2L: L_k += sum_n D_{k+n}(R) S_n over |k| + |n| <= ORDER, D the derivative tensor of
 * 1/sqrt(r^2 + eps2) at R = (rx, ry, rz) from the Taylor recurrence a_k = D_k / k!
 * (fmm_expansions.hpp; a term's k - e_i and k - 2e_i come before it); S in registers, or
 * with M2L_STREAMED (a host define, at high orders) read from `from` four terms at a time
 * as the sums take them */
#ifdef M2L_STREAMED
DEVICE void m2l_accumulate(const expansion rx, const expansion ry, const expansion rz, const expansion eps2,
                           GLOBAL const expansion_pack* RESTRICT from, expansion* L);
#else
DEVICE void m2l_accumulate(const expansion rx, const expansion ry, const expansion rz, const expansion eps2,
                           const expansion* S, expansion* L);
#endif
/* L2P: f = (gradient x, y, z, potential) of the local expansion L at monomials t */
DEVICE void l2p(const expansion* t, GLOBAL const expansion* RESTRICT L, expansion* f);

/* Expansion centres, the walk's geometry and the signed multipoles, from a node's key box.
 * A leaf's box is the smallest and largest quantised coordinates of its bodies' keys (native
 * fmm_leaf_box), an internal node's the union of its children's; from it `centre` (3 per node,
 * the box centre in coordinates) and `shape` (4 per node: twice the centre and the diagonal, in
 * finest-cell units, the host's Geometry: exact integers and one correctly rounded sqrt, so the
 * walk decides as the host does). The multipole is stored signed, S_n = (-1)^|n| M_n, which
 * is P2M and M2M with the offsets negated (t_n is homogeneous of degree |n|, and negation is
 * exact). */
DEVICE void node_geometry(const int i, const uint* low, const uint* high, const bool store,
                          GLOBAL const accum* RESTRICT cube, GLOBAL uint* RESTRICT box,
                          GLOBAL accum* RESTRICT shape, GLOBAL accum* RESTRICT centre, accum* z) {
  const accum unit = cube[3] / (accum)(1 << MORTON_LEVELS);
  accum d2 = 0;
  for (int a = 0; a < 3; ++a) {
    const accum lo = (accum)low[a], hi = (accum)high[a] + 1;
    d2 += MUL_RN(hi - lo, hi - lo);
    z[a] = cube[a] + MUL_RN((accum)0.5 * (lo + hi), unit);
    if (store) {
      box[6 * i + a] = low[a];
      box[6 * i + 3 + a] = high[a];
      shape[4 * i + a] = lo + hi;
      centre[3 * i + a] = z[a];
    }
  }
  if (store) shape[4 * i + 3] = SQRT(d2);
}

/* The evaluation's state, one array on the device that the host reads once, after the whole
 * evaluation is queued: the walk's words (below: pairs so far, overflow, frontier sizes), and
 * STATE_NODES, the nodes every pass takes: the tree's node count (the build's scan total,
 * starts[count]) where the solver's node arrays hold that many and its level launches cover
 * every cell level that holds nodes (the build's level_mask), else 0, and then every pass
 * does nothing (the host sees it in its read and runs the passes again, with arrays and levels
 * for this tree). The tree's own count and levels go beside it (STATE_TREE_NODES,
 * STATE_LEVELS), for that read. */
KERNEL void plan_nodes(GLOBAL const uint* RESTRICT starts, const int count, GLOBAL const uint* RESTRICT level_mask,
                       const uint node_capacity, const uint levels, GLOBAL uint* RESTRICT state) {
  if (GLOBAL_ID != 0) return;
  const uint nodes = starts[count], mask = level_mask[0];
  state[STATE_TREE_NODES] = nodes;
  state[STATE_LEVELS] = mask;
  state[STATE_NODES] = nodes <= node_capacity && (mask & ~levels) == 0u ? nodes : 0u;
}

/* The leaves (P2M), P2M_LANES work-items a node (a host define: a power of two, at most the
 * sub-group's size, so that a node's work-items are lanes of one sub-group), those of internal
 * nodes idle: work-item l of a leaf takes bodies first + l, first + l + P2M_LANES, ..., in order,
 * into a box and a multipole of its own, and the lanes combine theirs by a butterfly of
 * shuffles (log2 P2M_LANES rounds, each lane adding its partner's partial: a + b and b + a are
 * the same bits, so every lane ends with the same sums, fixed by the leaf's size alone). On the
 * H200 (10M bodies, ~30 a leaf) one work-item a leaf took 0.71 ms, bodies one after another, a
 * sub-group of 32 a leaf summing through local memory 0.77 ms, and 4 lanes a leaf 0.46 ms. */
KERNEL void upward_leaves(GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                          GLOBAL const ulong* RESTRICT keys, GLOBAL const real4* RESTRICT body,
                          GLOBAL const accum* RESTRICT cube, GLOBAL uint* RESTRICT box,
                          GLOBAL accum* RESTRICT shape, GLOBAL accum* RESTRICT centre,
                          GLOBAL expansion* RESTRICT multipole) {
  /* every lane of a sub-group reaches every shuffle: no return before the last */
  const int slot = GLOBAL_ID / P2M_LANES, lane = LOCAL_ID % P2M_LANES;
  const int node_count = (int)state[STATE_NODES];
  if (node_count == 0) return; /* every work-item alike */
  const int i = MIN(slot, node_count - 1);
  const bool leaf = slot < node_count && nodes[i].skip == (uint)i + 1;
  const uint first = nodes[i].first, end = leaf ? first + nodes[i].count : first;
  uint low[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, high[3] = {0, 0, 0};
  for (uint p = first + (uint)lane; p < end; p += P2M_LANES) {
    const ulong key = keys[p];
    const uint q[3] = {compact_bits(key >> 2), compact_bits(key >> 1), compact_bits(key)};
    for (int a = 0; a < 3; ++a) {
      low[a] = MIN(low[a], q[a]);
      high[a] = MAX(high[a], q[a]);
    }
  }
  for (int mask = 1; mask < P2M_LANES; mask <<= 1)
    for (int a = 0; a < 3; ++a) {
      low[a] = MIN(low[a], (uint)SUBGROUP_SHUFFLE_XOR(low[a], mask));
      high[a] = MAX(high[a], (uint)SUBGROUP_SHUFFLE_XOR(high[a], mask));
    }
  accum z[3];
  node_geometry(i, low, high, leaf && lane == 0, cube, box, shape, centre, z);
  expansion M[TERMS], t[TERMS];
  for (int q = 0; q < TERMS; ++q) M[q] = 0;
  for (uint p = first + (uint)lane; p < end; p += P2M_LANES) {
    const real4 b = body[p];
    monomials((expansion)(z[0] - (accum)b.x), (expansion)(z[1] - (accum)b.y), (expansion)(z[2] - (accum)b.z), t);
    for (int q = 0; q < TERMS; ++q) M[q] += (expansion)b.w * t[q];
  }
  for (int mask = 1; mask < P2M_LANES; mask <<= 1)
    for (int q = 0; q < TERMS; ++q) M[q] += SUBGROUP_SHUFFLE_XOR(M[q], mask);
  if (leaf)
    for (int q = 0; q < TERMS; ++q)
      if (q % P2M_LANES == lane) multipole[(ulong)i * MULTIPOLE_STRIDE + q] = M[q];
}

/* M = node i's children's rows of `rows` (MULTIPOLE_STRIDE, signed multipoles) shifted to its
 * centre z, in order (M2M, the offsets z - z_c): upward's, and the VJP's L2L transposed. */
DEVICE void m2m_children(GLOBAL const TreeNode* RESTRICT nodes, const int i, const accum* z,
                         GLOBAL const accum* RESTRICT centre, GLOBAL const expansion* rows, expansion* M) {
  expansion t[TERMS];
  for (int q = 0; q < TERMS; ++q) M[q] = 0;
  for (uint c = (uint)i + 1; c < nodes[i].skip; c = nodes[c].skip) {
    monomials((expansion)(z[0] - centre[3 * c]), (expansion)(z[1] - centre[3 * c + 1]),
              (expansion)(z[2] - centre[3 * c + 2]), t);
    m2m_accumulate(t, rows + (ulong)c * MULTIPOLE_STRIDE, M);
  }
}

/* The internal nodes of one cell level a launch, deepest first (a child's cell is always deeper
 * than its parent's, so its box and multipole are final): M2M from the children in order. */
KERNEL void upward(const int level, GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                   GLOBAL const uint* RESTRICT levels, GLOBAL const accum* RESTRICT cube,
                   GLOBAL uint* RESTRICT box, GLOBAL accum* RESTRICT shape, GLOBAL accum* RESTRICT centre,
                   GLOBAL expansion* RESTRICT multipole) {
  const int i = GLOBAL_ID;
  if (i >= (int)state[STATE_NODES]) return;
  const uint skip = nodes[i].skip;
  if (skip == (uint)i + 1 || (int)levels[i] != level) return;
  uint low[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, high[3] = {0, 0, 0};
  for (uint c = (uint)i + 1; c < skip; c = nodes[c].skip)
    for (int a = 0; a < 3; ++a) {
      low[a] = MIN(low[a], box[6 * c + a]);
      high[a] = MAX(high[a], box[6 * c + 3 + a]);
    }
  accum z[3];
  node_geometry(i, low, high, true, cube, box, shape, centre, z);
  expansion M[TERMS];
  m2m_children(nodes, i, z, centre, multipole, M);
  for (int q = 0; q < TERMS; ++q) multipole[(ulong)i * MULTIPOLE_STRIDE + q] = M[q];
}

/* parent[c] for every node (the root's is itself), from the skips. */
KERNEL void node_parents(GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                         GLOBAL uint* RESTRICT parent) {
  const int i = GLOBAL_ID;
  if (i >= (int)state[STATE_NODES]) return;
  if (i == 0) parent[0] = 0;
  for (uint c = (uint)i + 1; c < nodes[i].skip; c = nodes[c].skip) parent[c] = (uint)i;
}

/* ---- The dual tree walk, breadth first (native fmm_lists.cpp's DualWalk, one step per launch).
 * A frontier of node pairs (a << 32 | b; a == b is a node with itself). walk_step takes each
 * frontier pair two levels down: its outputs are M2L pairs, P2P pairs and the pairs still to
 * split (a node with itself splits into each child with itself and each later sibling; else the
 * larger cell's children pair with the other, the host's split rule), which form the next
 * frontier. Each child pair is classified once: the count pass keeps its kind in two
 * registers' bits for the write pass. A work-group counts its work-items' outputs, places them with one scan in local
 * memory and reserves room for the group with one atomic add per array, so the arrays hold
 * every output once, in an order that varies run to run; the lists stage sorts each target's
 * sources, so the lists do not depend on it. The walk's state stays on the device (`state`:
 * M2L and P2P pairs so far, overflow, and three rotating frontier sizes: step s reads size
 * s % 3, adds the next frontier's into (s + 1) % 3 and clears (s + 2) % 3, which the step
 * after adds into), so the host may queue steps at widths it expects and read the state once:
 * an M2L or P2P pair past its array's capacity is counted but not written (the walk goes on, so
 * its counts are the whole walk's pairs: a walk over arrays too small is the count pass that
 * sizes them, the host comparing the counts with the capacities); a pair past the next
 * frontier's capacity flags an overflow, after which every later step does nothing (the step's
 * own groups go on counting), and the host walks the step again with a frontier of the counted
 * size. */

/* The three output counts of a work-item in one word, so that one scan places all three: a
 * work-item has at most 36 child pairs with 36 pairs each, so a group's sums stay below 2^21
 * for groups of up to 1024 work-items. */
#define WALK_FIELD_BITS 21
#define WALK_PACK(m2l, p2p, next) ((ulong)(m2l) | ((ulong)(p2p) << WALK_FIELD_BITS) | ((ulong)(next) << (2 * WALK_FIELD_BITS)))
#define WALK_FIELD(word, field) ((uint)(((word) >> ((field) * WALK_FIELD_BITS)) & ((1UL << WALK_FIELD_BITS) - 1)))

DEVICE bool walk_leaf(GLOBAL const TreeNode* RESTRICT nodes, const uint a) { return nodes[a].skip == a + 1; }

/* theta |c_A - c_B| > r_A + r_B with doubled centres and radii, squared (the host's test, on the
 * same exact integers and rounded diagonals); theta the heavy angle heavy_theta2[k] where the
 * larger node holds c > heavy bodies, k = floor(log2(c / heavy)) (native fmm_lists.hpp, the
 * host's table; heavy 0: no node is heavy). */
DEVICE bool well_separated(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT shape,
                           const accum theta2, const uint heavy, GLOBAL const accum* RESTRICT heavy_theta2,
                           const uint a, const uint b) {
  accum d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const accum d = shape[4 * a + k] - shape[4 * b + k];
    d2 += MUL_RN(d, d);
  }
  const accum r = shape[4 * a + 3] + shape[4 * b + 3];
  accum angle2 = theta2;
  if (heavy != 0u) {
    const uint c = MAX(nodes[a].count, nodes[b].count);
    if (c > heavy) angle2 = heavy_theta2[63 - CLZ64((ulong)(c / heavy))];
  }
  return MUL_RN(angle2, d2) > MUL_RN(r, r);
}

/* 0: M2L, 1: P2P, 2: split (into *split's children, each paired with *other), 3: a node with
 * itself to split, 4: nothing (a leaf with itself). */
DEVICE int walk_kind(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT shape, const accum theta2,
                     const uint heavy, GLOBAL const accum* RESTRICT heavy_theta2,
                     const uint a, const uint b, uint* split, uint* other) {
  if (a == b) return walk_leaf(nodes, a) ? 4 : 3;
  if (well_separated(nodes, shape, theta2, heavy, heavy_theta2, a, b)) return 0;
  const bool leaf_a = walk_leaf(nodes, a), leaf_b = walk_leaf(nodes, b);
  if (leaf_a && leaf_b) return 1;
  const bool split_a = leaf_b || (!leaf_a && shape[4 * a + 3] >= shape[4 * b + 3]);
  *split = split_a ? a : b;
  *other = split_a ? b : a;
  return 2;
}

/* The state before step `step`: `m2l` and `p2p` pairs so far, no overflow, a frontier of `size`
 * (the walk's start: none so far and the root with itself), or of none where the passes take
 * no nodes (plan_nodes). */
KERNEL void walk_reset(GLOBAL uint* RESTRICT state, const uint m2l, const uint p2p, const int step, const uint size) {
  if (GLOBAL_ID != 0) return;
  state[0] = m2l;
  state[1] = p2p;
  state[2] = 0;
  for (int k = 0; k < 3; ++k) state[3 + k] = k == step % 3 && state[STATE_NODES] != 0u ? size : 0;
}

/* The pairs a split pair (kind 2 or 3) turns into, in the host's order (a node with itself:
 * each child with itself and each later sibling; else each child of *split with *other), one
 * at a time without an array: first_child_pair sets (c, d) to the first (a node that splits
 * has children), next_child_pair moves to the next and is false past the last. */
DEVICE void first_child_pair(const int kind, const uint a, const uint split, const uint other, uint* c, uint* d) {
  *c = (kind == 2 ? split : a) + 1;
  *d = kind == 2 ? other : *c;
}

DEVICE bool next_child_pair(GLOBAL const TreeNode* RESTRICT nodes, const int kind, const uint a, const uint split,
                            uint* c, uint* d) {
  if (kind == 3) {
    const uint later = nodes[*d].skip;
    if (later < nodes[a].skip) {
      *d = later;
      return true;
    }
  }
  const uint parent = kind == 2 ? split : a;
  *c = nodes[*c].skip;
  if (*c >= nodes[parent].skip) return false;
  if (kind == 3) *d = *c;
  return true;
}

DEVICE uint child_pair_count(GLOBAL const TreeNode* RESTRICT nodes, const int kind, const uint a, const uint split) {
  const uint s = kind == 2 ? split : a;
  uint children = 0;
  for (uint c = s + 1; c < nodes[s].skip; c = nodes[c].skip) ++children;
  return kind == 2 ? children : children * (children + 1) / 2;
}

/* A child pair's walk kind as 3 bits, so that the step classifies each child pair once (its
 * count pass keeps them for its write pass): walk_kind's 0, 1, 3, 4, and a split of the pair's
 * first node (2) or of its second (5). At most 36 child pairs: the first 21 in `low`, the
 * rest in `high`. */
#define KIND_BITS 3
#define KINDS_LOW 21
DEVICE void keep_kind(ulong* low, ulong* high, const uint k, const int kind, const uint c, const uint split) {
  const ulong code = (ulong)(kind == 2 && split != c ? 5 : kind);
  if (k < KINDS_LOW) *low |= code << (KIND_BITS * k);
  else *high |= code << (KIND_BITS * (k - KINDS_LOW));
}

DEVICE int kept_kind(const ulong low, const ulong high, const uint k, const uint c, const uint d, uint* split,
                     uint* other) {
  const int code = (int)((k < KINDS_LOW ? low >> (KIND_BITS * k) : high >> (KIND_BITS * (k - KINDS_LOW))) & 7);
  *split = code == 5 ? d : c;
  *other = code == 5 ? c : d;
  return code == 5 ? 2 : code;
}

/* A frontier pair's outputs, two levels down: the pair itself, and when it splits, each of its
 * child pairs (which emit, or go to the next frontier as their own child pairs): half the
 * steps (launches and, walking step by step, host reads) of one level a step. The pair's own
 * kind (and split) goes to *kind_out, its child pairs' kinds to low and high, for the write. */
DEVICE ulong walk_counts(GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT shape,
                         const accum theta2, const uint heavy, GLOBAL const accum* RESTRICT heavy_theta2,
                         const ulong pair, int* kind_out, uint* split_out,
                         uint* other_out, ulong* low, ulong* high) {
  uint m2l = 0, p2p = 0, next = 0;
  const uint a = (uint)(pair >> 32);
  uint split = 0, other = 0;
  const int kind = walk_kind(nodes, shape, theta2, heavy, heavy_theta2, a, (uint)pair, &split, &other);
  *kind_out = kind;
  *split_out = split;
  *other_out = other;
  m2l = kind == 0;
  p2p = kind == 1;
  if (kind == 2 || kind == 3) {
    uint c, d, k = 0;
    first_child_pair(kind, a, split, other, &c, &d);
    do {
      uint ks = 0, ko = 0;
      const int kk = walk_kind(nodes, shape, theta2, heavy, heavy_theta2, c, d, &ks, &ko);
      keep_kind(low, high, k++, kk, c, ks);
      m2l += kk == 0;
      p2p += kk == 1;
      if (kk == 2 || kk == 3) next += child_pair_count(nodes, kk, c, ks);
    } while (next_child_pair(nodes, kind, a, split, &c, &d));
  }
  return WALK_PACK(m2l, p2p, next);
}

/* Appends value at *at of an array of capacity (the cursor advances); false where the write
 * was past the capacity, and dropped. */
DEVICE bool walk_put(GLOBAL ulong* RESTRICT array, uint* at, const uint capacity, const ulong value) {
  const bool room = *at < capacity;
  if (room) array[*at] = value;
  ++*at;
  return room;
}

/* One step over the frontier pairs [0, size), size = state[3 + step % 3] <= width (else an
 * overflow). Work-item i writes pair i's outputs at its group's reserved bases plus the counts
 * of the group's earlier work-items. */
KERNEL LAUNCH_BOUNDS(WALK_GROUP, 1)
void walk_step(GLOBAL const ulong* RESTRICT pairs, const int width, const int step, GLOBAL uint* RESTRICT state,
               GLOBAL const TreeNode* RESTRICT nodes, GLOBAL const accum* RESTRICT shape, const accum theta2,
               const uint heavy, GLOBAL const accum* RESTRICT heavy_theta2,
               GLOBAL ulong* RESTRICT m2l, const uint m2l_capacity, GLOBAL ulong* RESTRICT p2p,
               const uint p2p_capacity, GLOBAL ulong* RESTRICT next, const uint next_capacity) {
  LOCAL ulong before[WALK_GROUP];
  LOCAL uint bases[3];
  const int i = GLOBAL_ID;
  const uint size = state[3 + step % 3];
  if (i == 0) state[3 + (step + 2) % 3] = 0;
  /* overflow holds 1 + the step that overflowed, so that this step's own overflows (which must
   * not stop its counting) are told from an earlier step's, whose frontier was not all written */
  const uint flag = state[2];
  if (flag != 0 && flag <= (uint)step) return;
  if (size > (uint)width) {
    if (i == 0) state[2] = (uint)step + 1;
    return;
  }
  if ((uint)(GROUP_ID * WALK_GROUP) >= size) return; /* the whole group */
  const ulong pair = (uint)i < size ? pairs[i] : 0;
  ulong low = 0, high = 0;
  int kind = 4;
  uint split = 0, other = 0;
  const ulong own = (uint)i < size ? walk_counts(nodes, shape, theta2, heavy, heavy_theta2, pair, &kind, &split, &other, &low, &high) : 0;
  before[LOCAL_ID] = own;
  SYNC_THREADS;
  for (int offset = 1; offset < WALK_GROUP; offset <<= 1) { /* inclusive Hillis-Steele scan */
    const ulong add = LOCAL_ID >= offset ? before[LOCAL_ID - offset] : 0;
    SYNC_THREADS;
    before[LOCAL_ID] += add;
    SYNC_THREADS;
  }
  if (LOCAL_ID == WALK_GROUP - 1) {
    const ulong total = before[LOCAL_ID];
    bases[0] = ATOMIC_ADD(&state[0], WALK_FIELD(total, 0));
    bases[1] = ATOMIC_ADD(&state[1], WALK_FIELD(total, 1));
    bases[2] = ATOMIC_ADD(&state[3 + (step + 1) % 3], WALK_FIELD(total, 2));
  }
  SYNC_THREADS;
  if ((uint)i >= size) return;
  const ulong earlier = before[LOCAL_ID] - own;
  uint m2l_at = bases[0] + WALK_FIELD(earlier, 0), p2p_at = bases[1] + WALK_FIELD(earlier, 1);
  uint next_at = bases[2] + WALK_FIELD(earlier, 2);
  bool overflow = false;
  const uint a = (uint)(pair >> 32);
  if (kind == 0) walk_put(m2l, &m2l_at, m2l_capacity, pair);
  else if (kind == 1) walk_put(p2p, &p2p_at, p2p_capacity, pair);
  else if (kind <= 3) {
    uint c, d, k = 0;
    first_child_pair(kind, a, split, other, &c, &d);
    do {
      uint ks, ko;
      const int kk = kept_kind(low, high, k++, c, d, &ks, &ko);
      const ulong kid = ((ulong)c << 32) | d;
      if (kk == 0) walk_put(m2l, &m2l_at, m2l_capacity, kid);
      else if (kk == 1) walk_put(p2p, &p2p_at, p2p_capacity, kid);
      else if (kk <= 3) {
        uint e, f;
        first_child_pair(kk, c, ks, ko, &e, &f);
        do overflow |= !walk_put(next, &next_at, next_capacity, ((ulong)e << 32) | f);
        while (next_child_pair(nodes, kk, c, ks, &e, &f));
      }
    } while (next_child_pair(nodes, kind, a, split, &c, &d));
  }
  if (overflow) state[2] = (uint)step + 1; /* every writer stores the same value */
}

/* M2L's schedule: the nodes longest list first, as sort keys (LIST_LIMIT - length) << shift | node
 * (shift: the bits of a node index; lengths past LIST_LIMIT, SCHEDULE_LENGTH_BITS ones, count
 * as LIST_LIMIT), for every node slot of the solver's arrays: the slots past the tree's nodes
 * have empty lists and higher indices, so the tree's nodes take the schedule's first places. The lists'
 * lengths vary several-fold between neighbouring nodes (leaves and cells, deep and shallow),
 * and the work-items of a sub-group run as long as the longest of them: in node order a
 * sub-group kept 44% of its lanes busy on a 1M-body Plummer sphere, in this order 99.9%. The keys
 * are distinct, so the order is the same every run. */
#define LIST_LIMIT ((1u << SCHEDULE_LENGTH_BITS) - 1)
KERNEL void m2l_schedule(const int node_slots, const int shift, GLOBAL const uint* RESTRICT m2l_start,
                         GLOBAL ulong* RESTRICT keys) {
  const int i = GLOBAL_ID;
  if (i >= node_slots) return;
  const uint length = MIN(m2l_start[i + 1] - m2l_start[i], LIST_LIMIT);
  keys[i] = ((ulong)(LIST_LIMIT - length) << shift) | (ulong)i;
}

/* M2L_LANES work-items per target node (a power of two dividing M2L_GROUP, within one
 * sub-group), the targets in the schedule's order (sorted m2l_schedule keys): work-item k of a
 * target takes its list's sources k, k + M2L_LANES, ..., so that a long list spreads over
 * several work-items, and the work-items' partial expansions are then summed term by term in
 * work-item order through local memory, M2L_REDUCE terms a round. */
#define M2L_REDUCE 8
KERNEL LAUNCH_BOUNDS(M2L_GROUP, 1)
void m2l(GLOBAL const uint* RESTRICT state, const int shift, GLOBAL const ulong* RESTRICT schedule,
         GLOBAL const uint* RESTRICT m2l_start, GLOBAL const uint* RESTRICT m2l_source,
         GLOBAL const accum* RESTRICT centre, const expansion eps2,
         GLOBAL const expansion* RESTRICT multipole, GLOBAL expansion* RESTRICT field) {
  LOCAL expansion partial[M2L_REDUCE * M2L_GROUP];
  const int slot = GLOBAL_ID / M2L_LANES, lane = LOCAL_ID % M2L_LANES;
  const int node_count = (int)state[STATE_NODES];
  /* a group's targets: [GROUP_ID * M2L_GROUP / M2L_LANES, ...), the last group's may run past */
  if (GROUP_ID * (M2L_GROUP / M2L_LANES) >= node_count) return; /* the whole group */
  const bool active = slot < node_count;
  const uint i = active ? (uint)(schedule[slot] & ((1UL << shift) - 1)) : 0;
  expansion L[TERMS];
  for (int q = 0; q < TERMS; ++q) L[q] = 0;
  const accum z0 = centre[3 * i], z1 = centre[3 * i + 1], z2 = centre[3 * i + 2];
  const uint end = active ? m2l_start[i + 1] : 0;
  for (uint s = m2l_start[i] + (uint)lane; s < end; s += M2L_LANES) {
    const uint j = m2l_source[s];
    GLOBAL const expansion_pack* RESTRICT from = (GLOBAL const expansion_pack*)(multipole + (ulong)j * MULTIPOLE_STRIDE);
#ifdef M2L_STREAMED
    m2l_accumulate((expansion)(z0 - centre[3 * j]), (expansion)(z1 - centre[3 * j + 1]),
                   (expansion)(z2 - centre[3 * j + 2]), eps2, from, L);
#else
    expansion S[MULTIPOLE_STRIDE];
    for (int v = 0; v < MULTIPOLE_STRIDE / PACK_WIDTH; ++v) {
      const expansion_pack pack = from[v];
      S[PACK_WIDTH * v] = pack.x;
      S[PACK_WIDTH * v + 1] = pack.y;
#if PACK_WIDTH == 4
      S[PACK_WIDTH * v + 2] = pack.z;
      S[PACK_WIDTH * v + 3] = pack.w;
#endif
    }
    m2l_accumulate((expansion)(z0 - centre[3 * j]), (expansion)(z1 - centre[3 * j + 1]),
                   (expansion)(z2 - centre[3 * j + 2]), eps2, S, L);
#endif
  }
  for (int q0 = 0; q0 < TERMS; q0 += M2L_REDUCE) {
    for (int r = 0; r < M2L_REDUCE; ++r)
      if (q0 + r < TERMS) partial[r * M2L_GROUP + LOCAL_ID] = L[q0 + r];
    SYNC_THREADS;
    if (active)
      for (int r = lane; r < M2L_REDUCE && q0 + r < TERMS; r += M2L_LANES) {
        const int first = LOCAL_ID - lane; /* the target's work-item 0 */
        expansion sum = 0;
        for (int k = 0; k < M2L_LANES; ++k) sum += partial[r * M2L_GROUP + first + k];
        field[(ulong)i * TERMS + q0 + r] = sum;
      }
    SYNC_THREADS;
  }
}

/* The nodes of one cell level below the root, shallowest first (a parent's cell is shallower,
 * so its local expansion is final): each adds its parent's local expansion re-expanded about its
 * own centre. */
KERNEL void l2l(const int level, GLOBAL const uint* RESTRICT state, GLOBAL const uint* RESTRICT levels,
                GLOBAL const uint* RESTRICT parent, GLOBAL const accum* RESTRICT centre,
                GLOBAL expansion* RESTRICT field) {
  const int c = GLOBAL_ID;
  if (c >= (int)state[STATE_NODES] || (int)levels[c] != level) return;
  const uint p = parent[c];
  expansion t[TERMS];
  monomials((expansion)(centre[3 * c] - centre[3 * p]), (expansion)(centre[3 * c + 1] - centre[3 * p + 1]),
            (expansion)(centre[3 * c + 2] - centre[3 * p + 2]), t);
  l2l_accumulate(t, field + (ulong)p * TERMS, field + (ulong)c * TERMS);
}

/* P2P, one work-group of P2P_GROUP work-items per leaf. The sources - the own leaf, then its P2P
 * leaves in list order - are one sequence of runs (run 0 the own leaf, run r the leaf of list
 * entry r - 1) that streams through local memory in tiles of P2P_TILE bodies filled across run
 * boundaries; a source is read from global memory once per group instead of once per target.
 *   Targets: the leaf's bodies are taken in batches of b <= P2P_GROUP * P2P_TARGETS targets
 * (p2p_batch: one or two for a leaf within the capacity, more when coincident bodies overfill
 * it; each batch streams all the sources). A lane holds P2P_TARGETS targets, so that one
 * local-memory read of a source feeds that many pairs (direct.cl's TARGETS), and the group's
 * lanes split each batch's sources: rows = ceil(b / P2P_TARGETS) lanes a part, parts =
 * P2P_GROUP / rows; lane l takes the targets l % rows + t rows (t < P2P_TARGETS) and part
 * l / rows, a consecutive share of the tile's slots (the lanes past parts * rows wait). A leaf
 * of ~19 bodies thus keeps 57 of 64 lanes busy at one target a lane (3 lanes a target), 60 at
 * two (10 rows, 6 parts).
 *   The loop is direct.cl's (softened_pair.cl's pair_term): the body itself adds exact zeros
 * (d = 0) with softening, and is dropped by its place in the stream only where it would not
 * (P2P_MASK_SELF: the potential, or no softening).
 *   Filling: the group reads a window of P2P_GROUP runs at once (lane l: run w + l's first body
 * and count, two independent loads per lane rather than a dependent pair per run in turn), an
 * inclusive scan of the counts in local memory (log2 P2P_GROUP barrier steps) places each run's
 * bodies in the stream, and each tile slot finds its run by a binary search of the scan; a new
 * window is read when the stream has passed the last one's bodies. Every lane keeps the same
 * cursors (window, position, bodies streamed), read from the same local memory, so all barriers
 * are reached uniformly.
 * Determinism: each part sums its slots in stream order (the tile boundaries follow from the
 * lists and P2P_TILE alone); the lane of part 0 then adds the other parts' sums in part order
 * through local memory and stores the body's result. Nothing is contended, no atomics, so the
 * bits depend only on the lists and the defines (P2P_GROUP, P2P_TARGETS, P2P_TILE,
 * P2P_SPLIT_COST, P2P_MOST_PARTS): the same run to run.
 * The pairs are exactly the lists' (the own leaf, whose body itself adds nothing, then each
 * listed leaf); the order differs from cpu-fmm's by rounding only.
 * L2P is a kernel of its own (l2p_bodies), so that its monomials (TERMS values a body) do not
 * take registers from this loop.
 *   P2P_VJP (fmm_vjp.cl's program): the same kernel is vjp_p2p, P2P transposed. Each source's
 * cotangent row (`cotangent`, key order) streams beside it in a second tile, a target holds its
 * own row too, the pair term is softened_pair.cl's pair_vjp_term, and the lane of part 0 passes
 * the body's sum to fmm_vjp.cl's vjp_p2p_row, which adds the far field's and the cube's
 * cotangents and stores it. The body itself is always passed as such (pair_vjp_term drops its
 * potential's term and, without softening, its d = 0). */
/* The targets of the next batch when `left` of the leaf's `count` bodies are still to sum:
 * P2P_BATCH (P2P_GROUP * P2P_TARGETS) while that many are left; the rest (fewer) in one batch
 * or, where P2P_SPLIT_COST is defined and that saves more than it costs, in two: the largest
 * power of two in it, which divides the group (every lane busy), then what remains (fewer
 * still, so more parts). Each batch streams all the sources S: a lane takes S / parts sums, and
 * a pass costs about P2P_SPLIT_COST lane-sums per P2P_GROUP sources more in tile filling (at one
 * target a lane, 19 bodies in a group of 32: 16 x 2 then 3 x 10 lanes, S/2 + S/10 + 2S/32 steps
 * instead of S). */
/* Parts of a batch of b targets: all the group's (P2P_GROUP / rows), or at most P2P_MOST_PARTS
 * where the host limits them (fewer slots read at once from the tile). */
/* Lanes a part of a batch of b targets: one per P2P_TARGETS of them. */
DEVICE uint p2p_rows(const uint batch) { return (batch + P2P_TARGETS - 1) / P2P_TARGETS; }

DEVICE uint p2p_parts(const uint batch) {
#ifdef P2P_MOST_PARTS
  return MIN((uint)P2P_GROUP / p2p_rows(batch), (uint)P2P_MOST_PARTS);
#else
  return (uint)P2P_GROUP / p2p_rows(batch);
#endif
}

#define P2P_BATCH (P2P_GROUP * P2P_TARGETS)
DEVICE uint p2p_batch(const uint count, const uint left) {
  if (left >= (uint)P2P_BATCH) return P2P_BATCH;
#ifdef P2P_SPLIT_COST
  if (left == count % (uint)P2P_BATCH) {
    uint power = 1;
    while (2 * power <= left) power *= 2;
    if (power < left) {
      /* 1/first + 1/rest + cost/G < 1/whole in lanes a target, times G first rest whole */
      const uint whole = p2p_parts(left), first = p2p_parts(power), rest = p2p_parts(left - power);
      if (P2P_GROUP * whole * (rest + first) + (uint)P2P_SPLIT_COST * first * rest * whole < P2P_GROUP * first * rest)
        return power;
    }
  }
#endif
  return left;
}

/* Residency (CUDA): half a multiprocessor's threads (32 groups of 32, 16 of 64) caps a thread at
 * 64 registers, which the float32 loop fits at one or two targets a lane (float64 asks for half
 * as many threads). */
#define P2P_RESIDENT_GROUPS ((REAL_BITS == 32 ? 1024 : 512) / P2P_GROUP)
/* Stream position `position` is target t itself (the own leaf is the stream's first run), a
 * term to drop where it would not vanish (P2P_MASK_SELF: the potential, or no softening). */
#if defined(P2P_MASK_SELF) || defined(P2P_VJP)
#define P2P_SELF(position, t) ((position) == self[t])
#else
#define P2P_SELF(position, t) false
#endif
#ifdef P2P_VJP
#define P2P_KERNEL vjp_p2p
/* fmm_vjp.cl's: the body's row of the output from its pair sum `sum` (its caller index k) */
DEVICE void vjp_p2p_row(const real4 sum, const uint k, GLOBAL const accum* RESTRICT cube_bar,
                        GLOBAL const int* RESTRICT cube_index, GLOBAL real4* RESTRICT out);
#else
#define P2P_KERNEL p2p
#endif
KERNEL LAUNCH_BOUNDS(P2P_GROUP, P2P_RESIDENT_GROUPS)
void P2P_KERNEL(GLOBAL const real4* RESTRICT body, GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                GLOBAL const uint* RESTRICT p2p_start, GLOBAL const uint* RESTRICT p2p_source, const real eps2,
                GLOBAL const uint* RESTRICT order,
#ifdef P2P_VJP
                GLOBAL const real4* RESTRICT cotangent, GLOBAL const accum* RESTRICT cube_bar,
                GLOBAL const int* RESTRICT cube_index,
#endif
                GLOBAL real4* RESTRICT out) {
  LOCAL real4 tile[P2P_TILE];
#ifdef P2P_VJP
  LOCAL real4 tile_bar[P2P_TILE]; /* the sources' cotangent rows */
#endif
  LOCAL uint run_first[P2P_GROUP];   /* the window's runs: first body */
  LOCAL uint run_end[2][P2P_GROUP];  /* the scan's two buffers: bodies up to each run's end */
  LOCAL real4 partial[P2P_TARGETS][P2P_GROUP]; /* each lane's part of its targets' sums */
  const uint lane = (uint)LOCAL_ID;
  const int leaf = GROUP_ID;
  if (leaf >= (int)state[STATE_NODES] || nodes[leaf].skip != (uint)leaf + 1) return;  /* the whole group */
  const uint first = nodes[leaf].first, count = nodes[leaf].count;
  const uint list_first = p2p_start[leaf], runs = 1 + p2p_start[leaf + 1] - list_first;
  /* The window: its first run and its runs, their bodies (scanned into run_end[scanned]); a
   * batch after the first reuses it when it is still the first window (lists of at most
   * P2P_GROUP leaves, the usual case). */
  uint window = 0, window_runs = 0, window_bodies = 0, scanned = 0;
  for (uint base = 0, batch = 0; base < count; base += batch) {
    batch = p2p_batch(count, count - base);
    const uint parts = p2p_parts(batch), rows = p2p_rows(batch);
    const uint part = lane / rows, row = lane % rows;
    const bool active = part < parts;
    /* the lane's targets: places row, row + rows, ... in the batch (self: in the leaf); a place
     * past the batch repeats the batch's first body and is not stored */
    uint self[P2P_TARGETS];
    real4 target[P2P_TARGETS], a[P2P_TARGETS];
#ifdef P2P_VJP
    real4 own[P2P_TARGETS];
#endif
#pragma unroll
    for (int t = 0; t < P2P_TARGETS; ++t) {
      const uint place = row + (uint)t * rows;
      self[t] = base + (place < batch ? place : 0);
      target[t] = body[first + self[t]];
#ifdef P2P_VJP
      own[t] = cotangent[first + self[t]];
#endif
      a[t] = MAKE_REAL4(0, 0, 0, 0);
    }
    if (window != 0) window = window_runs = window_bodies = 0;
    /* The stream's cursor: the position in the window's bodies; `streamed` counts the bodies
     * before this tile. */
    uint at = 0, streamed = 0;
    for (;;) {
      uint filled = 0;
      while (filled < P2P_TILE) {
        if (at == window_bodies) {
          if (window + window_runs >= runs) break;
          window += window_runs;
          window_runs = MIN((uint)P2P_GROUP, runs - window);
          SYNC_THREADS; /* every lane has done with the last window */
          uint from = 0, bodies = 0;
          if (lane < window_runs) {
            const uint run = window + lane, source = run == 0 ? (uint)leaf : p2p_source[list_first + run - 1];
            from = nodes[source].first;
            bodies = nodes[source].count;
          }
          run_first[lane] = from;
          run_end[0][lane] = bodies;
          scanned = 0;
          SYNC_THREADS;
          for (uint step = 1; step < (uint)P2P_GROUP; step <<= 1) {
            const uint sum = run_end[scanned][lane] + (lane >= step ? run_end[scanned][lane - step] : 0);
            run_end[scanned ^ 1][lane] = sum;
            scanned ^= 1;
            SYNC_THREADS;
          }
          window_bodies = run_end[scanned][P2P_GROUP - 1];
          at = 0;
          continue;
        }
        const uint take = MIN((uint)P2P_TILE - filled, window_bodies - at);
        /* a fixed count of slots a lane (P2P_TILE is a multiple of P2P_GROUP), so that the
         * compiler may issue their loads together, four at a time (eight spill on CUDA) */
#pragma unroll 4
        for (uint i = 0; i < (uint)(P2P_TILE / P2P_GROUP); ++i) {
          const uint slot = lane + i * P2P_GROUP;
          if (slot >= take) break;
          /* the run holding stream position `at + slot`: the first whose end is past it */
          const uint position = at + slot;
          uint low = 0, high = window_runs - 1;
          while (low < high) {
            const uint middle = (low + high) / 2;
            if (run_end[scanned][middle] > position) high = middle;
            else low = middle + 1;
          }
          const uint before = low > 0 ? run_end[scanned][low - 1] : 0;
          const uint source = run_first[low] + position - before;
          tile[filled + slot] = body[source];
#ifdef P2P_VJP
          tile_bar[filled + slot] = cotangent[source];
#endif
        }
        filled += take;
        at += take;
      }
      if (filled == 0) break;
      SYNC_THREADS;
      if (active) {
        /* the part's slots, consecutive (the unrolled loop reads them at fixed offsets) */
        const uint share = (filled + parts - 1) / parts;
        const uint from = MIN(part * share, filled), to = MIN(from + share, filled);
#pragma unroll 4
        for (uint k = from; k < to; ++k) {
          const real4 source = tile[k];
#ifdef P2P_VJP
          const real4 bar = tile_bar[k];
#pragma unroll
          for (int t = 0; t < P2P_TARGETS; ++t)
            a[t] = pair_vjp_term(a[t], target[t], own[t], source, bar, eps2, P2P_SELF(streamed + k, t));
#else
#pragma unroll
          for (int t = 0; t < P2P_TARGETS; ++t)
            a[t] = pair_term(a[t], source, target[t].x, target[t].y, target[t].z, eps2, P2P_SELF(streamed + k, t));
#endif
        }
      }
      streamed += filled;
      SYNC_THREADS;
    }
    /* the parts' sums, in part order, by the lane of part 0 */
#pragma unroll
    for (int t = 0; t < P2P_TARGETS; ++t) partial[t][lane] = a[t];
    SYNC_THREADS;
    if (part == 0) {
#pragma unroll
      for (int t = 0; t < P2P_TARGETS; ++t) {
        for (uint other = 1; other < parts; ++other) {
          const real4 more = partial[t][lane + other * rows];
          a[t].x += more.x;
          a[t].y += more.y;
          a[t].z += more.z;
          a[t].w += more.w;
        }
#ifdef P2P_VJP
        if (row + (uint)t * rows < batch) vjp_p2p_row(a[t], order[first + self[t]], cube_bar, cube_index, out);
#else
        if (row + (uint)t * rows < batch) out[order[first + self[t]]] = a[t];
#endif
      }
    }
    SYNC_THREADS; /* partial is free for the next batch */
  }
}

/* L2P: each body adds its leaf's local expansion to its pairwise sum, which p2p wrote at its
 * place in the caller's order, out[order[p]], rounding once: real(accum(pair sum) + far field),
 * written back there. One work-group per leaf, as p2p. (No key-ordered array of pair sums: 16
 * bytes a body in float32 that the scattered read and write save, docs/adr/0339.) */
KERNEL void l2p_bodies(GLOBAL const uint* RESTRICT state, GLOBAL const TreeNode* RESTRICT nodes,
                       GLOBAL const real4* RESTRICT body, GLOBAL const accum* RESTRICT centre,
                       GLOBAL const expansion* RESTRICT field, GLOBAL const uint* RESTRICT order,
                       GLOBAL real4* RESTRICT out) {
  const int leaf = GROUP_ID;
  if (leaf >= (int)state[STATE_NODES] || nodes[leaf].skip != (uint)leaf + 1) return;
  const uint end = nodes[leaf].first + nodes[leaf].count;
  for (uint p = nodes[leaf].first + (uint)LOCAL_ID; p < end; p += (uint)LOCAL_SIZE) {
    const uint place = order[p];
    const real4 target = body[p], near = out[place];
    expansion t[TERMS], f[4];
    monomials((expansion)((accum)target.x - centre[3 * leaf]), (expansion)((accum)target.y - centre[3 * leaf + 1]),
              (expansion)((accum)target.z - centre[3 * leaf + 2]), t);
    l2p(t, field + (ulong)leaf * TERMS, f);
#ifndef WITH_POTENTIAL
    f[3] = 0;
#endif
    out[place] = MAKE_REAL4((real)((accum)near.x + (accum)f[0]), (real)((accum)near.y + (accum)f[1]),
                           (real)((accum)near.z + (accum)f[2]), (real)((accum)near.w + (accum)f[3]));
  }
}
