"""Distributed runs through MPI: the same accelerations and energies for 1, 2 and 3 ranks (bit
for bit with direct summation), tree forces to the tree's accuracy, balanced work after
re-balancing, and a failing rank ending the run instead of hanging it."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orrery import _native
from orrery.engine import ics, make_solver
from orrery.engine.accuracy import rms_relative_error
from orrery.engine.distributed import essential_sources

from ..extras import package

CASE = Path(__file__).with_name("mpi_case.py")
TIMEOUT = 120


def _mpiexec() -> str:
    """The mpiexec of the MPI library mpi4py uses: the mpich wheel puts it in its
    environment's bin/, which need not be on PATH."""
    mpi4py = package("mpi4py")
    environment = Path(mpi4py.__file__).resolve().parents[4]  # <env>/lib/pythonX.Y/site-packages/mpi4py
    for folder in (Path(sys.executable).parent, environment / "bin"):
        if (folder / "mpiexec").exists():
            return str(folder / "mpiexec")
    found = shutil.which("mpiexec")
    assert found, "mpi4py is installed but no mpiexec was found (pip install mpich)"
    return found


def _launch(ranks, *arguments, check=True):
    command = [_mpiexec(), "-n", str(ranks), sys.executable, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _case(tmp_path, ranks, case, *rest):
    out = tmp_path / f"{case}-{ranks}.npz"
    _launch(ranks, str(CASE), case, str(out), *rest)
    return np.load(out)


@pytest.fixture(scope="module")
def plummer():
    return ics.plummer(1500, seed=4)


def test_direct_accelerations_are_the_same_bits_for_any_rank_count(tmp_path, plummer):
    results = [_case(tmp_path, ranks, "forces", "cpu-direct") for ranks in (1, 2, 3)]
    single = make_solver("cpu-direct", precision="f64", softening=0.02, threads=1)
    acc, pot = single.accelerations(plummer.pos, plummer.mass, potential=True)
    for result in results:
        assert np.array_equal(result["acc"], acc) and np.array_equal(result["pot"], pot)


def test_direct_runs_give_the_same_trajectory_and_energy_for_any_rank_count(tmp_path):
    runs = [_case(tmp_path, ranks, "run", "cpu-direct") for ranks in (1, 2, 3)]
    for run in runs[1:]:
        assert np.array_equal(run["positions"], runs[0]["positions"])
        assert float(run["kinetic"]) == float(runs[0]["kinetic"])
        assert float(run["potential"]) == float(runs[0]["potential"])
    assert abs(float(runs[0]["error"])) < 1e-5


def test_tree_forces_keep_the_trees_accuracy_for_any_rank_count(tmp_path, plummer):
    reference = make_solver("reference", softening=0.02).accelerations(plummer.pos, plummer.mass)
    single = make_solver("cpu-tree", softening=0.02, theta=0.6).accelerations(plummer.pos,
                                                                            plummer.mass)
    single_error = rms_relative_error(single, reference)
    for ranks in (1, 2, 3):
        acc = _case(tmp_path, ranks, "forces", "cpu-tree")["acc"]
        # the imported cells are opened against the whole receiving domain: never much worse
        assert rms_relative_error(acc, reference) < 1.1 * single_error
        assert rms_relative_error(acc, single) < 0.5 * single_error


def test_tree_runs_agree_on_the_energy_for_any_rank_count(tmp_path):
    runs = [_case(tmp_path, ranks, "run", "cpu-tree") for ranks in (1, 2, 3)]
    energies = [float(run["kinetic"]) + float(run["potential"]) for run in runs]
    assert max(abs(e / energies[0] - 1) for e in energies) < 1e-4
    assert all(int(run["rebalances"]) == 5 for run in runs)  # every 10 of 50 steps


@pytest.mark.parametrize("ranks", [2, 3])
def test_rebalancing_a_clustered_start_evens_out_the_work(tmp_path, ranks):
    result = _case(tmp_path, ranks, "balance")
    work = result["work"]
    assert np.abs(work / work.mean() - 1).max() < 0.20, work
    assert int(result["rebalances"]) == 3


def test_a_distributed_simulation_keeps_the_contract_of_a_gravity_simulation(tmp_path):
    assert bool(_case(tmp_path, 2, "contracts", "cpu-direct")["kept"])


def test_a_failing_rank_ends_the_whole_run_with_its_error(tmp_path):
    done = _launch(3, str(CASE), "fail", str(tmp_path / "x.npz"), check=False)
    assert done.returncode != 0
    assert "rank 1 fails on purpose" in done.stderr


def test_a_distributed_recording_holds_the_same_frames_as_one_process(tmp_path):
    run = ["-m", "orrery.app.cli", "run", "--ic", "plummer", "--n", "800", "--steps", "20",
           "--solver", "cpu-direct", "--threads", "1", "--quiet", "--every", "5", "--record"]
    _launch(1, *run, str(tmp_path / "one.h5"))
    _launch(3, *run, str(tmp_path / "three.h5"))
    from orrery.engine.recording import RecordingFile

    with RecordingFile(tmp_path / "one.h5") as one, RecordingFile(tmp_path / "three.h5") as three:
        assert one.frame_count == three.frame_count == 5
        for index in range(5):
            assert np.array_equal(one.read(index), three.read(index))


def test_an_unsupported_solver_is_refused_on_every_rank(tmp_path):
    done = _launch(2, "-m", "orrery.app.cli", "run", "--n", "100", "--steps", "1", "--solver",
                   "reference", "--quiet", check=False)
    assert done.returncode == 2 and "does not run distributed" in done.stderr


def test_essential_sources_keep_far_mass_as_few_cells_and_near_particles_as_they_are():
    rng = np.random.default_rng(0)
    sender = rng.normal(size=(3000, 3))
    mass = rng.uniform(0.5, 1.5, 3000)
    low, side = np.full(3, -30.0), 60.0
    far = np.array([[[20.0, -1.0, -1.0], [22.0, 1.0, 1.0]]])
    pos, weights = essential_sources(sender, mass, far, low=low, side=side, theta=0.5)
    assert len(pos) < 100
    assert weights.sum() == pytest.approx(mass.sum())
    np.testing.assert_allclose((pos * weights[:, None]).sum(0) / weights.sum(),
                               (sender * mass[:, None]).sum(0) / mass.sum(), atol=1e-9)
    inside = np.array([[[-5.0, -5.0, -5.0], [5.0, 5.0, 5.0]]])
    pos, weights = essential_sources(sender, mass, inside, low=low, side=side, theta=0.5)
    assert len(pos) == 3000  # every cell touches the receiver: the particles themselves


@pytest.mark.parametrize("simd", _native.simd_levels())
def test_direct_kernel_evaluates_a_range_of_targets_as_the_same_bits(plummer, simd):
    pos, mass = plummer.pos, plummer.mass
    whole, whole_pot = _native.direct_accelerations_f64(pos, mass, 0.0, potential=True, simd=simd)
    part, part_pot = _native.direct_accelerations_f64(pos, mass, 0.0, potential=True, simd=simd,
                                                      first=333, count=777)
    assert np.array_equal(part, whole[333:1110]) and np.array_equal(part_pot, whole_pot[333:1110])
    with pytest.raises(ValueError, match="within the sources"):
        _native.direct_accelerations_f64(pos, mass, 0.0, first=1400, count=200)


def _mpmd(first, second):
    """mpiexec running ``first`` on rank 0 and ``second`` on rank 1 (argument lists for
    ``python -m orrery.app.cli``)."""
    command = [_mpiexec(), "-n", "1", sys.executable, "-m", "orrery.app.cli", *first, ":",
               "-n", "1", sys.executable, "-m", "orrery.app.cli", *second]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)


RUN = ["run", "--n", "64", "--steps", "4", "--quiet", "--threads", "1"]


@pytest.mark.parametrize("other, message", [
    (["--solver", "cpu-tree"], "rank(s) 1 were given other options than rank 0"),
    (["--steps", "8"], "rank(s) 1 were given other options than rank 0"),
    (["--no-such-flag"], "rank(s) 1 could not parse their options"),
    (["--record", "{dir}/x.h5"], "rank(s) 1 were given other options than rank 0"),
])
def test_ranks_started_with_different_options_end_together_with_one_message(tmp_path, other,
                                                                            message):
    import time

    other = [argument.format(dir=tmp_path) for argument in other]
    start = time.monotonic()
    done = _mpmd([*RUN, "--solver", "cpu-direct"], [*RUN, "--solver", "cpu-direct", *other])
    assert time.monotonic() - start < 30
    assert done.returncode != 0
    assert done.stderr.count("every rank must run the same command") == 1, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.h5").exists()


def test_a_stopped_distributed_run_ends_every_rank_without_a_traceback(tmp_path):
    import signal
    import time

    command = [_mpiexec(), "-n", "2", sys.executable, "-m", "orrery.app.cli", "run", "--n",
               "64", "--steps", "100000000", "--solver", "cpu-direct", "--threads", "1",
               "--quiet", "--every", "1", "--record", str(tmp_path / "run.h5")]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (tmp_path / "run.h5").exists() or (tmp_path / "run.h5").stat().st_size < 50_000:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode != 0
    assert "Traceback" not in err and "interrupted" in err, err


def _rank_process(rank: int, marker: str) -> int:
    """The pid of the rank ``rank`` whose command line holds ``marker``."""
    import os

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() not in cmdline.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if f"PMI_RANK={rank}".encode() in environ.read().split(b"\0"):
                    return int(entry)
        except OSError:
            continue
    raise AssertionError(f"no rank {rank} running {marker}")


def test_a_stopped_rank_ends_the_others_within_the_stall_limit(tmp_path):
    import os
    import signal
    import time

    marker = str(tmp_path / "run.h5")
    command = [_mpiexec(), "-n", "2", sys.executable, "-m", "orrery.app.cli", "run", "--n",
               "64", "--steps", "100000000", "--solver", "cpu-direct", "--threads", "1",
               "--quiet", "--every", "1", "--record", marker]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "ORRERY_MPI_STALL_SECONDS": "3"})
    stopped = None
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(marker) or os.path.getsize(marker) < 50_000:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        stopped = _rank_process(1, marker)
        os.kill(stopped, signal.SIGSTOP)
        start = time.monotonic()
        _, err = process.communicate(timeout=60)
        assert time.monotonic() - start < 30
    finally:
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.kill()
        process.wait()
    assert process.returncode != 0
    assert "rank 0 of 2): error: waited" in err and "one of them stopped or died" in err, err


def test_served_ranks_started_with_different_options_end_together_with_one_message():
    serve = ["serve", "--scenario", "plummer", "--n", "64", "--solver", "cpu-direct", "--port",
             "0", "--token", "test-token"]
    done = _mpmd(serve, [*serve, "--dt", "0.002"])
    assert done.returncode != 0
    assert done.stderr.count("orrery serve: error: every rank must run the same command") == 1, \
        done.stderr
    assert "Traceback" not in done.stderr
