"""The host splat (native/splat.cpp, app/render/_host_splat_pass.py) read back from the
accumulation target: the GL point path's image within the tolerance the compute splat is held to,
a single particle's exact sprite, the same bits for any thread count, SIMD level and particle
order, exact sums where many sprites share a pixel, and clear errors on bad input. (Against the
compute splat on a device: tests/engine/gpu/test_gpu_splat.py.)"""

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery import _native  # noqa: E402
from orrery.app.render import Camera, PointStyle, headless_context  # noqa: E402
from orrery.app.render._renderer import GL_POINTS  # noqa: E402
from orrery.app.render._splat_pass import FIXED_CAP, FIXED_ONE  # noqa: E402
from orrery.app.render._style import PALETTE  # noqa: E402
from orrery.engine.errors import InvalidInputError  # noqa: E402
from orrery.engine.frames import Frame  # noqa: E402

from .splat_images import (SIZE, accumulation, assert_same_image, camera_for, galaxy,  # noqa: E402
                           moving_galaxy)


@pytest.fixture(scope="module")
def ctx():
    context = headless_context()
    yield context
    context.release()


def _splat(positions, previous=None, *, population=None, style=PointStyle(), view_projection,
           speed_scale=1.0, threads=0, simd="", size=SIZE):
    """The native splat alone: (height, width, 4) light."""
    light = np.empty((size[1], size[0], 4), np.float32)
    population = np.zeros(len(positions), np.uint8) if population is None else population
    _native.splat_points(positions, positions if previous is None else previous, population,
                         style.palette(), ("population", "speed", "heading").index(
                             style.colour_mode), speed_scale, style.point_size, style.intensity,
                         np.asarray(view_projection, np.float32), FIXED_ONE, FIXED_CAP, light,
                         threads, simd)
    return light


@pytest.mark.parametrize("colour_mode", ["population", "speed", "heading"])
def test_the_host_splat_and_gl_points_give_the_same_image(ctx, colour_mode):
    frames, population, view_projection = moving_galaxy(keep_inside=True)
    style = PointStyle(colour_mode=colour_mode, weights=np.array([1.0, 0.5, 0.12] + [1.0] * 13))
    host, path = accumulation(ctx, frames, population, style, view_projection, host_splat=True)
    assert path.startswith("host splat ("), path
    points, path = accumulation(ctx, frames, population, style, view_projection, splat=False)
    assert path == GL_POINTS
    assert_same_image(host, points)


def test_one_particle_makes_the_sprite_with_its_exact_weights_and_colour():
    # world units are pixels: window x = world x + width / 2
    ortho = np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0])
    for centre in (np.array([40.3, 30.6]), np.array([-0.8, SIZE[1] / 2 + 0.3])):  # in, beside
        point = np.array([[centre[0] - SIZE[0] / 2, centre[1] - SIZE[1] / 2, 0.0]], np.float32)
        style = PointStyle(point_size=5.0, intensity=2.0)
        light = _splat(point, population=np.array([1], np.uint8), style=style,
                       view_projection=ortho)
        rows, columns = np.indices(light.shape[:2])
        r2 = ((columns + 0.5 - centre[0]) ** 2 + (rows + 0.5 - centre[1]) ** 2) * (2 / 5.0) ** 2
        expected = np.where(r2 <= 1, np.exp(-4 * r2), 0.0)
        assert np.count_nonzero(expected) >= 4
        np.testing.assert_allclose(light[..., 3], expected, rtol=1e-5, atol=2e-6)
        for channel in range(3):  # palette colour 1 times intensity times the weight
            np.testing.assert_allclose(light[..., channel], PALETTE[1][channel] * 2.0 * expected,
                                       rtol=1e-5, atol=4e-6)


def test_heading_colours_a_particle_by_its_direction_of_travel():
    ortho = np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0])
    point = np.array([[0.0, 0.0, 0.0]], np.float32)
    style = PointStyle(point_size=1.0, colour_mode="heading")
    for previous, colour in (([-0.1, 0.0, 0.0], (1.0, 0.5, 0.5)), ([0.0, 0.3, 0.0], (0.5, 0.0, 0.5)),
                             ([0.0, 0.0, 0.0], PALETTE[0])):  # +x red, -y no green, still: palette
        light = _splat(point, np.array([previous], np.float32), style=style,
                       view_projection=ortho)
        pixel = light[SIZE[1] // 2, SIZE[0] // 2]
        assert pixel[3] == 1.0
        np.testing.assert_allclose(pixel[:3], colour, atol=1e-6)


def test_the_host_splat_is_the_same_bits_for_any_thread_count_level_and_particle_order():
    positions, population = galaxy()
    previous = positions + np.float32(0.01)
    view_projection = camera_for(positions)
    style = PointStyle(point_size=4.0, colour_mode="speed")
    first = _splat(positions, previous, population=population, style=style,
                   view_projection=view_projection, threads=1, simd="scalar")
    assert first[..., 3].sum() > 0
    for threads in (1, 2, 3):
        for level in _native.simd_levels():
            again = _splat(positions, previous, population=population, style=style,
                           view_projection=view_projection, threads=threads, simd=level)
            assert again.tobytes() == first.tobytes(), (threads, level)
    order = np.random.default_rng(2).permutation(len(positions))
    shuffled = _splat(positions[order], previous[order], population=population[order],
                      style=style, view_projection=view_projection)
    assert shuffled.tobytes() == first.tobytes()


def test_many_particles_on_one_pixel_add_up_exactly_and_a_contribution_saturates_at_the_cap():
    view_projection = Camera(distance=4.0).view_projection(SIZE[0] / SIZE[1])
    count = 300_000  # past where float32 sums of the colour's counts would round
    origin = np.zeros((count, 3), np.float32)
    light = _splat(origin, style=PointStyle(point_size=1.0), view_projection=view_projection)
    pixel = light[SIZE[1] // 2, SIZE[0] // 2]
    assert np.count_nonzero(light[..., 3]) == 1 and pixel[3] == count
    counts = np.floor(PALETTE[0].astype(np.float32) * np.float32(FIXED_ONE) + 0.5)
    np.testing.assert_allclose(pixel[:3], count * counts / FIXED_ONE, rtol=1e-7)
    bright = _splat(origin[:2000], style=PointStyle(point_size=1.0, intensity=1e6),
                    view_projection=view_projection)[SIZE[1] // 2, SIZE[0] // 2]
    np.testing.assert_allclose(bright[:3], 2000 * FIXED_CAP / FIXED_ONE, rtol=1e-7)


def test_particles_behind_the_camera_far_away_or_not_a_number_add_no_light():
    view_projection = Camera(distance=4.0).view_projection(SIZE[0] / SIZE[1])
    positions = np.array([[0, 0, 100.0], [1e30, 0, 0], [np.nan, 0, 0], [0, np.inf, 0]],
                         np.float32)
    light = _splat(positions, style=PointStyle(point_size=3.0, colour_mode="speed"),
                   view_projection=view_projection)
    assert not light.any()
    nan_previous = _splat(np.zeros((1, 3), np.float32), np.full((1, 3), np.nan, np.float32),
                          style=PointStyle(colour_mode="speed"), view_projection=view_projection)
    assert np.isfinite(nan_previous).all() and nan_previous[..., 3].sum() > 0


def test_the_host_splat_refuses_bad_input_with_a_clear_error():
    view_projection = np.eye(4, dtype=np.float32)
    good = np.zeros((2, 3), np.float32)
    light = np.empty((4, 5, 4), np.float32)
    palette = PointStyle().palette()

    def call(position=good, previous=good, population=np.zeros(2, np.uint8), palette=palette,
             colour_mode=0, point_size=3.0, intensity=1.0, matrix=view_projection, out=light,
             cap=FIXED_CAP):
        _native.splat_points(position, previous, population, palette, colour_mode, 1.0,
                             point_size, intensity, matrix, FIXED_ONE, cap, out)

    call()
    for bad, message in ((dict(position=good.astype(np.float64)), "position must be"),
                         (dict(previous=good[:1]), "previous has the wrong shape"),
                         (dict(population=np.zeros(3, np.uint8)), "population has the wrong"),
                         (dict(palette=palette[:8]), "palette has the wrong shape"),
                         (dict(colour_mode=3), "colour_mode must be"),
                         (dict(point_size=0.0), "point_size and intensity"),
                         (dict(intensity=np.nan), "point_size and intensity"),
                         (dict(cap=2.0 ** 33), "fixed_cap in 1 .. 2\\^32"),
                         (dict(matrix=np.eye(3, dtype=np.float32)), "view_projection has"),
                         (dict(out=np.empty((4, 5, 3), np.float32)), "light has the wrong"),
                         (dict(out=np.empty((4, 5, 4), np.float64)), "light must be")):
        with pytest.raises(ValueError, match=message):
            call(**bad)
    read_only = np.empty((4, 5, 4), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="light must be writable"):
        call(out=read_only)


def test_the_renderer_splats_host_frames_where_gl_is_software_and_says_so(ctx):
    positions, population = galaxy(500)
    view_projection = camera_for(positions)
    frames = [Frame(positions, 0.0, 0, 1)]
    _, path = accumulation(ctx, frames, population, PointStyle(), view_projection)
    assert path.startswith("host splat (") and path.endswith(f"{_native.simd_level()['level']})")
    for options in (dict(splat=False), dict(host_splat=False), dict(target_format="rgba16f")):
        _, path = accumulation(ctx, frames, population, PointStyle(), view_projection, **options)
        assert path == GL_POINTS, options
    with pytest.raises(InvalidInputError, match="point size must be positive"):
        accumulation(ctx, frames, population, PointStyle(point_size=0.0), view_projection)


def test_the_current_light_is_the_targets_and_the_host_splats_own_array_where_it_drew(ctx):
    """Renderer.current_light (what the viewer's automatic exposure measures): the target's light
    on either path, and where the host splat drew it, its own array, not a read back."""
    from orrery.app.render import ParticleScene, Renderer

    positions, population = galaxy(500)
    view_projection = camera_for(positions)
    for options, host in ((dict(), True), (dict(host_splat=False), False)):
        scene, renderer = ParticleScene(ctx), Renderer(ctx, **options)
        try:
            renderer.resize(*SIZE)
            scene.show(Frame(positions, 0.0, 0, 1), population)
            renderer.accumulate(scene, view_projection, PointStyle())
            light = renderer.current_light()
            assert (light is renderer.host_splat.light) == host, options
            assert light.sum() > 0
            np.testing.assert_array_equal(light, renderer.read_accumulation())
        finally:
            renderer.release()
            scene.release()
