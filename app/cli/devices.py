"""``orrery devices``: what this machine offers: CPU SIMD level and threads, and the solvers
that can run here (with the reason for those that cannot)."""

from __future__ import annotations

from ... import _native
from ...engine.solvers import solver_specs


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


def run(args) -> int:
    print(f"CPU: {_native.hardware_threads()} threads")
    _print_compute_devices()
    print("Solvers:")
    for name, spec in solver_specs().items():
        reason = spec.unavailable_reason()
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<11} {status}. {spec.doc}")
    return 0
