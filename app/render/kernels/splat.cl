/* splat.cl: the particle pass as a compute splat. Each work-item projects one particle with the
 * camera matrix and adds its Gaussian sprite into an integer RGBA accumulation image; a second
 * kernel turns the integers back into floating-point light (the accumulation target the tone-map
 * pass reads) and clears them for the next frame. It draws what the GL point path draws
 * (shaders/particles.vert and particles.frag, blending ONE, ONE), without rasterising points:
 *
 *   1. clip = M (x, y, z, 1); a particle behind the camera (w <= 0) or outside the depth range
 *      (|z| > w) is dropped; one whose centre is beside the image still adds the part of its
 *      sprite that overlaps it, as NVIDIA's GL points do (Mesa drops such a point whole);
 *   2. its window position is ((ndc + 1) / 2) * (width, height) (the viewport is the image);
 *   3. every pixel whose centre c is within the sprite gets, with
 *      offset = 2 (c - centre) / point_size and r2 = |offset|^2 <= 1 (gl_PointCoord's disc),
 *      weight = exp(-4 r2) times (colour * intensity, 1) in (r, g, b, a);
 *   4. colour: the population's palette entry rgb * brightness, by speed (the log speed over
 *      the median, mapped through slow blue, median pink and fast amber) * brightness, or by
 *      heading (0.5 + 0.5 * the unit direction of travel; the palette's where it did not move)
 *      * brightness.
 *
 * The sums go through a work-group tile where that is cheaper (the only reason for it: a 64-bit
 * global atomic costs the GPU about 0.02 ms per million, and in a galaxy's core thousands of
 * sprites land on the same pixels). Work-item k of the launch draws particle
 * locality_order[k] (an order that keeps neighbours in space together, the tree solvers'
 * Morton order; the caller's order k where there is none), so a work-group's particles tend to
 * cover few pixels. Each group reduces the pixel box its sprites cover (clipped to the image),
 * their mean centre, and whether every contribution is small enough for 32-bit sums (below).
 * If they are, the group's tile is a window of at most tile_pixels pixels: the whole box where
 * it fits, else as much of it as fits (tile_pixels^(1/2) wide, or the box's width if narrower,
 * and as high as the rest allows) centred on the mean and moved inside the box. A sprite that
 * lies in the window adds into zeroed 32-bit counters in local memory, one per channel of each
 * pixel of the window, which are then added into the image with one 64-bit global atomic each
 * (the non-zero ones); the other sprites, and every sprite of a group too bright for the tile,
 * add straight into the image. `sprites` counts the sprites drawn and those summed in a tile
 * (a statistic: sprites[0], sprites[1]).
 *
 * Fixed point: a contribution v becomes round(v * FIXED_ONE) counts (FIXED_ONE = 2^20, so one
 * unit of light resolves to 9.5e-7), capped at FIXED_CAP = 2^32 - 256 counts (the largest float
 * below 2^32: 4096 units, light that is white after any exposure the viewer offers), and is
 * added with a 64-bit integer atomic. The sum of fewer than 2^31 capped contributions stays below
 * 2^63, so a pixel never wraps for any particle count this index type can address. A tile
 * counter never wraps either: a sprite covers a pixel once, so a counter sums at most one
 * contribution per work-item, and a group has a tile only where each of its particles' brightest
 * channel at weight 1, max(r, g, b) * intensity * FIXED_ONE, is at most 2^31 / LOCAL_SIZE counts
 * (8 units of light for 256 work-items; alpha adds at most FIXED_ONE): the group's sum stays
 * below 2^31 plus rounding, half of what 32 bits hold.
 *
 * Determinism: every contribution is the same float expression of its particle alone on either
 * path, rounded to integer counts before any sum. Integer addition is associative and exact, so
 * each pixel's sum does not depend on the order the atomics land in, on which work-item draws
 * which particle (any locality order), nor on whether a sprite's counts meet others' in a tile
 * first: the image is the same bits on every run, for any order, tile size and path.
 *
 * Needs view.cl first (the projection).
 *
 * Host defines: FIXED_ONE (counts per unit of light, a float literal), FIXED_CAP (the largest
 * contribution in counts, a float literal), both single precision (`f` suffix); TILE_CAPACITY
 * (the most pixels a work-group's tile may have: its local array). The tile's pixels are the
 * argument tile_pixels (0 to TILE_CAPACITY, 0: no tile), not a define: every tile size runs the
 * same compiled code, whose float contractions (a*b+c fused or not) are then the same on both
 * paths; two programs may fuse differently and round a contribution one count apart. Colours
 * come from `palette` (16 float4: rgb and the population's brightness), labels from
 * `population` (int per particle, used modulo 16). */

#define SPLAT_CHANNELS 4
/* A tile's counters, as many as the largest tile needs (a local array needs a size). */
#define TILE_VALUES (SPLAT_CHANNELS * TILE_CAPACITY)
#define NO_PIXEL 0x7fffffff

DEVICE float splat_mix(float a, float b, float t) { return a + (b - a) * t; }

/* A contribution's counts (zero below half a count). */
DEVICE uint splat_counts(float value) {
  const float counts = MIN(value * FIXED_ONE + 0.5f, FIXED_CAP);
  return counts >= 1.0f ? (uint)counts : 0u;
}

/* One channel's counts into the group's tile or straight into the image. */
DEVICE void splat_add(GLOBAL ulong* RESTRICT pixel, LOCAL_ARG uint* counter, const int tiled,
                      const uint counts) {
  if (counts == 0u) return;
  if (tiled) ATOMIC_ADD(counter, counts);
  else ATOMIC_ADD_ULONG(pixel, counts);
}

/* One work-item per particle, a tile per work-group: particle k (`ordered` 0), locality_order[k]
 * (1), or entry first + k of a level of detail's order of `total` particles (2:
 * ((first + k) * step + offset) mod total, app/render/_detail.py's weyl_order; below 2^64, as
 * each factor is below 2^32); m0..m15 are the view-projection matrix row by row (view.cl).
 * Every work-item reaches every barrier: those without a visible particle draw nothing. */
KERNEL void splat_points(GLOBAL const float* RESTRICT position,
                         GLOBAL const float* RESTRICT previous,
                         GLOBAL const int* RESTRICT population,
                         GLOBAL const uint* RESTRICT locality_order, const int ordered,
                         const int count, const uint first, const uint step, const uint offset,
                         const uint total, GLOBAL const float* RESTRICT palette,
                         const int colour_mode, const float speed_scale, const float point_size,
                         const float intensity, VIEW_MATRIX_ARGUMENTS,
                         const int width, const int height, const int tile_pixels,
                         GLOBAL ulong* RESTRICT accumulation, GLOBAL ulong* RESTRICT sprites) {
  LOCAL uint tile[TILE_VALUES];
  LOCAL int box[4];       /* the group's pixels: least x, least y, greatest x, greatest y */
  LOCAL int centres[2];   /* sums of x0 + x1 and y0 + y1: twice the sprites' mean centre */
  LOCAL int drawn[2];     /* the group's visible sprites, and those summed in its tile */
  LOCAL int too_bright;   /* some contribution could overflow a tile counter */
  if (LOCAL_ID == 0) {
    box[0] = box[1] = NO_PIXEL;
    box[2] = box[3] = -1;
    centres[0] = centres[1] = 0;
    drawn[0] = drawn[1] = 0;
    too_bright = 0;
  }
  SYNC_THREADS;

  const int k = GLOBAL_ID;
  const int i = k >= count ? 0
                : ordered == 2 ? (int)((((ulong)first + (ulong)k) * step + offset) % total)
                : ordered ? (int)locality_order[k] : k;
  const float x = position[3 * (ulong)i], y = position[3 * (ulong)i + 1], z = position[3 * (ulong)i + 2];
  CLIP_COORDINATES(x, y, z);
  const float xw = (cx / cw + 1.0f) * 0.5f * (float)width;
  const float yw = (cy / cw + 1.0f) * 0.5f * (float)height;
  const float half_size = 0.5f * point_size, to_offset = 2.0f / point_size;
  /* dropped: past the count, behind the camera (w <= 0), outside the depth range (|z| > w), or
   * no pixel of the sprite in the image (tested in float: far centres overflow an int) */
  const int visible = k < count && cw > 0.0f && !(fabs(cz) > cw) &&
                      xw + half_size > 0.0f && xw - half_size < (float)width &&
                      yw + half_size > 0.0f && yw - half_size < (float)height;

  float r = 0.0f, g = 0.0f, b = 0.0f;
  int x0 = 0, x1 = -1, y0 = 0, y1 = -1;
  if (visible) {
    GLOBAL const float* entry = palette + 4 * (population[i] & 15);
    if (colour_mode == 1) {
      const float dx = x - previous[3 * (ulong)i], dy = y - previous[3 * (ulong)i + 1],
                  dz = z - previous[3 * (ulong)i + 2];
      const float ratio = MAX(SQRT(dx * dx + dy * dy + dz * dz) * speed_scale, 1e-6f);
      const float s = MIN(MAX(0.5f + 0.25f * log2(ratio), 0.0f), 1.0f);
      if (s < 0.5f) {  /* slow deep blue to median pink */
        r = splat_mix(0.25f, 0.95f, s * 2.0f);
        g = splat_mix(0.35f, 0.35f, s * 2.0f);
        b = splat_mix(1.0f, 0.6f, s * 2.0f);
      } else {         /* median pink to fast amber */
        r = splat_mix(0.95f, 1.0f, s * 2.0f - 1.0f);
        g = splat_mix(0.35f, 0.8f, s * 2.0f - 1.0f);
        b = splat_mix(0.6f, 0.3f, s * 2.0f - 1.0f);
      }
      r *= entry[3]; g *= entry[3]; b *= entry[3];
    } else if (colour_mode == 2) {
      const float dx = x - previous[3 * (ulong)i], dy = y - previous[3 * (ulong)i + 1],
                  dz = z - previous[3 * (ulong)i + 2];
      const float distance = SQRT(dx * dx + dy * dy + dz * dz);
      if (distance > 0.0f) {
        r = 0.5f + 0.5f * (dx / distance);
        g = 0.5f + 0.5f * (dy / distance);
        b = 0.5f + 0.5f * (dz / distance);
      } else {
        r = entry[0]; g = entry[1]; b = entry[2];
      }
      r *= entry[3]; g *= entry[3]; b *= entry[3];
    } else {
      r = entry[0] * entry[3]; g = entry[1] * entry[3]; b = entry[2] * entry[3];
    }
    x0 = MAX((int)floor(xw - half_size), 0);
    x1 = MIN((int)floor(xw + half_size), width - 1);
    y0 = MAX((int)floor(yw - half_size), 0);
    y1 = MIN((int)floor(yw + half_size), height - 1);
    ATOMIC_MIN(&box[0], x0);
    ATOMIC_MIN(&box[1], y0);
    ATOMIC_MAX(&box[2], x1);
    ATOMIC_MAX(&box[3], y1);
    ATOMIC_ADD(&centres[0], x0 + x1);
    ATOMIC_ADD(&centres[1], y0 + y1);
    ATOMIC_ADD(&drawn[0], 1);
    /* NaN compares false: such a group takes the path without a tile, as before it */
    if (!(MAX(MAX(r, g), b) * intensity * FIXED_ONE <= 2147483648.0f / (float)LOCAL_SIZE))
      ATOMIC_MAX(&too_bright, 1);
  }
  SYNC_THREADS;

  const int bx = box[0], by = box[1];
  const int box_width = box[2] - bx + 1, box_height = box[3] - by + 1;
  if (box_width <= 0) return;  /* nothing of the group in the image (the same for all) */
  const int tiled = tile_pixels > 0 && !too_bright;
  int tile_x = bx, tile_y = by, tile_width = box_width, tile_height = box_height;
  if (tiled && !(box_width <= tile_pixels && box_height <= tile_pixels &&
                 box_width * box_height <= tile_pixels)) {
    tile_width = MIN(box_width, MAX((int)SQRT((float)tile_pixels), 1));
    tile_height = MIN(box_height, tile_pixels / tile_width);
    const int twice = 2 * drawn[0];
    tile_x = MIN(MAX(centres[0] / twice - tile_width / 2, bx), bx + box_width - tile_width);
    tile_y = MIN(MAX(centres[1] / twice - tile_height / 2, by), by + box_height - tile_height);
  }
  const int values = SPLAT_CHANNELS * tile_width * tile_height;
  const int in_tile = tiled && visible && x0 >= tile_x && x1 < tile_x + tile_width &&
                      y0 >= tile_y && y1 < tile_y + tile_height;
  if (tiled) {
    for (int v = LOCAL_ID; v < values; v += LOCAL_SIZE) tile[v] = 0u;
    if (in_tile) ATOMIC_ADD(&drawn[1], 1);
    SYNC_THREADS;
  }

  for (int py = y0; py <= y1; ++py) {
    const float oy = ((float)py + 0.5f - yw) * to_offset;
    for (int px = x0; px <= x1; ++px) {
      const float ox = ((float)px + 0.5f - xw) * to_offset;
      const float r2 = ox * ox + oy * oy;
      if (r2 > 1.0f) continue;
      const float weight = exp(-4.0f * r2);
      const float light = intensity * weight;
      GLOBAL ulong* pixel = accumulation + (size_t)SPLAT_CHANNELS * ((size_t)py * width + px);
      LOCAL_ARG uint* counter =
          tile + (in_tile ? SPLAT_CHANNELS * ((py - tile_y) * tile_width + (px - tile_x)) : 0);
      splat_add(pixel, counter, in_tile, splat_counts(r * light));
      splat_add(pixel + 1, counter + 1, in_tile, splat_counts(g * light));
      splat_add(pixel + 2, counter + 2, in_tile, splat_counts(b * light));
      splat_add(pixel + 3, counter + 3, in_tile, splat_counts(weight));
    }
  }

  if (tiled) {
    SYNC_THREADS;
    for (int v = LOCAL_ID; v < values; v += LOCAL_SIZE) {
      const uint counts = tile[v];
      if (counts == 0u) continue;
      const int cell = v / SPLAT_CHANNELS, channel = v - SPLAT_CHANNELS * cell;
      const int px = tile_x + cell % tile_width, py = tile_y + cell / tile_width;
      ATOMIC_ADD_ULONG(
          accumulation + (size_t)SPLAT_CHANNELS * ((size_t)py * width + px) + channel, counts);
    }
  }
  if (LOCAL_ID == 0) {
    ATOMIC_ADD_ULONG(sprites, (uint)drawn[0]);
    if (drawn[1] > 0) ATOMIC_ADD_ULONG(sprites + 1, (uint)drawn[1]);
  }
}

/* One work-item per value (pixel channel): counts back to light, and the counts cleared so the
 * next frame's splat starts from zero, unless `keep`: the next splat adds a level of detail's
 * next stretch to them. */
KERNEL void splat_resolve(GLOBAL ulong* RESTRICT accumulation, const int values,
                          GLOBAL float* RESTRICT light, const int keep) {
  const int i = GLOBAL_ID;
  if (i >= values) return;
  light[i] = (float)accumulation[i] * (1.0f / FIXED_ONE);
  if (!keep) accumulation[i] = 0;
}

