"""How a recorded frame's positions are stored: float32, float16, or 16-bit fixed point on the
frame's bounding box, in one place: the names, the stored dtypes, the device's narrowing
(:class:`DeviceFrames`, ``kernels/frames.cl``, so only the stored bytes cross the bus),
the host's side of the same encodings, bit for bit, for states kept in host memory, and the
decoding every reader uses.

fixed16: each coordinate is q = rint((x - lo) * scale) clamped to 0..65535 (float32 arithmetic,
ties to even), with lo the frame's minimum on that axis, step = extent / 65535 and
scale = 65535 / extent (float32; a flat axis has both 0). Decoded as lo + q * step (float64,
then float32). The absolute error per axis is at most :func:`fixed16_error` of that axis: half
a step plus the float32 roundings of x - lo, of the product, of step and of scale (a few
ulp of the extent), bounded generously by 2**-20 of the extent. Like SWIFT's lossy position
filters, the error is uniform over the box, where float16's grows with distance from 0.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from .errors import InvalidInputError

FLOAT32 = "float32"
FLOAT16 = "float16"
FIXED16 = "fixed16"
ENCODINGS = (FLOAT32, FLOAT16, FIXED16)

# The names an encoding goes by where one is chosen (a Recorder's dtype, the runner's and the
# command line's precision): long and short.
NAMES = {"float32": FLOAT32, "f32": FLOAT32, "float16": FLOAT16, "f16": FLOAT16,
         "fixed16": FIXED16}
# The dtype each encoding stores positions as.
STORED_DTYPES = {FLOAT32: np.dtype("<f4"), FLOAT16: np.dtype("<f2"), FIXED16: np.dtype("<u2")}
# fixed16: a frame's box is 9 float32 values (lo xyz, step xyz, scale xyz); the device appends
# them to the frame's 3n values as 18 uint16 words (little-endian), so one download carries both.
BOX_VALUES = 9
BOX_WORDS = 2 * BOX_VALUES
FIXED_LEVELS = 65535
# Beyond half a step, the float32 roundings of a fixed16 frame, as a fraction of the extent.
FIXED16_ROUNDING = 2.0**-20
# The largest finite float16: a float32 of magnitude 65520 or more narrows to inf.
HALF_MAX = 65504.0
_HALF_EXPONENT_AND_SIGNIFICAND = 0x7FFF
_HALF_INFINITY = 0x7C00
# Work-group size of frames.cl's bounds kernels (a power of two), and the work-groups of the
# fixed16 box's first pass.
BOUNDS_GROUP = 256
BOUNDS_GROUPS = 64
WIDEN_GROUP = 256


def frame_program(context, real_bits: int):
    """``frames.cl`` built on ``context`` for states of ``real_bits`` precision."""
    return context.build(["frames.cl"], package=__package__, defines={"REAL_BITS": real_bits,
                                                  "BOUNDS_GROUP": BOUNDS_GROUP})


class DeviceFrames:
    """Frames and keyframes of a device state's rows, made by ``frames.cl`` on ``context`` in
    queue order and downloaded without waiting: a state of ``real_bits`` precision whose
    kernels cover ``n`` rows with ``launch`` work-items in groups of ``group``."""

    def __init__(self, context, real_bits: int, n: int, launch: int, group: int):
        self._context, self._n, self._launch, self._group = context, n, launch, group
        self._program = frame_program(context, real_bits)
        # The first pass's partials, then the box, reused by every frame: the queue orders one
        # frame's kernels before the next frame's.
        self._partials = context.empty(6 * BOUNDS_GROUPS, np.float32)
        self._box = context.empty(BOX_VALUES, np.float32)

    def narrowed(self, encoding: str, body):
        """The positions of ``body`` (``real4`` rows x, y, z, mass) as a staged frame in
        ``encoding`` (float16 or fixed16: :func:`staged_shape`), a snapshot whose
        ``kernel_events`` time the narrowing."""
        count = np.int32(self._n)
        events = []  # the narrowing's device time, read by whoever waits for the copy
        program = self._program

        def write_half(out):
            events.append(program.kernel("frame_half").launch(self._launch, self._group, body,
                                                              count, out))

        def write_fixed(out):
            events.append(program.kernel("bounds_partials").launch(
                BOUNDS_GROUPS * BOUNDS_GROUP, BOUNDS_GROUP, body, count, self._partials))
            events.append(program.kernel("bounds_finish").launch(
                BOUNDS_GROUP, BOUNDS_GROUP, self._partials, np.int32(BOUNDS_GROUPS), self._box))
            events.append(program.kernel("frame_fixed16").launch(
                self._launch, self._group, body, count, self._box, out))

        half = check_encoding(encoding) == FLOAT16
        if not half and encoding != FIXED16:
            raise InvalidInputError(f"the device narrows frames to {FLOAT16} or {FIXED16}, not "
                                    f"{encoding}")
        snapshot = self._context.snapshot(staged_shape(encoding, self._n),
                                          np.float16 if half else np.uint16,
                                          write_half if half else write_fixed)
        snapshot.kernel_events = events
        return snapshot

    def rows(self, rows, dtype):
        """The first three columns of ``rows`` (``real4``) as (n, 3) in ``dtype``, the state's
        precision: a keyframe's exact positions or velocities."""
        def write(out):
            self._program.kernel("state_xyz").launch(self._launch, self._group, rows,
                                                     np.int32(self._n), out)
        return self._context.snapshot((self._n, 3), dtype, write)


def widened_on_device(context, positions: np.ndarray):
    """float16 positions (n, 3) as a float32 device array on ``context``: the halves are
    uploaded (half the bytes of float32) and widened there, exactly (``frame_widen_half``)."""
    halves = np.ascontiguousarray(positions, dtype=np.float16).reshape(-1, 3)
    count = halves.shape[0]
    wide = context.empty(halves.shape, np.float32)
    if count:
        launch = max(1, -(-count // WIDEN_GROUP)) * WIDEN_GROUP
        frame_program(context, 32).kernel("frame_widen_half").launch(
            launch, WIDEN_GROUP, context.upload(halves.view(np.uint16)), np.int32(count), wide)
    return wide


def named(name) -> str:
    """``"float32"``/``"f32"``, ``"float16"``/``"f16"`` (or the numpy dtype), or ``"fixed16"``
    -> the encoding's name (one of ``ENCODINGS``)."""
    key = np.dtype(name).name if not isinstance(name, str) else name
    if key not in NAMES:
        raise InvalidInputError(f"recording dtype must be float32, float16 or fixed16, got "
                                f"{name!r}")
    return NAMES[key]


def check_encoding(name: str) -> str:
    if name not in ENCODINGS:
        raise InvalidInputError(f"frame encoding must be one of {ENCODINGS}, got {name!r}")
    return name


def staged_shape(encoding: str, n: int) -> tuple[int, ...]:
    """The shape of a staged frame of ``n`` positions: (n, 3), or for fixed16 the 3n values
    followed by the box's words, flat."""
    return (3 * n + BOX_WORDS,) if encoding == FIXED16 else (n, 3)


def check_narrowed(encoding: str, stored: np.ndarray, box: np.ndarray | None = None, *,
                   source: np.ndarray | None = None, what: str = "positions") -> None:
    """Refuse a frame its encoding could not represent, instead of storing inf: float16
    ``stored`` values that are infinite (a coordinate of 65520 or more in magnitude, or one
    that was infinite already), or a fixed16 ``box`` that is not finite (a non-finite
    coordinate, or an extent beyond float32). ``source``, the values before narrowing, lets
    the message name the largest coordinate. Costs one pass over the 16-bit words."""
    if encoding == FLOAT16:
        bits = np.ascontiguousarray(stored).view("<u2")
        if not ((bits & _HALF_EXPONENT_AND_SIGNIFICAND) == _HALF_INFINITY).any():
            return
        largest = "" if source is None else \
            f" (the largest is {float(np.nanmax(np.abs(np.asarray(source, np.float64)))):.7g})"
        raise InvalidInputError(
            f"{what} beyond float16's largest value {HALF_MAX:,.0f}{largest} would be stored "
            "as inf: record float32 or fixed16 frames instead, or move the origin and units so "
            "they fit")
    if encoding == FIXED16 and box is not None and not np.isfinite(box).all():
        raise InvalidInputError(
            f"{what} with a non-finite coordinate, or spanning more than float32 holds, have no "
            "fixed16 box: record float32 frames instead")


def split_staged(encoding: str, staged: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A staged frame as (stored positions (n, 3), box (3, 3) float32 rows lo, step, scale, or
    None): views of ``staged`` where possible (the box is copied: 36 bytes)."""
    if encoding != FIXED16:
        return staged, None
    flat = staged.reshape(-1)
    box = np.frombuffer(flat[3 * n:].tobytes(), dtype="<f4").reshape(3, 3)
    return flat[:3 * n].reshape(n, 3), box


def fixed16_box(positions: np.ndarray) -> np.ndarray:
    """The (3, 3) float32 box rows (lo, step, scale) of ``positions`` as the device computes it."""
    xyz = np.asarray(positions, dtype=np.float32)
    # Per column: numpy's min(axis=0) over (n, 3) rows is some 20 times slower.
    lo = np.array([xyz[:, axis].min() for axis in range(3)], np.float32)
    hi = np.array([xyz[:, axis].max() for axis in range(3)], np.float32)
    extent = hi - lo
    flat = extent <= 0
    with np.errstate(divide="ignore"):
        step = np.where(flat, np.float32(0), extent / np.float32(FIXED_LEVELS)).astype(np.float32)
        scale = np.where(flat, np.float32(0), np.float32(FIXED_LEVELS) / extent).astype(np.float32)
    return np.stack([lo, step, scale]).astype(np.float32)


def fixed16_quantise(positions: np.ndarray, box: np.ndarray) -> np.ndarray:
    """``positions`` as fixed16 values on ``box`` (the device kernel's arithmetic)."""
    scaled = np.subtract(positions, box[0], dtype=np.float32)
    scaled *= box[2]
    np.rint(scaled, out=scaled)
    np.clip(scaled, 0, FIXED_LEVELS, out=scaled)
    return scaled.astype("<u2")


def fixed16_decode(stored: np.ndarray, box: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Fixed16 values back to float32 positions (into ``out`` if given)."""
    decoded = box[0].astype(np.float64) + stored * box[1].astype(np.float64)
    if out is None:
        return decoded.astype(np.float32)
    out[...] = decoded
    return out


def fixed16_error(box: np.ndarray) -> np.ndarray:
    """The stated absolute error bound per axis of a fixed16 frame with ``box``."""
    step = box[1].astype(np.float64)
    return 0.5 * step + FIXED16_ROUNDING * step * FIXED_LEVELS


def encode_on_host(positions, encoding: str, *, what: str = "positions") -> np.ndarray:
    """A staged frame (see :func:`staged_shape`) made on the host, the same bits the device
    kernels give: float16 through the native narrowing (F16C where present, without the GIL).
    Values the encoding cannot represent raise :class:`InvalidInputError` naming them
    ``what`` (:func:`check_narrowed`)."""
    xyz = np.ascontiguousarray(positions, dtype=np.float32)
    if encoding == FLOAT32:
        return xyz.copy() if xyz is positions else xyz
    if encoding == FLOAT16:
        narrowed = np.empty(xyz.shape, np.float16)
        _native.narrow_to_half(xyz, narrowed)
        check_narrowed(FLOAT16, narrowed, source=positions, what=what)
        return narrowed
    check_encoding(encoding)
    n = xyz.shape[0]
    box = fixed16_box(xyz)
    check_narrowed(FIXED16, None, box, what=what)
    staged = np.empty(staged_shape(FIXED16, n), "<u2")
    staged[:3 * n] = fixed16_quantise(xyz, box).reshape(-1)
    staged[3 * n:] = np.frombuffer(box.astype("<f4").tobytes(), dtype="<u2")
    return staged
