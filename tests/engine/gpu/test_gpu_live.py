"""The live path on a device: snapshots hold one point of the queue, frames reach the vertex
buffer device to device (CUDA-GL interop) or through the host with the same pixels, and closing
while a GPU step runs leaves no CUDA registration of a GL buffer behind."""

import time

import numpy as np
import pytest

from orrery.engine import compute, ics
from orrery.engine.runner import RunSettings, SimulationRunner
from orrery.engine.solvers import make_solver

from .deferred_light import landed


def _state(device, n=3000):
    solver = make_solver("gpu-direct", device=device, softening=0.05)
    particles = ics.plummer(n, seed=3)
    return solver.bind(particles), particles


def test_a_snapshot_holds_its_point_of_the_queue_while_the_state_moves_on(device):
    state, particles = _state(device)
    snapshots, expected = [], []
    for _ in range(7):  # more snapshots held at once than the staging pool keeps
        snapshots.append(state.stage_positions())
        expected.append(state.positions().astype(np.float32))
        state.kick(0.5)
        state.drift(0.5)
        state.compute_accelerations()
    assert not np.array_equal(expected[0], expected[-1])
    for snapshot, positions in zip(snapshots, expected):
        host = snapshot.host()
        assert host.dtype == np.float32 and host.shape == (particles.n, 3)
        assert np.array_equal(host, positions) and not host.flags.writeable
        assert snapshot.ready()
    if device.startswith("cuda"):
        assert all(snapshot.device is not None for snapshot in snapshots)
    # dropped snapshots give their staging buffers back; new ones are still exact
    del snapshots
    again = state.stage_positions()
    assert np.array_equal(again.host(), state.positions().astype(np.float32))


def test_a_frame_moves_its_sample_at_once_and_the_rest_only_when_asked(device):
    """A live frame's snapshot brings every sample_stride-th row to the host beside the step;
    its whole host copy starts only when ``host()`` asks (on CUDA), and is exact either way.
    A recorder's snapshot (``download=True``) starts it at once."""
    state, particles = _state(device, n=20000)  # stride 4: 5000 rows in the sample
    snapshot = state.stage_positions()
    expected = state.positions().astype(np.float32)
    stride = compute.sample_stride(particles.n)
    assert stride == 4
    deadline = time.monotonic() + 10
    while snapshot.sample() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    sample = snapshot.sample()
    assert np.array_equal(sample, expected[::stride]) and not sample.flags.writeable
    if device.startswith("cuda"):
        assert not snapshot.ready()  # nothing asked for the whole frame yet
    assert np.array_equal(snapshot.host(), expected) and snapshot.ready()
    recorded = state.stage_positions(download=True)
    if device.startswith("cuda"):
        assert recorded._done is not None  # in flight already
    assert np.array_equal(recorded.host(), expected)


def _gl_context():
    from orrery.app.render import headless_context

    return headless_context()


def _render(ctx, scene, frame, population, size=(96, 64)):
    from orrery.app.render import Camera, PointStyle, Renderer

    renderer = Renderer(ctx, splat=False)  # the GL point path: these tests compare upload paths
    renderer.resize(*size)
    camera = Camera()
    camera.fit(frame.positions)
    scene.show(frame, population)
    renderer.accumulate(scene, camera.view_projection(size[0] / size[1]), PointStyle())
    pixels = renderer.read_accumulation().copy()
    renderer.release()
    return pixels


@pytest.mark.usefixtures("egl")
def test_interop_and_host_paths_give_identical_pixels(device):
    from orrery.app.render import ParticleScene
    from orrery.app.render._scene import HOST, INTEROP
    from orrery.engine.frames import Frame

    ctx = _gl_context()
    state, particles = _state(device)
    state.drift(0.25)
    frame = Frame(None, 0.0, 0, 1, snapshot=state.stage_positions())
    on_device, on_host = ParticleScene(ctx), ParticleScene(ctx, interop=False)
    try:
        device_pixels = _render(ctx, on_device, frame, particles.population)
        host_pixels = _render(ctx, on_host, frame, particles.population)
        expected = INTEROP if device.startswith("cuda") else HOST
        assert on_device.upload_path == expected, on_device.interop_unavailable
        assert on_host.upload_path == HOST
        assert host_pixels.sum() > 0
        assert np.array_equal(device_pixels, host_pixels)
        # the vertex buffer holds exactly the frame's positions
        stored = np.frombuffer(on_device.current.read(), np.float32).reshape(-1, 3)
        assert np.array_equal(stored, frame.positions)
    finally:
        on_device.release()
        on_host.release()
        ctx.release()
    assert compute.registered_gl_buffers() == 0


@pytest.mark.usefixtures("egl")
def test_speed_colours_are_scaled_alike_from_the_device_and_the_host(device):
    """The interop path scales speed colours by the frames' samples, never downloading them
    whole; the host path by the same rows of its host copies: the same scale."""
    from orrery.app.render import ParticleScene
    from orrery.engine.frames import Frame

    ctx = _gl_context()
    state, particles = _state(device, n=20000)
    frames = []
    for step in range(2):
        frames.append(Frame(None, 0.1 * step, step, step + 1, snapshot=state.stage_positions()))
        state.kick(0.5)
        state.drift(0.1)
    on_device, on_host = ParticleScene(ctx), ParticleScene(ctx, interop=False)
    try:
        for frame in frames:
            while frame.snapshot.sample() is None:
                time.sleep(0.001)
            on_device.show(frame, particles.population)
        if device.startswith("cuda"):
            assert not any(frame.snapshot.ready() for frame in frames)  # never downloaded
        for frame in frames:
            on_host.show(frame, particles.population)
        assert on_host.speed_scale > 0
        assert on_device.speed_scale == on_host.speed_scale
    finally:
        on_device.release()
        on_host.release()
        ctx.release()


@pytest.mark.usefixtures("egl")
def test_deferred_splat_light_lands_with_the_pixels_of_an_immediate_one(device):
    from orrery.app.render import Camera, ParticleScene, PointStyle, Renderer
    from orrery.engine.frames import Frame

    ctx = _gl_context()
    state, particles = _state(device)
    frame = Frame(None, 0.0, 0, 1, snapshot=state.stage_positions())
    scene = ParticleScene(ctx, compute=None if device.startswith("cuda") else
                          compute.open_device(device))
    immediate, deferred = Renderer(ctx), Renderer(ctx)
    try:
        scene.show(frame, particles.population)
        camera = Camera()
        camera.fit(frame.positions)
        view_projection = camera.view_projection(96 / 64)
        for renderer in (immediate, deferred):
            renderer.resize(96, 64)
        immediate.accumulate(scene, view_projection, PointStyle())
        expected = immediate.read_accumulation().copy()
        assert immediate.particle_path.startswith("compute splat"), immediate.splat_unavailable
        deferred.accumulate(scene, view_projection, PointStyle(), deferred=True)

        held = landed(deferred, expected)
        assert expected.sum() > 0
        assert np.array_equal(held, expected)
        assert not deferred.land()  # nothing more to land
    finally:
        immediate.release()
        deferred.release()
        scene.release()
        ctx.release()


@pytest.mark.usefixtures("egl")
def test_closing_while_a_gpu_step_runs_ends_cleanly(device):
    from orrery.app.render import ParticleScene

    ctx = _gl_context()
    settings = RunSettings(scenario="plummer", n=4000, seed=1, solver="gpu-direct", dt=1e-3)
    runner = SimulationRunner(settings, solver_factory=lambda name, **options: make_solver(
        name, device=device, **options))
    scene = ParticleScene(ctx)
    try:
        shown = 0
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and shown < 5:
            shown += scene.show(runner.latest(), runner.population)
            time.sleep(0.01)
        assert shown >= 2 and runner.error is None
        if device.startswith("cuda"):
            assert compute.registered_gl_buffers() == 2
        runner.step(10**6)  # a long run of GPU steps in flight while the viewer closes
    finally:
        scene.release()
        assert runner.close(timeout=10)
        ctx.release()
    assert not runner.is_alive
    assert compute.registered_gl_buffers() == 0


def test_energy_summed_on_the_device_matches_the_host_sum(device):
    from orrery.engine.diagnostics import measure

    state, _ = _state(device, n=5000)
    state.kick(0.1)  # velocities that are not the initial ones
    kinetic, potential = state.energies()
    pos, vel, mass = state.snapshot()
    expected = measure(pos, vel, mass, state.potentials())
    assert kinetic == pytest.approx(expected.kinetic, rel=1e-9)
    assert potential == pytest.approx(expected.potential, rel=1e-9)
    assert state.energies() == (kinetic, potential)  # same state, same sums


def test_momenta_summed_on_the_device_match_the_host_sums_and_download_nothing(device, monkeypatch):
    """A Simulation's diagnostics (its initial ones at start too) from energy.cl's sums: at a
    billion bodies a download of the state would be tens of gigabytes of host memory."""
    from orrery.engine import Simulation
    from orrery.engine.diagnostics import measure

    particles = ics.plummer(5000, seed=4)
    particles.vel[:, 0] += 0.3  # a net momentum and angular momentum that are not round-off
    sim = Simulation(particles, make_solver("gpu-direct", device=device, softening=0.05), dt=1e-3)
    sim.step(2)
    state = sim._state
    pos, vel, mass = state.snapshot()
    expected = measure(pos, vel, mass, state.potentials())
    monkeypatch.setattr(type(state), "snapshot", lambda self: pytest.fail("the state was downloaded"))
    found = sim.diagnostics()
    assert found.kinetic == pytest.approx(expected.kinetic, rel=1e-9)
    assert found.potential == pytest.approx(expected.potential, rel=1e-9)
    assert found.momentum == pytest.approx(expected.momentum, rel=1e-9, abs=1e-12)
    assert found.angular_momentum == pytest.approx(expected.angular_momentum, rel=1e-9, abs=1e-12)
    assert abs(found.momentum[0] - 0.3) < 1e-6


@pytest.mark.parametrize("solver", ["gpu-tree", "gpu-fmm", "gpu-direct"])
def test_a_frame_carries_its_solvers_locality_order_a_permutation_of_the_bodies(device, solver):
    """The tree solvers' frames carry a device copy of the tree's Morton order, taken in queue
    order: the next step's sort does not change it. gpu-direct has none; a recorder's
    snapshot needs none."""
    particles = ics.plummer(3000, seed=3)
    state = make_solver(solver, device=device, softening=0.05).bind(particles)
    state.compute_accelerations()
    snapshot = state.stage_positions()
    if solver == "gpu-direct":
        assert snapshot.locality_order is None
        return
    ordered = snapshot.locality_order
    assert ordered is not None and ordered.context is state.solver.context
    assert ordered.device.shape == (particles.n,) and ordered.device.dtype == np.uint32
    assert ordered.sample() is None  # nothing of it moves to the host beside the step
    tree = state.solver.last_tree()
    expected = tree.order.download()[:particles.n].copy()
    order = ordered.host()
    assert np.array_equal(np.sort(order), np.arange(particles.n))
    assert np.array_equal(order, expected) and not np.array_equal(order, np.arange(particles.n))
    for _ in range(3):  # the bodies move, the tree is rebuilt, the frame's copy stays
        state.kick(0.5)
        state.drift(0.5)
        state.compute_accelerations()
    assert not np.array_equal(tree.order.download()[:particles.n], expected)  # rewritten
    assert np.array_equal(snapshot.locality_order.host(), expected)
    assert state.stage_positions(download=True).locality_order is None


def test_frames_between_replayed_steps_carry_the_last_steps_locality_order(device):
    """Steps replayed from a graph (CUDA, ADR 0171) rewrite the tree's order in place: a frame
    taken after them copies the last step's, and keeps it while later steps run."""
    from orrery.engine.simulation import Simulation

    sim = Simulation(ics.plummer(3000, seed=3),
                     make_solver("gpu-tree", device=device, softening=0.05), dt=0.05)
    sim.step(6)  # launched, captured, then replayed where the device has graphs
    snapshot = sim.stage_positions()
    order = snapshot.locality_order.host().copy()
    tree_order = sim.solver.last_tree().order
    assert np.array_equal(np.sort(order), np.arange(3000))
    assert np.array_equal(order, tree_order.download()[:3000])
    sim.step(3)
    assert np.array_equal(snapshot.locality_order.host(), order)
    assert np.array_equal(sim.stage_positions().locality_order.host(),
                          tree_order.download()[:3000])
