import numpy as np
import pytest

from orrery.engine import InvalidInputError, scenarios


def test_presets_and_generators_are_listed():
    assert "plummer-cluster" in scenarios.names() and "plummer" in scenarios.names()


def test_preset_loads_with_its_settings_and_count_override():
    scenario = scenarios.load("plummer-cluster", n=300, seed=2)
    assert scenario.particles.n == 300
    assert scenario.dt == pytest.approx(0.002) and scenario.softening == pytest.approx(0.01)


def test_unknown_scenario_is_named():
    with pytest.raises(InvalidInputError, match="unknown scenario"):
        scenarios.load("andromeda-in-a-teacup")


def test_a_galaxy_preset_runs_at_the_softening_its_equilibrium_was_built_for():
    scenario = scenarios.load("disk-galaxy", n=400)
    assert scenario.softening == pytest.approx(0.05)


def test_a_preset_stating_softening_twice_is_refused():
    preset = {"generator": "initial_conditions.ics.plummer",
              "parameters": {"n": 64, "softening": 0.05}, "run": {"softening": 0.05}}
    with pytest.raises(InvalidInputError, match="softening twice"):
        scenarios._preset_recipe("twice", preset, n=None)


def test_a_scenario_without_run_settings_gets_the_default_time_step():
    preset = {"generator": "initial_conditions.ics.plummer", "parameters": {"n": 64}}
    assert scenarios._preset_recipe("bare", preset, n=None).dt == scenarios.DT.default


def test_a_recipe_is_a_presets_generator_arguments_and_settings_before_any_drawing():
    from orrery.engine.initial_conditions.galaxy import galaxy_collision

    recipe = scenarios.recipe("galaxy-collision", n=900)
    assert recipe.generator is galaxy_collision
    assert recipe.parameters["n"] == 900 and recipe.parameters["softening"] == 0.05
    assert recipe.dt == 0.05 and recipe.softening == 0.05 and recipe.solver == "auto"
    plain = scenarios.recipe("hernquist")
    assert plain.parameters == {"n": 4096} and plain.dt == scenarios.DT.default


def test_the_satellite_preset_is_a_host_and_a_satellite_on_its_orbit():
    from orrery.engine.satellite_fit import ORBIT

    scenario = scenarios.load("satellite", n=400, seed=1)
    particles = scenario.particles
    satellite = particles.population == particles.population_names.index("satellite")
    assert particles.population_names == ("host", "satellite") and satellite.sum() == 50
    mass = particles.mass[satellite]
    assert mass.sum() == pytest.approx(0.05) and particles.mass.sum() == pytest.approx(1.05)
    centre = (particles.pos[satellite] * mass[:, None]).sum(axis=0) / mass.sum()
    velocity = (particles.vel[satellite] * mass[:, None]).sum(axis=0) / mass.sum()
    np.testing.assert_allclose(np.concatenate([centre, velocity]), ORBIT, atol=1e-12)
    # Its preset's size (0.1), not the host's: every satellite particle near its centre.
    assert np.percentile(np.linalg.norm(particles.pos[satellite] - centre, axis=1), 50) < 0.15
    assert scenario.dt == pytest.approx(0.004) and scenario.softening == pytest.approx(0.02)


def test_the_satellite_generator_refuses_a_system_it_cannot_split():
    from orrery.engine.satellite_fit import host_and_satellite

    with pytest.raises(InvalidInputError, match="at least 2 particles"):
        host_and_satellite(1)
    with pytest.raises(InvalidInputError, match="satellite_fraction"):
        host_and_satellite(64, satellite_fraction=1.5)
    with pytest.raises(InvalidInputError, match="orbit must be six"):
        host_and_satellite(64, orbit=[1.0, 2.0])
