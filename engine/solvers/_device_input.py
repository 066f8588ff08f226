"""Particle arrays into a GPU solver's padded device rows and results back out, on the device.

Every GPU evaluation goes through here, whatever the caller passed: device arrays of another
framework are read in place (:meth:`Context.wrap`), host arrays are uploaded as they are (no
host-side packing, conversion or scan), and ``interchange.cl`` converts, pads and checks them on
the device. The checks are those of :func:`~orrery.engine.particles.check_positions_and_masses`
(and of :func:`~orrery.engine.particles.check_fits` for velocities), with the same messages,
except that they name the particle without its values and do not bound the total mass; what
comes back to the host is eight integers.
"""

from __future__ import annotations

import numpy as np

from ..compute import Context, DeviceArray
from ..errors import InvalidInputError
from ..particles import largest_coordinate
from ._device_state import padded_count

GROUP = 64
CHECKS = 8
NONE = 0xFFFFFFFF
(COLUMN_NOT_FINITE, COLUMN_TOO_LARGE, FOURTH_NOT_FINITE, FOURTH_NEGATIVE, FOURTH_TOO_LARGE,
 POSITIVE) = range(6)


class RowPacker:
    """Packing and unpacking of ``real4`` rows of ``dtype`` on ``context``."""

    def __init__(self, context: Context, dtype):
        self.context = context
        self.dtype = np.dtype(dtype)
        self._checks = context.empty((CHECKS,), np.uint32, "temporaries.checks")

    def _program(self, column: np.dtype, fourth: np.dtype, has_fourth: bool):
        return self.context.build(["interchange.cl"], package=__package__, defines={
            "REAL_BITS": self.dtype.itemsize * 8, "COLUMN_BITS": column.itemsize * 8,
            "FOURTH_BITS": fourth.itemsize * 8, "HAS_FOURTH": has_fourth})

    def pack(self, rows: DeviceArray, columns: DeviceArray, fourth: DeviceArray | None,
             count: int, what: str = "position") -> None:
        """Fill ``rows`` (padded, 4) from ``columns`` (count, 3) and ``fourth`` (count,) masses
        (or 0 where None); InvalidInputError when a value fails the checks (``what`` names the
        columns: "position" or "velocity")."""
        for array in (columns, fourth):
            if array is not None and array.dtype.itemsize == 8 and not self.context.info.fp64:
                raise InvalidInputError(f"{self.context.info.spec} has no float64 support: pass "
                                        "float32 arrays")
        read = fourth if fourth is not None else columns
        program = self._program(columns.dtype, read.dtype, fourth is not None)
        largest = (largest_coordinate(self.dtype) if what == "position"
                   else float(np.finfo(self.dtype).max))
        heaviest = float(np.finfo(self.dtype).max)
        program.kernel("clear_checks").launch(GROUP, GROUP, self._checks)
        program.kernel("pack_rows").launch(
            padded_count(rows.shape[0], GROUP), GROUP, rows, columns, np.int64(columns.start),
            np.int64(columns.strides[0]), np.int64(columns.strides[1]), read,
            np.int64(read.start), np.int64(read.strides[0]), np.int32(count),
            np.int32(rows.shape[0]), _bounded(largest, columns.dtype),
            _bounded(heaviest, read.dtype), self._checks)
        self._raise_for(self._checks.download(), what, largest, fourth is not None)

    def _raise_for(self, checks: np.ndarray, what: str, largest: float, masses: bool) -> None:
        name = self.dtype.name
        if checks[COLUMN_NOT_FINITE] != NONE:
            raise InvalidInputError(f"{what} of particle {checks[COLUMN_NOT_FINITE]} is not finite")
        if checks[COLUMN_TOO_LARGE] != NONE:
            raise InvalidInputError(
                f"{what} of particle {checks[COLUMN_TOO_LARGE]} is too large for {name} "
                f"arithmetic (at most {largest:.3g} in magnitude); use precision='f64' or "
                "smaller units")
        if not masses:
            return
        if checks[FOURTH_NOT_FINITE] != NONE:
            raise InvalidInputError(f"mass of particle {checks[FOURTH_NOT_FINITE]} is not finite")
        if checks[FOURTH_NEGATIVE] != NONE:
            raise InvalidInputError(f"mass of particle {checks[FOURTH_NEGATIVE]} is negative")
        if checks[FOURTH_TOO_LARGE] != NONE:
            raise InvalidInputError(
                f"mass of particle {checks[FOURTH_TOO_LARGE]} is too large for {name} "
                "arithmetic; use precision='f64' or smaller units")
        if checks[POSITIVE] == 0:
            raise InvalidInputError("total mass must be positive")

    def check(self, rows: DeviceArray, count: int, what: str = "position") -> None:
        """Refuse (InvalidInputError) non-finite values in the first three components of
        ``count`` packed rows, as :meth:`pack` does; eight integers come to the host."""
        program = self._program(self.dtype, self.dtype, False)
        largest = self.dtype.type(np.finfo(self.dtype).max)
        program.kernel("clear_checks").launch(GROUP, GROUP, self._checks)
        program.kernel("check_rows").launch(padded_count(count, GROUP), GROUP, rows,
                                            np.int32(count), largest, self._checks)
        self._raise_for(self._checks.download(), what, float(largest), False)

    def unpack(self, rows: DeviceArray, count: int, columns: DeviceArray,
               fourth: DeviceArray | None = None) -> None:
        """Write the first three components of ``count`` rows to ``columns`` (count, 3) and the
        fourth to ``fourth`` (count,) when given."""
        program = self._program(self.dtype, self.dtype, fourth is not None)
        program.kernel("unpack_rows").launch(padded_count(count, GROUP), GROUP, rows, columns,
                                             fourth if fourth is not None else columns,
                                             np.int32(count))


def _bounded(value: float, dtype: np.dtype) -> np.generic:
    """``value`` as a scalar of ``dtype``, capped at its largest finite value."""
    return dtype.type(min(value, float(np.finfo(dtype).max)))
