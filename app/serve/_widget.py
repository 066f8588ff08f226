"""``orrery.show(...)``: the served client inside JupyterLab and Notebook, as an anywidget.

The widget runs the same client module as the page (``client/client.js``, its default export is
anywidget's ``render``) and the same :class:`~._hub.Hub`; only the transport differs: messages
and pictures travel through the widget's comm, the notebook server's own WebSocket, so a remote
notebook needs no second port. A :class:`~orrery.engine.Simulation` stepped in the notebook's
cells is shown as it stands after each cell (and whenever ``widget.update()`` is called): the
frame is taken on the kernel's thread, between steps, never during one.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ...engine._optional import require
from ...engine.errors import InvalidInputError
from ...engine.frames import Frame, FrameSource, FrameStats, PublishedFrames
from . import _controls
from ._controls import ViewSettings
from ._hub import Hub
from ._protocol import ProtocolError, parse
from ._web import client_file

DEFAULT_SIZE = (960, 540)


class SimulationFrames(PublishedFrames):
    """A :class:`~orrery.engine.Simulation` driven by the caller, as a frame source: ``publish()``
    (on the thread that steps it) makes its current state the latest frame."""

    def __init__(self, simulation):
        super().__init__()
        self.simulation = simulation
        self._label(simulation.particles)
        self.publish()

    def publish(self) -> None:
        sim = self.simulation
        if self._front is not None and self._front.step == sim.steps and \
                self._front.time == sim.time:
            return
        positions = np.asarray(sim.positions(), dtype=np.float32).copy()
        stats = FrameStats(n=sim.n, solver=sim.describe(), dt=sim.dt)
        self._publish_frame(lambda sequence: Frame(positions, float(sim.time), int(sim.steps),
                                                   sequence, stats))

    def close(self) -> None:
        """Nothing to stop: the caller steps the simulation."""


def _widget_class():
    anywidget = require("anywidget")
    import traitlets  # anywidget's own dependency

    class OrreryWidget(anywidget.AnyWidget):
        """The served client in a notebook cell; see :func:`show`."""

        _esm = client_file("client.js")
        _css = client_file("client.css")
        width = traitlets.Int(DEFAULT_SIZE[0]).tag(sync=True)
        height = traitlets.Int(DEFAULT_SIZE[1]).tag(sync=True)

        def __init__(self, hub: Hub, frames: SimulationFrames | None = None, **kwargs):
            super().__init__(**kwargs)
            self.hub = hub
            self._frames = frames
            self._viewer = hub.attach(self)
            self.on_msg(self._from_client)
            if frames is not None:
                _after_each_cell(self.update)

        def deliver(self, message: str | bytes) -> None:  # a StreamConsumer: any thread
            if isinstance(message, bytes):
                self.send({"picture": True}, buffers=[message])
            else:
                self.send(json.loads(message))

        def _from_client(self, widget, content, buffers) -> None:
            try:
                self._viewer.receive(parse(json.dumps(content)))
            except ProtocolError as error:
                self.send({"type": "error", "message": f"closed: {error}"})
                self.hub.detach(self._viewer)

        def update(self) -> None:
            """Show the simulation's current state now (``show`` does it after every cell)."""
            if self._frames is not None:
                self._frames.publish()

        def close(self) -> None:
            self.hub.detach(self._viewer)
            self.hub.close()
            super().close()

    return OrreryWidget


def _after_each_cell(callback) -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.events.register("post_run_cell", lambda result: callback())


def show(source=None, *, scenario: str | None = None, n: int | None = None, seed: int = 0,
         solver: str | None = None, dt: float | None = None, play=None, load=None,
         paused: bool = False, size: tuple[int, int] = DEFAULT_SIZE,
         recordings=None, **view):
    """A widget that shows a run in the notebook, with the browser client's controls.

    ``source`` is a :class:`~orrery.engine.Simulation` you step in cells (it is shown after
    each cell, or on ``widget.update()``), a recording's path, or any FrameSource; else
    ``scenario``/``n``/``seed``/``solver``/``dt`` start a live run on its own thread (as
    ``orrery serve`` does), ``play`` replays a recording and ``load`` opens snapshots.
    ``view`` sets how it looks (``exposure``, ``point_size``, ``colour``, ``render``,
    ``colour_map``); ``recordings`` names the folder the Record control writes into.
    """
    from ...engine.simulation import Simulation

    frames = None
    if isinstance(source, Simulation):
        frames = source = SimulationFrames(source)
    elif source is None or isinstance(source, (str, bytes, os.PathLike)):
        from types import SimpleNamespace

        from ..viewer._main import open_source

        if source is not None:
            play = source
        source = open_source(SimpleNamespace(scenario=scenario, n=n, seed=seed, solver=solver,
                                             dt=dt, paused=paused, play=play, load=load,
                                             family=None))
    elif not isinstance(source, FrameSource):
        raise TypeError(f"show() takes a Simulation, a recording's path or a FrameSource, got "
                        f"{type(source).__name__}")
    look = ViewSettings()
    for name, value in view.items():
        if name not in _controls.VIEW_CONTROLS:
            raise InvalidInputError(f"show() has no setting {name!r} (view settings: "
                                    f"{', '.join(_controls.VIEW_CONTROLS)})")
        setattr(look, name, _controls.check(source, name, value))
    hub = Hub(source, view=look, recordings=recordings)
    return _widget_class()(hub, frames, width=int(size[0]), height=int(size[1]))
