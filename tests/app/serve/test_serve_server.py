"""A running ``orrery serve`` under hostile clients: a seeded fuzz of the message protocol
(malformed JSON, huge messages, unknown controls, NaN, floods, wrong origins) while another
client watches. Nothing crashes or hangs, each bad connection is closed with a logged reason,
and the watching client keeps getting pictures."""

import asyncio
import json
import random

import aiohttp
import pytest

from orrery.app.serve._protocol import MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SECOND, unpack_picture

pytestmark = pytest.mark.slow

HELLO = {"type": "hello", "version": 1, "codecs": ["jpeg"], "width": 320, "height": 192}


def hostile_messages(seed: int, count: int) -> list:
    """Messages a broken or hostile client might send, drawn from a seeded generator."""
    rng = random.Random(seed)
    numbers = [float("nan"), float("inf"), -1e308, 1e308, -1, 0, 2**63, 0.5, "3", None, True,
               [1], {"a": 1}]
    fixed = ["", "{", "[]", "null", '"hello"', "{" * 5000, json.dumps({"type": "hello"}),
             json.dumps({**HELLO, "version": 99}), json.dumps({**HELLO, "codecs": []}),
             json.dumps({**HELLO, "width": 1 << 40}), "x" * (MAX_MESSAGE_BYTES + 1),
             json.dumps({"type": "ack", "sequence": 10**9}),
             '{"type": "camera", "action": "orbit", "dx": NaN}',
             json.dumps({"type": "control", "name": "../../etc/passwd", "value": 1}),
             json.dumps({"type": "control", "name": "record", "value": "/tmp/x.h5"}),
             json.dumps({"type": "control", "name": "dt", "value": "1e-3; rm -rf /"})]
    messages = list(fixed)
    kinds = ["hello", "camera", "control", "ack", "resize", "keyframe", "bogus"]
    names = ["dt", "n", "solver", "theta", "exposure", "seek", "pause", "step", "nope"]
    while len(messages) < count:
        message = {"type": rng.choice(kinds)}
        for _ in range(rng.randrange(4)):
            key = rng.choice(["name", "value", "action", "dx", "steps", "sequence", "width",
                              "input", "codecs", "zzz"])
            message[key] = rng.choice(numbers + names + [["h264"], "orbit"])
        messages.append(json.dumps(message, allow_nan=True))
    return messages


async def watch(url: str, seconds: float) -> int:
    """Pictures a well-behaved client receives in ``seconds``."""
    pictures = 0
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url) as ws:
            await ws.send_str(json.dumps(HELLO))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + seconds
            while loop.time() < deadline:
                try:
                    message = await ws.receive(timeout=deadline - loop.time())
                except asyncio.TimeoutError:
                    break
                if message.type == aiohttp.WSMsgType.BINARY:
                    pictures += 1
                    sequence = unpack_picture(message.data)[1]
                    await ws.send_str(json.dumps({"type": "ack", "sequence": sequence}))
                elif message.type != aiohttp.WSMsgType.TEXT:
                    raise AssertionError(f"the watching client lost its connection: {message}")
    return pictures


async def attack(url: str, messages: list) -> list:
    """Send each message on a fresh connection (after a hello); return how each ended."""
    endings = []
    async with aiohttp.ClientSession() as session:
        for text in messages:
            async with session.ws_connect(url, max_msg_size=0) as ws:
                await ws.send_str(json.dumps(HELLO))
                await ws.send_str(text)
                await ws.send_str(json.dumps({"type": "keyframe"}))
                # a connection still open half a second later was let stay (statistics and
                # pictures keep arriving on it meanwhile)
                deadline = asyncio.get_running_loop().time() + 0.5
                try:
                    while True:
                        left = deadline - asyncio.get_running_loop().time()
                        message = await ws.receive(timeout=max(left, 0.001))
                        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                                            aiohttp.WSMsgType.CLOSING):
                            endings.append(("closed", ws.close_code))
                            break
                except asyncio.TimeoutError:
                    endings.append(("open", None))
    return endings


async def flood(url: str) -> object:
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url) as ws:
            await ws.send_str(json.dumps(HELLO))
            for _ in range(MAX_MESSAGES_PER_SECOND * 3):
                if ws.closed:
                    break
                await ws.send_str('{"type": "camera", "action": "zoom", "steps": 0.001}')
            message = await ws.receive(timeout=10)
            while message.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                message = await ws.receive(timeout=10)
            return ws.close_code


def test_hostile_clients_close_only_their_own_connection(serve):
    server = serve("--scenario", "plummer", "--n", "2000")

    async def scenario():
        watching = asyncio.create_task(watch(server.ws, 25.0))
        endings = await attack(server.ws, hostile_messages(seed=42, count=120))
        flooded = await flood(server.ws)
        return await watching, endings, flooded

    pictures, endings, flooded = asyncio.run(scenario())
    assert server.alive(), server.output
    assert pictures > 20, "the watching client kept getting pictures"
    closed = [code for how, code in endings if how == "closed"]
    assert len(closed) > 60 and set(closed) <= {1008, 1009}, endings
    assert flooded == 1008
    assert "closed viewer" in server.output and "Traceback" not in server.output


def test_a_websocket_from_another_origin_is_refused(serve):
    server = serve("--scenario", "plummer", "--n", "500")

    async def connect(origin):
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(server.ws, headers={"Origin": origin}):
                    return "open"
            except aiohttp.WSServerHandshakeError as error:
                return error.status

    assert asyncio.run(connect("http://evil.example")) == 403
    assert asyncio.run(connect(f"http://127.0.0.1:{server.port}")) == "open"
    assert asyncio.run(connect(f"http://localhost:{server.port}")) == 403  # Host is 127.0.0.1


def test_sigterm_closes_a_recording_started_from_a_client(serve, tmp_path):
    from orrery.engine.recording import RecordingFile

    server = serve("--scenario", "plummer", "--n", "500", "--recordings", str(tmp_path))

    async def record():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(server.ws) as ws:
                await ws.send_str(json.dumps(HELLO))
                await ws.send_str(json.dumps({"type": "control", "name": "record_every",
                                              "value": 1}))
                await ws.send_str(json.dumps({"type": "control", "name": "record",
                                              "value": True}))
                while True:
                    message = await ws.receive(timeout=30)
                    if message.type == aiohttp.WSMsgType.TEXT:
                        stats = json.loads(message.data)
                        if stats["type"] == "stats" and (stats.get("recording") or [0, 0])[1] > 5:
                            return
                    elif message.type == aiohttp.WSMsgType.BINARY:
                        sequence = unpack_picture(message.data)[1]
                        await ws.send_str(json.dumps({"type": "ack", "sequence": sequence}))

    asyncio.run(record())
    assert server.stop() == 0
    (path,) = tmp_path.glob("*.h5")
    with RecordingFile(path) as recording:
        assert recording.frame_count > 5
        assert not recording.being_written


def test_a_run_over_two_mpi_ranks_is_served_from_rank_0(serve):
    from ...engine.test_distributed import _mpiexec

    server = serve("--scenario", "plummer", "--n", "1500", "--solver", "cpu-direct",
                   launcher=(_mpiexec(), "-n", "2"))

    async def steps_and_pause():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(server.ws) as ws:
                await ws.send_str(json.dumps(HELLO))
                steps, welcome = [], None
                while len(steps) < 10:
                    message = await ws.receive(timeout=60)
                    if message.type == aiohttp.WSMsgType.TEXT:
                        text = json.loads(message.data)
                        welcome = text if text["type"] == "welcome" else welcome
                        continue
                    assert message.type == aiohttp.WSMsgType.BINARY, message
                    _, sequence, _, _, step, _ = unpack_picture(message.data)
                    steps.append(step)
                    await ws.send_str(json.dumps({"type": "ack", "sequence": sequence}))
                await ws.send_str(json.dumps({"type": "control", "name": "solver",
                                              "value": "cpu-tree"}))
                refused = None
                while refused is None:
                    message = await ws.receive(timeout=30)
                    if message.type == aiohttp.WSMsgType.TEXT:
                        text = json.loads(message.data)
                        refused = text if text["type"] == "error" else None
                    else:
                        assert message.type == aiohttp.WSMsgType.BINARY, message
                        sequence = unpack_picture(message.data)[1]
                        await ws.send_str(json.dumps({"type": "ack", "sequence": sequence}))
                return steps, welcome, refused

    steps, welcome, refused = asyncio.run(steps_and_pause())
    assert steps[-1] > steps[0], "the ranks step together"
    assert sorted(welcome["controls"]) == sorted(
        ["pause", "step", "exposure", "point_size", "colour", "render", "colour_map"])
    assert refused["message"].startswith("solver: not a control of this run"), refused
    assert server.stop() == 0, server.output
    assert "Traceback" not in server.output
