"""The SIMD levels the native module finds on this CPU (its own CPUID and XGETBV on x86-64) are
the ones the operating system reports independently: Linux's CPU flags, which name only the
instruction sets whose registers the kernel saves."""

import platform
from pathlib import Path

import pytest

from orrery.engine.cpu_features import available_simd_levels, build_info

# What each x86 kernel table is compiled for (native/CMakeLists.txt), as /proc/cpuinfo names it.
X86_LEVEL_FLAGS = {"avx2": {"avx2", "fma", "f16c"}, "avx512": {"avx512f", "avx512dq"}}


def _linux_cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("/proc/cpuinfo has no flags line")


@pytest.mark.skipif(platform.system() != "Linux" or "avx2" not in build_info()["simd_compiled"],
                    reason="Linux's x86 CPU flags are the reference")
def test_x86_levels_are_those_linux_reports_for_this_cpu():
    flags = _linux_cpu_flags()
    expected = ["scalar"] + [level for level, needs in X86_LEVEL_FLAGS.items() if needs <= flags]
    assert available_simd_levels() == expected
