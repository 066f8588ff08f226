"""``orrery devices``: what this machine offers: CPU SIMD level and threads, and the solvers
that can run here (with the reason for those that cannot)."""

from __future__ import annotations

from ...engine.cpu_features import build_info, simd_level
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
    info = build_info()
    level = simd_level()
    forced = f"; ORRERY_SIMD={info['simd_env']}" if info["simd_env"] else ""
    print(f"CPU: {info['threads']} threads, SIMD {level['level']} "
          f"(CPU supports {info['simd_cpu']}; built: {', '.join(info['simd_compiled'])}{forced})")
    print(f"  cpu-direct and cpu-tree kernels, 1/sqrt: f32 {level['rsqrt_f32']}; f64 {level['rsqrt_f64']}")
    _print_compute_devices()
    print("Solvers:")
    for name, spec in solver_specs().items():
        reason = spec.unavailable_reason()
        status = "available" if reason is None else f"unavailable: {reason}"
        print(f"  {name:<11} {status}. {spec.doc}")
    return 0
