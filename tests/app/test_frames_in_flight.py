"""Frames queued on the GPU like a swap chain: at most ``depth`` of them, each one complete when
waited for, and every one of them done after ``drain``."""

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import headless_context  # noqa: E402
from orrery.app.render._gl_calls import FramesInFlight, _sync_calls  # noqa: E402


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_at_most_depth_frames_are_queued_and_drain_waits_for_all(depth):
    ctx = headless_context()
    output = ctx.framebuffer(color_attachments=[ctx.renderbuffer((8, 8), 4)])
    queued = FramesInFlight(ctx, depth)
    output.use()
    for shade in range(1, 8):
        ctx.clear(shade / 10, 0.0, 0.0, 1.0)
        queued.submitted()
        if _sync_calls() is not None:  # fences: the frames behind the last one may still run
            assert len(queued._fences) == min(shade, depth - 1)
    queued.drain()
    assert not queued._fences
    pixels = np.frombuffer(output.read(components=3), np.uint8).reshape(8, 8, 3)
    assert np.all(pixels[..., 0] == round(0.7 * 255)) and not pixels[..., 1:].any()
    ctx.release()


def test_a_swap_chain_holds_at_least_one_frame():
    with pytest.raises(ValueError, match="at least 1"):
        FramesInFlight(None, 0)
