// Binds the host splat (splat.hpp): the arrays are checked, not coerced (a silent copy of the
// light would be drawn into and thrown away), and the splat runs with the GIL released so that
// the solver thread steps while the viewer splats.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "python/arrays.hpp"
#include "splat.hpp"

namespace orrery {
namespace {

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

void splat(const py::array& position, const py::array& previous, const py::array& population,
           const py::array& palette, int colour_mode, float speed_scale, float point_size, float intensity,
           const py::array& view_projection, float fixed_one, float fixed_cap, py::array& light, unsigned threads,
           const std::string& simd) {
  SplatInput in{};
  in.position = checked<float>(position, "position", {-1, 3});
  const py::ssize_t n = position.shape(0);
  in.previous = checked<float>(previous, "previous", {n, 3});
  in.population = checked<std::uint8_t>(population, "population", {n});
  in.palette = checked<float>(palette, "palette", {16, 4});
  const float* matrix = checked<float>(view_projection, "view_projection", {4, 4});
  checked<float>(light, "light", {-1, -1, kSplatChannels});
  if (!light.writeable()) throw std::invalid_argument("splat_points: light must be writable");
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
  const SimdKernels& kernels = simd_kernels(choose_simd_level(simd));
  float* out = static_cast<float*>(light.mutable_data());
  py::gil_scoped_release release;
  splat_points(in, out, threads, kernels);
}

}  // namespace

void register_splat(py::module_& m) {
  m.def("splat_points", &splat, py::arg("position"), py::arg("previous"),
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
