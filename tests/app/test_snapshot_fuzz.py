"""A seeded fuzz of snapshot input: small GADGET-4 and SWIFT HDF5, Tipsy and GADGET-2 (formats
1 and 2) files, each copy damaged one way a careless tool or a hostile user could (datasets of
the wrong shape or type, header counts negative, huge or disagreeing with the data, other
header fields of the wrong kind, huge declared counts in a tiny compressed file, truncation,
flipped bytes), handed to ``orrery info`` and ``orrery run --load`` (and, for some, leading a
sequence ``orrery-viewer --load`` opens), each in a forked child under a time and memory limit.
A case fails on a traceback, a crash, a hang, running out of the memory limit, an exit code
other than 0, 1 or 2, or a refusal that is not one line naming the file (issue 42). SEED and
CASES pick the cases: another seed explores further."""

import random
import shutil
import struct

import numpy as np
import pytest

pytest.importorskip("pynbody", reason="the formats extra (pynbody) is not installed")

import h5py  # noqa: E402

from .fuzz_child import run_cases  # noqa: E402
from ..engine.snapshot_files import (  # noqa: E402
    write_gadget1_binary, write_gadget2_binary, write_gadget4_hdf5, write_swift_hdf5,
    write_tipsy)

SEED = 42
CASES = 80
COUNTS = {"gas": 6, "dm": 20, "star": 8}
HUGE = 1 << 28  # particles a tiny compressed file declares

# Numbers a header field should never hold, each as an int and as a float.
HOSTILE_INTS = [-1, 0, 1, 7, 2**31 - 1, -(2**31), 2**30]
HOSTILE_FLOATS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1e308, 1e-320]


def _hostile_value(rng):
    """A value for an HDF5 attribute that should be a list of six counts or a number."""
    return rng.choice([
        np.array([rng.choice(HOSTILE_INTS)] * 6, np.int64),
        np.array([0, 20, 0, 0, 8, 0, 0], np.uint32),  # seven types
        np.array([0, 20], np.uint32),  # two
        np.array([0, 2**40, 0, 0, 8, 0], np.uint64),
        np.array([[0, 20, 0, 0, 8, 0]] * 2, np.uint32),
        np.array([0.5, 20.5, 0, 0, 8, 0]),
        np.array(rng.choice(HOSTILE_FLOATS)),
        np.array([rng.choice(HOSTILE_FLOATS)] * 6),
        "abc", np.array([b"a", b"b"]), np.bool_(True), np.array([], np.int32),
    ])


def _hostile_array(rng, n):
    """An array to stand where a particle type's Coordinates, Masses ... were."""
    shape = rng.choice([(n, 2), (n, 3, 1), (n,), (), (0, 3), (n + 1, 3), (n - 1,), (2 * n, 3),
                        (n, 3), (3, n)])
    kind = rng.choice(["f2", "f4", "f8", "i1", "u8", "?", "c8", "S3", "str", "nan", "inf", "big"])
    if kind == "str":
        return np.array(["abc"] * int(np.prod(shape)), dtype=h5py.string_dtype()).reshape(shape)
    if kind in ("nan", "inf", "big"):
        value = {"nan": np.nan, "inf": np.inf, "big": 3e38}[kind]
        return np.full(shape, value, np.float32)
    return np.ones(shape, kind)


HEADER_FIELDS = ["NumPart_ThisFile", "NumPart_Total", "NumPart_Total_HighWord", "MassTable",
                 "Time", "Time_GYR", "Redshift", "BoxSize", "NumFilesPerSnapshot",
                 "HubbleParam", "Omega0", "OmegaLambda", "Flag_DoublePrecision",
                 "UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s"]
FIELDS = ["Coordinates", "Velocities", "Masses", "ParticleIDs"]


def _edit_hdf5(path, rng):
    """Damage the GADGET-4 file at ``path`` one way; returns what was done."""
    with h5py.File(path, "r+") as h5:
        header = h5["Header"]
        kind = rng.choice(["attribute", "attribute", "dataset", "dataset", "remove", "huge",
                           "extra"])
        if kind == "attribute":
            name = rng.choice(HEADER_FIELDS)
            if rng.random() < 0.15:
                header.attrs.pop(name, None)  # (SWIFT's Header has no MassTable, say)
                return f"Header/{name} removed"
            header.attrs[name] = value = _hostile_value(rng)
            return f"Header/{name} = {value!r:.60}"
        group = rng.choice(["PartType1", "PartType4"])
        n = COUNTS["dm" if group == "PartType1" else "star"]
        if kind == "dataset":
            field = rng.choice(FIELDS)
            del h5[group][field]
            h5[group][field] = data = _hostile_array(rng, n)
            return f"{group}/{field} {data.dtype}{data.shape}"
        if kind == "remove":
            name = rng.choice(["Header", group, f"{group}/{rng.choice(FIELDS)}"])
            del h5[name]
            return f"{name} removed"
        if kind == "huge":
            del h5[group]
            part = h5.create_group(group)
            for field, shape in (("Coordinates", (HUGE, 3)), ("Velocities", (HUGE, 3)),
                                 ("Masses", (HUGE,)), ("ParticleIDs", (HUGE,))):
                part.create_dataset(field, shape=shape, dtype="f4", compression="gzip",
                                    chunks=(1 << 16,) + shape[1:])
            counts = header.attrs["NumPart_ThisFile"].copy()
            counts[int(group[-1])] = HUGE if rng.random() < 0.7 else n
            header.attrs["NumPart_ThisFile"] = counts
            if rng.random() < 0.5:
                header.attrs["NumPart_Total"] = counts.astype(np.uint64)
            return f"{group} of {HUGE} particles, declared {counts[int(group[-1])]}"
        name = rng.choice(["PartType9", "PartType99", "PartType1x", "Header2"])
        if rng.random() < 0.5:
            h5[name] = np.zeros(3)  # a dataset where a group belongs
        else:
            h5.create_group(name)["Coordinates"] = np.zeros((5, 3), np.float32)
        if name == "PartType1x" or rng.random() < 0.5:
            del h5[group]
            h5[group] = np.zeros(4)
        return f"{name} and {group} added or replaced by datasets"


# Header fields of the binary formats: (offset, struct format).
TIPSY_FIELDS = [(0, ">d"), (8, ">i"), (12, ">i"), (16, ">i"), (20, ">i"), (24, ">i"),
                (28, ">i")]
# GADGET-2 (format 2, as pynbody writes it): an 8-byte "HEAD" label block, then the header
# block's length, npart[6], mass[6], time, redshift, two flags, nall[6], a flag, num_files,
# BoxSize; and the record lengths around the blocks.
GADGET2_FIELDS = [(0, "<i"), (12, "<i"), *((20 + 4 * i, "<i") for i in range(6)),
                  *((44 + 8 * i, "<d") for i in range(6)), (92, "<d"), (100, "<d"),
                  *((116 + 4 * i, "<i") for i in range(6)), (144, "<i"), (148, "<d"),
                  (272, "<i"), (292, "<i")]
# Format 1: the same header from byte 4, no labels.
GADGET1_FIELDS = [(0, "<i"), *((4 + 4 * i, "<i") for i in range(6)),
                  *((28 + 8 * i, "<d") for i in range(6)), (76, "<d"), (84, "<d"),
                  *((100 + 4 * i, "<i") for i in range(6)), (128, "<i"), (260, "<i"),
                  (264, "<i")]
BINARY_FIELDS = {"galaxy.tipsy": TIPSY_FIELDS, "gadget2": GADGET2_FIELDS,
                 "gadget1": GADGET1_FIELDS}


def _edit_binary(path, rng, fields):
    data = bytearray(path.read_bytes())
    kind = rng.choice(["field", "field", "field", "truncate", "flip", "append"] if fields
                      else ["truncate", "flip", "append"])
    if kind == "field":
        edits = []
        for _ in range(rng.choice([1, 1, 2])):
            offset, form = rng.choice(fields)
            value = rng.choice(HOSTILE_INTS if form.endswith("i") else HOSTILE_FLOATS)
            if form.endswith("i") and rng.random() < 0.3:  # near the true value
                near = struct.unpack_from(form, data, offset)[0] + rng.choice([-1, 1, 1000])
                value = max(min(near, 2**31 - 1), -(2**31))
            struct.pack_into(form, data, offset, value)
            edits.append(f"@{offset} = {value}")
        what = ", ".join(edits)
    elif kind == "truncate":
        size = rng.randrange(len(data))
        del data[size:]
        what = f"cut at {size}"
    elif kind == "flip":
        offsets = [rng.randrange(min(len(data), 400)) for _ in range(rng.randint(1, 8))]
        for offset in offsets:
            data[offset] ^= 1 << rng.randrange(8)
        what = f"bits flipped at {offsets}"
    else:
        data += rng.randbytes(rng.choice([1, 4, 100, 4096]))
        what = "bytes appended"
    path.write_bytes(bytes(data))
    return what


def _cases(folder):
    """Damaged copies of each base file, and the commands each is handed to."""
    bases = {"gadget4.hdf5": write_gadget4_hdf5, "galaxy.tipsy": write_tipsy,
             "gadget2": write_gadget2_binary, "gadget1": write_gadget1_binary,
             "swift.hdf5": write_swift_hdf5}
    for name, write in bases.items():
        counts = COUNTS if name != "gadget4.hdf5" else {"dm": 20, "star": 8}
        write(folder / name, counts)
    rng = random.Random(SEED)
    cases, series = [], []
    for index in range(CASES):
        base = rng.choice(sorted(bases))
        path = folder / f"case{index}_{base}"
        shutil.copy(folder / base, path)
        if base.endswith(".hdf5"):
            what = _edit_hdf5(path, rng) if rng.random() < 0.8 else _edit_binary(path, rng, [])
        else:
            what = _edit_binary(path, rng, BINARY_FIELDS[base])
        for command in (["info"], ["run", "--quiet", "--steps", "1", "--solver", "cpu-direct",
                                   "--load"]):
            cases.append(([*command, str(path)], f"{base}: {what}"))
        if index % SERIES_EVERY == 0:  # a sequence that meets it first (snapshot_series.py)
            shutil.copy(path, folder / f"case{index}_series_0")
            shutil.copy(folder / base, folder / f"case{index}_series_1")
            series.append((["--load", str(folder / f"case{index}_series_*")],
                           f"{base}: {what}"))
    return cases, series


# Every this many cases, the damaged file also leads a snapshot sequence that orrery-viewer
# opens (and stops at its window: no X server listens at NO_X_SERVER).
SERIES_EVERY = 4
NO_X_SERVER = ":4242"


def _refusal(output: str) -> str | None:
    """A refusal is one line that names the file, and not pynbody's own exception passed on
    (what snapshots.py says of an exception its checks did not foresee)."""
    lines = output.strip().splitlines()
    if len(lines) != 1 or "case" not in lines[0]:
        return f"refused without naming the file: {output.strip()!r}"
    if "cannot read it as a snapshot:" in lines[0]:
        return f"refused with pynbody's own exception: {lines[0]!r}"
    return None


def _series_refusal(output: str) -> str | None:
    """The viewer may read no further than the sequence's first file before its window is
    refused; whatever it refuses, it refuses in one line, never with pynbody's exception."""
    lines = output.strip().splitlines()
    if len(lines) != 1 or "cannot read it as a snapshot:" in lines[0]:
        return f"refused in {len(lines)} line(s): {output.strip()!r}"
    return None


def test_damaged_snapshots_are_refused_in_one_line_never_a_traceback_crash_or_hang(
        tmp_path, monkeypatch):
    from orrery.app.viewer import main as viewer_main

    monkeypatch.setenv("DISPLAY", NO_X_SERVER)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    cases, series = _cases(tmp_path)
    failures = run_cases(cases, tmp_path, refusal=_refusal)
    failures += run_cases(series, tmp_path, main=viewer_main, refusal=_series_refusal)
    assert not failures, "\n".join(failures)


def test_a_snapshot_whose_particles_or_estimated_settings_the_run_refuses_is_named(
        tmp_path, capsys):
    from orrery.app.cli import main

    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path, COUNTS)
    data = bytearray(path.read_bytes())
    # the first gas particle's x: beyond float32's squared distances, and it puts the
    # softening estimated from the half-mass radius beyond any a solver takes
    struct.pack_into(">f", data, 32 + 4, 1e20)
    path.write_bytes(bytes(data))
    assert main(["run", "--quiet", "--steps", "1", "--solver", "cpu-direct", "--load",
                 str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"orrery run: error: {path}: softening must be "
                                               "<= 1e+06"), err
