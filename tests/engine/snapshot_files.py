"""Small snapshot files in other codes' formats, written by pynbody itself (Tipsy, GADGET-2
binary) or by h5py in the documented HDF5 layouts (GADGET-4/AREPO, SWIFT), for the loader tests.

Every writer returns the particles it wrote in its own units: ``{family: (pos, vel, mass)}``.
"""

from __future__ import annotations

import numpy as np

KPC_CM = 3.0856775814913673e21
MSOL_G = 1.98841e33


def _families(counts: dict[str, int], seed: int) -> dict[str, tuple]:
    rng = np.random.default_rng(seed)
    out = {}
    for index, (family, n) in enumerate(counts.items()):
        pos = rng.normal(scale=1.0 + index, size=(n, 3)).astype(np.float32)
        vel = rng.normal(scale=50.0, size=(n, 3)).astype(np.float32)
        mass = np.full(n, 1e-4 * (index + 1), np.float32)
        out[family] = (pos, vel, mass)
    return out


def write_tipsy(path, counts=None, *, seed=0, time=0.5):
    """Tipsy through pynbody: units kpc, 1e10 Msol and G = 1 velocities (pynbody's defaults)."""
    import pynbody

    counts = counts or {"gas": 200, "dm": 1000, "star": 500}
    data = _families(counts, seed)
    snap = pynbody.new(**counts)
    for family, (pos, vel, mass) in data.items():
        part = snap[pynbody.family.get_family(family)]
        part["pos"], part["vel"], part["mass"] = pos, vel, mass
    snap.properties["time"] = time
    snap.write(fmt=pynbody.snapshot.tipsy.TipsySnap, filename=str(path))
    return data


def write_gadget4_hdf5(path, counts=None, *, seed=0, time=0.25):
    """A GADGET-4 / AREPO style HDF5 snapshot, units in the header; ``time`` in Gyr (as
    ``Time_GYR``, which pynbody reads; it takes ``Time`` as a scale factor)."""
    import h5py

    counts = counts or {"dm": 1000, "star": 500}
    types = {"gas": 0, "dm": 1, "star": 4, "bh": 5}
    data = _families(counts, seed)
    numbers = np.zeros(6, np.uint32)
    with h5py.File(path, "w") as h5:
        header = h5.create_group("Header")
        for family, n in counts.items():
            numbers[types[family]] = n
        header.attrs.update({
            "NumPart_ThisFile": numbers, "NumPart_Total": numbers.astype(np.uint64),
            "NumPart_Total_HighWord": np.zeros(6, np.uint32), "MassTable": np.zeros(6),
            "Time": 1.0, "Time_GYR": time, "Redshift": 0.0, "BoxSize": 1000.0, "NumFilesPerSnapshot": 1,
            "Omega0": 0.0, "OmegaLambda": 0.0, "HubbleParam": 1.0, "Flag_DoublePrecision": 0,
            "UnitLength_in_cm": KPC_CM, "UnitMass_in_g": 1e10 * MSOL_G,
            "UnitVelocity_in_cm_per_s": 1e5})
        start = 0
        for family, (pos, vel, mass) in data.items():
            group = h5.create_group(f"PartType{types[family]}")
            group["Coordinates"], group["Velocities"], group["Masses"] = pos, vel, mass
            group["ParticleIDs"] = np.arange(start, start + len(pos), dtype=np.uint64)
            start += len(pos)
    return data
