"""Recorder: writes frames to a recording file on its own thread behind a bounded queue.

Crash safety: the file is written in HDF5's single-writer/multiple-reader (SWMR) mode, which
orders HDF5's own metadata writes so the file on disk is consistent at every moment. On top of
that a frame is *committed* only when its ``time`` and ``step`` entries exist: the writer appends
positions (and velocities) as frames arrive, and every ``flush_seconds`` it flushes them, then
extends ``time`` and ``step`` and flushes again. A process killed at any instant therefore leaves a
file holding every frame committed by the last flush, each one complete, and possibly some
uncommitted positions after them that readers ignore.
"""

from __future__ import annotations

import atexit
import datetime
import queue
import threading
import time as _time
from pathlib import Path

import h5py
import numpy as np

from ..errors import InvalidInputError, RecordingError
from . import _format as fmt

_STOP = object()


class Recorder:
    """Record frames of one run into an HDF5 file.

    Parameters
    ----------
    path
        File to create. An existing file is an error unless ``overwrite``.
    masses
        ``(n,)`` particle masses; fixes the particle count of every frame.
    population, population_names
        ``(n,)`` uint8 labels and their names (default: every particle in population ``"all"``).
    attributes
        Run description stored as file attributes (scenario, solver, solver_params, dt,
        softening, G, units, ...): strings, numbers, bools, or dicts (stored as JSON text).
    dtype
        ``"float32"`` or ``"float16"`` for positions and velocities. float16 halves the file and
        keeps about 3 significant digits (relative spacing 2**-10; largest value 65504).
    velocities
        Also store velocities; ``append`` then requires them.
    flush_seconds
        Longest time (seconds, default 2) a frame waits before it is committed to disk. A process
        killed at any moment keeps every frame appended more than this long before (plus the time
        to write whatever was queued ahead of it).
    queue_bytes
        Memory the queue of frames waiting for the disk may hold (default 256 MiB, at least two
        frames). When full, ``append`` blocks until the writer catches up.
    overwrite
        Replace ``path`` if it exists (default False).
    """

    def __init__(self, path, *, masses, population=None, population_names=("all",),
                 attributes: dict | None = None, dtype="float32", velocities: bool = False,
                 flush_seconds: float = 2.0, queue_bytes: int = 256 << 20,
                 overwrite: bool = False):
        self.path = Path(path)
        self.dtype = fmt.frame_dtype(dtype)
        masses = np.asarray(masses)
        if masses.ndim != 1 or masses.shape[0] == 0:
            raise InvalidInputError(f"masses must have shape (n,) with n > 0, got {masses.shape}")
        self.n = int(masses.shape[0])
        if self.n > fmt.MAX_PARTICLES:
            raise InvalidInputError(f"{self.n} particles exceeds the format's limit of "
                                    f"{fmt.MAX_PARTICLES}")
        population, names = _checked_population(population, population_names, self.n)
        if not flush_seconds > 0:
            raise InvalidInputError(f"flush_seconds must be positive, got {flush_seconds!r}")
        self.flush_seconds = float(flush_seconds)
        self.records_velocities = bool(velocities)
        encoded_attributes = fmt.encode_attributes(dict(attributes or {}))
        if self.path.exists() and not overwrite:
            raise RecordingError(f"{self.path} already exists; remove it or choose another name")

        self.frame_bytes = self.n * 3 * self.dtype.itemsize
        # The caller only copies (as float32); narrowing to float16 is slower than the copy, so
        # the writer thread does it, off the simulation's thread.
        self._queued_dtype = np.dtype(np.float32)
        per_frame = self.n * 3 * self._queued_dtype.itemsize * (2 if velocities else 1)
        self.queue_capacity = max(2, int(queue_bytes) // per_frame)
        self._queue: queue.Queue = queue.Queue(maxsize=self.queue_capacity)
        self._error: BaseException | None = None
        self._closed = False
        self._last_step: int | None = None
        self._last_time = -np.inf
        self.frames_appended = 0
        self.frames_committed = 0
        self._uncommitted = 0  # written by the writer thread, not yet committed

        self._file = self._create(masses, population, names, encoded_attributes)
        self._thread = threading.Thread(target=self._write_loop, name="orrery-recorder",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.close)

    @classmethod
    def for_simulation(cls, path, simulation, *, scenario: str, source: dict | None = None,
                       **options) -> Recorder:
        """A recorder for ``simulation`` (a :class:`~orrery.engine.Simulation`): its masses,
        populations and run settings (:func:`run_attributes`; ``source`` adds where the
        particles came from, e.g. a snapshot's file and unit conversion); ``options`` as for the
        constructor (dtype, velocities, flush_seconds, ...)."""
        particles = simulation.particles
        attributes = {**run_attributes(simulation, scenario=scenario), **(source or {})}
        return cls(path, masses=particles.mass, population=particles.population,
                   population_names=particles.population_names, attributes=attributes, **options)

    # -- file layout ---------------------------------------------------------------------------

    def _create(self, masses, population, names, attributes) -> h5py.File:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fpc = fmt.frames_per_chunk(self.frame_bytes)
        chunk_bytes = fpc * self.frame_bytes
        # v110 is the oldest format SWMR needs and what HDF5 1.10+ (h5py >= 2.7) can read.
        file = h5py.File(self.path, "w", libver=("v110", "v110"),
                         rdcc_nbytes=max(4 << 20, 2 * chunk_bytes))
        try:
            from ... import __version__
            file.attrs.update({"format": fmt.FORMAT_NAME, "format_version": fmt.FORMAT_VERSION,
                               "orrery_version": __version__,
                               "created_utc": datetime.datetime.now(datetime.timezone.utc)
                               .isoformat(timespec="seconds")})
            file.attrs.update(attributes)
            frames = dict(shape=(0, self.n, 3), maxshape=(None, self.n, 3), chunks=(fpc, self.n, 3),
                          dtype=self.dtype)
            file.create_dataset(fmt.POSITIONS, **frames)
            if self.records_velocities:
                file.create_dataset(fmt.VELOCITIES, **frames)
            file.create_dataset(fmt.TIME, shape=(0,), maxshape=(None,), chunks=(4096,),
                                dtype="<f8", fillvalue=np.nan)
            file.create_dataset(fmt.STEP, shape=(0,), maxshape=(None,), chunks=(4096,),
                                dtype="<i8", fillvalue=fmt.STEP_FILL)
            file.create_dataset(fmt.MASSES, data=np.asarray(masses, dtype="<f8"))
            file.create_dataset(fmt.POPULATION, data=population)
            file.create_dataset(fmt.POPULATION_NAMES, data=list(names),
                                dtype=h5py.string_dtype("utf-8"))
            file.swmr_mode = True  # from here on no new objects or attributes can be added
        except BaseException:
            file.close()
            raise
        return file

    # -- the caller's side ---------------------------------------------------------------------

    def append(self, positions, time: float, step: int, velocities=None) -> None:
        """Queue one frame; blocks while the queue is full. The arrays are copied before this
        returns, so the caller may reuse them at once."""
        self._raise_if_failed()
        if self._closed:
            raise RecordingError(f"{self.path}: the recorder is closed")
        positions = self._frame_array(positions, "positions")
        if self.records_velocities:
            if velocities is None:
                raise InvalidInputError("this recording stores velocities: pass velocities=")
            velocities = self._frame_array(velocities, "velocities")
        elif velocities is not None:
            raise InvalidInputError("this recording was created without velocities=True")
        step, time = int(step), float(time)
        if self._last_step is not None and step <= self._last_step:
            raise InvalidInputError(f"step {step} does not follow step {self._last_step}: frames "
                                    "must be appended in increasing step order")
        if not time >= self._last_time:
            raise InvalidInputError(f"time {time} is before the previous frame's {self._last_time}")
        self._put((positions, velocities, time, step))
        self._last_step, self._last_time = step, time
        self.frames_appended += 1

    def append_simulation(self, simulation) -> None:
        """Append ``simulation``'s current state (positions, velocities if recorded, time, step)."""
        if self.records_velocities:
            particles = simulation.particles
            self.append(particles.pos, simulation.time, simulation.steps, velocities=particles.vel)
        else:
            self.append(simulation.positions(), simulation.time, simulation.steps)

    def _frame_array(self, array, what: str) -> np.ndarray:
        array = np.asarray(array)
        if array.shape != (self.n, 3):
            raise InvalidInputError(f"{what} must have shape ({self.n}, 3), got {array.shape}")
        return np.array(array, dtype=self._queued_dtype, order="C", copy=True)

    def _put(self, item) -> None:
        # Wait in slices so a writer that failed while we waited is noticed instead of hanging.
        while True:
            try:
                self._queue.put(item, timeout=0.25)
                return
            except queue.Full:
                self._raise_if_failed()

    def close(self) -> None:
        """Commit every queued frame, stop the writer thread and close the file (idempotent).
        Raises :class:`RecordingError` if the writer failed."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._queue.put(_STOP)
        self._thread.join()
        self._raise_if_failed()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise RecordingError(f"writing {self.path} failed: {self._error}") from self._error

    # -- the writer thread ---------------------------------------------------------------------

    def _write_loop(self) -> None:
        pending: list[tuple[float, int]] = []
        deadline = None
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - _time.monotonic())
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item is _STOP:
                    self._commit(pending)
                    break
                if item is not None:
                    self._write_frame(item)
                    pending.append((item[2], item[3]))
                    if deadline is None:
                        deadline = _time.monotonic() + self.flush_seconds
                if deadline is not None and _time.monotonic() >= deadline:
                    self._commit(pending)
                    pending, deadline = [], None
        except BaseException as error:  # reported to the caller by append/close
            self._error = error
            self._drain()
        finally:
            self._file.close()

    def _write_frame(self, item) -> None:
        positions, velocities, _, _ = item
        index = self.frames_committed + self._uncommitted
        for name, data in ((fmt.POSITIONS, positions), (fmt.VELOCITIES, velocities)):
            if data is not None:
                dataset = self._file[name]
                dataset.resize(index + 1, axis=0)
                dataset.write_direct(data.astype(self.dtype, copy=False), dest_sel=np.s_[index])
        self._uncommitted += 1

    def _commit(self, pending) -> None:
        """Make ``pending`` frames visible: their data reaches the file before their time and
        step entries do, so a reader (or a crash) never sees a step without its positions."""
        if not pending:
            return
        self._file.flush()
        start, count = self.frames_committed, len(pending)
        times = np.array([t for t, _ in pending], dtype="<f8")
        steps = np.array([s for _, s in pending], dtype="<i8")
        for name, values in ((fmt.TIME, times), (fmt.STEP, steps)):
            dataset = self._file[name]
            dataset.resize(start + count, axis=0)
            dataset[start:start + count] = values
        self._file.flush()
        self.frames_committed += count
        self._uncommitted -= count

    def _drain(self) -> None:
        while True:
            if self._queue.get() is _STOP:
                return


def _checked_population(population, names, n):
    names = tuple(str(name) for name in names)
    if not names:
        raise InvalidInputError("population_names must name at least one population")
    if population is None:
        population = np.zeros(n, dtype=np.uint8)
    population = np.asarray(population)
    if population.shape != (n,):
        raise InvalidInputError(f"population must have shape ({n},), got {population.shape}")
    if population.size and (population.min() < 0 or population.max() >= len(names)):
        raise InvalidInputError(f"population labels must lie in [0, {len(names)}): one name each")
    return population.astype(np.uint8), names


def run_attributes(simulation, *, scenario: str) -> dict:
    """The attributes that describe a :class:`~orrery.engine.Simulation` run."""
    solver = simulation.solver
    return {"scenario": scenario, "solver": solver.name, "solver_params": dict(solver.params),
            "integrator": simulation.integrator, "dt": simulation.dt,
            "softening": float(solver.softening), "G": 1.0,
            "units": "N-body units (G = 1; length, mass and time dimensionless)"}
