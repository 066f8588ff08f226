"""Crossovers between solvers: which is fastest at which particle count, found from timing
curves (used by ``orrery calibrate``, ``auto`` and ``orrery bench suite``).

The rule that turns timing curves into a schedule (which solver is fastest at which particle
count), in order:

1. Each curve (``[(N, seconds per evaluation), ...]``) is cleaned: non-finite or non-positive
   entries are dropped and repeated N are replaced by their median.
2. Noise: time per evaluation never falls as N grows, so each curve is replaced by its best
   non-decreasing fit in log time (pool-adjacent-violators). A noisy dip cannot invent a
   crossing.
3. Between measured points a curve is a straight line in log N / log time. Beyond its last point
   it continues with its last slope clamped to [1, 2] (no solver gets cheaper per particle as N
   grows, none costs more than direct summation); before its first point with its first slope
   clamped to [0, 2]. A solver whose measurement stopped early (over budget) is thus still
   compared, at a cost that keeps growing.
4. On the union of all measured N, walking from small to large N, the current winner is replaced
   only by a solver faster by more than ``tolerance`` (5 % by default): curves within the noise
   of each other do not flip-flop. The boundary is placed where the two interpolated curves are
   equal (the exact log-log crossing), not where the margin was first exceeded.
5. The result is a list of N ranges, each with one solver. Curves that cross twice give a solver
   more than one range; curves that never cross give a single range. The first range extends to
   N = 0 and the last to infinity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import InvalidInputError

DEFAULT_TOLERANCE = 0.05
# Slopes (in log time per log N) allowed when a curve is extended beyond its measured points.
_SLOPE_ABOVE = (1.0, 2.0)
_SLOPE_BELOW = (0.0, 2.0)


@dataclass(frozen=True)
class Segment:
    """``solver`` is the fastest for ``lower <= N < upper`` (``upper`` None: no upper bound)."""

    solver: str
    lower: int
    upper: int | None

    def contains(self, n: int) -> bool:
        return n >= self.lower and (self.upper is None or n < self.upper)


@dataclass(frozen=True)
class Schedule:
    """Which solver to use at which particle count: consecutive :class:`Segment` ranges that
    cover every N from 0 up."""

    segments: tuple[Segment, ...]

    def __post_init__(self):
        if not self.segments:
            raise InvalidInputError("a schedule needs at least one segment")
        if self.segments[0].lower != 0 or self.segments[-1].upper is not None:
            raise InvalidInputError("a schedule must cover every particle count")
        for before, after in zip(self.segments, self.segments[1:]):
            if before.upper != after.lower or before.upper <= before.lower:
                raise InvalidInputError(f"segments {before} and {after} do not follow each other")

    def segment_for(self, n: int) -> Segment:
        return next(s for s in self.segments if s.contains(n))

    def choose(self, n: int) -> str:
        """The solver for ``n`` particles."""
        return self.segment_for(n).solver

    @property
    def solvers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.solver for s in self.segments))

    @property
    def crossovers(self) -> tuple[int, ...]:
        """Particle counts where the choice changes."""
        return tuple(s.lower for s in self.segments[1:])

    def describe_segment(self, segment: Segment) -> str:
        """``"cpu-tree is fastest above 5,900 particles"`` and the like."""
        if len(self.segments) == 1:
            return f"{segment.solver} is fastest at every size"
        if segment.lower == 0:
            return f"{segment.solver} is fastest below {segment.upper:,} particles"
        if segment.upper is None:
            return f"{segment.solver} is fastest above {segment.lower:,} particles"
        return f"{segment.solver} is fastest from {segment.lower:,} to {segment.upper:,} particles"

    def describe(self) -> str:
        """Every range, one clause each."""
        return "; ".join(self.describe_segment(s) for s in self.segments)

    def to_json(self) -> list:
        return [[s.solver, s.lower, s.upper] for s in self.segments]

    @classmethod
    def from_thresholds(cls, starts: Sequence[tuple[str, int]]) -> Schedule:
        """Build from ``[(solver, first N it is used at), ...]`` in increasing N; the first
        solver is used down to N = 0."""
        starts = sorted(starts, key=lambda item: item[1])
        bounds = [0] + [n for _, n in starts[1:]] + [None]
        return cls(tuple(Segment(name, lower, upper)
                         for (name, _), lower, upper in zip(starts, bounds, bounds[1:])))


class _Curve:
    """One solver's cleaned, monotone timing curve in log-log space."""

    def __init__(self, points: Iterable[tuple[float, float]]):
        by_n: dict[float, list[float]] = {}
        for n, seconds in points:
            n, seconds = float(n), float(seconds)
            if math.isfinite(n) and math.isfinite(seconds) and n >= 1 and seconds > 0:
                by_n.setdefault(n, []).append(seconds)
        ns = sorted(by_n)
        self.log_n = np.log(np.array(ns, dtype=float))
        self.log_t = _nondecreasing(np.log([float(np.median(by_n[n])) for n in ns]))

    def __bool__(self) -> bool:
        return self.log_n.size > 0

    def _end_slope(self, at_top: bool) -> float:
        if self.log_n.size < 2:
            return 1.0 if at_top else 0.0
        pair = slice(-2, None) if at_top else slice(0, 2)
        dn = np.diff(self.log_n[pair])[0]
        return float(np.diff(self.log_t[pair])[0] / dn)

    def at(self, log_n: np.ndarray) -> np.ndarray:
        """Log seconds at ``log_n``: interpolated inside, extended with clamped slopes outside."""
        log_n = np.asarray(log_n, dtype=float)
        result = np.interp(log_n, self.log_n, self.log_t)
        above = log_n > self.log_n[-1]
        below = log_n < self.log_n[0]
        slope_up = float(np.clip(self._end_slope(True), *_SLOPE_ABOVE))
        slope_down = float(np.clip(self._end_slope(False), *_SLOPE_BELOW))
        result[above] = self.log_t[-1] + slope_up * (log_n[above] - self.log_n[-1])
        result[below] = self.log_t[0] + slope_down * (log_n[below] - self.log_n[0])
        return result


def _nondecreasing(values: np.ndarray) -> np.ndarray:
    """Least-squares non-decreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [sum, count]
    for value in values:
        blocks.append([float(value), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return np.concatenate([np.full(count, total / count) for total, count in blocks]) \
        if blocks else np.array([], dtype=float)


def find_schedule(curves: Mapping[str, Iterable[tuple[float, float]]], *,
                  tolerance: float = DEFAULT_TOLERANCE) -> Schedule:
    """The fastest solver in each range of N, from timing curves (see the module docstring for
    the rule).

    Parameters
    ----------
    curves
        ``{solver: [(N, seconds per evaluation), ...]}``; the mapping's order breaks exact ties.
    tolerance
        Relative margin (default 0.05) a challenger must beat the current winner by to take over.
    """
    if not 0 <= tolerance < 1:
        raise InvalidInputError(f"tolerance must be in [0, 1), got {tolerance!r}")
    cleaned = {name: _Curve(points) for name, points in curves.items()}
    cleaned = {name: curve for name, curve in cleaned.items() if curve}
    if not cleaned:
        raise InvalidInputError("no usable timing points: every curve is empty")
    names = list(cleaned)
    grid = np.unique(np.concatenate([c.log_n for c in cleaned.values()]))
    table = np.array([cleaned[name].at(grid) for name in names])  # (solvers, grid)
    margin = math.log1p(-tolerance)

    current = int(np.argmin(table[:, 0]))
    starts: list[tuple[int, float]] = [(current, -math.inf)]
    for i in range(1, grid.size):
        best = int(np.argmin(table[:, i]))
        if best == current or table[best, i] >= table[current, i] + margin:
            continue
        crossing = _crossing(grid, table[best] - table[current], i, starts[-1][1])
        starts.append((best, crossing))
        current = best

    thresholds: list[tuple[str, int]] = []
    for index, log_n in starts:
        lower = 0 if log_n == -math.inf else int(round(math.exp(log_n)))
        while thresholds and thresholds[-1][1] >= lower:
            # A later challenger crossed at or before this range began: the range is empty.
            thresholds.pop()
        if not thresholds or thresholds[-1][0] != names[index]:
            thresholds.append((names[index], lower))
    return Schedule.from_thresholds(thresholds)


def _crossing(grid: np.ndarray, difference: np.ndarray, switch: int, floor: float) -> float:
    """Log N where ``difference`` (challenger minus winner, negative at ``switch``) last went
    from >= 0 to < 0, searching back from ``switch`` but not below ``floor``."""
    for j in range(switch, 0, -1):
        d0, d1 = difference[j - 1], difference[j]
        if d0 >= 0:
            return float(max(floor, grid[j - 1] + d0 / (d0 - d1) * (grid[j] - grid[j - 1])))
        if grid[j - 1] <= floor:
            break
    # The challenger was already faster (within the margin) when the last range began.
    return floor
