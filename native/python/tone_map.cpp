// Binds the host tone map into RGBX and into yuv420p (tone_map.hpp): the arrays are checked, not
// coerced (a copy of the output would be written into and thrown away), and each runs with the
// GIL released so that the solver and the encoder go on meanwhile.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "python/arrays.hpp"
#include "tone_map.hpp"

namespace orrery {
namespace {

template <typename T>
bool c_array_of(const py::array& a) {
  return py::isinstance<py::array_t<T>>(a) && (a.flags() & py::array::c_style);
}

// The light and the table, checked as `name` takes them.
void check_light_and_table(const char* name, const py::array& light, const py::array& table) {
  if (!c_array_of<float>(light) || light.ndim() != 3 || light.shape(2) != 4)
    throw std::invalid_argument(std::string(name) + ": light must be a C-contiguous (height, "
                                "width, 4) float32 array");
  if (!c_array_of<std::uint8_t>(table) || table.ndim() != 1 ||
      static_cast<std::size_t>(table.shape(0)) != kToneTableSize)
    throw std::invalid_argument(std::string(name) + ": table must be a C-contiguous uint8 array "
                                "of " + std::to_string(kToneTableSize) + " entries");
}

void to_rgbx(const py::array& light, const py::array& table, py::array& picture, bool flip) {
  check_light_and_table("tone_map_rgbx", light, table);
  const py::ssize_t height = light.shape(0), width = light.shape(1);
  if (!c_array_of<std::uint8_t>(picture) || picture.ndim() != 3 || picture.shape(0) != height ||
      picture.shape(1) != width || picture.shape(2) != 4 || !picture.writeable())
    throw std::invalid_argument("tone_map_rgbx: picture must be a writable C-contiguous uint8 "
                                "(height, width, 4) array");
  const float* in = static_cast<const float*>(light.data());
  const std::uint8_t* entries = static_cast<const std::uint8_t*>(table.data());
  std::uint8_t* out = static_cast<std::uint8_t*>(picture.mutable_data());
  py::gil_scoped_release release;
  tone_map_rgbx(in, static_cast<int>(width), static_cast<int>(height), entries, flip, out);
}

void tone_map(const py::array& light, const py::array& table, py::array& frame) {
  check_light_and_table("tone_map_yuv420", light, table);
  const py::ssize_t height = light.shape(0), width = light.shape(1);
  if (!c_array_of<std::uint8_t>(frame) || frame.ndim() != 2 || frame.shape(0) != height * 3 / 2 ||
      frame.shape(1) != width || !frame.writeable())
    throw std::invalid_argument("tone_map_yuv420: frame must be a writable C-contiguous uint8 "
                                "(height * 3 / 2, width) array");
  const float* in = static_cast<const float*>(light.data());
  const std::uint8_t* entries = static_cast<const std::uint8_t*>(table.data());
  std::uint8_t* out = static_cast<std::uint8_t*>(frame.mutable_data());
  py::gil_scoped_release release;
  tone_map_yuv420(in, static_cast<int>(width), static_cast<int>(height), entries, out);
}

}  // namespace

void register_tone_map(py::module_& m) {
  m.attr("TONE_TABLE_SHIFT") = kToneTableShift;
  m.def("tone_map_rgbx", &to_rgbx, py::arg("light"), py::arg("table"),
        py::arg("picture").noconvert(), py::arg("flip"),
        "The light ((height, width, 4) float32) tone mapped through `table` (uint8, one entry per "
        "float32 bits >> TONE_TABLE_SHIFT) into `picture`, a (height, width, 4) uint8 RGBX array "
        "(the fourth byte 255), its rows in the light's order or, with `flip`, reversed. "
        "Releases the GIL.");
  m.def("tone_map_yuv420", &tone_map, py::arg("light"), py::arg("table"),
        py::arg("frame").noconvert(),
        "The light ((height, width, 4) float32, bottom row first; even sides) tone mapped through "
        "`table` (uint8, one entry per float32 bits >> TONE_TABLE_SHIFT) and converted into "
        "`frame`, a (height * 3 / 2, width) uint8 yuv420p frame, top row first: BT.709 limited "
        "range, chroma as app/render/shaders/yuv420.frag sites it. Releases the GIL.");
}

}  // namespace orrery
