"""What the deferred-light tests share (test_gpu_live.py, test_gpu_density.py)."""

import time

import numpy as np


def landed(renderer, expected: np.ndarray, seconds: float = 10.0) -> np.ndarray:
    """What ``renderer``'s accumulation target holds once it holds ``expected``, or when
    ``seconds`` have passed: ``land()`` is called meanwhile, a query (the kernels finish on
    their own); the target is read without landing anything."""

    def texture():  # RGBA32F: four floats per pixel
        return np.frombuffer(renderer.accumulation.read(), np.float32).reshape(expected.shape)

    deadline = time.monotonic() + seconds
    while not np.array_equal(texture(), expected) and time.monotonic() < deadline:
        renderer.land()
    return texture()
