"""``orrery serve``: run (or replay) headless and stream it to browsers over one TCP port."""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import signal
import sys
from pathlib import Path

from ...engine._optional import require
from ..viewer._main import add_source_arguments, open_source
from ..command_line import STOP_SIGNALS, integer, number
from ._mpi import on_every_rank

DEFAULT_PORT = 8765
TOKEN_VARIABLE = "ORRERY_SERVE_TOKEN"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="watch and steer a run from a browser or Jupyter (one TCP port)",
        description="Run a simulation (or replay a recording, or play snapshots) headless and "
                    "stream it as video to browsers: open the printed URL, or forward the port "
                    "first (ssh -L 8765:localhost:8765 HOST). Each browser has its own camera; "
                    "run controls apply to all. Takes the viewer's flags.")
    add_source_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; "
                             "0.0.0.0 listens on every interface, and the token is still needed)")
    parser.add_argument("--port", type=integer(minimum=0), default=DEFAULT_PORT,
                        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--token", default=None,
                        help=f"the token clients must give (default: ${TOKEN_VARIABLE}, else a "
                             "random one, printed with the URL)")
    parser.add_argument("--recordings", metavar="DIR", default=None,
                        help="folder the Record control writes into (default: none, the "
                             "control is refused); clients never name a path")
    parser.add_argument("--max-fps", type=number(above=0), default=60.0,
                        help="most pictures a second sent to one client (default 60)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    return on_every_rank(_run, args)


def _run(args, mpi) -> int:
    web = require("aiohttp.web")
    from ...engine.errors import InvalidInputError
    from ..serve import Hub, ViewSettings
    from ..serve._controls import VIEW_CONTROLS
    from ..serve._web import make_app, new_token

    if args.port > 65535:
        print(f"orrery serve: error: --port must be <= 65535, got {args.port}", file=sys.stderr)
        return 2
    recordings = None
    if args.recordings is not None:
        recordings = Path(args.recordings)
        if not recordings.is_dir() or not os.access(recordings, os.W_OK):
            print(f"orrery serve: error: --recordings {args.recordings!r} is not a folder this "
                  "process can write", file=sys.stderr)
            return 2
    token = args.token or os.environ.get(TOKEN_VARIABLE) or new_token()
    logging.basicConfig(level=logging.INFO, format="orrery serve: %(message)s")
    view = ViewSettings(colour=args.colour, render=args.render, colour_map=args.colour_map,
                        **({"exposure": args.exposure} if args.exposure else {}))
    for name, value in view.as_dict().items():  # as a client's look controls are checked
        try:
            VIEW_CONTROLS[name](value)
        except InvalidInputError as refused:
            raise InvalidInputError(f"--{name.replace('_', '-')} {refused}") from None
    if mpi is None:
        source = open_source(args)
    else:
        source = _distributed_run(args, mpi)
        if mpi.rank != 0:
            return 0  # it followed rank 0's steps until rank 0 stopped
    hub = Hub(source, view=view, recordings=recordings, max_fps=args.max_fps,
              max_drawn=args.max_drawn)
    try:
        asyncio.run(_serve(web, make_app(hub, token), args.host, args.port, token, source))
    finally:
        hub.close()
    return 0


async def _serve(web, app, host: str, port: int, token: str, source) -> None:
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except (OSError, UnicodeError) as error:  # UnicodeError: a host name IDNA cannot encode
        await runner.cleanup()
        from ...engine.errors import OrreryError

        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise OrreryError(f"cannot listen on {host}:{port} ({reason})") from None
    bound = site._server.sockets[0].getsockname()[1]
    shown = "localhost" if host in ("127.0.0.1", "::1", "localhost") else host
    print(f"orrery serve: {_describe(source)} at http://{shown}:{bound}/?token={token}",
          flush=True)
    if shown == "localhost":
        print(f"orrery serve: from another machine: ssh -L {bound}:localhost:{bound} "
              f"{platform.node()}, then open the URL above", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # The stop signals end the server as Ctrl-C does: the run and any recording close cleanly
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        print("orrery serve: stopping", flush=True)
        await runner.cleanup()


def _distributed_run(args, mpi):
    """Every rank's share of the run; rank 0 gets the source it serves, the others follow its
    steps here until it stops."""
    from ...engine import distributed, scenarios
    from ...engine.errors import InvalidInputError
    from ...engine.runner import RunSettings, solver_options
    from ...engine.solvers import make_solver
    from ..serve._distributed import DistributedRun, follow
    from ..viewer._main import default_scenario

    if args.play or args.load:
        raise InvalidInputError("a replay or snapshots are served from one process: run "
                                "orrery serve without mpiexec")
    name = args.scenario or default_scenario()
    scenario = scenarios.load(name, n=args.n, seed=args.seed)
    if scenario.model == "flock":
        raise InvalidInputError("a flock runs on one process: run it without mpiexec")
    settings = RunSettings(scenario=name, n=args.n, seed=args.seed, solver=args.solver,
                           dt=args.dt, check_accuracy=args.check_accuracy)
    solver_name = args.solver or scenario.solver
    options = solver_options(solver_name, scenario, settings)
    if solver_name.startswith("gpu") and options.get("device") is None:
        options["device"] = distributed.rank_device(mpi)
    simulation = distributed.DistributedSimulation(
        mpi, scenario.particles, make_solver(solver_name, **options),
        dt=args.dt if args.dt is not None else scenario.dt, integrator=scenario.integrator)
    particles = simulation.particles  # gathered: a collective every rank joins
    if mpi.rank != 0:
        # mpiexec hands a stop signal to every rank: rank 0 stops the run and tells the others,
        # who leave at the next step; stopped in a collective, they would abort the job.
        ignored = {signum: signal.signal(signum, signal.SIG_IGN)
                   for signum in (signal.SIGINT, *STOP_SIGNALS)}
        try:
            follow(mpi, simulation)
        finally:
            for signum, handler in ignored.items():
                signal.signal(signum, handler)
        return None
    return DistributedRun(mpi, simulation, particles, scenario=name, solver=solver_name,
                          paused=args.paused)


def _describe(source) -> str:
    from ...engine.recording import Player
    from ...engine.runner import SimulationRunner
    from ..serve._distributed import DistributedRun

    if isinstance(source, DistributedRun):
        return f"{source.scenario} live over {source.world.size} MPI ranks"
    if isinstance(source, SimulationRunner):
        return f"{source.settings.scenario} live"
    if isinstance(source, Player):
        return f"a replay of {source.path}"
    return "snapshots"
