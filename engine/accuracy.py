"""Error measures of an approximate acceleration field against a reference one."""

from __future__ import annotations

import numpy as np


def relative_errors(approx, exact) -> np.ndarray:
    """Per-particle |a - a_ref| / |a_ref|, in float64."""
    approx = np.asarray(approx, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    return np.linalg.norm(approx - exact, axis=1) / np.linalg.norm(exact, axis=1)


def max_relative_error(approx, exact) -> float:
    return float(np.max(relative_errors(approx, exact)))


def rms_relative_error(approx, exact) -> float:
    return float(np.sqrt(np.mean(relative_errors(approx, exact) ** 2)))


def error_percentiles(approx, exact) -> tuple[float, float]:
    """(RMS, 90th percentile) of the per-particle relative errors."""
    errors = relative_errors(approx, exact)
    return float(np.sqrt(np.mean(errors ** 2))), float(np.quantile(errors, 0.9))


# Source chunks per sample target in sampled_reference.cl: enough work-items to fill a GPU
# with a few thousand targets; the host adds each target's partial sums.
_SAMPLE_CHUNKS = 128
_SAMPLE_GROUP = 128


def sampled_exact(pos, mass, targets, softening: float, *, device: str | None = None,
                  chunk_elements: int = 4_000_000) -> np.ndarray:
    """Float64 Plummer-softened accelerations of ``pos[targets]`` (a sample) from every
    particle: the error reference of the benchmarks at any N, where the O(N^2) ``reference``
    solver over every particle would take too long. A particle's pull on itself is left out.

    ``device=None`` sums on the host with NumPy; a device string (``"cuda:0"``, ``"sycl:cpu"``)
    runs the same sum in float64 there (``sampled_reference.cl``), for N in the millions.
    """
    pos = np.asarray(pos, np.float64)
    mass = np.asarray(mass, np.float64)
    targets = np.asarray(targets)
    if device is not None:
        return _sampled_exact_on_device(pos, mass, targets, softening, device)
    out = np.empty((len(targets), 3))
    step = max(1, chunk_elements // len(pos))
    for start in range(0, len(targets), step):
        index = targets[start:start + step]
        d = pos[None, :, :] - pos[index][:, None, :]
        r2 = np.einsum("ijk,ijk->ij", d, d) + softening * softening
        with np.errstate(divide="ignore", invalid="ignore"):
            w = mass[None, :] / (r2 * np.sqrt(r2))
        w[np.arange(len(index)), index] = 0.0
        out[start:start + len(index)] = np.einsum("ij,ijk->ik", w, d)
    return out


def _sampled_exact_on_device(pos, mass, targets, softening, device) -> np.ndarray:
    from .compute import open_device

    context = open_device(device)
    body = np.empty((len(pos), 4))
    body[:, :3], body[:, 3] = pos, mass
    return sampled_exact_rows(context, context.upload(body), len(pos),
                              context.upload(targets.astype(np.int32)), softening)


def sampled_exact_rows(context, body, count: int, targets, softening: float) -> np.ndarray:
    """``sampled_exact`` of bodies already on ``context``'s device: ``body`` float64 rows (x, y,
    z, mass) of which the first ``count`` are summed, ``targets`` int32 indices on the device.
    What comes to the host is each target's partial sums."""
    from .compute import launch_size

    target_count = targets.shape[0]
    program = context.build(["sampled_reference.cl"], package=__package__,
                            defines={"REAL_BITS": 64, "CHUNKS": _SAMPLE_CHUNKS})
    partial = context.empty((target_count * _SAMPLE_CHUNKS, 4), np.float64)
    items = target_count * _SAMPLE_CHUNKS
    program.kernel("sampled_accelerations").launch(
        launch_size(items, _SAMPLE_GROUP), _SAMPLE_GROUP, body, np.int32(count), targets,
        np.int32(target_count), np.float64(softening ** 2), partial)
    return partial.download().reshape(target_count, _SAMPLE_CHUNKS, 4).sum(axis=1)[:, :3]
