"""Initial conditions drawn on the device (``initial_conditions/on_device.py``, ``plummer.cl``,
``galaxy.cl``): the host generator's distribution from a counter-based stream, in the
centre-of-mass frame, the same bodies for a seed, nothing built on the host, the galaxy tables
fine enough, and ``orrery run --draw-on-device``."""

import numpy as np
import pytest
from scipy.stats import ks_2samp

from orrery.app.cli import main
from orrery.engine import InvalidInputError, Simulation, ics, make_solver
from orrery.engine.initial_conditions import galaxy, on_device

from .conftest import needs_float64


def _drawn(device, n, *, seed=0, precision="f32", solver="gpu-direct"):
    state = make_solver(solver, precision=precision, softening=0.01, device=device).bind_drawn(
        "plummer", n, seed=seed)
    return state, state.snapshot()


def test_drawn_plummer_spheres_have_the_host_generators_radii_and_speeds(device):
    """Two-sample Kolmogorov-Smirnov against ics.plummer's bodies (another stream): the radii
    and speeds are drawn from the same distributions (a wrong scale, cutoff or speed law moves
    the statistic far past these p-values at 20,000 bodies)."""
    _, (pos, vel, mass) = _drawn(device, 20_000, seed=5)
    host = ics.plummer(20_000, seed=5)
    for drawn, hosted in ((pos, host.pos), (vel, host.vel)):
        assert ks_2samp(np.linalg.norm(drawn, axis=1), np.linalg.norm(hosted, axis=1)).pvalue > 1e-3
    assert np.all(mass == np.float32(1 / 20_000))


def test_drawn_bodies_are_in_their_centre_of_mass_frame_and_in_virial_equilibrium(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.0, device=device)
    sim = Simulation.drawn_on_device("plummer", 4096, solver, seed=2, dt=1e-3)
    particles = sim.particles
    pos, vel = particles.pos, particles.vel
    assert np.abs(pos.astype(np.float64).mean(axis=0)).max() < 1e-6
    assert np.abs(vel.astype(np.float64).mean(axis=0)).max() < 1e-6
    energy = sim.diagnostics()
    # Hénon units: kinetic 1/4, potential -1/2 (the mass cutoff and 4096 bodies move them by a
    # few per cent); 2K/|W| is 1 in equilibrium.
    assert abs(2 * energy.kinetic / abs(energy.potential) - 1) < 0.05
    assert abs(energy.kinetic - 0.25) < 0.02


def test_a_seed_draws_the_same_bodies_and_the_padding_stays_empty(device):
    state, (pos, vel, _) = _drawn(device, 1000, seed=7)
    _, (again, again_vel, _) = _drawn(device, 1000, seed=7)
    _, (other, _, _) = _drawn(device, 1000, seed=8)
    assert np.array_equal(pos.view(np.uint32), again.view(np.uint32))
    assert np.array_equal(vel.view(np.uint32), again_vel.view(np.uint32))
    assert not np.any(pos == other)
    rows = state.body.download()
    assert state.padded > 1000 and not rows[1000:].any()


def test_float64_states_are_drawn_in_float64(device):
    solver = make_solver("gpu-direct", precision="f64", softening=0.01, device=device)
    needs_float64(device, solver.context.info)
    pos, vel, mass = solver.bind_drawn("plummer", 2000, seed=1).snapshot()
    assert pos.dtype == np.float64 and abs(mass.sum() - 1) < 1e-12
    # float64 radii, not float32 ones widened: the low bits are used
    assert np.any(pos.astype(np.float32).astype(np.float64) != pos)


def test_drawing_builds_nothing_of_the_particles_on_the_host(device, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("drawn on the host")
    monkeypatch.setattr(ics, "plummer", refuse)
    monkeypatch.setattr(np.random, "default_rng", refuse)
    state, (pos, _, _) = _drawn(device, 500, solver="gpu-fmm")
    state.compute_accelerations()
    assert np.isfinite(state.accelerations()).all() and pos.shape == (500, 3)


def test_what_cannot_be_drawn_on_a_device_is_refused(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.01, device=device)
    with pytest.raises(InvalidInputError, match="drawn on the host only"):
        solver.bind_drawn("hernquist", 100)
    with pytest.raises(InvalidInputError, match="seed"):
        solver.bind_drawn("plummer", 100, seed=-1)
    with pytest.raises(InvalidInputError, match="reversible"):
        Simulation.drawn_on_device("plummer", 100, solver, dt=1e-3, integrator="reversible")
    with pytest.raises(InvalidInputError, match="GPU solver"):
        Simulation.drawn_on_device("plummer", 100, make_solver("cpu-direct"), dt=1e-3)
    with pytest.raises(InvalidInputError, match="unexpected keyword argument 'scale'"):
        solver.bind_drawn("plummer", 100, parameters={"scale": 2.0})
    with pytest.raises(InvalidInputError, match="seed: drawn on a device, the count and seed are"):
        solver.bind_drawn("galaxy_collision", 100, parameters={"seed": 3})
    with pytest.raises(InvalidInputError, match="separation"):
        solver.bind_drawn("galaxy_collision", 100, parameters={"pericentre": 5.0, "separation": 4.0})
    with pytest.raises(InvalidInputError, match="integer >= 6"):
        solver.bind_drawn("galaxy_collision", 5)
    assert set(on_device.DEVICE_GENERATORS) == {"plummer", "galaxy_collision"}


def test_orrery_run_draws_on_the_device_and_records_that_it_did(device, tmp_path, capsys):
    from orrery.engine.recording import RecordingFile

    path = tmp_path / "drawn.h5"
    assert main(["run", "--ic", "plummer", "--draw-on-device", "--solver", "gpu-direct", "--device", device,
                 "--n", "300", "--steps", "2", "--seed", "4", "--quiet", "--record", str(path)]) == 0
    with RecordingFile(path) as recording:
        assert recording.attributes["drawn_on_device"] is True and recording.n == 300
        first = recording.read(0)
    _, (pos, _, _) = _drawn(device, 300, seed=4)
    assert np.array_equal(first, pos)
    assert main(["run", "--draw-on-device", "--scenario", "disk-galaxy", "--quiet"]) == 2
    assert "'disk-galaxy' is built by orrery.engine.initial_conditions.galaxy.disk_galaxy, on the " \
           "host only" in capsys.readouterr().err


# A collision of unequal galaxies (galaxy B's model is rescaled), odd component counts (one
# unpaired body each) and the preset's softening.
COLLISION = {"mass_ratio": 0.5, "softening": 0.05, "inclination_b": 120.0}


def _collision(device, n, *, seed=0, precision="f32"):
    solver = make_solver("gpu-direct", precision=precision, softening=0.05, device=device)
    if precision == "f64":
        needs_float64(device, solver.context.info)
    return Simulation.drawn_on_device("galaxy_collision", n, solver, seed=seed, dt=0.05,
                                      parameters=COLLISION).particles


def _drawn_halves(particles):
    """Per population: (radii from its galaxy's centre, speeds about its galaxy's mean velocity)
    of the bodies drawn from their own streams, the first (count + 1) // 2 of its rows (the
    rest are their mirror images, whose radii and speeds repeat them: a KS p-value assumes
    independent values)."""
    pos, vel = particles.pos.astype(np.float64), particles.vel.astype(np.float64)
    mass = particles.mass.astype(np.float64)
    result = {}
    for label in ("A", "B"):
        members = np.array([name.startswith(label) for name in particles.population_names])[
            particles.population]
        weights = mass[members] / mass[members].sum()
        centre, drift = weights @ pos[members], weights @ vel[members]
        for index, name in enumerate(particles.population_names):
            if name.startswith(label):
                rows = np.flatnonzero(particles.population == index)
                rows = rows[:(len(rows) + 1) // 2]
                result[name] = (np.linalg.norm(pos[rows] - centre, axis=1),
                                np.linalg.norm(vel[rows] - drift, axis=1))
    return result


def test_drawn_collisions_have_the_host_generators_populations_masses_radii_and_speeds(device):
    """Against galaxy.galaxy_collision with the same parameters (another stream): population
    names and counts and every body's mass exactly, and per population two-sample KS on the
    radii from its galaxy's centre and on the speeds (a wrong table, scale, cap or mirror moves
    the statistic far past these p-values at these sizes)."""
    n = 30_001
    drawn = _collision(device, n, seed=5)
    host = galaxy.galaxy_collision(n, seed=5, precision="f32", **COLLISION)
    assert drawn.population_names == host.population_names
    assert np.array_equal(drawn.population, host.population)
    assert np.array_equal(drawn.mass, host.mass)
    assert drawn.mass.sum(dtype=np.float64) == pytest.approx(1.5, rel=1e-6)
    for name, ((radii, speeds), (host_radii, host_speeds)) in zip(
            drawn.population_names, zip(_drawn_halves(drawn).values(), _drawn_halves(host).values())):
        assert ks_2samp(radii, host_radii).pvalue > 1e-3, name
        assert ks_2samp(speeds, host_speeds).pvalue > 1e-3, name


def test_drawn_collisions_are_in_their_centre_of_mass_frame_with_each_component_on_its_orbit(device):
    """Each component's mean where the host puts it (its galaxy's place on the parabolic orbit,
    in the collision's centre-of-mass frame), its bodies in mirrored pairs about one point, the
    spheroids' speeds about it under the cap, and the whole at rest on the origin."""
    drawn = _collision(device, 4001, seed=2, precision="f64")
    host = galaxy.galaxy_collision(4001, seed=2, **COLLISION)
    model_a = galaxy.GalaxyModel(softening=COLLISION["softening"])  # galaxy A is unscaled
    for index, name in enumerate(host.population_names):
        centres = []
        for values, host_values in ((drawn.pos, host.pos), (drawn.vel, host.vel)):
            rows = values[drawn.population == index]
            mean = rows.mean(axis=0)
            assert np.abs(mean - host_values[host.population == index].mean(axis=0)).max() < 1e-9
            paired = len(rows) // 2
            pair_sums = rows[:paired] + rows[len(rows) - paired:]
            assert np.abs(pair_sums - pair_sums[0]).max() < 1e-12 * np.abs(rows).max()
            centres.append(np.linalg.norm(rows - 0.5 * pair_sums[0], axis=1))
        if name in ("A bulge", "A halo"):
            radii, speeds = centres
            cap = galaxy.ESCAPE_CAP * np.sqrt(-2.0 * model_a.potential(radii))
            assert np.all(speeds <= cap * (1 + 1e-4))
    assert np.abs(drawn.mass @ drawn.pos).max() < 1e-12
    assert np.abs(drawn.mass @ drawn.vel).max() < 1e-12


def test_a_seed_draws_the_same_collision(device):
    first, again, other = (_collision(device, 3000, seed=seed) for seed in (7, 7, 8))
    for name in ("pos", "vel", "mass"):
        assert np.array_equal(getattr(first, name).view(np.uint32), getattr(again, name).view(np.uint32))
    assert not np.any(first.pos == other.pos)


def test_drawing_a_collision_builds_nothing_of_it_on_the_host(device, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("drawn on the host")
    for sampler in ("disk_galaxy", "_sample_disk", "_sample_spheroid"):
        monkeypatch.setattr(galaxy, sampler, refuse)
    monkeypatch.setattr(np.random, "default_rng", refuse)
    particles = _collision(device, 600)
    assert np.isfinite(particles.pos).all() and np.isfinite(particles.vel).all()


def test_the_galaxy_tables_interpolate_the_model_well_under_the_sampling_noise():
    """Each quantity a drawn body gets from a table (radius; a disk's velocity components; a
    spheroid's cap and its Gaussian speed before the cap), drawn from the same random numbers
    through the interpolated table and through the model's own methods: the two distributions
    lie a KS distance apart under 1e-4, a tenth of the sampling noise of 10^6 bodies (a table of
    1024 entries misses by 3e-4)."""
    model = galaxy.GalaxyModel(softening=0.05)
    rng = np.random.default_rng(0)
    w = np.sqrt(rng.uniform(0.0, 1.0, 200_000))
    normals = rng.normal(size=(3, len(w)))
    grid = np.linspace(0.0, 1.0, on_device.TABLE_SIZE)

    def quantities(rows, disk):
        if disk:
            radius, sigma_r_squared, epicyclic, mean_rotation, sigma_z_squared = rows
            return (radius, normals[0] * np.sqrt(sigma_r_squared),
                    mean_rotation + normals[1] * np.sqrt(sigma_r_squared * epicyclic),
                    normals[2] * np.sqrt(sigma_z_squared))
        radius, cap, width = rows
        return radius, cap, width * np.linalg.norm(normals, axis=0)

    for disk, table in (
            (True, lambda x: galaxy.disk_table(model, x)),
            (False, lambda x: galaxy.spheroid_table(model, x, model.bulge_mass, model.bulge_scale)),
            (False, lambda x: galaxy.spheroid_table(model, x, model.halo_mass, model.halo_scale))):
        interpolated = np.array([np.interp(w, grid, row) for row in table(grid)])
        for exact, through_table in zip(quantities(table(w), disk), quantities(interpolated, disk)):
            assert ks_2samp(exact, through_table).statistic < 1e-4


def test_orrery_run_draws_the_galaxy_collision_preset_on_the_device(device, tmp_path):
    from orrery.engine.recording import RecordingFile

    path = tmp_path / "collision.h5"
    assert main(["run", "--scenario", "galaxy-collision", "--draw-on-device", "--solver", "gpu-fmm",
                 "--device", device, "--n", "1200", "--steps", "2", "--seed", "4", "--quiet",
                 "--record", str(path)]) == 0
    with RecordingFile(path) as recording:
        attributes = recording.attributes
        assert attributes["drawn_on_device"] is True and attributes["scenario"] == "galaxy-collision"
        # The preset's softening and dt, as the host path applies them.
        assert attributes["softening"] == 0.05 and attributes["dt"] == 0.05
        assert recording.population_names == ("A disk", "A bulge", "A halo", "B disk", "B bulge",
                                              "B halo")
        first = recording.read(0)
    solver = make_solver("gpu-fmm", softening=0.05, device=device)
    preset = {"pericentre": 3.0, "separation": 16.0, "mass_ratio": 1.0, "inclination_a": 0.0,
              "node_a": 0.0, "inclination_b": 60.0, "node_b": 30.0, "softening": 0.05}
    expected = Simulation.drawn_on_device("galaxy_collision", 1200, solver, seed=4, dt=0.05,
                                          parameters=preset)
    assert np.array_equal(first, expected.positions())
