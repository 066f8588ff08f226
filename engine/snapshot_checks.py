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
# What loading a particle takes beyond Orrery's own arrays: pynbody's copy of positions,
# velocities and masses as the file stores them (float32 at least), before conversion.
_PYNBODY_BYTES_PER_PARTICLE = 7 * 4


def check_snapshot(path: str, declared_particles: int, error) -> None:
    """Raise ``error`` (an exception class) if the file at ``path`` contradicts itself or
    declares more particles than this process has memory to load."""
    if os.path.isdir(path):  # a RAMSES output: its files are pynbody's to check
        _check_memory(path, declared_particles, error)
        return
    with open(path, "rb") as handle:
        head = handle.read(_TIPSY_HEADER.size)
    held = 0
    if head.startswith(_HDF5_SIGNATURE):
        held = _check_hdf5(path, error)
    elif _tipsy_counts(head) is not None:
        _check_tipsy(path, head, error)
    _check_memory(path, max(declared_particles, held), error)


def _check_memory(path: str, particles: int, error) -> None:
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
            header = h5.get("Header")
            declared = None
            if isinstance(header, h5py.Group) and "NumPart_ThisFile" in header.attrs:
                declared = header.attrs["NumPart_ThisFile"]
                _check_totals(path, header.attrs, declared, error)
            for name, group in h5.items():
                match = _PART_TYPE.match(name)
                if match is None or not isinstance(group, h5py.Group):
                    continue
                held += _check_part_type(path, name, group, int(match.group(1)), declared,
                                         error)
    except OSError as failure:
        raise error(f"{path}: cannot read it as HDF5 ({failure})") from None
    return held


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
        this = [int(value) for value in this_file]
    except (TypeError, ValueError):
        raise error(f"{path}: the Header's particle counts are not lists of integers") from None
    if total != this:
        raise error(f"{path}: Header/NumPart_Total {total} differs from NumPart_ThisFile {this} "
                    "in a snapshot of one file")


def _check_part_type(path, name, group, index, declared, error) -> int:
    """Check one particle type's arrays; returns how many particles they hold."""
    import h5py

    count = None
    if declared is not None:
        try:
            count = int(declared[index])
        except (IndexError, TypeError, ValueError):
            raise error(f"{path}: Header/NumPart_ThisFile {declared!r:.80} has no count for "
                        f"{name}") from None
        if count < 0:
            raise error(f"{path}: Header/NumPart_ThisFile declares {count} {name} particles")
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


def _check_tipsy(path: str, head: bytes, error) -> None:
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
