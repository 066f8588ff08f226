"""Snapshots written by other simulation codes, read through pynbody, as N-body ``Particles``.

pynbody (the optional ``formats`` extra) reads GADGET-2/3 binary, GADGET-4/AREPO HDF5, SWIFT,
Tipsy, RAMSES and more; everything this project knows about those files and their units lives in
this module, as :mod:`orrery.engine.recording._format` does for recordings.

Units. Orrery works in N-body units with G = 1. A snapshot's physical quantities are converted
with a length unit and a mass unit (default 1 kpc and 1e10 solar masses, GADGET's own, which keep
galaxy-sized data near unity); the velocity unit sqrt(G M / L) and the time unit L / V follow.
Cosmological files are taken in physical (not comoving) units at the snapshot's scale factor.
Data without units (a dimensionless Tipsy file, say) is taken as already in N-body units. The
conversion travels with the particles (:class:`UnitSystem`) into the run's metadata.

Families become populations, in pynbody's family order (``dm``, ``star``, ``gas``, ``bh`` ...);
``family=`` keeps one.
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ._optional import MissingPackageError, require
from .errors import InvalidInputError, OrreryError
from .particles import Particles
from .input_files import not_a_regular_file, reading
from .snapshot_checks import check_memory, check_snapshot, declares_a_snapshot

DEFAULT_LENGTH_UNIT = "kpc"
DEFAULT_MASS_UNIT = "1e10 Msol"
# G in kpc (km/s)^2 / Msol (IAU 2015 nominal values, as astropy gives it).
_G_KPC_KMS2_PER_MSOL = 4.300917270e-6
_KM_PER_KPC = 3.0856775814913673e16
_SECONDS_PER_GYR = 3.15576e16

class SnapshotError(OrreryError):
    """A snapshot file that cannot be read: unknown format, missing family, empty selection."""


@dataclass(frozen=True)
class UnitSystem:
    """The physical size of one N-body unit of each quantity (G = 1)."""

    length: str
    mass: str
    velocity_km_s: float
    time_gyr: float

    def attributes(self) -> dict:
        """The conversion as plain data, for recordings and ``orrery info``."""
        return {"length": self.length, "mass": self.mass,
                "velocity": f"{self.velocity_km_s:.6g} km/s", "time": f"{self.time_gyr:.6g} Gyr",
                "G": 1.0}

    @classmethod
    def of(cls, length: str, mass: str) -> UnitSystem:
        units = _pynbody().units
        try:
            length_kpc = units.Unit(length).ratio("kpc")
            mass_msol = units.Unit(mass).ratio("Msol")
        except Exception as error:  # pynbody raises UnitsException, ValueError, ...
            raise InvalidInputError(f"units {length!r} / {mass!r}: {error}") from None
        if not (length_kpc > 0 and mass_msol > 0):
            raise InvalidInputError(f"units must be positive, got {length!r} and {mass!r}")
        velocity = math.sqrt(_G_KPC_KMS2_PER_MSOL * mass_msol / length_kpc)
        return cls(length, mass, velocity, length_kpc * _KM_PER_KPC / velocity / _SECONDS_PER_GYR)


@dataclass
class Snapshot:
    """One loaded snapshot: ``particles`` in N-body units at N-body ``time``."""

    path: str
    format: str
    particles: Particles
    time: float
    units: UnitSystem
    # Particle identities (pynbody's ``iord``) when the file has them: a sequence sorts by them so
    # that particle i is the same body in every snapshot.
    identities: np.ndarray | None

    def attributes(self) -> dict:
        """What a recording or a run keeps about where its particles came from."""
        return {"source": os.path.abspath(self.path), "source_format": self.format,
                "units": self.units.attributes()}


def _pynbody():
    return require("pynbody")


@contextlib.contextmanager
def quiet():
    """pynbody warns about every unit it assumes, at load and at first access of each array;
    Orrery reports the conversion it applied instead (:class:`UnitSystem`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def expand(pattern: str) -> list[str]:
    """The files a ``--load`` argument names: a path, or a glob pattern in sorted order."""
    if any(char in pattern for char in "*?["):
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise SnapshotError(f"no file matches {pattern!r}")
        return paths
    if not os.path.exists(pattern):
        raise SnapshotError(f"{pattern}: no such file")
    return [pattern]


def _check_path(path: str) -> None:
    if not os.path.exists(path):
        raise SnapshotError(f"{path}: no such file")
    kind = not_a_regular_file(path)
    if kind is not None and kind != "a folder":  # RAMSES outputs are folders
        raise SnapshotError(f"{path} is {kind}, not a snapshot file")


def open_raw(path: str):
    """The pynbody snapshot object behind ``path`` (lazy: arrays load on first use)."""
    _check_path(path)
    pynbody = _pynbody()
    try:
        with quiet():
            return pynbody.load(path)
    except OSError as error:
        raise SnapshotError(f"{path}: not a snapshot pynbody can read ({error})") from None
    except Exception as error:  # a damaged header raises anything from struct.error to KeyError
        raise SnapshotError(f"{path}: cannot read it as a snapshot: "
                            f"{type(error).__name__}: {error}") from None


def family_counts(raw) -> dict[str, int]:
    """Particles per family, in the file's family order."""
    return {family.name: len(raw[family]) for family in raw.families()}


def load_snapshot(path: str, *, family: str | None = None, length_unit: str = DEFAULT_LENGTH_UNIT,
                  mass_unit: str = DEFAULT_MASS_UNIT) -> Snapshot:
    """Read one snapshot into N-body units.

    Parameters
    ----------
    path : a file pynbody can open.
    family : keep only this family (``"dm"``, ``"star"``, ``"gas"``, ...); default: all.
    length_unit, mass_unit : the physical size of the N-body length and mass units.
    """
    with quiet(), _pynbody_errors(path), reading(path, "snapshot"):
        return _load(path, family, length_unit, mass_unit)


@contextlib.contextmanager
def _pynbody_errors(path: str):
    """pynbody's own exceptions (ValueError, KeyError, struct.error, IndexError, ... from a file
    its header checks let through) as one :class:`SnapshotError` naming the file; Orrery's
    errors and running out of memory pass as they are."""
    try:
        yield
    except (OrreryError, MemoryError):
        raise
    except Exception as error:  # noqa: BLE001 - pynbody raises anything on a damaged file
        raise SnapshotError(f"{path}: cannot read it as a snapshot: {type(error).__name__}: "
                            f"{error}") from None


def _load(path: str, family: str | None, length_unit: str, mass_unit: str) -> Snapshot:
    _check_path(path)
    held = check_snapshot(path, SnapshotError)  # before pynbody trusts its header
    raw = open_raw(path)
    units = UnitSystem.of(length_unit, mass_unit)
    check_memory(path, max(held, len(raw)), SnapshotError)
    counts = family_counts(raw)
    if family is not None:
        if family not in counts:
            raise SnapshotError(f"{path} has no {family!r} particles; it has "
                                + ", ".join(f"{name} ({n})" for name, n in counts.items()))
        selection = raw[_pynbody().family.get_family(family)]
        names = (family,)
    else:
        selection, names = raw, tuple(counts)
    if len(selection) == 0:
        raise SnapshotError(f"{path}: the selection holds no particles")
    if len(names) > 255:
        raise SnapshotError(f"{path}: {len(names)} families, at most 255 populations")
    context = raw.conversion_context()
    try:
        pos = _converted(path, selection, "pos", length_unit, context)
        vel = _converted(path, selection, "vel", "km s^-1", context,
                         scale=1.0 / units.velocity_km_s)
        mass = _converted(path, selection, "mass", mass_unit, context)
    except KeyError as error:
        raise SnapshotError(f"{path}: no {error.args[0]!r} array for the selection") from None
    population = np.zeros(len(selection), np.uint8)
    if family is None:
        for label, name in enumerate(names):
            population[raw[_pynbody().family.get_family(name)].get_index_list(raw)] = label
    identities = None
    if "iord" in selection.loadable_keys() or "iord" in selection.keys():
        identities = np.asarray(selection["iord"])
    try:
        particles = Particles(pos, vel, mass, population, names)
    except InvalidInputError as error:
        raise SnapshotError(f"{path}: {error}") from None
    return Snapshot(path, type(raw).__name__, particles, _time(path, raw, units), units, identities)


def _converted(path: str, selection, name: str, unit: str, context: dict,
               scale: float = 1.0) -> np.ndarray:
    """``selection[name]`` in ``unit`` times ``scale``. pynbody's own array is scaled in place and
    handed on when it is contiguous float32/float64 (a 10M-particle file is not copied again);
    anything else is converted once."""
    array = selection[name]
    factor = scale
    source_units = getattr(array, "units", None)
    if source_units is not None and not _dimensionless(source_units):
        try:
            factor *= float(source_units.ratio(unit, **context))
        except Exception as error:
            raise SnapshotError(f"{path}: cannot convert {name} from {source_units} to "
                                f"{unit}: {error}") from None
    data = array.view(np.ndarray)
    if data.dtype not in (np.float32, np.float64) or not data.flags.c_contiguous \
            or not data.flags.writeable:
        data = np.ascontiguousarray(data, dtype=np.float64)
    if factor != 1.0:
        data *= data.dtype.type(factor)
    return data


def _dimensionless(unit) -> bool:
    pynbody = _pynbody()
    return isinstance(unit, pynbody.units.NoUnit)


def _time(path: str, raw, units: UnitSystem) -> float:
    time = raw.properties.get("time")
    if time is None:
        return 0.0
    if hasattr(time, "in_units"):
        try:
            time = float(time.in_units("Gyr", **raw.conversion_context())) / units.time_gyr
        except Exception:
            return 0.0  # a time pynbody cannot place in physical units: start the clock at 0
    try:
        time = float(time)
    except (TypeError, ValueError):
        raise SnapshotError(f"{path}: its time {time!r:.60} is not a number") from None
    if not math.isfinite(time):
        raise SnapshotError(f"{path}: its time is {time}, not a finite number")
    return time


def describe(path: str) -> str:
    """What a snapshot holds, without loading its arrays: for ``orrery info``."""
    with quiet(), _pynbody_errors(path), reading(path, "snapshot"):
        return _describe(path)


def _describe(path: str) -> str:
    _check_path(path)
    check_snapshot(path, SnapshotError)  # what it declares agrees with itself
    raw = open_raw(path)
    counts = family_counts(raw)
    properties = raw.properties
    lines = [f"file:          {path} ({os.path.getsize(path) / 1e6:.1f} MB)",
             f"format:        {type(raw).__name__} (read by pynbody)",
             f"particles:     {len(raw)}",
             "families:      " + ", ".join(f"{name} ({n})" for name, n in counts.items())]
    for key in ("time", "a", "z", "boxsize", "h", "omegaM0", "omegaL0"):
        if key in properties:
            lines.append(f"{key + ':':<15}{properties[key]}")
    arrays = sorted(raw.loadable_keys())
    if arrays:
        lines.append("arrays:        " + ", ".join(arrays))
    return "\n".join(lines)


def looks_like_snapshot(path: str) -> bool:
    """Whether pynbody recognises ``path`` (False without pynbody), or it starts as a GADGET-2
    or Tipsy file does (so that reading it says what is wrong with it)."""
    if declares_a_snapshot(path):
        return True
    try:
        open_raw(path)
    except (SnapshotError, MissingPackageError):
        return False
    return True
