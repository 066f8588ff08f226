/* density.cl: the density image (ADR 0101's kernel-weighted mass) as a pyramid splat, whose cost
 * per particle does not grow with its footprint (ADR 0107). Three steps a frame:
 *
 *   1. density_extent: the largest weighted mass m' = m * weight[population] and the largest
 *      |m' q| (q: the quantity colouring the image) over the particles; from them the
 *      fixed-point scales below, so the image needs no host round trip.
 *   2. density_deposit: one work-item per particle. It projects the particle as the GL path does
 *      (shaders/density.vert: clip = M (x, y, z, 1), dropped where w <= 0 or |z| > w; support
 *      radius R = 2h * pixels_per_unit / w pixels, clamped to [min_radius, max_radius]) and picks
 *      the pyramid level l where R_l = R / 2^l <= LEVEL_RADIUS texels (level 0 is the image;
 *      level l's texel (i, j) covers pixels [2^l i, 2^l (i + 1)) x [2^l j, 2^l (j + 1))). On
 *      the texels whose centres lie within the support it evaluates Monaghan's 2D cubic spline,
 *      normalised by the sum of those weights (not by the disc's area), and adds m' W / sum W
 *      (and m' q W / sum W) with 64-bit integer atomics. The rounding residual of the particle's
 *      texels goes to its heaviest texel, so every particle adds exactly round(m' * scale)
 *      counts to the pyramid (the part of a footprint outside the image is dropped, as in GL).
 *      At most (2 LEVEL_RADIUS + 1)^2 texels a particle, whatever its footprint in pixels.
 *   3. density_reconstruct, once per level from the coarsest to the image: a level's counts to
 *      float, plus the level above upsampled by 2 with the linear B-spline (each coarse texel
 *      spreads 1/8, 3/8, 3/8, 1/8 along each axis over the four finer texels around it; what
 *      would fall beyond the image's edge is mirrored back in), so every level keeps its total;
 *      the counts are cleared for the next frame. The last launch writes the image (r = sum m W,
 *      g = sum m W q per pixel, b = a = 0), what the GL path's additive blending writes.
 *
 * The approximation: a particle on level 0 (R <= LEVEL_RADIUS pixels) is the kernel sampled at
 * pixel centres, exactly. On level l > 0 the kernel is sampled at texels 2^l pixels wide and
 * then smoothed by the upsampling, a filter of per-axis variance 0.25 (1 - 4^-l) texels^2 at
 * level l. The deposit narrows the kernel's support to R' = sqrt(R_l^2 - that variance /
 * SPLINE_SIGMA^2), so the image keeps the exact kernel's second moment: a large footprint is the
 * cubic spline's disc with rounder shoulders and a tail slightly past 2h, its mass exact, its
 * centroid and second moment kept. With LEVEL_RADIUS 8, against the exact disc sampled at every
 * pixel: L1 difference <= 3% of the mass, peak within 4%, centroid within 0.002 R, second moment
 * within 0.5% (tests/engine/gpu/test_gpu_density.py; worst of 80 random cases 2.8%, 3.5%,
 * 0.001 R, 0.24%). The GL path instead clamps R to the driver's point size limit; here
 * max_radius = LEVEL_RADIUS 2^(levels - 1), the top level's reach (16384 pixels at 1080p).
 *
 * Fixed point: scale = 2^(29 - e) counts per unit, where 2^(e-1) <= the largest m' (or |m' q|)
 * < 2^e, so a particle adds fewer than 2^29 counts (a texel resolves 2^-28 of the heaviest
 * particle's mass), and fewer than 2^31 particles (the index type's limit) never overflow a
 * texel's signed 64-bit sum. The quantity channel is signed (two's complement: ulong addition
 * wraps, read back as long).
 *
 * Determinism: integer additions commute, each particle's counts depend on itself alone, and the
 * reconstruction sums in a fixed order: the same frame is the same bits in any particle order.
 *
 * Needs view.cl first (the projection).
 *
 * Host defines: LEVEL_RADIUS (the largest support radius in texels of a level, a float literal),
 * DENSITY_GROUP (work-items per group of density_extent). Arrays: position and previous (3
 * floats a particle), mass, value and support (one float a particle; value and support may be
 * any array when unused), population (int, used modulo 16), weights (16 floats), extent (2 uints:
 * the bits of the two maxima, zero before density_extent), levels (3 ints a level: width,
 * height, first texel), counts (DENSITY_CHANNELS ulongs a texel of every level, zero between
 * frames). */

#define DENSITY_CHANNELS 2
/* the 2D cubic spline's per-axis standard deviation, in units of its support radius 2h */
#define SPLINE_SIGMA 0.28121457f

/* Monaghan's M4 in 2D without its normalisation, of q = r / h (the support is q < 2). */
DEVICE float density_spline(float q) {
  if (q >= 2.0f) return 0.0f;
  if (q < 1.0f) return 1.0f - 1.5f * q * q + 0.75f * q * q * q;
  const float t = 2.0f - q;
  return 0.25f * t * t * t;
}

/* The quantity a particle colours the image with: 0 (density), its speed, or its value. */
DEVICE float density_quantity(GLOBAL const float* RESTRICT position,
                              GLOBAL const float* RESTRICT previous,
                              GLOBAL const float* RESTRICT value, const int i,
                              const int quantity_mode, const float inverse_interval) {
  if (quantity_mode == 1) {
    const float dx = position[3 * (ulong)i] - previous[3 * (ulong)i];
    const float dy = position[3 * (ulong)i + 1] - previous[3 * (ulong)i + 1];
    const float dz = position[3 * (ulong)i + 2] - previous[3 * (ulong)i + 2];
    const float speed = SQRT(dx * dx + dy * dy + dz * dz) * inverse_interval;
    return speed <= 3.4e38f ? speed : 0.0f;
  }
  const float q = quantity_mode == 2 ? value[i] : 0.0f;
  return fabs(q) <= 3.4e38f ? q : 0.0f;  /* a non-finite value colours nothing */
}

/* Counts per unit for a largest value of these bits: 2^(29 - e), a power of two (exact). */
DEVICE float density_scale(const uint largest_bits) {
  const int e = (int)((largest_bits >> 23) & 255u) - 126;
  const int power = MIN(MAX(29 - e, -126), 127);
  return UINT_AS_FLOAT((uint)(power + 127) << 23);
}

/* A finite, non-negative float's bits (anything else counts as 0). */
DEVICE uint density_bits(const float v) { return v <= 3.4e38f ? FLOAT_AS_UINT(v) : 0u; }

/* Zero the extent before a frame's density_extent (work-items 0 and 1). */
KERNEL void density_clear(GLOBAL uint* RESTRICT extent) {
  if (GLOBAL_ID < 2) extent[GLOBAL_ID] = 0u;
}

KERNEL void density_extent(GLOBAL const float* RESTRICT position,
                           GLOBAL const float* RESTRICT previous,
                           GLOBAL const float* RESTRICT mass, GLOBAL const float* RESTRICT value,
                           GLOBAL const int* RESTRICT population,
                           GLOBAL const float* RESTRICT weights, const int count,
                           const int quantity_mode, const float inverse_interval,
                           GLOBAL uint* RESTRICT extent) {
  LOCAL uint top_mass[DENSITY_GROUP];
  LOCAL uint top_quantity[DENSITY_GROUP];
  const int i = GLOBAL_ID, lane = LOCAL_ID;
  uint mass_bits = 0u, quantity_bits = 0u;
  if (i < count) {
    const float weighted = mass[i] * weights[population[i] & 15];
    if (weighted > 0.0f) {
      mass_bits = density_bits(weighted);
      quantity_bits = density_bits(fabs(weighted * density_quantity(
          position, previous, value, i, quantity_mode, inverse_interval)));
    }
  }
  top_mass[lane] = mass_bits;  /* non-negative floats order as their bits do */
  top_quantity[lane] = quantity_bits;
  SYNC_THREADS;
  for (int step = DENSITY_GROUP / 2; step > 0; step >>= 1) {
    if (lane < step) {
      top_mass[lane] = MAX(top_mass[lane], top_mass[lane + step]);
      top_quantity[lane] = MAX(top_quantity[lane], top_quantity[lane + step]);
    }
    SYNC_THREADS;
  }
  if (lane == 0) {
    if (top_mass[0]) ATOMIC_MAX(&extent[0], top_mass[0]);
    if (top_quantity[0]) ATOMIC_MAX(&extent[1], top_quantity[0]);
  }
}

DEVICE void density_add(GLOBAL ulong* RESTRICT texel, const long counts) {
  if (counts != 0) ATOMIC_ADD_ULONG(texel, (ulong)counts);
}

/* One work-item per particle; m0..m15 are the view-projection matrix row by row (view.cl). */
KERNEL void density_deposit(GLOBAL const float* RESTRICT position,
                            GLOBAL const float* RESTRICT previous,
                            GLOBAL const float* RESTRICT mass,
                            GLOBAL const float* RESTRICT value,
                            GLOBAL const float* RESTRICT support,
                            GLOBAL const int* RESTRICT population,
                            GLOBAL const float* RESTRICT weights, const int count,
                            const int adaptive, const float support_length,
                            const float pixels_per_unit, const float min_radius,
                            const float max_radius, const int quantity_mode,
                            const float inverse_interval,
                            VIEW_MATRIX_ARGUMENTS,
                            GLOBAL const int* RESTRICT levels, const int level_count,
                            GLOBAL const uint* RESTRICT extent, GLOBAL ulong* RESTRICT counts) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const float weighted = mass[i] * weights[population[i] & 15];
  if (!(weighted > 0.0f) || !(weighted <= 3.4e38f)) return;  /* hidden, or not a mass */
  const float x = position[3 * (ulong)i], y = position[3 * (ulong)i + 1], z = position[3 * (ulong)i + 2];
  CLIP_COORDINATES(x, y, z);
  if (!(cw > 0.0f) || fabs(cz) > cw) return;
  const float world = adaptive ? support_length * support[i] : support_length;
  const float radius = MIN(MAX(world * pixels_per_unit / MAX(cw, 1e-6f), min_radius), max_radius);
  if (!(radius >= min_radius)) return;  /* a non-finite support */

  /* the level: halve until the support fits LEVEL_RADIUS texels (powers of two: exact) */
  int level = 0;
  float texel_radius = radius, to_level = 1.0f;
  while (texel_radius > LEVEL_RADIUS && level < level_count - 1) {
    texel_radius *= 0.5f;
    to_level *= 0.5f;
    ++level;
  }
  const float px = (cx / cw + 1.0f) * 0.5f * (float)levels[0] * to_level;
  const float py = (cy / cw + 1.0f) * 0.5f * (float)levels[1] * to_level;
  const int width = levels[3 * level], height = levels[3 * level + 1];
  /* the support that keeps the second moment through the upsampling's smoothing */
  const float smoothing = 0.25f * (1.0f - to_level * to_level);
  const float r = SQRT(MAX(texel_radius * texel_radius - smoothing / (SPLINE_SIGMA * SPLINE_SIGMA),
                           1.0f));
  /* no texel of the footprint in the level (tested in float: far centres overflow an int) */
  if (!(px + r > 0.0f && px - r < (float)width && py + r > 0.0f && py - r < (float)height))
    return;
  const int y0 = (int)ceil(py - r - 0.5f), y1 = (int)floor(py + r - 0.5f);
  const float to_q = 2.0f / r;  /* q = r / h with the support 2h = r */

  float total = 0.0f;
  for (int ty = y0; ty <= y1; ++ty) {
    const float oy = (float)ty + 0.5f - py;
    const float reach = SQRT(MAX(r * r - oy * oy, 0.0f));  /* the row's span of the disc */
    const int x0 = (int)ceil(px - reach - 0.5f), x1 = (int)floor(px + reach - 0.5f);
    for (int tx = x0; tx <= x1; ++tx) {
      const float ox = (float)tx + 0.5f - px;
      total += density_spline(SQRT(ox * ox + oy * oy) * to_q);
    }
  }
  if (!(total > 0.0f)) return;  /* cannot happen: r >= 1 holds a texel centre within 2h / 1.4 */

  const int quantity = quantity_mode != 0;
  const float scale_mass = density_scale(extent[0]);
  const float scale_quantity = density_scale(extent[1]);
  const float mass_counts = weighted * scale_mass;
  const float quantity_counts = quantity
      ? weighted * density_quantity(position, previous, value, i, quantity_mode,
                                    inverse_interval) * scale_quantity
      : 0.0f;
  const float inverse_total = 1.0f / total;
  long added_mass = 0, added_quantity = 0;
  float heaviest = -1.0f;
  int heaviest_texel = -1;  /* the texel nearest the centre, if it is in the image */
  GLOBAL ulong* level_counts = counts + (size_t)DENSITY_CHANNELS * (size_t)levels[3 * level + 2];
  for (int ty = y0; ty <= y1; ++ty) {
    const float oy = (float)ty + 0.5f - py;
    const float reach = SQRT(MAX(r * r - oy * oy, 0.0f));
    const int x0 = (int)ceil(px - reach - 0.5f), x1 = (int)floor(px + reach - 0.5f);
    const int row_inside = ty >= 0 && ty < height;
    for (int tx = x0; tx <= x1; ++tx) {
      const float ox = (float)tx + 0.5f - px;
      const float w = density_spline(SQRT(ox * ox + oy * oy) * to_q);
      if (w <= 0.0f) continue;
      const float share = w * inverse_total;
      const long m = (long)floor(mass_counts * share + 0.5f);
      const long q = quantity ? (long)floor(quantity_counts * share + 0.5f) : 0;
      added_mass += m;
      added_quantity += q;
      const int inside = row_inside && tx >= 0 && tx < width;
      if (w > heaviest) {
        heaviest = w;
        heaviest_texel = inside ? ty * width + tx : -1;
      }
      if (!inside) continue;
      GLOBAL ulong* texel = level_counts + (size_t)DENSITY_CHANNELS * (size_t)(ty * width + tx);
      density_add(texel, m);
      if (quantity) density_add(texel + 1, q);
    }
  }
  if (heaviest_texel >= 0) {
    GLOBAL ulong* texel = level_counts + (size_t)DENSITY_CHANNELS * (size_t)heaviest_texel;
    density_add(texel, (long)floor(mass_counts + 0.5f) - added_mass);
    if (quantity) density_add(texel + 1, (long)floor(quantity_counts + 0.5f) - added_quantity);
  }
}

/* The weights of the three coarse texels (f / 2 - 1, f / 2, f / 2 + 1) that fine texel f of a
 * row of n gathers from, a row of n_coarse = ceil(n / 2) above: the spread of each coarse texel
 * c (1/8, 3/8, 3/8, 1/8 onto 2c - 1 .. 2c + 2), with the fine positions -1, n and n + 1 beyond
 * the edges mirrored onto 0, n - 1 and n - 2. */
DEVICE void density_taps(const int f, const int n, const int n_coarse, float* taps) {
  taps[0] = taps[1] = taps[2] = 0.0f;
  const int base = f / 2 - 1;
  const int virtuals[4] = {f, -1 - f, 2 * n - 1 - f, 2 * n + f};
  for (int k = 0; k < 4; ++k) {
    const int v = virtuals[k];
    if (v < -1 || v > n + 1 || (k > 0 && v >= 0 && v < n)) continue;
    const int c = (v + 2) / 2 - 1;  /* floor(v / 2) for v >= -2 */
    const int other = (v & 1) ? c + 1 : c - 1;
    if (c >= 0 && c < n_coarse) taps[c - base] += 0.375f;
    if (other >= 0 && other < n_coarse) taps[other - base] += 0.125f;
  }
}

/* One work-item per texel of the fine level: its counts to float (cleared), plus the coarse
 * level upsampled (coarse_width 0: the top level, nothing above). Writes output_channels floats
 * a texel (2 into the float pyramid, 4 into the image). */
KERNEL void density_reconstruct(GLOBAL ulong* RESTRICT counts, const int counts_first,
                                const int width, const int height,
                                GLOBAL const float* RESTRICT coarse, const int coarse_first,
                                const int coarse_width, const int coarse_height,
                                GLOBAL const uint* RESTRICT extent,
                                GLOBAL float* RESTRICT output, const int output_first,
                                const int output_channels) {
  const int t = GLOBAL_ID;
  if (t >= width * height) return;
  const int tx = t % width, ty = t / width;
  GLOBAL ulong* texel = counts + (size_t)DENSITY_CHANNELS * ((size_t)counts_first + t);
  float sums[DENSITY_CHANNELS];
  for (int ch = 0; ch < DENSITY_CHANNELS; ++ch) {
    sums[ch] = (float)(long)texel[ch] / density_scale(extent[ch]);
    texel[ch] = 0;
  }
  if (coarse_width > 0) {
    float wx[3], wy[3];
    density_taps(tx, width, coarse_width, wx);
    density_taps(ty, height, coarse_height, wy);
    const int bx = tx / 2 - 1, by = ty / 2 - 1;
    for (int a = 0; a < 3; ++a) {
      if (wy[a] == 0.0f) continue;
      for (int b = 0; b < 3; ++b) {
        if (wx[b] == 0.0f) continue;
        const float w = wy[a] * wx[b];
        GLOBAL const float* source =
            coarse + (size_t)DENSITY_CHANNELS *
                         ((size_t)coarse_first + (size_t)(by + a) * coarse_width + (bx + b));
        for (int ch = 0; ch < DENSITY_CHANNELS; ++ch) sums[ch] += w * source[ch];
      }
    }
  }
  GLOBAL float* out = output + (size_t)output_channels * ((size_t)output_first + t);
  for (int ch = 0; ch < output_channels; ++ch) out[ch] = ch < DENSITY_CHANNELS ? sums[ch] : 0.0f;
}
