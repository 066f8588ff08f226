"""The first picture a newcomer sees (issue 47): the panel's one-line summary and slow-frame hint,
the camera's framing, the screenshot's moment and the automatic exposure, first as functions,
then through the renderer (EGL) on the three kinds of scene a first open shows."""

from dataclasses import replace

import numpy as np
import pytest

from orrery.app.render._exposure import (BRIGHT_LIGHT, BRIGHT_PERCENTILE, MAX_EXPOSURE, auto_exposure,
                                         ease_exposure)
from orrery.app.viewer._framing import bright, framed_camera, tail_length
from orrery.app.viewer._summary import SLOW_FPS, run_sentence, short_number, slow_hint
from orrery.engine.frames import FrameStats

from ..extras import package

AUTO_STATS = FrameStats(
    n=30000, theta=0.3, steps_per_second=4.83, paused=False,
    solver="auto: cpu-tree (accuracy=0.001, leaf_capacity=16, precision=f32, quadrupole=False, "
              "simd=avx512, softening=0.05); theta 0.3 chosen for accuracy 0.001 at N = 30,000 "
              "(worst measured RMS 0.00047: galaxy-collision, N = 4,096; shipped defaults); not "
              "calibrated (run `orrery calibrate`): default thresholds")


def test_the_run_reads_as_a_short_sentence():
    assert run_sentence(AUTO_STATS) == \
        "cpu-tree, theta 0.3 for accuracy 1e-3 \u00b7 30,000 particles \u00b7 4.8 steps/s"


def test_the_sentence_of_a_solver_without_theta_and_of_a_paused_flock():
    direct = FrameStats(n=2000, theta=None, steps_per_second=61.2,
                        solver="cpu-direct (precision=f32, simd=avx512, softening=0.01)")
    assert run_sentence(direct) == "cpu-direct \u00b7 2,000 particles \u00b7 61.2 steps/s"
    flock = FrameStats(n=3000, paused=True, steps_per_second=0.0,
                       solver="flock, coherent-grid, cell width 1.0x, cpu (2 threads, avx512)")
    assert run_sentence(flock) == "flock, coherent-grid \u00b7 3,000 particles \u00b7 paused"


@pytest.mark.parametrize("value, text", [(0.001, "1e-3"), (0.0005, "5e-4"), (0.02, "0.02"),
                                         (0.1, "0.1"), (0.00025, "0.00025")])
def test_tolerances_are_written_as_people_write_them(value, text):
    assert short_number(value) == text


def test_a_slow_solver_is_named_as_the_reason_with_what_helps_in_one_line():
    stats = replace(AUTO_STATS, solver_seconds_per_step=0.21)
    hint = slow_hint(4.5, stats, gpu_solver="gpu-tree")
    assert hint == "Slow: 210 ms a step; try a smaller N or gpu-tree."
    assert "gpu" not in slow_hint(4.5, stats, gpu_solver=None)
    on_gpu = replace(stats, solver="auto: gpu-tree (accuracy=0.001)")
    assert "or gpu-tree" not in slow_hint(4.5, on_gpu, gpu_solver="gpu-tree")


def test_slow_drawing_is_told_apart_and_a_fast_or_paused_window_says_nothing():
    quick_solver = replace(AUTO_STATS, solver_seconds_per_step=0.01)
    assert slow_hint(5.0, quick_solver).startswith("Slow drawing (5 fps)")
    assert slow_hint(SLOW_FPS + 1, replace(AUTO_STATS, solver_seconds_per_step=0.5)) is None
    assert slow_hint(2.0, replace(AUTO_STATS, solver_seconds_per_step=0.5, paused=True)) is None


def _two_galaxies(spread: float, *, seed: int = 0):
    """Two disks 8 apart with bulges, and a dim halo: ``spread`` is the disks' extent."""
    rng = np.random.default_rng(seed)
    names = ("A disk", "A bulge", "A halo", "B disk", "B bulge", "B halo")
    parts, labels = [], []
    for label, centre in ((0, -4.0), (3, 4.0)):
        for offset, count, size in ((0, 2000, spread), (1, 300, 0.3), (2, 1500, 12.0)):
            points = rng.normal(scale=size, size=(count, 3))
            points[:, 0] += centre
            if offset == 0:
                points[:, 2] *= 0.05  # a thin disk
            parts.append(points)
            labels.append(np.full(count, label + offset, np.uint8))
    return np.concatenate(parts).astype(np.float32), np.concatenate(labels), names


def test_tails_are_longer_when_the_disks_are_drawn_out():
    compact, population, names = _two_galaxies(1.0)
    drawn_out, _, _ = _two_galaxies(3.0)
    assert tail_length(drawn_out, population, names) > 2 * tail_length(compact, population, names)


def test_a_scene_without_two_disks_has_no_tails_to_measure():
    positions = np.zeros((10, 3), np.float32)
    assert tail_length(positions, np.zeros(10, np.uint8), ("stars",)) is None
    assert tail_length(positions, np.zeros(10, np.uint8), ("disk", "bulge", "halo")) is None


def test_the_camera_frames_both_disks_from_above_not_the_haloes():
    from orrery.app.render import population_weights

    positions, population, names = _two_galaxies(1.0)
    shown = bright(positions, population, population_weights(names))
    assert len(shown) == 2 * 2300  # disks and bulges
    camera = framed_camera(shown)
    assert camera.pitch > np.radians(60)  # disks face-on, or nearly
    view_projection = camera.view_projection(16 / 9)
    for core in ([-4.0, 0.0, 0.0], [4.0, 0.0, 0.0]):
        clip = view_projection @ np.append(core, 1.0)
        assert np.all(np.abs(clip[:2] / clip[3]) < 0.8), core  # well inside the picture
    halo_camera = framed_camera(positions)
    assert halo_camera.distance > 2 * camera.distance  # what fitting everything would do


def test_auto_exposure_keeps_the_brightest_percent_below_white():
    light = np.zeros((100, 100, 4), np.float32)
    light[:50, :, :3] = 1.0
    light[50:, :, :3] = 1e4  # a dense core
    exposure = auto_exposure(light)
    assert exposure == pytest.approx(BRIGHT_LIGHT / 1e4)
    assert auto_exposure(np.zeros((4, 4, 4))) is None
    sparse = np.zeros((10, 10, 3))
    sparse[0, 0] = 0.5
    assert auto_exposure(sparse) == MAX_EXPOSURE  # never brighter than the old fixed default
    assert ease_exposure(0.1, 0.4) == pytest.approx(0.2)


def test_auto_exposure_of_scaled_light_is_that_of_the_light_multiplied():
    """``scale`` (a subsample's light scale) gives the exposure of the light times it, and the
    brightest channel decides whichever it is, with non-finite pixels left out."""
    rng = np.random.default_rng(3)
    light = np.zeros((64, 96, 4), np.float32)
    lit = rng.random((64, 96)) < 0.4
    light[lit, :3] = rng.lognormal(2.0, 1.5, (lit.sum(), 3)).astype(np.float32)
    light[0, 0, 1] = np.inf
    light[0, 1, 2] = np.nan
    for scale in (1.0, 0.25, 3.0, 1e-3):
        assert auto_exposure(light, scale=scale) == pytest.approx(
            auto_exposure(light * np.float32(scale)), rel=1e-6)
    brightest = light[..., :3].max(axis=-1)  # a pixel with a non-finite channel is left out
    level = np.percentile(brightest[np.isfinite(brightest) & (brightest > 0)], BRIGHT_PERCENTILE)
    assert auto_exposure(light) == pytest.approx(min(BRIGHT_LIGHT / level, MAX_EXPOSURE), rel=1e-6)


# The third first open, a 10M-particle snapshot: written, read and drawn in about 10 s
# and 1.7 GB on a 2-core machine.
BIG_SNAPSHOT_N = 10_000_000


def _hernquist(rng, n: int, scale: float) -> np.ndarray:
    """``n`` particles of a Hernquist sphere of ``scale``, cut at 9 scales (a dense cusp)."""
    root = np.sqrt(rng.uniform(0.0, 0.9, n))
    radius = scale * root / (1.0 - root)
    direction = rng.normal(size=(n, 3)).astype(np.float32)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return (direction * radius[:, None]).astype(np.float32)


def _write_big_snapshot(path, n: int) -> None:
    """A galaxy as another code writes it (GADGET-4 HDF5, kpc): a dark halo of four fifths of
    ``n`` (Hernquist, scale 20 kpc) around an exponential stellar disk (3 kpc, 0.3 kpc thick)."""
    from ..engine.snapshot_files import write_gadget4_hdf5

    rng = np.random.default_rng(1)
    stars = n // 5
    radius, angle = rng.exponential(3.0, stars), rng.uniform(0.0, 2 * np.pi, stars)
    disk = np.stack([radius * np.cos(angle), radius * np.sin(angle),
                     rng.normal(scale=0.3, size=stars)], axis=1).astype(np.float32)
    data = {}
    for family, positions in (("dm", _hernquist(rng, n - stars, 20.0)), ("star", disk)):
        data[family] = (positions, np.zeros_like(positions), np.full(len(positions), 1e-6,
                                                                      np.float32))
    write_gadget4_hdf5(path, data=data)


def _scene(kind: str, folder):
    """Positions, populations and population names of ``kind``: a scenario, or the big snapshot
    opened as ``orrery-viewer --load`` opens it."""
    from orrery.engine import scenarios

    if kind == "10M snapshot":
        package("pynbody")
        path = folder / "snap_000.hdf5"
        _write_big_snapshot(path, BIG_SNAPSHOT_N)
        particles = scenarios.load(scenarios.SnapshotScenario(str(path))).particles
        assert len(particles.pos) == BIG_SNAPSHOT_N
    else:
        particles = scenarios.load(kind, n=20000 if kind == "plummer-cluster" else 8000).particles
    return (np.asarray(particles.pos, np.float32), particles.population,
            particles.population_names)


def _picture(ctx, positions, population, names, tone):
    from orrery.app.render import ParticleScene, PointStyle, Renderer, population_weights
    from orrery.engine.frames import Frame

    width, height = 640, 360
    weights = population_weights(names)
    scene = ParticleScene(ctx)
    scene.show(Frame(positions, 0.0, 0, 1), population)
    renderer = Renderer(ctx)
    renderer.resize(width, height)
    camera = framed_camera(bright(positions, population, weights))
    renderer.accumulate(scene, camera.view_projection(width / height),
                        PointStyle(weights=weights))
    if tone.auto_exposure:
        tone.exposure = auto_exposure(renderer.read_accumulation())
    output = ctx.simple_framebuffer((width, height))
    renderer.present(output, tone)
    pixels = np.frombuffer(output.read(components=3), np.uint8).reshape(height, width, 3)
    output.release()
    renderer.release()
    return pixels.max(axis=2).astype(int)


@pytest.mark.usefixtures("egl")
@pytest.mark.parametrize("kind", ["plummer-cluster", "disk-galaxy", "10M snapshot"])
def test_auto_exposure_opens_each_scene_neither_blown_out_nor_black(kind, tmp_path):
    """Each scene drawn as the viewer opens it (point sprites, the camera on the bright
    particles), with the automatic exposure and with the fixed one of old."""
    from orrery.app.render import ToneMap, headless_context

    ctx = headless_context()
    try:
        scene = _scene(kind, tmp_path)
        brightness = _picture(ctx, *scene, ToneMap(auto_exposure=True))
        fixed = _picture(ctx, *scene, ToneMap(exposure=0.6))
    finally:
        ctx.release()
    lit = brightness[brightness > 8]
    assert lit.size > 0.01 * brightness.size, "hardly anything is lit"
    assert np.percentile(lit, 99) < 252, "the brightest percent is blown out to white"
    assert np.percentile(lit, 50) > 20, "the picture is close to black"
    if kind == "10M snapshot":  # what the fixed exposure of old did to it
        assert np.percentile(fixed[fixed > 8], 99) >= 254


def test_two_galaxies_lie_side_by_side_seen_from_where_their_disks_open_up():
    from orrery.app.viewer._framing import disk_normals

    positions, population, names = _two_galaxies(1.0)
    normals = disk_normals(positions, population, names)
    assert len(normals) == 2 and all(abs(normal[2]) > 0.99 for normal in normals)
    disks = positions[(population == 0) | (population == 3)]
    camera = framed_camera(disks)
    assert abs(np.cos(camera.yaw)) < 0.01  # the camera's right, (-sin yaw, cos yaw), is along x
    tilted = [np.array([0.0, -np.sin(np.radians(60)), np.cos(np.radians(60))])] * 2
    camera = framed_camera(disks, tilted)
    assert camera.eye[1] < camera.target[1]  # from -y, where the tilted disks face


def test_the_sentence_writes_theta_as_a_letter_where_the_font_has_it():
    assert run_sentence(AUTO_STATS, theta_name="\u03b8").startswith(
        "cpu-tree, \u03b8 0.3 for accuracy 1e-3")
