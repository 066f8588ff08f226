// The particle pass's splat on the host (splat.hpp): project, list per band of rows, draw the bands.
#include "splat.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel.hpp"

namespace orrery {
namespace {

// Particles per chunk of the projection: large enough that the chunks' bookkeeping is free.
constexpr std::size_t kProjectChunk = 8192;

// One frame's band lists, reused by the next frame of the same calling thread.
struct SplatScratch {
  std::vector<SplatSprite> sprites;  // in index order
  std::vector<SplatSprite> listed;   // band by band
  std::vector<std::size_t> start;
};

SplatScratch& scratch_for_thread() {
  thread_local SplatScratch scratch;
  return scratch;
}

// The bands a projected sprite's rows reach, [first, last]; false where it is not drawn.
bool sprite_bands(const SplatSprite& s, float half_size, int height, int& first, int& last) {
  if (std::isnan(s.x)) return false;
  const float y0 = std::max(std::floor(s.y - half_size), 0.0f);
  const float y1 = std::min(std::floor(s.y + half_size), height - 1.0f);
  first = static_cast<int>(y0) / kSplatBandRows;
  last = static_cast<int>(y1) / kSplatBandRows;
  return true;
}

// Each drawn sprite listed in every band it touches, in index order (a counting sort).
void list_bands(SplatScratch& scratch, std::size_t count, float half_size, int height,
                std::size_t bands) {
  std::vector<std::size_t>& start = scratch.start;
  start.assign(bands + 1, 0);
  int first = 0, last = 0;
  for (std::size_t i = 0; i < count; ++i)
    if (sprite_bands(scratch.sprites[i], half_size, height, first, last))
      for (int band = first; band <= last; ++band) ++start[band + 1];
  for (std::size_t band = 0; band < bands; ++band) start[band + 1] += start[band];
  scratch.listed.resize(start[bands]);
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < count; ++i)
    if (sprite_bands(scratch.sprites[i], half_size, height, first, last))
      for (int band = first; band <= last; ++band)
        scratch.listed[next[band]++] = scratch.sprites[i];
}

}  // namespace

void splat_points(const SplatInput& in, float* out, unsigned threads, const SimdKernels& kernels) {
  // fewer than 2^31 capped contributions a pixel keep its 64-bit sum from wrapping (splat.cl)
  if (in.count >= (std::size_t(1) << 31)) throw std::invalid_argument("splat_points: at most 2^31 - 1 particles");
  if (in.colour_mode < 0 || in.colour_mode > 2)
    throw std::invalid_argument("splat_points: colour_mode must be 0 (population), 1 (speed) or 2 (heading)");
  if (!(in.point_size > 0.0f) || !std::isfinite(in.point_size) || !(in.intensity > 0.0f) ||
      !std::isfinite(in.intensity) || !std::isfinite(in.speed_scale))
    throw std::invalid_argument("splat_points: point_size and intensity must be finite and positive, speed_scale finite");
  // a contribution below 2^32 keeps fewer than 2^31 of them on a pixel below 2^63 (splat.cl)
  if (!(in.fixed_one >= 1.0f) || !(in.fixed_cap >= 1.0f) || !(in.fixed_cap <= 4294967296.0f))
    throw std::invalid_argument("splat_points: fixed_one must be >= 1 and fixed_cap in 1 .. 2^32");
  if (in.width < 1 || in.height < 1) throw std::invalid_argument("splat_points: light must hold pixels");
  if (threads == 0) threads = ThreadPool::hardware_threads();
  SplatScratch& scratch = scratch_for_thread();
  scratch.sprites.resize(in.count);
  ThreadPool& pool = ThreadPool::instance();
  pool.parallel_for(in.count, kProjectChunk, threads, [&](std::size_t begin, std::size_t end) {
    kernels.splat_project(in, begin, end, scratch.sprites.data());
  });
  const std::size_t bands = (static_cast<std::size_t>(in.height) + kSplatBandRows - 1) / kSplatBandRows;
  list_bands(scratch, in.count, 0.5f * in.point_size, in.height, bands);
  const SplatBands lists{scratch.listed.data(), scratch.start.data(), out};
  pool.parallel_for(bands, 1, threads, [&](std::size_t begin, std::size_t end) {
    kernels.splat_band(in, lists, begin, end);
  });
}

}  // namespace orrery
