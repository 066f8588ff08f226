"""What the solver thread measures of a live run, published with its frames: steps per second
and solver seconds per step, and the sampled relative energy error."""

from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np

from ..contracts import SteppedSimulation
from ..errors import InvalidInputError

# Fewest seconds between two energy samples: each costs a potential evaluation and a download
# of the state, which at a million particles every 25 steps would cost a tenth of the GPU's rate.
ENERGY_INTERVAL = 0.5
# Steps the rate is measured over.
RATE_WINDOW = 32


class RateMeter:
    """Steps per second and solver seconds per step over the last ``RATE_WINDOW`` steps."""

    def __init__(self):
        self._ends: deque[float] = deque(maxlen=RATE_WINDOW)
        self._durations: deque[float] = deque(maxlen=RATE_WINDOW)

    def tick(self, seconds: float) -> None:
        self._ends.append(time.perf_counter())
        self._durations.append(seconds)

    @property
    def steps_per_second(self) -> float:
        if len(self._ends) < 2:
            return 1.0 / self._durations[-1] if self._durations and self._durations[-1] > 0 else 0.0
        span = self._ends[-1] - self._ends[0]
        return (len(self._ends) - 1) / span if span > 0 else 0.0

    @property
    def seconds_per_step(self) -> float:
        return float(np.median(self._durations)) if self._durations else 0.0


class RunMeters:
    """The rate of the run (``rate``, started afresh where a pause must not count as slow
    steps) and its energy error, sampled at most every ``energy_every`` steps and at most once
    in ``energy_interval`` seconds (each sample costs about one force evaluation). The solver
    thread measures; any thread reads."""

    def __init__(self, energy_every: int, energy_interval: float):
        if energy_every < 1:
            raise InvalidInputError(f"energy_every must be >= 1, got {energy_every}")
        if not energy_interval >= 0:
            raise InvalidInputError(f"energy_interval must be >= 0, got {energy_interval}")
        self._energy_every = int(energy_every)
        self._energy_interval = float(energy_interval)
        self._lock = threading.Lock()
        self._history: list[tuple[float, float]] = []
        self._energy_step, self._energy_at = 0, 0.0
        self.rate = RateMeter()

    def start(self, sim: SteppedSimulation) -> None:
        """Measure ``sim`` from now on (a restart or another solver: the error starts at 0)."""
        with self._lock:
            self._history = [(sim.time, 0.0)]
        self._energy_step, self._energy_at = sim.steps, time.perf_counter()
        self.rate = RateMeter()

    def restart_rate(self) -> None:
        self.rate = RateMeter()

    def sample_energy(self, sim: SteppedSimulation, now: float) -> None:
        """Sample ``sim``'s energy error if one is due ``now`` (``time.perf_counter``)."""
        if (sim.tracks_energy and sim.steps - self._energy_step >= self._energy_every
                and now - self._energy_at >= self._energy_interval):
            error = sim.energy_error()
            self._energy_step, self._energy_at = sim.steps, time.perf_counter()
            with self._lock:
                self._history.append((sim.time, error))

    def energy_error(self) -> float | None:
        """The last sample, or None until the first after a (re)start."""
        with self._lock:
            return self._history[-1][1] if len(self._history) > 1 else None

    def energy_history(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            samples = list(self._history)
        if not samples:
            return np.zeros(0), np.zeros(0)
        times, errors = zip(*samples)
        return np.asarray(times), np.asarray(errors)
