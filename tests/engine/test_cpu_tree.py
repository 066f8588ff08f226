"""cpu-tree: accuracy against the reference solver on every SIMD level, degenerate inputs, thread-count
caller order, and the host tree layout the GPU tree is compared with."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orrery import _native
from orrery.app.cli import main
from orrery.engine import ics, make_solver
from orrery.engine.accuracy import max_relative_error, rms_relative_error
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.errors import InvalidInputError, UnknownSolverError

SOFTENING = 0.01


def _reference(particles):
    return make_solver("reference", softening=SOFTENING).accelerations(particles.pos, particles.mass,
                                                                       potential=True)


@pytest.fixture(scope="module")
def plummer_8192():
    particles = ics.plummer(8192, seed=3)
    return particles, _reference(particles)


@pytest.fixture(scope="module")
def hernquist_4096():
    particles = ics.hernquist(4096, seed=4)
    return particles, _reference(particles)


def _tree(particles, **options):
    options = {"precision": "f64", "softening": SOFTENING, **options}
    solver = make_solver("cpu-tree", **options)
    acc, pot = solver.accelerations(particles.pos, particles.mass, potential=True)
    return acc, pot, solver.last_stats


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("quadrupole, limit", [(False, 2e-3), (True, 5e-4)])
def test_plummer_error_at_theta_half(plummer_8192, precision, quadrupole, limit):
    particles, (ref_acc, _) = plummer_8192
    acc, _, stats = _tree(particles, precision=precision, theta=0.5, quadrupole=quadrupole)
    assert acc.dtype == np.dtype(np.float32 if precision == "f32" else np.float64)
    error = rms_relative_error(acc, ref_acc)
    assert error <= limit
    # An approximation worth its name: far fewer interactions than direct summation.
    assert stats["interactions_per_particle"] < 0.5 * len(particles.mass)


@pytest.mark.parametrize("quadrupole", [False, True])
def test_error_falls_as_theta_falls(plummer_8192, quadrupole):
    particles, (ref_acc, _) = plummer_8192
    errors, costs = [], []
    for theta in (0.9, 0.7, 0.5, 0.3):
        acc, _, stats = _tree(particles, theta=theta, quadrupole=quadrupole)
        errors.append(rms_relative_error(acc, ref_acc))
        costs.append(stats["interactions_per_particle"])
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert all(b > a for a, b in zip(costs, costs[1:])), costs


def test_quadrupoles_reduce_the_error(plummer_8192):
    particles, (ref_acc, _) = plummer_8192
    mono, _, _ = _tree(particles, theta=0.7)
    quad, _, _ = _tree(particles, theta=0.7, quadrupole=True)
    assert rms_relative_error(quad, ref_acc) < 0.5 * rms_relative_error(mono, ref_acc)


def test_theta_zero_is_direct_summation(plummer_8192):
    particles, (ref_acc, ref_pot) = plummer_8192
    acc, pot, stats = _tree(particles, theta=0.0)
    n = len(particles.mass)
    assert stats["particle_cell"] == 0
    assert stats["particle_particle"] == n * (n - 1)
    assert max_relative_error(acc, ref_acc) < 1e-12
    np.testing.assert_allclose(pot, ref_pot, rtol=1e-12)


@pytest.mark.parametrize("quadrupole", [False, True])
def test_potentials_match_reference(plummer_8192, quadrupole):
    particles, (_, ref_pot) = plummer_8192
    _, pot, _ = _tree(particles, theta=0.5, quadrupole=quadrupole)
    relative = np.abs(pot / ref_pot - 1.0)
    assert np.sqrt(np.mean(relative**2)) < (2e-4 if quadrupole else 1e-3)


def test_hernquist_error(hernquist_4096):
    particles, (ref_acc, _) = hernquist_4096
    mono, _, _ = _tree(particles, theta=0.5)
    quad, _, _ = _tree(particles, theta=0.5, quadrupole=True)
    assert rms_relative_error(mono, ref_acc) < 3e-3
    assert rms_relative_error(quad, ref_acc) < 1e-3


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("quadrupole", [False, True])
def test_results_do_not_depend_on_thread_count(precision, quadrupole):
    particles = ics.hernquist(6000, seed=9)
    results = [_tree(particles, precision=precision, quadrupole=quadrupole, threads=threads)
               for threads in (1, 2, 3)]
    for acc, pot, stats in results[1:]:
        assert np.array_equal(acc, results[0][0])
        assert np.array_equal(pot, results[0][1])
        assert stats["particle_particle"] == results[0][2]["particle_particle"]
        assert stats["particle_cell"] == results[0][2]["particle_cell"]


def test_results_come_back_in_the_callers_order():
    particles = ics.plummer(3000, seed=10)
    shuffle = np.random.default_rng(0).permutation(3000)
    solver = make_solver("cpu-tree", precision="f32")
    acc = solver.accelerations(particles.pos, particles.mass)
    shuffled = solver.accelerations(particles.pos[shuffle], particles.mass[shuffle])
    assert np.array_equal(shuffled, acc[shuffle])


def test_reused_buffers_carry_no_state():
    particles = ics.plummer(4000, seed=11)
    moved = particles.pos + 0.01 * particles.vel
    warm = make_solver("cpu-tree", precision="f32", quadrupole=True)
    warm.accelerations(particles.pos, particles.mass)
    fresh = make_solver("cpu-tree", precision="f32", quadrupole=True)
    assert np.array_equal(warm.accelerations(moved, particles.mass), fresh.accelerations(moved, particles.mass))


def test_stats_report_every_stage(plummer_8192):
    particles, _ = plummer_8192
    _, _, stats = _tree(particles)
    for key in ("wall_s", "sort_s", "build_s", "moments_s", "walk_s"):
        assert stats[key] >= 0.0
    assert stats["walk_s"] <= stats["wall_s"]
    assert stats["particle_particle"] > 0 and stats["particle_cell"] > 0
    assert stats["nodes"] > stats["leaves"] > 1 and stats["depth"] > 2


@pytest.fixture(scope="module")
def degenerate(tmp_path_factory):
    out = tmp_path_factory.mktemp("tree") / "degenerate.npz"
    script = Path(__file__).with_name("tree_degenerate_cases.py")
    # A child process with a deadline: a walk or build that never ends fails here, it cannot hang.
    subprocess.run([sys.executable, str(script), str(out)], check=True, timeout=120)
    with np.load(out) as data:
        return dict(data)


@pytest.mark.parametrize("precision", ["f32", "f64", "f32q", "f64q"])
def test_degenerate_inputs_give_finite_answers(degenerate, precision):
    for name in ("one_point", "line", "two_clumps", "single", "two", "near_pairs"):
        assert np.isfinite(degenerate[f"{name}_{precision}_acc"]).all(), name
        assert np.isfinite(degenerate[f"{name}_{precision}_pot"]).all(), name


@pytest.mark.parametrize("precision", ["f32", "f64", "f32q", "f64q"])
def test_degenerate_inputs_match_exact_answers(degenerate, precision):
    rtol = 1e-5 if precision.startswith("f32") else 1e-12
    # All at one point: no net pull, and every other particle at distance zero (softened).
    assert np.all(degenerate[f"one_point_{precision}_acc"] == 0.0)
    np.testing.assert_allclose(degenerate[f"one_point_{precision}_pot"], -(299 / 300) / SOFTENING, rtol=rtol)
    assert np.all(degenerate[f"single_{precision}_acc"] == 0.0)
    assert np.all(degenerate[f"single_{precision}_pot"] == 0.0)
    # Two bodies at distance 3, mass 1/2 each.
    pull = 0.5 / (9.0 + SOFTENING**2) ** 1.5 * np.array([1.0, 2.0, 2.0])
    np.testing.assert_allclose(degenerate[f"two_{precision}_acc"], [pull, -pull], rtol=rtol)


@pytest.mark.parametrize("label", ["f64", "f64q"])
def test_degenerate_inputs_match_reference(degenerate, label):
    for name in ("line", "two_clumps", "near_pairs"):  # one_point is checked exactly above
        pos, mass = degenerate[f"{name}_pos"], degenerate[f"{name}_mass"]
        ref = make_solver("reference", softening=SOFTENING).accelerations(pos, mass)
        acc = degenerate[f"{name}_{label}_acc"]
        if name == "line":
            # On a line the net pull nearly cancels at many points, so measure the error against
            # the typical force rather than each particle's own.
            typical = np.sqrt(np.mean(np.sum(ref**2, axis=1)))
            assert np.sqrt(np.mean(np.sum((acc - ref) ** 2, axis=1))) / typical < 2e-2
        else:
            assert rms_relative_error(acc, ref) < 2e-3, name


def test_build_tree_layout():
    particles = ics.hernquist(3000, seed=12)
    pos, mass = particles.pos.astype(np.float32), particles.mass.astype(np.float32)
    tree = _native.build_tree_f32(pos, mass, leaf_capacity=8, quadrupole=True)
    nodes, order, keys = tree["nodes"], tree["order"], tree["keys"]
    assert nodes.dtype.itemsize == 32
    assert np.array_equal(np.sort(order), np.arange(3000))
    assert np.all(np.diff(keys.astype(np.int64)) >= 0)
    root = nodes[0]
    assert (root["first"], root["count"], root["skip"]) == (0, 3000, len(nodes))
    np.testing.assert_allclose(root["mass"], mass.sum(), rtol=1e-6)
    np.testing.assert_allclose(root["com"], (pos * mass[:, None]).sum(0) / mass.sum(), atol=1e-5)
    for i, node in enumerate(nodes):
        if node["skip"] == i + 1:  # leaf
            assert node["count"] <= 8 or keys[node["first"]] == keys[node["first"] + node["count"] - 1]
            continue
        # Children follow their parent and tile its particle range in order.
        child, start = i + 1, node["first"]
        while child < node["skip"]:
            assert nodes[child]["first"] == start
            start += nodes[child]["count"]
            child = nodes[child]["skip"]
        assert child == node["skip"] and start == node["first"] + node["count"]
    assert tree["quadrupoles"].shape == (len(nodes), 6)
    # Traceless: xx + yy + zz = 0.
    q = tree["quadrupoles"]
    assert np.allclose(q[:, 0] + q[:, 3] + q[:, 5], 0.0, atol=1e-6 * np.abs(q).max())
    assert _native.build_tree_f64(particles.pos, particles.mass)["nodes"].dtype.itemsize == 56


def test_options_are_checked():
    with pytest.raises(InvalidInputError):
        make_solver("cpu-tree", theta=-0.1)
    with pytest.raises(InvalidInputError):
        make_solver("cpu-tree", leaf_capacity=0)
    with pytest.raises(UnknownSolverError):
        make_solver("cpu-tree", device="cuda:0")


def test_orrery_run_with_cpu_tree(capsys):
    assert main(["run", "--n", "512", "--steps", "5", "--solver", "cpu-tree", "--theta", "0.6",
                 "--quadrupole", "--quiet"]) == 0
    assert "solver cpu-tree" in capsys.readouterr().out


@pytest.fixture(scope="module")
def plummer_2048():
    particles = ics.plummer(2048, seed=13)
    return particles, _reference(particles)


@pytest.mark.parametrize("simd", available_simd_levels())
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_every_simd_level_agrees_with_the_reference(plummer_2048, simd, precision):
    particles, (ref_acc, ref_pot) = plummer_2048
    for quadrupole, limit in ((False, 2e-3), (True, 6e-4)):
        options = {"precision": precision, "theta": 0.6, "quadrupole": quadrupole, "simd": simd}
        results = [_tree(particles, threads=threads, **options) for threads in (1, 2)]
        acc, pot, stats = results[0]
        assert stats["simd"] == simd
        assert rms_relative_error(acc, ref_acc) < limit
        assert np.sqrt(np.mean((pot / ref_pot - 1.0) ** 2)) < limit
        assert np.array_equal(results[1][0], acc) and np.array_equal(results[1][1], pot)
    # Opening every cell leaves only the kernel's rounding: its 1/sqrt is refined to full precision.
    acc, pot, _ = _tree(particles, precision=precision, theta=0.0, simd=simd)
    limit = 1e-5 if precision == "f32" else 1e-12
    assert max_relative_error(acc, ref_acc) < limit
    np.testing.assert_allclose(pot, ref_pot, rtol=limit)


def test_orrery_simd_environment_picks_the_level(monkeypatch, plummer_2048):
    particles, _ = plummer_2048
    monkeypatch.setenv("ORRERY_SIMD", "scalar")
    _, _, stats = _tree(particles)
    assert stats["simd"] == "scalar"
    # An explicit option wins over the environment.
    _, _, stats = _tree(particles, simd=available_simd_levels()[-1])
    assert stats["simd"] == available_simd_levels()[-1]
    monkeypatch.setenv("ORRERY_SIMD", "sse9")
    with pytest.raises(InvalidInputError, match="ORRERY_SIMD must be scalar, avx2, avx512, neon or sve"):
        make_solver("cpu-tree")


def _counters_from_adr(tree, pos_sorted, group_capacity):
    """The walk of docs/adr/0010, written out in Python on build_tree_f32's node array."""
    nodes = tree["nodes"]
    com, open2 = nodes["com"], nodes["open2"]
    skip, first, count = (nodes[f].astype(np.int64) for f in ("skip", "first", "count"))
    particle_particle = particle_cell = 0
    i = 0
    while i < len(nodes):
        if count[i] > group_capacity and skip[i] != i + 1:
            i += 1
            continue
        group, g = i, count[i]
        members = pos_sorted[first[i]:first[i] + g]
        lo, hi = members.min(axis=0), members.max(axis=0)
        listed = cells = 0
        j = 0
        while j < len(nodes):
            if j == group:
                j = skip[j]
                continue
            c = com[j]
            d = [max(max(lo[a] - c[a], c[a] - hi[a]), np.float32(0)) for a in range(3)]
            d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            if d2 > open2[j]:
                cells += 1
                j = skip[j]
            else:
                if skip[j] == j + 1:
                    listed += count[j]
                j += 1
        particle_particle += g * listed + g * (g - 1)
        particle_cell += g * cells
        i = skip[i]
    return particle_particle, particle_cell


def test_interaction_counters_follow_the_documented_walk():
    particles = ics.hernquist(3000, seed=14)
    pos, mass = particles.pos.astype(np.float32), particles.mass.astype(np.float32)
    tree = _native.build_tree_f32(pos, mass, leaf_capacity=8, theta=0.6)
    solver = make_solver("cpu-tree", precision="f32", theta=0.6, leaf_capacity=8)
    solver.accelerations(pos, mass)
    expected = _counters_from_adr(tree, pos[tree["order"]], _native.TREE_GROUP_CAPACITY)
    assert (solver.last_stats["particle_particle"], solver.last_stats["particle_cell"]) == expected
