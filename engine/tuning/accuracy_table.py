"""The accuracy table: how large each approximate solver's force error is at each setting of its
accuracy parameter, measured on every shipped scenario at a range of particle counts, and the
rule that turns a requested accuracy into a setting (``make_solver(..., accuracy=1e-3)``).

A row is one measurement: solver, variant (the options that change the error besides theta,
as ``"name=value,..."`` in option order, e.g. ``"quadrupole=False"`` for cpu-tree,
``"opening=group,quadrupole=False"`` for gpu-tree, ``"order=5"`` for an FMM), scenario, N,
theta, and the RMS and 90th-percentile relative force errors |a - a_ref| / |a_ref| over up to
``TARGETS`` sampled particles against float64 direct summation with the scenario's softening,
plus ``cost``, a work measure per particle (trees: interactions per particle; FMMs: P2P pairs
plus M2Ls in pair equivalents, ``cost_per_particle``) that only compares variants of one solver. The defaults ship in ``accuracy_defaults.json`` beside this
module (docs/accuracy.md says how they were measured); ``orrery calibrate --accuracy``
measures this machine's solvers again and stores the rows in the cache directory, where they
replace the defaults of the same solver, variant, scenario, size and theta (the others stay).

The rule, for a target accuracy ``a`` and ``n`` particles:

1. ``a`` must be a finite number in (0, 1].
2. A setting (a variant and a theta) has one error per measured size: the worst over the
   scenarios of ``SCENARIOS`` (every shipped one but the uniform cube and the satellite, see
   there) of the larger of its RMS and 90th-percentile errors. Its error at ``n`` is that curve interpolated linearly
   in log error against log N between the two measured sizes around ``n`` (outside the measured
   sizes, the nearest one's). Its cost at ``n`` is interpolated the same way. Settings measured
   at the largest size measured at or below ``n`` (or beyond it) are preferred: one last measured
   far below ``n`` would look cheap there (interactions per particle grow with N); the others
   are considered only when none of those meets the target.
3. A setting qualifies when its error at ``n`` is at most ``a / MARGIN``. ``MARGIN`` covers the
   spread between random realisations and between sampled targets (the table is one seed and
   1024 targets; tests use others).
   For a tree (``between_thetas``), whose error grows smoothly with theta, each variant also
   has the setting where its error, interpolated linearly in log error against theta between
   the two neighbouring thetas that straddle ``a / MARGIN``, reaches it (theta rounded down to
   ``THETA_DECIMALS``, its cost interpolated the same way): the grid's steps change the error
   by up to 2x, so without it the chosen setting was up to a step slower than the target needs.
   The FMMs' errors jump between thetas (the lists change by whole cells): a theta between two
   measured ones overshot ``a`` (cpu-fmm, 1e-2, N = 48,000: 1.08e-2), so they keep the grid.
4. The qualifying setting with the least cost at ``n`` is chosen: the fastest (for one variant,
   normally its largest qualifying theta; ties go to the larger theta). Among several variants
   (an FMM's expansion orders) costs compare the work of each at ``n``.
5. When no setting qualifies, the target is out of the table's reach: InvalidInputError,
   naming the smallest error measured.

The chosen setting is therefore as loose as the table allows: its measured error at the sizes
around ``n`` is within a step of theta of ``a / MARGIN`` (the theta grid's steps change the
error by less than 2x where targets of 1e-2 to 1e-4 fall), which keeps the errors of the
calibration scenarios within [a / 4, a] (``tests/engine/test_accuracy_rule.py``).

A solver joins in three steps: the ``ACCURACY`` option in its ``SPEC`` (and a theta option
without a default of its own, so that both given together can be refused); the
``contracts.AccuracyCalibrated`` members on its class, ``accuracy_variants`` (the option sets
the table measures apart) and ``accuracy_thetas(variant)`` (``DEFAULT_THETAS`` unless its angles
differ):
``orrery calibrate --accuracy`` makes the solver with each set and every theta; and a
:class:`ThetaSetting` that it asks for theta (and, with several variants, the variant) at each
evaluation, exposing ``chosen`` and adding ``ThetaSetting.stats()`` to ``last_stats``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import InvalidInputError
from ..input_files import read_small_text

# ``auto``'s target when neither accuracy nor theta is given.
DEFAULT_ACCURACY = 1e-3
# Spread between realisations and samples of targets that a chosen setting must leave room for
# (rule step 3), now that the error is the larger of RMS and p90 at the size itself (issue 48):
# with 1.0, cpu-tree's p90 on seed 3 reached 1.04a (N = 3000) and 1.2a (N = 12000) at targets of
# 1e-2 and 1e-3; with 1.3 the worst was 1.11a, and RMS stayed within [0.45a, 0.73a].
MARGIN = 1.3
# Particles sampled per measurement for the errors (all of them below this). The FMMs' errors
# on the Hernquist sphere have a heavy tail (a few bodies far out, errors near 1e-2) that sets
# their RMS: over 1024 targets it moved 3x between realisations (cpu-fmm, p 7, theta 0.9,
# N = 40000), so rows measured since issue 48 sample 4096 (the trees' older rows 1024).
TARGETS = 4096
TABLE_FORMAT = 1
# Larger than any table `orrery calibrate --accuracy` writes: a bigger file is not one.
MAX_TABLE_BYTES = 64 << 20
DEFAULTS_FILE = "accuracy_defaults.json"
# What ``orrery calibrate --accuracy`` measures by default: opening angles finer where errors
# are small, and sizes up to where the galaxy models' errors stopped growing.
DEFAULT_THETAS = (0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55,
                  0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 1.0, 1.1, 1.2, 1.35, 1.5)
DEFAULT_SIZES = (1024, 2048, 4096, 8192, 16384, 32768, 65536)
# The scenarios a chosen setting must hold on: every shipped one but the uniform cube, whose
# acceleration vanishes at its centre: there a relative error is ill-conditioned and one
# particle decides the RMS (cpu-tree, theta 0.3, N = 16384: one target with |a| 50x below the
# median has error 2.5e-2 and triples the RMS, 9.0e-4 against 3.3e-4 without it), and the
# host and satellite, not in the table yet: its rows need a GPU at 2^20, and counting it makes
# cpu-fmm's choice at 1e-3 and N = 262,144 2.5x the work (docs/accuracy.md, "The satellite").
SCENARIOS = ("plummer", "plummer-cluster", "hernquist", "gaussian", "disk-galaxy",
             "galaxy-collision")


@dataclass(frozen=True)
class Choice:
    """What the rule chose: ``theta`` of ``variant``, and the measurement behind it: ``error``,
    the setting's error at ``n`` (rule step 2: the worst scenario's larger of RMS and 90th
    percentile, interpolated between the measured ``sizes`` around ``n``, both the nearest one
    outside them), ``worst_scenario`` at the nearer of those sizes, and ``cost`` at ``n``."""

    accuracy: float
    n: int
    variant: str
    theta: float
    error: float
    worst_scenario: str
    sizes: tuple[int, int]
    cost: float
    source: str

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "theta": self.theta, "variant": self.variant,
                "n": self.n, "error": self.error, "worst_scenario": self.worst_scenario,
                "sizes": self.sizes, "cost": self.cost, "table": self.source}


def check_accuracy(accuracy) -> float:
    """Rule step 1: a finite target in (0, 1]."""
    value = float(accuracy)
    if not math.isfinite(value) or not 0 < value <= 1:
        raise InvalidInputError(f"accuracy must be a finite number in (0, 1] (an RMS relative "
                                f"force error such as 1e-3), got {accuracy!r}")
    return value


def variant_key(options: dict) -> str:
    """``{"quadrupole": False}`` -> ``"quadrupole=False"`` (the order given)."""
    return ",".join(f"{name}={value}" for name, value in options.items())


def _log_interpolated(n: int, sizes: list[int], values: list[float]) -> tuple[float, int, int]:
    """``values`` (positive, one per increasing size) at ``n``, linear in log value against
    log N between the sizes around ``n``, the nearest one's outside them; and those sizes."""
    if n <= sizes[0]:
        return values[0], sizes[0], sizes[0]
    if n >= sizes[-1]:
        return values[-1], sizes[-1], sizes[-1]
    upper = next(i for i, size in enumerate(sizes) if size > n)
    lower = upper - 1
    weight = math.log(n / sizes[lower]) / math.log(sizes[upper] / sizes[lower])
    tiny = 1e-30  # an error measured as 0 (a theta that opened every cell)
    logs = [math.log(max(values[i], tiny)) for i in (lower, upper)]
    return math.exp(logs[0] + weight * (logs[1] - logs[0])), sizes[lower], sizes[upper]


@dataclass(frozen=True)
class _Setting:
    """One (variant, theta) of the table, evaluated at one N (rule step 2)."""

    variant: str
    theta: float
    error: float
    cost: float
    worst_scenario: str
    sizes: tuple[int, int]
    measured: tuple[int, ...]


class AccuracyTable:
    """Measured errors by solver and variant: ``rows[(solver, variant)][scenario][n]`` is a list
    of ``(theta, rms, p90, cost)`` in increasing theta; ``sources[(solver, variant)]`` says where
    those rows came from."""

    def __init__(self, rows: dict, sources: dict):
        self.rows = rows
        self.sources = sources

    def has(self, solver: str, variant: str) -> bool:
        return (solver, variant) in self.rows

    def choose(self, solver: str, variants: Iterable[str], accuracy: float, n: int, *,
               between_thetas: bool = False) -> Choice:
        """The setting for ``accuracy`` at ``n`` particles (the rule in the module docstring;
        ``between_thetas``: a tree's, rule step 3's second part)."""
        accuracy = check_accuracy(accuracy)
        settings = []
        for variant in variants:
            if (solver, variant) not in self.rows:
                raise InvalidInputError(
                    f"the accuracy table has no rows for {solver} ({variant or 'defaults'}); "
                    f"measure them with `orrery calibrate --accuracy --solvers {solver}` or "
                    f"give theta instead")
            settings += self.settings(solver, variant, n)
        limit = accuracy / MARGIN
        if between_thetas:
            settings += _between_thetas(settings, limit)
        qualifying = [s for s in settings if s.error <= limit]
        # Rule step 2: settings measured at the largest size measured up to n (or beyond) first.
        below = [size for setting in qualifying for size in setting.measured if size <= n]
        covered = [s for s in qualifying if below and max(s.measured) >= max(below)]
        qualifying = covered or qualifying
        if not qualifying:
            reachable = min((s.error for s in settings), default=math.inf)
            raise InvalidInputError(
                f"accuracy {accuracy:g} is beyond {solver}'s measured settings at N = {n}: the "
                f"smallest error its table reaches there is {reachable:.2g} (with the margin "
                f"{MARGIN} the target must be at least {reachable * MARGIN:.2g})")
        best = min(qualifying, key=lambda s: (s.cost, -s.theta))
        return Choice(accuracy=accuracy, n=n, variant=best.variant, theta=best.theta,
                      error=best.error, worst_scenario=best.worst_scenario, sizes=best.sizes,
                      cost=best.cost, source=self.sources[(solver, best.variant)])

    def settings(self, solver: str, variant: str, n: int) -> list[_Setting]:
        """Every theta of ``variant`` with its error and cost at ``n`` (rule step 2)."""
        # measured[theta][size]: (error, scenario) and the cost of each scenario there.
        measured: dict[float, dict[int, list[tuple[float, str, float]]]] = {}
        for scenario, by_n in self.rows[(solver, variant)].items():
            for size, points in by_n.items():
                for theta, rms, p90, cost in points:
                    measured.setdefault(theta, {}).setdefault(size, []).append(
                        (max(rms, p90), scenario, cost))
        settings = []
        for theta, at in sorted(measured.items()):
            sizes = sorted(at)
            worst = {size: max(at[size]) for size in sizes}
            error, lower, upper = _log_interpolated(n, sizes, [worst[s][0] for s in sizes])
            # The costliest scenario's work (NaN where a row has none: then no cost is known).
            costs = [max(cost for _, _, cost in at[size]) for size in sizes]
            cost = _log_interpolated(n, sizes, costs)[0] if all(map(math.isfinite, costs)) \
                else math.inf
            nearer = lower if n / lower <= upper / n else upper
            settings.append(_Setting(variant, theta, error, cost, worst[nearer][1], (lower, upper),
                                     tuple(sizes)))
        return settings


# Decimals of a theta between the table's (rounded down, towards the smaller error).
THETA_DECIMALS = 3


def _between_thetas(settings: list[_Setting], limit: float) -> list[_Setting]:
    """Rule step 3's settings between the theta grid's steps: for each variant, where its error
    crosses ``limit`` between two neighbouring thetas, the theta where the error, linear in log
    error against theta, reaches ``limit`` (rounded down), its cost interpolated the same way
    in log cost (gpu-tree at N = 2^20 on the H200: theta 0.298 where the grid gave 0.25, whose
    time was 1.48x that of 0.3)."""
    between = []
    by_variant: dict[str, list[_Setting]] = {}
    for setting in settings:
        by_variant.setdefault(setting.variant, []).append(setting)
    scale = 10 ** THETA_DECIMALS
    for ordered in by_variant.values():
        ordered.sort(key=lambda s: s.theta)
        for below, above in zip(ordered, ordered[1:]):
            if not 0 < below.error <= limit < above.error or below.measured != above.measured:
                continue
            step = math.log(above.error / below.error)
            reach = below.theta + math.log(limit / below.error) / step * (above.theta - below.theta)
            theta = math.floor(reach * scale) / scale
            if theta <= below.theta:
                continue
            fraction = (theta - below.theta) / (above.theta - below.theta)
            cost = below.cost * (above.cost / below.cost) ** fraction \
                if 0 < below.cost < math.inf and 0 < above.cost < math.inf else math.inf
            between.append(replace(below, theta=theta, error=below.error * math.exp(fraction * step),
                                   cost=cost))
    return between


# --- files -------------------------------------------------------------------------------------

def cache_file() -> Path:
    """Where ``orrery calibrate --accuracy`` stores its rows: beside the calibration cache."""
    from .calibration import cache_path

    return cache_path().parent / "accuracy.json"


def _parse(payload: dict) -> dict:
    if not isinstance(payload, dict) or payload.get("format") != TABLE_FORMAT:
        raise ValueError(f"format {payload.get('format') if isinstance(payload, dict) else None!r}, "
                         f"expected {TABLE_FORMAT}")
    rows = {}
    for solver, variants in payload["rows"].items():
        for variant, scenarios in variants.items():
            rows[(str(solver), str(variant))] = {
                str(scenario): {int(size): sorted((float(t), float(r), float(p), float(c))
                                                  for t, r, p, c in points)
                                for size, points in by_n.items()}
                for scenario, by_n in scenarios.items()}
    return rows


def _digits(value: float) -> float:
    """Four significant digits: more than the errors' sampling noise, a third of the file."""
    return float(f"{value:.4g}")


def _to_payload(rows: dict, settings: dict) -> dict:
    nested: dict = {}
    for (solver, variant), scenarios in rows.items():
        nested.setdefault(solver, {})[variant] = {
            scenario: {str(size): [[t, _digits(r), _digits(p), round(c, 1)]
                                   for t, r, p, c in points]
                       for size, points in sorted(by_n.items())}
            for scenario, by_n in scenarios.items()}
    return {"format": TABLE_FORMAT, "settings": settings, "rows": nested}


def _merge(rows: dict, measured: dict) -> None:
    """``measured`` into ``rows``: each measured theta replaces the same theta of the same
    solver, variant, scenario and size; whatever was not measured again stays."""
    for key, by_scenario in measured.items():
        kept = rows.setdefault(key, {})
        for scenario, by_n in by_scenario.items():
            sizes = kept.setdefault(scenario, {})
            for size, points in by_n.items():
                by_theta = {point[0]: point for point in sizes.get(size, ())}
                by_theta.update((point[0], point) for point in points)
                sizes[size] = sorted(by_theta.values())


def _read(text: str) -> tuple[dict, dict]:
    payload = json.loads(text)
    return _parse(payload), dict(payload.get("settings", {}))


def load_table(*, path: Path | None = None) -> AccuracyTable:
    """The shipped defaults, with the rows of this machine's cache (``path``, default
    :func:`cache_file`) replacing those of the same solver, variant, scenario, size and theta. A
    cache that cannot be read is ignored with a warning."""
    import warnings

    text = (resources.files(__package__) / DEFAULTS_FILE).read_text()
    rows, settings = _read(text)
    source = f"shipped defaults (measured {settings.get('created', '?')[:10]})"
    sources = {key: source for key in rows}
    path = path or cache_file()
    if path.exists():
        try:
            cached, cached_settings = _read(read_small_text(path, what="accuracy table",
                                                            limit=MAX_TABLE_BYTES))
        except RecursionError:
            warnings.warn(f"ignoring the accuracy table {path}: it nests lists or tables too "
                          "deeply; run `orrery calibrate --accuracy` to measure again",
                          UserWarning, stacklevel=2)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            warnings.warn(f"ignoring the accuracy table {path}: {error}; run "
                          f"`orrery calibrate --accuracy` to measure again", UserWarning,
                          stacklevel=2)
        else:
            shipped = set(rows)
            _merge(rows, cached)
            source = f"{path} (measured {cached_settings.get('created', '?')[:10]})"
            sources.update({key: source + (" over the shipped defaults" if key in shipped else "")
                            for key in cached})
    return AccuracyTable(rows, sources)


def save_table(rows: dict, settings: dict, *, path: Path | None = None) -> Path:
    """Store measured ``rows`` (merged over the rows already stored there) in ``path``."""
    path = path or cache_file()
    kept = {}
    if path.exists():
        try:
            kept = _read(read_small_text(path, what="accuracy table", limit=MAX_TABLE_BYTES))[0]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            kept = {}  # a damaged file is being replaced
    _merge(kept, rows)
    settings = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), **settings}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(_to_payload(kept, settings), indent=None))
    os.replace(temporary, path)
    return path


# --- measuring ---------------------------------------------------------------------------------

def measure(solver: str, variants: dict[str, dict], thetas: dict[str, Iterable[float]],
            scenario_names: Iterable[str], sizes: Iterable[int], *, seed: int = 0,
            solver_options: dict | None = None, reference_device: str | None = None,
            on_point=None) -> dict:
    """Rows for ``solver``: every variant (``{key: options}``) at each of its thetas
    (``{key: angles}``), every scenario and size.

    Each scenario is built with ``seed`` at each size and measured with its own softening
    against float64 direct summation over ``TARGETS`` sampled particles. ``on_point(solver,
    variant, scenario, size)`` is called after each (scenario, size) of a variant.
    ``reference_device`` sums the float64 references there (``sampled_exact``'s ``device``:
    at millions of bodies the host's sums take minutes a scenario).
    """
    from .. import scenarios
    from ..accuracy import error_percentiles, sampled_exact
    from ..solvers import make_solver

    thetas = {key: sorted(angles) for key, angles in thetas.items()}
    rows: dict = {(solver, key): {} for key in variants}
    for scenario in scenario_names:
        for size in sizes:
            built = scenarios.load(scenario, n=size, seed=seed)
            particles = built.particles
            rng = np.random.default_rng(seed)
            targets = np.sort(rng.choice(size, size=min(size, TARGETS), replace=False))
            exact = sampled_exact(particles.pos, particles.mass, targets, built.softening,
                                  device=reference_device)
            for key, options in variants.items():
                points = []
                for theta in thetas[key]:
                    instance = make_solver(solver, theta=theta, softening=built.softening,
                                           **(solver_options or {}), **options)
                    acc = instance.accelerations(particles.pos, particles.mass)
                    rms, p90 = error_percentiles(acc[targets], exact)
                    stats = dict(instance.last_stats)
                    if hasattr(instance, "interaction_counts"):  # counts a GPU solver copies back
                        stats.update(instance.interaction_counts())
                    cost = float(stats.get("cost_per_particle",
                                           stats.get("interactions_per_particle", math.nan)))
                    points.append((theta, rms, p90, cost))
                rows[(solver, key)].setdefault(scenario, {})[size] = points
                if on_point:
                    on_point(solver, key, scenario, size)
    return rows



# --- a solver's setting ------------------------------------------------------------------------

class ThetaSetting:
    """A solver's theta: the one given (or ``default`` when neither theta nor accuracy is
    given), or with ``accuracy`` the one the table chooses for each particle count among
    ``variants`` (one for a tree, whose options are fixed; an FMM whose order is left to the
    table passes one per order and reads the winner back with :meth:`variant`); a tree passes
    ``between_thetas`` (rule step 3).

    ``chosen`` is None until the first choice, then :meth:`Choice.as_dict` of the latest.
    :meth:`retune` tightens the choice where a run measured more error than the table says
    (``accuracy_check``).
    """

    def __init__(self, solver: str, *, theta: float | None, accuracy: float | None,
                 default: float, variants: list[dict], table: AccuracyTable | None = None,
                 between_thetas: bool = False):
        if theta is not None and accuracy is not None:
            raise InvalidInputError(
                f"{solver}: give theta or accuracy, not both (theta={theta!r}, "
                f"accuracy={accuracy!r}); accuracy picks theta from the accuracy table")
        self.solver = solver
        self._between_thetas = between_thetas
        self._variants = {variant_key(options): dict(options) for options in variants}
        self.accuracy = None if accuracy is None else check_accuracy(accuracy)
        self._fixed = default if theta is None else float(theta)
        # The accuracy the table is asked for: ``accuracy`` until a retune tightens it.
        self._target = self.accuracy
        self._table = None
        if self.accuracy is not None:
            self._table = table or load_table()
            for key in self._variants:
                if not self._table.has(solver, key):
                    self._table.choose(solver, [key], self.accuracy, 1)  # raises, says why
        self._choice: Choice | None = None

    def _choose(self, n: int) -> Choice:
        if self._choice is None or self._choice.n != n:
            choice = self._table.choose(self.solver, list(self._variants), self._target, n,
                                        between_thetas=self._between_thetas)
            self._choice = replace(choice, accuracy=self.accuracy)
        return self._choice

    def retune(self, n: int, measured: float) -> bool:
        """Tighten the setting after a run of ``n`` particles measured the error ``measured``
        (the larger of RMS and p90, past the target) with it. The table's errors are read as if
        multiplied by this run's ratio to them (``measured`` over the table's error of the
        setting in use), so it is asked for ``accuracy`` divided by that ratio; where nothing is
        that tight, for its tightest setting at ``n``. False when the setting in use is already
        that one."""
        current = self._choose(n)
        tightest = min(setting.error for key in self._variants
                       for setting in self._table.settings(self.solver, key, n))
        if current.error <= tightest:
            return False
        # The rule qualifies errors up to target / MARGIN; the factor keeps the tightest
        # setting's own error in after rounding.
        self._target = max(self.accuracy * current.error / measured,
                           tightest * MARGIN * (1 + 1e-9))
        self._choice = None
        self._choose(n)
        return True

    def label(self, n: int) -> str:
        """The setting for ``n`` particles in a few words: "theta 0.6" (", order=5" added where
        the table chooses among variants)."""
        several = self.accuracy is not None and len(self._variants) > 1
        return f"theta {self.theta(n):g}" + (f", {self._choose(n).variant}" if several else "")

    def theta(self, n: int) -> float:
        """Theta for an evaluation of ``n`` particles."""
        return self._fixed if self.accuracy is None else self._choose(n).theta

    def variant(self, n: int) -> dict:
        """The options of the variant chosen for ``n`` particles (the only one without
        accuracy, or when there is one)."""
        if self.accuracy is None or len(self._variants) == 1:
            return next(iter(self._variants.values()))
        return self._variants[self._choose(n).variant]

    @property
    def chosen(self) -> dict | None:
        return None if self._choice is None else self._choice.as_dict()

    def stats(self) -> dict:
        """What ``last_stats`` reports about the setting."""
        if self.accuracy is None:
            return {"theta": self._fixed}
        return {"theta": self._choice.theta, "accuracy": self.accuracy}

    def describe(self) -> str | None:
        """One clause for ``describe()`` when theta was chosen, else None."""
        if self._choice is None:
            return None if self.accuracy is None else \
                f"theta chosen for accuracy {self.accuracy:g} at the first evaluation"
        c = self._choice
        variant = f" ({c.variant})" if len(self._variants) > 1 else ""
        measured = f"N = {c.sizes[0]:,}" if c.sizes[0] == c.sizes[1] else \
            f"N = {c.sizes[0]:,} and {c.sizes[1]:,}"
        retuned = ("" if self._target == self.accuracy else
                   f"; retuned: the table asked for {self._target:.2g}, as this run measured more "
                   f"error than it")
        return (f"theta {c.theta:g}{variant} chosen for accuracy {c.accuracy:g} at N = {c.n:,} "
                f"(error {c.error:.2g} from {measured}, worst {c.worst_scenario}; {c.source}"
                f"{retuned})")


__all__ = ["AccuracyTable", "Choice", "DEFAULT_ACCURACY", "DEFAULT_SIZES", "DEFAULT_THETAS",
           "MARGIN", "SCENARIOS", "ThetaSetting",
           "check_accuracy", "load_table", "measure", "save_table", "variant_key"]
