"""The compute splat (kernels/splat.cl) against the GL point path it replaces: the same image
within a stated tolerance, the same bits whatever the particles' order, exact sums where
hundreds of thousands of sprites land on one pixel, and live GPU frames splatted on the device."""

import numpy as np
import pytest

from orrery.engine import compute, ics
from orrery.engine.frames import Frame

from ...app.splat_images import (RIM_FRACTION, SIZE, accumulation, assert_same_image, camera_for,
                                 galaxy, moving_galaxy)


@pytest.mark.parametrize("colour_mode", ["population", "speed", "heading"])
def test_splat_and_gl_points_give_the_same_image(ctx, context, colour_mode):
    from orrery.app.render import PointStyle
    from orrery.app.render._renderer import GL_POINTS

    frames, population, view_projection = moving_galaxy(keep_inside=True)
    style = PointStyle(colour_mode=colour_mode, weights=np.array([1.0, 0.5, 0.12] + [1.0] * 13))
    splat, path = accumulation(ctx, frames, population, style, view_projection,
                               compute_context=context)
    assert path.startswith("compute splat"), path
    points, path = accumulation(ctx, frames, population, style, view_projection, splat=False)
    assert path == GL_POINTS
    assert_same_image(splat, points)


def test_a_splat_is_the_same_bits_in_any_particle_order(ctx, context):
    from orrery.app.render import PointStyle

    positions, population = galaxy()
    view_projection = camera_for(positions)
    style = PointStyle(point_size=4.0)
    first, _ = accumulation(ctx, [Frame(positions, 0.0, 0, 1)], population, style, view_projection,
                            compute_context=context)
    again, _ = accumulation(ctx, [Frame(positions, 0.0, 0, 1)], population, style, view_projection,
                            compute_context=context)
    order = np.random.default_rng(2).permutation(len(positions))
    shuffled, _ = accumulation(ctx, [Frame(positions[order], 0.0, 0, 1)], population[order], style,
                               view_projection, compute_context=context)
    assert first.sum() > 0
    assert first.tobytes() == again.tobytes() == shuffled.tobytes()


def _on_one_pixel(ctx, context, count, intensity):
    from orrery.app.render import Camera, PointStyle

    view_projection = Camera(distance=4.0).view_projection(SIZE[0] / SIZE[1])
    image, path = accumulation(ctx, [Frame(np.zeros((count, 3), np.float32), 0.0, 0, 1)],
                               np.zeros(count, np.uint8),
                               PointStyle(point_size=1.0, intensity=intensity),
                               view_projection, compute_context=context)
    assert path.startswith("compute splat")
    row, column = SIZE[1] // 2, SIZE[0] // 2
    assert np.count_nonzero(image[..., 3]) == 1 and image[row, column, 3] > 0
    return image[row, column]


def test_many_particles_on_one_pixel_add_up_exactly(ctx, context):
    from orrery.app.render._style import PALETTE
    from orrery.app.render._splat_pass import FIXED_ONE

    count = 300_000  # past where 32-bit counts at this scale (4096 sprites) or halves would stop
    pixel = _on_one_pixel(ctx, context, count, 1.0)
    assert pixel[3] == count  # each weight is exactly one unit at the sprite centre
    # each colour channel adds the same rounded count every time: the sum is exact in counts
    counts = np.floor(PALETTE[0].astype(np.float32) * np.float32(FIXED_ONE) + 0.5)
    np.testing.assert_allclose(pixel[:3], count * counts / FIXED_ONE, rtol=1e-7)


def test_a_contribution_saturates_at_the_fixed_point_cap_and_sums_never_wrap(ctx, context):
    from orrery.app.render._splat_pass import FIXED_CAP, FIXED_ONE

    count = 2000
    pixel = _on_one_pixel(ctx, context, count, 1e6)  # 1e6 units a sprite: above the cap
    np.testing.assert_allclose(pixel[:3], count * FIXED_CAP / FIXED_ONE, rtol=1e-7)
    assert pixel[3] == count


def test_a_sprite_beside_the_image_adds_its_visible_part_with_the_exact_weights(ctx, context):
    from orrery.app.render import PointStyle

    # world units are pixels: window x = world x + width / 2
    ortho = np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0])
    centre = np.array([-0.8, SIZE[1] / 2 + 0.3])  # window position, left of the image
    point = np.array([[centre[0] - SIZE[0] / 2, centre[1] - SIZE[1] / 2, 0.0]], np.float32)
    size = 5.0
    image, _ = accumulation(ctx, [Frame(point, 0.0, 0, 1)], np.zeros(1, np.uint8),
                            PointStyle(point_size=size), ortho, compute_context=context)
    rows, columns = np.indices(image.shape[:2])
    r2 = ((columns + 0.5 - centre[0]) ** 2 + (rows + 0.5 - centre[1]) ** 2) * (2 / size) ** 2
    expected = np.where(r2 <= 1, np.exp(-4 * r2), 0.0)
    assert np.count_nonzero(expected) >= 4  # two columns of the sprite are in the image
    np.testing.assert_allclose(image[..., 3], expected, rtol=1e-5, atol=2e-6)


def test_a_live_gpu_frame_is_splatted_on_its_device_and_host_frames_drawn_as_points(ctx,
                                                                                   device):
    from orrery.app.render import PointStyle
    from orrery.app.render._context import is_software
    from orrery.app.render._renderer import GL_POINTS
    from orrery.engine.solvers import make_solver

    particles = ics.plummer(20000, seed=3)
    state = make_solver("gpu-direct", device=device, softening=0.05).bind(particles)
    state.drift(0.25)
    frame = Frame(None, 0.0, 0, 1, snapshot=state.stage_positions())
    # every particle in view, a few pixels from the edges (where GL drivers clip points apart)
    view_projection = camera_for(frame.positions, fraction=1.0)
    live, path = accumulation(ctx, [frame], particles.population, PointStyle(), view_projection)
    points, points_path = accumulation(ctx, [frame], particles.population, PointStyle(),
                                       view_projection, splat=False)
    assert points_path == GL_POINTS
    if device.startswith("cuda"):
        assert path.startswith("compute splat (cuda:0, device)"), path
        assert_same_image(live, points)
    elif is_software(ctx):  # SYCL frames come through the host: the host splat on llvmpipe
        assert path.startswith("host splat"), path
        assert_same_image(live, points)
    else:  # and GL points on a GPU's GL
        assert path == GL_POINTS and live.tobytes() == points.tobytes()
    assert compute.registered_gl_buffers() == 0


@pytest.mark.parametrize("colour_mode", ["population", "speed", "heading"])
def test_the_host_splat_and_the_compute_splat_give_the_same_image_to_float_rounding(
        ctx, context, colour_mode):
    from orrery.app.render import PointStyle
    from orrery.app.render._splat_pass import FIXED_ONE

    frames, population, view_projection = moving_galaxy(keep_inside=False)
    style = PointStyle(colour_mode=colour_mode, point_size=4.0)
    device, path = accumulation(ctx, frames, population, style, view_projection,
                                compute_context=context)
    assert path.startswith("compute splat"), path
    host, path = accumulation(ctx, frames, population, style, view_projection, host_splat=True)
    assert path.startswith("host splat"), path
    # The same expressions in float32, rounded apart where a device compiler fuses products and
    # sums (OpenCL may within an expression, NVRTC everywhere) and by the device's own exp,
    # log2, sqrt and divide (OpenCL allows 3 ulp): measured on the Intel CPU device, 1.4e-4 of
    # a value (window positions an ulp apart move a weight), 5.4e-4 in heading colour (the unit
    # vector of millipixel moves); and a count a contribution, the host's weight being a product
    # of per-axis exponentials (a sprite adds at least its rim weight exp(-4) to a pixel's
    # alpha, which bounds the sprites on a pixel). The same pixels are in and out of the discs
    # but for rims where a fused r2 = ox * ox + oy * oy rounds across 1.
    same_discs = (host[..., 3] > 0) == (device[..., 3] > 0)
    assert host[..., 3].sum() > 0 and np.mean(~same_discs) <= RIM_FRACTION
    sprites = device[..., 3:] / np.exp(-4.0) + 1.0
    bound = sprites / FIXED_ONE + 1e-3 * np.abs(device)
    assert np.all((np.abs(host - device) <= bound)[same_discs])


# -- the locality order and the work-group tile (ADR 0170) ---------------------------------------

def _light(ctx, context, positions, style, view_projection, *, order=None, tile_pixels=None,
           population=None):
    """The light the compute splat draws of ``positions`` (caller order) with ``order`` as the
    scene's locality order, and its tile statistics."""
    import dataclasses

    from orrery.app.render import ParticleScene
    from orrery.app.render._splat_pass import TILE_PIXELS, SplatPass

    count = len(positions)
    scene = ParticleScene(ctx, compute=context)
    splat = SplatPass(ctx, tile_pixels=TILE_PIXELS if tile_pixels is None else tile_pixels)
    texture = ctx.texture(SIZE, 4, dtype="f4")
    try:
        scene.show(Frame(np.asarray(positions, np.float32), 0.0, 0, 1),
                   np.zeros(count, np.uint8) if population is None else population)
        if order is not None:
            scene.device = dataclasses.replace(
                scene.device, order=context.upload(np.asarray(order, np.uint32)))
        splat.draw(scene, view_projection, style, texture)
        light = np.frombuffer(texture.read(), np.float32).reshape(SIZE[1], SIZE[0], 4).copy()
        return light, splat.tile_stats()
    finally:
        texture.release()
        splat.release()
        scene.release()


# World units are pixels: window position = world (x, y) + half the image.
_PIXELS = np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0])


def _at_window(points):
    points = np.asarray(points, np.float64)
    return np.c_[points - np.array(SIZE) / 2, np.zeros(len(points))].astype(np.float32)


def _grid_order(positions, cells=64):
    """A Morton-like order: sorted by the coarse 3-D grid cell (row-major cell index) of a grid
    over the central 98% (a Plummer sphere's outliers would make the core one cell)."""
    low, high = np.percentile(positions, [1, 99], axis=0)
    cell = np.clip(((positions - low) / (high - low) * cells).astype(np.int64), 0, cells - 1)
    return np.argsort((cell[:, 0] * cells + cell[:, 1]) * cells + cell[:, 2], kind="stable")


def test_any_locality_order_gives_the_same_bits_and_the_splat_reads_it(ctx, context):
    from orrery.app.render import PointStyle

    positions, population = galaxy()
    view_projection = camera_for(positions)
    style = PointStyle(point_size=3.0)
    n = len(positions)

    def light(order, **options):
        return _light(ctx, context, positions, style, view_projection, order=order,
                      population=population, **options)

    caller, caller_stats = light(None)
    identity, _ = light(np.arange(n))
    shuffled, shuffled_stats = light(np.random.default_rng(4).permutation(n))
    grid, grid_stats = light(_grid_order(positions))
    untiled, untiled_stats = light(_grid_order(positions), tile_pixels=0)
    # with a tile of 8x8 pixels (this image is small: the default holds much of the core)
    _, small_grid = light(_grid_order(positions), tile_pixels=64)
    _, small_shuffled = light(np.random.default_rng(4).permutation(n), tile_pixels=64)
    assert caller[..., 3].sum() > 0
    assert caller.tobytes() == identity.tobytes() == shuffled.tobytes() == grid.tobytes() \
        == untiled.tobytes()
    # the grid order puts neighbours in one work-group: more sprites lie in its tile than in a
    # random group's, spread over the image
    assert untiled_stats == {"sprites": grid_stats["sprites"], "tiled": 0}
    assert caller_stats["sprites"] == grid_stats["sprites"] == shuffled_stats["sprites"] > n / 2
    assert grid_stats["tiled"] >= shuffled_stats["tiled"] > 0
    assert small_shuffled["tiled"] < small_grid["tiled"] / 2, (small_shuffled, small_grid)
    # an order that is no permutation draws other particles: the kernel reads it
    first_only, _ = light(np.zeros(n))
    assert np.count_nonzero(first_only[..., 3]) < np.count_nonzero(caller[..., 3]) / 100


def _clusters(count, centres, spread, seed=7):
    """``count`` particles around the window ``centres`` in turn (256 a work-group: each group
    in one cluster), within ``spread`` pixels."""
    rng = np.random.default_rng(seed)
    chosen = np.asarray(centres, np.float64)[(np.arange(count) // 256) % len(centres)]
    return _at_window(chosen + rng.uniform(-spread, spread, (count, 2)))


def test_a_clustered_scene_takes_the_tile_with_the_bits_of_direct_atomics(ctx, context):
    from orrery.app.render import PointStyle

    # clusters inside, across the left and the top edge, in a corner and beyond the right edge
    # (only the sprites' rims in the image); a last, partial work-group
    centres = [(40.3, 50.7), (0.4, 30.2), (80.6, SIZE[1] - 0.7), (0.8, 0.3),
               (SIZE[0] + 1.4, 60.5), (120.5, 20.5)]
    positions = _clusters(256 * 11 + 77, centres, spread=2.0)
    style = PointStyle(point_size=5.0)
    tiled, stats = _light(ctx, context, positions, style, _PIXELS)
    direct, direct_stats = _light(ctx, context, positions, style, _PIXELS, tile_pixels=0)
    assert stats["tiled"] == stats["sprites"] == direct_stats["sprites"] > 256 * 10
    assert direct_stats["tiled"] == 0
    assert tiled[..., 3].sum() > 0 and tiled.tobytes() == direct.tobytes()
    # every edge of the image is drawn on (left column, top row, right column, corner)
    assert tiled[:, 0, 3].any() and tiled[-1, :, 3].any() and tiled[:, -1, 3].any() \
        and tiled[0, 0, 3] > 0


def test_a_box_larger_than_the_tile_sums_the_sprites_in_its_window_there(ctx, context):
    from orrery.app.render import PointStyle

    # one work-group, two sprites of 3 pixels: the box is x 18..25, y 28..35, 64 pixels; their
    # pixels x 18..21 and 22..25. A tile of 63 pixels is a window 7 wide and 8 high, from x 18
    # (the mean centre 21, less half the width, inside the box): the first sprite lies in it,
    # the second adds straight into the image
    positions = _at_window([(20.25, 30.25), (23.75, 33.75)] * 128)
    style = PointStyle(point_size=3.0)
    fits, fits_stats = _light(ctx, context, positions, style, _PIXELS, tile_pixels=64)
    over, over_stats = _light(ctx, context, positions, style, _PIXELS, tile_pixels=63)
    direct, _ = _light(ctx, context, positions, style, _PIXELS, tile_pixels=0)
    assert fits_stats == {"sprites": 256, "tiled": 256}
    assert over_stats == {"sprites": 256, "tiled": 128}
    assert np.count_nonzero(fits[..., 3]) == 2 * 8  # two discs of 8 pixel centres
    drawn = np.argwhere(fits[..., 3] > 0)  # (row, column): 29..34, 19..24
    assert drawn.min(axis=0).tolist() == [29, 19] and drawn.max(axis=0).tolist() == [34, 24]
    assert fits.tobytes() == over.tobytes() == direct.tobytes()


def test_a_spread_scene_mixes_window_and_direct_sums_to_the_same_bits(ctx, context):
    from orrery.app.render import PointStyle

    # each work-group's sprites spread over the whole image: a few lie in its window
    rng = np.random.default_rng(9)
    positions = _at_window(rng.uniform(-3, np.array(SIZE) + 3, (256 * 8, 2)))
    style = PointStyle(point_size=6.0)
    mixed, stats = _light(ctx, context, positions, style, _PIXELS)
    direct, _ = _light(ctx, context, positions, style, _PIXELS, tile_pixels=0)
    assert 0 < stats["tiled"] < stats["sprites"] / 4, stats
    assert mixed[..., 3].sum() > 0 and mixed.tobytes() == direct.tobytes()


def test_contributions_too_large_for_32_bit_tile_sums_take_direct_atomics(ctx, context):
    from orrery.app.render import PointStyle
    from orrery.app.render._splat_pass import FIXED_ONE

    # 256 sprites on one pixel: a tile counter holds their sum while each particle's brightest
    # channel is at most 2^31 / 256 counts (8 units of light for palette entry 0, rgb peak 1)
    positions = _at_window([(40.5, 50.5)] * 256)
    limit = 2.0 ** 31 / 256 / FIXED_ONE
    for intensity, tiled in ((0.99 * limit, 256), (1.01 * limit, 0), (1e6, 0)):
        style = PointStyle(point_size=1.0, intensity=intensity)
        light, stats = _light(ctx, context, positions, style, _PIXELS)
        direct, _ = _light(ctx, context, positions, style, _PIXELS, tile_pixels=0)
        assert stats["tiled"] == tiled, intensity
        assert light.tobytes() == direct.tobytes()
        assert light[50, 40, 3] == 256 and light[50, 40, 2] >= 256 * min(intensity, 4095)


def test_a_live_tree_frame_is_splatted_in_its_locality_order(ctx, device):
    """A gpu-tree frame's locality order reaches the splat (CUDA: with the frame's device copy;
    SYCL: beside the positions the scene uploads to the same device): the same bits as without
    it, more work-groups in the tile, and a wrong order would show."""
    from orrery.app.render import ParticleScene, PointStyle, Renderer
    from orrery.engine.solvers import make_solver

    particles = ics.plummer(20000, seed=3)
    state = make_solver("gpu-tree", device=device, softening=0.05).bind(particles)
    state.compute_accelerations()
    snapshot = state.stage_positions()
    ordered = snapshot.locality_order
    context = compute.open_device(device)
    view_projection = camera_for(snapshot.host(), fraction=1.0)

    def draw():
        scene = ParticleScene(ctx, compute=None if device.startswith("cuda") else context)
        renderer = Renderer(ctx)
        renderer.splat.tile_pixels = 64  # 8x8: the default holds much of this small image
        try:
            renderer.resize(*SIZE)
            scene.show(Frame(None, 0.0, 0, 1, snapshot=snapshot), particles.population)
            renderer.accumulate(scene, view_projection, PointStyle())
            assert renderer.particle_path.startswith("compute splat"), renderer.particle_path
            order = scene.device.order
            return (renderer.read_accumulation().copy(), renderer.splat.tile_stats(), order,
                    scene.device.snapshots)
        finally:
            renderer.release()
            scene.release()

    in_order, stats, order, held = draw()
    assert order is ordered.device and ordered in held
    snapshot.locality_order = None
    caller, caller_stats, order, _ = draw()
    assert order is None
    assert caller[..., 3].sum() > 0 and in_order.tobytes() == caller.tobytes()
    assert stats["tiled"] > caller_stats["tiled"], (stats, caller_stats)
    n = particles.n
    snapshot.locality_order = context.device_snapshot(
        (n,), np.uint32, lambda out: out.upload(np.zeros(n, np.uint32)))
    first_only, _, _, _ = draw()
    assert np.count_nonzero(first_only[..., 3]) < np.count_nonzero(caller[..., 3]) / 100


def test_a_tile_larger_than_the_kernel_holds_is_refused(ctx):
    from orrery.app.render._splat_pass import TILE_PIXELS, SplatPass
    from orrery.engine import InvalidInputError

    splat = SplatPass(ctx, tile_pixels=0)
    for pixels in (-1, TILE_PIXELS + 1):
        with pytest.raises(InvalidInputError, match="tile_pixels"):
            splat.tile_pixels = pixels
    with pytest.raises(InvalidInputError, match="tile_pixels"):
        SplatPass(ctx, tile_pixels=TILE_PIXELS + 1)
