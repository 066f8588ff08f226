"""Central finite differences, and the relative error the gradient tests hold a VJP or a run's
gradient to."""

import numpy as np


def central_differences(loss, arrays, *, relative=(), h=1e-6) -> list[np.ndarray]:
    """The gradient of ``loss(*arrays)`` with respect to each of ``arrays`` (float64), by central
    differences: each entry moved by ``h``, or, in the arrays whose positions ``relative`` names
    (masses), by ``h`` times the entry, a step near its own size."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    return [np.array([central_difference(loss, arrays, which, index, relative=relative, h=h)
                      for index in np.ndindex(values.shape)]).reshape(values.shape)
            for which, values in enumerate(arrays)]


def central_difference(loss, arrays, which: int, index: tuple, *, relative=(), h=1e-6) -> float:
    """One entry of :func:`central_differences`: the derivative of ``loss(*arrays)`` with
    respect to ``arrays[which][index]``."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    step = h * (arrays[which][index] if which in relative else 1.0)
    up = [a.copy() for a in arrays]
    down = [a.copy() for a in arrays]
    up[which][index] += step
    down[which][index] -= step
    return (float(loss(*up)) - float(loss(*down))) / (2 * step)


def relative_error(got, expected) -> float:
    """The largest difference of ``got`` from ``expected`` over the largest entry of
    ``expected``."""
    return float(np.abs(np.asarray(got) - expected).max() / np.abs(expected).max())
