// A picture's last steps on the host (app/render/_host_tone_map.py calls them through the
// bindings): the host splat's light tone mapped through a table of the curve, as
// app/render/shaders/tonemap.frag does on a GPU, into 8-bit RGBX, or converted to a yuv420p frame
// in the same pass, as yuv420.frag does.
#pragma once

#include <cstddef>
#include <cstdint>

namespace orrery {

// Float32 bits below those that index the tone table: a light value's entry is its bits >> this.
constexpr int kToneTableShift = 13;
constexpr std::size_t kToneTableSize = std::size_t{1} << (32 - kToneTableShift);

// `light` (height rows of width RGBA floats, bottom row first) into `frame` (yuv420p, top row
// first: the Y plane's height rows of width bytes, then U and then V, each width/2 x height/2),
// each channel's 8-bit value looked up in `table` (kToneTableSize entries, by bits >> shift).
// BT.709 limited range, chroma left-sited as yuv420.frag: a [1 2 1] / 4 filter across columns
// and the mean of two rows, every value rounded to its level. width and height must be even.
// `light` (height rows of width RGBA floats) into `picture` (height rows of width RGBX bytes):
// each colour channel's 8-bit value looked up in `table` as above, the fourth byte 255; the rows
// in the light's order, or with `flip` in reverse (the light bottom row first as GL holds it, the
// picture top row first as an image file or an encoder takes it).
void tone_map_rgbx(const float* light, int width, int height, const std::uint8_t* table, bool flip,
                   std::uint8_t* picture);

void tone_map_yuv420(const float* light, int width, int height, const std::uint8_t* table,
                     std::uint8_t* frame);

}  // namespace orrery
