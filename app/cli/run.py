"""``orrery run``: a headless simulation with a progress bar and a one-line summary."""

from __future__ import annotations

import contextlib
import inspect
import sys
import time

from tqdm import tqdm

from ...engine import Simulation, distributed, ics, make_solver, scenarios, snapshots
from ...engine.errors import InvalidInputError
from ...engine.flock import FlockSimulation
from ...engine.initial_conditions import on_device
from ...engine.resume import resume
from ...engine.simulation import INTEGRATORS
from ...engine.solvers import solver_specs
from ..command_line import integer, raise_if_stopped, stops_at_safe_points
from ._mpi import on_every_rank
from ._record_args import (CommandLineRecording, add_record_arguments, inherit_record_format,
                           keyframe_every, open_recorder, resolve_record_arguments)
from ._solver_args import add_solver_arguments, solver_options

# Used when neither a flag nor a preset names a solver: picks by particle count.
DEFAULT_SOLVER = "auto"
DEFAULT_INTEGRATOR = INTEGRATORS[0]  # kick-drift-kick, the Simulation's default


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run a simulation headless",
                                   description="Run a simulation headless with a progress bar.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--ic", choices=sorted(ics.GENERATORS),
                        help="initial conditions (default: plummer)")
    source.add_argument("--scenario", metavar="NAME",
                        help="a scenario preset (e.g. galaxy-collision; any of "
                             f"{', '.join(scenarios.names())}): its particle count, dt, softening "
                             "and solver apply unless given as flags")
    source.add_argument("--load", metavar="SNAPSHOT",
                        help="start from another code's snapshot (GADGET, SWIFT, AREPO, Tipsy, "
                             "RAMSES ... through pynbody: pip install 'orrery[formats]'); "
                             "softening and dt are estimated from it unless given")
    source.add_argument("--resume", metavar="RECORDING",
                        help="continue the run recorded in RECORDING from a keyframe, with its "
                             "solver, options, integrator and dt (bit-identical for cpu-direct, "
                             "cpu-tree and reference); --steps more steps, recorded (--record) "
                             "to a new file")
    parser.add_argument("--from-frame", type=integer(minimum=0), default=None, metavar="K",
                        help="with --resume: continue from frame K (from the last keyframe "
                             "at or before it, replayed to K's step; default: the recording's "
                             "last keyframe)")
    parser.add_argument("--family", default=None,
                        help="with --load: evolve only this family (dm, star, gas, ...)")
    parser.add_argument("--n", type=integer(minimum=1), default=None,
                        help="particle count (default: the preset's, else "
                             f"{scenarios.DEFAULT_COUNT})")
    parser.add_argument("--seed", type=integer(minimum=0), default=0,
                        help="random seed of the initial conditions")
    parser.add_argument("--draw-on-device", action="store_true",
                        help="with a GPU solver, --ic plummer or a --scenario drawn by "
                             "ics.plummer or galaxy_collision (plummer-cluster, "
                             "galaxy-collision): draw the initial conditions on the solver's "
                             "device, building nothing of them on the host (for runs of up to "
                             "billions of particles); the same distribution as the host's, not "
                             "the same particles for a seed")
    parser.add_argument("--steps", type=integer(minimum=0), default=1000,
                        help="steps to run (default: 1000)")
    parser.add_argument("--dt", type=float, default=None,
                        help=f"time step (default: the preset's, else {scenarios.DT.default:g})")
    parser.add_argument("--integrator", default=None, choices=INTEGRATORS,
                        help=f"leapfrog variant (default: {DEFAULT_INTEGRATOR})")
    add_solver_arguments(parser, default_solver=None,
                         default_description="the preset's solver, else auto")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_record_arguments(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    return on_every_rank(_run, args)


def _run(args, mpi) -> int:
    """The run on one process, or on every rank of ``mpi`` (each owning a share)."""
    resolve_record_arguments(args)
    if args.resume is not None or args.from_frame is not None:
        return _run_resumed(args, mpi)
    if args.draw_on_device:
        return _run_drawn(args, mpi)
    particles, dt, solver_name, options, source, loaded = _setup(args)
    source = {**(source or {}), **_scenario_attributes(args)}
    if loaded is not None and loaded.model == "flock":
        if mpi is not None:
            raise InvalidInputError("a flock runs on one process: run it without mpiexec")
        solver, sim = None, _flock(args, loaded, dt)
    else:
        if mpi is not None and solver_name.startswith("gpu") and options.get("device") is None:
            options["device"] = distributed.rank_device(mpi)
        integrator = args.integrator or DEFAULT_INTEGRATOR
        try:
            solver = make_solver(solver_name, **options)
            if mpi is None:
                sim = Simulation(particles, solver, dt=dt, integrator=integrator)
            else:
                sim = distributed.DistributedSimulation(mpi, particles, solver, dt=dt,
                                                        integrator=integrator)
        except InvalidInputError as error:  # a snapshot's particles or estimates: say which file
            if args.load is None:
                raise
            raise InvalidInputError(f"{args.load}: {error}") from None
    root = mpi is None or mpi.rank == 0
    scenario = args.load or args.scenario or args.ic or "plummer"
    recording = _open_recording(args, sim, root, scenario=scenario, source=source)
    return _advance(args, sim, solver, recording, mpi)


def _flock(args, scenario, dt) -> FlockSimulation:
    """A flock preset: --solver names where it runs ('cpu' or a device), --threads and --simd
    reach the CPU code."""
    if args.check_accuracy is not None:
        raise InvalidInputError("--check-accuracy verifies a gravity solver's accuracy=; a flock "
                                "has no force error to check")
    return FlockSimulation(scenario.particles, scenario.flock, dt=dt,
                           device=args.solver or scenario.solver,
                           threads=args.threads, simd=args.simd)


def _run_drawn(args, mpi) -> int:
    """``--draw-on-device``: the initial conditions of --ic, or of a --scenario whose generator
    draws on a device (``initial_conditions.on_device``), drawn on a GPU solver's device
    (``Simulation.drawn_on_device``) with the settings the host path gives them; on one
    process."""
    if args.load is not None:
        raise InvalidInputError("--draw-on-device draws generated initial conditions on the "
                                "device; a --load snapshot is read on the host")
    if args.family is not None:
        raise InvalidInputError("--family selects particles of a --load snapshot")
    if mpi is not None:
        raise InvalidInputError("--draw-on-device runs on one process; start it without mpirun")
    chosen = args.scenario or args.ic or "plummer"
    recipe = scenarios.recipe(chosen, n=args.n)
    name = on_device.device_generator_of(recipe.generator)
    if name is None:
        raise InvalidInputError(
            f"--draw-on-device: scenario {chosen!r} is built by {recipe.generator.__module__}."
            f"{recipe.generator.__name__}, on the host only; the generators drawn on a device: "
            f"{', '.join(on_device.DEVICE_GENERATORS)}")
    parameters = dict(recipe.parameters)
    # a preset that names no count draws the generator's default, as on the host
    count = parameters.pop("n", inspect.signature(recipe.generator).parameters["n"].default)
    dt = recipe.dt if args.dt is None else args.dt
    solver_name, options = _solver_choice(args, recipe.softening, recipe.solver,
                                          recipe.solver_options)
    solver = make_solver(solver_name, **options)
    sim = Simulation.drawn_on_device(name, count, solver, seed=args.seed, dt=dt,
                                     integrator=args.integrator or DEFAULT_INTEGRATOR,
                                     parameters=parameters)
    source = {**_scenario_attributes(args), "drawn_on_device": True}
    recording = _open_recording(args, sim, True, scenario=chosen, source=source)
    return _advance(args, sim, solver, recording, None)


def _run_resumed(args, mpi) -> int:
    """``--resume``: the recorded run continued from a keyframe, recorded to a new file."""
    if args.resume is None:
        raise InvalidInputError("--from-frame picks the keyframe of a --resume recording")
    if mpi is not None:
        raise InvalidInputError("--resume continues a run on one process; start it without "
                                "mpirun")
    if args.n is not None or args.family is not None or args.dt is not None:
        raise InvalidInputError("--resume continues the recorded run: its particles and dt "
                                "come from the recording, not from --n, --family or --dt")
    if args.solver is not None:
        raise InvalidInputError("--resume continues with the recorded solver; solver options "
                                "(another --device, say) may still be given")
    resumed = resume(args.resume, from_frame=args.from_frame,
                     solver_options=solver_options(args))
    sim, original = resumed.simulation, resumed.attributes
    inherit_record_format(args, original)
    if not args.quiet and args.from_frame is not None:
        replay = (f"; replayed {resumed.replayed} step(s) from there to frame {args.from_frame}"
                  if resumed.replayed else f", which is frame {args.from_frame}")
        print(f"orrery run: resuming from keyframe {resumed.keyframe} (step "
              f"{resumed.keyframe_step}){replay} (step {sim.steps})", file=sys.stderr)
    if args.integrator not in (None, sim.integrator):
        raise InvalidInputError(f"--resume continues with the recorded integrator "
                                f"({sim.integrator}), not {args.integrator}")
    kept = ("seed", "scenario_parameters")
    source = {**{key: original[key] for key in kept if key in original},
              "resumed_from": str(resumed.path), "resumed_from_step": sim.steps,
              "resumed_from_keyframe_step": resumed.keyframe_step}
    recording = _open_recording(args, sim, True, scenario=str(original.get("scenario", "")),
                                source=source)
    return _advance(args, sim, sim.solver, recording, None)


def _scenario_attributes(args) -> dict:
    """What, besides the solver's settings, rebuilds a run's initial conditions."""
    return {"seed": args.seed,
            "scenario_parameters": {"n": args.n, "seed": args.seed, "family": args.family}}


def _advance(args, sim, solver, recording, mpi) -> int:
    """Run ``args.steps`` steps of ``sim``, recording a frame on every step divisible by
    ``--every`` (counted from the run's start, so a resumed run records the same steps)."""
    root = mpi is None or mpi.rank == 0
    start = time.perf_counter()
    # a stop signal ends the run between steps (see stops_at_safe_points), with every frame
    with recording or contextlib.nullcontext() as recorder, stops_at_safe_points(), \
            tqdm(total=args.steps, unit="step", disable=args.quiet or not root, file=sys.stderr,
                 dynamic_ncols=True) as bar:
        if recorder is not None:
            recorder.append_simulation(sim)
        done = 0
        chunk = max(1, args.steps // 200)
        while done < args.steps:
            raise_if_stopped()
            todo = min(chunk, args.steps - done)
            if recorder is not None:  # stop on every K-th step to record it
                todo = min(todo, args.every - sim.steps % args.every)
            sim.step(todo)
            done += todo
            bar.update(todo)
            if recorder is not None and sim.steps % args.every == 0:
                recorder.append_simulation(sim)
        if recorder is not None:
            recorder.append_last_keyframe(sim)
    elapsed = time.perf_counter() - start
    rate = args.steps / elapsed if elapsed > 0 else 0.0
    if solver is None:  # a flock: no energy to report
        print(f"{sim.n} boids, {args.steps} steps in {elapsed:.2f} s: "
              f"{rate:.1f} steps/s, t = {sim.time:g}, {sim.describe()}")
        return 0
    error = sim.energy_error()
    if root:
        ranks = f" on {mpi.size} ranks" if mpi is not None else ""
        print(f"{sim.n} particles, {args.steps} steps in {elapsed:.2f} s{ranks}: "
              f"{rate:.1f} steps/s, energy error {error:+.3e}, t = {sim.time:g}, "
              f"solver {solver.describe()}")
        summary = recording.summary() if recording is not None else None
        if summary:
            print(summary)
    return 1 if root and recording is not None and recording.failed else 0


def _open_recording(args, sim, root: bool, *, scenario: str, source):
    """The recorder on the process that writes (rank 0 gathers every frame: h5py's wheels have
    no parallel HDF5, and one writer keeps the file's SWMR commit order); the other ranks take
    part in the gathers without writing."""
    if root:
        return open_recorder(args, sim, scenario=scenario, source=source)
    if not args.record:
        return None
    sim.particles  # noqa: B018 - the gather rank 0's recorder makes to learn the masses
    return CommandLineRecording(None, velocities=args.record_velocities,
                                keyframe_every=keyframe_every(args, sim))


def _setup(args):
    """Particles, time step, solver name and options, where the particles came from, and the
    scenario (None for --ic): flags first, then the preset's (or the snapshot's estimated)
    settings."""
    if args.family is not None and args.load is None:
        raise InvalidInputError("--family selects particles of a --load snapshot")
    if args.scenario is None and args.load is None:
        count = scenarios.DEFAULT_COUNT if args.n is None else args.n
        particles = ics.make(args.ic or "plummer", count, seed=args.seed)
        dt = scenarios.DT.default if args.dt is None else args.dt
        return particles, dt, args.solver or DEFAULT_SOLVER, solver_options(args), None, None
    chosen = args.scenario
    if args.load is not None:
        paths = snapshots.expand(args.load)
        if len(paths) > 1:
            raise InvalidInputError(
                f"--load {args.load!r} names {len(paths)} files: `orrery run` evolves one "
                "snapshot (a sequence plays in `orrery-viewer --load` and `orrery render`)")
        chosen = scenarios.SnapshotScenario(paths[0], args.family)
    scenario = scenarios.load(chosen, n=args.n, seed=args.seed)
    dt = scenario.dt if args.dt is None else args.dt
    name, options = _solver_choice(args, scenario.softening, scenario.solver,
                                   scenario.solver_options)
    return scenario.particles, dt, name, options, scenario.metadata or None, scenario


def _solver_choice(args, softening: float, solver: str, preset_options: dict) -> tuple[str, dict]:
    """The solver's name and options: the flags', then a scenario's. The preset's softening
    belongs to its initial conditions (they are built for it), so it holds for any solver; its
    other solver options only for the solver it names."""
    name, chosen = args.solver, {"softening": softening}
    if name is None:
        name = solver
        chosen.update(preset_options)
    spec = solver_specs().get(name)
    known = {option.name for option in spec.options} if spec else set()
    chosen = {key: value for key, value in chosen.items() if key in known}
    return name, {**chosen, **solver_options(args)}
