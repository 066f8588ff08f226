"""Bloom in the tone-map pass: light above the threshold glows onto its neighbourhood, light
below it does not, and strength 0 leaves the image as it was."""

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import (Camera, ParticleScene, PointStyle, Renderer, ToneMap,  # noqa: E402
                               headless_context)
from orrery.engine.errors import InvalidInputError  # noqa: E402
from orrery.engine.frames import Frame  # noqa: E402

SIZE = (65, 49)


def _image(tone, intensity):
    ctx = headless_context()
    scene = ParticleScene(ctx)
    scene.show(Frame(np.zeros((1, 3), np.float32), 0.0, 0, 1), np.zeros(1, np.uint8))
    renderer = Renderer(ctx)
    output = ctx.framebuffer(color_attachments=[ctx.renderbuffer(SIZE, 4)])
    renderer.render(scene, Camera(distance=4.0).view_projection(SIZE[0] / SIZE[1]),
                    PointStyle(point_size=3.0, intensity=intensity), tone, output)
    pixels = np.frombuffer(output.read(components=3), np.uint8).reshape(SIZE[1], SIZE[0], 3)
    ctx.release()
    return pixels.max(axis=2).astype(int)


def test_bright_light_glows_and_dim_light_does_not():
    plain = _image(ToneMap(bloom=0.0), intensity=50.0)
    glowing = _image(ToneMap(bloom=1.0, bloom_threshold=1.0), intensity=50.0)
    ring = np.ones_like(plain, bool)
    ring[SIZE[1] // 2 - 3: SIZE[1] // 2 + 4, SIZE[0] // 2 - 3: SIZE[0] // 2 + 4] = False
    assert plain[ring].max() == 0            # a 3-pixel sprite lights nothing this far out
    assert glowing[ring].max() > 20          # the bloom does
    dim = _image(ToneMap(bloom=1.0, bloom_threshold=1.0), intensity=0.5)
    assert dim[ring].max() == 0              # below the threshold: no glow


def test_bloom_settings_are_checked():
    with pytest.raises(InvalidInputError, match="bloom"):
        ToneMap(bloom=-1.0).validate()
    with pytest.raises(InvalidInputError, match="bloom threshold"):
        ToneMap(bloom_threshold=float("nan")).validate()
