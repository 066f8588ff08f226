"""``orrery devices``: what this machine offers: CPU SIMD level and threads, the compute devices,
which GPU stack would serve this platform and what to install for it, and the solvers that can
run here (with the reason for those that cannot)."""

from __future__ import annotations

import glob
import platform
from dataclasses import dataclass
from pathlib import Path

from ...engine.cpu_features import build_info, simd_level
from ...engine.solvers import solver_specs

NVIDIA, INTEL, AMD = "NVIDIA", "Intel", "AMD"
# PCI vendor ids, as Linux shows them in /sys/class/drm/card*/device/vendor.
_PCI_VENDORS = {"0x10de": NVIDIA, "0x8086": INTEL, "0x1002": AMD}
_MACHINES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
CUDA_INSTALL = ("pip install 'orrery[cuda]' (CuPy for CUDA 13 and cuda-python; needs NVIDIA's "
                "driver for CUDA 13, no toolkit)")
SYCL_INSTALL = ("pip install 'orrery[sycl]' (dpctl and Intel's OpenCL runtime; needs Intel's GPU "
                "driver with Level Zero or OpenCL)")


@dataclass(frozen=True)
class Platform:
    """Where ``orrery devices`` runs: ``system`` as :func:`platform.system` names it (``Linux``,
    ``Windows``, ``Darwin``), ``machine`` as ``x86_64`` or ``aarch64`` (else as reported), and the
    GPU makers seen on the PCI bus, or None where this system does not say (only Linux does)."""

    system: str
    machine: str
    gpu_vendors: frozenset[str] | None


def this_platform() -> Platform:
    machine = platform.machine()
    vendors = None
    if platform.system() == "Linux":
        vendors = frozenset(_PCI_VENDORS[Path(path).read_text().strip()]
                            for path in glob.glob("/sys/class/drm/card*/device/vendor")
                            if Path(path).read_text().strip() in _PCI_VENDORS)
    return Platform(platform.system(), _MACHINES.get(machine.lower(), machine), vendors)


def gpu_stack_advice(where: Platform, devices) -> list[str]:
    """Which GPU stack serves ``where`` and what to install, as lines to print. ``devices`` are
    the compute devices found (``DeviceInfo``s).

    1. A GPU device already found: its stack serves this machine; nothing to install.
    2. macOS: none today. The GPU kernels run through CUDA or SYCL, and Apple's GPUs have neither.
    3. Otherwise per GPU maker seen (every maker where the system does not say): NVIDIA through
       CUDA (the ``cuda`` extra: Linux on x86-64 and AArch64, Windows on x86-64); Intel through
       SYCL with dpctl (the ``sycl`` extra: x86-64 only, Linux and Windows); AMD: none today.
    4. No GPU seen: the CPU solvers serve; on x86-64 the ``sycl`` extra adds an OpenCL CPU
       device that runs the GPU solvers' kernels, slowly, for trying them.
    """
    gpus = [info for info in devices if info.kind == "gpu"]
    if gpus:
        return [f"{info.backend.upper()} serves this machine: {info.spec} ({info.name})" for info in gpus]
    if where.system == "Darwin":
        return ["none on macOS today: the GPU solvers run through CUDA or SYCL, which Apple's GPUs "
                "do not have; the CPU solvers serve (SIMD level above)"]
    x86 = where.machine == "x86_64"
    cuda_here = x86 or (where.machine == "aarch64" and where.system == "Linux")
    lines = []
    vendors = where.gpu_vendors if where.gpu_vendors is not None else {NVIDIA, INTEL, AMD}
    unknown = "" if where.gpu_vendors is not None else " (this system does not say which GPU it has)"
    if NVIDIA in vendors:
        lines.append(f"NVIDIA GPU{unknown}: CUDA, " + (CUDA_INSTALL if cuda_here else
                     f"which has no CuPy build for {where.system} on {where.machine}"))
    if INTEL in vendors:
        lines.append(f"Intel GPU{unknown}: SYCL through dpctl, " + (SYCL_INSTALL if x86 else
                     f"whose runtimes are built for x86-64 only, not {where.machine}"))
    if AMD in vendors:
        lines.append(f"AMD GPU{unknown}: no stack today (dpctl's runtimes have no HIP adapter)")
    if not lines:
        if any(info.kind == "cpu" for info in devices):
            trial = "; the SYCL CPU device above runs the GPU kernels (for trying them, not for speed)"
        elif x86:
            trial = ("; pip install 'orrery[sycl]' adds an OpenCL CPU device that runs the GPU "
                     "kernels (for trying them, not for speed)")
        else:
            trial = ""
        lines.append("no GPU seen: the CPU solvers serve" + trial)
    return lines


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("devices", help="list CPU features, devices and solvers",
                                   description="List the CPU's SIMD level and threads, compute "
                                               "devices and the solvers available here.")
    parser.set_defaults(handler=run)


def _print_compute_devices() -> None:
    """GPU compute devices per backend (SYCL through dpctl, CUDA through CuPy), or why a backend
    has none; without either package the CPU solvers still work, and this says so."""
    from ...engine.compute import list_devices

    listing = list_devices()
    print("Compute devices:")
    for info in listing.devices:
        print(f"  {info.describe()}")
    for backend, reason in listing.missing.items():
        print(f"  {backend}: {reason}")
    if not listing.devices:
        print("  no GPU compute stack: the CPU solvers work as usual; GPU solvers are unavailable")
    where = this_platform()
    print(f"GPU stack for {where.system} on {where.machine}:")
    for line in gpu_stack_advice(where, listing.devices):
        print(f"  {line}")


def run(args) -> int:
    info = build_info()
    level = simd_level()
    forced = f"; ORRERY_SIMD={info['simd_env']}" if info["simd_env"] else ""
    # SVE has a table per vector length: which one this CPU runs.
    table = f"[{level['kernels']} table] " if level["kernels"] != level["level"] else ""
    print(f"CPU: {info['threads']} threads, SIMD {level['level']} {table}"
          f"(CPU supports {info['simd_cpu']}; built: {', '.join(info['simd_compiled'])}{forced})")
    print(f"  cpu-direct and cpu-tree kernels, 1/sqrt: f32 {level['rsqrt_f32']}; f64 {level['rsqrt_f64']}")
    _print_compute_devices()
    print("Solvers:")
    for name, spec in solver_specs().items():
        reason = spec.unavailable_reason()
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<11} {status}. {spec.doc}")
    return 0
