"""``orrery fit-satellite``: the FMM paper's example of a differentiable simulation, run. A
Hernquist host and a Plummer satellite (the ``satellite`` scenario's system, small): a target
run from the satellite's true start, then L-BFGS on whole-run gradients
(``engine/satellite_fit.py``) from a perturbed guess back to that start, one line per
iteration (and, on stderr, a progress bar for any run or backward pass that goes on for more
than a few seconds); with ``--record DIR``, recordings of the target run and of the runs from
the first guess and from the fitted start, which ``orrery play`` replays."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ...engine import make_solver
from ...engine.errors import InvalidInputError
from ...engine.force_vjp import VJP_SOLVERS
from ...engine.gradients import ReversibleRun
from ...engine.initial_conditions.scenarios import DT
from ...engine.options import PRECISION, SOFTENING, Option
from ...engine.satellite_fit import ORBIT, fit, record_run, scenario_system
from ..command_line import add_option_flags

OPTIONS = (
    Option("solver", str, "cpu-direct", "solver of every run: one with a force VJP",
           choices=VJP_SOLVERS),
    replace(PRECISION, default="f64"),
    replace(SOFTENING, default=0.05),
    Option("n", int, 128, "particles, the host's and the satellite's (an eighth of them)",
           minimum=2),
    Option("steps", int, 200, "steps of each run", minimum=1),
    replace(DT, default=0.01),
    Option("perturbation", float, 0.05, "how far the first guess starts from the truth: each "
                                        "of the six numbers moved by this times a normal draw",
           minimum=0.0),
    Option("max_iterations", int, 100, "L-BFGS iterations at most", minimum=1),
    Option("seed", int, 0, "seed of the particles and of the perturbation", minimum=0),
    Option("every", int, None, "with --record: a frame every K steps, and the last (default: "
                               "every step)", minimum=1),
    Option("quiet", bool, False, "no progress bars"),
)
# A pass (a run, its backward pass, a recording) shows its progress bar once it has gone on this
# long: the fit's runs of a few seconds stay quiet, one of minutes says how far it is.
PROGRESS_DELAY_S = 3.0
# The recordings --record writes, by the run each holds.
RECORDINGS = {"target": "target.h5", "first guess": "first-guess.h5", "fitted": "fitted.h5"}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "fit-satellite", help="recover a satellite's start from its end by L-BFGS on gradients",
        description="The paper's example of a differentiable simulation: a Hernquist host and a "
                    "Plummer satellite; a target run from the satellite's true start, then "
                    "L-BFGS on whole-run gradients (docs/gradients.md) from a perturbed guess "
                    "back to that start, printing each iteration's loss and distance from the "
                    "truth.")
    add_option_flags(parser, OPTIONS)
    parser.add_argument("--record", metavar="DIR",
                        help="write recordings of the target run and of the runs from the "
                             "first guess and the fitted start into DIR (created if missing; "
                             f"{', '.join(RECORDINGS.values())} must not exist yet), for "
                             "`orrery play`")
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.every is not None and args.record is None:
        raise InvalidInputError("--every spaces the frames of --record's recordings: give "
                                "--record DIR too, or leave --every out")
    folder = _recordings_folder(args.record)
    system = scenario_system(args.n, seed=args.seed)
    solver = make_solver(args.solver, precision=args.precision, softening=args.softening)
    satellite = system.satellite_slice
    truth = np.array(ORBIT)
    start = truth + args.perturbation * np.random.default_rng(args.seed).standard_normal(6)
    print(f"A Hernquist host ({system.host.n} particles) and a Plummer satellite "
          f"({system.satellite.n}), {args.steps} steps of dt {args.dt:g} under {args.solver} "
          f"{args.precision}, softening {args.softening:g}.")
    print(f"truth:       {_offset(truth)}\nfirst guess: {_offset(start)} "
          f"({_misses(start, truth)})")
    began = time.perf_counter()
    with _PassBars(quiet=args.quiet) as bars:
        target = ReversibleRun(system.particles(truth), solver, dt=args.dt, steps=args.steps,
                               progress=partial(bars, "target run"))
        print(f"target run: {time.perf_counter() - began:.2f} s; an iteration runs forward and "
              "back once or a few times; fitting by L-BFGS:", flush=True)

        def iterated(iteration, offset, loss):
            print(f"  iteration {iteration:3d}: loss {loss:.3e}, {_misses(offset, truth)}",
                  flush=True)

        def stepped(run, direction, done, total):
            bars(f"run {run} {direction}", done, total)

        result = fit(system, solver, dt=args.dt, steps=args.steps, start=start,
                     target_positions=target.positions[satellite],
                     target_velocities=target.velocities[satellite],
                     max_iterations=args.max_iterations, on_iteration=iterated,
                     on_step=stepped)
        print(f"recovered:   {_offset(result.offset)} ({_misses(result.offset, truth)}) after "
              f"{result.iterations} iterations, {result.evaluations} runs and gradients, "
              f"{time.perf_counter() - began:.1f} s in all (L-BFGS: {result.message})")
        if folder is not None:
            _record(folder, system, solver, args, bars,
                    {"target": (truth, None), "first guess": (start, result.lattice),
                     "fitted": (result.offset, result.lattice)})
    return 0


class _PassBars:
    """One progress bar at a time on stderr, for the pass whose steps are being counted: a
    pass's first step opens it, its last closes it. A bar shows only once its pass has gone on
    for ``PROGRESS_DELAY_S`` and is cleared when the pass ends, so that the lines of the
    iterations on stdout stay as they were."""

    def __init__(self, *, quiet: bool):
        self._quiet = quiet
        self._bar: tqdm | None = None

    def __call__(self, label: str, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = tqdm(total=total, desc=label, unit="step", leave=False,
                             delay=PROGRESS_DELAY_S, disable=self._quiet, file=sys.stderr,
                             dynamic_ncols=True)
        self._bar.update(done - self._bar.n)
        if done == total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "_PassBars":
        return self

    def __exit__(self, *exception) -> None:
        self.close()


def _recordings_folder(text: str | None) -> Path | None:
    """``--record``'s folder, made now, with none of the recordings in it yet: refused before
    anything runs."""
    if text is None:
        return None
    folder = Path(text)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InvalidInputError(f"--record: cannot make the folder {text!r}: "
                                f"{error.strerror or error}") from None
    existing = [name for name in RECORDINGS.values() if (folder / name).exists()]
    if existing:
        raise InvalidInputError(f"--record: {', '.join(existing)} already in {text}; choose "
                                "another folder or remove them")
    return folder


def _record(folder, system, solver, args, bars, runs) -> None:
    # record_run's own default spacing unless --every gives one
    spacing = {} if args.every is None else {"every": args.every}
    for label, (offset, lattice) in runs.items():
        path = folder / RECORDINGS[label]
        record_run(path, system, solver, offset, dt=args.dt, steps=args.steps, lattice=lattice,
                   label=label, progress=partial(bars, f"recording the {label} run"),
                   **spacing)
        print(f"recorded the {label} run to {path}", flush=True)
    print(f"Replay one with `orrery play {folder / RECORDINGS['fitted']}` (or orrery-viewer "
          "--play FILE); the satellite is population 'satellite'.")


def _offset(offset) -> str:
    return (f"position ({', '.join(f'{x:+.6f}' for x in offset[:3])}), "
            f"velocity ({', '.join(f'{v:+.6f}' for v in offset[3:])})")


def _misses(offset, truth) -> str:
    """How far ``offset`` is from ``truth``, in position and in velocity."""
    miss = np.asarray(offset) - truth
    return (f"off by {np.linalg.norm(miss[:3]):.2e} in position, "
            f"{np.linalg.norm(miss[3:]):.2e} in velocity")
