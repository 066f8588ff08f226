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
 * Fixed point: a contribution v becomes round(v * FIXED_ONE) counts (FIXED_ONE = 2^20, so one
 * unit of light resolves to 9.5e-7), capped at FIXED_CAP = 2^32 - 256 counts (the largest float
 * below 2^32: 4096 units, light that is white after any exposure the viewer offers), and is
 * added with a 64-bit integer atomic. The sum of
 * fewer than 2^31 capped contributions stays below 2^63, so a pixel never wraps for any particle
 * count this index type can address.
 *
 * Determinism: integer addition is associative and exact, so each pixel's sum does not depend on
 * the order the atomics land in, and the image is the same bits on every run; the rounding is
 * per contribution, before the sum.
 *
 * Needs view.cl first (the projection).
 *
 * Host defines: FIXED_ONE (counts per unit of light, a float literal), FIXED_CAP (the largest
 * contribution in counts, a float literal), both single precision (`f` suffix). Colours come from `palette` (16 float4: rgb and the
 * population's brightness), labels from `population` (int per particle, used modulo 16). */

#define SPLAT_CHANNELS 4

DEVICE float splat_mix(float a, float b, float t) { return a + (b - a) * t; }

DEVICE void splat_add(GLOBAL ulong* RESTRICT pixel, float value) {
  const float counts = MIN(value * FIXED_ONE + 0.5f, FIXED_CAP);
  if (counts >= 1.0f) ATOMIC_ADD_ULONG(pixel, (ulong)counts);
}

/* One work-item per particle; m0..m15 are the view-projection matrix row by row (view.cl). */
KERNEL void splat_points(GLOBAL const float* RESTRICT position,
                         GLOBAL const float* RESTRICT previous,
                         GLOBAL const int* RESTRICT population, const int count,
                         GLOBAL const float* RESTRICT palette, const int colour_mode,
                         const float speed_scale, const float point_size, const float intensity,
                         VIEW_MATRIX_ARGUMENTS,
                         const int width, const int height, GLOBAL ulong* RESTRICT accumulation) {
  const int i = GLOBAL_ID;
  if (i >= count) return;
  const float x = position[3 * i], y = position[3 * i + 1], z = position[3 * i + 2];
  CLIP_COORDINATES(x, y, z);
  if (!(cw > 0.0f) || fabs(cz) > cw) return;
  const float xw = (cx / cw + 1.0f) * 0.5f * (float)width;
  const float yw = (cy / cw + 1.0f) * 0.5f * (float)height;
  const float half_size = 0.5f * point_size, to_offset = 2.0f / point_size;
  /* no pixel of the sprite in the image (tested in float: far centres overflow an int) */
  if (!(xw + half_size > 0.0f && xw - half_size < (float)width &&
        yw + half_size > 0.0f && yw - half_size < (float)height)) return;

  GLOBAL const float* entry = palette + 4 * (population[i] & 15);
  float r, g, b;
  if (colour_mode == 1) {
    const float dx = x - previous[3 * i], dy = y - previous[3 * i + 1],
                dz = z - previous[3 * i + 2];
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
    const float dx = x - previous[3 * i], dy = y - previous[3 * i + 1],
                dz = z - previous[3 * i + 2];
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

  const int x0 = MAX((int)floor(xw - half_size), 0);
  const int x1 = MIN((int)floor(xw + half_size), width - 1);
  const int y0 = MAX((int)floor(yw - half_size), 0);
  const int y1 = MIN((int)floor(yw + half_size), height - 1);
  for (int py = y0; py <= y1; ++py) {
    const float oy = ((float)py + 0.5f - yw) * to_offset;
    for (int px = x0; px <= x1; ++px) {
      const float ox = ((float)px + 0.5f - xw) * to_offset;
      const float r2 = ox * ox + oy * oy;
      if (r2 > 1.0f) continue;
      const float weight = exp(-4.0f * r2);
      const float light = intensity * weight;
      GLOBAL ulong* pixel = accumulation + (size_t)SPLAT_CHANNELS * ((size_t)py * width + px);
      splat_add(pixel, r * light);
      splat_add(pixel + 1, g * light);
      splat_add(pixel + 2, b * light);
      splat_add(pixel + 3, weight);
    }
  }
}

/* One work-item per value (pixel channel): counts back to light, and the counts cleared so the
 * next frame's splat starts from zero. */
KERNEL void splat_resolve(GLOBAL ulong* RESTRICT accumulation, const int values,
                          GLOBAL float* RESTRICT light) {
  const int i = GLOBAL_ID;
  if (i >= values) return;
  light[i] = (float)accumulation[i] * (1.0f / FIXED_ONE);
  accumulation[i] = 0;
}

