"""``orrery bench serve``: what ``orrery serve`` delivers to its clients, against the same run
headless and in the viewer's loop, measured in one run.

For each solver, N and client count:

- ``headless``: the simulation stepped on the main thread (``orrery bench live``'s headless run);
- ``viewer``: the desktop viewer's loop drawn off screen (``bench live``'s ``paced`` mode: a
  frame for each new step, as the window draws);
- ``served``: ``orrery serve`` started as a child process on a loopback port, with ``--clients``
  clients that decode every picture as a browser does and acknowledge it once decoded. The
  ``python`` client decodes H.264 with PyAV on a thread of its own (the GPU machine has no
  browser); the ``chromium`` client is Debian's headless Chromium opening the page (WebCodecs),
  read through Selenium. With ``--orbit`` each client turns its camera 30 times a second, as a
  user dragging would, so pictures are due whether or not the run has made a new step.

Reported for the served run: ``delivered_fps`` (pictures decoded per second, the median over
the clients), ``steps_per_second`` (from the step numbers the pictures carry) and its
``ratio`` to the headless and ``viewer_ratio`` to the viewer's rate, the server's medians of
``upload_ms`` (a new frame into the render thread's buffers), ``draw_ms`` (a picture drawn and
read back) and ``encode_ms`` (a picture encoded), ``mbit_per_s`` per client, ``frame_latency`` (a frame taken by the
server's render thread -> its first picture decoded by the client; pictures that show the same
frame again for a turned camera count under input latency) and ``input_latency`` (an input sent -> the first
decoded picture that shows it), p50 and p95 over every client's pictures.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

from ..app.serve import CODECS, JPEG_PICTURE
from ..app.text_table import format_table
from ..engine.options import Option
from ._options import BenchmarkSpec, several
from .render import window_size

HELP = "orrery serve: pictures delivered to N clients, latency, bitrate, steps/s vs headless"
CLIENTS = ("python", "chromium")
ORBIT_HZ = 30.0
_COLUMNS = ["solver", "n", "clients", "client", "codec", "size", "delivered_fps", "steps_per_second",
            "headless_steps_per_second", "ratio", "viewer_steps_per_second", "viewer_ratio",
            "upload_ms", "draw_ms", "encode_ms", "mbit_per_s", "frame_latency_p50_ms", "frame_latency_p95_ms",
            "input_latency_p50_ms", "input_latency_p95_ms"]

SPEC = BenchmarkSpec("serve", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1), (30000,)),
    several(Option("solver", str, None, "solvers"), ("auto",)),
    Option("scenario", str, "galaxy-collision", "scenario"),
    several(Option("clients", int, None, "client counts", minimum=1), (1,)),
    Option("client", str, "python", "how a client decodes: PyAV (python) or Debian's headless "
                                     "Chromium (chromium)", choices=CLIENTS),
    Option("codec", str, "h264", "what the python client asks for: H.264 or JPEG pictures",
           choices=CODECS),
    Option("size", window_size, "1280x720", "picture size WxH of each client"),
    Option("seconds", float, 10.0, "timed seconds per run", minimum=0.0, exclusive_minimum=True),
    Option("warmup", float, 3.0, "untimed seconds first", minimum=0.0),
    Option("orbit", bool, True, "each client turns its camera 30 times a second"),
    Option("max_fps", float, 60.0, "the server's cap on pictures a second to one client",
           minimum=0.0, exclusive_minimum=True),
    Option("baselines", bool, True, "measure the headless and viewer rates in the same run"),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    from ..engine import scenarios
    from ..engine.runner import RunSettings
    from . import live

    rows = []
    for solver in args.solver:
        for n in args.n:
            headless = viewer = None
            if args.baselines:
                scenario = scenarios.load(args.scenario, n=n, seed=0)
                settings = RunSettings(scenario=args.scenario, n=n, solver=solver)
                # bench live's settings, its defaults but this run's size and times
                baseline = live.SPEC.resolve({"seconds": args.seconds, "warmup": args.warmup,
                                              "size": args.size, "libgl": os.environ.get("ORRERY_LIBGL"),
                                              "libegl": os.environ.get("ORRERY_LIBEGL")})
                headless = live._measure("headless", scenario, settings, baseline)[
                    "steps_per_second"]
                viewer = live._measure("paced", scenario, settings, baseline)["steps_per_second"]
            for clients in args.clients:
                served = _served(solver, n, clients, args)
                row = {"solver": solver, "n": n, "clients": clients, "client": args.client,
                       "size": f"{args.size[0]}x{args.size[1]}", **served,
                       "headless_steps_per_second": headless, "viewer_steps_per_second": viewer}
                row["ratio"] = served["steps_per_second"] / headless if headless else None
                row["viewer_ratio"] = served["steps_per_second"] / viewer if viewer else None
                rows.append(row)
                print(format_table([row], _COLUMNS), flush=True)
    print(format_table(rows, _COLUMNS))
    return rows


def _served(solver: str, n: int, clients: int, args) -> dict:
    token = "bench-" + os.urandom(8).hex()
    command = [sys.executable, "-m", "orrery.app.cli", "serve", "--scenario", args.scenario,
               "--n", str(n), "--solver", solver, "--port", "0", "--token", token,
               "--max-fps", str(args.max_fps)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    drain = None
    try:
        url, drain = _printed_url(server)
        if args.client == "chromium":
            results = _chromium_clients(url, clients, args)
        else:
            port = int(url.split("/?")[0].rsplit(":", 1)[1])
            ws = f"http://127.0.0.1:{port}/ws?token={token}"
            results = asyncio.run(_python_clients(ws, clients, args))
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if drain is not None:
            drain.join(10)
        server.stdout.close()
    return _summarise(results, args)


def _printed_url(server) -> tuple[str, threading.Thread]:
    """The URL the server prints, and a thread that reads the rest of its output (a full pipe
    would stop it)."""
    lines = []
    for line in server.stdout:
        lines.append(line)
        if " at http://" in line:
            drain = threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True)
            drain.start()
            return line.split(" at ", 1)[1].strip(), drain
    raise RuntimeError("orrery serve did not start:\n" + "".join(lines))


class _ClientLog:
    """What one client saw in the timed window."""

    def __init__(self):
        self.decoded: list[float] = []      # decode times (time.time)
        self.steps: list[tuple[float, int]] = []
        self.frame_latency: list[float] = []
        self.input_latency: list[float] = []
        self.bytes = 0
        self.encode_ms: list[float] = []
        self.draw_ms: list[float] = []
        self.upload_ms: list[float] = []
        self.codec = "h264"  # what the server sent: h264, or jpeg where the client asked for it


async def _python_clients(url: str, count: int, args) -> list[_ClientLog]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        logs = await asyncio.gather(*[_python_client(session, url, args) for _ in range(count)])
    return list(logs)


async def _python_client(session, url: str, args) -> _ClientLog:
    import aiohttp
    import av
    from concurrent.futures import ThreadPoolExecutor

    from ..app.serve import unpack_picture

    log = _ClientLog()
    log.codec = args.codec
    decoder = av.CodecContext.create("h264", "r")
    pool = ThreadPoolExecutor(1, thread_name_prefix="bench-serve-decode")
    loop = asyncio.get_running_loop()
    width, height = args.size
    sent: dict[int, float] = {}
    frame_made = None  # when the server took the frame the newest picture shows
    start = loop.time() + args.warmup
    end = start + args.seconds
    async with session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str(json.dumps({"type": "hello", "version": 1, "codecs": [args.codec],
                                      "width": width, "height": height}))

        async def orbit():
            number = 0
            while loop.time() < end:
                number += 1
                sent[number] = time.perf_counter()
                await ws.send_str(json.dumps({"type": "camera", "action": "orbit", "dx": 2.0,
                                              "dy": 0.0, "input": number}))
                await asyncio.sleep(1.0 / ORBIT_HZ)

        turning = asyncio.create_task(orbit()) if args.orbit else None
        try:
            while loop.time() < end:
                try:
                    message = await ws.receive(timeout=max(end - loop.time(), 0.01))
                except asyncio.TimeoutError:
                    break
                if message.type == aiohttp.WSMsgType.TEXT:
                    stats = json.loads(message.data)
                    if stats["type"] == "stats" and loop.time() > start:
                        for name in ("encode_ms", "draw_ms", "upload_ms"):
                            if stats.get(name):
                                getattr(log, name).append(stats[name])
                    continue
                if message.type != aiohttp.WSMsgType.BINARY:
                    break
                kind, sequence, made, input_shown, step, payload = unpack_picture(message.data)
                await loop.run_in_executor(pool, _decode, decoder, kind, payload)
                now, decoded_at = time.time(), time.perf_counter()
                await ws.send_str(json.dumps({"type": "ack", "sequence": sequence}))
                shown = [number for number in sent if number <= input_shown]
                latencies = [decoded_at - sent.pop(number) for number in shown]
                if loop.time() < start:
                    continue
                log.decoded.append(now)
                log.steps.append((now, step))
                if made != frame_made:  # a frame's first picture; later ones show it again
                    log.frame_latency.append(now - made)
                    frame_made = made
                log.bytes += len(payload)
                log.input_latency += latencies
        finally:
            if turning is not None:
                turning.cancel()
            pool.shutdown(wait=True)
    return log


def _decode(decoder, kind: int, payload: bytes) -> None:
    import av

    if kind == JPEG_PICTURE:
        from PIL import Image

        np.asarray(Image.open(io.BytesIO(payload)).convert("RGB"))
        return
    for frame in decoder.decode(av.Packet(payload)):
        frame.to_ndarray(format="yuv420p")  # as a browser, the picture is made, not just parsed


def _chromium_clients(url: str, count: int, args) -> list[_ClientLog]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    width, height = args.size
    drivers = []
    try:
        for _ in range(count):
            options = webdriver.ChromeOptions()
            options.binary_location = "/usr/lib/chromium/chromium"
            for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                             "--disable-gpu", "--force-device-scale-factor=1",
                             f"--window-size={width},{height}"):
                options.add_argument(argument)
            driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            driver.set_window_size(width, height)
            driver.get(url)
            drivers.append(driver)
        for driver in drivers:
            driver.execute_script(
                "const box = document.querySelector('.orrery-root');"
                "box.style.width = arguments[0] + 'px'; box.style.height = arguments[1] + 'px';",
                width, height)
        time.sleep(args.warmup)
        if args.orbit:
            for driver in drivers:
                driver.execute_script(
                    "window.orbiting = setInterval(() => window.orrery.send({type: 'camera',"
                    " action: 'orbit', dx: 2, dy: 0}), 1000 / arguments[0]);", ORBIT_HZ)
        read = ("const s = window.orrery; return {decoded: s.decoded, step: s.step, bytes: "
                "s.pictureBytes, frames: s.frameLatencies.length, inputs: "
                "s.inputLatencies.length, encode: s.stats.encode_ms || null, draw: s.stats.draw_ms || "
                "null, upload: s.stats.upload_ms || null, codec: s.codec || null, "
                "now: Date.now()}")
        before = [driver.execute_script(read) for driver in drivers]
        time.sleep(args.seconds)
        after = [driver.execute_script(read) for driver in drivers]
        logs = []
        for driver, first, last in zip(drivers, before, after):
            latencies = driver.execute_script(
                "const s = window.orrery; return [s.frameLatencies.slice(-arguments[0]),"
                " s.inputLatencies.slice(-arguments[1])]",
                max(last["frames"] - first["frames"], 0), max(last["inputs"] - first["inputs"], 0))
            log = _ClientLog()
            span = (last["now"] - first["now"]) / 1e3
            pictures = last["decoded"] - first["decoded"]
            log.decoded = list(np.linspace(0.0, span, pictures)) if pictures > 1 else []
            log.steps = [(0.0, first["step"]), (span, last["step"])]
            log.bytes = last["bytes"] - first["bytes"]
            log.frame_latency = [value / 1e3 for value in latencies[0]]
            log.input_latency = [value / 1e3 for value in latencies[1]]
            log.encode_ms = [last["encode"]] if last["encode"] else []
            log.draw_ms = [last["draw"]] if last["draw"] else []
            log.upload_ms = [last["upload"]] if last["upload"] else []
            log.codec = "h264" if last["codec"] else "jpeg"  # the page decodes H.264 or JPEG
            logs.append(log)
        return logs
    finally:
        for driver in drivers:
            driver.quit()


def _summarise(logs: list[_ClientLog], args) -> dict:
    def rate(times):
        return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and \
            times[-1] > times[0] else 0.0

    def percentile(values, q):
        return float(np.percentile(values, q)) * 1e3 if values else None

    fps = [rate(log.decoded) for log in logs]
    steps = [(log.steps[-1][1] - log.steps[0][1]) / (log.steps[-1][0] - log.steps[0][0])
             for log in logs if len(log.steps) > 1 and log.steps[-1][0] > log.steps[0][0]]
    frames = [value for log in logs for value in log.frame_latency]
    inputs = [value for log in logs for value in log.input_latency]
    def server_ms(name):  # the server's own medians, as its statistics reported them
        values = [value for log in logs for value in getattr(log, name)]
        return statistics.median(values) if values else None

    return {"codec": "/".join(sorted({log.codec for log in logs})),
            "delivered_fps": statistics.median(fps) if fps else 0.0,
            "delivered_fps_min": min(fps) if fps else 0.0,
            "steps_per_second": statistics.median(steps) if steps else 0.0,
            "upload_ms": server_ms("upload_ms"), "draw_ms": server_ms("draw_ms"),
            "encode_ms": server_ms("encode_ms"),
            "mbit_per_s": statistics.median([8 * log.bytes / args.seconds / 1e6 for log in logs]),
            "frame_latency_p50_ms": percentile(frames, 50),
            "frame_latency_p95_ms": percentile(frames, 95),
            "input_latency_p50_ms": percentile(inputs, 50),
            "input_latency_p95_ms": percentile(inputs, 95)}
