"""Camera paths: keyframes (time, eye position, target, field of view) and the camera between them.

A path is a small TOML file, one ``[[key]]`` table per keyframe::

    [[key]]
    time = 0.0                  # seconds of the movie
    position = [12.0, 4.0, 6.0] # where the eye is
    target = [0.0, 0.0, 0.0]    # what it looks at
    fov = 45.0                  # vertical field of view, degrees

Between keys the camera moves in orbit coordinates about its target (distance, yaw, pitch), so a
turn around the scene stays a turn rather than a cut through it: target, log distance, yaw,
pitch and field of view follow Catmull-Rom splines through the keys, and time is eased
(smoothstep) in every segment, so the camera slows into each key and out of it. Before the first
key and after the last the camera holds still. Pure numpy: tested without a GL context.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...engine.errors import InvalidInputError
from ...engine.input_files import read_small_text
from ._camera import Camera

# Bounds of what a camera path may hold, far beyond any real one: a file of at most 1 MiB, at
# most 10,000 keys, coordinates within 1e12 of the origin (the view matrices are float32: a
# camera at 1e308 gave inf and NaN and an all-black movie) and key times within a day.
MAX_FILE_BYTES = 1 << 20
MAX_KEYS = 10_000
MAX_COORDINATE = 1e12
MAX_TIME = 86_400.0


@dataclass(frozen=True)
class CameraKey:
    time: float
    position: tuple[float, float, float]
    target: tuple[float, float, float]
    fov: float = 45.0

    def __post_init__(self):
        values = [self.time, *self.position, *self.target, self.fov]
        if not all(math.isfinite(v) for v in values):
            raise InvalidInputError(f"camera key values must be finite, got {self}")
        if not 0.0 <= self.time <= MAX_TIME:
            raise InvalidInputError(f"camera key time must be 0 to {MAX_TIME:g} seconds, got "
                                    f"{self.time:g}")
        if max(abs(v) for v in (*self.position, *self.target)) > MAX_COORDINATE:
            raise InvalidInputError(f"camera key at t = {self.time:g}: coordinates must lie "
                                    f"within {MAX_COORDINATE:g} of the origin, got {self}")
        if not 0.0 < self.fov < 180.0:
            raise InvalidInputError(f"camera key fov must be in (0, 180) degrees, got {self.fov}")
        if np.allclose(self.position, self.target):
            raise InvalidInputError(f"camera key at t = {self.time}: position equals target")

    @classmethod
    def from_camera(cls, time: float, camera: Camera) -> CameraKey:
        return cls(float(time), tuple(float(v) for v in camera.eye),
                   tuple(float(v) for v in camera.target), math.degrees(camera.fov_y))

    def orbit(self) -> np.ndarray:
        """(target x, y, z, log distance, yaw, pitch, fov in radians)."""
        offset = np.subtract(self.position, self.target)
        distance = float(np.linalg.norm(offset))
        yaw = math.atan2(offset[1], offset[0])
        pitch = math.asin(max(-1.0, min(1.0, offset[2] / distance)))
        return np.array([*self.target, math.log(distance), yaw, pitch, math.radians(self.fov)])


class CameraPath:
    """Keyframes in time order; ``camera_at(t)`` is the camera at movie time ``t`` seconds."""

    def __init__(self, keys):
        keys = sorted(keys, key=lambda key: key.time)
        if not keys:
            raise InvalidInputError("a camera path needs at least one key")
        times = [key.time for key in keys]
        if len(set(times)) != len(times):
            raise InvalidInputError(f"camera keys share a time: {times}")
        self.keys = keys
        self._times = np.array(times)
        orbits = np.array([key.orbit() for key in keys])
        orbits[:, 4] = np.unwrap(orbits[:, 4])  # turn the short way round between keys
        self._orbits = orbits

    @property
    def duration(self) -> float:
        return float(self._times[-1])

    def camera_at(self, time: float) -> Camera:
        target, log_distance, yaw, pitch, fov = _split(self._orbit_at(float(time)))
        return Camera(target=target, distance=math.exp(log_distance), yaw=yaw, pitch=pitch,
                      fov_y=fov)

    def _orbit_at(self, time: float) -> np.ndarray:
        times, orbits = self._times, self._orbits
        if len(times) == 1 or time <= times[0]:
            return orbits[0]
        if time >= times[-1]:
            return orbits[-1]
        i = int(np.searchsorted(times, time, side="right")) - 1
        s = (time - times[i]) / (times[i + 1] - times[i])
        s = s * s * (3.0 - 2.0 * s)  # ease in and out of every key
        before = orbits[max(i - 1, 0)]
        after = orbits[min(i + 2, len(orbits) - 1)]
        return _catmull_rom(before, orbits[i], orbits[i + 1], after, s)

    # -- files ----------------------------------------------------------------------------------

    @classmethod
    def load(cls, path) -> CameraPath:
        """The path in the TOML file ``path`` (a regular file of at most MAX_FILE_BYTES with
        at most MAX_KEYS keys); anything else is :class:`InvalidInputError`."""
        path = Path(path)
        text = read_small_text(path, what="camera path", limit=MAX_FILE_BYTES)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:  # its text says the line and column
            raise InvalidInputError(f"camera path {path} is not valid TOML: {error}") from None
        except RecursionError:
            raise InvalidInputError(f"camera path {path} nests tables or arrays too deeply") \
                from None
        entries = data.get("key")
        if not isinstance(entries, list) or not entries:
            raise InvalidInputError(f"camera path {path} has no [[key]] tables")
        if len(entries) > MAX_KEYS:
            raise InvalidInputError(f"camera path {path} has {len(entries):,} keys, more than "
                                    f"{MAX_KEYS:,}")
        unknown = sorted({name for entry in entries if isinstance(entry, dict)
                          for name in entry} - {"time", "position", "target", "fov"})
        if unknown:
            raise InvalidInputError(f"camera path {path}: unknown key field(s) {unknown}; a key "
                                    "has time, position, target and fov")
        keys = []
        for number, entry in enumerate(entries, 1):
            try:
                keys.append(CameraKey(float(entry["time"]), _vector(entry["position"]),
                                      _vector(entry["target"]), float(entry.get("fov", 45.0))))
            except InvalidInputError as error:  # well formed, but a value out of range
                raise InvalidInputError(f"camera path {path}, key {number}: {error}") from None
            except (KeyError, TypeError, ValueError) as error:
                raise InvalidInputError(f"camera path {path}, key {number}: needs time, "
                                        f"position [x, y, z] and target [x, y, z] ({error})") \
                    from None
        return cls(keys)

    def save(self, path) -> Path:
        lines = ["# Orrery camera path: `orrery render SOURCE --camera THIS_FILE --out movie.mp4`"]
        for key in self.keys:
            lines += ["", "[[key]]", f"time = {key.time!r}",
                      f"position = [{', '.join(repr(v) for v in key.position)}]",
                      f"target = [{', '.join(repr(v) for v in key.target)}]",
                      f"fov = {key.fov!r}"]
        path = Path(path)
        partial = path.with_name(f".{path.name}.partial")  # renamed only once complete
        try:
            partial.write_text("\n".join(lines) + "\n")
            partial.replace(path)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise InvalidInputError(f"cannot save the camera path {path}: "
                                    f"{error.strerror or error}") from None
        return path


def _vector(value) -> tuple[float, float, float]:
    if len(value) != 3:
        raise ValueError(f"expected three numbers, got {value!r}")
    return tuple(float(v) for v in value)


def _split(orbit: np.ndarray):
    return orbit[:3].copy(), float(orbit[3]), float(orbit[4]), float(orbit[5]), float(orbit[6])


def _catmull_rom(p0, p1, p2, p3, s: float) -> np.ndarray:
    return 0.5 * ((2.0 * p1) + (p2 - p0) * s + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * s * s
                  + (3.0 * p1 - p0 - 3.0 * p2 + p3) * s * s * s)
