"""A GPU run continued from a keyframe agrees with the uninterrupted run to the tolerance
``docs/recording-format.md`` states (summation order on a device may vary between runs)."""

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.recording import Recorder
from orrery.engine.resume import resume

# After 100 steps of a 512-particle Plummer sphere (scale radius ~1) in float32.
RESUME_TOLERANCE = 1e-4


@pytest.mark.parametrize("solver", ["gpu-direct", "gpu-tree"])
def test_a_resumed_gpu_run_stays_within_the_tolerance(tmp_path, device, solver):
    particles = ics.make("plummer", 512, seed=5)
    whole = Simulation(particles, make_solver(solver, device=device), dt=0.005)
    path = tmp_path / "run.h5"
    with Recorder.for_simulation(path, whole, scenario="plummer", keyframe_every=1) as recorder:
        whole.step(20)
        recorder.append_simulation(whole)
    resumed = resume(path, solver_options={"device": device}).simulation
    assert resumed.steps == 20 and resumed.solver.name == solver
    whole.step(100)
    resumed.step(100)
    gap = np.abs(whole.particles.pos.astype(np.float64) - resumed.particles.pos).max()
    assert gap <= RESUME_TOLERANCE, gap
