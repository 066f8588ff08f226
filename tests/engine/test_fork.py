"""A forked child (multiprocessing's default start method on Linux before Python 3.14) can run the
native solvers after its parent did: the worker pool's threads do not survive a fork."""

import os
import time
import warnings

import numpy as np
import pytest

from orrery.engine import make_solver

CHILD_SECONDS = 20


@pytest.mark.parametrize("name", ["cpu-direct", "cpu-tree", "cpu-fmm"])
def test_a_forked_child_runs_a_solver_its_parent_ran(name):
    rng = np.random.default_rng(1)
    pos = rng.standard_normal((4096, 3)).astype(np.float32)
    mass = np.full(4096, 1 / 4096, dtype=np.float32)
    # Two threads whatever the machine: the parent's pool then has a worker that a fork leaves behind.
    solver = make_solver(name, softening=0.01, threads=2)
    expected = solver.accelerations(pos, mass)
    with warnings.catch_warnings():  # Python 3.12 warns that forking a threaded process may hang
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit code only
        same = False
        try:
            same = np.array_equal(solver.accelerations(pos, mass), expected)
        finally:
            os._exit(0 if same else 1)
    deadline = time.monotonic() + CHILD_SECONDS
    while (ended := os.waitpid(child, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if ended == (0, 0):
        os.kill(child, 9)
        os.waitpid(child, 0)
        pytest.fail(f"the forked child's {name} evaluation hung")
    assert os.waitstatus_to_exitcode(ended[1]) == 0, "the child's accelerations differ"
