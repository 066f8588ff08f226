"""The host tone map (app/render/_host_tone_map.py): a renderer that keeps the host splat's light
on the host gives the picture GL's tone-map pass draws and reads back, to within one step of
255 a value on a few pixels, at any exposure and while a still picture is refined, and its
yuv420p frame is the GPU pass's conversion of that picture; GL still gets the light where it is
presented or read."""

from dataclasses import replace

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import ParticleScene, PointStyle, Renderer, ToneMap  # noqa: E402
from orrery.app.render import headless_context  # noqa: E402
from orrery.app.render._host_tone_map import MANTISSA_BITS, HostToneMap, tone_table  # noqa: E402
from orrery.app.render._yuv420_pass import Yuv420Pass  # noqa: E402

from .splat_images import SIZE, moving_galaxy  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    context = headless_context()
    yield context
    context.release()


def _gl_picture(ctx, renderer, tone):
    """GL's tone-map pass (tonemap.frag) of the renderer's light, read back top row first."""
    renderer.read_accumulation()  # the host's light into the target
    colour = ctx.texture(SIZE, 4)
    target = ctx.framebuffer(color_attachments=[colour])
    try:
        target.use()
        renderer.tone_map.draw(renderer.accumulation,
                               replace(tone, exposure=tone.exposure * renderer.light_scale))
        return _read(target)
    finally:
        target.release()
        colour.release()


def _read(target):
    pixels = np.frombuffer(target.read(components=3, alignment=1), np.uint8)
    return pixels.reshape(SIZE[1], SIZE[0], 3)[::-1]


def _assert_within_a_step(host, gl):
    difference = np.abs(host.astype(int) - gl.astype(int))
    assert difference.max() <= 1
    assert np.count_nonzero(difference) <= 0.01 * difference.size
    assert np.count_nonzero(gl) > 0.05 * gl.size  # the galaxy is in the picture


@pytest.mark.parametrize("exposure", [0.05, 0.6, 8.0])
def test_the_host_picture_is_the_gl_tone_maps(ctx, exposure):
    frames, population, view_projection = moving_galaxy(keep_inside=False)
    scene = ParticleScene(ctx)
    renderer = Renderer(ctx, host_splat=True)
    tone = ToneMap(exposure=exposure)
    try:
        renderer.resize(*SIZE)
        for frame in frames:
            scene.show(frame, population)
        renderer.accumulate(scene, view_projection, PointStyle(colour_mode="speed"))
        host = renderer.host_picture(tone)
        assert host.shape == (SIZE[1], SIZE[0], 4) and host.dtype == np.uint8  # RGBX
        # the light goes into GL only now, for the pass
        _assert_within_a_step(host[..., :3], _gl_picture(ctx, renderer, tone))
    finally:
        renderer.release()
        scene.release()


def test_a_refined_picture_is_tone_mapped_with_its_light_scale(ctx):
    frames, population, view_projection = moving_galaxy(keep_inside=False)
    scene = ParticleScene(ctx)
    renderer = Renderer(ctx, host_splat=True, max_drawn=5000)
    tone = ToneMap()
    try:
        renderer.resize(*SIZE)
        scene.show(frames[0], population)
        renderer.accumulate(scene, view_projection, PointStyle())
        assert renderer.light_scale > 1  # a sample, its light scaled up
        _assert_within_a_step(renderer.host_picture(tone)[..., :3],
                              _gl_picture(ctx, renderer, tone))
        while renderer.refining:  # the next stretches of the still picture, added to its light
            renderer.accumulate(scene, view_projection, PointStyle())
            _assert_within_a_step(renderer.host_picture(tone)[..., :3],
                                  _gl_picture(ctx, renderer, tone))
        assert renderer.light_scale == 1
    finally:
        renderer.release()
        scene.release()


def test_the_host_yuv420_frame_is_the_gpu_pass_conversion_of_the_host_picture(ctx):
    frames, population, view_projection = moving_galaxy(keep_inside=False)
    size = (SIZE[0] - SIZE[0] % 2, SIZE[1] - SIZE[1] % 2)  # yuv420p frames have even sides
    scene = ParticleScene(ctx)
    renderer = Renderer(ctx, host_splat=True)
    tone = ToneMap(exposure=0.6)
    try:
        renderer.resize(*size)
        scene.show(frames[-1], population)
        renderer.accumulate(scene, view_projection, PointStyle(colour_mode="speed"))
        frame = renderer.host_picture(tone, yuv420=True)
        assert frame.shape == (size[1] * 3 // 2, size[0]) and frame.dtype == np.uint8
        # the GPU's conversion (yuv420.frag, here on llvmpipe) of the RGBX host picture
        picture = ctx.texture(size, 4, renderer.host_picture(tone)[::-1].tobytes())
        gpu = Yuv420Pass(ctx, picture, size)
        try:
            gpu.submit()
            converted = gpu.collect()
        finally:
            gpu.release()
            picture.release()
        difference = np.abs(frame.astype(int) - converted.astype(int))
        assert difference.max() <= 1  # fixed point against the shader's floats
        assert np.count_nonzero(difference) <= 0.001 * difference.size
        assert np.count_nonzero(converted[:size[1]] > 16) > 0.05 * size[0] * size[1]  # lit
    finally:
        renderer.release()
        scene.release()


def test_no_host_picture_without_host_light_or_with_bloom(ctx):
    frames, population, view_projection = moving_galaxy(keep_inside=False)
    scene = ParticleScene(ctx)
    scene.show(frames[0], population)
    gl_points = Renderer(ctx, splat=False)
    keeps = Renderer(ctx, host_splat=True)
    try:
        for renderer in (gl_points, keeps):
            renderer.resize(*SIZE)
            renderer.accumulate(scene, view_projection, PointStyle())
        assert gl_points.host_picture(ToneMap()) is None
        assert keeps.host_picture(ToneMap(bloom=0.5)) is None
        # read back, the target holds the light kept on the host
        np.testing.assert_array_equal(keeps.read_accumulation(), keeps.host_splat.light)
    finally:
        for renderer in (gl_points, keeps):
            renderer.release()
        scene.release()


@pytest.mark.parametrize("bloom", [0.0, 0.5])
def test_present_copies_the_host_picture_in_and_leaves_bloom_to_gl(ctx, bloom):
    """Where the host splat drew, present() shows the host's picture, every pixel (nothing of
    the light goes into GL); with bloom it draws GL's pass, whose glow the host cannot."""
    frames, population, view_projection = moving_galaxy(keep_inside=False)
    scene = ParticleScene(ctx)
    renderer = Renderer(ctx, host_splat=True)
    colour = ctx.texture(SIZE, 4)
    target = ctx.framebuffer(color_attachments=[colour])
    elsewhere = ctx.simple_framebuffer((4, 4))
    tone = ToneMap(exposure=0.6, bloom=bloom)
    try:
        renderer.resize(*SIZE)
        scene.show(frames[0], population)
        renderer.accumulate(scene, view_projection, PointStyle())
        elsewhere.use()
        renderer.present(target, tone)
        assert ctx.fbo == target  # what draws next (the window's panel) draws over the picture
        shown = _read(target)
        if bloom:
            np.testing.assert_array_equal(shown, _gl_picture(ctx, renderer, tone))
        else:
            assert not renderer._host_light_uploaded  # the float light stayed on the host
            np.testing.assert_array_equal(shown, renderer.host_picture(tone)[..., :3])
            _assert_within_a_step(shown, _gl_picture(ctx, renderer, tone))
    finally:
        elsewhere.release()
        target.release()
        colour.release()
        renderer.release()
        scene.release()


def test_the_native_picture_is_the_table_looked_up_in_either_row_order():
    rng = np.random.default_rng(5)
    light = (rng.lognormal(0.0, 2.0, (7, 5, 4)) * (rng.random((7, 5, 1)) < 0.6)).astype(np.float32)
    light[0, 0, 0], light[1, 1, 1], light[2, 2, 2] = np.inf, np.nan, -1.0
    tone = ToneMap(exposure=0.3)
    table = tone_table(tone.exposure, tone.gamma)
    expected = table[light.view(np.uint32) >> (23 - MANTISSA_BITS)]
    expected[..., 3] = 255
    host = HostToneMap()
    np.testing.assert_array_equal(host.apply(light, tone, top_first=False), expected)
    np.testing.assert_array_equal(host.apply(light, tone), expected[::-1])


def test_the_table_maps_every_float_as_the_shader_would():
    table = tone_table(1.0, 2.2)
    light = np.array([0.0, -3.0, np.nan, np.inf, 1e-12, 1e6], np.float32)
    picture = HostToneMap().apply(np.tile(light[None, :, None], (1, 1, 4)), ToneMap(exposure=1.0))
    assert picture[0, :, 0].tolist() == [0, 0, 0, 255, 0, 255]
    finite = table[: (0x7F800000 >> 13) + 1]  # +0 up to +inf: rising as the curve does
    assert table.dtype == np.uint8 and np.all(np.diff(finite.astype(int)) >= 0)
    with pytest.raises(ValueError, match="bloom"):
        HostToneMap().apply(np.zeros((2, 2, 4), np.float32), ToneMap(bloom=0.3))
    with pytest.raises(ValueError, match="bloom"):
        HostToneMap.yuv420(np.zeros((2, 2, 4), np.float32), ToneMap(bloom=0.3))
    with pytest.raises(ValueError, match="even"):
        HostToneMap.yuv420(np.zeros((3, 2, 4), np.float32), ToneMap())
