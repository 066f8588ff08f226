"""The hub that serves one run to many viewers, driven in process through a transport that
keeps what it is sent: pictures only while a viewer keeps up, each viewer's own camera and
look, run controls checked by the command line's rules and seen by every viewer."""

import io
import json
import threading
import time

import av
import numpy as np
import pytest
from PIL import Image

from orrery.app.serve import Hub, ProtocolError
from orrery.app.serve._hub import PICTURES_IN_FLIGHT
from orrery.app.serve._protocol import (DELTA_PICTURE, JPEG_PICTURE, KEY_PICTURE, parse,
                                        unpack_picture)
from orrery.engine.contracts import StreamConsumer
from orrery.engine.recording import RecordingFile
from orrery.engine.runner import RunSettings, SimulationRunner

from .servers import wait_for

pytestmark = pytest.mark.usefixtures("egl")


class Client:
    """A viewer's transport that keeps every message; ``pictures`` decoded as they arrive."""

    def __init__(self, hub, *, size=(160, 96), ack=True, codec="jpeg"):
        self.texts, self.pictures, self.ack, self.codec = [], [], ack, codec
        self.decoder = av.CodecContext.create("h264", "r") if codec == "h264" else None
        self.lock = threading.Lock()
        self.viewer = hub.attach(self)
        self.say({"type": "hello", "version": 1, "codecs": [codec], "width": size[0],
                  "height": size[1]})

    def deliver(self, message):
        if isinstance(message, str):
            with self.lock:
                self.texts.append(json.loads(message))
            return
        kind, sequence, made, input_sequence, step, payload = unpack_picture(message)
        if self.codec == "h264":
            assert kind in (KEY_PICTURE, DELTA_PICTURE)
            (frame,) = self.decoder.decode(av.Packet(payload))
            image = frame.to_ndarray(format="rgb24").astype(float)
        else:
            assert kind == JPEG_PICTURE
            image = np.asarray(Image.open(io.BytesIO(payload)).convert("RGB"), float)
        with self.lock:
            self.pictures.append((sequence, input_sequence, step, image))
        if self.ack:
            self.viewer.receive(parse(json.dumps({"type": "ack", "sequence": sequence})))

    def say(self, message):
        self.viewer.receive(parse(json.dumps(message)))

    def of_type(self, kind):
        with self.lock:
            return [text for text in self.texts if text["type"] == kind]

    def latest(self):
        with self.lock:
            return self.pictures[-1]

    def count(self):
        with self.lock:
            return len(self.pictures)


def test_the_transports_take_the_served_stream_as_its_contract_says():
    import asyncio

    from orrery.app.serve._web import _Outbox
    from orrery.app.serve._widget import _widget_class

    from ...extras import package

    loop = asyncio.new_event_loop()
    try:
        assert isinstance(_Outbox(loop), StreamConsumer)
    finally:
        loop.close()
    package("anywidget")
    assert issubclass(_widget_class(), StreamConsumer)


@pytest.fixture
def hub(tmp_path):
    runner = SimulationRunner(RunSettings(scenario="plummer", n=600, solver="cpu-direct"))
    hub = Hub(runner, recordings=tmp_path)
    yield hub
    hub.close()


def test_a_viewer_that_never_acknowledges_holds_up_nobody(hub):
    stalled = Client(hub, ack=False)
    keeping_up = Client(hub)
    wait_for(lambda: keeping_up.count() > 20, what="pictures for the viewer that keeps up")
    assert stalled.count() == PICTURES_IN_FLIGHT
    assert keeping_up.latest()[2] > stalled.latest()[2], "the run went on"


def test_the_render_thread_sleeps_while_every_picture_waits_for_its_acknowledgement(hub):
    stalled = Client(hub, ack=False)
    wait_for(lambda: stalled.count() == PICTURES_IN_FLIGHT, what="the viewer's window filled")
    turns = []  # the render thread's turns of its loop: one a wake-up
    turn = hub._turn
    hub._turn = lambda *args: (turns.append(None), turn(*args))

    def wake_ups():
        return len(turns)

    before = wake_ups()
    time.sleep(1.0)
    # the statistics, four times a second, and no polling (it woke 240 times a second)
    assert wake_ups() - before < 40
    stalled.viewer.receive(parse(json.dumps({"type": "ack", "sequence": 1})))
    wait_for(lambda: stalled.count() > PICTURES_IN_FLIGHT, what="a picture after the ack")


def test_the_render_thread_sleeps_while_the_run_is_paused(hub):
    watching = Client(hub)
    wait_for(lambda: watching.count() > 2, what="pictures of the running run")
    hub.source.pause()
    wait_for(lambda: hub.source.paused, what="the run paused")
    turns = []
    turn = hub._turn
    hub._turn = lambda *args: (turns.append(None), turn(*args))
    time.sleep(0.5)  # the last frame drawn and its picture acknowledged
    before, pictures = len(turns), watching.count()
    time.sleep(1.0)
    # the statistics, four times a second: a viewer with room and nothing new is not polled
    # (it was, 240 times a second, while the run was paused)
    assert len(turns) - before < 40
    assert watching.count() == pictures, "no picture without a new frame"
    hub.source.resume()
    wait_for(lambda: watching.count() > pictures + 2, what="pictures once the run goes on")


def test_a_viewer_that_leaves_gives_back_its_renderer_and_encode_thread(hub):
    leaving, staying = Client(hub), Client(hub)
    wait_for(lambda: leaving.count() > 2 and staying.count() > 2, what="pictures for both")
    name = f"orrery-serve-encode-{leaving.viewer.number}"
    assert any(thread.name == name for thread in threading.enumerate())
    hub.detach(leaving.viewer)
    wait_for(lambda: leaving.viewer.renderer is None and leaving.viewer.encoding is None,
             what="the departed viewer released on the render thread")
    assert not any(thread.name == name for thread in threading.enumerate())
    before = staying.count()
    wait_for(lambda: staying.count() > before + 2, what="pictures for the viewer that stayed")


def test_a_still_viewer_past_the_cap_gets_pictures_until_every_particle_is_drawn():
    runner = SimulationRunner(RunSettings(scenario="plummer", n=3000, solver="cpu-direct"),
                              paused=True)
    hub = Hub(runner, max_drawn=200)
    try:
        client = Client(hub)
        wait_for(lambda: client.viewer.renderer is not None and
                 client.viewer.renderer.detail.drawn == 3000, what="every particle drawn")
        wait_for(lambda: client.count() > 2, what="a picture of each refinement")
        wait_for(lambda: any(stats.get("drawn") == [3000, 3000]
                             for stats in client.of_type("stats")),
                 what="the client's statistics saying every particle is drawn")
    finally:
        hub.close()


@pytest.mark.parametrize("conversion", ["host-tone-map", "gpu-pass", "swscale"])
def test_h264_pictures_show_what_jpeg_pictures_show(monkeypatch, conversion):
    """The H.264 viewer's pictures are converted to BT.709 yuv420p, with the tone map where the
    host splat's light is on the host, else by the GPU's pass (where GL draws on a GPU) or by
    swscale (where it draws on the CPU), and tagged so: decoded, their colours are the JPEG
    viewer's of the same frame."""
    from orrery.app.render import Renderer
    from orrery.app.serve import _hub

    if conversion != "host-tone-map":  # the light goes through GL, as with bloom or density
        monkeypatch.setattr(Renderer, "host_picture", lambda renderer, tone, **options: None)
        monkeypatch.setattr(_hub, "is_software", lambda ctx: conversion == "swscale")
    hub = Hub(SimulationRunner(RunSettings(scenario="plummer", n=600, solver="cpu-direct")))
    try:
        hub.source.pause()
        _compare_h264_with_jpeg(hub)
    finally:
        hub.close()


def _compare_h264_with_jpeg(hub):
    jpeg, h264 = Client(hub), Client(hub, codec="h264")
    wait_for(lambda: jpeg.count() and h264.count(), what="first pictures")
    # the run is paused: wait until both show its last frame (under load one may lag behind)
    wait_for(lambda: jpeg.latest()[2] == h264.latest()[2] == hub.source.latest().step,
             what="the same frame")
    reference, decoded = jpeg.latest()[3], h264.latest()[3]
    assert reference.shape == decoded.shape == (96, 160, 3)
    lit = reference.max(axis=2) > 60
    assert lit.sum() > 50, "the cluster is in the picture"
    assert np.abs(decoded[lit].mean(axis=0) - reference[lit].mean(axis=0)).max() < 4
    assert np.abs(decoded - reference).mean() < 3


def test_each_viewer_turns_its_own_camera(hub):
    hub.source.pause()
    one, two = Client(hub), Client(hub)
    wait_for(lambda: one.count() and two.count(), what="first pictures")
    time.sleep(0.3)
    before_one, before_two = one.latest()[3], two.latest()[3]
    one.say({"type": "camera", "action": "orbit", "dx": 200, "dy": 50, "input": 1})
    wait_for(lambda: one.latest()[1] >= 1, what="a picture showing the orbit")
    assert np.abs(one.latest()[3] - before_one).mean() > 0.5
    time.sleep(0.3)
    assert np.array_equal(two.latest()[3], before_two)


def test_viewers_converted_on_the_gpu_in_one_turn_each_get_their_own_picture(monkeypatch):
    """Every due viewer's picture is drawn and its readback started before the first is
    collected: each H.264 viewer still gets the picture of its own camera, the other's
    unchanged."""
    from orrery.app.render import Renderer
    from orrery.app.serve import _hub

    monkeypatch.setattr(Renderer, "host_picture", lambda renderer, tone, **options: None)
    monkeypatch.setattr(_hub, "is_software", lambda ctx: False)
    hub = Hub(SimulationRunner(RunSettings(scenario="plummer", n=600, solver="cpu-direct")))
    try:
        hub.source.pause()
        one, two = Client(hub, codec="h264"), Client(hub, codec="h264")
        wait_for(lambda: one.count() and two.count(), what="first pictures")
        time.sleep(0.3)
        before_one, before_two = one.latest()[3], two.latest()[3]
        assert np.abs(before_one - before_two).mean() < 3  # one camera, one picture
        one.say({"type": "camera", "action": "orbit", "dx": 200, "dy": 50, "input": 1})
        two.say({"type": "camera", "action": "zoom", "steps": 4, "input": 1})
        wait_for(lambda: one.latest()[1] >= 1 and two.latest()[1] >= 1, what="the turned pictures")
        turned, zoomed = one.latest()[3], two.latest()[3]
        assert np.abs(turned - before_one).mean() > 0.5
        assert np.abs(zoomed - before_two).mean() > 0.5
        assert np.abs(turned - zoomed).mean() > 0.5
    finally:
        hub.close()


def test_a_look_control_changes_only_that_viewers_pictures(hub):
    hub.source.pause()
    one, two = Client(hub), Client(hub)
    wait_for(lambda: one.count() and two.count(), what="first pictures")
    time.sleep(0.3)
    before = two.latest()[3]
    dim = one.latest()[3].mean()
    one.say({"type": "control", "name": "exposure", "value": 4.0, "input": 1})
    wait_for(lambda: one.latest()[1] >= 1, what="a brighter picture")
    assert one.latest()[3].mean() > dim
    assert np.array_equal(two.latest()[3], before)


def test_run_controls_are_checked_as_the_command_line_checks_them(hub):
    client = Client(hub)
    wait_for(client.count, what="a first picture")
    client.say({"type": "control", "name": "dt", "value": -1.0})
    client.say({"type": "control", "name": "n", "value": 2.5})
    client.say({"type": "control", "name": "solver", "value": "warp-drive"})
    client.say({"type": "control", "name": "theta", "value": 9.0})
    errors = [error["message"] for error in client.of_type("error")]
    assert len(errors) == 4
    assert errors[0] == "dt: must be > 0, got -1.0"
    assert "n: must be an integer" in errors[1]
    assert "warp-drive" in errors[2] and "theta" in errors[3]
    with pytest.raises(ProtocolError, match="unknown control"):
        client.say({"type": "control", "name": "rm -rf", "value": 1})


def test_a_run_control_reaches_every_viewer(hub):
    one, two = Client(hub), Client(hub)
    wait_for(lambda: one.count() and two.count(), what="first pictures")
    one.say({"type": "control", "name": "dt", "value": 0.0025})
    wait_for(lambda: any(settings.get("dt") == 0.0025 for settings in two.of_type("settings")),
             what="the other viewer to be told the new dt")
    one.say({"type": "control", "name": "pause", "value": True})
    wait_for(lambda: any(stats.get("paused") for stats in two.of_type("stats")),
             what="the other viewer to see the pause")
    step = two.latest()[2]
    time.sleep(0.5)
    assert hub.source.latest().step == step


def test_record_writes_into_the_recordings_folder_only(hub, tmp_path):
    client = Client(hub)
    wait_for(client.count, what="a first picture")
    client.say({"type": "control", "name": "record_every", "value": 1})
    client.say({"type": "control", "name": "record", "value": True})
    wait_for(lambda: any(stats.get("recording") for stats in client.of_type("stats")),
             what="the recording to start")
    time.sleep(0.5)
    client.say({"type": "control", "name": "record", "value": False})
    wait_for(lambda: client.of_type("stats")[-1].get("recording") is None, what="it to stop")
    written = list(tmp_path.glob("*.h5"))
    assert len(written) == 1 and written[0].parent == tmp_path
    with RecordingFile(written[0]) as recording:
        assert recording.frame_count >= 2


def test_record_is_refused_without_a_recordings_folder():
    runner = SimulationRunner(RunSettings(scenario="plummer", n=200, solver="cpu-direct"))
    hub = Hub(runner)
    try:
        client = Client(hub)
        client.say({"type": "control", "name": "record", "value": True})
        assert "--recordings" in client.of_type("error")[-1]["message"]
    finally:
        hub.close()
