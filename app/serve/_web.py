"""The served page and its WebSocket, on one TCP port (aiohttp), so one ``ssh -L`` carries all of it.

Who may connect: every request needs the server's token, as Jupyter asks for its own: in the
URL (``?token=``), after which the page's cookie carries it, or in an ``Authorization: token``
header; tokens are compared in constant time. A WebSocket's ``Origin`` must name the host the
request was sent to (the ``Host`` header, so a port forwarded by ssh works and a page of another
site cannot connect). A client's messages are bounded in size and rate and checked by
``_protocol.parse``; one that breaks the protocol is closed with the reason logged, and the run
and the other clients go on.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from importlib import resources
from urllib.parse import urlsplit

from ...engine._optional import require
from ._hub import Hub
from ._protocol import MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SECOND, ProtocolError, parse

log = logging.getLogger("orrery.serve")

TOKEN_COOKIE = "orrery_token"
# Messages waiting for a slow client before its connection is closed: pictures are bounded by
# the acknowledgement window and statistics replace each other, so only a client that stopped
# reading fills this.
MAX_OUTBOX = 64
# The page's files, served from the package (no CDN, no build step).
CLIENT_FILES = {"/": ("index.html", "text/html"), "/client.js": ("client.js", "text/javascript"),
                "/client.css": ("client.css", "text/css")}


def client_file(name: str) -> str:
    return resources.files(__package__).joinpath("client", name).read_text(encoding="utf-8")


def new_token() -> str:
    return secrets.token_urlsafe(24)


class _Outbox:
    """What one client is yet to be sent, filled from the render thread: statistics replace the
    previous statistics not yet sent; everything else waits its turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._items: deque = deque()
        self._ready = asyncio.Event()
        self.overflowed = False

    def deliver(self, message: str | bytes) -> None:  # any thread (a StreamConsumer)
        self._loop.call_soon_threadsafe(self._put, message)

    def _put(self, message) -> None:
        if isinstance(message, str) and message.startswith('{"type": "stats"'):
            self._items = deque(item for item in self._items
                                if not (isinstance(item, str) and
                                        item.startswith('{"type": "stats"')))
        self._items.append(message)
        if len(self._items) > MAX_OUTBOX:
            self.overflowed = True
        self._ready.set()

    async def get(self):
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


def make_app(hub: Hub, token: str):
    """The aiohttp application: the page, its two files and ``/ws``."""
    web = require("aiohttp.web")
    app = web.Application(client_max_size=MAX_MESSAGE_BYTES)

    def authorised(request) -> bool:
        offered = (request.query.get("token") or request.cookies.get(TOKEN_COOKIE)
                   or request.headers.get("Authorization", "").removeprefix("token ").strip())
        return bool(offered) and secrets.compare_digest(offered.encode(), token.encode())

    def refuse(request):
        log.warning("refused %s %s from %s: no valid token", request.method, request.path,
                    request.remote)
        return web.Response(status=403, text="Orrery: this server needs its token; open the URL "
                                             "it printed (…/?token=…).\n")

    async def page(request):
        if not authorised(request):
            return refuse(request)
        name, content_type = CLIENT_FILES[request.path]
        response = web.Response(text=client_file(name), content_type=content_type,
                                headers={"Cache-Control": "no-store"})
        if request.query.get("token"):
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        return response

    async def socket(request):
        if not authorised(request):
            return refuse(request)
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            log.warning("refused a WebSocket from origin %s (host %s)", origin, request.host)
            return web.Response(status=403, text="Orrery: cross-origin WebSocket refused\n")
        ws = web.WebSocketResponse(compress=False, heartbeat=20.0, max_msg_size=MAX_MESSAGE_BYTES)
        await ws.prepare(request)
        await serve_socket(hub, ws, request.remote)
        return ws

    for path in CLIENT_FILES:
        app.router.add_get(path, page)
    app.router.add_get("/ws", socket)
    return app


async def serve_socket(hub: Hub, ws, peer: str | None) -> None:
    """Carry one client's messages between ``ws`` and a viewer of ``hub``."""
    web = require("aiohttp.web")
    outbox = _Outbox(asyncio.get_running_loop())
    viewer = hub.attach(outbox)

    async def send_loop():
        while not ws.closed:
            message = await outbox.get()
            if outbox.overflowed:
                raise ProtocolError(f"the client reads nothing ({MAX_OUTBOX} messages waiting)")
            if isinstance(message, bytes):
                await ws.send_bytes(message)
            else:
                await ws.send_str(message)

    sender = asyncio.create_task(send_loop())
    arrivals: deque[float] = deque()
    reason = None
    try:
        async for message in ws:
            if message.type == web.WSMsgType.TEXT:
                now = time.monotonic()
                arrivals.append(now)
                while arrivals and arrivals[0] < now - 1.0:
                    arrivals.popleft()
                if len(arrivals) > MAX_MESSAGES_PER_SECOND:
                    raise ProtocolError(f"more than {MAX_MESSAGES_PER_SECOND} messages a second")
                await asyncio.to_thread(viewer.receive, parse(message.data)) \
                    if _may_block(message.data) else viewer.receive(parse(message.data))
            elif message.type == web.WSMsgType.BINARY:
                raise ProtocolError("binary messages are not part of the protocol")
            elif message.type == web.WSMsgType.ERROR:
                reason = f"connection error: {ws.exception()}"
                break
            if sender.done():
                sender.result()  # raises what stopped it
    except ProtocolError as error:
        reason = str(error)
        log.warning("closed viewer %d (%s): %s", viewer.number, peer, reason)
        await ws.close(code=1008, message=reason[:120].encode())
    except (ConnectionError, asyncio.CancelledError):
        reason = "connection lost"
    finally:
        sender.cancel()
        hub.detach(viewer)
    if reason is None and sender.done() and not sender.cancelled() and sender.exception():
        log.warning("viewer %d: %s", viewer.number, sender.exception())


def _may_block(text: str) -> bool:
    # Controls go through the runner's bounded queue, which can wait up to its QUEUE_WAIT for
    # room: run them off the event loop so other clients' pictures keep flowing.
    return '"control"' in text
