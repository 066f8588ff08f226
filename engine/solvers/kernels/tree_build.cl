/* tree_build.cl: the octree topology from sorted Morton keys, in parallel, in depth-first order.
 *
 * The tree is cpu-tree's (native/octree.cpp): a node's cell is the smallest Morton cell holding
 * its bodies; a node with more than LEAF_CAPACITY bodies and distinct keys has one child per
 * non-empty octant at the next level, in key order. A node's bodies are exactly the keys that
 * share its cell's prefix, so every range is found by a search over the sorted keys.
 *
 * Depth-first order without a recursion: the nodes whose range begins at body p form a chain
 * (a node, its first child, that child's first child, ... down to a leaf), and in depth-first
 * order a node comes after every node that begins before p and after its own chain ancestors.
 * So with c(p) the chain's length and S the exclusive prefix sum of c, the chain at p occupies
 * indices S(p), S(p) + 1, ..., and a node ending at e has skip = S(e) (S(count) = node count).
 * node_chain_lengths writes c, scan.cl gives S, node_chains writes the nodes.
 * A chain starts at p > 0 only where keys[p-1] != keys[p]; its parent is the cell at level
 * common_level(keys[p-1], keys[p]), which has children only when it holds more than
 * LEAF_CAPACITY bodies (its ancestors then hold more too, so all of them were split).
 * Also lists the walk groups as cpu-tree's walk finds them: the outermost nodes with at most
 * GROUP_CAPACITY bodies, or leaves. Groups are disjoint, so a chain holds at most one and the
 * groups in depth-first order are the groups in the order of their first bodies: with g(p) = 1
 * where the chain at p holds a group and G its exclusive prefix sum, that group is groups[G(p)]
 * (G(count) = group count). Without the host define GROUP_CAPACITY (gpu-fmm, whose passes take
 * no groups) nothing of them is computed or written: group_marks and groups may be any array.
 * The node arrays hold node_capacity nodes (2 count - 1 can be needed; gpu-fmm plans fewer): a
 * node past them is not written, and its index is still counted, so starts[count] tells the host
 * the tree it must build again with room.
 * Both totals stay on the device (starts[count], group_starts[count]): the kernels that follow
 * read them there, so a build queues without waiting for the device (ADR 0162). So does the
 * mask of the cell levels that hold nodes (bit l for level l), which a caller that reads the
 * node count anyway (gpu-fmm) reads with it, to launch its level passes only where nodes are.
 * Needs tree_common.cl first. Host defines: LEAF_CAPACITY, GROUP_CAPACITY (or none: no groups). */

/* The first index in [p, count) whose key does not share `digits` octal digits with keys[p]. */
DEVICE int run_end(GLOBAL const ulong* RESTRICT keys, const int count, const int p, const int digits) {
  if (digits == 0) return count;
  const int shift = 3 * (MORTON_LEVELS - digits);
  const ulong prefix = keys[p] >> shift;
  int inside = p, step = 1;
  while (inside + step < count && (keys[inside + step] >> shift) == prefix) {
    inside += step;
    step <<= 1;
  }
  int outside = MIN(count, inside + step);
  while (outside - inside > 1) {
    const int middle = inside + (outside - inside) / 2;
    if ((keys[middle] >> shift) == prefix) inside = middle;
    else outside = middle;
  }
  return outside;
}

/* The first index in [0, p] whose key shares `digits` octal digits with keys[p]. */
DEVICE int run_begin(GLOBAL const ulong* RESTRICT keys, const int p, const int digits) {
  if (digits == 0) return 0;
  const int shift = 3 * (MORTON_LEVELS - digits);
  const ulong prefix = keys[p] >> shift;
  int inside = p, step = 1;
  while (inside - step >= 0 && (keys[inside - step] >> shift) == prefix) {
    inside -= step;
    step <<= 1;
  }
  int outside = MAX(-1, inside - step);
  while (inside - outside > 1) {
    const int middle = outside + (inside - outside) / 2;
    if ((keys[middle] >> shift) == prefix) inside = middle;
    else outside = middle;
  }
  return inside;
}

/* Walks the chain of nodes beginning at body p; writes them (and its group's entry in `groups`)
 * when `nodes` is given. Returns the chain's length; *grouped = 1 when the chain holds a walk
 * group; *used has bit l set for each of its nodes' cell levels l. */
DEVICE uint node_chain(GLOBAL const ulong* RESTRICT keys, const int count, const int p,
                       GLOBAL const uint* RESTRICT starts, GLOBAL const uint* RESTRICT group_starts,
                       const uint node_capacity, GLOBAL TreeNode* RESTRICT nodes, GLOBAL uint* RESTRICT levels,
                       GLOBAL uint* RESTRICT groups, uint* grouped, uint* used) {
  *grouped = 0;
  *used = 0;
  int end;
  uint parent_count;
  if (p == 0) {
    end = count;
    parent_count = 0xffffffffu;
  } else {
    const ulong previous = keys[p - 1], key = keys[p];
    if (previous == key) return 0;
    const int parent_level = common_level(previous, key);
    parent_count = (uint)(run_end(keys, count, p, parent_level) - run_begin(keys, p, parent_level));
    if (parent_count <= LEAF_CAPACITY) return 0;
    end = run_end(keys, count, p, parent_level + 1);
  }
  uint made = 0;
  for (;;) {
    const int level = common_level(keys[p], keys[end - 1]);
    const uint bodies = (uint)(end - p);
    const int leaf = bodies <= LEAF_CAPACITY || level == MORTON_LEVELS;
#ifdef GROUP_CAPACITY
    const int group = (bodies <= GROUP_CAPACITY || leaf) && parent_count > GROUP_CAPACITY;
    if (group) *grouped = 1;
#endif
    *used |= 1u << level;
    const uint index = nodes ? starts[p] + made : 0u;
    if (nodes && index < node_capacity) {
      TreeNode node;
      node.cx = 0;
      node.cy = 0;
      node.cz = 0;
      node.mass = 0;
      node.open2 = 0;
      node.skip = starts[end];
      node.first = (uint)p;
      node.count = bodies;
      nodes[index] = node;
      levels[index] = (uint)level;
#ifdef GROUP_CAPACITY
      if (group) groups[group_starts[p]] = index;
#endif
    }
    ++made;
    if (leaf) return made;
    parent_count = bodies;
    end = run_end(keys, count, p, level + 1);
  }
}

/* lengths[p] = number of nodes whose range begins at body p; group_marks[p] = g(p); clears
 * the level mask that node_chains fills. */
KERNEL void node_chain_lengths(GLOBAL const ulong* RESTRICT keys, const int count,
                               GLOBAL uint* RESTRICT lengths, GLOBAL uint* RESTRICT group_marks,
                               GLOBAL uint* RESTRICT level_mask) {
  const int p = GLOBAL_ID;
  if (p == 0) level_mask[0] = 0;
  if (p >= count) return;
  uint grouped, used;
  lengths[p] = node_chain(keys, count, p, 0, 0, 0u, 0, 0, 0, &grouped, &used);
#ifdef GROUP_CAPACITY
  group_marks[p] = grouped;
#endif
}

/* Writes every node's topology (skip, first, count) and cell level, and the walk groups, and
 * ors the chains' levels into level_mask (an atomic only where a bit is still missing: after the
 * first few chains none is, and the rest only read the word; most bodies begin no chain and
 * read nothing). */
KERNEL void node_chains(GLOBAL const ulong* RESTRICT keys, const int count,
                        GLOBAL const uint* RESTRICT starts, GLOBAL const uint* RESTRICT group_starts,
                        const uint node_capacity, GLOBAL TreeNode* RESTRICT nodes, GLOBAL uint* RESTRICT levels,
                        GLOBAL uint* RESTRICT groups, GLOBAL uint* RESTRICT level_mask) {
  const int p = GLOBAL_ID;
  if (p >= count) return;
  uint grouped, used;
  node_chain(keys, count, p, starts, group_starts, node_capacity, nodes, levels, groups, &grouped, &used);
  if (used != 0 && (level_mask[0] & used) != used) ATOMIC_OR(level_mask, used);
}

/* entry[0] = values[index], entry[1] = level_mask[0]: one read back (the node or group count and
 * the level mask, when the host asks) without the arrays. */
KERNEL void read_entry(GLOBAL const uint* RESTRICT values, const int index,
                       GLOBAL const uint* RESTRICT level_mask, GLOBAL uint* RESTRICT entry) {
  if (GLOBAL_ID == 0) {
    entry[0] = values[index];
    entry[1] = level_mask[0];
  }
}
