"""``orrery serve``: run (or replay) headless and stream it to browsers over one TCP port."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from ...engine._optional import require
from ..viewer._main import add_source_arguments, open_source
from ._arg_types import integer, number

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
    web = require("aiohttp.web")
    from ..serve import Hub, ViewSettings
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
    source = open_source(args)
    hub = Hub(source, view=view, recordings=recordings, max_fps=args.max_fps)
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
    except OSError as error:
        await runner.cleanup()
        from ...engine.errors import OrreryError

        raise OrreryError(f"cannot listen on {host}:{port} ({error.strerror or error})") from None
    bound = site._server.sockets[0].getsockname()[1]
    shown = "localhost" if host in ("127.0.0.1", "::1", "localhost") else host
    print(f"orrery serve: {_describe(source)} at http://{shown}:{bound}/?token={token}",
          flush=True)
    if shown == "localhost":
        print(f"orrery serve: from another machine: ssh -L {bound}:localhost:{bound} "
              f"{os.uname().nodename}, then open the URL above", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # SIGTERM and SIGHUP end the server as Ctrl-C does: the run and any recording close cleanly
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        print("orrery serve: stopping", flush=True)
        await runner.cleanup()


def _describe(source) -> str:
    settings = getattr(source, "settings", None)
    if settings is not None:
        return f"{settings.scenario} live"
    return f"a replay of {getattr(source, 'path', None) or 'snapshots'}"
