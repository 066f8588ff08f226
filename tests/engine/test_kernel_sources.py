"""Kernel files are read from the ``kernels/`` folder of the package that launches them, after
the compute layer's ``portable.h`` (ADR 0251); no device is needed to assemble a program."""

from importlib import resources

import pytest

from orrery.engine.compute._source import HEADER, assemble, kernel_file
from orrery.engine.errors import InvalidInputError

LAUNCHERS = ("orrery.engine.compute", "orrery.engine.solvers", "orrery.engine.flock",
             "orrery.engine.tuning", "orrery.engine", "orrery.app.render")


def test_a_program_is_the_defines_then_portable_h_then_the_launchers_kernels():
    text, _ = assemble("orrery.engine.solvers", ["softened_pair.cl", "direct.cl"], "",
                       {"TILE": 64}, "")
    header = kernel_file("orrery.engine.compute", HEADER)
    pair = kernel_file("orrery.engine.solvers", "softened_pair.cl")
    direct = kernel_file("orrery.engine.solvers", "direct.cl")
    assert text.index("#define TILE 64") < text.index(header) < text.index(pair) < text.index(direct)


@pytest.mark.parametrize("package", LAUNCHERS)
def test_every_kernel_file_of_a_launching_package_can_be_read(package):
    folder = resources.files(package) / "kernels"
    names = [entry.name for entry in folder.iterdir() if entry.name.endswith((".cl", ".h"))]
    assert names
    for name in names:
        assert kernel_file(package, name)


def test_a_kernel_is_not_found_in_another_packages_folder():
    with pytest.raises(InvalidInputError, match="no kernel source 'direct.cl' in orrery.app.render"):
        assemble("orrery.app.render", ["direct.cl"], "", {}, "")


def test_kernel_files_without_the_package_that_holds_them_are_refused():
    with pytest.raises(InvalidInputError, match="need the package"):
        assemble(None, ["direct.cl"], "", {}, "")
    text, _ = assemble(None, [], "__kernel void k() {}", {}, "")
    assert text.endswith("__kernel void k() {}\n")
