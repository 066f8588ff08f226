"""The compute layer's host types on every backend: discovery, arrays, builds, launches."""

import subprocess
import sys

import numpy as np
import pytest

from orrery.engine import InvalidInputError, compute
from orrery.engine.compute import _cuda, _discovery, _sycl

from .conftest import needs_float64

SCALE_KERNEL = """
KERNEL void scale(GLOBAL real* RESTRICT values, const int count, const real factor) {
  const int i = GLOBAL_ID;
  if (i < count) values[i] = values[i] * factor + OFFSET;
}
"""


def test_device_description_is_complete(context):
    info = context.info
    assert info.backend in ("sycl", "cuda") and info.spec.startswith(info.backend + ":")
    assert info.compute_units >= 1 and info.max_work_group_size >= info.subgroup_size
    assert info.subgroup_size in (8, 16, 32) and info.local_memory_bytes >= 16384
    assert info.name and info.name in info.describe()


def test_listing_shows_each_backend_or_its_missing_package():
    listing = compute.list_devices()
    for backend in _discovery.BACKENDS:
        found = any(info.backend == backend for info in listing.devices)
        assert found != (backend in listing.missing)
    for backend, reason in listing.missing.items():
        assert reason and reason in listing.describe()


@pytest.mark.parametrize("spec", ["opencl:0", "sycl:fast", "cuda:cpu", "metal"])
def test_malformed_device_strings_are_refused(spec):
    with pytest.raises(InvalidInputError, match="device"):
        compute.open_device(spec)


def test_absent_device_index_is_unavailable_not_a_crash():
    with pytest.raises(compute.DeviceUnavailableError):
        compute.open_device("sycl:99")


def test_context_is_shared_per_device(device):
    assert compute.open_device(device) is compute.open_device(device)


def test_array_round_trip_and_zeros(context):
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.array_equal(context.upload(values).download(), values)
    zeros = context.zeros((5, 4), np.float64)
    assert zeros.shape == (5, 4) and np.array_equal(zeros.download(), np.zeros((5, 4)))
    with pytest.raises(InvalidInputError, match="cannot upload"):
        zeros.upload(np.zeros((4, 4)))


def test_build_is_cached_per_source_and_defines(context):
    first = context.build(text=SCALE_KERNEL, defines={"OFFSET": 1.0})
    assert context.build(text=SCALE_KERNEL, defines={"OFFSET": 1.0}) is first
    assert context.build(text=SCALE_KERNEL, defines={"OFFSET": 2.0}) is not first


@pytest.mark.parametrize("bits", [32, 64])
def test_launch_with_padding_and_defines(device, context, bits):
    if bits == 64:
        needs_float64(device, context.info)
    real = np.float32 if bits == 32 else np.float64
    kernel = context.build(text=SCALE_KERNEL, defines={"OFFSET": 0.5, "REAL_BITS": bits}).kernel("scale")
    values = ((np.arange(100) - 50) / 4).astype(real)  # exact in either rounding of a*b+c
    array = context.upload(values)
    event = kernel.launch(128, 64, array, np.int32(100), real(3))
    assert event.seconds() > 0
    assert event.finished()  # seconds() waited for it
    assert np.array_equal(array.download(), values * real(3) + real(0.5))


def test_launch_refuses_untyped_scalars_and_bad_sizes(context):
    kernel = context.build(text=SCALE_KERNEL, defines={"OFFSET": 0.0}).kernel("scale")
    array = context.zeros(64, np.float32)
    with pytest.raises(InvalidInputError, match="NumPy scalar"):
        kernel.launch(64, 64, array, 64, np.float32(1))
    with pytest.raises(InvalidInputError, match="multiple"):
        kernel.launch(96, 64, array, np.int32(64), np.float32(1))
    with pytest.raises(InvalidInputError, match="no kernel"):
        context.build(text=SCALE_KERNEL, defines={"OFFSET": 0.0}).kernel("missing")


def test_compile_error_carries_the_compiler_log(context):
    broken = "KERNEL void broken(GLOBAL float* x) { x[0] = undeclared_thing; }"
    with pytest.raises(compute.KernelBuildError) as error:
        context.build(text=broken)
    assert "undeclared_thing" in error.value.log
    assert "undeclared_thing" in str(error.value)


def test_loader_points_at_the_wheel_library_only_when_unconfigured(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libintelocl.so").write_bytes(b"")
    monkeypatch.setattr(_sycl.sys, "prefix", str(tmp_path))
    monkeypatch.setattr(_sycl.sysconfig, "get_path", lambda name: str(tmp_path / "elsewhere"))
    monkeypatch.delenv("OCL_ICD_FILENAMES", raising=False)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    assert _sycl.configure_loader() == str(tmp_path / "lib" / "libintelocl.so")
    assert _sycl.os.environ["OCL_ICD_FILENAMES"] == str(tmp_path / "lib" / "libintelocl.so")
    monkeypatch.setenv("OCL_ICD_FILENAMES", "/opt/mine/libOpenCL-vendor.so")
    assert _sycl.configure_loader() is None
    assert _sycl.os.environ["OCL_ICD_FILENAMES"] == "/opt/mine/libOpenCL-vendor.so"


def test_missing_packages_are_named_not_raised(monkeypatch):
    monkeypatch.setitem(_sycl.sys.modules, "dpctl", None)
    monkeypatch.setitem(_sycl.sys.modules, "cupy", None)
    assert _sycl.usable_devices() == ([], "dpctl is not installed (pip install 'orrery[sycl]')")
    assert _cuda.usable_devices() == ([], "CuPy is not installed (pip install 'orrery[cuda]')")
    reason = compute.unavailable_reason()
    assert "dpctl is not installed" in reason and "CuPy is not installed" in reason
    with pytest.raises(compute.DeviceUnavailableError, match="dpctl is not installed"):
        compute.open_device("sycl:cpu")



def test_opening_a_device_leaves_subprocess_vfork_on(device):
    """dpctl's import turns subprocess's vfork off; after the compute layer has imported it, a
    subprocess is still vfork()ed, not a fork() of the whole process beside its solver threads."""
    code = ("import subprocess, sys\n"
            "from orrery.engine import compute\n"
            f"compute.open_device({device!r})\n"
            "print(subprocess._USE_VFORK, 'dpctl' in sys.modules)\n")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, timeout=120).stdout.split()
    assert printed == ["True", str(device.startswith("sycl"))]
