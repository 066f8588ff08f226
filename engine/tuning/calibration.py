"""The calibration cache: timing curves measured by ``orrery calibrate`` on one machine and
device, kept between sessions for the ``auto`` solver. How curves become crossovers is in
:mod:`orrery.engine.tuning.crossovers`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from .. import portable
from ..errors import CalibrationCacheError, InvalidInputError
from ..input_files import read_small_text
from .crossovers import DEFAULT_TOLERANCE, Schedule, find_schedule

# Bumped whenever the cache file's layout changes; older files are ignored with a warning.
CACHE_FORMAT = 1
# Larger than any cache `orrery calibrate` writes (a few KB an entry): a bigger file is not one.
MAX_CACHE_BYTES = 16 << 20


class CalibrationCacheWarning(UserWarning):
    """The calibration cache exists but cannot be used (corrupt, older format, or measured on
    another machine or device); ``auto`` falls back to its default thresholds."""


@functools.lru_cache(maxsize=1)
def machine_key() -> dict:
    """The CPU this process runs on: model, hardware threads and its SIMD level (what the CPU
    offers, not what the native module was compiled for nor what ``ORRERY_SIMD`` asks)."""
    from ..cpu_features import build_info, hardware_threads

    return {"cpu": portable.cpu_model(), "threads": hardware_threads(),
            "simd": build_info()["simd_cpu"]}


@functools.lru_cache(maxsize=1)
def device_key() -> dict:
    """The GPUs this process can see, by backend and name. Goes through the compute layer so
    the SYCL runtime is configured before dpctl is first imported."""
    from ..compute import list_devices

    return {"gpus": sorted(f"{info.backend}: {info.name}" for info in list_devices().devices
                           if info.kind != "cpu")}


def cache_path() -> Path:
    """``$ORRERY_CACHE_DIR/calibration.json`` if set, else ``$XDG_CACHE_HOME/orrery/...``,
    else ``~/.cache/orrery/calibration.json``."""
    override = os.environ.get("ORRERY_CACHE_DIR")
    if override:
        return Path(override) / "calibration.json"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "orrery" / "calibration.json"


@dataclass(frozen=True)
class Calibration:
    """Timing curves measured on one machine and device at one precision.

    ``settings`` records how they were measured (initial conditions, solver options at their
    defaults, trials); ``created`` is an ISO 8601 UTC timestamp.
    """

    precision: str
    curves: dict[str, list[tuple[int, float]]]
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    settings: dict = field(default_factory=dict)
    machine: dict = field(default_factory=machine_key)
    device: dict = field(default_factory=device_key)

    @property
    def date(self) -> str:
        return self.created[:10]

    def schedule(self, solvers: Iterable[str] | None = None, *,
                 tolerance: float = DEFAULT_TOLERANCE) -> Schedule | None:
        """Crossovers among ``solvers`` (default: every measured one), or None when none of
        them was measured."""
        wanted = list(self.curves) if solvers is None else [s for s in solvers if s in self.curves]
        if not any(self.curves[s] for s in wanted):
            return None
        return find_schedule({s: self.curves[s] for s in wanted}, tolerance=tolerance)

    def to_json(self) -> dict:
        schedule = self.schedule()
        return {"precision": self.precision, "created": self.created, "settings": self.settings,
                "machine": self.machine, "device": self.device,
                "curves": {name: [[int(n), float(s)] for n, s in points]
                           for name, points in self.curves.items()},
                # Written for people reading the file; loading recomputes them from the curves.
                "crossovers": schedule.to_json() if schedule else []}

    @classmethod
    def from_json(cls, entry: dict) -> Calibration:
        """The calibration an entry of the cache holds; ValueError (or KeyError, TypeError)
        for one that is damaged, including any timing point that is not a positive particle
        count with a positive, finite time."""
        curves = {str(name): [_timing_point(point) for point in points]
                  for name, points in entry["curves"].items()}
        return cls(precision=str(entry["precision"]), curves=curves, created=str(entry["created"]),
                   settings=dict(entry.get("settings", {})), machine=dict(entry["machine"]),
                   device=dict(entry["device"]))


def _timing_point(point) -> tuple[int, float]:
    n, seconds = point
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not isinstance(seconds, (int, float)):
        raise ValueError(f"timing point {point!r} is not two numbers")
    if not (math.isfinite(n) and n >= 1 and n == int(n)):
        raise ValueError(f"timing point {point!r}: the particle count is not a positive integer")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"timing point {point!r}: the time is not positive and finite")
    return int(n), float(seconds)


def _read_entries(path: Path) -> list[dict] | None:
    """The file's entries, or None (with a warning) when it cannot be used at all."""
    try:
        payload = json.loads(read_small_text(path, what="calibration cache",
                                             limit=MAX_CACHE_BYTES))
    except (InvalidInputError, json.JSONDecodeError, RecursionError) as error:
        if isinstance(error, RecursionError):
            error = "it nests lists or tables too deeply"
        warnings.warn(f"ignoring the calibration cache {path}: it cannot be read ({error}); "
                      f"run `orrery calibrate` to measure again", CalibrationCacheWarning,
                      stacklevel=3)
        return None
    if not isinstance(payload, dict) or payload.get("format") != CACHE_FORMAT \
            or not isinstance(payload.get("entries"), list):
        found = payload.get("format") if isinstance(payload, dict) else None
        warnings.warn(f"ignoring the calibration cache {path}: format {found!r}, expected "
                      f"{CACHE_FORMAT}; run `orrery calibrate` to measure again",
                      CalibrationCacheWarning, stacklevel=3)
        return None
    return payload["entries"]


def load_calibration(precision: str, *, path: Path | None = None) -> Calibration | None:
    """The stored calibration for this machine, device and ``precision``, or None.

    A missing file is silently None. A corrupt file, an older format, or a file holding only
    measurements of another machine or device gives None with a
    :class:`CalibrationCacheWarning`.
    """
    path = path or cache_path()
    if not path.exists():
        return None
    entries = _read_entries(path)
    if entries is None:
        return None
    here = (machine_key(), device_key())
    readable, matching = 0, []
    for entry in entries:
        try:
            calibration = Calibration.from_json(entry)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            warnings.warn(f"ignoring a damaged entry in the calibration cache {path}: {error!r}",
                          CalibrationCacheWarning, stacklevel=2)
            continue
        readable += 1
        if (calibration.machine, calibration.device) == here:
            matching.append(calibration)
    if not matching:
        if readable:
            warnings.warn(f"ignoring the calibration cache {path}: it was measured on another "
                          f"machine or device (this one: {here[0]}, {here[1]}); run "
                          f"`orrery calibrate` to measure this one", CalibrationCacheWarning,
                          stacklevel=2)
        return None
    return next((c for c in matching if c.precision == precision), None)


def save_calibration(calibration: Calibration, *, path: Path | None = None) -> Path:
    """Store ``calibration``, replacing an earlier one of the same machine, device and
    precision and keeping the others (a home directory shared between machines)."""
    path = path or cache_path()
    kept = []
    if path.exists():
        with warnings.catch_warnings():
            # A damaged file is being replaced: nothing in it is worth a warning here.
            warnings.simplefilter("ignore", CalibrationCacheWarning)
            entries = _read_entries(path) or []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            same = (entry.get("machine"), entry.get("device"), entry.get("precision")) == \
                (calibration.machine, calibration.device, calibration.precision)
            if not same:
                kept.append(entry)
    payload = {"format": CACHE_FORMAT, "entries": kept + [calibration.to_json()]}
    temporary = path.with_suffix(".json.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(payload, indent=1))
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise CalibrationCacheError(f"cannot write the calibration cache {path}: {error}") from None
    return path


def check_cache_writable(*, path: Path | None = None) -> Path:
    """Raise :class:`CalibrationCacheError` now, not after measuring, when the cache cannot be
    written: its folder cannot be made or written, or the file's place is taken by a folder."""
    path = path or cache_path()
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as error:
        raise CalibrationCacheError(f"cannot write the calibration cache {path}: {error}; set "
                                    "ORRERY_CACHE_DIR to a folder you can write, or use "
                                    "--dry-run") from None
    return path


__all__ = ["CACHE_FORMAT", "Calibration", "CalibrationCacheWarning", "cache_path",
           "check_cache_writable", "device_key", "load_calibration", "machine_key",
           "save_calibration"]
