"""The contracts between Orrery's parts, written down: what each side may call on the other.

Every member listed is there on every implementation (none is optional, none is probed for):
where an implementation has nothing to do for a member, it says so by what it returns (a host
state's ``device_arrays()`` is None, a replay's ``energy_history()`` is None). Each contract
names its implementations; ``tests/engine/test_contracts.py`` checks that they keep it.

The live data path: initial conditions -> a :class:`SteppedSimulation` advancing a
:class:`SimulationState` -> a :class:`FrameSource` (the runner) publishing
:class:`~orrery.engine.frames.Frame` s with :class:`~orrery.engine.frames.FrameStats` -> a
:class:`FrameConsumer` drawing them, and for a served run each client's pictures handed to a
:class:`StreamConsumer`; beside it a :class:`SimulationRecorder` writing the simulation to
disk, and back through :class:`StoredFrames` and a Player (a FrameSource again).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .compute import Context, Snapshot
from .diagnostics import Diagnostics
from .frames import Frame, FrameSource, FrameStats
from .particles import Particles

__all__ = ["AccuracyCalibrated", "DeviceForceVjp", "FrameConsumer", "FrameSource", "FrameStats",
           "GravitySimulation", "Playback", "SimulationRecorder", "SimulationState",
           "SteppedSimulation", "StoredFrames", "StreamConsumer"]


@runtime_checkable
class SimulationState(Protocol):
    """Positions, velocities and masses where a solver keeps them, and the leapfrog's pieces.

    Implementations: ``solvers.HostState`` (host memory, a CPU solver's precision),
    ``lattice.LatticeState`` (the reversible integrator's integer lattice, host memory),
    ``solvers._device_state.DeviceState`` (device memory, kernels). A distributed run's state is
    one of these on each rank (``DistributedSolver`` brings in the other ranks' fields).
    """

    @property
    def n(self) -> int: ...

    def compute_accelerations(self) -> None: ...

    def kick(self, dt: float) -> None: ...

    def drift(self, dt: float) -> None: ...

    def advance(self, key: Hashable, step: Callable[[], None]) -> None:
        """Run ``step()``, one whole step of this state; ``key`` is what the step depends on
        besides the state (a device state replays steps with the same key from a graph)."""

    def synchronize(self) -> None:
        """Wait until the work queued so far has finished."""

    def accelerations(self) -> np.ndarray:
        """The last evaluation's accelerations, (n, 3), a host copy (waits for it)."""

    def positions(self) -> np.ndarray:
        """Current positions, a host copy the caller may keep."""

    def stage_positions(self) -> Snapshot:
        """Current positions as float32 (n, 3), taken without waiting (a frame)."""

    def stage_frame(self, encoding: str) -> Snapshot:
        """Current positions in a recorded frame's ``encoding`` (``frame_encoding``)."""

    def stage_state(self) -> tuple[Snapshot, Snapshot]:
        """(positions, velocities) in the run's precision (a keyframe)."""

    def prepare_frames(self) -> None:
        """Get ``stage_frame`` ready (a device state builds its kernels)."""

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host copies of (pos, vel, mass)."""

    def potentials(self) -> np.ndarray: ...

    def energies(self) -> tuple[float, float]:
        """(kinetic, potential) energy, summed where the state lives."""

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta, summed where the state lives (nothing downloaded from a
        device)."""

    def device_arrays(self) -> tuple | None:
        """(pos, vel, mass) as device arrays (views of the state), or None in host memory."""


@runtime_checkable
class SteppedSimulation(Protocol):
    """A model advanced with a fixed time step, as the runner, the recorder and the served
    widget drive it.

    Implementations: ``simulation.Simulation`` (gravity), ``flock.FlockSimulation``,
    ``distributed.DistributedSimulation`` (gravity over MPI ranks: every call that reads the
    state is a collective that every rank makes).
    """

    model: str  # "gravity" or "flock": what a recording stores as its model
    tracks_energy: bool  # whether the runner samples an energy error
    time: float
    steps: int

    @property
    def n(self) -> int: ...

    @property
    def dt(self) -> float: ...

    @property
    def particles(self) -> Particles:
        """The current state as host particles (a synchronised copy)."""

    def step(self, count: int = 1) -> None: ...

    def positions(self) -> np.ndarray:
        """Current positions on the host."""

    def stage_positions(self) -> Snapshot:
        """Current positions as a float32 (n, 3) snapshot taken without waiting (a frame)."""

    def stage_frame(self, encoding: str) -> Snapshot:
        """Current positions as a recorded frame in ``encoding`` (``frame_encoding``)."""

    def stage_state(self) -> tuple[Snapshot, Snapshot]:
        """(positions, velocities) in the run's precision (a keyframe)."""

    def prepare_frames(self) -> None:
        """Get ``stage_frame`` ready, so a recording's first frame costs what the others do."""

    def describe(self) -> str:
        """The solver (or where a flock runs) and its settings, in words."""

    def theta_in_use(self) -> float | None:
        """The opening angle the solver uses now, or None where it has none."""

    def run_attributes(self) -> dict:
        """What a recording of this run stores about it, besides the scenario."""


@runtime_checkable
class GravitySimulation(SteppedSimulation, Protocol):
    """A gravity run, whose energy is measured (``tracks_energy`` is True):
    ``simulation.Simulation`` and ``distributed.DistributedSimulation``."""

    integrator: str
    initial: Diagnostics

    def diagnostics(self) -> Diagnostics: ...

    def energy_error(self, diagnostics: Diagnostics | None = None) -> float: ...


@runtime_checkable
class StoredFrames(Protocol):
    """Frames stored to be read by index: what a Player plays and a movie is made of.

    Implementations: ``recording.RecordingFile`` (a recording, followed while it is written),
    ``snapshot_series.SnapshotSeries`` (another code's snapshots, interpolated).
    """

    path: Path | str
    n: int
    dtype: np.dtype  # of the frames ``read`` gives
    attributes: dict
    masses: np.ndarray
    population: np.ndarray
    population_names: tuple[str, ...]
    being_written: bool  # a writer is appending to it now (``refresh`` takes its frames in)

    @property
    def frame_count(self) -> int: ...

    @property
    def times(self) -> np.ndarray: ...

    @property
    def steps(self) -> np.ndarray: ...

    def read_into(self, index: int, out: np.ndarray, *, velocities: bool = False) -> np.ndarray:
        """Frame ``index``'s positions (or velocities) written into ``out``."""

    def read(self, index: int, *, velocities: bool = False) -> np.ndarray: ...

    def refresh(self) -> int:
        """Take in frames committed since the last look; returns how many are new."""

    def close(self) -> None: ...


@runtime_checkable
class Playback(Protocol):
    """A FrameSource with transport controls, as the viewer's timeline and the served replay
    drive it: ``recording.Player``.

    ``position`` is a frame index; ``speed`` frames of the recording per second of wall time
    (negative plays backwards) and ``loop`` a flag, both writable; ``live``: the recording is
    still being written and is followed as it grows.
    """

    frame_count: int
    position: int
    speed: float
    loop: bool
    playing: bool
    live: bool

    def play(self) -> None: ...

    def pause(self) -> None: ...

    def seek(self, index: int) -> None: ...

    def step(self, delta: int = 1) -> None:
        """Pause and move ``delta`` frames (negative: back)."""


@runtime_checkable
class FrameConsumer(Protocol):
    """What draws published frames: ``app.render.ParticleScene``, through which the viewer's
    window, the movie writer and each served viewer (``app/serve/_hub.py``) draw.

    A consumer reads a :class:`FrameSource` with ``latest()`` (and waits with
    ``wait_for_newer``), so it never holds up the run; a frame's positions are never written
    to, so it may keep the frame as long as it likes.
    """

    def show(self, frame: Frame, population: np.ndarray) -> bool:
        """Take ``frame`` (its particles labelled by ``population``); False if it was shown
        already."""

    def set_masses(self, masses: np.ndarray | None) -> None:
        """Per-particle masses for density images (None: equal masses)."""


@runtime_checkable
class StreamConsumer(Protocol):
    """What takes one client's share of the served stream (docs/serve-protocol.md) from the
    serve ``Hub`` (``app/serve/_hub.py``), which draws each frame through a
    :class:`FrameConsumer` and encodes a picture for each client: the WebSocket's outbox
    (``app/serve/_web.py``) and the Jupyter widget (``app/serve/_widget.py``).
    """

    def deliver(self, message: str | bytes) -> None:
        """Send ``message`` to the client: a JSON text, or a packed picture (bytes), in the
        order given. Called from the render thread and the client's encode thread, so it must
        not block: a slow client is kept from holding up the run by the Hub's flow control, not
        by waiting here."""


@runtime_checkable
class SimulationRecorder(Protocol):
    """What takes a simulation's state to disk every K-th step (not at the rate frames are
    read, as a FrameConsumer does): ``recording.Recorder``, and the command line's recording,
    which outlives a failing Recorder."""

    def append_simulation(self, simulation: SteppedSimulation) -> None:
        """The current state as a frame (and a keyframe when one is due)."""

    def append_last_keyframe(self, simulation: SteppedSimulation) -> None:
        """The final state as a keyframe, so the run can be continued from it."""

    def close(self) -> None: ...


@runtime_checkable
class AccuracyCalibrated(Protocol):
    """A solver class with the ``accuracy`` option, as the accuracy table measures it
    (``orrery calibrate --accuracy``): cpu-tree, gpu-tree, cpu-fmm and gpu-fmm."""

    # The option sets measured apart, in the order of the table's variant keys.
    accuracy_variants: tuple[dict[str, object], ...]
    @classmethod
    def accuracy_thetas(cls, variant: dict[str, object]) -> tuple[float, ...]:
        """The thetas measured for ``variant``, one of ``accuracy_variants``."""


@runtime_checkable
class DeviceForceVjp(Protocol):
    """A GPU solver whose force evaluation has a VJP on its device, so a reversible run's
    gradient (``engine/gradients.py``) keeps its state and adjoint there
    (``solvers/_device_lattice.py``): gpu-direct and gpu-fmm."""

    context: Context  # the device the arrays below live on
    # launch_vjp may be given one array as both its cotangent and its out (each row's cotangent
    # is read before that row is written, and by no other): a gradient then keeps no separate
    # array of cotangent rows on the device
    vjp_in_place: bool

    def padding_for(self, n: int) -> int:
        """Rows of the body arrays are padded to a multiple of this (zero-mass padding)."""

    def launch_accelerations(self, body, out, count: int, *, potential: bool) -> list:
        """Queue the evaluation of the first ``count`` rows of ``body`` into ``out``."""

    def launch_vjp(self, body, cotangent, out, count: int, *, potential: bool) -> list:
        """Queue the last evaluation's VJP with the cotangents' rows ``cotangent``: (pos_bar,
        mass_bar) rows into ``out`` (which may be ``cotangent`` itself where
        ``vjp_in_place``). One VJP an evaluation: gpu-fmm's takes the evaluation's local
        expansions for its own use."""
