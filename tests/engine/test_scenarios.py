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
