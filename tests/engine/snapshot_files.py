"""Small snapshot files in other codes' formats, written by pynbody itself (Tipsy, GADGET-2
binary) or by h5py in the documented HDF5 layouts (GADGET-4/AREPO, SWIFT), for the loader tests.

Every writer returns the particles it wrote in its own units: ``{family: (pos, vel, mass)}``.
"""

from __future__ import annotations

from pathlib import Path

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


def _pynbody_snapshot(counts, seed):
    """A new pynbody snapshot holding ``_families(counts, seed)``, and those arrays."""
    import pynbody

    data = _families(counts, seed)
    snap = pynbody.new(**counts)
    for family, (pos, vel, mass) in data.items():
        part = snap[pynbody.family.get_family(family)]
        part["pos"], part["vel"], part["mass"] = pos, vel, mass
    return snap, data


def write_tipsy(path, counts=None, *, seed=0, time=0.5):
    """Tipsy through pynbody: units kpc, 1e10 Msol and G = 1 velocities (pynbody's defaults)."""
    import pynbody

    counts = counts or {"gas": 200, "dm": 1000, "star": 500}
    snap, data = _pynbody_snapshot(counts, seed)
    snap.properties["time"] = time
    snap.write(fmt=pynbody.snapshot.tipsy.TipsySnap, filename=str(path))
    return data


def write_gadget4_hdf5(path, counts=None, *, seed=0, time=0.25, data=None):
    """A GADGET-4 / AREPO style HDF5 snapshot, units in the header; ``time`` in Gyr (as
    ``Time_GYR``, which pynbody reads; it takes ``Time`` as a scale factor). ``data``
    (``{family: (pos, vel, mass)}``) writes those particles instead of random ones."""
    import h5py

    if data is not None:
        counts = {family: len(pos) for family, (pos, _, _) in data.items()}
    counts = counts or {"dm": 1000, "star": 500}
    types = {"gas": 0, "dm": 1, "star": 4, "bh": 5}
    data = data or _families(counts, seed)
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


# SWIFT's internal units in these files: Mpc, 1e10 Msol and km/s (time unit Mpc / (km/s)).
SWIFT_LENGTH_CM = 1000 * KPC_CM
SWIFT_MASS_G = 1e10 * MSOL_G
SWIFT_TIME_S = SWIFT_LENGTH_CM / 1e5


def write_swift_hdf5(path, counts=None, *, seed=0, time=0.01):
    """A SWIFT snapshot (non-cosmological, one file, one top-level cell) in SWIFT's layout:
    units in ``Units``/``InternalCodeUnits``, each array's unit as its ``U_* exponent``
    attributes, ``Cells`` tables pynbody's reader reads; ``time`` in internal units."""
    import h5py

    counts = counts or {"gas": 150, "dm": 400, "star": 80}
    types = {"gas": 0, "dm": 1, "star": 4, "bh": 5}
    data = _families(counts, seed)
    numbers = np.zeros(7, np.uint64)
    for family, n in counts.items():
        numbers[types[family]] = n
    exponents = {"Coordinates": {"U_L": 1}, "Velocities": {"U_L": 1, "U_t": -1},
                 "Masses": {"U_M": 1}, "ParticleIDs": {}}
    unit_attrs = {"Unit length in cgs (U_L)": [SWIFT_LENGTH_CM], "Unit mass in cgs (U_M)": [SWIFT_MASS_G],
                  "Unit time in cgs (U_t)": [SWIFT_TIME_S], "Unit current in cgs (U_I)": [1.0],
                  "Unit temperature in cgs (U_T)": [1.0]}
    with h5py.File(path, "w") as h5:
        h5.create_group("Header").attrs.update({
            "NumPart_ThisFile": numbers, "NumPart_Total": numbers,
            "NumPart_Total_HighWord": np.zeros(7, np.uint64), "Dimension": [3], "Time": [time],
            "BoxSize": [100.0] * 3, "NumFilesPerSnapshot": [1], "Redshift": [0.0],
            "Scale-factor": [1.0]})
        for name in ("Units", "InternalCodeUnits"):
            h5.create_group(name).attrs.update(unit_attrs)
        h5.create_group("Cosmology").attrs["Cosmological run"] = [0]
        h5.create_group("Parameters")
        h5.create_group("Policy")
        cells = h5.create_group("Cells")
        cells["Centres"] = np.array([[50.0, 50.0, 50.0]])
        start = 0
        for family, (pos, vel, mass) in data.items():
            name = f"PartType{types[family]}"
            group = h5.create_group(name)
            ids = np.arange(start, start + len(pos), dtype=np.uint64)
            for key, values in (("Coordinates", pos.astype(np.float64)), ("Velocities", vel),
                                ("Masses", mass), ("ParticleIDs", ids)):
                dataset = group.create_dataset(key, data=values)
                for unit in ("U_M", "U_L", "U_t", "U_I", "U_T"):
                    dataset.attrs[f"{unit} exponent"] = [float(exponents[key].get(unit, 0))]
                dataset.attrs["a-scale exponent"] = dataset.attrs["h-scale exponent"] = [0.0]
            for table, value in (("Counts", len(pos)), ("Files", 0), ("OffsetsInFile", 0)):
                cells.require_group(table)[name] = np.array([value])
            start += len(pos)
    return data


def write_gadget2_binary(path, counts=None, *, seed=0):
    """A GADGET-2 binary snapshot through pynbody's writer. The format stores no units: readers
    (pynbody included) take its numbers in the units pynbody's configuration names for GADGET."""
    import pynbody

    counts = counts or {"gas": 100, "dm": 600, "star": 200}
    snap, data = _pynbody_snapshot(counts, seed)
    # the writer converts the box size into the positions' units, so they need some
    snap["pos"].units, snap["vel"].units, snap["mass"].units = "kpc", "km s^-1", "1e10 Msol"
    snap.properties.update({"time": 0.5, "a": 1.0, "z": 0.0, "h": 1.0, "omegaM0": 0.0,
                            "omegaL0": 0.0, "boxsize": pynbody.units.Unit("1000 kpc")})
    snap.write(fmt=pynbody.snapshot.gadget.GadgetSnap, filename=str(path))
    return data


def write_gadget1_binary(path, counts=None, *, seed=0):
    """A GADGET-2 binary snapshot in format 1 (blocks in their standard order, unlabelled):
    pynbody's format-2 file with its labels dropped and the ID block format 1 requires put in
    (pynbody writes none)."""
    import struct

    data = write_gadget2_binary(path, counts, seed=seed)
    labelled = Path(path).read_bytes()
    blocks, position = {}, 0
    while position < len(labelled):
        name = labelled[position + 4:position + 8]
        size = struct.unpack_from("<I", labelled, position + 16)[0]
        blocks[name] = labelled[position + 16:position + 16 + size + 8]
        position += 16 + size + 8
    total = sum(len(pos) for pos, _, _ in data.values())
    ids = struct.pack("<I", 4 * total) + np.arange(total, dtype="<i4").tobytes() \
        + struct.pack("<I", 4 * total)
    with open(path, "wb") as handle:
        handle.write(blocks[b"HEAD"] + blocks[b"POS "] + blocks[b"VEL "] + ids + blocks[b"MASS"])
    return data
