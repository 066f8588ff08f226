// Binds the host tone map into yuv420p (tone_map.hpp): the arrays are checked, not coerced (a
// copy of the frame would be written into and thrown away), and it runs with the GIL released so
// that the solver and the encoder go on meanwhile.
#include <cstdint>
#include <stdexcept>

#include "python/arrays.hpp"
#include "tone_map.hpp"

namespace orrery {
namespace {

template <typename T>
bool c_array_of(const py::array& a) {
  return py::isinstance<py::array_t<T>>(a) && (a.flags() & py::array::c_style);
}

void tone_map(const py::array& light, const py::array& table, py::array& frame) {
  if (!c_array_of<float>(light) || light.ndim() != 3 || light.shape(2) != 4)
    throw std::invalid_argument("tone_map_yuv420: light must be a C-contiguous (height, width, 4) "
                                "float32 array");
  if (!c_array_of<std::uint8_t>(table) || table.ndim() != 1 ||
      static_cast<std::size_t>(table.shape(0)) != kToneTableSize)
    throw std::invalid_argument("tone_map_yuv420: table must be a C-contiguous uint8 array of " +
                                std::to_string(kToneTableSize) + " entries");
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
  m.def("tone_map_yuv420", &tone_map, py::arg("light"), py::arg("table"),
        py::arg("frame").noconvert(),
        "The light ((height, width, 4) float32, bottom row first; even sides) tone mapped through "
        "`table` (uint8, one entry per float32 bits >> TONE_TABLE_SHIFT) and converted into "
        "`frame`, a (height * 3 / 2, width) uint8 yuv420p frame, top row first: BT.709 limited "
        "range, chroma as app/render/shaders/yuv420.frag sites it. Releases the GIL.");
}

}  // namespace orrery
