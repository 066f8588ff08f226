"""Measuring and tuning: what the engine knows about its own solvers' speed and error on this
machine, and the rules that turn those measurements into choices.

- ``accuracy_table``: each approximate solver's error at each setting, on the shipped
  scenarios, and the rule that turns ``accuracy=`` into a setting (defaults in
  ``accuracy_defaults.json``, measured again by ``orrery calibrate --accuracy``);
- ``accuracy_check``: ``check_accuracy=K``, a run's own error measured while it runs, and the
  retune of its setting past the target;
- ``solver_timing``, ``crossovers``, ``calibration``: whole solvers timed over a range of
  particle counts, where each wins, and the cache of both that the ``auto`` solver reads
  (``orrery calibrate``);
- ``ceilings``: what a compute device achieves at best, so kernel figures are fractions of
  limits measured on the same device;
- ``timing``: the timing protocol all of these and the benchmarks use.

The error measures themselves are :mod:`orrery.engine.accuracy`; the benchmarks
(``orrery.bench``) report these measurements, they do not define them.
"""
