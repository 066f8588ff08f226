"""GPU solvers take device arrays of other frameworks and hand device arrays back (issue 19):
CuPy (and PyTorch when installed) on CUDA, objects exposing ``__sycl_usm_array_interface__`` over
dpctl USM allocations on SYCL; float32 or float64, contiguous, strided or reversed; results
identical to the NumPy path; no particle data through the host (the context's transfer
counters); bad device input refused with the CPU solvers' messages."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Simulation, compute, ics, make_solver

SOLVERS = ["gpu-direct", "gpu-tree"]
# What a device-array evaluation may bring to the host: the checks (8 words) and the tree's own
# counters, never particle data (n = 700 here: 8 KiB of float32 positions).
SMALL_READS = 1024


class UsmArray:
    """The least a dpnp array is to a consumer: a USM device allocation (from dpctl, on a queue
    of our own) behind ``__sycl_usm_array_interface__`` (strides and offset in elements,
    syclobj, version 1, as dpctl's sycl_usm_array_interface.rst says)."""

    def __init__(self, host: np.ndarray, device, *, shape=None, strides=None, offset=0,
                 readonly=False):
        import dpctl
        import dpctl.memory

        self.queue = dpctl.SyclQueue(device)
        flat = np.ascontiguousarray(host).reshape(-1)
        self.memory = dpctl.memory.MemoryUSMDevice(max(flat.nbytes, 1), queue=self.queue)
        self.memory.copy_from_host(flat.view(np.uint8))
        self.interface = {"data": (self.memory.__sycl_usm_array_interface__["data"][0], readonly),
                          "shape": tuple(shape or host.shape), "strides": strides,
                          "offset": offset, "typestr": host.dtype.str, "version": 1,
                          "syclobj": self.queue}

    @property
    def __sycl_usm_array_interface__(self):
        return self.interface


def on_device(device: str, host: np.ndarray, layout: str = "contiguous"):
    """``host`` (n, k) or (n,) as a device array of ``device`` in ``layout``: "contiguous",
    "strided" (the columns of rows of 4, as a real4 buffer), "reversed" (rows in reverse,
    negative strides; the array holds ``host`` reversed back, so values match ``host``)."""
    n = host.shape[0]
    width = host.shape[1] if host.ndim == 2 else 1
    if layout == "contiguous":
        buffer, strides, offset = host, None, 0
    elif layout == "strided":
        buffer = np.zeros((n, 4), host.dtype)
        buffer[:, :width] = host.reshape(n, width)
        strides, offset = ((4, 1) if host.ndim == 2 else (4,)), 0
    else:
        buffer = np.ascontiguousarray(host[::-1])
        strides = (-width, 1) if host.ndim == 2 else (-1,)
        offset = (n - 1) * width
    if device.startswith("cuda"):
        import cupy

        whole = cupy.asarray(buffer)
        if layout == "contiguous":
            return whole
        if layout == "strided":
            return whole[:, :width] if host.ndim == 2 else whole[:, 0]
        return whole[::-1]
    from orrery.engine.compute import open_device

    return UsmArray(buffer, open_device(device).device, shape=host.shape, strides=strides,
                    offset=offset)


def to_host(array) -> np.ndarray:
    if hasattr(array, "__sycl_usm_array_interface__"):
        return array.copy_to_host()
    import cupy

    assert isinstance(array, cupy.ndarray)  # CuPy in, CuPy out
    return cupy.asnumpy(array)


@pytest.fixture
def bodies():
    particles = ics.plummer(700, seed=5)
    return particles.pos, particles.mass


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
def test_device_arrays_give_the_numpy_results_without_host_transfers(device, solver, dtype,
                                                                     layout, bodies):
    pos, mass = (values.astype(dtype) for values in bodies)
    gpu = make_solver(solver, device=device, softening=0.01)
    acc_host, pot_host = gpu.accelerations(pos, mass, potential=True)
    device_pos, device_mass = on_device(device, pos, layout), on_device(device, mass, layout)
    transfers = gpu.context.transfers
    before = (transfers.uploaded, transfers.downloaded)
    acc, pot = gpu.accelerations(device_pos, device_mass, potential=True)
    assert transfers.uploaded == before[0]
    assert transfers.downloaded - before[1] <= SMALL_READS
    assert acc.shape == (700, 3) and pot.shape == (700,)
    np.testing.assert_array_equal(to_host(acc), acc_host)
    np.testing.assert_array_equal(to_host(pot), pot_host)
    assert np.array_equal(to_host(gpu.accelerations(device_pos, device_mass)), acc_host)


def test_the_host_path_moves_the_arrays_once_each_way(device, bodies):
    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-direct", device=device, softening=0.01)
    transfers = gpu.context.transfers
    before = (transfers.uploaded, transfers.downloaded)
    acc = gpu.accelerations(pos, mass)
    assert isinstance(acc, np.ndarray) and acc.dtype == np.float32
    assert transfers.uploaded - before[0] == pos.nbytes + mass.nbytes  # as given, no packing
    assert transfers.downloaded - before[1] == acc.nbytes + 32  # the results and the checks


def test_a_read_only_device_array_is_read_in_place(sycl_device, bodies):
    # The solvers only read their inputs, so read-only memory (JAX exports it) is accepted.
    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-direct", device=sycl_device, softening=0.01)
    handle = compute.open_device(sycl_device).device
    acc = gpu.accelerations(UsmArray(pos, handle, readonly=True), UsmArray(mass, handle,
                                                                           readonly=True))
    np.testing.assert_array_equal(to_host(acc), gpu.accelerations(pos, mass))


def test_a_dlpack_host_array_is_a_host_array(device, bodies):
    class DLPackOnly:  # the protocol alone, as from a framework the solver does not know
        def __init__(self, values):
            self._values = values

        def __dlpack__(self, **kwargs):
            return self._values.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._values.__dlpack_device__()

    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-direct", device=device, softening=0.01)
    acc = gpu.accelerations(np.from_dlpack(DLPackOnly(pos)), DLPackOnly(mass))
    assert isinstance(acc, np.ndarray)
    np.testing.assert_array_equal(acc, gpu.accelerations(pos, mass))


@pytest.mark.parametrize("change, message", [
    (lambda pos, mass: pos.__setitem__((7, 1), np.nan), "position of particle 7 is not finite"),
    (lambda pos, mass: pos.__setitem__((9, 2), np.inf), "position of particle 9 is not finite"),
    (lambda pos, mass: mass.__setitem__(3, -1.0), "mass of particle 3 is negative"),
    (lambda pos, mass: mass.__setitem__(4, np.nan), "mass of particle 4 is not finite"),
    (lambda pos, mass: mass.__setitem__(slice(None), 0.0), "total mass must be positive"),
    (lambda pos, mass: pos.__setitem__((5, 0), 1e30),
     "position of particle 5 .*too large for float32"),
])
def test_bad_values_on_the_device_are_refused_as_on_the_host(device, bodies, change, message):
    pos, mass = (values.astype(np.float64) for values in bodies)
    change(pos, mass)
    gpu = make_solver("gpu-tree", device=device, precision="f32", softening=0.01)
    with pytest.raises(InvalidInputError, match=message):
        gpu.accelerations(on_device(device, pos, "strided"), on_device(device, mass, "strided"))
    with pytest.raises(InvalidInputError, match=message):  # the host path checks on the device
        gpu.accelerations(pos, mass)


def test_bad_shapes_types_and_mixed_devices_are_refused(device, bodies):
    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-direct", device=device, softening=0.01)
    with pytest.raises(InvalidInputError, match=r"positions must have shape \(n, 3\)"):
        gpu.accelerations(on_device(device, np.ascontiguousarray(pos[:, :2])),
                          on_device(device, mass))
    with pytest.raises(InvalidInputError, match="700 positions but 699 masses"):
        gpu.accelerations(on_device(device, pos), on_device(device, mass[:699]))
    with pytest.raises(InvalidInputError, match="must be on one device"):
        gpu.accelerations(pos, on_device(device, mass))
    with pytest.raises(InvalidInputError, match="float32 or float64"):
        gpu.accelerations(on_device(device, pos.astype(np.float16)), on_device(device, mass))


class ForeignInterface:
    def __init__(self, name, interface):
        setattr(self, name, interface)


def test_an_array_of_the_other_backend_is_refused(device):
    if device.startswith("sycl"):
        foreign = ForeignInterface("__cuda_array_interface__", {
            "data": (1 << 20, False), "shape": (4, 3), "typestr": "<f4", "version": 3})
        expected = "CUDA device array but the solver runs on sycl"
    else:
        foreign = ForeignInterface("__sycl_usm_array_interface__", {
            "data": (1 << 20, False), "shape": (4, 3), "typestr": "<f4", "version": 1,
            "syclobj": None})
        expected = "SYCL USM array but the solver runs on cuda"
    gpu = make_solver("gpu-direct", device=device)
    with pytest.raises(InvalidInputError, match=expected):
        gpu.accelerations(foreign, foreign)


def test_host_memory_behind_the_sycl_interface_is_refused(sycl_device):
    host = np.ones((4, 3), np.float32)
    fake = ForeignInterface("__sycl_usm_array_interface__", {
        "data": (host.ctypes.data, False), "shape": (4, 3), "typestr": "<f4", "version": 1,
        "syclobj": compute.open_device(sycl_device).queue})
    with pytest.raises(InvalidInputError, match="positions are not USM memory"):
        make_solver("gpu-direct", device=sycl_device).accelerations(fake, np.ones(4))


def test_a_simulation_from_device_arrays_runs_and_shows_its_state_on_the_device(device):
    particles = ics.plummer(400, seed=8)
    solver = make_solver("gpu-direct", device=device, precision="f32", softening=0.02)
    from_host = Simulation(particles, solver, dt=1e-3)
    from_device = Simulation.from_device(on_device(device, particles.pos, "strided"),
                                         on_device(device, particles.vel, "reversed"),
                                         on_device(device, particles.mass), solver, dt=1e-3)
    assert from_device.initial.total == from_host.initial.total
    transfers = solver.context.transfers
    before = (transfers.uploaded, transfers.downloaded)
    from_host.step(10)
    from_device.step(10)
    view = from_device.device_view()
    assert (transfers.uploaded, transfers.downloaded) == before  # steps and views: no transfer
    state = from_host.particles
    np.testing.assert_array_equal(to_host(view.pos), state.pos)
    np.testing.assert_array_equal(to_host(view.vel), state.vel)
    np.testing.assert_array_equal(to_host(view.mass), state.mass)
    np.testing.assert_array_equal(from_device.positions(), state.pos)
    # The view is a device array the solvers take back, in place.
    np.testing.assert_array_equal(to_host(solver.accelerations(view.pos, view.mass)),
                                  solver.accelerations(state.pos, state.mass))


def test_a_simulation_refuses_host_arrays_or_a_host_solver_for_from_device(device, bodies):
    pos, mass = bodies
    with pytest.raises(InvalidInputError, match="must all be device arrays"):
        Simulation.from_device(pos, pos, mass, make_solver("gpu-direct", device=device), dt=1e-3)
    with pytest.raises(InvalidInputError, match="keeps its state in host memory"):
        Simulation.from_device(pos, pos, mass, make_solver("cpu-direct"), dt=1e-3)
    with pytest.raises(InvalidInputError, match="keeps its state in host memory"):
        Simulation(ics.plummer(8), make_solver("cpu-direct"), dt=1e-3).device_view()


@pytest.mark.parametrize("size", [5, (3 << 20) // 4 + 3])
def test_transfers_round_trip_at_every_size(context, size):
    # Large arrays go through the CUDA backend's pinned staging in pieces; the last is short.
    values = np.random.default_rng(1).standard_normal(size).astype(np.float32)
    array = context.empty((size,), np.float32)
    array.upload(values)
    np.testing.assert_array_equal(array.download(), values)


def test_pytorch_cuda_tensors_in_and_out(cuda_device, bodies):
    torch = pytest.importorskip("torch")
    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-tree", device=cuda_device, softening=0.01)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # produced on a stream of PyTorch's own
        device_pos = torch.from_numpy(pos).cuda()[:, :3]
        device_mass = torch.from_numpy(mass).cuda()
        acc = torch.from_dlpack(gpu.accelerations(device_pos, device_mass))
        np.testing.assert_array_equal(acc.cpu().numpy(), gpu.accelerations(pos, mass))
    with pytest.raises(InvalidInputError, match="on one device"):
        gpu.accelerations(device_pos.cpu(), device_mass)


def test_the_periodic_check_of_a_device_state_moves_no_particle_data(device, monkeypatch):
    from orrery.engine.solvers import _gpu

    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", 0.0)  # a check after every evaluation
    solver = make_solver("gpu-direct", device=device, softening=0.02)
    sim = Simulation(ics.plummer(2000, seed=3), solver, dt=1e-3)
    transfers = solver.context.transfers
    before = (transfers.uploaded, transfers.downloaded)
    sim.step(5)
    assert transfers.uploaded == before[0]
    assert transfers.downloaded - before[1] == 6 * 32  # six checks of eight integers


def test_cuda_arrays_through_the_array_interface_alone_and_on_a_stream_of_the_caller(
        cuda_device, bodies):
    import cupy

    pos, mass = (values.astype(np.float32) for values in bodies)
    gpu = make_solver("gpu-direct", device=cuda_device, softening=0.01)
    expected = gpu.accelerations(pos, mass)
    with cupy.cuda.Stream(non_blocking=True):  # the caller's own stream: its writes come first
        device_pos = cupy.zeros((700, 4), cupy.float32)
        device_pos[:, :3] = cupy.asarray(pos)
        device_mass = cupy.asarray(mass) * 1  # queued on that stream just before the call
        only_interface = ForeignInterface("__cuda_array_interface__",
                                          device_pos[:, :3].__cuda_array_interface__)
        acc = gpu.accelerations(only_interface, device_mass)
        scaled = acc * 2  # on the caller's stream, which waits for the solver's
        np.testing.assert_array_equal(cupy.asnumpy(scaled), expected * 2)


class DLPackDevice:
    """An object that says, through DLPack, where its memory is (and is never read)."""

    def __init__(self, kind, ordinal):
        self._device = (kind, ordinal)

    def __dlpack__(self, **kwargs):
        raise AssertionError("an array on the wrong device must not be imported")

    def __dlpack_device__(self):
        return self._device


def test_dlpack_arrays_on_another_device_are_refused_before_they_are_read(device):
    gpu = make_solver("gpu-direct", device=device)
    if device.startswith("sycl"):
        cases = [(DLPackDevice(2, 0), "CUDA device array but the solver runs on sycl"),
                 (DLPackDevice(14, 0), "dpctl 0.22 imports no DLPack")]
    else:
        cases = [(DLPackDevice(2, 7), "on cuda:7 but the solver runs on cuda:0"),
                 (DLPackDevice(14, 0), "SYCL USM array but the solver runs on cuda")]
    cases.append((DLPackDevice(10, 0), "DLPack device type 10 are not supported"))
    for array, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            gpu.accelerations(array, array)
