"""What the splat tests share (tests/app/test_host_splat.py, tests/engine/gpu/test_gpu_splat.py):
the image size, the tolerance of a splat against the GL point path, the scene, and the
accumulation a renderer leaves after showing some frames."""

import numpy as np

from orrery.engine import ics

# Odd sizes put the view's centre on a pixel centre.
SIZE = (161, 97)

# The tolerance of a splat against GL points, measured on both GL drivers (Mesa here, NVIDIA on
# the H200). A rasteriser snaps a point's centre to 1/256 pixel (GL_SUBPIXEL_BITS 8) and NVIDIA's
# gl_PointCoord follows the snapped centre (per-sprite weights 0.2-0.7% off the exact ones, up to
# ~3% at the rim by the size of the snap; Mesa's are within 2e-4). And a pixel at a sprite's rim
# (r2 within ~1e-2 of 1) may be inside on one path and outside on the other: one rim weight,
# exp(-4) = 0.018, times the colour. The splats use the exact centre.
RIM = 0.0185
POINT_COORD = 0.03    # relative, on every channel
RIM_FRACTION = 0.005  # of the channels may differ by more than POINT_COORD (+ 1e-3): rims
MARGIN = 4.0          # pixels: the comparison keeps particles this far inside the image, where
                      # Mesa (drops a point whose centre is outside) and NVIDIA and the splats
                      # (keep its visible part) agree


def galaxy(n=20000):
    particles = ics.plummer(n, seed=5)
    population = (np.arange(n) % 3).astype(np.uint8)  # three palette colours
    return particles.pos.astype(np.float32), population


def camera_for(positions, fraction=0.9):
    from orrery.app.render import Camera

    camera = Camera(yaw=0.4, pitch=0.3)
    camera.fit(positions, fraction=fraction)
    return camera.view_projection(SIZE[0] / SIZE[1])


def inside(positions, view_projection):
    """The particles whose centres project at least MARGIN pixels inside the image."""
    clip = np.c_[positions, np.ones(len(positions))] @ np.asarray(view_projection).T
    window = (clip[:, :2] / clip[:, 3:] + 1) / 2 * np.array(SIZE)
    keep = np.all((window > MARGIN) & (window < np.array(SIZE) - MARGIN), axis=1)
    return keep & (clip[:, 3] > 0)


def moving_galaxy(*, keep_inside: bool):
    """Two frames of the galaxy, the second moved by about a millipixel (so speed and heading
    colours have a motion), its population and the camera on it; with ``keep_inside`` only the
    particles at least MARGIN pixels inside the image (where GL points can be compared)."""
    from orrery.engine.frames import Frame

    positions, population = galaxy()
    view_projection = camera_for(positions)
    if keep_inside:
        keep = inside(positions, view_projection)
        positions, population = positions[keep], population[keep]
    moved = positions + np.random.default_rng(1).normal(0, 1e-3, positions.shape).astype(
        np.float32)
    return [Frame(positions, 0.0, 0, 1), Frame(moved, 0.01, 1, 2)], population, view_projection


def accumulation(ctx, frames, population, style, view_projection, *, compute_context=None,
                 **renderer_options):
    """The accumulation after showing ``frames`` in turn, and the path that drew it."""
    from orrery.app.render import ParticleScene, Renderer

    scene = ParticleScene(ctx, compute=compute_context)
    renderer = Renderer(ctx, **renderer_options)
    try:
        renderer.resize(*SIZE)
        for frame in frames:
            scene.show(frame, population)
        renderer.accumulate(scene, view_projection, style)
        return renderer.read_accumulation().copy(), renderer.particle_path
    finally:
        renderer.release()
        scene.release()


def assert_same_image(splat, points):
    """A splat's image against the GL points' within the tolerance above."""
    difference = np.abs(splat - points)
    assert points.sum() > 0
    assert np.all(difference <= POINT_COORD * np.abs(points) + 2 * RIM), difference.max()
    assert np.mean(difference > POINT_COORD * np.abs(points) + 1e-3) <= RIM_FRACTION
    np.testing.assert_allclose(splat.sum(axis=(0, 1)), points.sum(axis=(0, 1)), rtol=5e-3)
