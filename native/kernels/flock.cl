/* flock.cl: one boids (Reynolds flocking) step on a device, with three neighbour searches.
 *
 * Algorithm (the study's, engine/flock/reference.py states the rule math step by step):
 *   flock_cell_keys    key[i] = boid i's cell, (cz * G + cy) * G + cx (32 bits); order[i] = i
 *   (sort)             (key, order) pairs by key, stable, over the key's significant bits only:
 *                      Context.key_sort() (radix_sort.cl or CuPy's sort on CUDA)
 *   flock_cell_starts  start[c] = first sorted position with key >= c, for c = 0 .. G^3, each
 *                      sorted position filling the cells after its predecessor's key
 *   flock_gather       the same cell table, and positions, velocities and boid ids copied into
 *                      sorted order, in one pass (coherent search; scattered runs
 *                      flock_cell_starts)
 *   flock_naive / flock_scattered / flock_coherent
 *                      one work-item per boid: sums over its neighbours, then the new velocity
 *                      and position, written to pos_out / vel_out in the slot the boid was read
 *                      from (naive, scattered: the state's order; coherent: sorted order)
 *   flock_unsort       rows in cell order back into boid order, when the host reads the state
 * flock_coherent also writes the next step's keys (and order = 0 .. n-1), so a run of coherent
 * steps launches flock_cell_keys once.
 * The scattered search reads neighbours through order[]; the coherent one reads the gathered
 * copies, contiguous per cell run, and leaves the state in cell order (engine/flock/_device.py).
 * State stays on the device between steps.
 *
 * Host defines: REAL_BITS 64 (for double arithmetic; `real` is unused), FLOCK_CELL_WIDTH
 * (1: the 27 cells around a boid's own, 2: the 8 towards its position in the cell). The rule
 * constants come in one double array (indices C_*), so editing a rule does not recompile.
 *
 * Speed: a candidate neighbour costs float32 work only. Sums are kept as float32 partial sums
 * of at most FLUSH_EVERY terms and added into the float64 totals once per chunk of candidates
 * (a float32 -> float64 conversion runs at a fraction of the float32 rate on GPUs); a
 * neighbour's velocity is loaded only when it is within the alignment radius; the boid itself
 * is visited like any candidate and taken back out once (no test per candidate); the rule
 * constants are read into registers once per work-item; and a sub-group whose boids' cells
 * touch no face of the box (grids of 5 or more cells a side) skips the nearest-image test,
 * which cannot change an offset of less than two cells.
 *
 * Determinism: positions and velocities lie on fixed-point grids (the world is a multiple of
 * the position quantum), so offsets are exact in float32, partial sums of FLUSH_EVERY terms
 * are exact in float32 and the float64 totals are exact: the order work-items visit neighbours
 * in cannot change a sum (ADR 0095; the CPU keeps the same partial sums). Every product goes
 * through MUL_RN (no contraction into FMA); float64 division and sqrt are correctly rounded in
 * OpenCL and CUDA alike. So every search, work-group size and device gives the bits the CPU
 * gives (tests/engine/gpu/test_gpu_flock.py). */

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

typedef struct {
  float separation[3], cohesion[3], alignment[3];  /* partial: at most FLUSH_EVERY terms */
  double separation_total[3], cohesion_total[3], alignment_total[3];
  int cohesion_count, alignment_count;
} FlockSums;

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
    s->alignment_total[0] -= (double)v.x;
    s->alignment_total[1] -= (double)v.y;
    s->alignment_total[2] -= (double)v.z;
    s->alignment_count -= 1;
  }
  if (0.0f < pc->cohesion2) s->cohesion_count -= 1;
}

/* Adds the partial sums into the float64 totals (exactly) and clears them. */
DEVICE void flush(FlockSums* s) {
  for (int k = 0; k < 3; ++k) {
    s->separation_total[k] += (double)s->separation[k];
    s->cohesion_total[k] += (double)s->cohesion[k];
    s->alignment_total[k] += (double)s->alignment[k];
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
    double a = -MUL_RN(c[C_SEPARATION_WEIGHT], s->separation_total[k]);
    if (s->cohesion_count > 0)
      a = a + MUL_RN(c[C_COHESION_WEIGHT], s->cohesion_total[k] / (double)s->cohesion_count);
    if (s->alignment_count > 0)
      a = a + MUL_RN(c[C_ALIGNMENT_WEIGHT],
                     s->alignment_total[k] / (double)s->alignment_count - v0[k]);
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
    s->separation_total[k] = s->cohesion_total[k] = s->alignment_total[k] = 0.0;
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

/* The distinct cells on one axis a boid at x visits, lowest first (native/flock_grid.cpp). */
DEVICE int axis_cells(float x, GLOBAL const double* RESTRICT c, int cells[3]) {
  const int g = (int)c[C_GRID];
  const float scaled = MUL_RN(x, (float)c[C_INVERSE_CELL_WIDTH]);
  const int own = axis_cell(scaled, g);
  if (g == 1) {
    cells[0] = own;
    return 1;
  }
  if (FLOCK_CELL_WIDTH == 2 || g == 2) {
    int other = (FLOCK_CELL_WIDTH == 2 && scaled - (float)own < 0.5f) ? own - 1 : own + 1;
    if (g == 2) other = 1 - own;
    other = (other + g) % g;
    cells[0] = MIN(own, other);
    cells[1] = MAX(own, other);
    return 2;
  }
  const int lo = (own + g - 1) % g, hi = (own + 1) % g;
  cells[0] = MIN(MIN(lo, own), hi);
  cells[2] = MAX(MAX(lo, own), hi);
  cells[1] = lo + own + hi - cells[0] - cells[2];
  return 3;
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

/* The cell table and the state gathered into sorted order, in one pass over the sorted keys
 * (n + 1 work-items). The state may already be in the previous step's cell order, so slot
 * order[k] holds boid ids[order[k]]: the ids move with the rows. */
KERNEL void flock_gather(GLOBAL const uint* RESTRICT keys, GLOBAL const uint* RESTRICT order,
                         GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                         GLOBAL const uint* RESTRICT ids, const int n, const int cells,
                         GLOBAL uint* RESTRICT start, GLOBAL float4* RESTRICT pos_sorted,
                         GLOBAL float4* RESTRICT vel_sorted, GLOBAL uint* RESTRICT ids_sorted) {
  const int k = GLOBAL_ID;
  if (k > n) return;
  fill_starts(keys, n, cells, start, k);
  if (k == n) return;
  const uint slot = order[k];
  pos_sorted[k] = pos[slot];
  vel_sorted[k] = vel[slot];
  ids_sorted[k] = ids[slot];
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
  FlockSums s;
  clear(&s);
  const PairConstants pc = pair_constants(c);
  const float4 p = pos[i];
#define DIRECT(at) (at)
  VISIT_RANGE(0u, (uint)n, DIRECT, pos, vel, true)
  const float4 v = vel[i];
  forget_self(&s, &pc, v);
  finish(&s, c, p, v, pos_out, vel_out, i);
}

/* Calls VISIT(first, last) for every run of consecutive cells the boid at p visits, as the
 * sorted-position range [start[first cell], start[end cell]). */
#define FOR_EACH_RUN(p, c, start, VISIT)                                                   \
  {                                                                                          \
    int xs[3], ys[3], zs[3];                                                                 \
    const int nx = axis_cells((p).x, c, xs), ny = axis_cells((p).y, c, ys),                 \
              nz = axis_cells((p).z, c, zs);                                                 \
    const uint g = (uint)c[C_GRID];                                                         \
    for (int iz = 0; iz < nz; ++iz)                                                         \
      for (int iy = 0; iy < ny; ++iy) {                                                     \
        const uint row = ((uint)zs[iz] * g + (uint)ys[iy]) * g;                              \
        int ix = 0;                                                                          \
        while (ix < nx) {                                                                    \
          int last = ix;                                                                     \
          while (last + 1 < nx && xs[last + 1] == xs[last] + 1) ++last;                      \
          VISIT(start[row + (uint)xs[ix]], start[row + (uint)xs[last] + 1]);                 \
          ix = last + 1;                                                                     \
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

KERNEL void flock_scattered(GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                            GLOBAL const uint* RESTRICT order, GLOBAL const uint* RESTRICT start,
                            const int n, GLOBAL const double* RESTRICT c,
                            GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int i = GLOBAL_ID;
  const bool live = i < n;  /* every lane takes part in the vote, then the spare ones leave */
  const float4 p = pos[live ? i : 0];
  const bool wrap = SUBGROUP_ANY(live && near_face(p, c));
  if (!live) return;
  FlockSums s;
  clear(&s);
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
 * cell keys (what flock_cell_keys would compute from pos_out, so the next step skips it). */
KERNEL void flock_coherent(GLOBAL const float4* RESTRICT pos_sorted,
                           GLOBAL const float4* RESTRICT vel_sorted,
                           GLOBAL const uint* RESTRICT start, const int n,
                           GLOBAL const double* RESTRICT c, GLOBAL float4* RESTRICT pos_out,
                           GLOBAL float4* RESTRICT vel_out, GLOBAL uint* RESTRICT keys_out,
                           GLOBAL uint* RESTRICT order_out) {
  const int k = GLOBAL_ID;
  const bool live = k < n;  /* every lane takes part in the vote, then the spare ones leave */
  const float4 p = pos_sorted[live ? k : 0];
  const bool wrap = SUBGROUP_ANY(live && near_face(p, c));
  if (!live) return;
  FlockSums s;
  clear(&s);
  const PairConstants pc = pair_constants(c);
#define NEIGHBOUR(at) DIRECT(at)
#define POSITIONS pos_sorted
#define VELOCITIES vel_sorted
  VISIT_ALL_RUNS(p, c, start, wrap)
#undef NEIGHBOUR
#undef POSITIONS
#undef VELOCITIES
  const float4 v = vel_sorted[k];
  forget_self(&s, &pc, v);
  keys_out[k] = cell_key(finish(&s, c, p, v, pos_out, vel_out, k), c);
  order_out[k] = (uint)k;
}
