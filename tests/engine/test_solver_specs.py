"""Every solver's record says where it computes, and the records agree with the options."""

from orrery.engine.solvers import solver_specs


def test_each_solver_states_where_it_computes():
    kinds = {name: spec.kind for name, spec in solver_specs().items()}
    assert set(kinds.values()) <= {"cpu", "gpu", "any"}
    assert kinds["cpu-direct"] == kinds["cpu-tree"] == kinds["reference"] == "cpu"
    assert kinds["gpu-direct"] == kinds["gpu-tree"] == "gpu"
    assert kinds["auto"] == "any"


def test_gpu_solvers_take_a_device_and_cpu_solvers_do_not():
    for name, spec in solver_specs().items():
        has_device = any(option.name == "device" for option in spec.options)
        if spec.kind == "gpu":
            assert has_device, name
        elif spec.kind == "cpu":
            assert not has_device, name
