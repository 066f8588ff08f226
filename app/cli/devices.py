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


def run(args) -> int:
    print(f"CPU: {_native.hardware_threads()} threads")
    print("Solvers:")
    for name, spec in solver_specs().items():
        reason = spec.unavailable_reason()
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<11} {status}. {spec.doc}")
    return 0
