"""The renderer, offscreen through EGL: pixels read back from known scenes."""

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import (  # noqa: E402
    PALETTE_SIZE, Camera, ParticleScene, PointStyle, Renderer, ToneMap, headless_context)
from orrery.app.render._style import PALETTE  # noqa: E402
from orrery.engine.contracts import FrameConsumer  # noqa: E402
from orrery.engine.frames import Frame  # noqa: E402

# Odd sizes put the centre of the view on a pixel centre, so a 1-pixel point covers one pixel.
WIDTH, HEIGHT = 65, 49


@pytest.fixture(scope="module")
def ctx():
    context = headless_context()
    yield context
    context.release()


def _accumulate(ctx, positions, *, population=None, style=None, camera=None, fmt="rgba32f",
                splat=True):
    positions = np.asarray(positions, dtype=np.float32).reshape(-1, 3)
    population = np.zeros(len(positions), np.uint8) if population is None else population
    scene = ParticleScene(ctx)
    scene.show(Frame(positions, 0.0, 0, 1), population)
    renderer = Renderer(ctx, target_format=fmt, splat=splat)
    renderer.resize(WIDTH, HEIGHT)
    camera = camera or Camera(distance=4.0)
    renderer.accumulate(scene, camera.view_projection(WIDTH / HEIGHT),
                        style or PointStyle(point_size=1.0, intensity=1.0))
    return renderer, scene


def _expected_pixel(camera, point):
    clip = camera.view_projection(WIDTH / HEIGHT) @ np.append(point, 1.0)
    ndc = clip[:2] / clip[3]
    return (int((ndc[1] + 1) / 2 * HEIGHT), int((ndc[0] + 1) / 2 * WIDTH))  # (row, column)


def test_the_scene_keeps_the_frame_consumer_contract_and_shows_a_frame_once(ctx):
    scene = ParticleScene(ctx)
    assert isinstance(scene, FrameConsumer)
    frame = Frame(np.zeros((4, 3), np.float32), 0.0, 0, 1)
    assert scene.show(frame, np.zeros(4, np.uint8))
    assert not scene.show(frame, np.zeros(4, np.uint8))


def test_particle_lands_where_the_camera_projects_it(ctx):
    camera = Camera(distance=4.0, yaw=0.3, pitch=0.2)
    point = np.array([0.4, -0.3, 0.25])
    renderer, _ = _accumulate(ctx, point, camera=camera, style=PointStyle(point_size=5.0))
    weight = renderer.read_accumulation()[..., 3]
    rows, columns = np.indices(weight.shape)
    centroid = np.array([(rows * weight).sum(), (columns * weight).sum()]) / weight.sum()
    clip = camera.view_projection(WIDTH / HEIGHT) @ np.append(point, 1.0)
    ndc = clip[:2] / clip[3]
    # continuous pixel coordinates: the centre of pixel (r, c) is at (r, c)
    expected = np.array([(ndc[1] + 1) / 2 * HEIGHT - 0.5, (ndc[0] + 1) / 2 * WIDTH - 0.5])
    np.testing.assert_allclose(centroid, expected, atol=0.25)
    assert np.count_nonzero(weight) <= 25  # a 5-px sprite
    assert np.linalg.norm(expected - [HEIGHT // 2, WIDTH // 2]) > 5  # and not at the centre


def test_coincident_particles_add_up(ctx):
    style = PointStyle(point_size=7.0, intensity=0.5)
    one, _ = _accumulate(ctx, [[0, 0, 0]], style=style)
    two, _ = _accumulate(ctx, [[0, 0, 0], [0, 0, 0]], style=style)
    single, double = one.read_accumulation(), two.read_accumulation()
    assert single.max() > 0
    np.testing.assert_allclose(double, 2 * single, rtol=1e-6)
    # the sprite is a Gaussian: brightest at the centre, falling off towards the rim
    centre = single[HEIGHT // 2, WIDTH // 2, 3]
    assert centre == pytest.approx(single[..., 3].max())
    assert 0 < single[HEIGHT // 2, WIDTH // 2 + 2, 3] < centre


def test_half_float_target_saturates_past_2048_and_single_float_does_not(ctx):
    pile = np.zeros((3000, 3))
    counts = {fmt: _accumulate(ctx, pile, fmt=fmt)[0].read_accumulation()[..., 3].max()
              for fmt in ("rgba16f", "rgba32f")}
    assert counts["rgba16f"] == 2048.0
    assert counts["rgba32f"] == pytest.approx(3000.0, rel=1e-4)


def test_tone_mapping_is_monotone_and_bounded(ctx):
    renderer = Renderer(ctx)
    renderer.resize(WIDTH, HEIGHT)
    light = np.geomspace(1e-4, 1e6, WIDTH, dtype=np.float32)
    ramp = np.zeros((HEIGHT, WIDTH, 4), np.float32)
    ramp[..., :3] = light[None, :, None]
    ramp[0] = 0.0  # bottom row: no light at all
    renderer.accumulation.write(ramp.tobytes())
    output_texture = ctx.texture((WIDTH, HEIGHT), 4, dtype="f4")
    output = ctx.framebuffer(color_attachments=[output_texture])
    renderer.present(output, ToneMap(exposure=1.0, gamma=2.2))
    shown = np.frombuffer(output.read(components=4, dtype="f4"), np.float32)
    shown = shown.reshape(HEIGHT, WIDTH, 4)
    row = shown[HEIGHT // 2, :, 0]
    assert np.all(np.diff(row) >= 0), "brighter input must never display darker"
    assert row[0] < 0.05 and row[-1] == pytest.approx(1.0) and np.all(row <= 1.0)
    assert np.all(shown[0, :, :3] == 0.0)


def test_population_colours_follow_the_palette(ctx):
    camera = Camera(distance=4.0)
    points = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.6]])
    renderer, _ = _accumulate(ctx, points, population=np.array([0, 1], np.uint8), camera=camera)
    image = renderer.read_accumulation()
    for point, label in zip(points, (0, 1)):
        colour = image[_expected_pixel(camera, point)][:3]
        np.testing.assert_allclose(colour / colour.max(), PALETTE[label] / PALETTE[label].max(),
                                   rtol=1e-4)
    assert PALETTE_SIZE == len(PALETTE)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_speed_colouring_tells_moving_from_still_particles(ctx, dtype):
    camera = Camera(distance=4.0)
    still, moving = np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.6])
    scene = ParticleScene(ctx)
    population = np.zeros(2, np.uint8)
    scene.show(Frame(np.array([still, moving], dtype), 0.0, 0, 1), population)
    many = np.array([still, moving + [0.0, 0.0, 0.01]], dtype)
    scene.show(Frame(many, 0.1, 1, 2), population)
    renderer = Renderer(ctx)
    renderer.resize(WIDTH, HEIGHT)
    renderer.accumulate(scene, camera.view_projection(WIDTH / HEIGHT),
                        PointStyle(point_size=1.0, colour_mode="speed"))
    image = renderer.read_accumulation()
    slow = image[_expected_pixel(camera, still)][:3]
    fast = image[_expected_pixel(camera, many[1])][:3]
    assert slow[2] > slow[0], "a still particle is drawn blue"
    assert fast[0] > fast[2], "the fastest particles are drawn orange"


def test_float16_frames_go_up_as_half_floats_and_draw_as_float32_would(ctx):
    rng = np.random.default_rng(3)
    # values a half float holds exactly, so both uploads describe the same points
    half = (rng.uniform(-1.0, 1.0, (200, 3)) * 64).round().astype(np.float16) / np.float16(64)
    population = (np.arange(200) % 3).astype(np.uint8)
    scene = ParticleScene(ctx)
    renderer = Renderer(ctx)
    renderer.resize(WIDTH, HEIGHT)
    view_projection = Camera(distance=4.0).view_projection(WIDTH / HEIGHT)
    images = {}
    for sequence, positions in enumerate((half, half.astype(np.float32), half), start=1):
        scene.show(Frame(positions, float(sequence), sequence, sequence), population)
        assert scene.current.size == 200 * 3 * positions.dtype.itemsize
        renderer.accumulate(scene, view_projection, PointStyle(point_size=3.0))
        images.setdefault(positions.dtype.name, []).append(renderer.read_accumulation().copy())
    assert scene.position_format == "3f2"
    assert images["float16"][0].max() > 0
    np.testing.assert_array_equal(images["float16"][0], images["float32"][0])
    np.testing.assert_array_equal(images["float16"][1], images["float32"][0])


def test_speed_scale_of_float16_frames_does_not_overflow(ctx):
    scene = ParticleScene(ctx)
    population = np.zeros(2, np.uint8)
    scene.show(Frame(np.array([[0, 0, 0], [300, 0, 0]], np.float16), 0.0, 0, 1), population)
    scene.show(Frame(np.array([[0, 0, 0], [0, 300, 0]], np.float16), 1.0, 1, 2), population)
    # median of the speeds 0 and 300*sqrt(2) (300**2 is past float16's largest value)
    assert scene.speed_scale == pytest.approx(1.0 / (150.0 * np.sqrt(2.0)), rel=1e-3)


def test_camera_fit_centres_and_frames_the_particles():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(5000, 3)) + [10.0, -4.0, 2.0]
    camera = Camera()
    camera.fit(points)
    np.testing.assert_allclose(camera.target, [10.0, -4.0, 2.0], atol=0.1)
    clip = (camera.view_projection(1.0) @ np.column_stack([points, np.ones(len(points))]).T).T
    inside = (np.abs(clip[:, :2] / clip[:, 3:4]) <= 1).all(axis=1)
    assert inside.mean() > 0.9
    distance = camera.distance
    camera.zoom(+1)
    assert camera.distance == pytest.approx(distance * Camera.ZOOM_PER_STEP)
    camera.orbit(0, -1e6)
    assert camera.pitch <= np.radians(89.0)


def test_labels_of_another_run_do_not_break_a_frame(ctx):
    scene = ParticleScene(ctx)
    assert scene.show(Frame(np.zeros((10, 3), np.float32), 0.0, 0, 1), np.ones(7, np.uint8))
    assert scene.count == 10
    assert not scene.show(Frame(np.zeros((10, 3), np.float32), 0.0, 0, 1), np.ones(7, np.uint8))


class _DeviceFrames:
    """Device frames without a GPU: snapshots whose 'device copy' is their host array, and an
    interop stand-in that writes it into the GL buffer and counts the copies."""

    def __init__(self, monkeypatch):
        from orrery.app.render import _scene
        from orrery.engine.compute import HostSnapshot

        self.copies = []
        self.snapshot_type = HostSnapshot
        frames = self

        class View:
            def __init__(self, source, glo, nbytes):
                self.buffer = next(b for b in frames.scene._buffers if b.glo == glo)

            def write(self, snapshot):
                frames.copies.append(snapshot)
                self.buffer.write(snapshot.host().tobytes())

            def release(self):
                pass

        monkeypatch.setattr(_scene, "gl_buffer_view", View)

    def frame(self, positions, sequence):
        snapshot = self.snapshot_type(np.asarray(positions, np.float32).reshape(-1, 3))
        snapshot.device = snapshot.host()  # where a GPU would hold its staging copy
        return Frame(None, float(sequence), sequence, sequence, snapshot=snapshot)


def test_device_frames_reach_the_vertex_buffers_only_when_a_gl_pass_reads_them(ctx, monkeypatch):
    frames = _DeviceFrames(monkeypatch)
    scene = frames.scene = ParticleScene(ctx)
    population = np.zeros(2, np.uint8)
    shown = [np.array([[i, 0, 0], [0, i, 0]], np.float32) for i in range(1, 5)]
    try:
        for sequence, positions in enumerate(shown[:3]):
            scene.show(frames.frame(positions, sequence), population)
        assert frames.copies == []  # nothing drew with GL: no interop copy was made
        assert np.array_equal(scene.device.current, shown[2])

        def held(buffer):
            return np.frombuffer(buffer.read(), np.float32).reshape(-1, 3)

        assert np.array_equal(held(scene.current), shown[2])
        assert np.array_equal(held(scene.previous), shown[1])
        assert len(frames.copies) == 2
        scene.show(frames.frame(shown[3], 3), population)
        assert np.array_equal(held(scene.current), shown[3])
        assert np.array_equal(held(scene.previous), shown[2])
        assert len(frames.copies) == 3  # the previous buffer already held the last frame
    finally:
        scene.release()


def test_a_renderer_that_keeps_its_vertex_arrays_draws_each_new_frame(ctx):
    style = PointStyle(point_size=1.0, intensity=1.0)
    camera = Camera(distance=4.0)
    frames = [np.array([[x, 0.0, 0.0]], np.float32) for x in (-0.5, 0.0, 0.5)]
    scene, renderer = ParticleScene(ctx), Renderer(ctx, splat=False)
    renderer.resize(WIDTH, HEIGHT)
    try:
        for sequence, positions in enumerate(frames):
            scene.show(Frame(positions, float(sequence), sequence, sequence), np.zeros(1, np.uint8))
            renderer.accumulate(scene, camera.view_projection(WIDTH / HEIGHT), style)
            shown = renderer.read_accumulation().copy()
            fresh, fresh_scene = _accumulate(ctx, positions, style=style, camera=camera,
                                             splat=False)
            assert shown.sum() > 0 and np.array_equal(shown, fresh.read_accumulation())
            fresh.release()
            fresh_scene.release()
    finally:
        renderer.release()
        scene.release()


@pytest.mark.parametrize("splat", [True, False])
def test_an_empty_first_frame_draws_nothing_and_the_next_one_draws(ctx, splat):
    renderer, scene = _accumulate(ctx, np.zeros((0, 3)), splat=splat)
    assert scene.count == 0 and not renderer.read_accumulation().any()
    scene.show(Frame(np.zeros((1, 3), np.float32), 1.0, 1, 2), np.zeros(1, np.uint8))
    renderer.accumulate(scene, Camera(distance=4.0).view_projection(WIDTH / HEIGHT),
                        PointStyle(point_size=1.0, intensity=1.0))
    assert renderer.read_accumulation()[..., 3].sum() > 0
