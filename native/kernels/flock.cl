/* flock.cl: one boids (Reynolds flocking) step on a device, with three neighbour searches.
 *
 * Algorithm (the study's, engine/flock/reference.py states the rule math step by step):
 *   flock_cell_keys    key[i] = boid i's cell, (cz * G + cy) * G + cx; order[i] = i
 *   (sort)             (key, order) pairs by key, stable: Context.key_sort() (radix_sort.cl or
 *                      CuPy's sort on CUDA)
 *   flock_cell_starts  start[c] = first sorted position with key >= c, for c = 0 .. G^3, each
 *                      sorted position filling the cells after its predecessor's key
 *   flock_gather       positions and velocities copied into sorted order (coherent search)
 *   flock_naive / flock_scattered / flock_coherent
 *                      one work-item per boid: sums over its neighbours, then the new velocity
 *                      and position, written in boid order to pos_out / vel_out
 * The scattered search reads neighbours through order[]; the coherent one reads the gathered
 * copies, contiguous per cell run. State stays on the device between steps.
 *
 * Host defines: REAL_BITS 64 (for double arithmetic; `real` is unused), FLOCK_CELL_WIDTH
 * (1: the 27 cells around a boid's own, 2: the 8 towards its position in the cell). The rule
 * constants come in one double array (indices C_*), so editing a rule does not recompile.
 *
 * Determinism: positions and velocities lie on fixed-point grids, so offsets are exact in
 * float32 and the float64 neighbour sums are exact: the order work-items visit neighbours in
 * cannot change a sum. Every product goes through MUL_RN (no contraction into FMA); float64
 * division and sqrt are correctly rounded in OpenCL and CUDA alike. So every search, work-group
 * size and device gives the bits the CPU gives (tests/engine/gpu/test_gpu_flock.py). */

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

typedef struct {
  double separation[3], cohesion[3], alignment[3];
  int cohesion_count, alignment_count;
} FlockSums;

DEVICE float nearest_image(float d, float world, float half_world) {
  if (d > half_world) return d - world;
  if (d < -half_world) return d + world;
  return d;
}

DEVICE void accumulate(FlockSums* s, GLOBAL const double* RESTRICT c, float4 pi, float4 pj,
                       float4 vj) {
  const float world = (float)c[C_WORLD], half_world = (float)c[C_HALF_WORLD];
  const float dx = nearest_image(pj.x - pi.x, world, half_world);
  const float dy = nearest_image(pj.y - pi.y, world, half_world);
  const float dz = nearest_image(pj.z - pi.z, world, half_world);
  const float r2 = MUL_RN(dx, dx) + MUL_RN(dy, dy) + MUL_RN(dz, dz);
  if (r2 < (float)c[C_SEPARATION_RADIUS2]) {
    s->separation[0] += dx;
    s->separation[1] += dy;
    s->separation[2] += dz;
  }
  if (r2 < (float)c[C_COHESION_RADIUS2]) {
    s->cohesion[0] += dx;
    s->cohesion[1] += dy;
    s->cohesion[2] += dz;
    s->cohesion_count += 1;
  }
  if (r2 < (float)c[C_ALIGNMENT_RADIUS2]) {
    s->alignment[0] += vj.x;
    s->alignment[1] += vj.y;
    s->alignment[2] += vj.z;
    s->alignment_count += 1;
  }
}

DEVICE double quantise(double x, double quantum) { return MUL_RN(rint(MUL_RN(x, 1.0 / quantum)), quantum); }

DEVICE void finish(const FlockSums* s, GLOBAL const double* RESTRICT c, float4 p, float4 v,
                   GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out, int i) {
  const double dt = c[C_DT], world = c[C_WORLD], max_speed = c[C_MAX_SPEED];
  const double v0[3] = {v.x, v.y, v.z};
  const double p0[3] = {p.x, p.y, p.z};
  double w[3];
  for (int k = 0; k < 3; ++k) {
    double a = -MUL_RN(c[C_SEPARATION_WEIGHT], s->separation[k]);
    if (s->cohesion_count > 0)
      a = a + MUL_RN(c[C_COHESION_WEIGHT], s->cohesion[k] / (double)s->cohesion_count);
    if (s->alignment_count > 0)
      a = a + MUL_RN(c[C_ALIGNMENT_WEIGHT], s->alignment[k] / (double)s->alignment_count - v0[k]);
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
}

DEVICE void clear(FlockSums* s) {
  for (int k = 0; k < 3; ++k) s->separation[k] = s->cohesion[k] = s->alignment[k] = 0.0;
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

KERNEL void flock_cell_keys(GLOBAL const float4* RESTRICT pos, const int n,
                            GLOBAL const double* RESTRICT c, GLOBAL ulong* RESTRICT keys,
                            GLOBAL uint* RESTRICT order) {
  const int i = GLOBAL_ID;
  if (i >= n) return;
  const ulong g = (ulong)c[C_GRID];
  const float4 p = pos[i];
  keys[i] = ((ulong)cell_of(p.z, c) * g + (ulong)cell_of(p.y, c)) * g + (ulong)cell_of(p.x, c);
  order[i] = (uint)i;
}

KERNEL void flock_cell_starts(GLOBAL const ulong* RESTRICT keys, const int n, const int cells,
                              GLOBAL uint* RESTRICT start) {
  const int k = GLOBAL_ID;
  if (k > n) return;
  const long first = k == 0 ? 0 : (long)keys[k - 1] + 1;
  const long own = k == n ? (long)cells : (long)keys[k];
  for (long cell = first; cell <= own && cell <= cells; ++cell) start[cell] = (uint)k;
}

KERNEL void flock_gather(GLOBAL const uint* RESTRICT order, GLOBAL const float4* RESTRICT pos,
                         GLOBAL const float4* RESTRICT vel, const int n,
                         GLOBAL float4* RESTRICT pos_sorted, GLOBAL float4* RESTRICT vel_sorted) {
  const int k = GLOBAL_ID;
  if (k >= n) return;
  const uint i = order[k];
  pos_sorted[k] = pos[i];
  vel_sorted[k] = vel[i];
}

KERNEL void flock_naive(GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                        const int n, GLOBAL const double* RESTRICT c,
                        GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int i = GLOBAL_ID;
  if (i >= n) return;
  FlockSums s;
  clear(&s);
  const float4 p = pos[i];
  for (int j = 0; j < n; ++j)
    if (j != i) accumulate(&s, c, p, pos[j], vel[j]);
  finish(&s, c, p, vel[i], pos_out, vel_out, i);
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

KERNEL void flock_scattered(GLOBAL const float4* RESTRICT pos, GLOBAL const float4* RESTRICT vel,
                            GLOBAL const uint* RESTRICT order, GLOBAL const uint* RESTRICT start,
                            const int n, GLOBAL const double* RESTRICT c,
                            GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int i = GLOBAL_ID;
  if (i >= n) return;
  FlockSums s;
  clear(&s);
  const float4 p = pos[i];
#define VISIT_SCATTERED(first, end)                     \
  for (uint k = (first); k < (end); ++k) {              \
    const uint j = order[k];                            \
    if (j != (uint)i) accumulate(&s, c, p, pos[j], vel[j]); \
  }
  FOR_EACH_RUN(p, c, start, VISIT_SCATTERED)
  finish(&s, c, p, vel[i], pos_out, vel_out, i);
}

KERNEL void flock_coherent(GLOBAL const float4* RESTRICT pos_sorted,
                           GLOBAL const float4* RESTRICT vel_sorted,
                           GLOBAL const uint* RESTRICT order, GLOBAL const uint* RESTRICT start,
                           const int n, GLOBAL const double* RESTRICT c,
                           GLOBAL float4* RESTRICT pos_out, GLOBAL float4* RESTRICT vel_out) {
  const int k = GLOBAL_ID;
  if (k >= n) return;
  FlockSums s;
  clear(&s);
  const float4 p = pos_sorted[k];
#define VISIT_COHERENT(first, end)                                    \
  for (uint j = (first); j < (end); ++j)                              \
    if (j != (uint)k) accumulate(&s, c, p, pos_sorted[j], vel_sorted[j]);
  FOR_EACH_RUN(p, c, start, VISIT_COHERENT)
  finish(&s, c, p, vel_sorted[k], pos_out, vel_out, (int)order[k]);
}
