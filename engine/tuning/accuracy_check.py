"""The accuracy check: ``check_accuracy=K`` verifies a solver's ``accuracy=`` while it runs.

The accuracy table (``accuracy_table``) chooses a setting from errors measured on the shipped
scenarios; a run's own particles may be harder (a distribution the table did not see, or one
that changes as it evolves). The check measures the error of the accelerations the run itself
just computed, every K-th force evaluation (a step makes one; evaluations with potentials, for
energies, are not counted):

1. The sample is every ceil(N / ``CHECK_TARGETS``)-th body, at most ``CHECK_TARGETS`` of them
   spread over all N: the same bodies at every check, every population of a scenario in
   proportion (its bodies are stored population by population).
2. Their accelerations are compared with float64 direct sums over every body: on the host with
   the native direct kernel, on a compute device with ``sampled_reference.cl`` where the state
   lives there (positions and accelerations stay on the device: what comes back is the
   sample's partial sums). A device without float64 sends the state to the host instead.
3. The measurement is the RMS and the 90th percentile of |a - a_ref| / |a_ref| over the sample
   (``last``, ``describe()``). Where the larger of them is within the target, nothing changes:
   the run's results are those of a run without the check, bit for bit.
4. Past the target the check warns once (:class:`AccuracyDriftWarning`, one line) and retunes
   (``ThetaSetting.retune``): the table's errors are scaled by what this run measured over what
   the table says of the setting in use, and the cheapest setting within the target on that
   scale is chosen; where the table has nothing that tight, its tightest setting, and where the
   setting in use is already that, the run goes on at it. Later checks past the target retune
   again without another warning.

A check costs ``CHECK_TARGETS`` x N float64 pair interactions (and on a device one conversion
of the bodies to float64): on two shared CPU cores 0.07 s at N = 65,536 and 0.33 s at 262,144,
an eighth to a sixth of a cpu-tree evaluation at accuracy 1e-3 (docs/accuracy.md).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ... import _native
from ..accuracy import error_percentiles, sampled_exact_rows
from ..errors import InvalidInputError
from .accuracy_table import ThetaSetting

# Bodies sampled by a check, a quarter of the accuracy table's TARGETS and of their cost. At
# N = 65,536, accuracy 1e-3 (Plummer, Hernquist, galaxy collision; issue 48) they gave the
# trees' RMS and p90 within 7% and 12% of 4096 random targets', and the FMMs' p90 within 12%;
# the FMMs' RMS, set by a few bodies in the tail, was 2.6x lower on the Plummer sphere.
CHECK_TARGETS = 1024


class AccuracyDriftWarning(UserWarning):
    """A run's measured force error went past the accuracy it asked for."""


@dataclass(frozen=True)
class CheckedError:
    """One check: the RMS and 90th-percentile relative force errors at force evaluation
    ``evaluation`` (counted from 1) over ``targets`` sampled bodies."""

    evaluation: int
    rms: float
    p90: float
    targets: int


def sample_stride(n: int) -> int:
    """The step between the bodies a check samples among ``n`` (step 1 of the module docstring)."""
    return -(-n // CHECK_TARGETS)


def sample_targets(n: int) -> np.ndarray:
    """The indices a check samples among ``n`` bodies."""
    return np.arange(0, n, sample_stride(n))


def host_errors(pos, mass, acc, softening: float) -> tuple[float, float]:
    """(RMS, p90) of ``acc`` on the sample against float64 direct sums, on the host."""
    n = len(pos)
    targets = sample_targets(n)
    # The native kernel sums a contiguous range of targets: the sample goes first.
    order = np.concatenate([targets, np.delete(np.arange(n), targets)])
    exact, _ = _native.direct_accelerations_f64(
        np.ascontiguousarray(pos[order], np.float64), np.ascontiguousarray(mass[order], np.float64),
        softening, 0, False, "", 0, len(targets))
    return error_percentiles(np.asarray(acc)[targets], exact)


class _DeviceSample:
    """The device buffers of checks of ``n`` bodies in rows of ``dtype`` (kept between checks)."""

    def __init__(self, context, n: int, dtype):
        from ..solvers._device_input import RowPacker

        self.n, self.dtype = n, np.dtype(dtype)
        targets = sample_targets(n)
        self.count, self.stride = len(targets), sample_stride(n)
        self.targets = context.upload(targets.astype(np.int32))
        self.sample = context.empty((self.count, 4), self.dtype)
        self.packer = RowPacker(context, self.dtype)
        self.wide = None if self.dtype == np.float64 else context.empty((n, 4), np.float64)
        self.widen = None if self.wide is None else RowPacker(context, np.float64)

    def errors(self, context, body, acc, softening: float) -> tuple[float, float]:
        n = self.n
        wide = body
        if self.wide is not None:
            positions = context.wrap(context.export(body, (n, 3), (4, 1)), "positions")
            masses = context.wrap(context.export(body, (n,), (4,), offset=3), "masses")
            self.widen.pack(self.wide, positions, masses, n)
            wide = self.wide
        exact = sampled_exact_rows(context, wide, n, self.targets, softening)
        sampled = context.wrap(context.export(acc, (self.count, 3), (4 * self.stride, 1)),
                               "accelerations")
        self.packer.pack(self.sample, sampled, None, self.count, what="acceleration")
        return error_percentiles(self.sample.download()[:, :3], exact)


class AccuracyCheck:
    """Checks of one solver's accuracy every ``every`` force evaluations (module docstring).

    The solver calls :meth:`host` or :meth:`device` after each evaluation; a device state asks
    :meth:`due` before a step, so that the step to be checked runs kernel by kernel rather than
    from a graph (the check needs the bodies where the forces were computed).
    """

    def __init__(self, solver: str, setting: ThetaSetting, every: int):
        if setting.accuracy is None:
            raise InvalidInputError(
                f"{solver}: check_accuracy verifies accuracy=, which this solver was not given "
                f"(it runs at theta {setting.theta(1):g}): give accuracy (e.g. 1e-3) in place of "
                "theta, or leave check_accuracy out")
        self.solver = solver
        self.setting = setting
        self.every = int(every)
        self.evaluations = 0
        self.last: CheckedError | None = None
        self.retunes = 0
        self._warned = False
        self._device: _DeviceSample | None = None

    def due(self) -> bool:
        """Whether the next evaluation is checked."""
        return (self.evaluations + 1) % self.every == 0

    def host(self, pos, mass, acc, softening: float) -> bool:
        """After an evaluation of host arrays: check it if due. Returns whether it retuned."""
        self.evaluations += 1
        if self.evaluations % self.every:
            return False
        return self._judged(*host_errors(pos, mass, acc, softening), len(pos))

    def device(self, context, body, acc, n: int, softening: float) -> bool:
        """After an evaluation on a device (``body`` and ``acc``: the solver's ``real4`` rows of
        ``n`` bodies): check it if due. Returns whether it retuned."""
        self.evaluations += 1
        if self.evaluations % self.every:
            return False
        if not context.info.fp64:
            rows = body.download()[:n]
            return self._judged(*host_errors(rows[:, :3], rows[:, 3], acc.download()[:n, :3],
                                             softening), n)
        if self._device is None or (self._device.n, self._device.dtype) != (n, body.dtype):
            self._device = _DeviceSample(context, n, body.dtype)
        return self._judged(*self._device.errors(context, body, acc, softening), n)

    def _judged(self, rms: float, p90: float, n: int) -> bool:
        """Steps 3 and 4 of the module docstring."""
        self.last = CheckedError(self.evaluations, rms, p90, len(sample_targets(n)))
        accuracy = self.setting.accuracy
        if max(rms, p90) <= accuracy:
            return False
        before = self.setting.label(n)
        retuned = self.setting.retune(n, max(rms, p90))
        self.retunes += retuned
        if not self._warned:
            self._warned = True
            outcome = (f"retuned from {before} to {self.setting.label(n)}" if retuned else
                       f"the accuracy table has nothing tighter than {before}: the run goes on at it")
            warnings.warn(f"{self.solver}: the force error measured at evaluation "
                          f"{self.evaluations} (RMS {rms:.2g}, p90 {p90:.2g} over "
                          f"{self.last.targets} bodies against float64 direct sums) is past "
                          f"accuracy {accuracy:g}; {outcome}", AccuracyDriftWarning, stacklevel=2)
        return retuned

    def describe(self) -> str:
        """One clause for the solver's ``describe()``: the latest measurement."""
        every = f"accuracy checked every {self.every} evaluations"
        if self.last is None:
            return f"{every} (none yet)"
        retuned = f", retuned {self.retunes}x" if self.retunes else ""
        return (f"{every}: RMS {self.last.rms:.2g}, p90 {self.last.p90:.2g} over "
                f"{self.last.targets:,} bodies at evaluation {self.last.evaluation}{retuned}")


def accuracy_check(solver: str, setting: ThetaSetting, every: int | None) -> AccuracyCheck | None:
    """A solver's check for its ``check_accuracy`` option (None: no check)."""
    return None if every is None else AccuracyCheck(solver, setting, every)


__all__ = ["AccuracyCheck", "AccuracyDriftWarning", "CHECK_TARGETS", "CheckedError",
           "accuracy_check", "host_errors", "sample_stride", "sample_targets"]
