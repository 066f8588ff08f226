"""Benchmarks. Each module here is one ``orrery bench KIND``: it defines ``HELP``,
``add_arguments(parser)`` and ``run(args) -> list[dict]`` (rows, also printed as a table);
``BENCHMARKS`` lists them in the order ``orrery bench --help`` shows them."""

BENCHMARKS: tuple[str, ...] = ("ceilings", "direct", "tree", "render", "live", "playback", "report")
