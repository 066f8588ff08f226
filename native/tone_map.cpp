// The host tone map (tone_map.hpp): into RGBX a row at a time; into a yuv420p frame two rows of
// the picture at a time, their 8-bit RGB looked up once, in planes of ints, and read for the luma
// of both rows and the chroma between them, in fixed point.
#include "tone_map.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace orrery {
namespace {

// yuv420.frag's conversion, BT.709 limited range, in 16-bit fixed point: a level is
// (sum of weights x 8-bit values + offset) >> 16, the offset holding the constant and the 0.5
// that rounds. A weight's rounding moves a level by under 0.002, so a level is yuv420.frag's
// except where its value is that close to a half (then one step from it).
constexpr int kFractionBits = 16;
constexpr double kOne = 1 << kFractionBits;
constexpr double kLumaR = 0.2126, kLumaG = 0.7152, kLumaB = 0.0722;
constexpr double kCbScale = 1.8556, kCrScale = 1.5748;

constexpr int fixed(double value) { return static_cast<int>(value * kOne + (value < 0 ? -0.5 : 0.5)); }

// luma: 16 + 219/255 (r g b . LUMA)
constexpr double kLumaGain = 219.0 / 255.0;
constexpr int kYR = fixed(kLumaGain * kLumaR), kYG = fixed(kLumaGain * kLumaG),
              kYB = fixed(kLumaGain * kLumaB);
constexpr int kYOffset = fixed(16.0 + 0.5);
// chroma of the mean of 8 weighted values (a [1 2 1] filter on two rows): 128 + 224/255 (b - y)
// / 1.8556 and (r - y) / 1.5748, y the luma weights' sum, the 1/8 folded into the weights
constexpr double kCbGain = 224.0 / 255.0 / kCbScale / 8.0, kCrGain = 224.0 / 255.0 / kCrScale / 8.0;
constexpr int kUR = fixed(-kCbGain * kLumaR), kUG = fixed(-kCbGain * kLumaG),
              kUB = fixed(kCbGain * (1.0 - kLumaB));
constexpr int kVR = fixed(kCrGain * (1.0 - kLumaR)), kVG = fixed(-kCrGain * kLumaG),
              kVB = fixed(-kCrGain * kLumaB);
constexpr int kChromaOffset = fixed(128.0 + 0.5);

// Every level above lies in 16..240, so the sums are non-negative and need no clamp.
std::uint8_t level(int sum) { return static_cast<std::uint8_t>(sum >> kFractionBits); }

// A light value's table entry: its float32 bits >> kToneTableShift.
int toned(const std::uint8_t* table, const float* value) {
  std::uint32_t bits;
  std::memcpy(&bits, value, sizeof bits);
  return table[bits >> kToneTableShift];
}

// One row of light (RGBA floats) -> its 8-bit R, G and B, each a plane of ints.
void tone_row(const float* light, std::size_t width, const std::uint8_t* table, int* r, int* g,
              int* b) {
  for (std::size_t x = 0; x < width; ++x) {
    r[x] = toned(table, light + 4 * x);
    g[x] = toned(table, light + 4 * x + 1);
    b[x] = toned(table, light + 4 * x + 2);
  }
}

}  // namespace

void tone_map_rgbx(const float* light, int width, int height, const std::uint8_t* table, bool flip,
                   std::uint8_t* picture) {
  if (width <= 0 || height <= 0)
    throw std::invalid_argument("tone_map_rgbx: width and height must be positive");
  const std::size_t w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  for (std::size_t y = 0; y < h; ++y) {
    const float* in = light + 4 * w * (flip ? h - 1 - y : y);
    std::uint8_t* out = picture + 4 * w * y;
    for (std::size_t x = 0; x < w; ++x) {
      out[4 * x] = static_cast<std::uint8_t>(toned(table, in + 4 * x));
      out[4 * x + 1] = static_cast<std::uint8_t>(toned(table, in + 4 * x + 1));
      out[4 * x + 2] = static_cast<std::uint8_t>(toned(table, in + 4 * x + 2));
      out[4 * x + 3] = 255;
    }
  }
}

void tone_map_yuv420(const float* light, int width, int height, const std::uint8_t* table,
                     std::uint8_t* frame) {
  if (width <= 0 || height <= 0 || width % 2 || height % 2)
    throw std::invalid_argument("tone_map_yuv420: width and height must be even and positive");
  const std::size_t w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  std::uint8_t* luma = frame;
  std::uint8_t* cb = frame + w * h;
  std::uint8_t* cr = cb + (w / 2) * (h / 2);
  std::vector<int> planes(6 * w);  // R, G, B of the upper row, then of the lower
  std::vector<int> filtered(3 * w);  // the two rows' sum, then its [1 2 1] across columns
  for (std::size_t y = 0; y < h; y += 2) {
    for (std::size_t row = 0; row < 2; ++row) {
      int* r = planes.data() + 3 * w * row;
      int* g = r + w;
      int* b = g + w;
      // the frame's row y + row (top first) is the light's row h - 1 - y - row
      tone_row(light + 4 * w * (h - 1 - y - row), w, table, r, g, b);
      std::uint8_t* out = luma + w * (y + row);
      for (std::size_t x = 0; x < w; ++x) out[x] = level(kYR * r[x] + kYG * g[x] + kYB * b[x] + kYOffset);
    }
    for (std::size_t i = 0; i < 3 * w; ++i) filtered[i] = planes[i] + planes[3 * w + i];
    const int* r = filtered.data();
    const int* g = r + w;
    const int* b = g + w;
    std::uint8_t* cb_row = cb + (w / 2) * (y / 2);
    std::uint8_t* cr_row = cr + (w / 2) * (y / 2);
    for (std::size_t x = 0; x < w; x += 2) {
      const std::size_t left = x == 0 ? 0 : x - 1;  // the picture's edge repeats its column
      const int sr = r[left] + 2 * r[x] + r[x + 1], sg = g[left] + 2 * g[x] + g[x + 1],
                sb = b[left] + 2 * b[x] + b[x + 1];
      cb_row[x / 2] = level(kUR * sr + kUG * sg + kUB * sb + kChromaOffset);
      cr_row[x / 2] = level(kVR * sr + kVG * sg + kVB * sb + kChromaOffset);
    }
  }
}

}  // namespace orrery
