"""gpu-fmm on the accuracy knob, on every backend: ``accuracy=`` holds on every shipped scenario
and picks cpu-fmm's theta and order (the same lists and expansions, so the same errors to
rounding), the work measure counts cpu-fmm's pairs, and conflicts are refused."""

import pytest

from orrery.engine import make_solver
from orrery.engine.accuracy import error_percentiles
from orrery.engine.errors import InvalidInputError

from ..accuracy_cases import OTHER_REALISATION_RMS


def test_gpu_fmm_accuracy_holds_on_every_shipped_scenario(device, shipped_scenarios):
    target = 1e-3
    for name, (scenario, targets, exact) in shipped_scenarios.items():
        gpu = make_solver("gpu-fmm", device=device, accuracy=target, softening=scenario.softening)
        acc = gpu.accelerations(scenario.particles.pos, scenario.particles.mass)
        rms, _ = error_percentiles(acc[targets], exact)
        assert rms <= OTHER_REALISATION_RMS * target, (name, rms, gpu.chosen)
        cpu = make_solver("cpu-fmm", accuracy=target, softening=scenario.softening)
        cpu_rms, _ = error_percentiles(cpu.accelerations(scenario.particles.pos,
                                                         scenario.particles.mass)[targets], exact)
        assert (gpu.chosen["theta"], gpu.chosen["variant"]) == (cpu.chosen["theta"], cpu.chosen["variant"])
        assert rms == pytest.approx(cpu_rms, rel=0.05, abs=2e-6), name
        stats = gpu.last_stats
        assert (stats["theta"], stats["order"], stats["accuracy"]) == (gpu.chosen["theta"], gpu.order, target)
        assert stats["heavy_share"] == cpu.heavy_share  # the variant's, as cpu-fmm's
        counts = gpu.interaction_counts()
        assert counts["particle_particle"] == cpu.last_stats["particle_particle"]
        assert counts["cost_per_particle"] == pytest.approx(cpu.last_stats["cost_per_particle"])


def test_gpu_fmm_explicit_settings_and_conflicts(device, plummer_2048):
    solver = make_solver("gpu-fmm", device=device, theta=0.4, order=3)
    solver.accelerations(plummer_2048.pos, plummer_2048.mass)
    assert (solver.last_stats["theta"], solver.last_stats["order"]) == (0.4, 3)
    assert solver.chosen is None
    with pytest.raises(InvalidInputError, match="theta or accuracy"):
        make_solver("gpu-fmm", device=device, theta=0.5, accuracy=1e-3)
