// The served picture's last steps on the host (app/render/_host_tone_map.py calls it through the
// bindings): the host splat's light tone mapped through a table of the curve and converted to a
// yuv420p frame in one pass, as app/render/shaders/tonemap.frag and yuv420.frag do on a GPU.
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
void tone_map_yuv420(const float* light, int width, int height, const std::uint8_t* table,
                     std::uint8_t* frame);

}  // namespace orrery
