"""The served stream's wire format: every client message is checked before anything acts on it,
and the picture header and the codec name read back as written."""

import io
import json
import math

import av
import numpy as np
import pytest
from PIL import Image

from orrery.app.serve._encoder import H264Encoder, JpegEncoder, codec_string
from orrery.app.serve._protocol import (DELTA_PICTURE, JPEG_PICTURE, KEY_PICTURE,
                                        MAX_MESSAGE_BYTES, ProtocolError, pack_picture, parse,
                                        unpack_picture)

HELLO = {"type": "hello", "version": 1, "codecs": ["h264", "jpeg"], "width": 640, "height": 360}


def test_a_hello_and_each_input_parse_as_sent():
    assert parse(json.dumps(HELLO)) == HELLO
    assert parse('{"type": "camera", "action": "orbit", "dx": 3, "dy": -2.5, "input": 7}') == \
        {"type": "camera", "action": "orbit", "dx": 3.0, "dy": -2.5, "input": 7}
    assert parse('{"type": "control", "name": "dt", "value": 0.01}')["value"] == 0.01
    assert parse('{"type": "ack", "sequence": 12}')["sequence"] == 12


@pytest.mark.parametrize("text", [
    "not json", "[1, 2]", '"hello"', "{}", '{"type": 3}', '{"type": "shutdown"}',
    '{"type": "camera", "action": "fly"}',
    '{"type": "camera", "action": "orbit", "dx": NaN}',
    '{"type": "camera", "action": "orbit", "dx": Infinity}',
    '{"type": "camera", "action": "zoom", "steps": 1e300}',
    '{"type": "camera", "action": "orbit", "dx": "3"}',
    '{"type": "camera", "action": "orbit", "extra": 1}',
    '{"type": "control", "name": "", "value": 1}',
    '{"type": "control", "name": "dt", "value": [1, 2]}',
    '{"type": "control", "name": "dt", "value": {"a": 1}}',
    '{"type": "ack", "sequence": -1}', '{"type": "ack", "sequence": true}',
    '{"type": "hello", "version": 1, "codecs": ["hevc"], "width": 640, "height": 360}',
    '{"type": "hello", "version": 1, "codecs": "h264", "width": 640, "height": 360}',
    '{"type": "hello", "version": 1, "codecs": ["h264"], "width": 100000, "height": 360}',
    '{"type": "hello", "version": 1, "codecs": ["h264"], "width": 8, "height": 360}',
    '{"type": "resize", "width": 640.5, "height": 360}',
    '{"type": "ack", "sequence": 1, "input": -3}',
    "[" * 100_000,
])
def test_a_malformed_or_hostile_message_is_a_protocol_error(text):
    with pytest.raises(ProtocolError):
        parse(text)


def test_a_message_beyond_the_size_limit_is_refused_before_it_is_parsed():
    huge = json.dumps({"type": "control", "name": "x" * MAX_MESSAGE_BYTES, "value": 1})
    with pytest.raises(ProtocolError, match="bytes"):
        parse(huge)


def test_the_picture_header_reads_back():
    message = pack_picture(KEY_PICTURE, 5, 1700000000.25, 9, 123, b"payload")
    kind, sequence, made, input_sequence, step, payload = unpack_picture(message)
    assert (kind, sequence, input_sequence, step, payload) == (KEY_PICTURE, 5, 9, 123, b"payload")
    assert math.isclose(made, 1700000000.25)


def picture(seed, size=(320, 240)):
    rng = np.random.default_rng(seed)
    image = np.zeros((size[1], size[0], 3), np.uint8)
    image[rng.integers(0, size[1], 500), rng.integers(0, size[0], 500)] = 255
    return image


def test_h264_pictures_decode_and_name_their_codec():
    encoder = H264Encoder((320, 240))
    decoder = av.CodecContext.create("h264", "r")
    kinds, decoded = [], []
    for index in range(6):
        kind, data = encoder.encode(picture(index), key=index == 4)
        kinds.append(kind)
        decoded += decoder.decode(av.Packet(data))
    assert kinds == [KEY_PICTURE, DELTA_PICTURE, DELTA_PICTURE, DELTA_PICTURE, KEY_PICTURE,
                     DELTA_PICTURE]
    assert len(decoded) == 6, "one picture out for every picture in: no look-ahead"
    assert encoder.codec_string.startswith("avc1.42")  # x264's constrained baseline
    assert decoded[-1].to_ndarray(format="rgb24").shape == (240, 320, 3)


def test_the_codec_name_comes_from_the_sequence_parameter_set():
    assert codec_string(b"\x00\x00\x00\x01\x67\x42\xc0\x1f\xaa") == "avc1.42C01F"
    with pytest.raises(ValueError):
        codec_string(b"\x00\x00\x01\x65\x88")


def test_jpeg_pictures_are_each_a_key_picture():
    kind, data = JpegEncoder((320, 240)).encode(picture(1))
    assert kind == JPEG_PICTURE
    assert Image.open(io.BytesIO(data)).size == (320, 240)
