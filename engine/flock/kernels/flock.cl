/* flock.cl: one boids (Reynolds flocking) step on a device, with three neighbour searches.
 *
 * Algorithm (the study's, engine/flock/reference.py states the rule math step by step):
 *   scattered search (the state stays in boid order):
 *   flock_cell_keys    key[i] = boid i's cell, (cz * G + cy) * G + cx (32 bits); order[i] = i
 *   (sort)             (key, order) pairs by key, stable, over the key's significant bits only:
 *                      Context.key_sort() (radix_sort.cl or CuPy's sort on CUDA)
 *   flock_cell_starts  start[c] = first sorted position with key >= c, for c = 0 .. G^3, each
 *                      sorted position filling the cells after its predecessor's key
 *   flock_scattered    one work-item per boid, neighbours read through order[]
 *   coherent search (the state stays in cell order, a counting placement instead of a sort):
 *   flock_clear, flock_cell_ranks
 *                      counts[c] = boids in cell c, key[k] = slot k's cell and rank[k] = its
 *                      place among them (an atomic increment): only when no rule kernel wrote
 *                      them (the first step of a run of coherent steps, or a new grid)
 *   (scan)             start = exclusive prefix sum of counts (scan.cl through DeviceScan):
 *                      the cell table, start[G^3] = n
 *   flock_place        slot k's row and boid id moved to start[key[k]] + rank[k], counts zeroed
 *   flock_coherent     one work-item per slot: the rules, the row written where it was read,
 *                      and the next step's key, rank and counts from the new position
 *   flock_naive        every boid against every boid (the yardstick)
 *   flock_unsort       rows in cell order back into boid order, when the host reads the state
 * The naive and scattered kernels write pos_out / vel_out in the state's (boid) order; the
 * coherent one reads the placed copies, contiguous per cell, and leaves the state in cell
 * order (engine/flock/_device.py). State stays on the device between steps.
 *
 * Host defines: REAL_BITS 64 (for double arithmetic; `real` is unused), FLOCK_CELL_WIDTH
 * (1: the 27 cells around a boid's own, 2: the 8 towards its position in the cell),
 * FLOCK_GROUP (the work-group size every launch uses) and FLOCK_RESIDENT_GROUPS (the rule
 * kernels' groups per multiprocessor that CUDA caps registers for). The rule constants come
 * in one double array (indices C_*), so editing a rule does not recompile.
 *
 * Speed: a candidate neighbour costs float32 work only. Sums are kept as float32 partial sums
 * of at most FLUSH_EVERY terms and added into the float64 totals once per chunk of candidates
 * (a float32 -> float64 conversion runs at a fraction of the float32 rate on GPUs); a
 * neighbour's velocity is loaded only when it is within the alignment radius; the boid itself
 * is visited like any candidate and taken back out once (no test per candidate); the rule
 * constants are read into registers once per work-item; a sub-group whose boids' cells
 * touch no face of the box (grids of 5 or more cells a side) skips the nearest-image test,
 * which cannot change an offset of less than two cells.
 *
 * Determinism: positions and velocities lie on fixed-point grids (the world is a multiple of
 * the position quantum), so offsets are exact in float32, partial sums of FLUSH_EVERY terms
 * are exact in float32 and the float64 totals are exact: the order work-items visit neighbours
 * in, or where the placement puts a boid among its cell's, cannot change a sum (ADR 0095,
 * 0158). Every product goes through MUL_RN (no contraction into FMA); float64 division and
 * sqrt are correctly rounded in OpenCL and CUDA alike. So every search, work-group size and
 * device gives the bits the CPU gives (tests/engine/gpu/test_gpu_flock.py). */

#define C_WORLD 0
#define C_HALF_WORLD 1
#define C_SEPARATION_RADIUS2 2
#define C_ALIGNMENT_RADIUS2 3
#define C_COHESION_RADIUS2 4
#define C_SEPARATION_WEIGHT 5
#define C_ALIGNMENT_WEIGHT 6
#define C_COHESION_WEIGHT 7
#define C_MAX_SPEED 8
#define C_DT 9
#define C_QUANTUM 10
#define C_VELOCITY_QUANTUM 11
#define C_GRID 12
#define C_INVERSE_CELL_WIDTH 13

/* Partial sums of at most FLUSH_EVERY terms stay exact in float32: a term is below 2^19
 * position quanta (an offset, under half the world) or 2^20 velocity quanta (engine/flock/
 * _parameters.py, _quantum), so 16 of them stay below float32's 2^24. */
#define FLUSH_EVERY 16

/* The float64 totals live in local (shared) memory, not registers: TOTALS per work-item,
 * FLOCK_GROUP apart (the separation's x, y, z, then the cohesion's, then the alignment's). They
 * are touched once per FLUSH_EVERY candidates; out of registers (18 of them) they let the rule
 * kernels fit 64 registers with few spills, 32 resident warps per SM on the H200, the fastest
 * cap measured (docs/performance.md, Boids). */
#define TOTALS 9
#define SEPARATION_TOTAL 0
#define COHESION_TOTAL 3
#define ALIGNMENT_TOTAL 6
#define TOTAL(s, index) ((s)->total[(index) * FLOCK_GROUP])

typedef struct {
  float separation[3], cohesion[3], alignment[3];  /* partial: at most FLUSH_EVERY terms */
  LOCAL_ARG double* total;                         /* this work-item's TOTALS */
  int cohesion_count, alignment_count;
} FlockSums;

/* A rule kernel's local totals, and the sums of work-item LOCAL_ID cleared. */
#define FLOCK_SUMS(s)                                                                        \
  LOCAL double totals[TOTALS * FLOCK_GROUP];                                                 \
  FlockSums s;                                                                               \
  s.total = totals + LOCAL_ID;                                                               \
  clear(&s)

/* What a neighbour test reads, as float32 in registers. */
typedef struct {
  float world, half_world, separation2, alignment2, cohesion2;
} PairConstants;

DEVICE PairConstants pair_constants(GLOBAL const double* RESTRICT c) {
  PairConstants pc;
  pc.world = (float)c[C_WORLD];
  pc.half_world = (float)c[C_HALF_WORLD];
  pc.separation2 = (float)c[C_SEPARATION_RADIUS2];
  pc.alignment2 = (float)c[C_ALIGNMENT_RADIUS2];
  pc.cohesion2 = (float)c[C_COHESION_RADIUS2];
  return pc;
}

/* Selects, not branches (the CPU lanes' sequence): after the first, d > -half_world still. */
DEVICE float nearest_image(float d, float world, float half_world) {
  d = d > half_world ? d - world : d;
  return d < -half_world ? d + world : d;
}

/* Neighbour j (position pj, velocity vel[j]) of the boid at pi. `wrap`: apply the nearest
 * image; without it the offsets must already be the nearest ones. */
DEVICE void accumulate(FlockSums* s, const PairConstants* pc, float4 pi, float4 pj,
                       GLOBAL const float4* RESTRICT vel, uint j, bool wrap) {
  float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
  if (wrap) {
    dx = nearest_image(dx, pc->world, pc->half_world);
    dy = nearest_image(dy, pc->world, pc->half_world);
    dz = nearest_image(dz, pc->world, pc->half_world);
  }
  const float r2 = MUL_RN(dx, dx) + MUL_RN(dy, dy) + MUL_RN(dz, dz);
  if (r2 < pc->separation2) {
    s->separation[0] += dx;
    s->separation[1] += dy;
    s->separation[2] += dz;
  }
  if (r2 < pc->cohesion2) {
    s->cohesion[0] += dx;
    s->cohesion[1] += dy;
    s->cohesion[2] += dz;
    s->cohesion_count += 1;
  }
  if (r2 < pc->alignment2) {
    const float4 vj = vel[j];
    s->alignment[0] += vj.x;
    s->alignment[1] += vj.y;
    s->alignment[2] += vj.z;
    s->alignment_count += 1;
  }
}

/* The boid met itself (offset 0) inside every positive radius: take its velocity and its
 * counts back out, exactly (the velocity is a multiple of the velocity quantum, as the sum is),
 * as native/flock_kernel.hpp does. Separation added an offset of 0. */
DEVICE void forget_self(FlockSums* s, const PairConstants* pc, float4 v) {
  if (0.0f < pc->alignment2) {
    TOTAL(s, ALIGNMENT_TOTAL + 0) -= (double)v.x;
    TOTAL(s, ALIGNMENT_TOTAL + 1) -= (double)v.y;
    TOTAL(s, ALIGNMENT_TOTAL + 2) -= (double)v.z;
    s->alignment_count -= 1;
  }
  if (0.0f < pc->cohesion2) s->cohesion_count -= 1;
}

/* Adds the partial sums into the float64 totals (exactly) and clears them. */
DEVICE void flush(FlockSums* s) {
  for (int k = 0; k < 3; ++k) {
    TOTAL(s, SEPARATION_TOTAL + k) += (double)s->separation[k];
    TOTAL(s, COHESION_TOTAL + k) += (double)s->cohesion[k];
    TOTAL(s, ALIGNMENT_TOTAL + k) += (double)s->alignment[k];
    s->separation[k] = s->cohesion[k] = s->alignment[k] = 0.0f;
  }
}

DEVICE double quantise(double x, double quantum) { return MUL_RN(rint(MUL_RN(x, 1.0 / quantum)), quantum); }

/* The new velocity and position from the sums, written to row i; returns the position. */
DEVICE float4 finish(const FlockSums* s, GLOBAL const double* RESTRICT c, float4 p, float4 v,
                     GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out, int i) {
  const double dt = c[C_DT], world = c[C_WORLD], max_speed = c[C_MAX_SPEED];
  const double v0[3] = {v.x, v.y, v.z};
  const double p0[3] = {p.x, p.y, p.z};
  double w[3];
  for (int k = 0; k < 3; ++k) {
    double a = -MUL_RN(c[C_SEPARATION_WEIGHT], TOTAL(s, SEPARATION_TOTAL + k));
    if (s->cohesion_count > 0)
      a = a + MUL_RN(c[C_COHESION_WEIGHT],
                     TOTAL(s, COHESION_TOTAL + k) / (double)s->cohesion_count);
    if (s->alignment_count > 0)
      a = a + MUL_RN(c[C_ALIGNMENT_WEIGHT],
                     TOTAL(s, ALIGNMENT_TOTAL + k) / (double)s->alignment_count - v0[k]);
    w[k] = v0[k] + MUL_RN(dt, a);
  }
  const double s2 = MUL_RN(w[0], w[0]) + MUL_RN(w[1], w[1]) + MUL_RN(w[2], w[2]);
  if (s2 > MUL_RN(max_speed, max_speed)) {
    const double scale = max_speed / sqrt(s2);
    for (int k = 0; k < 3; ++k) w[k] = MUL_RN(w[k], scale);
  }
  float out_v[3], out_p[3];
  for (int k = 0; k < 3; ++k) {
    out_v[k] = (float)quantise(w[k], c[C_VELOCITY_QUANTUM]);
    double x = p0[k] + MUL_RN(dt, (double)out_v[k]);
    if (x < 0) x = x + world;
    if (x >= world) x = x - world;
    x = quantise(x, c[C_QUANTUM]);
    if (x >= world) x = x - world;
    out_p[k] = (float)x;
  }
  float4 velocity, position;
  velocity.x = out_v[0], velocity.y = out_v[1], velocity.z = out_v[2], velocity.w = 0.0f;
  position.x = out_p[0], position.y = out_p[1], position.z = out_p[2], position.w = 0.0f;
  vel_out[i] = velocity;
  pos_out[i] = position;
  return position;
}

DEVICE void clear(FlockSums* s) {
  for (int k = 0; k < 3; ++k) {
    s->separation[k] = s->cohesion[k] = s->alignment[k] = 0.0f;
    TOTAL(s, SEPARATION_TOTAL + k) = TOTAL(s, COHESION_TOTAL + k) = 0.0;
    TOTAL(s, ALIGNMENT_TOTAL + k) = 0.0;
  }
  s->cohesion_count = s->alignment_count = 0;
}

/* The cell of a coordinate scaled by 1 / cell width, clamped into the grid (NaN included) so
 * that bad input never indexes outside the cell table. */
DEVICE int axis_cell(float scaled, int grid) {
  if (!(scaled >= 0.0f)) return 0;
  if (!(scaled < (float)grid)) return grid - 1;
  return (int)scaled;
}

DEVICE int cell_of(float x, GLOBAL const double* RESTRICT c) {
  return axis_cell(MUL_RN(x, (float)c[C_INVERSE_CELL_WIDTH]), (int)c[C_GRID]);
}

/* The cells one axis visits, as the unwrapped range span_lo .. span_hi around the boid's own
 * cell (-1 and G stand for G - 1 and 0 across the seam): with cell width 1 its neighbours on
 * both sides, with width 2 the one towards its place in the cell (native/flock_grid.cpp); on
 * grids of 1 or 2 cells every cell. Kept as the own cell and the place in it (0 .. 1), two
 * registers per axis. */
typedef struct {
  int own;
  float place;
} AxisSpan;

DEVICE AxisSpan axis_span(float x, GLOBAL const double* RESTRICT c) {
  const float scaled = MUL_RN(x, (float)c[C_INVERSE_CELL_WIDTH]);
  AxisSpan a;
  a.own = axis_cell(scaled, (int)c[C_GRID]);
  a.place = MIN(MAX(scaled - (float)a.own, 0.0f), 1.0f);
  return a;
}

/* Cell width 2 visits the neighbour on the side of the cell's half the boid is in. */
DEVICE bool span_low(AxisSpan a) { return FLOCK_CELL_WIDTH == 1 || a.place < 0.5f; }

DEVICE int span_lo(AxisSpan a, int g) { return g <= 2 ? 0 : (span_low(a) ? a.own - 1 : a.own); }

DEVICE int span_hi(AxisSpan a, int g) {
  return g <= 2 ? g - 1 : (FLOCK_CELL_WIDTH == 1 || !span_low(a) ? a.own + 1 : a.own);
}

/* True when the boid at p may have a neighbour across a face of the box: its cell lies on a
 * face on some axis, or the grid is too coarse (under 5 cells a side) for the bound below.
 * Otherwise every visited cell is within one cell of its own without wrapping, so an offset
 * is under 2 cell widths (plus rounding), below half the world: the nearest image is the
 * offset itself. */
DEVICE bool near_face(float4 p, GLOBAL const double* RESTRICT c) {
  const int g = (int)c[C_GRID];
  const int x = cell_of(p.x, c), y = cell_of(p.y, c), z = cell_of(p.z, c);
  return g < 5 || MIN(MIN(x, y), z) < 1 || MAX(MAX(x, y), z) > g - 2;
}

DEVICE uint cell_key(float4 p, GLOBAL const double* RESTRICT c) {
  const uint g = (uint)c[C_GRID];
  return ((uint)cell_of(p.z, c) * g + (uint)cell_of(p.y, c)) * g + (uint)cell_of(p.x, c);
}

KERNEL void flock_cell_keys(GLOBAL const float4* RESTRICT pos, const int n,
                            GLOBAL const double* RESTRICT c, GLOBAL uint* RESTRICT keys,
                            GLOBAL uint* RESTRICT order) {
  const int i = GLOBAL_ID;
  if (i >= n) return;
  keys[i] = cell_key(pos[i], c);
  order[i] = (uint)i;
}

/* Sorted position k (0 .. n) fills the cell table for the cells after its predecessor's key
 * up to its own (k == n: up to the end marker), so every entry is written once, no atomics. */
DEVICE void fill_starts(GLOBAL const uint* RESTRICT keys, int n, int cells,
                        GLOBAL uint* RESTRICT start, int k) {
  const long first = k == 0 ? 0 : (long)keys[k - 1] + 1;
  const long own = k == n ? (long)cells : (long)keys[k];
  for (long cell = first; cell <= own && cell <= cells; ++cell) start[cell] = (uint)k;
}

KERNEL void flock_cell_starts(GLOBAL const uint* RESTRICT keys, const int n, const int cells,
                              GLOBAL uint* RESTRICT start) {
  const int k = GLOBAL_ID;
  if (k > n) return;
  fill_starts(keys, n, cells, start, k);
}

/* The coherent search's counting placement. Every entry of counts (one per cell) is zero
 * before the first rank is taken: flock_clear on a fresh run of coherent steps, flock_place
 * after each scan. */
KERNEL void flock_clear(GLOBAL uint* RESTRICT counts, const int cells) {
  const int cell = GLOBAL_ID;
  if (cell < cells) counts[cell] = 0u;
}

/* Slot k's cell and its place among the cell's boids (the order atomics serve them in: any
 * order, the sums do not depend on it). */
DEVICE void take_rank(uint key, GLOBAL uint* RESTRICT keys, GLOBAL uint* RESTRICT ranks,
                      GLOBAL uint* RESTRICT counts, int k) {
  keys[k] = key;
  ranks[k] = ATOMIC_ADD(&counts[key], 1u);
}

KERNEL void flock_cell_ranks(GLOBAL const float4* RESTRICT pos, const int n,
                             GLOBAL const double* RESTRICT c, GLOBAL uint* RESTRICT keys,
                             GLOBAL uint* RESTRICT ranks, GLOBAL uint* RESTRICT counts) {
  const int k = GLOBAL_ID;
  if (k >= n) return;
  take_rank(cell_key(pos[k], c), keys, ranks, counts, k);
}

/* Slot k's row pair and boid id moved to its placed slot start[key] + rank (start: the scan of
 * counts), and counts cleared for the next ranks (the scan read them before this launch). */
KERNEL void flock_place(GLOBAL const uint* RESTRICT keys, GLOBAL const uint* RESTRICT ranks,
                        GLOBAL const uint* RESTRICT start, GLOBAL const float4* RESTRICT pos,
                        GLOBAL const float4* RESTRICT vel, GLOBAL const uint* RESTRICT ids,
                        const int n, const int cells, GLOBAL uint* RESTRICT counts,
                        GLOBAL float4* RESTRICT pos_placed, GLOBAL float4* RESTRICT vel_placed,
                        GLOBAL uint* RESTRICT ids_placed) {
  const int k = GLOBAL_ID;
  for (int cell = k; cell < cells; cell += GLOBAL_SIZE) counts[cell] = 0u;
  if (k >= n) return;
  const uint slot = start[keys[k]] + ranks[k];
  pos_placed[slot] = pos[k];
  vel_placed[slot] = vel[k];
  ids_placed[slot] = ids[k];
}

/* Rows in cell order back into boid order: rows_out[ids[k]] = rows[k]. */
KERNEL void flock_unsort(GLOBAL const float4* RESTRICT rows, GLOBAL const uint* RESTRICT ids,
                         const int n, GLOBAL float4* RESTRICT rows_out) {
  const int k = GLOBAL_ID;
  if (k >= n) return;
  rows_out[ids[k]] = rows[k];
}

/* Visits candidates first .. end - 1, FLUSH_EVERY at a time, the partial sums flushed after
 * each chunk; NEIGHBOUR(at) gives the candidate's index into pos / vel. The boid itself is
 * visited like the others (no test per candidate) and taken back out by forget_self. */
#define VISIT_RANGE(first, end, NEIGHBOUR, pos, vel, wrap)                            \
  for (uint chunk = (first); chunk < (end); chunk += FLUSH_EVERY) {                   \
    const uint stop = MIN(chunk + FLUSH_EVERY, (end));                                \
    for (uint at = chunk; at < stop; ++at) {                                          \
      const uint j = NEIGHBOUR(at);                                                   \
      accumulate(&s, &pc, p, (pos)[j], (vel), j, (wrap));                             \
    }                                                                                 \
    flush(&s);                                                                        \
  }

KERNEL void flock_naive(GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                        const int n, GLOBAL const double* RESTRICT c,
                        GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int i = GLOBAL_ID;
  if (i >= n) return;
  FLOCK_SUMS(s);
  const PairConstants pc = pair_constants(c);
  const float4 p = pos[i];
#define DIRECT(at) (at)
  VISIT_RANGE(0u, (uint)n, DIRECT, pos, vel, true)
  const float4 v = vel[i];
  forget_self(&s, &pc, v);
  finish(&s, c, p, v, pos_out, vel_out, i);
}

/* Calls VISIT(first, end) for every run of consecutive cells the boid at p visits, as the
 * sorted-position range [start[first cell], start[end cell]): per (z, y) row of the spans, the
 * x span as one run, or two where it crosses the seam. */
#define FOR_EACH_RUN(p, c, start, VISIT)                                                   \
  {                                                                                          \
    const AxisSpan sx = axis_span((p).x, c), sy = axis_span((p).y, c),                      \
                   sz = axis_span((p).z, c);                                                \
    const int g = (int)c[C_GRID];                                                           \
    for (int uz = span_lo(sz, g); uz <= span_hi(sz, g); ++uz)                               \
      for (int uy = span_lo(sy, g); uy <= span_hi(sy, g); ++uy) {                           \
        const uint row = ((uint)((uz + g) % g) * (uint)g + (uint)((uy + g) % g)) * (uint)g;  \
        const int first = span_lo(sx, g), last = span_hi(sx, g);                            \
        /* the cell across the seam, if the span crosses it: G - 1 (first < 0) or 0 */       \
        const uint seam = first < 0 ? row + (uint)(g - 1) : row;                             \
        const bool crosses = first < 0 || last >= g;                                         \
        for (int run = 0; run < (crosses ? 2 : 1); ++run) {                                  \
          const uint from = run ? seam : row + (uint)MAX(first, 0);                          \
          const uint to = run ? seam + 1u : row + (uint)MIN(last, g - 1) + 1u;               \
          VISIT(start[from], start[to]);                                                     \
        }                                                                                    \
      }                                                                                      \
  }

/* The run loop twice, with and without the nearest image. The choice is made once per
 * sub-group (SUBGROUP_ANY: the nearest image is right for every boid), so a warp runs one loop:
 * one that mixed boids near a face with boids away from them would run both, one after the
 * other. Most sub-groups hold no boid near a face and run the loop without it. */
#define VISIT_WRAPPED(first, end) VISIT_RANGE(first, end, NEIGHBOUR, POSITIONS, VELOCITIES, true)
#define VISIT_INSIDE(first, end) VISIT_RANGE(first, end, NEIGHBOUR, POSITIONS, VELOCITIES, false)
#define VISIT_ALL_RUNS(p, c, start, wrap)                                                  \
  if (wrap) FOR_EACH_RUN(p, c, start, VISIT_WRAPPED)                                       \
  else FOR_EACH_RUN(p, c, start, VISIT_INSIDE)

/* The rule kernels' groups per multiprocessor, which caps their registers on CUDA. */
#define RULE_KERNEL KERNEL LAUNCH_BOUNDS(FLOCK_GROUP, FLOCK_RESIDENT_GROUPS)

RULE_KERNEL void flock_scattered(GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                            GLOBAL const uint* RESTRICT order, GLOBAL const uint* RESTRICT start,
                            const int n, GLOBAL const double* RESTRICT c,
                            GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int i = GLOBAL_ID;
  const bool live = i < n;  /* every lane takes part in the vote, then the spare ones leave */
  const float4 p = pos[live ? i : 0];
  const bool wrap = SUBGROUP_ANY(live && near_face(p, c));
  if (!live) return;
  FLOCK_SUMS(s);
  const PairConstants pc = pair_constants(c);
#define NEIGHBOUR(at) order[at]
#define POSITIONS pos
#define VELOCITIES vel
  VISIT_ALL_RUNS(p, c, start, wrap)
#undef NEIGHBOUR
#undef POSITIONS
#undef VELOCITIES
  const float4 v = vel[i];
  forget_self(&s, &pc, v);
  finish(&s, c, p, v, pos_out, vel_out, i);
}

/* The state in cell order in, the stepped state out in the same slots, with the next step's
 * cell keys, ranks and counts (what flock_cell_ranks would make of pos_out, so the next step
 * skips it). */
RULE_KERNEL void flock_coherent(GLOBAL const float4* RESTRICT pos_placed,
                                GLOBAL const float4* RESTRICT vel_placed,
                                GLOBAL const uint* RESTRICT start, const int n,
                                GLOBAL const double* RESTRICT c, GLOBAL float4* RESTRICT pos_out,
                                GLOBAL float4* RESTRICT vel_out, GLOBAL uint* RESTRICT keys_out,
                                GLOBAL uint* RESTRICT ranks_out, GLOBAL uint* RESTRICT counts) {
  const int k = GLOBAL_ID;
  const bool live = k < n;  /* every lane takes part in the vote, then the spare ones leave */
  const float4 p = pos_placed[live ? k : 0];
  const bool wrap = SUBGROUP_ANY(live && near_face(p, c));
  if (!live) return;
  FLOCK_SUMS(s);
  const PairConstants pc = pair_constants(c);
#define NEIGHBOUR(at) DIRECT(at)
#define POSITIONS pos_placed
#define VELOCITIES vel_placed
  VISIT_ALL_RUNS(p, c, start, wrap)
#undef NEIGHBOUR
#undef POSITIONS
#undef VELOCITIES
  const float4 v = vel_placed[k];
  forget_self(&s, &pc, v);
  take_rank(cell_key(finish(&s, c, p, v, pos_out, vel_out, k), c), keys_out, ranks_out, counts,
            k);
}
