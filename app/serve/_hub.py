"""One source, many viewers: the served run's render thread and each client's session.

The :class:`Hub` owns the source (a live run, a replay) and one thread that owns the headless GL
context: it uploads each new frame of the source once, then draws it for every viewer that can
take a picture, with that viewer's camera, look and size, encodes the picture for that viewer
and hands it to the viewer's transport (a WebSocket, or a Jupyter widget's comm).

Flow control (ADR 0193): a viewer takes a picture only while fewer than ``PICTURES_IN_FLIGHT``
of its pictures are unacknowledged (a client acknowledges each picture once decoded), and at
most ``max_fps`` a second. A client that falls behind is therefore sent the newest frame when it
catches up, never a queue of old ones, and nothing it does slows the run or the other viewers;
the encoder's chain of pictures is never broken, so no picture is dropped after encoding.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable

import numpy as np

from ...engine.contracts import StreamConsumer
from ...engine.errors import OrreryError
from ...engine.frames import FrameSource
from ..render import (DEFAULT_MAX_DRAWN, Camera, DensityStyle, ParticleScene, PointStyle,
                      Renderer, ToneMap, headless_context, population_weights, represented_count,
                      sample_labels, sample_masses)
from ..render._context import is_software
from ..render._yuv420_pass import Yuv420Pass
from . import _controls
from ._controls import RecordingRequest, ViewSettings
from ._encoder import make_encoder
from ._protocol import PROTOCOL_VERSION, ProtocolError, pack_picture

log = logging.getLogger("orrery.serve")

# Pictures a viewer may have sent and not yet acknowledged: two keep the link busy while the
# client decodes one, without queueing more than one picture of latency.
PICTURES_IN_FLIGHT = 2
DEFAULT_MAX_FPS = 60.0
# Seconds between two statistics messages to every viewer.
STATS_INTERVAL = 0.25
# Energy samples sent with the statistics (the newest).
ENERGY_POINTS = 400
# Seconds the render thread waits before looking again where a source cannot signal new frames
# (FrameSource.on_frame: a replay): bounds the input latency there.
IDLE_WAIT = 0.004


class Viewer:
    """One client: its camera, look, picture size and codec, and what it has been sent.

    ``send(message)`` hands a ``str`` (JSON) or ``bytes`` (a picture) to the client's transport,
    a :class:`~orrery.engine.contracts.StreamConsumer`, from the render thread or the
    viewer's encode thread. ``receive`` takes the client's parsed messages
    (``_protocol.parse``) on the transport's thread."""

    _numbers = itertools.count(1)

    def __init__(self, hub: "Hub", client: StreamConsumer):
        self.hub = hub
        self.number = next(self._numbers)
        self.client = client
        self.camera = Camera()
        self.view = ViewSettings(**hub.default_view.as_dict())
        self.recording = RecordingRequest(hub.recordings)
        self.size: tuple[int, int] | None = None
        self.codec: str | None = None
        self.lock = threading.Lock()
        self.sent = 0           # pictures sent
        self.acknowledged = 0   # the newest picture the client says it decoded
        self.input = 0          # the newest input the client sent
        self.want_key = True
        self.changed = True     # camera, look or size changed since the last picture
        self.fitted_to = None   # the run (count, populations) the camera was fitted to
        self.shown = None       # the source frame sequence of the last picture
        self.next_due = 0.0
        self.delivered = deque(maxlen=64)  # send times of recent pictures
        self.encode_seconds = deque(maxlen=64)
        self.draw_seconds = deque(maxlen=64)  # drawing a picture and reading it back
        self.bytes_sent = deque(maxlen=64)
        self.closed = False
        # render-thread state: renderer and target at this viewer's size, encoder
        self.renderer = None
        self.target = None
        self.encoder = None
        self.encoding: EncodeThread | None = None
        self.yuv420 = None  # the GPU's colour conversion, for an H.264 viewer
        self.frame_path: str | None = None  # how its last picture was uploaded and drawn

    # Transport side ------------------------------------------------------------------------

    def send(self, message: str | bytes) -> None:
        self.client.deliver(message)

    def receive(self, message: dict) -> None:
        """Act on one parsed client message; ProtocolError ends the connection, a refused
        control value is answered with an ``error`` message."""
        kind = message["type"]
        with self.lock:
            if "input" in message:
                self.input = max(self.input, message["input"])
            if kind == "hello":
                if message["version"] != PROTOCOL_VERSION:
                    raise ProtocolError(f"protocol version {message['version']} is not served "
                                        f"(this server speaks {PROTOCOL_VERSION})")
                self.codec = message["codecs"][0]
                self._resize(message["width"], message["height"])
            elif self.codec is None:
                raise ProtocolError(f"{kind} before hello")
            elif kind == "resize":
                self._resize(message["width"], message["height"])
            elif kind == "ack":
                if message["sequence"] > self.sent:
                    raise ProtocolError(f"ack of picture {message['sequence']}, only "
                                        f"{self.sent} sent")
                self.acknowledged = max(self.acknowledged, message["sequence"])
            elif kind == "keyframe":
                self.want_key = True
            elif kind == "camera":
                self._camera(message)
        if kind == "hello":
            self.send(json.dumps({**self.hub.welcome(), "view": self.view.as_dict()}))
        elif kind == "control":
            self._control(message["name"], message.get("value"))
        self.hub.wake()

    def _resize(self, width: int, height: int) -> None:
        size = (width - width % 2, height - height % 2)  # H.264 wants even sides
        if size != self.size:
            self.size = size
            self.want_key = True
        self.changed = True

    def _camera(self, message: dict) -> None:
        action = message["action"]
        if action == "orbit":
            self.camera.orbit(message.get("dx", 0.0), message.get("dy", 0.0))
        elif action == "pan":
            self.camera.pan(message.get("dx", 0.0), message.get("dy", 0.0), self.size[1])
        elif action == "zoom":
            self.camera.zoom(message.get("steps", 0.0))
        else:
            self.fitted_to = None  # refitted to the frame on the next picture
        self.changed = True

    def _control(self, name: str, value) -> None:
        source = self.hub.source
        try:
            checked = _controls.check(source, name, value)
            _controls.apply(source, self.view, self.recording, name, checked)
        except ProtocolError:
            raise
        except OrreryError as error:  # its rule or the runner refused it (e.g. a full queue)
            self.send(json.dumps({"type": "error", "message": str(error)}))
            return
        if name in _controls.VIEW_CONTROLS:
            with self.lock:
                self.changed = True
            self.send(json.dumps({"type": "view", **self.view.as_dict()}))
        else:
            self.hub.settings_changed()

    # Render thread side --------------------------------------------------------------------

    def can_take_picture(self, now: float) -> bool:
        return (self.codec is not None and self.size is not None and not self.closed
                and self.sent - self.acknowledged < PICTURES_IN_FLIGHT and now >= self.next_due)

    def delivered_fps(self) -> float:
        times = list(self.delivered)  # a copy: the encode thread appends meanwhile
        if len(times) < 2 or time.monotonic() - times[-1] > 1.0:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0]) if times[-1] > times[0] else 0.0

    def release(self) -> None:
        if self.encoding is not None:  # the encoder's last picture first
            self.encoding.close()
        if self.renderer is not None:
            self.renderer.release()
            self.target.release()
            self._colour.release()
        if self.encoder is not None:
            self.encoder.close()
        if self.yuv420 is not None:
            self.yuv420.release()
        self.renderer = self.target = self.encoder = self.yuv420 = self.encoding = None


class EncodeThread:
    """A viewer's encoding on a thread of its own, so that the render thread draws the next
    picture (this viewer's or another's) while this one is encoded: at 10M on an H100 at 1080p
    a picture took 17.6 ms to draw and read back and 5.4 ms to encode, one after the other.
    Pictures are encoded and sent in the order given; the viewer's acknowledgement window
    bounds how many wait."""

    def __init__(self, number: int):
        self._jobs: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"orrery-serve-encode-{number}",
                                        daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def drain(self) -> None:
        """Wait until every picture given so far is sent (before its encoder is replaced)."""
        self._jobs.join()

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(10.0)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            finally:
                self._jobs.task_done()


class Hub:
    """Serve ``source`` to any number of viewers.

    Parameters
    ----------
    source : FrameSource
        A live run (:class:`~orrery.engine.runner.SimulationRunner`), a replay
        (:class:`~orrery.engine.recording.Player`) or any other frame source; the hub closes it.
    view : ViewSettings
        How a new viewer's pictures look until it changes them.
    recordings : folder a client's Record control writes into (None: recording refused).
    max_fps : most pictures a second for one viewer.
    max_drawn : particles a viewer's changing picture draws (its renderer's
        :class:`~orrery.app.render.LevelOfDetail`; a still one is refined to every particle).
    ctx : a moderngl context to draw with (default: a headless EGL context made on the render
        thread).
    """

    def __init__(self, source: FrameSource, *, view: ViewSettings | None = None,
                 recordings: Path | None = None, max_fps: float = DEFAULT_MAX_FPS,
                 max_drawn: int | None = DEFAULT_MAX_DRAWN, ctx=None):
        self.source = source
        self.max_drawn = max_drawn
        self.default_view = view or ViewSettings()
        self.recordings = None if recordings is None else Path(recordings)
        self.max_fps = float(max_fps)
        self._ctx = ctx
        self._viewers: list[Viewer] = []
        self._departed: list[Viewer] = []  # left; their GL objects are released on the GL thread
        self._lock = threading.Lock()
        self._news = threading.Event()
        self._closing = False
        self._settings_dirty = True
        self._stats_due = 0.0
        self._frame_seen = 0.0  # when the render thread first took the frame it shows (time.time)
        self._upload_seconds = deque(maxlen=64)  # a new frame into the scene's buffers
        self.error: str | None = None  # why the render thread stopped, if it did
        self._started = threading.Event()
        # a new frame is news, like a viewer's input, while a viewer has room for it: the render
        # thread then sleeps on one event
        self._waiting_for_frames = False
        self._frames_signalled = source.on_frame(self._frame_published)
        self._thread = threading.Thread(target=self._run, name="orrery-serve-render", daemon=True)
        self._thread.start()
        self._started.wait(60.0)
        if self.error is not None:
            raise OrreryError(self.error)

    # Viewers -------------------------------------------------------------------------------

    def attach(self, client: StreamConsumer) -> Viewer:
        """A new viewer whose pictures and messages go to ``client``."""
        viewer = Viewer(self, client)
        with self._lock:
            self._viewers.append(viewer)
        log.info("viewer %d joined (%d watching)", viewer.number, len(self._viewers))
        return viewer

    def detach(self, viewer: Viewer) -> None:
        viewer.closed = True
        with self._lock:
            if viewer in self._viewers:
                self._viewers.remove(viewer)
                self._departed.append(viewer)
            count = len(self._viewers)
        log.info("viewer %d left (%d watching)", viewer.number, count)
        self.wake()

    @property
    def viewers(self) -> list[Viewer]:
        with self._lock:
            return list(self._viewers)

    def wake(self) -> None:
        self._news.set()

    def _frame_published(self) -> None:
        if self._waiting_for_frames:
            self._news.set()

    def settings_changed(self) -> None:
        self._settings_dirty = True
        self.wake()

    def welcome(self) -> dict:
        return {"type": "welcome", "version": PROTOCOL_VERSION,
                "controls": sorted(_controls.controls_for(self.source)),
                "settings": _controls.run_settings(self.source),
                "view_options": {"colour": list(_controls.COLOUR_MODES),
                                 "render": list(_controls.RENDER_MODES),
                                 "colour_map": list(_controls.colour_maps())},
                "recordings": self.recordings is not None}

    def close(self, timeout: float = 10.0) -> None:
        self._closing = True
        self.wake()
        self._thread.join(timeout)
        self.source.close()

    # Render thread -------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            ctx = self._ctx or headless_context()
            scene = ParticleScene(ctx)
        except Exception as error:  # noqa: BLE001 - reported to the caller of Hub()
            self.error = str(error)
            self._started.set()
            return
        self._started.set()
        try:
            while not self._closing:
                self._turn(ctx, scene)
        except Exception as error:  # noqa: BLE001 - a broken render thread must say why
            log.exception("the render thread stopped")
            self.error = f"{type(error).__name__}: {error}"
            for viewer in self.viewers:
                viewer.send(json.dumps({"type": "error", "message":
                                        f"the server's renderer stopped: {self.error}"}))
        finally:
            for viewer in self.viewers + self._departed:
                viewer.release()
            scene.release()

    def _turn(self, ctx, scene) -> None:
        self._news.clear()  # before reading the state: news from now on ends the wait below
        with self._lock:
            departed, self._departed = self._departed, []
        for viewer in departed:
            viewer.release()
        now = time.monotonic()
        if now >= self._stats_due:
            self._send_stats()
            self._stats_due = now + STATS_INTERVAL
        frame = self.source.latest()
        viewers = [viewer for viewer in self.viewers if viewer.can_take_picture(now)]
        due = [viewer for viewer in viewers if frame is not None and
               (viewer.changed or viewer.want_key or viewer.shown != frame.sequence
                or viewer.renderer is not None and viewer.renderer.refining)]
        if not due:
            self._waiting_for_frames = bool(viewers) and frame is not None
            if self._waiting_for_frames and not self._frames_signalled:
                self.source.wait_for_newer(frame.sequence, IDLE_WAIT)  # a replay: poll it
            else:
                self._news.wait(self._quiet_seconds(now, frame))
            self._waiting_for_frames = False
            return
        started = time.perf_counter()
        # a replay playing a priority-ordered recording hands over the first K particles
        if scene.show(frame, sample_labels(self.source.population, frame.count)):
            self._upload_seconds.append(time.perf_counter() - started)
            self._frame_seen = time.time()
        # Every due viewer's picture is drawn and its readback started before the first is
        # waited for: one wait for the GPU a turn (behind the run's kernels, where they share
        # it), not one a viewer.
        drawn = []
        for viewer in due:
            try:
                drawn.append(self._picture(ctx, scene, viewer, frame))
            except OrreryError as error:  # this viewer's settings cannot be drawn: say so
                viewer.send(json.dumps({"type": "error", "message": str(error)}))
                viewer.changed = False
                viewer.next_due = time.monotonic() + 1.0
        for finish in drawn:
            finish()

    def _quiet_seconds(self, now: float, frame) -> float:
        """How long nothing is to be drawn unless news comes (a new frame, a viewer's
        acknowledgement, input or hello, a departure, closing: each wakes this thread): until a
        viewer held back by ``max_fps`` may take its next picture, or the statistics are due. A
        viewer free to take one now has been drawn the newest frame, so only news can give it
        another. Polling at IDLE_WAIT instead, while every viewer waited for acknowledgements or
        the run was paused, cost the thread 2% of a core in 240 wake-ups a second. A source
        without a frame yet is polled: it may not signal its first."""
        if frame is None:
            return IDLE_WAIT
        until = [self._stats_due] + [viewer.next_due for viewer in self.viewers
                                     if viewer.sent - viewer.acknowledged < PICTURES_IN_FLIGHT
                                     and viewer.next_due > now]
        return max(min(until) - now, 0.0)

    def _picture(self, ctx, scene, viewer: Viewer, frame) -> Callable[[], None]:
        """Draw ``viewer``'s picture of ``frame`` and start its readback; the function returned
        takes the picture (waiting for the GPU where it converted it) and hands it to the
        viewer's encode thread."""
        represents = represented_count(frame.count, self.source.population)
        with viewer.lock:
            run = (represents, self.source.population_names)
            if viewer.fitted_to != run:
                viewer.camera.fit(frame.positions)
                viewer.fitted_to = run
            size, codec, key = viewer.size, viewer.codec, viewer.want_key
            view = ViewSettings(**viewer.view.as_dict())
            camera = Camera(target=np.array(viewer.camera.target), distance=viewer.camera.distance,
                            yaw=viewer.camera.yaw, pitch=viewer.camera.pitch,
                            fov_y=viewer.camera.fov_y)
            input_sequence = viewer.input
            viewer.changed = viewer.want_key = False
        if viewer.renderer is None or viewer.target.size != size:
            viewer.release()
            viewer.renderer = Renderer(ctx, max_drawn=self.max_drawn)
            viewer._colour = ctx.texture(size, 4)
            viewer.target = ctx.framebuffer(color_attachments=[viewer._colour])
            key = True
        if viewer.encoding is None:
            viewer.encoding = EncodeThread(viewer.number)
        if viewer.encoder is None or viewer.encoder.codec != codec or viewer.encoder.size != size:
            if viewer.encoder is not None:
                viewer.encoding.drain()
                viewer.encoder.close()
            viewer.encoder = make_encoder(codec, size)
            key = True
        weights = population_weights(self.source.population_names)
        if view.render == "density":
            style = DensityStyle(colour_map=view.colour_map, weights=weights)
            scene.set_masses(sample_masses(self.source.masses, frame.count))
        else:
            style = PointStyle(point_size=view.point_size, colour_mode=view.colour,
                               weights=weights)
        tone = ToneMap(exposure=view.exposure)
        width, height = size
        started = time.perf_counter()
        renderer = viewer.renderer
        renderer.resize(width, height)
        renderer.accumulate(scene, camera.view_projection(width / height), style,
                            represents=represents)
        # Light the host splat made (GL draws on the CPU) is tone mapped on the host: it never
        # goes through llvmpipe and back (ADR 0335), and for H.264 it becomes the encoder's
        # yuv420p frame in the same pass (ADR 0337)
        picture = renderer.host_picture(tone, yuv420=codec == "h264")
        # Converted on the GPU: half the bytes back and no swscale. Where GL draws on the CPU
        # the pass costs more than swscale does (the 30k collision at 720p on 2 cores: 14.7
        # pictures/s against 17.1 with swscale, bench serve --client chromium).
        convert_on_gpu = picture is None and codec == "h264" and not is_software(ctx)
        yuv420 = codec == "h264" and (picture is not None or convert_on_gpu)
        if picture is None:
            renderer.present(viewer.target, tone)
            if convert_on_gpu:
                if viewer.yuv420 is None:
                    viewer.yuv420 = Yuv420Pass(ctx, viewer._colour, size)
                viewer.yuv420.submit()
            else:
                pixels = viewer.target.read(components=3, alignment=1)
                picture = np.ascontiguousarray(
                    np.frombuffer(pixels, np.uint8).reshape(height, width, 3)[::-1])
        drawing = time.perf_counter() - started
        viewer.sent += 1
        viewer.shown = frame.sequence
        now = time.monotonic()
        viewer.next_due = now + 1.0 / self.max_fps if self.max_fps > 0 else now
        viewer.frame_path = f"{scene.upload_path}, {viewer.renderer.particle_path}"
        encoder, sequence, made = viewer.encoder, viewer.sent, self._frame_seen

        def encode_and_send() -> None:
            started = time.perf_counter()
            try:
                if yuv420:
                    kind, payload = encoder.encode_yuv420(picture, key=key)
                else:
                    kind, payload = encoder.encode(picture, key=key)
            except Exception as error:  # noqa: BLE001 - this viewer is told; the others go on
                log.exception("viewer %d: encoding failed", viewer.number)
                viewer.send(json.dumps({"type": "error", "message":
                                        f"the server could not encode a picture: {error}"}))
                return
            viewer.encode_seconds.append(time.perf_counter() - started)
            if key and encoder.codec_string:
                viewer.send(json.dumps({"type": "stream", "codec": encoder.codec_string,
                                        "width": width, "height": height}))
            sent = time.monotonic()
            viewer.delivered.append(sent)
            viewer.bytes_sent.append((sent, len(payload)))
            viewer.send(pack_picture(kind, sequence, made, input_sequence, frame.step, payload))

        def finish() -> None:
            nonlocal picture
            started = time.perf_counter()
            if picture is None:  # converted on the GPU: its readback is under way
                picture = viewer.yuv420.collect()
            viewer.draw_seconds.append(drawing + time.perf_counter() - started)
            viewer.encoding.submit(encode_and_send)

        return finish

    def _send_stats(self) -> None:
        viewers = self.viewers
        if not viewers:
            return
        frame = self.source.latest()
        # what the source does not know is left out (the client shows a dash for it)
        stats = {} if frame is None else {key: value for key, value in
                                          frame.stats.as_dict().items() if value is not None}
        upload = self._upload_seconds
        common = {"type": "stats", "step": None if frame is None else frame.step,
                  "time": None if frame is None else frame.time,
                  "viewers": len(viewers), **stats,
                  "upload_ms": 1e3 * float(np.median(upload)) if upload else None}
        history = self.source.energy_history()
        if history is not None:
            times, errors = history
            common["energy"] = [times[-ENERGY_POINTS:].tolist(), errors[-ENERGY_POINTS:].tolist()]
        if self._settings_dirty:
            self._settings_dirty = False
            settings = json.dumps({"type": "settings", **_controls.run_settings(self.source)})
        else:
            settings = None
        for viewer in viewers:
            if settings is not None:
                viewer.send(settings)
            encode = list(viewer.encode_seconds)  # copies: the encode thread appends meanwhile
            recent = [size for at, size in list(viewer.bytes_sent) if at > time.monotonic() - 1.0]
            viewer.send(json.dumps({
                **common, "fps": viewer.delivered_fps(),
                "encode_ms": 1e3 * float(np.median(encode)) if encode else None,
                "draw_ms": 1e3 * float(np.median(viewer.draw_seconds))
                if viewer.draw_seconds else None,
                "bitrate_mbit": 8 * sum(recent) / 1e6,
                "frame_path": viewer.frame_path,
                "drawn": None if viewer.renderer is None else
                [viewer.renderer.detail.drawn, viewer.renderer.detail.represents]}))
