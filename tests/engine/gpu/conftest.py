"""The ``device`` fixture every GPU test runs under: the Intel OpenCL CPU device through dpctl
(CI, no GPU) and CUDA device 0 through CuPy (marked ``gpu``: run on a machine with an NVIDIA GPU
with ``pytest -m gpu``). A backend whose package or device is missing skips with the reason, except the devices named in
``ORRERY_REQUIRE_DEVICES`` (comma-separated; CI names ``sycl:cpu``), which fail instead, so that
a broken install cannot turn every GPU test into a silent skip; ``needs_float64`` holds a
float64 case to the same rule. ``ctx`` is a headless GL
context (EGL) for the tests that render on a device (module scope)."""

import os

import pytest

from orrery.engine import compute

DEVICES = ["sycl:cpu", pytest.param("cuda:0", marks=pytest.mark.gpu)]


def _opened(spec: str) -> str:
    try:
        compute.open_device(spec)
    except compute.DeviceUnavailableError as error:
        if spec in os.environ.get("ORRERY_REQUIRE_DEVICES", "").split(","):
            pytest.fail(f"{spec} is required here but unavailable: {error}")
        pytest.skip(f"{spec} is not available here: {error}")
    return spec


def needs_float64(device: str, info: compute.DeviceInfo) -> None:
    """A float64 case on ``device`` (as the fixture names it), whose context's ``info`` says it
    has no float64 (Intel's Arc GPUs, for one), skips, naming it;
    on a device ``ORRERY_REQUIRE_DEVICES`` names it fails instead: the devices CI and the GPU
    machines require (Intel's OpenCL CPU device, CUDA's) all have float64, so there a float64
    case can never quietly stop running."""
    if info.fp64:
        return
    if device in os.environ.get("ORRERY_REQUIRE_DEVICES", "").split(","):
        pytest.fail(f"{device} is required here and reports no float64")
    pytest.skip(f"{device} has no float64")


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return _opened(request.param)


# For what one backend alone has (the SYCL or the CUDA array interface): the same rules.
@pytest.fixture(params=DEVICES[:1])
def sycl_device(request) -> str:
    return _opened(request.param)


@pytest.fixture(params=DEVICES[1:])
def cuda_device(request) -> str:
    return _opened(request.param)


@pytest.fixture
def context(device) -> compute.Context:
    return compute.open_device(device)


@pytest.fixture(scope="module")
def ctx(egl):
    from orrery.app.render import headless_context

    context = headless_context()
    yield context
    context.release()
