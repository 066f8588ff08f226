"""Initial conditions drawn on a compute device, straight into a device state's rows: a
billion-body run would otherwise build its particles on the host first (56 GB of float64
positions, velocities and masses) and copy them over.

Each generator of ``DEVICE_GENERATORS`` draws the distribution of a host generator, with that
generator's parameters and defaults: ``ics.plummer`` (``kernels/plummer.cl``) and
``galaxy.galaxy_collision`` (``kernels/galaxy.cl``, from tables of each galaxy's model made
here). The random numbers are a counter-based generator's (``kernels/counter_random.cl``), one
stream per body, so a seed gives the same bodies on every device and launch, but not the bodies
the host generator gives for that seed.

The bodies are drawn in consecutive blocks, one per population (the host generator's, in its
order). Then, as the host generators do:

1. each block is moved so that its mean position and velocity are its target's (the origin for
   a Plummer sphere; its galaxy's place on the orbit for a component of a collision);
2. the targets are moved to their mass-weighted centre, which puts the whole set in its
   centre-of-mass frame (``kernels/centre_of_mass.cl``; step 2 folds into step 1's shifts).
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import Callable, Mapping, NamedTuple

import numpy as np

from ..compute import Context, DeviceArray, Program, launch_size
from ..errors import InvalidInputError
from ..particles import check_count
from . import galaxy, ics

# Work-items of the kernels' groups, and the centre reduction's most groups (their sums are
# downloaded and added on the host).
DRAW_GROUP = 64
CENTRE_GROUP = 256
CENTRE_GROUPS = 256
# centre_partials' sums per group: the mass-weighted x, y, z, vx, vy, vz and the mass.
CENTRE_SUMS = 7
# Entries of a galaxy component's table rows, at w = sqrt(mass share) = k / (TABLE_SIZE - 1).
# Interpolating them moves the distribution of each drawn radius, velocity component, cap and
# width by a Kolmogorov-Smirnov distance under 2e-5 from the model's own (10^6 draws of the
# default model), below the sampling noise, 1/sqrt(N), of up to 10^9 bodies; 1024 entries
# would move the bulge's widths by 3e-4 (test_gpu_drawn.py holds the tables to 1e-4).
TABLE_SIZE = 8192
# galaxy_collision's components, in disk_galaxy's order.
GALAXY_COMPONENTS = ("disk", "bulge", "halo")


class Block(NamedTuple):
    """Consecutive rows drawn alike: one population of ``count`` bodies."""

    population: str
    count: int


class Placement(NamedTuple):
    """Where a drawn block goes: its rows [start, start + count), the mean (x, y, z, vx, vy, vz)
    it is moved to before the whole set moves to its centre-of-mass frame, and its mass."""

    start: int
    count: int
    target: np.ndarray
    mass: float


class DeviceGenerator(NamedTuple):
    """A generator that draws on a device: the host generator whose distribution and parameters
    it takes, its blocks for a count and parameters, and the drawing itself (``draw_on_device``)."""

    host: Callable
    blocks: Callable[[int, Mapping], tuple[Block, ...]]
    draw: Callable


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise InvalidInputError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


def device_generator_of(host: Callable) -> str | None:
    """The name of the generator that draws host generator ``host``'s bodies on a device."""
    return next((name for name, generator in DEVICE_GENERATORS.items() if generator.host is host),
                None)


def check_device_generator(name: str) -> DeviceGenerator:
    if name not in DEVICE_GENERATORS:
        raise InvalidInputError(f"initial conditions {name!r} are drawn on the host only; on a "
                                f"device: {', '.join(DEVICE_GENERATORS)}")
    return DEVICE_GENERATORS[name]


def blocks(name: str, count: int, parameters: Mapping | None = None) -> tuple[Block, ...]:
    """The populations that ``name`` draws for ``count`` bodies and ``parameters`` (the host
    generator's keyword arguments but the count, seed and precision), in row order; refuses
    what the host generator would refuse, before anything is drawn."""
    return check_device_generator(name).blocks(check_count(count), parameters or {})


def populations(name: str, count: int, parameters: Mapping | None = None):
    """(each body's population label as uint8, the populations' names) of ``blocks``."""
    drawn = blocks(name, count, parameters)
    labels = np.repeat(np.arange(len(drawn), dtype=np.uint8), [block.count for block in drawn])
    return labels, tuple(block.population for block in drawn)


def draw_on_device(name: str, context: Context, body: DeviceArray, velocity: DeviceArray, count: int,
                   *, seed: int, parameters: Mapping | None = None) -> None:
    """Write the initial conditions ``name`` (one of ``DEVICE_GENERATORS``) of ``count`` bodies
    into the first ``count`` rows of a state's ``body`` (x, y, z, mass) and ``velocity``
    (vx, vy, vz, 0) arrays (``real4`` rows, float32 or float64), in their centre-of-mass frame."""
    generator = check_device_generator(name)
    accum = np.dtype(np.float64 if context.info.fp64 else np.float32)
    defines = {"REAL_BITS": body.dtype.itemsize * 8, "ACCUM_BITS": accum.itemsize * 8,
               "TWO_PI": 2 * math.pi, "CENTRE_GROUP": CENTRE_GROUP, "CENTRE_SUMS": CENTRE_SUMS}
    program, placements = generator.draw(context, defines, body, velocity, count,
                                         check_seed(seed), parameters or {})
    _centre(program, context, body, velocity, placements, accum)


def _centre(program: Program, context: Context, body: DeviceArray, velocity: DeviceArray,
            placements: list[Placement], accum: np.dtype) -> None:
    """Steps 1 and 2 of the module's docstring."""
    masses = np.array([placement.mass for placement in placements])
    centre = masses @ np.array([placement.target for placement in placements]) / masses.sum()
    partials_kernel, shift_kernel = program.kernel("centre_partials"), program.kernel("centre_shift")
    for start, count, target, _ in placements:
        groups = min(CENTRE_GROUPS, -(-count // CENTRE_GROUP))
        partials = context.empty(CENTRE_SUMS * groups, accum, "temporaries.centre_partials")
        partials_kernel.launch(groups * CENTRE_GROUP, CENTRE_GROUP, body, velocity, np.int32(start),
                               np.int32(count), partials)
        sums = partials.download().reshape(-1, CENTRE_SUMS).sum(axis=0, dtype=np.float64)
        shift = sums[:6] / sums[6] - (target - centre)
        shift_kernel.launch(launch_size(count, DRAW_GROUP), DRAW_GROUP, np.int32(start), np.int32(count),
                            *(accum.type(value) for value in shift), body, velocity)


def _plummer_blocks(count: int, parameters: Mapping) -> tuple[Block, ...]:
    _bound("plummer", count, parameters)
    return (Block("all", count),)


def _draw_plummer(context, defines, body, velocity, count, seed, parameters):
    program = context.build(["counter_random.cl", "plummer.cl", "centre_of_mass.cl"], package=__package__,
                            defines={**defines, "PLUMMER_SCALE": float(ics.PLUMMER_SCALE),
                                     "MASS_CUTOFF": ics.MASS_CUTOFF})
    program.kernel("plummer_bodies").launch(launch_size(count, DRAW_GROUP), DRAW_GROUP, np.uint64(seed),
                                            np.int32(count), body, velocity)
    return program, [Placement(0, count, np.zeros(6), 1.0)]


def _collision_plan(count: int, parameters: Mapping) -> tuple[galaxy.PlannedGalaxy, ...]:
    bound = _bound("galaxy_collision", count, parameters)
    arguments = bound.kwargs
    del arguments["seed"], arguments["precision"]
    return galaxy.collision_plan(*bound.args, **arguments)


def _collision_blocks(count: int, parameters: Mapping) -> tuple[Block, ...]:
    return tuple(Block(f"{planned.label} {component}", share)
                 for planned in _collision_plan(count, parameters)
                 for component, share in zip(GALAXY_COMPONENTS, planned.counts) if share)


def _draw_collision(context, defines, body, velocity, count, seed, parameters):
    """Each galaxy's components as ``galaxy_collision`` places them, each from its tables."""
    rows = {**{f"DISK_{row.upper()}": index for index, row in enumerate(galaxy.DISK_TABLE)},
            **{f"SPHEROID_{row.upper()}": index for index, row in enumerate(galaxy.SPHEROID_TABLE)}}
    program = context.build(["counter_random.cl", "galaxy.cl", "centre_of_mass.cl"], package=__package__,
                            defines={**defines, **rows, "TABLE_SIZE": TABLE_SIZE})
    accum = np.dtype(np.float64 if defines["ACCUM_BITS"] == 64 else np.float32)
    real = body.dtype.type
    root_fraction = np.linspace(0.0, 1.0, TABLE_SIZE)
    placements, start, uploads = [], 0, []
    for planned in _collision_plan(count, parameters):
        model = planned.model
        frame = _kept(uploads, context, np.concatenate([
            planned.length_scale * planned.rotation.ravel(), planned.offset,
            planned.speed_scale * planned.rotation.ravel(), planned.drift]).astype(accum),
            "temporaries.galaxy_frame")
        masses = dict(zip(GALAXY_COMPONENTS, (model.disk_mass, model.bulge_mass, model.halo_mass)))
        spheroid_scales = {"bulge": model.bulge_scale, "halo": model.halo_scale}
        for component, share in zip(GALAXY_COMPONENTS, planned.counts):
            if not share:
                continue
            # The host's masses to the bit: disk_galaxy's mass / count, then galaxy_collision's scale.
            body_mass = masses[component] / share * planned.mass_scale
            if component == "disk":
                table = galaxy.disk_table(model, root_fraction)
                kernel, shape = program.kernel("disk_bodies"), (accum.type(model.disk_height),)
            else:
                table = galaxy.spheroid_table(model, root_fraction, masses[component],
                                              spheroid_scales[component])
                kernel, shape = program.kernel("spheroid_bodies"), ()
            kernel.launch(launch_size(share, DRAW_GROUP), DRAW_GROUP, np.uint64(seed), np.int32(start),
                          np.int32(share), real(body_mass), *shape,
                          _kept(uploads, context, table.astype(accum), "temporaries.galaxy_table"), frame,
                          body, velocity)
            placements.append(Placement(start, share, np.concatenate([planned.offset, planned.drift]),
                                        body_mass * share))
            start += share
    context.synchronize()  # the kernels have read the tables and frames before they are freed
    return program, placements


def _kept(uploads: list, context: Context, values: np.ndarray, name: str) -> DeviceArray:
    """``values`` uploaded, and held in ``uploads`` while kernels queued with them may run."""
    uploads.append(context.upload(values, name))
    return uploads[-1]


def _bound(name: str, count: int, parameters: Mapping) -> inspect.BoundArguments:
    """``parameters`` bound to the host generator's signature, its defaults applied (as a
    preset's [parameters] reach it); the count and seed are the drawing's own, the precision
    the state's."""
    own = sorted({"n", "seed", "precision"} & parameters.keys())
    if own:
        raise InvalidInputError(f"{', '.join(own)}: drawn on a device, the count and seed are "
                                "given on their own and the precision is the solver's")
    try:
        bound = inspect.signature(DEVICE_GENERATORS[name].host).bind(count, **parameters)
    except TypeError as error:
        raise InvalidInputError(f"initial conditions {name!r}: {error}") from None
    bound.apply_defaults()
    return bound


DEVICE_GENERATORS = {
    "plummer": DeviceGenerator(ics.plummer, _plummer_blocks, _draw_plummer),
    "galaxy_collision": DeviceGenerator(galaxy.galaxy_collision, _collision_blocks, _draw_collision),
}
