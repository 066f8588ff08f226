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
        scenarios._load_preset("twice", preset, n=None, seed=0)


def test_a_scenario_without_run_settings_gets_the_default_time_step():
    preset = {"generator": "initial_conditions.ics.plummer", "parameters": {"n": 64}}
    scenario = scenarios._load_preset("bare", preset, n=None, seed=0)
    assert scenario.dt == scenarios.DT.default
