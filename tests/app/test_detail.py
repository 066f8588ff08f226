"""Levels of detail (app/render/_detail.py, ADR 0290), read back from the accumulation target:
a subsample's light stands for every particle's, its picture converges to the whole as more are
drawn, a still picture is refined to every particle, and the plan's stretches follow the frame
time. GL points and the host splat here; the compute splat on each device too."""

import time

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.render import (  # noqa: E402
    Camera, ParticleScene, PointStyle, Renderer, headless_context, represented_count,
    sample_labels)
from orrery.app.cli import build_parser as orrery_parser  # noqa: E402
from orrery.app.cli import main  # noqa: E402
from orrery.app.render._detail import (  # noqa: E402
    DEFAULT_MAX_DRAWN, FRAME_BUDGET_S, MOST_GROWTH, LevelOfDetail, drawn_sentence)
from orrery.app.viewer import main as viewer_main  # noqa: E402
from orrery.app.viewer._main import build_parser, open_source  # noqa: E402
from orrery.engine import compute  # noqa: E402
from orrery.engine.errors import InvalidInputError  # noqa: E402
from orrery.engine.frames import Frame  # noqa: E402

SIZE = (96, 80)
COUNT = 20_000
PATHS = {"GL points": {"splat": False}, "host splat": {"host_splat": True}}


@pytest.fixture(scope="module")
def ctx():
    context = headless_context()
    yield context
    context.release()


def _pixel_centred_cluster(count=COUNT):
    """A Gaussian cluster whose particles sit on pixel centres well inside the image, under
    :func:`_pixels_view` (world units are pixels): every sprite then adds the same light, so a
    fair subsample's total, scaled, is the whole's exactly."""
    rng = np.random.default_rng(3)
    pixels = np.clip(np.round(rng.normal(0, 9, (count, 2))), -30, 30)
    return np.column_stack([pixels + 0.5, np.zeros(count)]).astype(np.float32)


def _pixels_view():
    """World (x, y) in pixels from the image's centre; z through the depth range untouched."""
    return np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0]).astype(np.float32)


def _scene(ctx, positions, compute_context=None):
    scene = ParticleScene(ctx, compute=compute_context)
    scene.show(Frame(positions, 0.0, 0, 1), np.zeros(len(positions), np.uint8))
    return scene


STYLE = PointStyle(point_size=5.0)


def _light(ctx, scene, view_projection, *, max_drawn=None, **path):
    renderer = Renderer(ctx, max_drawn=max_drawn, **path)
    renderer.resize(*SIZE)
    renderer.accumulate(scene, view_projection, STYLE)
    return renderer, renderer.read_accumulation().astype(np.float64)


@pytest.mark.parametrize("path", PATHS)
def test_a_subsample_adds_the_same_total_light_as_every_particle(ctx, path):
    scene = _scene(ctx, _pixel_centred_cluster())
    _, whole = _light(ctx, scene, _pixels_view(), **PATHS[path])
    for drawn in (37, 1_000, 12_345):
        renderer, part = _light(ctx, scene, _pixels_view(), max_drawn=drawn, **PATHS[path])
        assert renderer.detail.drawn == drawn and renderer.particle_path.startswith(path)
        np.testing.assert_allclose(part.sum(axis=(0, 1)), whole.sum(axis=(0, 1)), rtol=2e-6)


@pytest.mark.parametrize("path", PATHS)
def test_the_subsample_picture_converges_to_the_whole_as_more_are_drawn(ctx, path):
    positions = np.random.default_rng(4).normal(0, 0.5, (COUNT, 3)).astype(np.float32)
    scene = _scene(ctx, positions)
    view_projection = Camera(distance=4.0, yaw=0.3).view_projection(SIZE[0] / SIZE[1])
    _, whole = _light(ctx, scene, view_projection, **PATHS[path])
    differences = []
    for drawn in (100, 1_000, 10_000, COUNT):
        _, part = _light(ctx, scene, view_projection, max_drawn=drawn, **PATHS[path])
        differences.append(np.abs(part - whole).sum() / whole.sum())
    assert all(later < 0.6 * earlier for earlier, later in zip(differences, differences[1:-1]))
    assert differences[-1] == 0.0  # every particle: the very picture


@pytest.mark.parametrize("path", PATHS)
def test_a_still_picture_is_refined_to_every_particle_within_a_second(ctx, path):
    # small enough to hold to a second on two cores shared with other work
    positions = np.random.default_rng(5).normal(0, 0.5, (60_000, 3)).astype(np.float32)
    scene = _scene(ctx, positions)
    view_projection = Camera(distance=4.0, pitch=0.2).view_projection(SIZE[0] / SIZE[1])
    _, whole = _light(ctx, scene, view_projection, **PATHS[path])
    renderer = Renderer(ctx, max_drawn=1_000, **PATHS[path])
    renderer.resize(*SIZE)
    style = STYLE
    renderer.accumulate(scene, view_projection, style)  # the last frame of a moving camera
    assert renderer.detail.drawn == 1_000
    stopped = time.perf_counter()
    draws = 0
    while renderer.refining:
        renderer.accumulate(scene, view_projection, style)  # a frame with the camera still
        draws += 1
    assert time.perf_counter() - stopped < 1.0
    assert renderer.detail.drawn == renderer.detail.total == len(positions) and draws > 1
    np.testing.assert_allclose(renderer.read_accumulation(), whole, rtol=1e-4, atol=1e-4)
    # drawn again, the same picture keeps its light; a moved camera starts again from the subsample
    renderer.accumulate(scene, view_projection, PointStyle(point_size=5.0))
    np.testing.assert_allclose(renderer.read_accumulation(), whole, rtol=1e-4, atol=1e-4)
    renderer.accumulate(scene, Camera(distance=4.1).view_projection(SIZE[0] / SIZE[1]), style)
    assert renderer.detail.drawn == 1_000 and renderer.refining


def test_the_compute_splat_draws_a_subsample_with_the_same_total_light(ctx, device):
    context = compute.open_device(device)
    scene = _scene(ctx, _pixel_centred_cluster(), context)
    _, whole = _light(ctx, scene, _pixels_view())
    renderer, part = _light(ctx, scene, _pixels_view(), max_drawn=1_000)
    assert renderer.particle_path.startswith("compute splat"), renderer.particle_path
    np.testing.assert_allclose(part.sum(axis=(0, 1)), whole.sum(axis=(0, 1)), rtol=2e-6)
    # its order's entries, made on the device, are the host's: the host splat's sample (to a
    # count of fixed point or so: the two compilers round a sprite's weights apart)
    _, on_host = _light(ctx, _scene(ctx, _pixel_centred_cluster()), _pixels_view(),
                        max_drawn=1_000, host_splat=True)
    np.testing.assert_allclose(part, on_host, rtol=1e-5, atol=1e-4)
    renderer.accumulate(scene, _pixels_view(), PointStyle(point_size=3.0))  # a new picture
    renderer.accumulate(scene, _pixels_view(), STYLE)  # the first stretch on fresh counts
    np.testing.assert_allclose(renderer.read_accumulation().astype(np.float64).sum(axis=(0, 1)),
                               whole.sum(axis=(0, 1)), rtol=2e-6)
    while renderer.refining:  # each stretch added to the counts of those before it
        renderer.accumulate(scene, _pixels_view(), STYLE)
    np.testing.assert_array_equal(renderer.read_accumulation(), whole.astype(np.float32))


@pytest.mark.parametrize("path", PATHS)
def test_a_prefix_of_a_priority_ordered_frame_stands_for_the_whole_frames_light(ctx, path):
    positions = _pixel_centred_cluster()
    _, whole = _light(ctx, _scene(ctx, positions), _pixels_view(), **PATHS[path])
    renderer = Renderer(ctx, max_drawn=DEFAULT_MAX_DRAWN, **PATHS[path])
    renderer.resize(*SIZE)
    renderer.accumulate(_scene(ctx, positions[:1_500]), _pixels_view(), STYLE,
                        represents=len(positions))
    assert (renderer.detail.drawn, renderer.detail.represents) == (1_500, len(positions))
    light = renderer.read_accumulation().astype(np.float64)
    np.testing.assert_allclose(light.sum(axis=(0, 1)), whole.sum(axis=(0, 1)), rtol=1e-5)


def test_a_priority_recording_plays_k_particles_a_frame_drawn_for_the_whole(ctx, tmp_path):
    recordings = {}
    for order in ("natural", "priority"):
        recordings[order] = tmp_path / f"{order}.h5"
        assert main(["run", "--quiet", "--record", str(recordings[order]), "--record-order",
                     order, "--solver", "cpu-direct", "--n", "400", "--steps", "20", "--every",
                     "5", "--dt", "0.01"]) == 0
    natural = open_source(build_parser().parse_args(["--play", str(recordings["natural"]),
                                                     "--max-drawn", "100"]))
    with natural:
        assert natural.max_particles is None  # a prefix of the run's own order is not fair
    player = open_source(build_parser().parse_args(["--play", str(recordings["priority"]),
                                                    "--max-drawn", "100", "--paused"]))
    with player:
        player.speed = 1.0  # frames a second: each frame plays long enough to be seen
        player.play()
        deadline = time.monotonic() + 30
        frame = player.latest()
        while (frame is None or frame.count != 100) and time.monotonic() < deadline:
            time.sleep(0.01)
            frame = player.latest()
        assert frame.count == 100 and player.playing
        scene = ParticleScene(ctx)
        scene.show(frame, sample_labels(player.population, frame.count))
        renderer = Renderer(ctx, max_drawn=100)
        renderer.resize(*SIZE)
        renderer.accumulate(scene, Camera(distance=4.0).view_projection(SIZE[0] / SIZE[1]),
                            STYLE, represents=represented_count(frame.count, player.population))
        assert drawn_sentence(renderer.detail.drawn, renderer.detail.represents) == \
            "drawn 100 of 400"


def test_a_movie_frame_draws_its_sample_the_same_way_each_time(ctx):
    from orrery.app.export import MovieRenderer, MovieSettings

    positions = np.random.default_rng(6).normal(0, 0.5, (COUNT, 3)).astype(np.float32)
    labels = np.zeros(COUNT, np.uint8)
    movie = MovieRenderer(MovieSettings(size=SIZE, max_drawn=500), ctx=ctx)
    try:
        first = movie.render(positions, labels, 0.0, 0, 0)
        # the same positions again, as the next frame of the movie: a new picture, not refined
        again = movie.render(positions, labels, 0.0, 0, 1)
        assert (movie.renderer.detail.drawn, movie.renderer.detail.represents) == (500, COUNT)
        np.testing.assert_array_equal(first, again)
        assert movie.settings.description()["max_drawn"] == 500
    finally:
        movie.release()


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_each_stretch_fills_the_frame_budget_and_at_most_doubles():
    clock = _Clock()
    detail = LevelOfDetail(1_000, clock=clock)
    first = detail.plan("still", 1_000_000)
    assert (first.start, first.stop, first.light_scale) == (0, 1_000, 1_000.0)
    clock.now += FRAME_BUDGET_S / 10  # a fast frame: grows by MOST_GROWTH only
    second = detail.plan("still", 1_000_000)
    assert (second.start, second.stop) == (1_000, 1_000 + int(1_000 * MOST_GROWTH))
    clock.now += 4 * FRAME_BUDGET_S  # a slow frame: the next stretch a quarter, not below 1000
    third = detail.plan("still", 1_000_000)
    assert third.stop - third.start == 1_000
    assert third.light_scale == pytest.approx(1_000_000 / third.stop)


def test_a_complete_picture_plans_nothing_more_until_it_changes():
    detail = LevelOfDetail(600, clock=_Clock())
    stops = [detail.plan("still", 1_000).stop for _ in range(2)]
    assert stops == [600, 1_000] and not detail.refining
    finished = detail.plan("still", 1_000)
    assert finished.start == finished.stop == 1_000  # nothing more to draw
    assert detail.plan("moved", 1_000).stop == 600


@pytest.mark.parametrize("count", [1, 2, 1_000, 100_000, 3 * 5 * 7 * 11 * 13 * 17])
def test_the_order_is_a_permutation_made_only_as_far_as_it_is_drawn(count):
    detail = LevelOfDetail(10)
    prefix = detail.order(count, count // 3)[:count // 3].copy()
    order = detail.order(count, count)
    assert order.dtype == np.uint32
    np.testing.assert_array_equal(order[:count // 3], prefix)
    np.testing.assert_array_equal(np.sort(order), np.arange(count))


def test_any_prefix_of_the_order_is_a_fair_sample_of_the_frame():
    order = LevelOfDetail(10).order(100_000, 100_000)
    for size in (100, 1_000, 10_000):
        # populations stored one after the other, and stored alternately: each in its share
        assert abs(np.mean(order[:size] < 25_000) - 0.25) < 4 * np.sqrt(0.25 * 0.75 / size)
        assert abs(np.mean(order[:size] % 3 == 0) - 1 / 3) < 4 * np.sqrt(2 / 9 / size)


def test_the_panel_says_how_many_particles_are_drawn():
    assert drawn_sentence(1_000_000, 1_000_000_000) == "drawn 1.0M of 1.0B"
    assert drawn_sentence(2_500, 2_500) == "drawn 2.5k of 2.5k"
    assert drawn_sentence(999, 1_000) == "drawn 999 of 1.0k"


@pytest.mark.parametrize("max_drawn", [0, -5, 2.5, "many"])
def test_a_cap_that_is_not_a_positive_whole_number_is_refused(max_drawn):
    with pytest.raises(InvalidInputError, match="max_drawn"):
        LevelOfDetail(max_drawn)


@pytest.mark.parametrize("call, argv", [
    (viewer_main, []), (main, ["serve"]), (main, ["render", "run.h5", "--out", "movie.mp4"])])
@pytest.mark.parametrize("value, message", [
    ("0", "argument --max-drawn: must be >= 1, got 0"),
    ("1e6", "argument --max-drawn: must be an integer, got '1e6'"),
    ("-3", "argument --max-drawn: must be >= 1, got -3")])
def test_the_viewer_and_the_server_refuse_a_cap_that_is_not_a_positive_integer(
        call, argv, value, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        call([*argv, "--max-drawn", value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)


def test_the_viewer_and_the_server_take_the_cap_with_one_default():
    for parse, argv in ((build_parser().parse_args, []), (orrery_parser().parse_args, ["serve"])):
        assert parse(argv).max_drawn == DEFAULT_MAX_DRAWN
        assert parse([*argv, "--max-drawn", "5000"]).max_drawn == 5_000
