"""What a GPU solver's accelerations() cost at N bodies, three ways (issue 19):

- ``resident``: the state a Simulation keeps on the device (``bind(...).compute_accelerations``
  and a synchronisation): the floor;
- ``device``: ``accelerations(pos, mass)`` with device arrays of the backend's framework (CuPy on
  CUDA, USM arrays on SYCL), results on the device: goal within 5% of ``resident``;
- ``host``: ``accelerations(pos, mass)`` with NumPy arrays, NumPy results: goal within 1.5x.

Usage: python scripts/interchange_timing.py --device cuda:0 --solver gpu-tree --n 1000000
Wall-clock medians over --trials after one warm-up call each; float32 Plummer sphere.
"""

from __future__ import annotations

import argparse
import statistics
import time

from orrery.engine import ics, make_solver


def median_ms(call, trials: int, synchronize) -> float:
    call()
    synchronize()
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        call()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--solver", default="gpu-tree", choices=["gpu-direct", "gpu-tree"])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()

    particles = ics.plummer(args.n, seed=1).astype("f32")
    solver = make_solver(args.solver, device=args.device, precision="f32", softening=0.01)
    context = solver.context
    state = solver.bind(particles)
    device_pos = context.export(context.upload(particles.pos))
    device_mass = context.export(context.upload(particles.mass))
    results = {
        "resident": median_ms(state.compute_accelerations, args.trials, context.synchronize),
        "device": median_ms(lambda: solver.accelerations(device_pos, device_mass), args.trials,
                            context.synchronize),
        "host": median_ms(lambda: solver.accelerations(particles.pos, particles.mass),
                          args.trials, context.synchronize),
    }
    print(f"{args.solver} on {context.info.spec} ({context.info.name}), N = {args.n:,}, f32")
    for path, ms in results.items():
        print(f"  {path:9s} {ms:8.2f} ms  {ms / results['resident']:5.2f}x resident")


if __name__ == "__main__":
    main()
