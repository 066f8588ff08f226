"""The device memory rows of ``orrery bench fmm --memory`` and ``orrery bench tree --memory``:
a GPU solver's peak device bytes per particle in a device-resident run, counted by the compute
layer from the arrays it allocated (``Context.memory``), with the breakdown by kind of array
(bodies: positions and masses, velocities, accelerations, tree, lists, expansions,
temporaries) and by array, and the solver's model of the arrays that N alone sizes
(``GpuSolver.device_bytes``, which refuses a run that cannot fit before it allocates)."""

from __future__ import annotations

from ..app.text_table import format_table
from ..engine.compute import KINDS
from ..engine.errors import InvalidInputError
from ..engine.options import Option

MEMORY = Option("memory", bool, False, "GPU solvers: also a row of peak device bytes per particle "
                                       "of a device-resident run (binding and two evaluations), by "
                                       "kind of array and by array, as the compute layer counted "
                                       "them")


def check_memory_solver(kind: str) -> None:
    """``--memory`` counts the arrays of a GPU solver's compute device."""
    if kind != "gpu":
        raise InvalidInputError("--memory counts a GPU solver's device arrays")


def memory_row(solver, particles, setting: dict) -> dict:
    """One ``table: memory`` row (``setting``'s columns first): ``bytes_per_particle`` (the peak over N), ``peak_bytes``,
    ``<kind>_bytes_per_particle`` for each kind of array live at the peak, ``arrays`` (bytes per
    particle of each array name at the peak), ``model_bytes_per_particle`` (the arrays N alone
    sizes) and the device they were counted on."""
    n = particles.n
    usage = solver.measure_memory(particles)
    info = solver.context.info
    row = {"table": "memory", **setting, "n": n, "bytes_per_particle": usage.peak / n,
           "peak_bytes": usage.peak,
           **{f"{kind}_bytes_per_particle": nbytes / n
              for kind, nbytes in usage.peak_by_kind().items()},
           "model_bytes_per_particle": sum(solver.device_bytes(n).values()) / n,
           "arrays": {name: nbytes / n for name, nbytes in
                      sorted(usage.peak_by_name.items(), key=lambda item: -item[1])},
           "device": info.spec, "device_name": info.name, "device_kind": info.kind,
           "device_driver": info.driver}
    return row


def print_memory(rows: list[dict], setting_columns: list[str]) -> None:
    """The memory rows as a table: bytes per particle, by kind of array."""
    if not rows:
        return
    kinds = [f"{kind}_bytes_per_particle" for kind in KINDS
             if any(f"{kind}_bytes_per_particle" in row for row in rows)]
    first = rows[0]
    print(f"\npeak device bytes per particle, device-resident, on {first['device']} (a "
          f"{first['device_kind']} device: {first['device_name']}, driver {first['device_driver']})")
    print(format_table(rows, [*setting_columns, "n", "bytes_per_particle",
                              "model_bytes_per_particle", *kinds]))
