"""Device ceilings: what a compute device achieves at best on the operations a gravity kernel
is built from (multiply-add, inverse square root, square root with divide, memory reads), so
kernel figures can be reported as fractions of limits measured on the same device.

Kernels: ``kernels/ceilings.cl``. Each probe runs once untimed (build, warm-up), then
``trials`` times; the best device time counts (a ceiling is a best case).
"""

from __future__ import annotations

import numpy as np

from ..compute import Context, launch_size, open_device, resident_size

CHAINS = 8
LOCAL_SIZE = 256
ITERATIONS = {"gpu": 8192, "cpu": 1024, "accelerator": 1024}
READ_BYTES = {"gpu": 1 << 30, "cpu": 128 << 20, "accelerator": 128 << 20}


def _launch_shape(context: Context) -> tuple[int, int]:
    """Global and local size of every probe on this device."""
    info = context.info
    local = min(LOCAL_SIZE, info.max_work_group_size)
    return launch_size(resident_size(info), local), local


def _best_seconds(launch, trials: int) -> float:
    launch().seconds()
    return min(launch().seconds() for _ in range(trials))


def _arithmetic(context: Context, bits: int, global_size: int, iterations: int, local: int,
                trials: int) -> dict[str, float]:
    real = np.float32 if bits == 32 else np.float64
    program = context.build(["ceilings.cl"], package=__package__,
                            defines={"REAL_BITS": bits, "ITERATIONS": iterations})
    out = context.empty(global_size, real)
    steps = global_size * iterations * CHAINS
    fma = program.kernel("fma_probe")
    rsqrt = program.kernel("rsqrt_probe")
    sqrt_divide = program.kernel("sqrt_divide_probe")
    fma_s = _best_seconds(lambda: fma.launch(global_size, local, out, real(0.999), real(1e-3)), trials)
    rsqrt_s = _best_seconds(lambda: rsqrt.launch(global_size, local, out, real(1.5)), trials)
    sqrt_divide_s = _best_seconds(lambda: sqrt_divide.launch(global_size, local, out, real(1.5)),
                                  trials)
    suffix = f"f{bits}"
    return {f"fma_{suffix}": 2 * steps / fma_s,
            f"rsqrt_estimate_{suffix}": steps / rsqrt_s,
            f"sqrt_div_{suffix}": steps / sqrt_divide_s}


def _read_bandwidth(context: Context, global_size: int, local: int, trials: int) -> float:
    kind = context.info.kind
    nbytes = min(READ_BYTES[kind], context.info.global_memory_bytes // 8)
    count = nbytes // 16
    program = context.build(["ceilings.cl"], package=__package__,
                            defines={"REAL_BITS": 32, "ITERATIONS": 1})
    data = context.empty((count, 4), np.float32)
    out = context.empty(global_size, np.float32)
    program.kernel("fill").launch(global_size, local, data, np.int32(count))
    read = program.kernel("read_probe")
    seconds = _best_seconds(lambda: read.launch(global_size, local, data, out, np.int32(count)),
                            trials)
    return count * 16 / seconds


def measure(device: str | Context | None = None, *, trials: int = 3) -> dict:
    """Measure the ceilings of ``device`` (a device string, a :class:`Context`, or None for the
    first device found).

    Returns a dict in the units ``orrery bench ceilings`` uses for the CPU: ``device``, ``name``,
    ``fma_f32`` (flop/s), ``rsqrt_estimate_f32`` (hardware reciprocal square roots/s),
    ``sqrt_div_f32`` (square root + divide pairs/s) and, where the device has float64, the same
    three with ``f64``; ``read`` (bytes/s). Rates are per second of device time.
    """
    context = device if isinstance(device, Context) else open_device(device)
    info = context.info
    global_size, local = _launch_shape(context)
    iterations = ITERATIONS[info.kind]
    result: dict = {"device": info.spec, "name": info.name}
    result.update(_arithmetic(context, 32, global_size, iterations, local, trials))
    if info.fp64:
        # float64 runs at a fraction of float32 on most GPUs: fewer steps keep the probe short.
        result.update(_arithmetic(context, 64, global_size, max(iterations // 8, 64), local, trials))
    result["read"] = _read_bandwidth(context, global_size, local, trials)
    return result


def read_bandwidth(device: str | Context | None = None, *, trials: int = 3) -> float:
    """The read ceiling alone (bytes/s of device time), as :func:`measure` gives it: what
    memory-bound kernels are compared with (``orrery bench boids``)."""
    context = device if isinstance(device, Context) else open_device(device)
    return _read_bandwidth(context, *_launch_shape(context), trials)
