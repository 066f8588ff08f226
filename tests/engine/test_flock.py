"""Boids: the three neighbour searches against the NumPy reference (bit for bit), each rule on
its own, thread and SIMD invariance, presets, the runner and recordings, and clear errors."""

import time

import numpy as np
import pytest

from orrery import _native
from orrery.engine import scenarios
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.errors import InvalidInputError
from orrery.engine.flock import SEARCHES, FlockParameters, FlockSimulation, initial_flock, reference
from orrery.engine.flock._cpu import CpuFlock
from orrery.engine.particles import Particles

from .flock_cases import SEAM_RULES, seam_flock

DT = 0.2
RULES = FlockParameters(world=60.0)


def _step(pos, vel, rules, *, search, cell_width=None, threads=None, simd=None, steps=1):
    rules = rules.with_changes(search=search, cell_width=cell_width or rules.cell_width)
    flock = CpuFlock(pos, vel, threads=threads, simd=simd)
    constants = rules.constants(len(pos), DT)
    for _ in range(steps):
        flock.step(constants, rules.search, rules.cell_width)
    return flock.state()


@pytest.fixture(scope="module", params=["random", "clustered"])
def start_and_reference(request):
    clumps = 0 if request.param == "random" else 4
    start = initial_flock(5000, seed=3, rules=RULES, clumps=clumps)
    return start, reference.step(start.pos, start.vel, RULES.constants(5000, DT))


@pytest.mark.parametrize("cell_width", [1, 2])
@pytest.mark.parametrize("search", SEARCHES)
def test_every_search_gives_the_reference_step_bit_for_bit(start_and_reference, search, cell_width):
    start, (ref_pos, ref_vel) = start_and_reference
    pos, vel = _step(start.pos, start.vel, RULES, search=search, cell_width=cell_width)
    assert not np.array_equal(vel, start.vel), "the step changed nothing"
    np.testing.assert_array_equal(vel, ref_vel)
    np.testing.assert_array_equal(pos, ref_pos)


@pytest.mark.parametrize("cell_width", [1, 2])
def test_boids_on_cell_boundaries_and_the_periodic_seam_match_the_reference(cell_width):
    rules = FlockParameters(world=40.0, cell_width=cell_width)
    constants = rules.constants(2000, DT)
    width = rules.world / constants["grid"]
    rng = np.random.default_rng(5)
    # every coordinate a multiple of the cell width (0 and the seam included), or just inside
    # the seam on either side
    lattice = rng.integers(0, constants["grid"], (2000, 3)) * width
    near_seam = rng.random((2000, 3)) < 0.3
    lattice[near_seam] = rng.choice([0.0, constants["quantum"], rules.world - constants["quantum"]],
                                    near_seam.sum())
    pos = reference.wrap(lattice, constants)
    vel = initial_flock(2000, seed=6, rules=rules).vel
    ref_pos, ref_vel = reference.step(pos, vel, constants)
    for search in ("scattered-grid", "coherent-grid"):
        got_pos, got_vel = _step(pos, vel, rules, search=search)
        np.testing.assert_array_equal(got_vel, ref_vel)
        np.testing.assert_array_equal(got_pos, ref_pos)


def test_a_world_off_the_position_grid_is_rounded_onto_it_and_seam_sums_stay_exact():
    pos, vel, constants = seam_flock(DT)
    assert constants["world"] % constants["quantum"] == 0
    assert 0 <= SEAM_RULES.world - constants["world"] < constants["quantum"] + 1e-6
    ref_pos, ref_vel = reference.step(pos, vel, constants)
    assert not np.array_equal(ref_vel, vel)
    for search in SEARCHES:
        for simd in available_simd_levels():  # scalar keeps the chunks of flock_cases.py
            got_pos, got_vel = _step(pos, vel, SEAM_RULES, search=search, simd=simd)
            np.testing.assert_array_equal(got_vel, ref_vel)
            np.testing.assert_array_equal(got_pos, ref_pos)


@pytest.mark.parametrize("search", SEARCHES)
def test_thread_count_and_simd_level_do_not_change_a_bit(search):
    start = initial_flock(2000 if search == "naive" else 6000, seed=8, rules=RULES, clumps=3)
    runs = [(threads, simd) for threads in (1, 2) for simd in available_simd_levels()] + [(3, None)]
    results = [_step(start.pos, start.vel, RULES, search=search, threads=threads, simd=simd,
                     steps=2) for threads, simd in runs]
    for pos, vel in results[1:]:
        np.testing.assert_array_equal(pos, results[0][0])
        np.testing.assert_array_equal(vel, results[0][1])


def _only(rule: str, **overrides) -> FlockParameters:
    weights = {f"{name}_weight": 0.0 for name in ("separation", "alignment", "cohesion")}
    weights[f"{rule}_weight"] = {"separation": 0.5, "alignment": 0.5, "cohesion": 0.05}[rule]
    return FlockParameters(world=40.0, **{**weights, **overrides})


def _run(pos, vel, rules, steps=1):
    sim = FlockSimulation(Particles(pos, vel, np.ones(len(pos))), rules, dt=DT)
    sim.step(steps)
    return sim.particles


def _gap(particles, world):
    d = particles.pos[1] - particles.pos[0]
    return np.linalg.norm(d - world * np.round(d / world))


@pytest.mark.parametrize("where", [10.0, 0.5])  # in the middle, and straddling the seam
def test_separation_alone_pushes_two_close_boids_apart(where):
    rules = _only("separation")
    pos = np.array([[where, 20.0, 20.0], [where - 1.0, 20.0, 20.0]]) % rules.world
    after = _run(pos, np.zeros((2, 3)), rules, steps=3)
    assert _gap(after, rules.world) > 1.0 + 0.1
    assert after.vel[0, 0] > 0 > after.vel[1, 0]


def test_alignment_alone_turns_a_boid_toward_its_neighbours_heading():
    rules = _only("alignment")
    pos = np.array([[20.0, 20.0, 20.0], [21.0, 20.0, 20.0], [20.0, 21.0, 20.0]])
    vel = np.array([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.5, 0.0]])
    after = _run(pos, vel, rules)
    heading = after.vel[0] / np.linalg.norm(after.vel[0])
    assert heading[1] > 0.05 and heading[0] > 0  # turned toward +y, not past it


def test_cohesion_alone_pulls_boids_toward_their_centre():
    rules = _only("cohesion")
    angles = np.linspace(0, 2 * np.pi, 6, endpoint=False)
    ring = np.column_stack([np.cos(angles), np.sin(angles), np.zeros(6)]) * 2.0
    pos = ring + 20.0
    after = _run(pos, np.zeros((6, 3)), rules, steps=3)
    radius = np.linalg.norm(after.pos - 20.0, axis=1)
    assert (radius < 2.0 - 1e-3).all()
    assert (np.einsum("ij,ij->i", after.vel, ring) < 0).all()  # every velocity points inward


def test_max_speed_holds_under_strong_rules():
    rules = FlockParameters(world=30.0, separation_weight=50.0, cohesion_weight=5.0,
                            alignment_weight=5.0, max_speed=0.7)
    start = initial_flock(3000, seed=2, rules=rules, clumps=2)
    after = _run(start.pos, start.vel, rules, steps=5)
    speeds = np.linalg.norm(after.vel.astype(np.float64), axis=1)
    assert speeds.max() <= 0.7 * (1 + 1e-5)
    assert speeds.max() > 0.69  # the limit was reached, not merely respected


def test_a_seed_reproduces_a_run_and_another_seed_does_not():
    runs = [scenarios.load("school", n=500, seed=seed) for seed in (4, 4, 5)]
    positions = []
    for scenario in runs:
        sim = FlockSimulation(scenario.particles, scenario.flock, dt=scenario.dt)
        sim.step(10)
        positions.append(sim.positions().copy())
    np.testing.assert_array_equal(positions[0], positions[1])
    assert not np.array_equal(positions[0], positions[2])


@pytest.mark.parametrize("name", ["flock", "murmuration", "school"])
def test_flock_presets_load_as_flocks_and_step(name):
    scenario = scenarios.load(name, n=800)
    assert scenario.model == "flock" and isinstance(scenario.flock, FlockParameters)
    sim = FlockSimulation(scenario.particles, scenario.flock, dt=scenario.dt)
    before = sim.positions().copy()
    sim.step(2)
    assert sim.steps == 2 and not np.array_equal(before, sim.positions())
    assert (sim.positions() >= 0).all() and (sim.positions() < scenario.flock.world).all()


@pytest.mark.parametrize("changes, words", [
    ({"separation_radius": -1.0}, "separation_radius must be >= 0"),
    ({"max_speed": 0.0}, "max_speed must be > 0"),
    ({"max_speed": -2.0}, "max_speed must be > 0"),
    ({"cohesion_radius": float("nan")}, "cohesion_radius must be finite"),
    ({"alignment_radius": 60.0}, "below half the world"),
    ({"separation_radius": 0.0, "alignment_radius": 0.0, "cohesion_radius": 0.0}, "positive"),
    ({"search": "octree"}, "search must be one of"),
    ({"cell_width": 3}, "cell_width must be one of"),
    ({"flavour": 1}, "unknown flock parameter"),
])
def test_bad_parameters_are_clear_errors(changes, words):
    with pytest.raises(InvalidInputError, match=words):
        FlockParameters.from_mapping(changes)


def test_bad_starts_and_steps_are_clear_errors():
    with pytest.raises(InvalidInputError, match="at least one boid"):
        initial_flock(0)
    pos = np.full((3, 3), 5.0)
    pos[1, 2] = np.nan
    with pytest.raises(InvalidInputError, match="not finite"):
        FlockSimulation(Particles(pos, np.zeros((3, 3)), np.ones(3)), RULES, dt=DT)
    with pytest.raises(InvalidInputError, match="dt must be positive"):
        FlockSimulation(initial_flock(10), RULES, dt=0.0)
    with pytest.raises(InvalidInputError, match="half the world"):
        FlockSimulation(initial_flock(10), RULES, dt=100.0)
    with pytest.raises(ValueError, match="search must be"):
        _native.flock_step(*(np.zeros((4, 3), np.float32) for _ in range(4)),
                           RULES.constants(4, DT), "octree", 1)


def test_live_rule_changes_and_a_new_world_keep_the_state_valid():
    start = initial_flock(1000, seed=1, rules=RULES)
    sim = FlockSimulation(start, RULES, dt=DT)
    sim.step(2)
    sim.rules = RULES.with_changes(world=30.0, max_speed=0.5, search="naive")
    sim.step(1)
    pos, vel = sim.positions(), sim.velocities()
    assert (pos >= 0).all() and (pos < 30.0).all()
    assert np.linalg.norm(vel, axis=1).max() <= 0.5 * (1 + 1e-5)


def test_the_runner_runs_a_flock_takes_rule_changes_and_records_it_as_a_flock(tmp_path):
    from orrery.engine.recording import RecordingFile
    from orrery.engine.runner import RunSettings, SimulationRunner

    runner = SimulationRunner(RunSettings("school", n=400, seed=2), paused=True)
    try:
        runner.step(3)
        runner.update(flock={"cohesion_weight": 0.2, "search": "scattered-grid"})
        runner.start_recording(tmp_path / "school.h5", every=1)
        runner.step(4)
        deadline = time.monotonic() + 30
        while runner.latest().step < 7 and time.monotonic() < deadline:
            time.sleep(0.02)
        runner.stop_recording()
        frame = runner.latest()
        assert runner.error is None and frame.step == 7
        assert runner.flock.cohesion_weight == 0.2 and runner.flock.search == "scattered-grid"
        assert "flock, scattered-grid" in frame.stats.solver
        assert frame.stats.energy_error is None
    finally:
        runner.close()
    with RecordingFile(tmp_path / "school.h5") as reading:
        attributes = reading.attributes
        assert attributes["model"] == "flock" and attributes["scenario"] == "school"
        assert attributes["flock"]["cohesion_weight"] == 0.2
        assert reading.frame_count >= 4


def test_a_gravity_recording_says_its_model_is_gravity(tmp_path):
    from orrery.engine import Simulation, ics, make_solver
    from orrery.engine.recording import RecordingFile, Recorder

    sim = Simulation(ics.make("plummer", 64, seed=1), make_solver("cpu-direct"), dt=1e-3)
    with Recorder.for_simulation(tmp_path / "g.h5", sim, scenario="plummer") as recorder:
        recorder.append_simulation(sim)
    with RecordingFile(tmp_path / "g.h5") as reading:
        assert reading.attributes["model"] == "gravity"


def test_positions_outside_the_box_handed_to_the_native_step_stay_inside_the_cell_table():
    constants = RULES.constants(50, DT)
    pos = np.random.default_rng(1).uniform(-200, 200, (50, 3)).astype(np.float32)
    pos[3] = np.nan
    vel = np.zeros_like(pos)
    for search in ("scattered-grid", "coherent-grid"):
        out_pos, out_vel = np.empty_like(pos), np.empty_like(vel)
        _native.flock_step(pos, vel, out_pos, out_vel, constants, search, 1)
        assert np.isfinite(out_vel[np.isfinite(pos).all(axis=1)]).all()


def test_rule_changes_stay_with_their_scenario():
    from orrery.engine.runner import RunSettings, SimulationRunner

    runner = SimulationRunner(RunSettings("school", n=300), paused=True)
    try:
        runner.update(flock={"world": 80.0})
        deadline = time.monotonic() + 30
        while runner.flock.world != 80.0 and time.monotonic() < deadline:
            time.sleep(0.02)
        runner.update(scenario="flock", n=300)
        runner.step(1)
        while runner.latest().step < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert runner.error is None and runner.flock.world == 100.0  # the flock preset's own
        assert runner.settings.flock is None
    finally:
        runner.close()


def test_scenarios_name_their_model_without_being_built():
    assert {name for name in scenarios.names() if scenarios.model(name) == "flock"} == {
        "flock", "murmuration", "school"}
    assert scenarios.model("plummer") == scenarios.model("galaxy-collision") == "gravity"
