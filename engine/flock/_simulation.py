"""FlockSimulation: a flock advanced with a fixed time step on the CPU or a compute device,
behind the same contract the runner, the recorder and the renderer use for a gravity
:class:`~orrery.engine.Simulation` (:class:`~orrery.engine.contracts.SteppedSimulation`)."""

from __future__ import annotations

import numpy as np

from .. import frame_encoding
from ..compute import HostSnapshot
from ..errors import InvalidInputError
from ..particles import Particles
from ._cpu import CpuFlock
from ._parameters import FlockParameters
from .reference import quantise, wrap

# Where a flock runs when not told: the native CPU code.
CPU = "cpu"


def _backend(pos, vel, device: str | None, threads: int | None, simd: str | None, group: int | None):
    if device in (None, "", CPU, "auto"):
        return CpuFlock(pos, vel, threads=threads, simd=simd)
    from ._device import DEFAULT_GROUP, DeviceFlock
    return DeviceFlock(pos, vel, device=device, group=group or DEFAULT_GROUP)


class FlockSimulation:
    """Boids following ``rules`` from ``particles`` (positions wrapped into the periodic box,
    speeds capped at the maximum, both rounded onto the fixed-point grids).

    ``device`` is ``"cpu"`` (default; ``threads`` and ``simd`` apply) or a compute device
    string such as ``"cuda:0"`` or ``"sycl:cpu"`` (``group`` is the work-group size).
    """

    model = "flock"
    tracks_energy = False  # the runner samples no energy error for flocks

    def __init__(self, particles: Particles, rules: FlockParameters, *, dt: float,
                 device: str | None = None, threads: int | None = None, simd: str | None = None,
                 group: int | None = None):
        if not isinstance(rules, FlockParameters):
            raise InvalidInputError(f"rules must be FlockParameters, got {type(rules).__name__}")
        rules.check_step(dt)
        self._rules = rules
        self._dt = float(dt)
        self._options = (device, threads, simd, group)
        self._population = particles.population.copy()
        self._population_names = particles.population_names
        self.time = 0.0
        self.steps = 0
        self._backend = _backend(*self._normalised(particles.pos, particles.vel), *self._options)
        self._constants = None

    def _normalised(self, pos, vel) -> tuple[np.ndarray, np.ndarray]:
        c = self._rules.constants(len(pos), self._dt)
        pos = wrap(np.mod(np.asarray(pos, np.float64), c["world"]), c)
        vel = np.asarray(vel, np.float64)
        speed = np.linalg.norm(vel, axis=1, keepdims=True)
        vel = np.where(speed > c["max_speed"], vel * (c["max_speed"] / np.maximum(speed, 1e-300)),
                       vel)
        return pos, quantise(vel, c["velocity_quantum"]).astype(np.float32)

    @property
    def n(self) -> int:
        return self._backend.n

    @property
    def dt(self) -> float:
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        self._rules.check_step(value)
        self._dt = float(value)
        self._constants = None

    @property
    def rules(self) -> FlockParameters:
        return self._rules

    @rules.setter
    def rules(self, rules: FlockParameters) -> None:
        """New rules from the next step on. A new world or speed limit moves the state onto
        the new box and grids (positions wrapped, speeds capped), so it stays valid."""
        rules.check_step(self._dt)
        old, self._rules = self._rules, rules
        self._constants = None
        if (rules.world, rules.max_speed) != (old.world, old.max_speed):
            pos, vel = self._backend.state()
            self._backend = _backend(*self._normalised(pos, vel), *self._options)

    def step(self, count: int = 1) -> None:
        if self._constants is None:
            self._constants = self._rules.constants(self.n, self._dt)
        rules = self._rules
        for _ in range(int(count)):
            self._backend.step(self._constants, rules.search, rules.cell_width)
            self.steps += 1
            self.time += self._dt

    def synchronize(self) -> None:
        """Wait until the steps queued so far have finished (devices run asynchronously)."""
        self._backend.synchronize()

    @property
    def timing(self) -> dict:
        """Seconds of the last step's phases (grid, sort, gather, rules)."""
        return self._backend.timing

    @property
    def traffic(self) -> dict:
        """Bytes the last step's phases move in device memory by the backend's model (empty
        on the CPU, which does not model them)."""
        return self._backend.traffic

    def positions(self) -> np.ndarray:
        return self._backend.positions()

    def stage_positions(self) -> HostSnapshot:
        """The current positions as a float32 (n, 3) snapshot, a frame (a host copy: the next
        steps reuse the backend's buffers)."""
        return HostSnapshot(np.array(self._backend.positions(), np.float32, copy=True))

    def stage_frame(self, encoding: str) -> HostSnapshot:
        """The current positions as a recorded frame in ``encoding``, encoded on the host."""
        return HostSnapshot(frame_encoding.encode_on_host(self._backend.positions(), encoding))

    def stage_state(self) -> tuple[HostSnapshot, HostSnapshot]:
        """(positions, velocities) as a keyframe stores them."""
        particles = self.particles
        return HostSnapshot(particles.pos), HostSnapshot(particles.vel)

    def prepare_frames(self) -> None:
        """Nothing to build: a flock's frames are encoded on the host."""

    def theta_in_use(self) -> None:
        """None: a flock has no opening angle."""
        return None

    def velocities(self) -> np.ndarray:
        return self._backend.state()[1]

    @property
    def particles(self) -> Particles:
        pos, vel = self._backend.state()
        return Particles(pos, vel, np.ones(len(pos), np.float32), self._population.copy(),
                         self._population_names)

    def describe(self) -> str:
        return f"flock, {self._rules.search}, cell width {self._rules.cell_width}x, " \
               f"{self._backend.describe()}"

    def run_attributes(self) -> dict:
        """What a recording of this run stores about it (besides scenario and model)."""
        return {"dt": self._dt, "device": self._backend.describe(), "flock": self._rules.as_dict()}
