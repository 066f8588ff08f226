"""What a snapshot file declares, checked before pynbody reads its arrays: a file whose
counts, shapes or types disagree with its data is refused with the file and field named, and a
particle count is checked against the memory loading it takes, instead of letting pynbody fail
half-way (or allocate without bound: a 44 KB compressed file may declare 2**28 particles).

Layouts checked: HDF5 snapshots of the GADGET family (GADGET-3/4, AREPO, SWIFT: a
``PartTypeN`` group per particle type, ``Header/NumPart_ThisFile``) and Tipsy (a 32-byte header
of counts, then fixed-size records per gas, dark and star particle). Other formats are left to
pynbody's own checks; :mod:`.snapshots` turns whatever pynbody raises into a ``SnapshotError``.
"""

from __future__ import annotations

import math
import os
import re
import struct

import numpy as np

from .particles import BYTES_PER_PARTICLE, available_memory, format_bytes

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_PART_TYPE = re.compile(r"PartType(\d+)$")
# Arrays of three components per particle, and of one.
_VECTORS = ("Coordinates", "Velocities")
_SCALARS = ("Masses", "ParticleIDs")
# Tipsy: time (f8), nbodies, ndim, nsph, ndark, nstar, pad (i4); records of float32 values
# (gas 12, dark 9, star 11), the smallest a file with these counts can be.
_TIPSY_HEADER = struct.Struct("diiiiii")
_TIPSY_RECORD_BYTES = {"gas": 48, "dark": 36, "star": 44}
# GADGET-2 binary: records of [size][data][size] (int32); format 2 puts before each a record
# of 8 bytes (the block's name and size). The header record: npart (i4 x 6), mass table
# (f8 x 6), time, redshift, two flags, nall (the run's total, u4 x 6), a flag, num_files, four
# cosmological numbers, two flags, nall's high words (u4 x 6), then fields no check needs.
_GADGET2_LABEL_BYTES = 8
_GADGET2_HEADER_BYTES = 256
_GADGET2_HEADER = struct.Struct("6I6ddd2i6I2i4d2i6I")
# Format 1's blocks in their standard order; MASS only where a type's mass is not in the table.
_GADGET1_BLOCKS = (b"POS ", b"VEL ", b"ID  ", b"MASS")
# What loading a particle takes beyond Orrery's own arrays: pynbody's copy of positions,
# velocities and masses as the file stores them (float32 at least), before conversion.
_PYNBODY_BYTES_PER_PARTICLE = 7 * 4


def check_snapshot(path: str, error) -> int:
    """Raise ``error`` (an exception class) if the file at ``path`` contradicts itself; returns
    how many particles it declares (0 for a layout not checked here)."""
    if os.path.isdir(path):  # a RAMSES output: its files are pynbody's to check
        return 0
    with open(path, "rb") as handle:
        head = handle.read(_TIPSY_HEADER.size)
    if head.startswith(_HDF5_SIGNATURE):
        return _check_hdf5(path, error)
    if _gadget2_layout(head) is not None:
        return _check_gadget2(path, head, error)
    if _tipsy_counts(head) is not None:
        return _check_tipsy(path, head, error)
    return 0


def declares_a_snapshot(path: str) -> bool:
    """Whether the file at ``path`` starts as a GADGET-2 or Tipsy file does (so a reader's
    refusal of it is news about a damaged snapshot, not about some other file)."""
    if not os.path.isfile(path):  # looked up without opening: a FIFO would block the open
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(_TIPSY_HEADER.size)
    except OSError:
        return False
    return _gadget2_layout(head) is not None or _tipsy_counts(head) is not None


def check_memory(path: str, particles: int, error) -> None:
    """Raise ``error`` if loading ``particles`` particles from ``path`` needs more memory than
    this process has."""
    needed = particles * (BYTES_PER_PARTICLE + _PYNBODY_BYTES_PER_PARTICLE)
    available = available_memory()
    if available is not None and needed > available:
        raise error(f"{path} declares {particles:,} particles, which need about "
                    f"{format_bytes(needed)} to load; {format_bytes(available)} is available")


def _check_hdf5(path: str, error) -> int:
    """Check every ``PartTypeN`` group against the header; returns the particles they hold."""
    import h5py

    held = 0
    try:
        with h5py.File(path, "r") as h5:
            h5.visit(lambda name: None)  # every link resolves: readers walk them all
            header = h5.get("Header")
            declared = None
            if isinstance(header, h5py.Group) and "NumPart_ThisFile" in header.attrs:
                declared = _counts(path, header.attrs["NumPart_ThisFile"], error)
                _check_totals(path, header.attrs, declared, error)
                _check_mass_table(path, header.attrs, len(declared), error)
                _check_header_numbers(path, header.attrs, error)
                if "Cells" in h5:
                    _check_swift_header(path, header.attrs, error)
            for name, group in h5.items():
                match = _PART_TYPE.match(name)
                if match is None or not isinstance(group, h5py.Group):
                    continue
                held += _check_part_type(path, name, group, int(match.group(1)), declared,
                                         error)
            if declared is not None:
                _check_declared_types(path, h5, declared, error)
            elif held and not isinstance(header, h5py.Group):
                raise error(f"{path} has PartType groups but no Header group: not a snapshot "
                            "of the GADGET family")
    except (OSError, RuntimeError) as failure:  # h5py: RuntimeError for a broken link table
        raise error(f"{path}: cannot read it as HDF5 ({failure}): damaged") from None
    return held


# Header numbers readers compute with, each a finite number (SWIFT: a list of one; BoxSize: of
# three). The units and HubbleParam scale every value read (lengths given in units of 1/h are
# divided by it), so they must be positive.
_HEADER_NUMBERS = ("Time", "Time_GYR", "Redshift", "BoxSize", "Omega0", "OmegaLambda")
_HEADER_UNITS = ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s")
_HEADER_SCALES = ("HubbleParam", *_HEADER_UNITS)


# What a SWIFT reader takes from the Header (a SWIFT file is the GADGET layout with a Cells
# group: the particles' index by cell).
_SWIFT_HEADER = ("Dimension", "Time", "BoxSize", "NumPart_Total", "NumPart_Total_HighWord")


def _check_swift_header(path, attributes, error) -> None:
    missing = [name for name in _SWIFT_HEADER if name not in attributes]
    if missing:
        raise error(f"{path}: a SWIFT snapshot whose Header lacks {', '.join(missing)}")
    dimension = np.asarray(attributes["Dimension"]).reshape(-1)
    if dimension.tolist() != [3]:
        raise error(f"{path}: Header/Dimension {dimension.tolist()!s:.80} is not 3: Orrery "
                    "reads three-dimensional snapshots")


def _check_header_numbers(path, attributes, error) -> None:
    missing = [name for name in _HEADER_UNITS if name not in attributes]
    if 0 < len(missing) < len(_HEADER_UNITS):  # readers take all three, or none
        raise error(f"{path}: the Header gives units but not {', '.join(missing)}")
    for name in (*_HEADER_NUMBERS, *_HEADER_SCALES):
        if name not in attributes:
            continue
        value = np.asarray(attributes[name])
        most = 3 if name == "BoxSize" else 1
        if value.dtype.kind not in "fiu" or not 1 <= value.size <= most \
                or not np.all(np.isfinite(value)):
            raise error(f"{path}: Header/{name} {value.tolist()!s:.80} is not a finite number")
        if name in _HEADER_SCALES and not np.all(value > 0):
            raise error(f"{path}: Header/{name} {value.tolist()!s:.80} is not positive: the "
                        "values it scales cannot be converted")


def _counts(path, value, error) -> list[int]:
    """Header/NumPart_ThisFile as a list of counts, one per particle type."""
    counts = np.asarray(value)
    if counts.dtype.kind not in "iu" or counts.ndim != 1:
        raise error(f"{path}: Header/NumPart_ThisFile {counts.tolist()!s:.80} is not a list of "
                    "integers")
    if np.any(counts < 0):
        raise error(f"{path}: Header/NumPart_ThisFile {counts.tolist()} declares a negative "
                    "count")
    return [int(count) for count in counts]


def _check_totals(path, attributes, this_file, error) -> None:
    """A snapshot in one file holds the whole run's particles: NumPart_Total (with its high
    words) must equal NumPart_ThisFile, which pynbody may size its arrays by."""
    try:
        files = np.asarray(attributes.get("NumFilesPerSnapshot", 1)).reshape(-1)  # SWIFT: [1]
        if files.size != 1 or int(files[0]) != 1 or "NumPart_Total" not in attributes:
            return
        total = [int(value) for value in attributes["NumPart_Total"]]
        high = [int(value) for value in attributes.get("NumPart_Total_HighWord", [0] * len(total))]
        total = [low + (word << 32) for low, word in zip(total, high)]
    except (TypeError, ValueError):
        raise error(f"{path}: the Header's particle counts are not lists of integers") from None
    if total != this_file:
        raise error(f"{path}: Header/NumPart_Total {total} differs from NumPart_ThisFile "
                    f"{this_file} in a snapshot of one file")


def _check_declared_types(path, h5, declared, error) -> None:
    """Every type the header declares particles of has its group: readers size a type by its
    group's ParticleIDs, so a type without them would be dropped without a word."""
    import h5py

    for index, count in enumerate(declared):
        name = f"PartType{index}"
        if count > 0 and not isinstance(h5.get(name), h5py.Group):
            raise error(f"{path}: Header/NumPart_ThisFile declares {count:,} {name} "
                        f"particles but the file has no {name} group")


def _check_mass_table(path, attributes, types, error) -> None:
    """Header/MassTable, where present, is one finite mass (0 or more) per particle type."""
    if "MassTable" not in attributes:
        return
    table = np.asarray(attributes["MassTable"])
    if table.dtype.kind not in "fiu" or table.shape != (types,):
        raise error(f"{path}: Header/MassTable {table.tolist()!s:.80} is not one number per "
                    f"particle type ({types})")
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise error(f"{path}: Header/MassTable {table.tolist()} holds a mass that is negative "
                    "or not finite")


def _check_part_type(path, name, group, index, declared, error) -> int:
    """Check one particle type's arrays; returns how many particles they hold."""
    import h5py

    count = None
    if declared is not None:
        if index >= len(declared):
            raise error(f"{path}: Header/NumPart_ThisFile {declared} has no count for {name}")
        count = declared[index]
    if "Coordinates" in group and "ParticleIDs" not in group:
        raise error(f"{path}: {name} has Coordinates but no ParticleIDs, by which readers "
                    "count its particles")
    for field, dataset in group.items():
        if not isinstance(dataset, h5py.Dataset) or field not in (*_VECTORS, *_SCALARS):
            continue
        where = f"{path}: {name}/{field}"
        if dataset.dtype.kind not in "fiu":
            raise error(f"{where} holds {dataset.dtype} values, not numbers")
        expected = 2 if field in _VECTORS else 1
        if dataset.ndim != expected or (expected == 2 and dataset.shape[1] != 3):
            shape = "(n, 3)" if expected == 2 else "(n,)"
            raise error(f"{where} has shape {dataset.shape}, expected {shape}")
        if dataset.shape[0] and dataset.id.get_storage_size() == 0:
            raise error(f"{where} declares {dataset.shape[0]:,} particles but stores no data "
                        "(not one value was written)")
        if count is None:
            count = dataset.shape[0]
        elif dataset.shape[0] != count:
            said = "Header/NumPart_ThisFile declares" if declared is not None else "others hold"
            raise error(f"{where} holds {dataset.shape[0]:,} particles but {said} {count:,}")
    return count or 0


def _tipsy_counts(head: bytes) -> tuple[str, tuple] | None:
    """The byte order and header values of a Tipsy header, or None if ``head`` is not one."""
    if len(head) < _TIPSY_HEADER.size:
        return None
    for order in (">", "<"):
        values = struct.unpack(order + _TIPSY_HEADER.format, head)
        if values[2] in (2, 3):  # ndim: what tells a Tipsy header (and its byte order) apart
            return order, values
    return None


def _check_tipsy(path: str, head: bytes, error) -> int:
    _, (_, total, _, gas, dark, star, _) = _tipsy_counts(head)
    if min(total, gas, dark, star) < 0 or gas + dark + star != total:
        raise error(f"{path}: its Tipsy header declares {total} particles as {gas} gas, {dark} "
                    f"dark and {star} star: damaged")
    needed = _TIPSY_HEADER.size + gas * _TIPSY_RECORD_BYTES["gas"] \
        + dark * _TIPSY_RECORD_BYTES["dark"] + star * _TIPSY_RECORD_BYTES["star"]
    size = os.path.getsize(path)
    if size < needed:
        raise error(f"{path} declares {total:,} particles ({needed:,} bytes) but holds "
                    f"{size:,} bytes: truncated")
    return total


def _gadget2_layout(head: bytes) -> tuple[str, bool] | None:
    """The byte order and whether it is format 2 (blocks labelled by name) of a GADGET-2
    binary file starting with ``head``, or None if it does not start as one."""
    for order in ("<", ">"):
        first = struct.unpack_from(order + "i", head)[0] if len(head) >= 4 else None
        if first == _GADGET2_LABEL_BYTES:
            return order, True
        if first == _GADGET2_HEADER_BYTES:
            return order, False
    return None


def _check_gadget2(path: str, head: bytes, error) -> int:
    """Check a GADGET-2 binary file's header, and its blocks' sizes against the counts it
    declares (readers reshape each block by them); returns the particles it declares."""
    order, format2 = _gadget2_layout(head)
    if format2 and head[4:8] != b"HEAD":
        raise error(f"{path}: its first block is labelled {head[4:8]!r}, not b'HEAD': damaged")
    with open(path, "rb") as handle:
        data = handle.read(4 + _GADGET2_LABEL_BYTES + 8 + _GADGET2_HEADER_BYTES)
    start = 4 + (_GADGET2_LABEL_BYTES + 8 if format2 else 0)
    if len(data) < start + _GADGET2_HEADER_BYTES:
        raise error(f"{path}: its GADGET-2 header is cut short ({len(data):,} bytes)")
    if struct.unpack_from(order + "I", data, start - 4)[0] != _GADGET2_HEADER_BYTES:
        raise error(f"{path}: its GADGET-2 header record is not {_GADGET2_HEADER_BYTES} bytes: "
                    "damaged")
    values = struct.unpack_from(order + _GADGET2_HEADER.format, data, start)
    counts, masses, totals = values[0:6], values[6:12], values[16:22]
    files, high_words = values[23], values[-6:]
    for field, numbers in (("npart", counts), ("nall", totals)):
        if any(count >= 2**31 for count in numbers):
            signed = [count - 2**32 if count >= 2**31 else count for count in numbers]
            raise error(f"{path}: its GADGET-2 header's {field} {signed} holds a negative count")
    whole_run = [low + (high << 32) for low, high in zip(totals, high_words)]
    if files == 1 and whole_run != list(counts):
        raise error(f"{path}: its GADGET-2 header's nall {whole_run} differs from npart "
                    f"{list(counts)} in a snapshot of one file")
    if not all(math.isfinite(mass) and mass >= 0 for mass in masses):
        raise error(f"{path}: its GADGET-2 header's mass table {list(masses)} holds a mass "
                    "that is negative or not finite")
    total = sum(counts)
    per_particle = {b"POS ": (12, 24), b"VEL ": (12, 24), b"ID  ": (4, 8),
                    b"MASS": (4, 8)}
    massive = sum(count for count, mass in zip(counts, masses) if mass == 0)
    blocks = _GADGET1_BLOCKS if massive else _GADGET1_BLOCKS[:-1]
    found = set()
    for name, size in _gadget2_blocks(path, order, format2, blocks, error):
        found.add(name)
        particles = massive if name == b"MASS" else total
        if name in per_particle and size not in [particles * each for each in per_particle[name]]:
            raise error(f"{path}: its {name.decode().strip()} block holds {size:,} bytes, but "
                        f"the {particles:,} particles its header declares need "
                        + " or ".join(f"{particles * each:,}" for each in per_particle[name]))
    if total and b"POS " not in found:
        raise error(f"{path}: it declares {total:,} particles but holds no POS block: "
                    "truncated, or damaged")
    return total


def _gadget2_blocks(path: str, order: str, format2: bool, format1_blocks, error):
    """(name, size in bytes) of each block after the header, as far as the file holds them
    whole; a block cut short or whose two size markers differ is refused."""
    names = iter(format1_blocks)
    size_of_file = os.path.getsize(path)
    with open(path, "rb") as handle:
        handle.seek(4 + (_GADGET2_LABEL_BYTES + 8 if format2 else 0) + _GADGET2_HEADER_BYTES + 4)
        while True:
            if format2:
                label = handle.read(4 + _GADGET2_LABEL_BYTES + 4)
                if len(label) < 4 + _GADGET2_LABEL_BYTES + 4:
                    return
                name = label[4:8]
            else:
                name = next(names, None)
                if name is None:
                    return
            marker = handle.read(4)
            if len(marker) < 4:
                return
            size = struct.unpack(order + "I", marker)[0]
            where = handle.tell()
            block = (f"{name.decode().strip()} block" if name.strip().isalnum()  # ASCII only
                     else f"block at byte {where - 4:,}")
            if where + size + 4 > size_of_file:
                raise error(f"{path}: its {block} declares {size:,} bytes but the file ends "
                            f"{size_of_file - where:,} bytes on: truncated")
            handle.seek(size, os.SEEK_CUR)
            if struct.unpack(order + "I", handle.read(4))[0] != size:
                raise error(f"{path}: the size markers around its {block} differ: damaged")
            yield name, size
