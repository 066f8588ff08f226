"""A sequence of snapshots (``snap_*.hdf5``) as one timeline, interpolated between snapshots.

:class:`SnapshotSeries` is stored frames as a recording is (``contracts.StoredFrames``), so
the same :class:`~orrery.engine.recording.Player` plays it, with the viewer's timeline, and
``orrery render`` turns it into a movie. Between two snapshots ``frames_between`` frames are made
by cubic Hermite interpolation of positions with the snapshots' velocities (positions and
velocities both match at every snapshot, so scrubbing is smooth); without a positive time
interval between two snapshots the interpolation is linear.

Particle ``i`` must be the same body in every snapshot: snapshots with particle identities
(pynbody's ``iord``) are put in identity order; all snapshots must hold the same particles.
Interpolation does not unwrap periodic boundaries: a particle crossing the box moves across it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from .errors import InvalidInputError
from .snapshots import Snapshot, SnapshotError, expand, load_snapshot

DEFAULT_FRAMES_BETWEEN = 30
# Snapshots kept in memory: the two around the play head, and one more for playing on.
_CACHED = 3


class SnapshotSeries:
    """Snapshot files as a timeline of ``(len(paths) - 1) * frames_between + 1`` frames."""

    def __init__(self, pattern_or_paths, *, family: str | None = None,
                 frames_between: int = DEFAULT_FRAMES_BETWEEN, **units):
        paths = expand(pattern_or_paths) if isinstance(pattern_or_paths, str) \
            else list(pattern_or_paths)
        if not paths:
            raise SnapshotError("no snapshot files given")
        if not 1 <= int(frames_between) <= 10_000:
            raise InvalidInputError(f"frames_between must be in 1..10000, got {frames_between}")
        self.paths = paths
        self.path = paths[0]
        self.frames_between = int(frames_between) if len(paths) > 1 else 1
        self._family, self._units = family, units
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.snapshot_times = np.full(len(paths), np.nan)
        first = self._load(0)
        self.n = first.particles.n
        self._remember(0, first)
        self.dtype = np.dtype(np.float32)
        self.masses = first.particles.mass
        self.population = first.particles.population
        self.population_names = first.particles.population_names
        self.attributes = {**first.attributes(), "source_files": len(paths),
                           "frames_between": self.frames_between}
        self.has_velocities = True
        self.being_written = False  # the files are read as they are

    # -- StoredFrames: what the Player reads ----------------------------------------------------

    @property
    def frame_count(self) -> int:
        return (len(self.paths) - 1) * self.frames_between + 1

    @property
    def times(self) -> np.ndarray:
        """Time of every frame (N-body units); snapshot times are read as snapshots load."""
        self._ensure_times()
        snapshot, fraction = self._split(np.arange(self.frame_count))
        later = np.minimum(snapshot + 1, len(self.paths) - 1)
        t0, t1 = self.snapshot_times[snapshot], self.snapshot_times[later]
        return t0 + fraction * (t1 - t0)

    @property
    def steps(self) -> np.ndarray:
        return np.arange(self.frame_count)

    def read_into(self, index: int, out: np.ndarray, *, velocities: bool = False) -> np.ndarray:
        """Positions of frame ``index`` (float32) written into ``out``."""
        if velocities:
            raise InvalidInputError("a snapshot series gives positions only")
        snapshots, fractions = self._split(np.array([index]))
        snapshot, fraction = int(snapshots[0]), float(fractions[0])
        x0, v0, t0 = self._state(snapshot)
        if fraction == 0.0:
            np.copyto(out, x0, casting="same_kind")
            return out
        x1, v1, t1 = self._state(snapshot + 1)
        out[...] = _hermite(x0, v0, x1, v1, t1 - t0, fraction)
        return out

    def read(self, index: int, *, velocities: bool = False) -> np.ndarray:
        return self.read_into(index, np.empty((self.n, 3), self.dtype), velocities=velocities)

    def refresh(self) -> int:
        """No frames are ever added to a series: 0 new."""
        return 0

    def close(self) -> None:
        with self._lock:
            self._cache.clear()

    # -- snapshots ------------------------------------------------------------------------------

    def _split(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.clip(index, 0, self.frame_count - 1)
        snapshot = np.minimum(index // self.frames_between, len(self.paths) - 1)
        fraction = (index - snapshot * self.frames_between) / self.frames_between
        return snapshot, fraction

    def _ensure_times(self) -> None:
        for i in np.flatnonzero(np.isnan(self.snapshot_times)):
            self._state(int(i))

    def _load(self, i: int) -> Snapshot:
        snapshot = load_snapshot(self.paths[i], family=self._family, **self._units)
        if snapshot.identities is not None:
            order = np.argsort(snapshot.identities, kind="stable")
            particles = snapshot.particles
            particles.pos, particles.vel = particles.pos[order], particles.vel[order]
            particles.mass = particles.mass[order]
            particles.population = particles.population[order]
        return snapshot

    def _state(self, i: int) -> tuple[np.ndarray, np.ndarray, float]:
        with self._lock:
            cached = self._cache.get(i)
            if cached is not None:
                self._cache.move_to_end(i)
                return (*cached, float(self.snapshot_times[i]))
        snapshot = self._load(i)
        if snapshot.particles.n != self.n:
            raise SnapshotError(f"{self.paths[i]} holds {snapshot.particles.n} particles, "
                                f"{self.paths[0]} {self.n}: a series needs the same particles")
        return self._remember(i, snapshot)

    def _remember(self, i: int, snapshot: Snapshot) -> tuple[np.ndarray, np.ndarray, float]:
        state = (snapshot.particles.pos.astype(np.float32, copy=False),
                 snapshot.particles.vel.astype(np.float32, copy=False))
        with self._lock:
            self.snapshot_times[i] = snapshot.time
            self._cache[i] = state
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        return (*state, snapshot.time)


def _hermite(x0, v0, x1, v1, interval: float, s: float) -> np.ndarray:
    """Cubic Hermite between (x0, v0) and (x1, v1) at fraction ``s`` of ``interval``."""
    if not interval > 0:
        return (1.0 - s) * x0 + s * x1
    h00 = 2 * s**3 - 3 * s**2 + 1
    h10 = s**3 - 2 * s**2 + s
    h01 = -2 * s**3 + 3 * s**2
    h11 = s**3 - s**2
    return (np.float32(h00) * x0 + np.float32(h01) * x1
            + np.float32(h10 * interval) * v0 + np.float32(h11 * interval) * v1)
