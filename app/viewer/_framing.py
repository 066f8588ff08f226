"""What the first picture shows: the camera on the bright particles (not the dim haloes around
them), following them as the run goes, and the moment a scripted screenshot is taken (when a
collision's tidal tails reach furthest, as measured on the particles, not at a fixed step)."""

from __future__ import annotations

import math

import numpy as np

from ..render import Camera
from ..render._style import DIM_WEIGHT

# The viewer's first view looks down on the x-y plane (the plane of a scenario's disks and
# orbits) from this high above it: disks face-on, with a little depth.
VIEW_PITCH = math.radians(70.0)
# Share of the bright particles the camera keeps in view: a galaxy's tails are a few percent.
FIT_FRACTION = 0.98
# A scene this much longer one way than the other across the x-y plane is turned to lie along
# the picture's width (two galaxies side by side, not one above the other).
ELONGATED = 1.5
# Share of the way (in log distance) the following camera moves towards the fitted distance per
# frame: slow enough not to pump with every step, fast enough to keep up with a collision.
FOLLOW_SHARE = 0.05
# The framing looks at no more than about this many particles (a sample of larger frames),
# and follows frames larger than that every FOLLOW_BIG_EVERY frames only (it needs the frame on
# the host: a GPU run's 10M positions take tens of milliseconds to download).
SAMPLE = 50_000
FOLLOW_BIG_EVERY = 30
# A saved "best" picture is replaced when a later frame's tails are longer by this share (each
# replacement reads the screen back).
BETTER_BY = 1.01


def bright(positions: np.ndarray, population, weights) -> np.ndarray:
    """The particles drawn at more than a halo's brightness (all of them when none are), or an
    even sample of them in a frame of more than SAMPLE particles."""
    stride = max(1, len(positions) // SAMPLE)
    if weights is None or population is None or len(population) != len(positions):
        return positions[::stride]
    sample = positions[::stride]
    mask = np.asarray(weights, dtype=float)[np.asarray(population)[::stride]] > DIM_WEIGHT
    return sample[mask] if mask.any() else sample


def framed_camera(positions: np.ndarray, normals=()) -> Camera:
    """The first view of ``positions`` (the bright particles): from above, all of them in it,
    an elongated scene turned to lie along the picture's width, from the side where the disks
    of ``normals`` (unit vectors, :func:`disk_normals`) look most face-on."""
    camera = Camera(pitch=VIEW_PITCH)
    finite = positions[np.isfinite(positions).all(axis=1)]
    if len(finite) >= 3:
        spread, axes = np.linalg.eigh(np.cov(finite[:, :2].astype(np.float64), rowvar=False))
        if spread[1] > ELONGATED ** 2 * max(spread[0], 0.0):
            longest = axes[:, 1]
            # the camera's right is (-sin yaw, cos yaw, 0): along the longest axis, either way
            sides = [float(np.arctan2(longest[1], longest[0]) + turn)
                     for turn in (np.pi / 2, -np.pi / 2)]
            camera.yaw = max(sides, key=lambda yaw: _openness(yaw, normals))
    camera.fit(positions, fraction=FIT_FRACTION)
    return camera


def _openness(yaw: float, normals) -> float:
    """How face-on disks with these normals look from (yaw, VIEW_PITCH): the summed |cosine|
    between the line of sight and each normal."""
    sight = Camera(yaw=yaw, pitch=VIEW_PITCH, distance=1.0).eye
    return float(sum(abs(np.dot(sight, normal)) for normal in normals))


def disk_normals(positions: np.ndarray, population, names) -> list[np.ndarray]:
    """The normal of each population named "... disk": its thinnest direction (the covariance's
    smallest axis), as a unit vector."""
    if population is None or len(population) != len(positions):
        return []
    population = np.asarray(population)
    normals = []
    for label, name in enumerate(names):
        disk = positions[population == label]
        if name.endswith("disk") and len(disk) >= 3:
            sample = disk[:: max(1, len(disk) // 5000)].astype(np.float64)
            normals.append(np.linalg.eigh(np.cov(sample, rowvar=False))[1][:, 0])
    return normals


def follow(camera: Camera, positions: np.ndarray) -> None:
    """Keep the bright particles in view as they move (called once per new frame): aim at their
    middle, and ease the distance towards the one that fits them."""
    fitted = Camera(yaw=camera.yaw, pitch=camera.pitch, fov_y=camera.fov_y)
    fitted.fit(positions, fraction=FIT_FRACTION)
    camera.target = fitted.target
    camera.distance = float(np.exp((1.0 - FOLLOW_SHARE) * np.log(camera.distance)
                                   + FOLLOW_SHARE * np.log(fitted.distance)))


def tail_length(positions: np.ndarray, population, names) -> float | None:
    """How far the galaxies' disks reach beyond their own centres: for each galaxy (populations
    named "<galaxy> disk", "<galaxy> bulge", ...), the 90th percentile distance of its disk
    particles from its centre (the median of its bulge, else of its disk), summed over the
    galaxies. It grows as tidal tails are drawn out. None for a scene with fewer than two disks.
    """
    if population is None or len(population) != len(positions):
        return None
    population = np.asarray(population)
    disks = {name.rsplit(" ", 1)[0]: index for index, name in enumerate(names)
             if name.endswith(" disk")}
    if len(disks) < 2:
        return None
    total = 0.0
    for galaxy, disk_label in disks.items():
        disk = positions[population == disk_label]
        if len(disk) == 0:
            return None
        bulge_name = f"{galaxy} bulge"
        core = positions[population == names.index(bulge_name)] if bulge_name in names else disk
        centre = np.median(core if len(core) else disk, axis=0)
        total += float(np.quantile(np.linalg.norm(disk - centre, axis=1), 0.9))
    return total
