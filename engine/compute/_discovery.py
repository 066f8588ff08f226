"""Finding devices by name: ``"cuda:0"``, ``"sycl:gpu"``, ``"sycl:cpu"``, ``"sycl:1"``, ``"cuda"``,
``"sycl"``, or None for the first found (CUDA, then a SYCL GPU, then the SYCL CPU device).

Discovery never raises because a package or driver is missing: ``list_devices`` reports, per
backend, the devices found or the reason there are none.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidInputError
from . import _cuda, _sycl
from ._types import Context, DeviceInfo, DeviceUnavailableError

BACKENDS = ("cuda", "sycl")

_contexts: dict[str, Context] = {}


@dataclass(frozen=True)
class DeviceListing:
    """Devices found per backend; ``missing[backend]`` says why a backend has none."""

    devices: tuple[DeviceInfo, ...]
    missing: dict[str, str]

    def describe(self) -> str:
        lines = [info.describe() for info in self.devices]
        lines += [f"{backend}: {reason}" for backend, reason in self.missing.items()]
        return "\n".join(lines)


def _backend_devices(backend: str) -> tuple[list, str | None]:
    return (_cuda if backend == "cuda" else _sycl).usable_devices()


def list_devices() -> DeviceListing:
    """Every device each backend can use here, in the order ``open_device(None)`` prefers."""
    infos, missing = [], {}
    for backend in BACKENDS:
        devices, reason = _backend_devices(backend)
        if reason:
            missing[backend] = reason
        for index, device in enumerate(devices):
            infos.append(_cuda.describe(device) if backend == "cuda" else _sycl.describe(device, index))
    return DeviceListing(tuple(infos), missing)


def _parse(spec: str) -> tuple[str, str]:
    backend, _, which = spec.strip().lower().partition(":")
    if backend not in BACKENDS:
        raise InvalidInputError(f"device {spec!r}: the backend must be one of {list(BACKENDS)} "
                                f"(e.g. 'cuda:0', 'sycl:gpu', 'sycl:cpu')")
    if which not in ("", "gpu", "cpu") and not which.isdigit():
        raise InvalidInputError(f"device {spec!r}: after '{backend}:' give an index, 'gpu' or 'cpu'")
    if backend == "cuda" and which == "cpu":
        raise InvalidInputError(f"device {spec!r}: CUDA has no CPU device")
    return backend, which


def _select(backend: str, which: str) -> tuple[object, int]:
    devices, reason = _backend_devices(backend)
    if reason:
        raise DeviceUnavailableError(f"no {backend} device: {reason}")
    if which.isdigit():
        if int(which) >= len(devices):
            raise DeviceUnavailableError(f"{backend}:{which} does not exist ({len(devices)} "
                                         f"{backend} device(s) found)")
        return devices[int(which)], int(which)
    if which in ("gpu", "cpu") and backend == "sycl":
        for index, device in enumerate(devices):
            if (device.is_gpu if which == "gpu" else device.is_cpu):
                return device, index
        raise DeviceUnavailableError(f"no SYCL {which.upper()} device (found: "
                                     f"{', '.join(d.name for d in devices)})")
    return devices[0], 0


def open_device(spec: str | None = None) -> Context:
    """The :class:`Context` for a device string (one per device for the process, so programs
    built on it are cached across solvers). Raises :class:`DeviceUnavailableError`."""
    if spec is None:
        reasons = []
        for backend in BACKENDS:
            devices, reason = _backend_devices(backend)
            if devices:
                return open_device(f"{backend}:0")
            reasons.append(reason)
        raise DeviceUnavailableError("no GPU compute device: " + "; ".join(reasons))
    backend, which = _parse(spec)
    try:
        device, index = _select(backend, which)
    except DeviceUnavailableError as error:
        raise DeviceUnavailableError(f"device {spec!r}: {error}") from None
    key = f"{backend}:{index}"
    if key not in _contexts:
        _contexts[key] = (_cuda.CudaContext(device) if backend == "cuda"
                          else _sycl.SyclContext(device, index))
    return _contexts[key]


def unavailable_reason() -> str | None:
    """None when some device can be opened, else why none can (naming the missing packages)."""
    reasons = []
    for backend in BACKENDS:
        devices, reason = _backend_devices(backend)
        if devices:
            return None
        reasons.append(reason)
    return "no GPU compute device: " + "; ".join(reasons)
