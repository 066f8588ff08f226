"""``orrery run``: a headless simulation with a progress bar and a one-line summary."""

from __future__ import annotations

import contextlib
import sys
import time

from tqdm import tqdm

from ...engine import Simulation, ics, make_solver
from ._record_args import add_record_arguments, open_recorder
from ._solver_args import add_solver_arguments, solver_options


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run a simulation headless",
                                   description="Run a simulation headless with a progress bar.")
    parser.add_argument("--ic", default="plummer", choices=sorted(ics.GENERATORS),
                        help="initial conditions (default: plummer)")
    parser.add_argument("--n", type=int, default=4096, help="particle count (default: 4096)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the initial conditions")
    parser.add_argument("--steps", type=int, default=1000, help="steps to run (default: 1000)")
    parser.add_argument("--dt", type=float, default=1e-3, help="time step (default: 0.001)")
    parser.add_argument("--integrator", default="kdk", choices=("kdk", "dkd"),
                        help="leapfrog variant (default: kdk)")
    add_solver_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_record_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    particles = ics.make(args.ic, args.n, seed=args.seed)
    solver = make_solver(args.solver, **solver_options(args))
    sim = Simulation(particles, solver, dt=args.dt, integrator=args.integrator)
    recording = open_recorder(args, sim, scenario=getattr(args, "scenario", None) or args.ic)
    start = time.perf_counter()
    with recording or contextlib.nullcontext() as recorder, \
            tqdm(total=args.steps, unit="step", disable=args.quiet, file=sys.stderr,
                 dynamic_ncols=True) as bar:
        if recorder is not None:
            recorder.append_simulation(sim)
        done = 0
        chunk = max(1, args.steps // 200)
        while done < args.steps:
            todo = min(chunk, args.steps - done)
            if recorder is not None:  # stop on every K-th step to record it
                todo = min(todo, args.every - done % args.every)
            sim.step(todo)
            done += todo
            bar.update(todo)
            if recorder is not None and done % args.every == 0:
                recorder.append_simulation(sim)
    elapsed = time.perf_counter() - start
    error = sim.energy_error()
    print(f"{sim.n} particles, {args.steps} steps in {elapsed:.2f} s: "
          f"{args.steps / elapsed:.1f} steps/s, energy error {error:+.3e}, t = {sim.time:g}, "
          f"solver {solver.describe()}")
    return 0
