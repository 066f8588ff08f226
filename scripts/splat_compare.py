"""The compute splat against GL points on one device, pixel by pixel: a galaxy-like frame and
single 3-px sprites at several sub-pixel positions (the tolerance of tests/engine/gpu/
test_gpu_splat.py comes from these numbers), then the device time of the splat's two kernels at
each N given (a Plummer sphere framed by the camera, 3-px sprites, 1280x720).
Usage: python3 scripts/splat_compare.py cuda:0 [N ...]"""

import sys

import numpy as np

from orrery.app.render import Camera, ParticleScene, PointStyle, Renderer, headless_context
from orrery.engine import compute, ics
from orrery.engine.frames import Frame

SIZE = (161, 97)


def image(ctx, positions, population, view_projection, style, context):
    scene, renderer = ParticleScene(ctx, compute=context), Renderer(ctx, splat=context is not None)
    renderer.resize(*SIZE)
    scene.show(Frame(positions, 0.0, 0, 1), population)
    renderer.accumulate(scene, view_projection, style)
    pixels = renderer.read_accumulation().copy()
    renderer.release()
    scene.release()
    return pixels


def main(spec):
    ctx, context = headless_context(), compute.open_device(spec)
    positions = ics.plummer(20000, seed=5).pos.astype(np.float32)
    population = (np.arange(len(positions)) % 3).astype(np.uint8)
    camera = Camera(yaw=0.4, pitch=0.3)
    camera.fit(positions)
    view_projection = camera.view_projection(SIZE[0] / SIZE[1])
    style = PointStyle()
    splat = image(ctx, positions, population, view_projection, style, context)
    points = image(ctx, positions, population, view_projection, style, None)
    difference = np.abs(splat - points)
    close = difference <= 2e-4 * (1 + np.abs(points))
    print("max difference", difference.max(), "not close", np.mean(~close),
          "sums", splat.sum(axis=(0, 1)), points.sum(axis=(0, 1)))
    worst = np.unravel_index(np.argmax(difference), difference.shape)
    print("worst pixel", worst, splat[worst[:2]], points[worst[:2]])
    ortho = np.diag([2.0 / SIZE[0], 2.0 / SIZE[1], -1.0, 1.0])  # world units are pixels
    for x, y in ((0.5, 0.5), (0.3, 0.5), (0.25, 0.75), (0.0, 0.0), (0.7, 0.1)):
        point = np.array([[x - 0.5, y - 0.5, 0.0]], np.float32)  # centre pixel + offset
        for name, ctx_compute in (("splat", context), ("points", None)):
            alpha = image(ctx, point, np.zeros(1, np.uint8), ortho, style, ctx_compute)[..., 3]
            r, c = SIZE[1] // 2, SIZE[0] // 2
            print(name, (x, y), np.round(alpha[r - 2:r + 3, c - 2:c + 3], 4).tolist())


def kernel_times(spec, n, size=(1280, 720), trials=10):
    from orrery.app.render._splat_pass import _DEFINES, _padded

    context = compute.open_device(spec)
    positions = ics.plummer(n, seed=1).pos.astype(np.float32)
    camera = Camera()
    camera.fit(positions)
    matrix = [np.float32(v) for v in camera.view_projection(size[0] / size[1]).reshape(-1)]
    program = context.build(["splat.cl"], defines=_DEFINES)
    current = context.upload(positions)
    labels = context.upload(np.zeros(n, np.int32))
    palette = context.upload(PointStyle().palette().reshape(-1))
    values = size[0] * size[1] * 4
    counts, light = context.zeros((values,), np.uint64), context.empty((values,), np.float32)
    splat, resolve = [], []
    for _ in range(trials):
        splat.append(program.kernel("splat_points").launch(
            _padded(n), 256, current, current, labels, np.int32(n), palette, np.int32(0),
            np.float32(0), np.float32(3.0), np.float32(1.0), *matrix, np.int32(size[0]),
            np.int32(size[1]), counts).seconds())
        resolve.append(program.kernel("splat_resolve").launch(
            _padded(values), 256, counts, np.int32(values), light).seconds())
    print(f"n {n}: splat_points {1e3 * np.median(splat):.3f} ms, "
          f"splat_resolve {1e3 * np.median(resolve):.3f} ms")


if __name__ == "__main__":
    spec = sys.argv[1] if len(sys.argv) > 1 else "sycl:cpu"
    main(spec)
    for count in sys.argv[2:]:
        kernel_times(spec, int(count))
