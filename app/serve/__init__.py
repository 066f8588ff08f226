"""``orrery serve``: a run (live, a recording, snapshots) rendered headless and streamed as video
to browsers and Jupyter, each client with its own camera, over one TCP port.

:class:`Hub` draws and encodes for every viewer; ``_web`` carries it over HTTP and WebSocket
(aiohttp); ``_widget`` over a Jupyter widget's comm; ``_protocol`` is the wire format
(docs/serve-protocol.md) and ``_controls`` what a client may change.
"""

from ._controls import ViewSettings
from ._hub import Hub, Viewer
from ._protocol import CODECS, JPEG_PICTURE, PROTOCOL_VERSION, ProtocolError, unpack_picture
from ._widget import SimulationFrames, show

__all__ = ["CODECS", "Hub", "JPEG_PICTURE", "PROTOCOL_VERSION", "ProtocolError",
           "SimulationFrames", "ViewSettings", "Viewer", "show", "unpack_picture"]
