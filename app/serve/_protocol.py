"""The served stream's wire format (docs/serve-protocol.md): what a client may send, checked
before anything acts on it, and the header every encoded picture travels behind.

Client to server: JSON text messages, one object each, at most ``MAX_MESSAGE_BYTES``; a
message that is not one of ``MESSAGE_TYPES`` with the fields that type takes, or that carries a
value out of range (NaN included), raises :class:`ProtocolError`, which closes that client's
connection and nothing else. Server to client: JSON text messages (``welcome``, ``stream``,
``settings``, ``stats``, ``error``) and binary pictures: a ``PICTURE_HEADER`` then the payload.
"""

from __future__ import annotations

import json
import math
import struct

from ...engine.errors import OrreryError

# Bumped when a message changes meaning; a client names the version it speaks in ``hello``.
PROTOCOL_VERSION = 1
# Largest text message a client may send: an input event is under 200 bytes.
MAX_MESSAGE_BYTES = 4096
# Messages a client may send in any one second before its connection is closed: pointer
# moves arrive at the display's rate (60-240 a second), acknowledgements at the frame rate.
MAX_MESSAGES_PER_SECOND = 600
# Largest picture a client may ask for, a side (a 4K display at device pixel ratio 2 is 7680).
MAX_PICTURE_SIDE = 4096
MIN_PICTURE_SIDE = 16

# kind (uint8), 3 bytes padding, picture sequence (uint32), server time the picture's
# simulation frame was taken in ms (float64, time.time()), the last input the picture shows
# (uint32), the simulation step it shows (uint32): 24 bytes, little-endian.
PICTURE_HEADER = struct.Struct("<BxxxIdII")
KEY_PICTURE, DELTA_PICTURE, JPEG_PICTURE = 1, 2, 3

CAMERA_ACTIONS = ("orbit", "pan", "zoom", "reset")
CODECS = ("h264", "jpeg")


class ProtocolError(OrreryError, ValueError):
    """A client's message that breaks the protocol; its connection is closed with this reason."""


def pack_picture(kind: int, sequence: int, made: float, input_sequence: int, step: int,
                 payload: bytes) -> bytes:
    return PICTURE_HEADER.pack(kind, sequence & 0xFFFFFFFF, made * 1e3,
                               input_sequence & 0xFFFFFFFF, step & 0xFFFFFFFF) + payload


def unpack_picture(message: bytes) -> tuple[int, int, float, int, int, bytes]:
    """(kind, sequence, made in seconds, input sequence, step, payload): for Python clients."""
    kind, sequence, made, input_sequence, step = PICTURE_HEADER.unpack_from(message)
    return kind, sequence, made / 1e3, input_sequence, step, message[PICTURE_HEADER.size:]


def parse(text: str | bytes) -> dict:
    """One client message, checked: its type, its fields and their ranges."""
    if len(text) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(text)} bytes (at most {MAX_MESSAGE_BYTES})")
    try:
        message = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"not JSON: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message is a JSON object")
    kind = message.get("type")
    checker = _CHECKS.get(kind) if isinstance(kind, str) else None
    if checker is None:
        raise ProtocolError(f"unknown message type {kind!r}")
    allowed = _FIELDS[kind] | {"type", "input"}
    extra = set(message) - allowed
    if extra:
        raise ProtocolError(f"{kind}: unknown fields {sorted(extra)}")
    if "input" in message:
        message["input"] = _integer(message, "input", 0, 2**32 - 1)
    checker(message)
    return message


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _number(message: dict, name: str, low: float, high: float, *, default=None) -> float:
    value = message.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or not low <= value <= high:
        raise ProtocolError(f"{message['type']}: {name} must be a number from {low:g} to "
                            f"{high:g}, got {value!r}")
    return float(value)


def _integer(message: dict, name: str, low: int, high: int) -> int:
    value = message.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolError(f"{message['type']}: {name} must be an integer from {low} to {high}, "
                            f"got {value!r}")
    return value


def _check_size(message: dict) -> None:
    for name in ("width", "height"):
        message[name] = _integer(message, name, MIN_PICTURE_SIDE, MAX_PICTURE_SIDE)


def _check_hello(message: dict) -> None:
    message["version"] = _integer(message, "version", 1, 2**16)
    codecs = message.get("codecs")
    if not isinstance(codecs, list) or not codecs or len(codecs) > 8 or \
            not all(isinstance(codec, str) for codec in codecs):
        raise ProtocolError(f"hello: codecs must be a list of names, got {codecs!r}")
    message["codecs"] = [codec for codec in codecs if codec in CODECS]
    if not message["codecs"]:
        raise ProtocolError(f"hello: none of the codecs {codecs} is served (served: {CODECS})")
    _check_size(message)


def _check_camera(message: dict) -> None:
    action = message.get("action")
    if action not in CAMERA_ACTIONS:
        raise ProtocolError(f"camera: action must be one of {CAMERA_ACTIONS}, got {action!r}")
    for name in ("dx", "dy", "steps"):
        if name in message:
            message[name] = _number(message, name, -1e4, 1e4)


def _check_control(message: dict) -> None:
    name = message.get("name")
    if not isinstance(name, str) or not name or len(name) > 64:
        raise ProtocolError(f"control: name must be a short string, got {name!r}")
    value = message.get("value")
    if isinstance(value, float) and not math.isfinite(value):
        raise ProtocolError(f"control {name}: value must be finite")
    if not (value is None or isinstance(value, (bool, int, float)) or
            (isinstance(value, str) and len(value) <= 256)):
        raise ProtocolError(f"control {name}: value must be a number, a boolean or a short "
                            f"string, got {type(value).__name__}")


def _check_ack(message: dict) -> None:
    message["sequence"] = _integer(message, "sequence", 0, 2**32 - 1)


_CHECKS = {"hello": _check_hello, "resize": _check_size, "camera": _check_camera,
           "control": _check_control, "ack": _check_ack, "keyframe": lambda message: None}
_FIELDS = {"hello": {"version", "codecs", "width", "height"},
           "resize": {"width", "height"},
           "camera": {"action", "dx", "dy", "steps"},
           "control": {"name", "value"},
           "ack": {"sequence"},
           "keyframe": set()}
MESSAGE_TYPES = tuple(_CHECKS)
