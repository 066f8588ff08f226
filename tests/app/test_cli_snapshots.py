"""``--load``: other codes' snapshots through the command line."""

import json

import numpy as np
import pytest

from ..extras import package

package("pynbody")

from orrery.app.cli import main  # noqa: E402
from orrery.engine.recording import RecordingFile  # noqa: E402
from orrery.engine.snapshots import load_snapshot  # noqa: E402

from ..engine.snapshot_files import write_gadget4_hdf5, write_tipsy  # noqa: E402


def test_run_evolves_a_snapshot_and_its_recording_keeps_the_unit_conversion(tmp_path, capsys):
    snapshot = tmp_path / "galaxy.tipsy"
    write_tipsy(snapshot)
    recording = tmp_path / "run.h5"
    assert main(["run", "--load", str(snapshot), "--steps", "4", "--solver", "cpu-direct",
                 "--quiet", "--record", str(recording), "--every", "2"]) == 0
    assert "1700 particles, 4 steps" in capsys.readouterr().out
    with RecordingFile(recording) as file:
        assert file.frame_count == 3
        assert file.population_names == ("gas", "dm", "star")
        units = file.attributes["units"]
        units = json.loads(units) if isinstance(units, str) else units
        assert units["length"] == "kpc"
        first = file.read(0)
    np.testing.assert_allclose(first, load_snapshot(str(snapshot)).particles.pos, rtol=1e-3)


def test_run_can_keep_one_family_and_subsample(tmp_path, capsys):
    snapshot = tmp_path / "snap_000.hdf5"
    write_gadget4_hdf5(snapshot)
    assert main(["run", "--load", str(snapshot), "--family", "star", "--n", "100", "--steps",
                 "2", "--quiet"]) == 0
    assert "100 particles" in capsys.readouterr().out


def test_info_describes_a_snapshot(tmp_path, capsys):
    snapshot = tmp_path / "snap_000.hdf5"
    write_gadget4_hdf5(snapshot)
    assert main(["info", str(snapshot)]) == 0
    out = capsys.readouterr().out
    assert "GadgetHDFSnap" in out and "dm (1000), star (500)" in out


@pytest.mark.parametrize("arguments, message", [
    (["--family", "dm"], "--family selects particles of a --load snapshot"),
    (["--load", "{dir}/snap_*.hdf5"], "`orrery run` evolves one snapshot"),
    (["--load", "{dir}/missing.hdf5"], "no such file"),
    (["--load", "{dir}/snap_000.hdf5", "--family", "gas"], "has no 'gas' particles"),
])
def test_run_refuses_bad_snapshot_arguments_with_one_line(tmp_path, capsys, arguments, message):
    write_gadget4_hdf5(tmp_path / "snap_000.hdf5")
    write_gadget4_hdf5(tmp_path / "snap_001.hdf5")
    arguments = [a.format(dir=tmp_path) for a in arguments]
    assert main(["run", "--steps", "1", "--quiet", *arguments]) == 2
    assert message in capsys.readouterr().err
