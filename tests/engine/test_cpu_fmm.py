"""cpu-fmm: accuracy against the reference solver as order and opening angle change, hard inputs,
thread-count invariance, momentum conservation of the symmetric lists, and the dual walk's lists."""

import numpy as np
import pytest

from orrery import _native
from orrery.app.cli import main
from orrery.engine import ics, make_solver
from orrery.engine.accuracy import relative_errors, rms_relative_error, sampled_exact
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.errors import InvalidInputError

SOFTENING = 0.01


def _reference(pos, mass):
    return make_solver("reference", softening=SOFTENING).accelerations(pos, mass, potential=True)


@pytest.fixture(scope="module")
def plummer_4096():
    particles = ics.plummer(4096, seed=3)
    return particles, _reference(particles.pos, particles.mass)


def _fmm(pos, mass, **options):
    options = {"precision": "f64", "softening": SOFTENING, **options}
    solver = make_solver("cpu-fmm", **options)
    acc, pot = solver.accelerations(pos, mass, potential=True)
    return acc, pot, solver.last_stats


def test_error_falls_with_every_step_of_the_order(plummer_4096):
    particles, (ref, _) = plummer_4096
    errors = [rms_relative_error(_fmm(particles.pos, particles.mass, order=p, theta=0.5)[0], ref)
              for p in range(1, 8)]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors
    assert errors[-1] < 3e-4


def test_error_falls_as_theta_falls(plummer_4096):
    particles, (ref, _) = plummer_4096
    errors = [rms_relative_error(_fmm(particles.pos, particles.mass, order=4, theta=theta)[0], ref)
              for theta in (0.8, 0.6, 0.4, 0.2)]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_default_settings_error_below_1e3(plummer_4096, precision):
    particles, (ref, ref_pot) = plummer_4096
    acc, pot, _ = _fmm(particles.pos, particles.mass, precision=precision)
    assert rms_relative_error(acc, ref) < 1e-3
    assert np.max(np.abs(pot - ref_pot) / np.abs(ref_pot)) < 1e-3


def test_theta_zero_is_direct_summation(plummer_4096):
    particles, (ref, ref_pot) = plummer_4096
    acc, pot, stats = _fmm(particles.pos, particles.mass, theta=0.0)
    assert stats["m2l_interactions"] == 0
    assert stats["particle_particle"] == 4096 * 4095
    assert np.max(relative_errors(acc, ref)) < 1e-12
    assert np.allclose(pot, ref_pot, rtol=1e-12)


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_results_do_not_depend_on_thread_count(precision):
    particles = ics.hernquist(5000, seed=9)
    results = [_fmm(particles.pos, particles.mass, precision=precision, threads=threads) for threads in (1, 2, 3)]
    for acc, pot, stats in results[1:]:
        assert np.array_equal(acc, results[0][0])
        assert np.array_equal(pot, results[0][1])
        assert stats["m2l_interactions"] == results[0][2]["m2l_interactions"]


# Bounds on |sum m a| / sum m |a|: the lists are symmetric and the truncation |k| + |n| <= p is
# symmetric, so only rounding is left (measured about 1e-17 in f64 and 2e-9 in f32).
@pytest.mark.parametrize("precision, bound", [("f64", 1e-14), ("f32", 1e-7)])
def test_total_force_vanishes(precision, bound):
    for seed, particles in enumerate((ics.plummer(4000, seed=12), ics.hernquist(4000, seed=13))):
        for order in (1, 4, 7):
            acc, _, _ = _fmm(particles.pos, particles.mass, precision=precision, order=order, theta=0.7)
            weighted = particles.mass[:, None] * acc.astype(np.float64)
            assert np.abs(weighted.sum(axis=0)).max() < bound * np.abs(weighted).sum(), (seed, order)


# theta = 0: every pair is a P2P pair, evaluated once for both bodies (docs/fmm-tuning-log.md#0161), so
# m_i a_i + m_j a_j differs from 0 only by the rounding of m_i (m_j v^3 d) against
# m_j (m_i v^3 d) and of the sums: measured 1e-9 to 3e-9 (f32) and 5e-18 to 3e-17 (f64) of
# sum m |a| over these cases, the bounds 10x above.
@pytest.mark.parametrize("precision, bound", [("f64", 1e-15), ("f32", 2e-8)])
def test_mutual_pairs_conserve_momentum(precision, bound):
    for particles in (ics.plummer(4000, seed=12), ics.hernquist(4000, seed=13)):
        for leaf_capacity in (8, 64):
            acc, _, stats = _fmm(particles.pos, particles.mass, precision=precision, theta=0.0, order=1,
                                 leaf_capacity=leaf_capacity)
            assert stats["m2l_interactions"] == 0
            weighted = particles.mass[:, None] * acc.astype(np.float64)
            assert np.abs(weighted.sum(axis=0)).max() < bound * np.abs(weighted).sum(), leaf_capacity


# Small leaves give many groups of the mutual P2P's schedule (2048 bodies each) and many slots
# between them: threads take the groups in any order, the sums come out the same.
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_mutual_pairs_do_not_depend_on_thread_count(precision):
    particles = ics.hernquist(12000, seed=21)
    results = [_fmm(particles.pos, particles.mass, precision=precision, threads=threads, order=3, theta=0.5,
                    leaf_capacity=16) for threads in (1, 2, 4)]
    for acc, pot, _ in results[1:]:
        assert np.array_equal(acc, results[0][0])
        assert np.array_equal(pot, results[0][1])


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("name", ["clustered_hernquist", "thin_disk", "coincident", "two_clumps"])
def test_hard_inputs_match_the_reference(fmm_hard_cases, precision, name):
    pos, mass = fmm_hard_cases[name]
    # The reference sees the positions the solver sees (two clumps 1e4 apart lose digits in f32).
    pos = pos.astype(np.dtype(np.float32 if precision == "f32" else np.float64)).astype(np.float64)
    ref, ref_pot = _reference(pos, mass)
    errors = []
    for order in (3, 7):
        acc, pot, _ = _fmm(pos, mass, precision=precision, order=order)
        assert np.all(np.isfinite(acc)) and np.all(np.isfinite(pot))
        errors.append(rms_relative_error(acc, ref))
    assert errors[0] < 5e-2 and errors[1] < 1e-3 and errors[1] < errors[0], errors


@pytest.mark.parametrize("precision, tolerance", [("f32", 1e-6), ("f64", 1e-13)])
@pytest.mark.parametrize("name", ["one", "two", "three"])
def test_tiny_systems_are_exact(fmm_hard_cases, precision, tolerance, name):
    pos, mass = fmm_hard_cases[name]
    ref, ref_pot = _reference(pos, mass)
    acc, pot, _ = _fmm(pos, mass, precision=precision)
    assert np.allclose(acc, ref, rtol=tolerance, atol=tolerance * np.abs(ref).max(initial=0.0))
    assert np.allclose(pot, ref_pot, rtol=tolerance, atol=0.0)


def test_results_come_back_in_the_callers_order():
    particles = ics.plummer(3000, seed=10)
    shuffle = np.random.default_rng(0).permutation(3000)
    acc, _, _ = _fmm(particles.pos, particles.mass, precision="f32")
    shuffled, _, _ = _fmm(particles.pos[shuffle], particles.mass[shuffle], precision="f32")
    assert np.array_equal(shuffled, acc[shuffle])


def test_reused_buffers_carry_no_state():
    particles = ics.plummer(4000, seed=11)
    moved = particles.pos + 0.01 * particles.vel
    warm = make_solver("cpu-fmm", order=3)
    warm.accelerations(particles.pos, particles.mass)
    warm.accelerations(ics.plummer(100, seed=1).pos, ics.plummer(100, seed=1).mass)
    fresh = make_solver("cpu-fmm", order=3)
    assert np.array_equal(warm.accelerations(moved, particles.mass), fresh.accelerations(moved, particles.mass))


def test_stats_report_every_stage(plummer_4096):
    particles, _ = plummer_4096
    _, _, stats = _fmm(particles.pos, particles.mass)
    for stage in ("sort", "build", "walk", "upward", "m2l", "p2p", "downward"):
        assert stats[f"{stage}_s"] >= 0.0
    assert stats["m2l_interactions"] > 0 and stats["particle_particle"] > 0
    assert stats["terms"] == 56  # order 5: (p+1)(p+2)(p+3)/6


@pytest.mark.parametrize("heavy_share", [None, 0.02])
def test_lists_are_symmetric_and_cover_every_pair_once(heavy_share):
    particles = ics.hernquist(3000, seed=14)
    solver = make_solver("cpu-fmm", theta=0.6, leaf_capacity=16, heavy_share=heavy_share)
    solver.accelerations(particles.pos, particles.mass)
    lists = solver.last_lists()
    tree = _native.build_tree_f32(particles.pos.astype(np.float32), particles.mass.astype(np.float32),
                              leaf_capacity=16)
    nodes = tree["nodes"]
    count = len(nodes)
    assert len(lists["parent"]) == count

    def directed(name):
        start, source = lists[f"{name}_start"], lists[f"{name}_source"]
        return {(int(t), int(s)) for t in range(count) for s in source[start[t]:start[t + 1]]}

    m2l, p2p = directed("m2l"), directed("p2p")
    assert m2l == {(s, t) for t, s in m2l} and p2p == {(s, t) for t, s in p2p}
    # Every pair of bodies meets exactly once: through one M2L pair of nodes holding them (or
    # their ancestors), one P2P pair of leaves, or the same leaf.
    leaf_of = np.empty(len(particles.pos), np.int64)
    ancestors = [[0]]
    for i in range(1, count):
        ancestors.append([i] + ancestors[lists["parent"][i]])
    for i in lists["leaves"]:
        leaf_of[nodes["first"][i]:nodes["first"][i] + nodes["count"][i]] = i
    rng = np.random.default_rng(0)
    for a, b in rng.integers(0, len(particles.pos), (300, 2)):
        la, lb = leaf_of[a], leaf_of[b]
        meetings = sum((x, y) in m2l for x in ancestors[la] for y in ancestors[lb])
        meetings += (la, lb) in p2p or la == lb
        assert meetings == 1, (a, b)


# Heavy nodes (docs/fmm-tuning-log.md#0189) against theta alone, 2048 sampled targets of a 65536-body Plummer
# sphere, p 6, theta 0.85: the pairs of the node holding its core set the error tail of the
# outskirts (measured RMS 1.95e-3 -> 8.9e-4, p90 1.18e-3 -> 7.2e-4, the largest 3.5e-2 ->
# 1.5e-2, for 13% more M2L pairs).
def test_heavy_nodes_cut_the_error_tail():
    particles = ics.plummer(65536, seed=5)
    targets = np.sort(np.random.default_rng(1).choice(65536, 2048, replace=False))
    exact = sampled_exact(particles.pos, particles.mass, targets, SOFTENING)
    errors, pairs = {}, {}
    for share in (None, 0.01):
        solver = make_solver("cpu-fmm", order=6, theta=0.85, softening=SOFTENING, heavy_share=share)
        acc = np.asarray(solver.accelerations(particles.pos, particles.mass), np.float64)[targets]
        errors[share] = np.linalg.norm(acc - exact, axis=1) / np.linalg.norm(exact, axis=1)
        pairs[share] = solver.last_stats["m2l_interactions"]
    rms = {share: np.sqrt(np.mean(e ** 2)) for share, e in errors.items()}
    assert rms[0.01] < 0.6 * rms[None]
    assert np.percentile(errors[0.01], 90) < np.percentile(errors[None], 90)
    assert errors[0.01].max() < 0.6 * errors[None].max()
    assert pairs[None] < pairs[0.01] < 1.3 * pairs[None]


def test_options_are_checked():
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", heavy_share=0.0)
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", heavy_share=0.6)
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", order=0)
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", order=_native.FMM_MAX_ORDER + 1)
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", theta=0.99)


def test_orrery_run_with_cpu_fmm(capsys):
    assert main(["run", "--n", "512", "--steps", "3", "--solver", "cpu-fmm", "--order", "3", "--quiet"]) == 0
    assert "solver cpu-fmm" in capsys.readouterr().out


# Float expansions (M2L in float lanes, docs/fmm-tuning-log.md#0165) against double ones, both with float64
# bodies so that only M2L's rounding differs: measured at most 4.3e-7 of |a| per body (RMS
# 5e-8) on Plummer and Hernquist spheres at p 5-7, theta 0.3-0.7; the bounds are 5x above. At
# p 7, theta 0.3 (RMS error 3.2e-6 against the reference) this is float expansions' floor:
# the RMS error does not move in its third digit.
@pytest.mark.parametrize("order", [1, 3, 5, 7, 8])
def test_float_expansions_stay_within_rounding_of_double(plummer_4096, order):
    particles, (ref, _) = plummer_4096
    acc = {ex: _fmm(particles.pos, particles.mass, order=order, theta=0.5, expansions=ex)[0]
           for ex in ("f64", "f32")}
    relative = np.linalg.norm(acc["f32"] - acc["f64"], axis=1) / np.linalg.norm(acc["f64"], axis=1)
    assert relative.max() < 2e-6 and np.sqrt(np.mean(relative ** 2)) < 2.5e-7, order
    assert (rms_relative_error(acc["f32"], ref) ==
            pytest.approx(rms_relative_error(acc["f64"], ref), rel=1e-3 if order < 7 else 1e-2))


def test_float_expansions_floor_at_order_7():
    particles = ics.plummer(16384, seed=5)
    targets = np.arange(0, 16384, 16)
    ref = _reference(particles.pos, particles.mass)[0][targets]
    errors = {ex: relative_errors(_fmm(particles.pos, particles.mass, order=7, theta=0.3, expansions=ex)[0][targets],
                                  ref) for ex in ("f64", "f32")}
    rms = {ex: float(np.sqrt(np.mean(e ** 2))) for ex, e in errors.items()}
    assert rms["f64"] < 1e-5 and abs(rms["f32"] - rms["f64"]) < 1e-3 * rms["f64"], rms


def test_float_expansions_are_the_default_of_float32_bodies_only(plummer_4096):
    particles, _ = plummer_4096
    assert _fmm(particles.pos, particles.mass, precision="f32")[2]["expansion_bits"] == 32
    assert _fmm(particles.pos, particles.mass)[2]["expansion_bits"] == 64
    assert _fmm(particles.pos, particles.mass, expansions="f32")[2]["expansion_bits"] == 32
    with pytest.raises(InvalidInputError):
        make_solver("cpu-fmm", expansions="f16")


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_float_expansions_do_not_depend_on_thread_count(precision):
    particles = ics.hernquist(12000, seed=21)
    results = [_fmm(particles.pos, particles.mass, precision=precision, threads=threads, order=6, theta=0.6,
                    leaf_capacity=16, expansions="f32") for threads in (1, 2, 3)]
    assert results[0][2]["expansion_bits"] == 32
    for acc, pot, _ in results[1:]:
        assert np.array_equal(acc, results[0][0])
        assert np.array_equal(pot, results[0][1])


def test_float_expansions_fall_back_to_double_past_floats_range():
    """Unsoftened cells 1e-5 apart: at order 7 their derivative tensors reach 5040 / r^8 ~ 1e43,
    past float's 3.4e38. Those targets are redone in double, so the forces stay finite and
    equal to double expansions' there."""
    particles = ics.plummer(3000, seed=2)
    pos = particles.pos * 1e-5
    ref = make_solver("reference", softening=0.0).accelerations(pos, particles.mass)
    acc = {}
    for ex in ("f64", "f32"):
        solver = make_solver("cpu-fmm", precision="f64", softening=0.0, order=7, theta=0.5, expansions=ex)
        acc[ex] = solver.accelerations(pos, particles.mass)
        stats = solver.last_stats
    assert stats["m2l_redone_in_double"] > 0
    assert np.all(np.isfinite(acc["f32"]))
    assert rms_relative_error(acc["f32"], ref) < 1e-3
    assert rms_relative_error(acc["f32"], acc["f64"]) < 1e-6


# The mutual P2P runs two targets per block of the other leaves' bodies at AVX-512 (one at the
# other levels), P2M and M2M sum a leaf's bodies or a node's children in double lanes, folded per
# term, and L2L shifts to a node's children in lanes (docs/fmm-tuning-log.md#0169). Every level against the
# scalar one, which takes one target, one body and one child at a time, at orders 1, 5 and 7: leaf
# capacities 1 to 7 give leaves with fewer targets than a pair and every remainder of one, 64
# leaves of several blocks. Measured: at most 3.3e-16 (f64) and 3.5e-7 (f32) of the largest
# acceleration or potential (the levels' 1/sqrt refinements differ in rounding); the bounds 30x above.
@pytest.mark.parametrize("precision, bound", [("f64", 1e-14), ("f32", 1e-5)])
@pytest.mark.parametrize("leaf_capacity", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("order", [1, 5, 7])
def test_every_simd_level_agrees_with_one_body_at_a_time(precision, bound, leaf_capacity, order):
    particles = ics.hernquist(1500, seed=31)
    results = {simd: _fmm(particles.pos, particles.mass, precision=precision, simd=simd, order=order, theta=0.6,
                          leaf_capacity=leaf_capacity) for simd in available_simd_levels()}
    acc, pot, _ = results["scalar"]
    scale = np.abs(acc.astype(np.float64)).max()
    for simd, (other, other_pot, _) in results.items():
        assert np.abs(other.astype(np.float64) - acc).max() < bound * scale, simd
        assert np.abs(other_pot.astype(np.float64) - pot).max() < bound * np.abs(pot.astype(np.float64)).max(), simd


# theta = 0 (P2P alone) at leaf capacities whose leaves hold one target, a pair, and a pair with
# one left over: against the reference's float64 direct sum.
@pytest.mark.parametrize("leaf_capacity", [1, 2, 3, 5])
def test_mutual_pairs_of_targets_are_direct_summation(plummer_4096, leaf_capacity):
    particles, (ref, ref_pot) = plummer_4096
    acc, pot, stats = _fmm(particles.pos, particles.mass, theta=0.0, leaf_capacity=leaf_capacity)
    assert stats["m2l_interactions"] == 0
    assert np.max(relative_errors(acc, ref)) < 1e-12
    assert np.allclose(pot, ref_pot, rtol=1e-12)
