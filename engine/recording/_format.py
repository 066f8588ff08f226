"""The recording file layout in one place: names, versions, limits and the attribute encoding
shared by the writer and the reader. ``docs/recording-format.md`` describes the same layout for
people reading the files without Orrery."""

from __future__ import annotations

import json
import math

import numpy as np

from .. import frame_encoding as encodings
from ..errors import InvalidInputError

FORMAT_NAME = "orrery-recording"
# Bump when a reader of the old version would misread a new file; readers refuse newer versions.
# Version 2 added keyframes (the full state every few frames, for exact restarts); a version-1
# file reads as a recording without keyframes. Version 3 added position encodings (fixed16
# positions on each frame's box, see ``frame_encoding``) and compressed frames; a version-1 or 2
# file reads as float32 or float16 positions, as its dtype says. Version 4 added particle
# orders (every per-particle dataset in a priority order, PARTICLE_PERMUTATION); an older
# file reads as one in the run's order.
FORMAT_VERSION = 4
FIRST_VERSION_WITH_KEYFRAMES = 2
FIRST_VERSION_WITH_ENCODINGS = 3
FIRST_VERSION_WITH_ORDERS = 4

POSITIONS = "positions"
VELOCITIES = "velocities"
TIME = "time"
STEP = "step"
MASSES = "masses"
POPULATION = "population"
POPULATION_NAMES = "population_names"
# Root attribute naming the model that made the recording: "gravity" or "flock".
MODEL = "model"
REQUIRED_DATASETS = (POSITIONS, TIME, STEP, MASSES, POPULATION, POPULATION_NAMES)
# Root attribute (version 3): how positions are stored, one of frame_encoding.ENCODINGS.
POSITION_ENCODING = "position_encoding"
# fixed16 recordings: each frame's box, (frames, 3, 3) float32 rows lo, step, scale.
POSITION_BOX = "position_box"
# Root attribute: the compression the frames were written with (COMPRESSIONS), "none" if none.
COMPRESSION = "compression"

# Root attribute (version 4): the order of the particles in every per-particle dataset (frames,
# keyframes, masses, population), one of ORDERS. "natural": the run's own order. "priority":
# row i holds the run's particle PARTICLE_PERMUTATION[i], a random permutation fixed for the
# whole file, so the first K rows of any frame are a uniform random sample of its particles
# (ADR 0280).
ORDER = "particle_order"
NATURAL, PRIORITY = "natural", "priority"
ORDERS = (NATURAL, PRIORITY)
# Dataset (version 4, priority files): (N,) uint32 or uint64, the permutation named above.
PARTICLE_PERMUTATION = "particle_permutation"
# The permutation is numpy's PCG64 permutation of range(N) from this seed: the same for every
# recording of N particles, so a continued run's file keeps its original's order (readers use
# the stored dataset, never the seed).
PRIORITY_SEED = 0x0E1E5

# Keyframes: the whole state (positions, velocities in the run's own precision, time, step)
# every few frames and at the end, so a run can be continued from them exactly. Committed like
# frames: a keyframe exists once its step entry does.
KEYFRAME_POSITIONS = "keyframe_positions"
KEYFRAME_VELOCITIES = "keyframe_velocities"
KEYFRAME_TIME = "keyframe_time"
KEYFRAME_STEP = "keyframe_step"
KEYFRAME_DATASETS = (KEYFRAME_POSITIONS, KEYFRAME_VELOCITIES, KEYFRAME_TIME, KEYFRAME_STEP)
# Keyframes hold the state in the solver's precision: float32 or float64.
KEYFRAME_DTYPES = {"float32": np.dtype("<f4"), "float64": np.dtype("<f8")}
# Default keyframe cadence: keyframes add at most this share to the bytes the frames take. A
# keyframe is positions and velocities in the run's precision, eight float16 frames' worth at
# float64 and four at float32: a keyframe every 10 float16 frames made recording every step of
# a million particles on the H200 a disk-bound 22% slower; at this share it costs 1% (ADR 0164).
KEYFRAME_SHARE = 0.1


def default_keyframe_every(frame_dtype, velocities: bool, keyframe_dtype) -> int:
    """Recorded frames between two keyframes (from the first) for which the keyframes take
    KEYFRAME_SHARE of what the frames take: 40 for float16 frames of a float32 run, 20 for
    float32 frames, 10 for float32 frames with velocities."""
    frame = np.dtype(encodings.STORED_DTYPES[encodings.named(frame_dtype)]).itemsize
    frame *= 2 if velocities else 1
    keyframe = 2 * np.dtype(keyframe_dtype).itemsize
    return max(1, math.ceil(keyframe / (KEYFRAME_SHARE * frame)))

# ``step`` is filled with this value where no frame was committed yet, so a reader of a file
# whose writer died can tell a committed frame from space HDF5 merely reserved.
STEP_FILL = -1

# Sanity limits a reader enforces before allocating anything: a file declaring more is damaged
# or hostile. 2**28 particles is a 3 GiB float32 frame; 2**24 frames is 128 MiB of times/steps.
# The writer refuses to write past them, so it never writes what its reader refuses.
MAX_PARTICLES = 2**28
MAX_FRAMES = 2**24
# Labels are uint8: at most 256 populations, each named in at most MAX_NAME_BYTES bytes of UTF-8.
MAX_POPULATIONS = 256
MAX_NAME_BYTES = 256
# Steps are int64 and at least 0 (-1 is STEP_FILL, the "not committed" mark).
MAX_STEP = 2**63 - 1
# The largest chunk a reader lets HDF5 decompress (a rewritten file may hold bigger chunks than
# the writer makes): bounds the memory one read can take, whatever the file declares.
MAX_CHUNK_BYTES = 256 << 20

# Chunks hold whole frames: several small frames per chunk (about CHUNK_TARGET_BYTES), or exactly
# one when a frame is larger, so reading one frame never touches another frame's chunk.
CHUNK_TARGET_BYTES = 256 << 10

# Frame compression through hdf5plugin (pip install hdf5plugin): Blosc2 with zstd and a byte
# or bit shuffle (lossless, any encoding), or zfp in fixed-accuracy mode (lossy, float32
# frames only: "zfp=A" keeps every coordinate within A, absolute).
COMPRESSIONS = ("none", "blosc2", "blosc2-bitshuffle", "zfp=ACCURACY")

# Attributes holding dicts are stored as JSON text under the same name, marked by this suffix
# in a companion attribute so a reader can decode them without guessing.
_JSON_MARK = "__json"


def compression_filter(name: str | None, encoding: str) -> dict:
    """The h5py dataset options of compression ``name`` (see COMPRESSIONS) for frames stored
    in ``encoding``: {} for none. Needs hdf5plugin."""
    if name in (None, "", "none"):
        return {}
    zfp = name.startswith("zfp=")
    if name not in ("blosc2", "blosc2-bitshuffle") and not zfp:
        raise InvalidInputError(f"compression must be one of {COMPRESSIONS}, got {name!r}")
    if zfp:
        try:
            accuracy = float(name[4:])
        except ValueError:
            accuracy = math.nan
        if not (accuracy > 0 and math.isfinite(accuracy)):
            raise InvalidInputError(f"zfp needs a positive accuracy (zfp=1e-4, say), got {name!r}")
        if encoding != encodings.FLOAT32:
            raise InvalidInputError(f"zfp compresses float32 frames, not {encoding}")
    try:
        import hdf5plugin
    except ImportError:
        raise InvalidInputError(f"compression {name!r} needs hdf5plugin: pip install hdf5plugin") \
            from None
    if zfp:
        return dict(hdf5plugin.Zfp(accuracy=accuracy))
    shuffle = hdf5plugin.Blosc2.BITSHUFFLE if name.endswith("bitshuffle") \
        else hdf5plugin.Blosc2.SHUFFLE
    return dict(hdf5plugin.Blosc2(cname="zstd", clevel=1, filters=shuffle))


def keyframe_dtype(dtype) -> np.dtype:
    """The run's precision (a numpy dtype) as a keyframe dtype; anything else is an error."""
    name = np.dtype(dtype).name
    if name not in KEYFRAME_DTYPES:
        raise InvalidInputError(f"keyframes hold float32 or float64 states, got {dtype!r}")
    return KEYFRAME_DTYPES[name]


def particle_permutation(order: str, n: int) -> np.ndarray | None:
    """The permutation a recording of ``n`` particles in ``order`` (one of ORDERS) stores its
    rows in (row i is the run's particle ``result[i]``), or None for the natural order. Its
    indices are intp, the type numpy's gathers take without converting them on every frame;
    the file stores them as :func:`permutation_dtype`."""
    if order == NATURAL:
        return None
    return np.random.default_rng(PRIORITY_SEED).permutation(n).astype(np.intp, copy=False)


def permutation_dtype(n: int) -> np.dtype:
    """The stored type of a permutation of ``n`` particles: uint32 while it fits."""
    return np.dtype("<u4" if n <= 2**32 else "<u8")


def check_particle_permutation(permutation: np.ndarray, n: int) -> None:
    """A stored particle permutation must name each of the ``n`` particles exactly once."""
    if permutation.shape != (n,):
        raise InvalidInputError(f"{PARTICLE_PERMUTATION} has shape {permutation.shape}, "
                                f"expected ({n},)")
    if permutation.min() < 0 or permutation.max() >= n:
        raise InvalidInputError(f"{PARTICLE_PERMUTATION} names particles outside 0..{n - 1}")
    seen = np.zeros(n, dtype=bool)
    seen[permutation] = True
    if not seen.all():
        raise InvalidInputError(f"{PARTICLE_PERMUTATION} names some particle twice: not a "
                                "permutation")


def frames_per_chunk(frame_bytes: int) -> int:
    return max(1, CHUNK_TARGET_BYTES // frame_bytes)


# -- the rules a recording obeys: the Recorder checks them before writing, RecordingFile after
#    reading; both raise InvalidInputError, which the reader reports as a damaged file.

def check_particle_count(n: int) -> None:
    if not 0 < n <= MAX_PARTICLES:
        raise InvalidInputError(f"{n} particles is outside 1..{MAX_PARTICLES}, the format's limit")


def check_population_names(names) -> tuple[str, ...]:
    """The names as a tuple of str: 1 to MAX_POPULATIONS of them, each non-empty and at most
    MAX_NAME_BYTES bytes of UTF-8."""
    if isinstance(names, (str, bytes)) or np.ndim(names) != 1:
        raise InvalidInputError(f"population_names must be a sequence of names, got {names!r:.80}")
    if not 0 < len(names) <= MAX_POPULATIONS:
        raise InvalidInputError(f"population_names must hold 1 to {MAX_POPULATIONS} names (labels "
                                f"are uint8), got {len(names)}")
    checked = []
    for name in names:
        if isinstance(name, (bytes, np.bytes_)):
            name = bytes(name).decode("utf-8", "replace")
        if not isinstance(name, str) or not name \
                or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidInputError(f"a population name must be a non-empty string of at most "
                                    f"{MAX_NAME_BYTES} bytes of UTF-8, got {name!r:.80}")
        checked.append(name)
    return tuple(checked)


def check_population(labels: np.ndarray, name_count: int) -> None:
    if labels.size and (labels.min() < 0 or labels.max() >= name_count):
        raise InvalidInputError(f"population labels must lie in [0, {name_count}): one name each")


def check_frame(index: int, step: int, time: float, previous: tuple[int, float] | None) -> None:
    """Frame ``index`` of a recording, after ``previous`` (its step and time; None for the first
    frame): its step in 0..MAX_STEP and above the previous one, its time finite and not before
    the previous one."""
    if not 0 <= step <= MAX_STEP:
        raise InvalidInputError(f"frame {index} has step {step}, outside 0..{MAX_STEP}")
    if previous is not None and step <= previous[0]:
        raise InvalidInputError(f"step {step} does not follow step {previous[0]} (frame "
                                f"{index}): frames must be in increasing step order")
    if not math.isfinite(time):
        raise InvalidInputError(f"frame {index} has time {time}: times must be finite")
    if previous is not None and time < previous[1]:
        raise InvalidInputError(f"frame {index} has time {time}, before the previous frame's "
                                f"{previous[1]}")


def check_series(steps: np.ndarray, times: np.ndarray) -> None:
    """:func:`check_frame` for every frame of ``steps`` and ``times`` (int64 and float64
    arrays of one length), at array speed."""
    bad = (steps < 0) | ~np.isfinite(times)
    bad[1:] |= (np.diff(steps) <= 0) | (np.diff(times) < 0)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        previous = (int(steps[index - 1]), float(times[index - 1])) if index else None
        check_frame(index, int(steps[index]), float(times[index]), previous)


def encode_attributes(attributes: dict) -> dict:
    """Turn user attributes into values HDF5 stores: scalars and strings as they are, dicts as
    JSON text (their names listed in ``__json``). Anything else is an error, not a silent str()."""
    encoded, json_names = {}, []
    for name, value in attributes.items():
        if not isinstance(name, str) or not name or name.startswith("__"):
            raise InvalidInputError(f"attribute names must be non-empty strings not starting "
                                    f"with '__', got {name!r}")
        if value is None:
            continue
        if isinstance(value, dict):
            encoded[name] = json.dumps(value, sort_keys=True, default=_json_scalar)
            json_names.append(name)
        elif isinstance(value, (str, bool, int, float, np.integer, np.floating, np.bool_)):
            encoded[name] = value
        else:
            raise InvalidInputError(f"attribute {name!r}: cannot store a {type(value).__name__}; "
                                    "use a string, a number, a bool or a dict")
    if json_names:
        encoded[_JSON_MARK] = ",".join(json_names)
    return encoded


def decode_attributes(raw) -> dict:
    """The inverse of :func:`encode_attributes` for an h5py ``attrs`` mapping."""
    json_names = set(filter(None, _as_text(raw.get(_JSON_MARK, "")).split(",")))
    decoded = {}
    for name, value in raw.items():
        if name == _JSON_MARK:
            continue
        if isinstance(value, (bytes, np.bytes_)):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, np.generic):
            value = value.item()
        if name in json_names and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass  # shown as the text it is; a damaged attribute must not hide the frames
        decoded[name] = value
    return decoded


def _as_text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, np.bytes_)) else str(value)


def _json_scalar(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store a {type(value).__name__} in a JSON attribute")
