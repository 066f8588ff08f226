"""Initial conditions: where a run starts, in N-body units (G = 1), seeded and reproducible.

- ``ics``: equilibrium spheres and simple blobs by name (Plummer, Hernquist, a uniform cube, a
  Gaussian blob), ``ics.make(name, n)``;
- ``galaxy``: disk galaxies and galaxy collisions, built on ``galaxy_model`` (the model:
  densities, softened gravity, velocity moments), ``softened_gravity`` (the softened pull of
  rings and shells, so equilibria match the force the run applies) and ``orbits`` (Kepler
  orbits for encounters);
- ``scenarios``: initial conditions plus the run settings that suit them: the generators
  above, the presets of ``assets/scenarios/``, another code's snapshot, or a recording's
  keyframe.

``ics`` and ``scenarios`` are also ``orrery.engine.ics`` and ``orrery.engine.scenarios``
(``from orrery.engine import ics, scenarios``).
"""
