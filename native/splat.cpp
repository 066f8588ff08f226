// The particle pass's splat on the host (splat_kernel.hpp; app/render/kernels/splat.cl is the same
// splat on a compute device): project the particles, list them per band of rows, draw the bands
// on all requested threads, the GIL released. app/render/_host_splat_pass.py calls it and
// uploads the light into the accumulation texture.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "splat_kernel.hpp"

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

template <typename T>
const T* checked(const py::array& a, const char* name, std::initializer_list<py::ssize_t> shape) {
  if (!py::isinstance<py::array_t<T>>(a) || !(a.flags() & py::array::c_style))
    throw std::invalid_argument(std::string("splat_points: ") + name + " must be a C-contiguous " +
                                py::str(py::dtype::of<T>()).cast<std::string>() + " array");
  std::size_t axis = 0;
  for (py::ssize_t extent : shape) {
    if (a.ndim() != static_cast<py::ssize_t>(shape.size()) ||
        (extent >= 0 && a.shape(axis) != extent))
      throw std::invalid_argument(std::string("splat_points: ") + name + " has the wrong shape");
    ++axis;
  }
  return static_cast<const T*>(a.data());
}

void splat_points(const py::array& position, const py::array& previous,
                  const py::array& population, const py::array& palette, int colour_mode,
                  float speed_scale, float point_size, float intensity,
                  const py::array& view_projection, float fixed_one, float fixed_cap,
                  py::array& light, unsigned threads, const std::string& simd) {
  const float* pos = checked<float>(position, "position", {-1, 3});
  const py::ssize_t n = position.shape(0);
  SplatInput in{};
  in.position = pos;
  in.previous = checked<float>(previous, "previous", {n, 3});
  in.population = checked<std::uint8_t>(population, "population", {n});
  in.palette = checked<float>(palette, "palette", {16, 4});
  const float* matrix = checked<float>(view_projection, "view_projection", {4, 4});
  checked<float>(light, "light", {-1, -1, kSplatChannels});
  if (!light.writeable()) throw std::invalid_argument("splat_points: light must be writable");
  // fewer than 2^31 capped contributions a pixel keep its 64-bit sum from wrapping (splat.cl)
  if (n >= (py::ssize_t(1) << 31)) throw std::invalid_argument("splat_points: at most 2^31 - 1 particles");
  if (colour_mode < 0 || colour_mode > 2)
    throw std::invalid_argument("splat_points: colour_mode must be 0 (population), 1 (speed) or 2 (heading)");
  if (!(point_size > 0.0f) || !std::isfinite(point_size) || !(intensity > 0.0f) ||
      !std::isfinite(intensity) || !std::isfinite(speed_scale))
    throw std::invalid_argument("splat_points: point_size and intensity must be finite and positive, speed_scale finite");
  // a contribution below 2^32 keeps fewer than 2^31 of them on a pixel below 2^63 (splat.cl)
  if (!(fixed_one >= 1.0f) || !(fixed_cap >= 1.0f) || !(fixed_cap <= 4294967296.0f))
    throw std::invalid_argument("splat_points: fixed_one must be >= 1 and fixed_cap in 1 .. 2^32");
  in.count = static_cast<std::size_t>(n);
  in.colour_mode = colour_mode;
  in.speed_scale = speed_scale;
  in.point_size = point_size;
  in.intensity = intensity;
  for (int k = 0; k < 16; ++k) in.matrix[k] = matrix[k];
  in.height = static_cast<int>(light.shape(0));
  in.width = static_cast<int>(light.shape(1));
  in.fixed_one = fixed_one;
  in.fixed_cap = fixed_cap;
  if (in.width < 1 || in.height < 1) throw std::invalid_argument("splat_points: light must hold pixels");
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  if (threads == 0) threads = ThreadPool::hardware_threads();
  float* out = static_cast<float*>(light.mutable_data());

  py::gil_scoped_release release;  // the solver thread steps while the viewer splats
  SplatScratch& scratch = scratch_for_thread();
  scratch.sprites.resize(in.count);
  ThreadPool& pool = ThreadPool::instance();
  pool.parallel_for(in.count, kProjectChunk, threads, [&](std::size_t begin, std::size_t end) {
    kernels.splat_project(in, begin, end, scratch.sprites.data());
  });
  const std::size_t bands = (static_cast<std::size_t>(in.height) + kSplatBandRows - 1) / kSplatBandRows;
  list_bands(scratch, in.count, 0.5f * point_size, in.height, bands);
  const SplatBands lists{scratch.listed.data(), scratch.start.data(), out};
  pool.parallel_for(bands, 1, threads, [&](std::size_t begin, std::size_t end) {
    kernels.splat_band(in, lists, begin, end);
  });
}

}  // namespace

void register_splat(py::module_& m) {
  m.def("splat_points", &splat_points, py::arg("position"), py::arg("previous"),
        py::arg("population"), py::arg("palette"), py::arg("colour_mode"), py::arg("speed_scale"),
        py::arg("point_size"), py::arg("intensity"), py::arg("view_projection"),
        py::arg("fixed_one"), py::arg("fixed_cap"), py::arg("light").noconvert(),
        py::arg("threads") = 0, py::arg("simd") = "",
        "Gaussian point sprites added into `light` ((height, width, 4) float32, bottom row "
        "first, overwritten) with 64-bit fixed-point sums, as kernels/splat.cl does: float32 "
        "(n, 3) position and previous, (n,) uint8 population labels, (16, 4) float32 palette, "
        "colour_mode 0 population, 1 speed, 2 heading, (4, 4) float32 view_projection. The "
        "same bits for any thread count and SIMD level. Releases the GIL.");
}

}  // namespace orrery
