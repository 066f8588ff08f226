"""Tone mapping on the host: the host splat's light to an 8-bit RGBX picture, or straight to the
yuv420p frame an H.264 encoder takes, each in one native pass (``native/tone_map.cpp``). Where
the host splat draws, GL is software, and there the light never goes into GL: the renderer
copies the picture in (ADR 0342) and ``orrery serve`` encodes it (ADR 0335). At 1280x720 on two
shared cores the upload of the float light and llvmpipe's tone-map pass took 16-30 ms a picture;
the yuv420p frame takes 2.6 ms (docs/adr/0337).

The curve is ``tonemap.frag``'s (exposure, Narkowicz's filmic fit, gamma, rounded to 8 bits),
evaluated once per table entry instead of once per pixel: a light value is looked up by the top
bits of its float32 (sign, exponent and the ``MANTISSA_BITS`` leading mantissa bits), so values
within a part in 2**MANTISSA_BITS of each other share an entry. The curve's 8-bit output moves
by at most 0.12 of a step across an entry, so a pixel is GL's or one step from it (0.05% of the
pixels of the 30k collision at 720p).
"""

from __future__ import annotations

import functools

import numpy as np

from ... import _native
from ._style import ToneMap

_SHIFT = _native.TONE_TABLE_SHIFT  # float32 bits below those that index the table
MANTISSA_BITS = 23 - _SHIFT
# Tables kept: one per exposure a viewer has (a refining picture scales it each stretch).
_TABLES_KEPT = 8


@functools.lru_cache(maxsize=_TABLES_KEPT)
def tone_table(exposure: float, gamma: float) -> np.ndarray:
    """uint8 picture value of every float32 light value's table entry (index: its bits >> _SHIFT),
    each entry evaluated at the middle of the values it stands for."""
    first = (np.arange(1 << (32 - _SHIFT), dtype=np.uint32) << _SHIFT).view(np.float32)
    middle = (first.view(np.uint32) | (1 << (_SHIFT - 1))).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        light = np.where(np.isinf(first), first, middle).astype(np.float64)  # the infinities'
        light = np.where(np.isnan(light), 0.0, np.maximum(light, 0.0))  # as max(light, 0)
        x = np.minimum(light * exposure, 1e30)  # +inf light is white, not NaN
        mapped = np.clip((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0)
    return np.rint(255.0 * mapped ** (1.0 / gamma)).astype(np.uint8)


class HostToneMap:
    """The picture of an RGBA32F light array (bottom row first, as GL holds it): what
    ``ToneMapPass`` draws into an RGB8 framebuffer, with a fourth byte a pixel that means
    nothing (RGBX)."""

    def apply(self, light: np.ndarray, tone: ToneMap, *, top_first: bool = True) -> np.ndarray:
        """A new (height, width, 4) uint8 RGBX picture of ``light`` (height, width, 4) float32,
        top row first (``top_first=False``: bottom row first, as the light), in one native pass;
        ``tone`` without bloom (bloom blurs neighbours: only the GL pass draws it)."""
        # a new array each time: the last picture may still be waiting for its encoder
        picture = np.empty(light.shape, np.uint8)
        _native.tone_map_rgbx(light, _table(tone), picture, top_first)
        return picture

    @staticmethod
    def yuv420(light: np.ndarray, tone: ToneMap) -> np.ndarray:
        """A new (height * 3 / 2, width) uint8 yuv420p frame (``_video.yuv420_layout``) of
        ``light`` (height, width, 4) float32 with even sides: :meth:`apply`'s picture converted
        as the GPU's ``Yuv420Pass`` converts one (BT.709 limited range), in one native pass."""
        frame = np.empty((light.shape[0] * 3 // 2, light.shape[1]), np.uint8)
        _native.tone_map_yuv420(light, _table(tone), frame)
        return frame


def _table(tone: ToneMap) -> np.ndarray:
    tone.validate()
    if tone.bloom > 0:
        raise ValueError("the host tone map draws no bloom")
    return tone_table(float(tone.exposure), float(tone.gamma))
