"""Snapshots whose headers disagree with their data, or that declare more particles than can be
loaded, are refused with the file and field named before pynbody reads their arrays; pynbody's
own exceptions never reach the user raw (issue 42)."""

import os
import shutil
import struct

import numpy as np
import pytest

pytest.importorskip("pynbody", reason="the formats extra (pynbody) is not installed")

import h5py  # noqa: E402

from orrery.app.cli import main  # noqa: E402
from orrery.engine import snapshot_checks  # noqa: E402
from orrery.engine.snapshots import SnapshotError, describe, load_snapshot  # noqa: E402

from .snapshot_files import (  # noqa: E402
    write_gadget2_binary, write_gadget4_hdf5, write_swift_hdf5, write_tipsy)


def _gadget4(tmp_path, edit):
    path = tmp_path / "snap_000.hdf5"
    write_gadget4_hdf5(path)
    with h5py.File(path, "r+") as h5:
        edit(h5)
    return str(path)


def _replace(name, data):
    def edit(h5):
        del h5[name]
        h5[name] = data
    return edit


def _declare(type_index, count):
    def edit(h5):
        numbers = h5["Header"].attrs["NumPart_ThisFile"].copy()
        numbers[type_index] = count
        h5["Header"].attrs["NumPart_ThisFile"] = numbers
        h5["Header"].attrs["NumPart_Total"] = numbers.astype(np.uint64)
    return edit


@pytest.mark.parametrize("edit, message", [
    (_replace("PartType1/Coordinates", np.zeros((1000, 2), np.float32)),
     r"PartType1/Coordinates has shape \(1000, 2\), expected \(n, 3\)"),
    (_replace("PartType1/Coordinates", np.array([b"abc"] * 1000)),
     "PartType1/Coordinates holds |S3 values, not numbers"),
    (_replace("PartType1/Masses", np.zeros((1000, 3), np.float32)),
     r"PartType1/Masses has shape \(1000, 3\), expected \(n,\)"),
    (_replace("PartType1/Coordinates", np.zeros((10, 3), np.float32)),
     "PartType1/Coordinates holds 10 particles but Header/NumPart_ThisFile declares 1,000"),
    (_declare(1, 5000), "holds 1,000 particles but Header/NumPart_ThisFile declares 5,000"),
    (lambda h5: h5["Header"].attrs.modify("NumPart_Total", np.array([0, 1, 0, 0, 500, 0],
                                                                    np.uint64)),
     r"NumPart_Total \[0, 1, 0, 0, 500, 0\] differs from NumPart_ThisFile"),
])
def test_a_gadget_hdf5_file_that_contradicts_itself_is_refused_naming_the_field(
        tmp_path, edit, message):
    path = _gadget4(tmp_path, edit)
    for read in (load_snapshot, describe):
        with pytest.raises(SnapshotError, match=message):
            read(path)


def test_a_snapshot_declaring_more_particles_than_memory_holds_is_refused_before_loading(
        tmp_path, monkeypatch):
    count = 1 << 24  # stored compressed, one chunk written: the file is a few KB

    def huge(h5):
        del h5["PartType1"]
        group = h5.create_group("PartType1")
        for name, shape in (("Coordinates", (count, 3)), ("Velocities", (count, 3)),
                            ("Masses", (count,)), ("ParticleIDs", (count,))):
            group.create_dataset(name, shape=shape, dtype="f4", compression="gzip",
                                 chunks=(1 << 16,) + shape[1:])[:1] = 1
        numbers = np.array([0, count, 0, 0, 500, 0], np.uint32)
        h5["Header"].attrs["NumPart_ThisFile"] = numbers
        h5["Header"].attrs["NumPart_Total"] = numbers.astype(np.uint64)
    path = _gadget4(tmp_path, huge)
    assert os.path.getsize(path) < 1 << 20
    monkeypatch.setattr(snapshot_checks, "available_memory", lambda: 1 << 30)
    with pytest.raises(SnapshotError, match=f"declares {count + 500:,} particles, which need "
                                            "about .* to load; 1 GiB is available"):
        load_snapshot(path)


def test_a_truncated_tipsy_file_is_refused_by_its_declared_size(tmp_path):
    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path)
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(SnapshotError, match="declares 1,700 particles .* truncated"):
        load_snapshot(str(path))


def test_a_tipsy_header_with_a_negative_count_is_refused(tmp_path):
    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path)
    with open(path, "r+b") as handle:
        time, total, ndim, gas, dark, star, pad = struct.unpack(">diiiiii", handle.read(32))
        handle.seek(0)
        handle.write(struct.pack(">diiiiii", time, total, ndim, -gas, dark + 2 * gas, star, pad))
    with pytest.raises(SnapshotError, match="declares 1700 particles as -200 gas"):
        load_snapshot(str(path))


def test_a_truncated_gadget2_file_is_a_snapshot_error(tmp_path):
    path = tmp_path / "snap"
    write_gadget2_binary(path)
    cut = tmp_path / "cut"
    shutil.copy(path, cut)
    os.truncate(cut, path.stat().st_size * 2 // 3)
    with pytest.raises(SnapshotError):
        load_snapshot(str(cut))


def test_pynbody_errors_the_checks_let_through_are_snapshot_errors(tmp_path, monkeypatch):
    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path)
    from orrery.engine import snapshots

    def failing(*args, **kwargs):
        raise ValueError("buffer size must be a multiple of element size")
    monkeypatch.setattr(snapshots, "_converted", failing)
    with pytest.raises(SnapshotError, match="cannot read it as a snapshot: ValueError: buffer"):
        load_snapshot(str(path))


def test_orrery_info_on_a_contradictory_snapshot_is_one_line(tmp_path, capsys):
    path = _gadget4(tmp_path, _replace("PartType1/Coordinates", np.zeros((1000, 2), np.float32)))
    assert main(["info", path]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "expected (n, 3)" in err


@pytest.mark.parametrize("edit, message", [
    (lambda h5: h5.__delitem__("PartType1"),
     "NumPart_ThisFile declares 1,000 PartType1 particles but the file has no PartType1 group"),
    (lambda h5: h5.__delitem__("PartType1/ParticleIDs"),
     "PartType1 has Coordinates but no ParticleIDs"),
    (lambda h5: h5["Header"].attrs.__setitem__("MassTable", "abc"),
     r"Header/MassTable .* is not one number per particle type \(6\)"),
    (lambda h5: h5["Header"].attrs.modify("MassTable", [0, -1.0, 0, 0, 0, 0]),
     "Header/MassTable .* holds a mass that is negative or not finite"),
    (lambda h5: h5["Header"].attrs.__setitem__("NumPart_ThisFile",
                                                           [[0, 20, 0, 0, 8, 0]] * 2),
     "Header/NumPart_ThisFile .* is not a list of integers"),
    (lambda h5: h5.__delitem__("Header"), "has PartType groups but no Header group"),
    (lambda h5: h5["Header"].attrs.__setitem__("BoxSize", np.array([b"a", b"b"])),
     r"Header/BoxSize \[b'a', b'b'\] is not a finite number"),
    (lambda h5: h5["Header"].attrs.__setitem__("HubbleParam", 0.0),
     "Header/HubbleParam 0.0 is not positive"),
    (lambda h5: h5["Header"].attrs.__delitem__("UnitLength_in_cm"),
     "the Header gives units but not UnitLength_in_cm"),
    (lambda h5: h5["Header"].attrs.__setitem__("UnitMass_in_g", [0, 20]),
     r"Header/UnitMass_in_g \[0, 20\] is not a finite number"),
])
def test_a_gadget_hdf5_file_whose_header_names_what_pynbody_would_drop_is_refused(
        tmp_path, edit, message):
    path = _gadget4(tmp_path, edit)
    for read in (load_snapshot, describe):
        with pytest.raises(SnapshotError, match=message):
            read(path)


def test_a_compressed_dataset_declaring_particles_it_never_stored_is_refused(tmp_path):
    def unwritten(h5):
        del h5["PartType1/Coordinates"]
        h5["PartType1"].create_dataset("Coordinates", shape=(1000, 3), dtype="f4",
                                       compression="gzip")
    path = _gadget4(tmp_path, unwritten)
    with pytest.raises(SnapshotError, match="PartType1/Coordinates declares 1,000 particles but "
                                            "stores no data"):
        load_snapshot(path)


def _gadget2(tmp_path, *edits):
    """A GADGET-2 file (format 2: the header's fields start at byte 20) with fields set, each
    edit an (offset, struct format, value)."""
    path = tmp_path / "snap"
    write_gadget2_binary(path)
    data = bytearray(path.read_bytes())
    for offset, form, value in edits:
        struct.pack_into(form, data, offset, value)
    path.write_bytes(bytes(data))
    return str(path)


@pytest.mark.parametrize("edits, message", [
    ([(24, "<i", -5)], r"header's npart \[100, -5, 200, 0, 0, 0\] holds a negative count"),
    ([(120, "<i", 601)], r"header's nall \[100, 601, 200, 0, 0, 0\] differs from npart"),
    ([(52, "<d", float("nan"))], "mass table .* holds a mass that is negative or not finite"),
    ([(32, "<i", 7), (128, "<i", 7)],
     "its POS block holds 10,800 bytes, but the 907 particles its header declares need 10,884 "
     "or 21,768"),
    ([(296, "<i", 1 << 30)], "its POS block declares 1,073,741,824 bytes but the file ends"),
    ([(16, "<i", 255)], "its GADGET-2 header record is not 256 bytes"),
    ([(4, "<4s", b"HEAE")], "its first block is labelled b'HEAE', not b'HEAD'"),
])
def test_a_gadget2_header_that_disagrees_with_its_blocks_is_refused_naming_the_field(
        tmp_path, edits, message):
    path = _gadget2(tmp_path, *edits)
    for read in (load_snapshot, describe):
        with pytest.raises(SnapshotError, match=message):
            read(path)


def test_a_gadget2_file_cut_right_after_its_header_is_refused(tmp_path):
    path = _gadget2(tmp_path)
    os.truncate(path, 291)  # the header whole, the POS block's label begun
    with pytest.raises(SnapshotError, match="it declares 900 particles but holds no POS block"):
        load_snapshot(path)


def test_a_snapshot_whose_time_is_not_finite_is_refused(tmp_path):
    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path)
    with open(path, "r+b") as handle:
        handle.write(struct.pack(">d", float("inf")))
    with pytest.raises(SnapshotError, match="its time is inf, not a finite number"):
        load_snapshot(str(path))


def test_orrery_info_on_a_damaged_gadget2_file_says_what_is_wrong_not_that_it_is_no_recording(
        tmp_path, capsys):
    path = _gadget2(tmp_path, (24, "<i", -5))
    assert main(["info", path]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"orrery info: error: {path}: its GADGET-2 header's npart [100, -5, 200, 0, 0, 0] "
        "holds a negative count"]


@pytest.mark.parametrize("edit, message", [
    (lambda h5: h5["Header"].attrs.__delitem__("Time"),
     "a SWIFT snapshot whose Header lacks Time"),
    (lambda h5: h5["Header"].attrs.__setitem__("Dimension", [2]),
     r"Header/Dimension \[2\] is not 3"),
])
def test_a_swift_file_whose_header_lacks_what_its_reader_takes_is_refused(
        tmp_path, edit, message):
    path = tmp_path / "snap.hdf5"
    write_swift_hdf5(path)
    with h5py.File(path, "r+") as h5:
        edit(h5)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(str(path))
