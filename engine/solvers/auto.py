"""``auto``: picks a solver by particle count, from crossovers measured on this machine by
``orrery calibrate`` or, until then, from default thresholds.

The choice is made at the first evaluation (or ``bind``) and again whenever the particle count
changes. ``chosen`` names the solver in use and ``reason`` says why in one sentence, for the
viewer and for ``describe()``.

Default thresholds (used until this machine is calibrated), each the particle count from which
a solver takes over, among the solvers that can run here:

=============  =========  ================================================================
solver         from N     why
=============  =========  ================================================================
cpu-direct     0          no set-up cost: fastest for small systems everywhere
gpu-direct     2,200      where a GPU overtook eight SIMD CPU cores in the reference study
cpu-tree       4,000      below the 6,100 measured against eight AVX2 cores: machines with
                          fewer cores (or no SIMD) have a slower direct kernel to beat
gpu-tree       9,000      where the GPU tree overtook GPU direct in the reference study
cpu-fmm        82,000     where cpu-fmm overtook cpu-tree at accuracy 1e-3 on two AVX-512 cores
                          (issue 48, ``orrery bench accuracy``, log-interpolated: 0.44 against
                          0.36 s at 65,536, 0.84 against 2.3 s at 262,144)
gpu-fmm        98,000     where gpu-fmm overtook gpu-direct at accuracy 1e-3 on an H100
                          (issue 48: 98,179; gpu-tree was fastest at no size there: 5.7 ms
                          against gpu-direct's 2.8 at 65,536, 7.9 against gpu-fmm's 5.8 at
                          262,144, 39.7 against 8.9 at 2^20)
=============  =========  ================================================================

GPU solvers get default thresholds only when a real GPU is present (or a device was named): on
the Intel OpenCL CPU device, which is how CI runs GPU kernels, the native CPU solvers are faster.
``cpu-tree`` is left out when ``gpu-direct`` can run: GPU direct summation beat the CPU tree
at every size the reference study measured up to the GPU tree's threshold; ``gpu-tree`` when
``gpu-fmm`` can (both run on the same devices), as measured at accuracy 1e-3 above, and
``cpu-fmm`` too (gpu-fmm took 5.8 ms at 262,144 bodies on the H100, cpu-fmm 0.84 s on two cores).

Accuracy: every approximate solver runs at the requested ``accuracy`` (default 1e-3, an RMS
relative force error), each choosing its own parameters from the accuracy table
(engine/tuning/accuracy_table.py), so switching solvers does not change the error; direct summation
is exact to round-off and meets any target. With ``theta`` given instead, trees run at that
opening angle. ``orrery calibrate`` times the trees at the default accuracy: ``auto`` never
trades accuracy for speed on its own.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidInputError, SolverUnavailableError
from ..particles import Particles, check_positions_and_masses
from ..tuning.accuracy_table import DEFAULT_ACCURACY
from ..tuning.accuracy_table import check_accuracy as checked_accuracy  # a parameter has its name
from ..tuning.calibration import Calibration, load_calibration
from ..tuning.crossovers import Schedule
from ._base import HostState, Solver, checked_potential_flag
from ..options import (ACCURACY, CHECK_ACCURACY, DEVICE, LEAF_CAPACITY, PRECISION, QUADRUPOLE,
                       SOFTENING, THETA, THREADS, SolverSpec)

DEFAULT_THRESHOLDS: dict[str, int] = {
    "cpu-direct": 0,
    "gpu-direct": 2_200,
    "cpu-tree": 4_000,
    "gpu-tree": 9_000,
    "cpu-fmm": 82_000,
    "gpu-fmm": 98_000,
}
# A solver left out of the defaults when the other one can run (see the module docstring).
_OUTCLASSED_BY = {"cpu-tree": "gpu-direct", "gpu-tree": "gpu-fmm", "cpu-fmm": "gpu-fmm"}
# Solvers auto never picks: the slow accuracy yardstick, and itself.
EXCLUDED = ("reference", "auto")


def default_schedule(candidates) -> Schedule:
    """The default thresholds restricted to ``candidates`` (names of solvers that can run)."""
    candidates = set(candidates)
    usable = [(name, start) for name, start in DEFAULT_THRESHOLDS.items()
              if name in candidates and _OUTCLASSED_BY.get(name) not in candidates]
    if not usable:
        raise SolverUnavailableError(
            f"auto has no default for any of {sorted(candidates)}; run `orrery calibrate`")
    return Schedule.from_thresholds(usable)


def _pass_through(option):
    """The option as auto offers it: no default of its own, so the chosen solver's applies."""
    return dataclasses.replace(option, default=None,
                               doc=f"{option.doc} (passed to the chosen solver if it has it)")


class AutoSolver(Solver):
    """Delegates every evaluation to the solver the schedule picks for the particle count."""

    name = "auto"

    def __init__(self, *, precision, softening, theta, accuracy, check_accuracy, quadrupole,
                 leaf_capacity, threads, device):
        if theta is not None and accuracy is not None:
            raise InvalidInputError(f"auto: give theta or accuracy, not both (theta={theta!r}, "
                                    f"accuracy={accuracy!r})")
        if theta is not None and check_accuracy is not None:
            raise InvalidInputError(f"auto: check_accuracy verifies accuracy=, not a theta "
                                    f"(theta={theta!r}): give accuracy, or leave both out")
        if accuracy is not None:
            accuracy = checked_accuracy(accuracy)
        elif theta is None:
            accuracy = DEFAULT_ACCURACY
        passed = dict(theta=theta, accuracy=accuracy, check_accuracy=check_accuracy,
                      quadrupole=quadrupole, leaf_capacity=leaf_capacity, threads=threads,
                      device=device)
        super().__init__(precision=precision, softening=softening, **passed)
        self._requested = {"precision": precision, "softening": softening,
                           **{k: v for k, v in passed.items() if v is not None}}
        self._solvers: dict[str, Solver] = {}
        self._n: int | None = None
        self._policy: tuple[Schedule, str] | None = None
        self.chosen: str | None = None
        self.reason = "nothing chosen yet: auto picks a solver at the first evaluation"

    # -- choosing --------------------------------------------------------------------------

    def _candidates(self) -> dict[str, dict]:
        """Solvers that can run here and accept the requested options: name -> their options."""
        from . import solver_specs

        candidates = {}
        for name, spec in solver_specs().items():
            if name in EXCLUDED or spec.unavailable_reason() is not None:
                continue
            own = {o.name for o in spec.options}
            options = {k: v for k, v in self._requested.items() if k in own}
            try:
                spec.resolve(options)
            except InvalidInputError:
                continue  # e.g. a single-precision-only solver when f64 was asked for
            candidates[name] = options
        return candidates

    def _schedule(self, candidates) -> tuple[Schedule, str]:
        """The schedule and the first half of the reason (how it was decided)."""
        if self._policy is None:
            calibration: Calibration | None = load_calibration(self.precision)
            schedule = calibration.schedule(candidates) if calibration else None
            if schedule is not None:
                timed_at = calibration.settings.get("accuracy", DEFAULT_ACCURACY)
                self._policy = (schedule, f"calibrated on {calibration.date} with the approximate "
                                          f"solvers at accuracy {timed_at:g}")
            else:
                command = "orrery calibrate" + (
                    "" if self.precision == "f32" else f" --precision {self.precision}")
                self._policy = (default_schedule(self._default_candidates(candidates)),
                                f"not calibrated (run `{command}`): default thresholds")
        return self._policy

    def _default_candidates(self, candidates) -> dict[str, dict]:
        """Candidates for the default thresholds: GPU solvers only on a GPU (see module doc)."""
        from ..tuning.calibration import device_key

        if self._requested.get("device") or device_key()["gpus"]:
            return candidates
        from . import solver_specs

        specs = solver_specs()
        return {name: options for name, options in candidates.items()
                if specs[name].kind != "gpu"}

    def select(self, n: int) -> Solver:
        """The solver for ``n`` particles (chosen again only when ``n`` changes)."""
        if n != self._n or self.chosen is None:
            from . import make_solver

            candidates = self._candidates()
            schedule, how = self._schedule(candidates)
            segment = schedule.segment_for(n)
            if segment.solver not in self._solvers:
                self._solvers[segment.solver] = make_solver(segment.solver,
                                                            **candidates[segment.solver])
            self.chosen = segment.solver
            self.reason = f"{how}: {schedule.describe_segment(segment)}"
            self._n = n
        return self._solvers[self.chosen]

    # -- the Solver interface ---------------------------------------------------------------

    def accelerations(self, pos, mass, *, potential: bool = False):
        potential = checked_potential_flag(potential)
        pos, mass = check_positions_and_masses(pos, mass)
        solver = self.select(pos.shape[0])
        result = solver.accelerations(pos, mass, potential=potential)
        self.last_stats = {**solver.last_stats, "solver": solver.name}
        return result

    def _compute(self, pos, mass, potential):
        return self.select(pos.shape[0])._compute(pos, mass, potential)

    def bind(self, particles: Particles) -> HostState:
        """The chosen solver's own state, so a GPU solver keeps its arrays on the device."""
        return self.select(particles.n).bind(particles)

    def theta_in_use(self, n: int) -> float | None:
        return self.select(n).theta_in_use(n)

    def describe(self) -> str:
        if self.chosen is None:
            return f"auto ({self.reason})"
        return f"auto: {self._solvers[self.chosen].describe()}; {self.reason}"


SPEC = SolverSpec(
    name="auto",
    doc="picks a solver by particle count from crossovers measured by `orrery calibrate`",
    options=(PRECISION, SOFTENING, _pass_through(THETA),
             dataclasses.replace(_pass_through(ACCURACY),
                                 doc=f"{ACCURACY.doc} (default {DEFAULT_ACCURACY:g} unless theta "
                                     f"is given; passed to every approximate solver)"),
             _pass_through(CHECK_ACCURACY), _pass_through(QUADRUPOLE),
             _pass_through(LEAF_CAPACITY), _pass_through(THREADS), _pass_through(DEVICE)),
    factory=AutoSolver,
    kind="any",
)
