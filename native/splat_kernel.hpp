// The particle pass's splat on the host (native/splat.cpp drives it): the same Gaussian sprites
// as app/render/kernels/splat.cl, with its arithmetic but for the weight (below), for software GL,
// where rasterising points costs more than the CPU does alone (docs/adr/0160). Compiled per
// instruction set (simd_*.cpp): the band's resolve (64-bit counts to float) vectorises with
// AVX-512DQ, and simd_avx512.cpp specialises a sprite row (SplatRow: four pixels' channels in
// one register; with the resolve, 100k 3-pixel sprites take 9 ms on one thread against 12 at
// AVX2); the rest is the same scalar code everywhere.
//
//   1. project (splat_project, particles in chunks): clip = M (x, y, z, 1), dropped behind the
//      camera or outside the depth range, the window position, the colour (population, speed
//      or heading, times the population's brightness); a sprite with no pixel in the image is
//      marked off (x = NaN);
//   2. splat.cpp lists each sprite in every band of kSplatBandRows rows it touches, in index
//      order (a counting sort);
//   3. draw a band (splat_band, bands in chunks): every pixel of the band within a listed
//      sprite's disc (splat.cl's test, the same bits) adds round(v * fixed_one) counts of each
//      channel (capped at fixed_cap) into a 64-bit accumulator of the band, as splat.cl's
//      splat_add; then the counts become light ((float)counts / fixed_one, splat_resolve) in
//      the output rows.
//
// One difference from splat.cl: the weight exp(-4 r2) is the product exp(-4 ox^2) exp(-4 oy^2)
// of per-column and per-row factors (a sprite of s x s pixels takes 2 s exponentials, not s^2:
// 1.4x faster at 6 pixels), a few ulp from splat.cl's, so a contribution may differ from its
// count by one (1e-6 of a unit of light).
//
// Determinism: integer sums do not depend on order, a band's pixels belong to that band alone,
// and no step depends on which thread ran it or on the instruction set (the libm calls are the
// same functions, the conversions correctly rounded, FP contraction off): the image is the same
// bits for any thread count and level.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace orrery {

constexpr int kSplatChannels = 4;
constexpr int kSplatBandRows = 16;  // 16 rows of 1280 pixels: 655 KB of counts, in L2

// What one frame's splat reads (splat.cpp fills it).
struct SplatInput {
  const float* position;  // (count, 3)
  const float* previous;  // (count, 3): the last frame's, for speed and heading
  const std::uint8_t* population;  // count labels, used modulo 16
  std::size_t count;
  const float* palette;  // 16 x (r, g, b, brightness)
  int colour_mode;       // 0 population, 1 speed, 2 heading
  float speed_scale;     // 1 / (frame interval * median speed)
  float point_size;      // sprite diameter in pixels
  float intensity;
  float matrix[16];  // view-projection, row by row
  int width;
  int height;
  float fixed_one;  // counts per unit of light
  float fixed_cap;  // the largest contribution in counts
};

// A projected particle: window position (x = NaN: not drawn) and its colour.
struct SplatSprite {
  float x, y, r, g, b;
};

// The band lists of one frame: the sprites of band k are listed[start[k] .. start[k + 1]), copies
// in index order (read in sequence: the particles of a band lie all over the particle array).
struct SplatBands {
  const SplatSprite* listed;
  const std::size_t* start;
  float* light;  // (height, width, 4) output, bottom row first
};

// Both templates take the level's Vec<float> only so that each simd_*.cpp file instantiates
// its own copy under its own flags.
using SplatProjectFn = void (*)(const SplatInput&, std::size_t begin, std::size_t end,
                                SplatSprite* out);
using SplatBandFn = void (*)(const SplatInput&, const SplatBands&, std::size_t first_band,
                             std::size_t end_band);

template <class Vec>
void splat_project(const SplatInput& in, std::size_t begin, std::size_t end, SplatSprite* out) {
  const float* m = in.matrix;
  const float half_size = 0.5f * in.point_size;
  for (std::size_t i = begin; i < end; ++i) {
    SplatSprite& s = out[i];
    s.x = NAN;
    const float x = in.position[3 * i], y = in.position[3 * i + 1], z = in.position[3 * i + 2];
    const float cw = m[12] * x + m[13] * y + m[14] * z + m[15];
    const float cx = m[0] * x + m[1] * y + m[2] * z + m[3];
    const float cy = m[4] * x + m[5] * y + m[6] * z + m[7];
    const float cz = m[8] * x + m[9] * y + m[10] * z + m[11];
    if (!(cw > 0.0f) || std::fabs(cz) > cw) continue;
    const float xw = (cx / cw + 1.0f) * 0.5f * static_cast<float>(in.width);
    const float yw = (cy / cw + 1.0f) * 0.5f * static_cast<float>(in.height);
    // no pixel of the sprite in the image (tested in float: far centres overflow an int)
    if (!(xw + half_size > 0.0f && xw - half_size < static_cast<float>(in.width) &&
          yw + half_size > 0.0f && yw - half_size < static_cast<float>(in.height)))
      continue;
    const float* entry = in.palette + 4 * (in.population[i] & 15);
    float r = entry[0], g = entry[1], b = entry[2];
    const float dx = x - in.previous[3 * i], dy = y - in.previous[3 * i + 1],
                dz = z - in.previous[3 * i + 2];
    if (in.colour_mode == 1) {
      // fmax and fmin: a NaN previous position colours as the slowest, not as NaN light
      const float ratio = std::fmax(std::sqrt(dx * dx + dy * dy + dz * dz) * in.speed_scale, 1e-6f);
      const float t = std::fmin(std::fmax(0.5f + 0.25f * std::log2(ratio), 0.0f), 1.0f);
      auto mix = [](float a, float c, float u) { return a + (c - a) * u; };
      if (t < 0.5f) {  // slow deep blue to median pink
        r = mix(0.25f, 0.95f, t * 2.0f);
        g = mix(0.35f, 0.35f, t * 2.0f);
        b = mix(1.0f, 0.6f, t * 2.0f);
      } else {         // median pink to fast amber
        r = mix(0.95f, 1.0f, t * 2.0f - 1.0f);
        g = mix(0.35f, 0.8f, t * 2.0f - 1.0f);
        b = mix(0.6f, 0.3f, t * 2.0f - 1.0f);
      }
    } else if (in.colour_mode == 2) {
      // the direction of travel as a colour; a particle that did not move keeps its palette's
      const float distance = std::sqrt(dx * dx + dy * dy + dz * dz);
      if (distance > 0.0f) {
        r = 0.5f + 0.5f * (dx / distance);
        g = 0.5f + 0.5f * (dy / distance);
        b = 0.5f + 0.5f * (dz / distance);
      }
    }
    s = SplatSprite{xw, yw, r * entry[3], g * entry[3], b * entry[3]};
  }
}

// One row of a sprite: `columns` pixels from `pixel` on (4 counts each), the column factors
// ox2[i] = ox^2 and ex[i] = exp(-4 ox^2), the row's oy2 and ey, and the sprite's colour.
struct SplatRowArgs {
  const float* ox2;
  const float* ex;
  int columns;
  float oy2, ey, intensity, r, g, b, one, cap;
};

// Adds a sprite row's contributions, splat.cl's splat_add for each pixel in the disc. The
// generic version; a level may specialise it (simd_avx512.cpp: four pixels' four channels in
// one register, the same operations in the same order, so the same bits).
template <class Vec>
struct SplatRow {
  static void add(const SplatRowArgs& a, std::uint64_t* pixel) {
    auto add_one = [&a](std::uint64_t* count, float value) {
      const float amount = std::min(value * a.one + 0.5f, a.cap);
      if (amount >= 1.0f) *count += static_cast<std::uint64_t>(amount);
    };
    for (int i = 0; i < a.columns; ++i, pixel += kSplatChannels) {
      if (a.ox2[i] + a.oy2 > 1.0f) continue;  // splat.cl's r2 = ox * ox + oy * oy, the same bits
      const float weight = a.ex[i] * a.ey;
      const float brightness = a.intensity * weight;
      add_one(pixel, a.r * brightness);
      add_one(pixel + 1, a.g * brightness);
      add_one(pixel + 2, a.b * brightness);
      add_one(pixel + 3, weight);
    }
  }
};

template <class Vec>
void splat_band(const SplatInput& in, const SplatBands& bands, std::size_t first_band,
                std::size_t end_band) {
  const int width = in.width;
  const std::size_t row_values = static_cast<std::size_t>(width) * kSplatChannels;
  thread_local std::vector<std::uint64_t> counts;  // the band's: zero between bands
  if (counts.size() != kSplatBandRows * row_values) counts.assign(kSplatBandRows * row_values, 0);
  const float half_size = 0.5f * in.point_size, to_offset = 2.0f / in.point_size;
  const float to_light = 1.0f / in.fixed_one;
  // per column of a sprite: ox^2 and exp(-4 ox^2) (a sprite spans at most floor(size) + 2
  // columns, one more kept for the rounding of its edges, and never more than the image's)
  thread_local std::vector<float> ox2, ex;
  const std::size_t widest = static_cast<std::size_t>(std::min(std::floor(in.point_size) + 3.0f,
                                                               static_cast<float>(width)));
  if (ox2.size() < widest) {
    ox2.resize(widest);
    ex.resize(widest);
  }
  for (std::size_t band = first_band; band < end_band; ++band) {
    const int row0 = static_cast<int>(band) * kSplatBandRows;
    const int row1 = std::min(row0 + kSplatBandRows, in.height);  // past the band's last row
    float* light = bands.light + static_cast<std::size_t>(row0) * row_values;
    const std::size_t values = static_cast<std::size_t>(row1 - row0) * row_values;
    if (bands.start[band] == bands.start[band + 1]) {
      std::fill(light, light + values, 0.0f);
      continue;
    }
    for (std::size_t k = bands.start[band]; k < bands.start[band + 1]; ++k) {
      const SplatSprite& s = bands.listed[k];
      // clamped in float first: a huge sprite's corners overflow an int
      const int x0 = static_cast<int>(std::max(std::floor(s.x - half_size), 0.0f));
      const int x1 = static_cast<int>(std::min(std::floor(s.x + half_size), width - 1.0f));
      const int y0 = static_cast<int>(std::max(std::floor(s.y - half_size), float(row0)));
      const int y1 = static_cast<int>(std::min(std::floor(s.y + half_size), row1 - 1.0f));
      const int columns = x1 - x0 + 1;
      for (int i = 0; i < columns; ++i) {  // no factor beside the disc (its pixels add nothing)
        const float ox = (static_cast<float>(x0 + i) + 0.5f - s.x) * to_offset;
        ox2[i] = ox * ox;
        ex[i] = ox2[i] <= 1.0f ? std::exp(-4.0f * ox2[i]) : 0.0f;
      }
      SplatRowArgs row{ox2.data(), ex.data(), columns, 0.0f, 0.0f, in.intensity, s.r, s.g, s.b,
                       in.fixed_one, in.fixed_cap};
      for (int py = y0; py <= y1; ++py) {
        const float oy = (static_cast<float>(py) + 0.5f - s.y) * to_offset;
        row.oy2 = oy * oy;
        if (row.oy2 > 1.0f) continue;  // a row above or below the disc
        row.ey = std::exp(-4.0f * row.oy2);
        SplatRow<Vec>::add(row, counts.data() + static_cast<std::size_t>(py - row0) * row_values +
                                    static_cast<std::size_t>(x0) * kSplatChannels);
      }
    }
    std::uint64_t* c = counts.data();
    for (std::size_t v = 0; v < values; ++v) {
      light[v] = static_cast<float>(c[v]) * to_light;
      c[v] = 0;
    }
  }
}

}  // namespace orrery
