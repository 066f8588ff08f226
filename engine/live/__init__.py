"""The live path: a :class:`~orrery.engine.live.simulation.Simulation` advanced by a solver, the
solver thread that runs it and publishes its frames (``runner`` with its seams ``_runner_build``,
``_runner_commands``, ``_runner_meters`` and ``_runner_recording``), and ``resume``, which
continues a recorded run from a keyframe (it builds a solver and a simulation, so it sits here,
not in ``recording/``).

The public paths ``orrery.engine.runner``, ``orrery.engine.simulation`` and
``orrery.engine.resume``, which the app and the docs import, re-export these modules' names.
"""
