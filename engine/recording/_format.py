"""The recording file layout in one place: names, versions, limits and the attribute encoding
shared by the writer and the reader. ``docs/recording-format.md`` describes the same layout for
people reading the files without Orrery."""

from __future__ import annotations

import json

import numpy as np

from ..errors import InvalidInputError

FORMAT_NAME = "orrery-recording"
# Bump when a reader of the old version would misread a new file; readers refuse newer versions.
FORMAT_VERSION = 1

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

# ``step`` is filled with this value where no frame was committed yet, so a reader of a file
# whose writer died can tell a committed frame from space HDF5 merely reserved.
STEP_FILL = -1

# Sanity limits a reader enforces before allocating anything: a file declaring more is damaged
# or hostile. 2**28 particles is a 3 GiB float32 frame; 2**24 frames is 128 MiB of times/steps.
MAX_PARTICLES = 2**28
MAX_FRAMES = 2**24

# Chunks hold whole frames: several small frames per chunk (about CHUNK_TARGET_BYTES), or exactly
# one when a frame is larger, so reading one frame never touches another frame's chunk.
CHUNK_TARGET_BYTES = 256 << 10

FRAME_DTYPES = {"float32": np.dtype("<f4"), "f32": np.dtype("<f4"),
                "float16": np.dtype("<f2"), "f16": np.dtype("<f2")}

# Attributes holding dicts are stored as JSON text under the same name, marked by this suffix
# in a companion attribute so a reader can decode them without guessing.
_JSON_MARK = "__json"


def frame_dtype(name) -> np.dtype:
    """``"float32"``/``"f32"`` or ``"float16"``/``"f16"`` (or the numpy dtype) -> little-endian dtype."""
    key = np.dtype(name).name if not isinstance(name, str) else name
    if key not in FRAME_DTYPES:
        raise InvalidInputError(f"recording dtype must be float32 or float16, got {name!r}")
    return FRAME_DTYPES[key]


def frames_per_chunk(frame_bytes: int) -> int:
    return max(1, CHUNK_TARGET_BYTES // frame_bytes)


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
