"""Density mode, offscreen through EGL: the splatted image's total is the mass in view, one
particle draws the kernel's shape, hidden populations add nothing; the shipped colour maps are
matplotlib's."""

import numpy as np
import pytest

from ..extras import package

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import (Camera, DensityStyle, ParticleScene, Renderer,  # noqa: E402
                               ToneMap, colour_map, colour_maps, headless_context)
from orrery.engine.errors import InvalidInputError  # noqa: E402
from orrery.engine.frames import Frame  # noqa: E402

SIZE = (129, 97)


@pytest.fixture(scope="module")
def ctx():
    context = headless_context()
    yield context
    context.release()


def _density(ctx, positions, masses, *, population=None, style=None, distance=10.0):
    positions = np.asarray(positions, np.float32).reshape(-1, 3)
    population = np.zeros(len(positions), np.uint8) if population is None else population
    scene = ParticleScene(ctx)
    scene.show(Frame(positions, 0.0, 0, 1), population)
    scene.set_masses(np.asarray(masses, np.float32))
    renderer = Renderer(ctx)
    renderer.resize(*SIZE)
    camera = Camera(distance=distance, yaw=0.0, pitch=0.0)
    renderer.accumulate(scene, camera.view_projection(SIZE[0] / SIZE[1]),
                        style or DensityStyle(smoothing=0.15, neighbours=0))
    image = renderer.read_accumulation()
    scene.release()
    renderer.release()
    return image


def test_the_image_total_is_the_mass_in_view(ctx):
    rng = np.random.default_rng(4)
    positions = rng.uniform(-1.5, 1.5, size=(400, 3))
    masses = rng.uniform(0.5, 2.0, size=400)
    total = _density(ctx, positions, masses)[..., 0].sum()
    assert total == pytest.approx(masses.sum(), rel=0.02)
    doubled = _density(ctx, positions, 2 * masses)[..., 0].sum()
    assert doubled == pytest.approx(2 * total, rel=1e-5)
    # half the particles pushed far outside the view: their mass leaves the image
    outside = positions.copy()
    outside[:200, 1] += 100.0
    assert _density(ctx, outside, masses)[..., 0].sum() == pytest.approx(masses[200:].sum(),
                                                                         rel=0.02)


def test_adaptive_smoothing_keeps_the_total_and_sharpens_dense_regions(ctx):
    rng = np.random.default_rng(5)
    dense = rng.normal(scale=0.05, size=(300, 3))
    sparse = rng.uniform(-1.5, 1.5, size=(100, 3))
    positions, masses = np.vstack([dense, sparse]), np.ones(400)
    image = _density(ctx, positions, masses, style=DensityStyle(neighbours=16))[..., 0]
    fixed = _density(ctx, positions, masses, style=DensityStyle(smoothing=0.15, neighbours=0))
    assert image.sum() == pytest.approx(400.0, rel=0.03)
    assert image.max() > 2 * fixed[..., 0].max()  # the core is not smeared over 2h = 0.3


def test_one_particle_draws_the_cubic_spline_kernel(ctx):
    image = _density(ctx, [[0.0, 0.0, 0.0]], [1.0], style=DensityStyle(smoothing=0.6, neighbours=0))[..., 0]
    cy, cx = np.unravel_index(np.argmax(image), image.shape)
    assert abs(cx - SIZE[0] // 2) <= 1 and abs(cy - SIZE[1] // 2) <= 1
    profile = image[cy, cx:] / image[cy, cx]
    support = np.flatnonzero(profile > 0)[-1] + 1  # pixels to the kernel's edge, 2h
    q = 2.0 * np.arange(support) / support
    expected = np.where(q < 1, 1 - 1.5 * q**2 + 0.75 * q**3, 0.25 * (2 - q) ** 3)
    np.testing.assert_allclose(profile[:support], expected, atol=0.06)
    assert image.sum() == pytest.approx(1.0, rel=0.01)


def test_a_hidden_population_adds_nothing(ctx):
    positions = [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]
    weights = np.ones(16)
    weights[1] = 0.0
    image = _density(ctx, positions, [1.0, 1.0], population=np.array([0, 1], np.uint8),
                     style=DensityStyle(smoothing=0.15, neighbours=0, weights=weights))
    assert image[..., 0].sum() == pytest.approx(1.0, rel=0.02)


def test_the_density_image_goes_through_the_colour_map_with_a_colour_bar(ctx):
    scene = ParticleScene(ctx)
    rng = np.random.default_rng(1)
    scene.show(Frame(rng.normal(size=(2000, 3)).astype(np.float32), 0.0, 0, 1),
               np.zeros(2000, np.uint8))
    renderer = Renderer(ctx)
    output = ctx.framebuffer(color_attachments=[ctx.renderbuffer(SIZE, 4)])
    style = DensityStyle(colour_map="viridis")
    renderer.render(scene, Camera(distance=8.0).view_projection(SIZE[0] / SIZE[1]), style,
                    ToneMap(), output)
    pixels = np.frombuffer(output.read(components=3), np.uint8).reshape(SIZE[1], SIZE[0], 3)
    lut = (colour_map("viridis") * 255).astype(int)
    centre = pixels[SIZE[1] // 2, SIZE[0] // 2].astype(int)
    assert np.abs(lut - centre).sum(axis=1).min() <= 6  # a colour of the map
    bar_row = pixels[16 + 6]  # the colour bar, bottom rows (GL's first rows)
    # its right end shows the map's last colours, its left end the first ones
    assert np.abs(lut[-16:] - bar_row[-17].astype(int)).sum(axis=1).min() <= 6
    bar_start = int(SIZE[0] * 0.75) - 16 + 1
    assert np.abs(lut[:16] - bar_row[bar_start].astype(int)).sum(axis=1).min() <= 6
    assert renderer.density.smoothing > 0 and renderer.density.density_range is not None
    scene.release()
    renderer.release()


def test_shipped_colour_maps_are_matplotlibs():
    matplotlib = package("matplotlib")
    assert set(colour_maps()) >= {"viridis", "magma", "inferno", "plasma", "cividis"}
    for name in colour_maps():
        expected = matplotlib.colormaps[name](np.linspace(0, 1, 256))[:, :3]
        np.testing.assert_allclose(colour_map(name), expected, atol=1e-6)


@pytest.mark.parametrize("options, message", [
    ({"smoothing": -1.0}, "smoothing"), ({"colour_map": "jet"}, "colour map"),
    ({"quantity": "mass"}, "quantity"), ({"density_range": (2.0, 1.0)}, "density_range"),
])
def test_bad_density_settings_are_refused(options, message):
    with pytest.raises(InvalidInputError, match=message):
        DensityStyle(**options).validate()
