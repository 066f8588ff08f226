"""The ``device`` fixture every GPU test runs under: the Intel OpenCL CPU device through dpctl
(CI, no GPU) and CUDA device 0 through CuPy (marked ``gpu``: run on a machine with an NVIDIA GPU
with ``pytest -m gpu``). A backend whose package or device is missing skips with the reason, except the devices named in
``ORRERY_REQUIRE_DEVICES`` (comma-separated; CI names ``sycl:cpu``), which fail instead, so that
a broken install cannot turn every GPU test into a silent skip."""

import os

import pytest

from orrery.engine import compute

DEVICES = ["sycl:cpu", pytest.param("cuda:0", marks=pytest.mark.gpu)]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    try:
        compute.open_device(request.param)
    except compute.DeviceUnavailableError as error:
        if request.param in os.environ.get("ORRERY_REQUIRE_DEVICES", "").split(","):
            pytest.fail(f"{request.param} is required here but unavailable: {error}")
        pytest.skip(f"{request.param} is not available here: {error}")
    return request.param


@pytest.fixture
def context(device) -> compute.Context:
    return compute.open_device(device)
