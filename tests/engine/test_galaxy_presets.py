"""The galaxy presets load, and their initial conditions are built for the softening they run
with."""

import tomllib
from importlib import resources

import pytest

from orrery.engine import scenarios


@pytest.mark.parametrize("name,populations", [
    ("disk-galaxy", ("disk", "bulge", "halo")),
    ("galaxy-collision", ("A disk", "A bulge", "A halo", "B disk", "B bulge", "B halo")),
])
def test_galaxy_preset_loads_with_matching_softening(name, populations):
    scenario = scenarios.load(name, n=900, seed=1)
    assert scenario.particles.n == 900
    assert scenario.particles.population_names == populations
    preset = tomllib.loads((resources.files("orrery") / "assets" / "scenarios" / f"{name}.toml").read_text())
    assert preset["parameters"]["softening"] == pytest.approx(scenario.softening)
    assert scenario.solver == "auto" and scenario.dt == pytest.approx(0.05)
