"""What engine/autodiff.py promises without PyTorch or JAX (as in CI): importing it imports
neither, and calling an adapter without its framework is one line naming the extra."""

import subprocess
import sys

import numpy as np
import pytest

from orrery.engine import autodiff, ics, make_solver
from orrery.engine._optional import MissingPackageError


def test_importing_the_adapters_imports_neither_framework():
    code = ("import sys, orrery.engine.autodiff; "
            "print(sorted({'torch', 'jax'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("package, call", [
    ("torch", lambda p, s: autodiff.torch_run(p.pos, p.vel, p.mass, solver=s, dt=0.01, steps=1)),
    ("jax", lambda p, s: autodiff.jax_run(p.pos, p.vel, p.mass, solver=s, dt=0.01, steps=1)),
    ("jax", lambda p, s: autodiff.jax_accelerations(p.pos, p.mass, solver=s)),
])
def test_an_adapter_without_its_framework_names_the_extra(monkeypatch, package, call):
    monkeypatch.setitem(sys.modules, package, None)
    autodiff._torch_functions.cache_clear()  # built with PyTorch by an earlier test, if any
    particles = ics.plummer(4, seed=1)
    solver = make_solver("cpu-direct", precision="f64", softening=0.1)
    try:
        with pytest.raises(MissingPackageError, match=r"pip install 'orrery\[frameworks\]'"):
            call(particles, solver)
    finally:
        autodiff._torch_functions.cache_clear()


def test_a_run_keeps_its_end_state_as_uint32_words_both_ways():
    q = np.array([[2**62, -2**62, -1], [0, 1, -(2**40) + 3]], dtype=np.int64)
    words = autodiff._words(q)
    assert words.dtype == np.uint32 and words.shape == (2, 3, 2)
    np.testing.assert_array_equal(autodiff._points(words), q)
