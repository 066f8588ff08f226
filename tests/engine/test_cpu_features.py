"""The SIMD levels the native module finds on this CPU (its own CPUID and XGETBV on x86-64, the
auxiliary vector and prctl on AArch64) are the ones the operating system reports independently:
Linux's CPU flags, which name only the instruction sets whose registers the kernel saves, and the
hardware capabilities and SVE vector length it gives the process, read here without the module."""

import ctypes
import platform
from pathlib import Path

import numpy as np
import pytest

from orrery.engine.cpu_features import available_simd_levels, build_info, simd_level
from orrery.engine.errors import SolverUnavailableError

# What each x86 kernel table is compiled for (native/CMakeLists.txt), as /proc/cpuinfo names it.
X86_LEVEL_FLAGS = {"avx2": {"avx2", "fma", "f16c"}, "avx512": {"avx512f", "avx512dq"}}
# The vector lengths with an SVE table (native/simd_sve*.cpp).
SVE_TABLE_BITS = (128, 256, 512)
# <elf.h>, <asm/hwcap.h> for AArch64, <linux/prctl.h>.
AT_HWCAP, HWCAP_SVE = 16, 1 << 22
PR_SVE_GET_VL, PR_SVE_VL_LEN_MASK = 51, 0xFFFF

ON_LINUX = platform.system() == "Linux"


def _linux_cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("/proc/cpuinfo has no flags line")


def _sve_vector_bits() -> int:
    """The process's SVE vector length in bits as Linux states it, 0 without SVE."""
    auxv = dict(np.fromfile("/proc/self/auxv", dtype=np.uint64).reshape(-1, 2).tolist())
    if not auxv.get(AT_HWCAP, 0) & HWCAP_SVE:
        return 0
    length = ctypes.CDLL(None, use_errno=True).prctl(PR_SVE_GET_VL, 0, 0, 0, 0)
    assert length >= 0, f"prctl(PR_SVE_GET_VL) failed: errno {ctypes.get_errno()}"
    return 8 * (length & PR_SVE_VL_LEN_MASK)


# The other systems have no independent statement of what the CPU offers a process here.
@pytest.mark.skipif(not ON_LINUX, reason="the reference is what Linux reports (/proc, auxv)")
def test_levels_are_those_linux_reports_for_this_cpu():
    if "neon" in build_info()["simd_compiled"]:  # AArch64: NEON, and the SVE table of the
        bits = _sve_vector_bits()                 # process's vector length where there is one
        if bits in SVE_TABLE_BITS:
            assert available_simd_levels() == ["scalar", "neon", "sve"]
            assert simd_level("sve")["kernels"] == f"sve{bits}"
        else:
            assert available_simd_levels() == ["scalar", "neon"]
            with pytest.raises(SolverUnavailableError, match="SIMD level sve is not available"):
                simd_level("sve")
        return
    flags = _linux_cpu_flags()  # x86-64: the flags name the levels whose registers Linux saves
    expected = ["scalar"] + [level for level, needs in X86_LEVEL_FLAGS.items() if needs <= flags]
    assert available_simd_levels() == expected
