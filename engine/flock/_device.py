"""Boids on a compute device (``flock.cl`` through the compute layer): positions and velocities
stay in device memory between steps, and the host sees positions only when it asks.

The scattered search sorts the cell keys with the compute layer's key sort
(``Context.key_sort()``, the one the tree solvers use). The coherent search leaves the state in
its cell order (slot k holds boid ``ids[k]``, ADR 0096) and places it by counting instead of
sorting (ADR 0158): its rule kernel writes each boid's row where it read it, with the boid's
next cell and rank among that cell's boids (an atomic count per cell); a prefix sum of the
counts (the compute layer's scan) is the cell table, and one pass moves every row to its
cell's start plus its rank. Most boids keep their cell from one step to the next, so both
passes stream memory nearly in order. Reading the state puts it back in boid order on the
device (``flock_unsort``) before the download."""

from __future__ import annotations

import numpy as np

from ..compute import Context, DeviceScan, InFlight, KernelEvent, open_device
from ..errors import InvalidInputError, SolverUnavailableError

# Work-group size of every flock kernel unless the caller picks one (the benchmark sweeps it).
DEFAULT_GROUP = 128
# Rule-kernel work-items per multiprocessor that CUDA caps registers for (LAUNCH_BOUNDS).
RESIDENT_THREADS = 1024
# Local memory a rule kernel's work-item takes: its TOTALS (flock.cl) float64 sums.
LOCAL_BYTES_PER_ITEM = 9 * 8

# Index of each constant in the kernel's double array (flock.cl C_*).
CONSTANT_NAMES = ("world", "half_world", "separation_radius2", "alignment_radius2",
                  "cohesion_radius2", "separation_weight", "alignment_weight", "cohesion_weight",
                  "max_speed", "dt", "quantum", "velocity_quantum", "grid", "inverse_cell_width")


def _rows(columns: np.ndarray) -> np.ndarray:
    rows = np.zeros((len(columns), 4), np.float32)
    rows[:, :3] = columns
    return rows


def _round_up(value: int, multiple: int) -> int:
    return max(1, -(-value // multiple)) * multiple


class DeviceFlock:
    """Float32 boid state on ``device`` (a device string or an open :class:`Context`)."""

    def __init__(self, pos: np.ndarray, vel: np.ndarray, *, device=None, group: int = DEFAULT_GROUP):
        self.context: Context = device if isinstance(device, Context) else open_device(device)
        if not self.context.info.fp64:
            raise SolverUnavailableError(f"{self.context.info.spec} has no float64 arithmetic, "
                                         "which the flock kernels sum in")
        self.group = int(group)
        info = self.context.info
        # The rule kernels vote per sub-group (flock.cl), so groups are whole sub-groups, and
        # they keep TOTALS float64 sums per work-item in local memory.
        largest = min(info.max_work_group_size, info.local_memory_bytes // LOCAL_BYTES_PER_ITEM)
        largest -= largest % info.subgroup_size
        if not (1 <= self.group <= largest and self.group % info.subgroup_size == 0):
            raise InvalidInputError(f"work-group size must be a multiple of {info.subgroup_size} "
                                    f"(the sub-group) up to {largest}, got {group}")
        n = self._n = len(pos)
        context = self.context
        # [state, spare]: the coherent search gathers the state into the spare and steps it
        # back; the others step the state into the spare and swap.
        self._pos = [context.upload(_rows(pos)), context.empty((n, 4), np.float32)]
        self._vel = [context.upload(_rows(vel)), context.empty((n, 4), np.float32)]
        self._ids = [context.upload(np.arange(n, dtype=np.uint32)), context.empty(n, np.uint32)]
        self._in_boid_order = True  # ids[0] is 0 .. n-1
        self._unsort = None  # flock_unsort, once a coherent step has left the state sorted
        # The grid keys[0], order[0] (ranks) and counts hold the state's cell keys, ranks and
        # cell counts for, if any (a coherent rule kernel wrote them).
        self._ranked_for = None
        # Cell keys fit 30 bits (grids of at most 1024 cells a side): 32-bit keys, sorted over
        # their significant bits only (scattered search); order[0] holds the sort's order
        # values 0 .. n-1 or, on the coherent search, the ranks.
        self._keys = [context.empty(n, np.uint32), context.empty(n, np.uint32)]
        self._order = [context.empty(n, np.uint32), context.empty(n, np.uint32)]
        self._sort = context.key_sort()
        self._scan = DeviceScan(context)
        self._start = None
        self._counts = None
        self._constants = None
        self._constants_host = None
        self._events: dict[str, list[KernelEvent]] = {}
        self._in_flight = InFlight()
        # the last step's search, cell count and whether it ran flock_cell_keys
        self._last: tuple[str, int, bool] | None = None
        self._programs: dict = {}

    @property
    def n(self) -> int:
        return self._n

    @property
    def device(self) -> str:
        return f"{self.context.info.spec} ({self.context.info.name})"

    def _program(self, cell_width: int):
        # Kept per cell width: assembling and hashing the text costs more than a small step.
        if cell_width not in self._programs:
            self._programs[cell_width] = self.context.build(["flock.cl"], package=__package__, defines={
                "REAL_BITS": 64, "FLOCK_CELL_WIDTH": int(cell_width), "FLOCK_GROUP": self.group,
                "FLOCK_RESIDENT_GROUPS": max(1, RESIDENT_THREADS // self.group)})
        return self._programs[cell_width]

    @staticmethod
    def _grid_of(constants: dict) -> tuple:
        """What a boid's cell key depends on besides its position."""
        return constants["grid"], constants["inverse_cell_width"]

    def _upload_constants(self, constants: dict) -> None:
        host = np.array([float(constants[name]) for name in CONSTANT_NAMES], np.float64)
        if self._constants_host is None or not np.array_equal(host, self._constants_host):
            self._constants = self.context.upload(host)
            self._constants_host = host
        cells = int(constants["grid"]) ** 3
        if self._start is None or self._start.size != cells + 1:
            self._start = self.context.empty(cells + 1, np.uint32)
            self._counts = self.context.empty(cells, np.uint32)

    def step(self, constants: dict, search: str, cell_width: int) -> None:
        self._in_flight.admit()  # no step waits for the device: keep the host a step ahead
        self._upload_constants(constants)
        program = self._program(cell_width)
        n, group, c = self._n, self.group, self._constants
        width = _round_up(n, group)
        pos, vel = self._pos[0], self._vel[0]
        pos_out, vel_out = self._pos[1], self._vel[1]
        events: dict[str, list[KernelEvent]] = {"grid": [], "sort": [], "gather": [], "rules": []}
        cells = self._start.size - 1
        grid = self._grid_of(constants)
        keyed = search != "naive"
        if search == "naive":
            events["rules"].append(program.kernel("flock_naive").launch(
                width, group, pos, vel, np.int32(n), c, pos_out, vel_out))
        elif search == "scattered-grid":
            keys, order = self._keys[0], self._order[0]
            events["grid"].append(program.kernel("flock_cell_keys").launch(
                width, group, pos, np.int32(n), c, keys, order))
            sort_events, (keys, order) = self._sort.sort(
                keys, order, self._keys[1], self._order[1], n,
                key_bits=max(1, (cells - 1).bit_length()))
            events["sort"] += sort_events
            events["grid"].append(program.kernel("flock_cell_starts").launch(
                _round_up(n + 1, group), group, keys, np.int32(n), np.int32(cells), self._start))
            events["rules"].append(program.kernel("flock_scattered").launch(
                width, group, pos, vel, order, self._start, np.int32(n), c, pos_out, vel_out))
        else:
            keys, ranks, counts = self._keys[0], self._order[0], self._counts
            keyed = self._ranked_for != grid
            if keyed:
                events["grid"].append(program.kernel("flock_clear").launch(
                    _round_up(cells, group), group, counts, np.int32(cells)))
                events["grid"].append(program.kernel("flock_cell_ranks").launch(
                    width, group, pos, np.int32(n), c, keys, ranks, counts))
            events["sort"] += self._scan.scan(counts, cells, self._start)
            events["gather"].append(program.kernel("flock_place").launch(
                width, group, keys, ranks, self._start, pos, vel, self._ids[0], np.int32(n),
                np.int32(cells), counts, pos_out, vel_out, self._ids[1]))
            events["rules"].append(program.kernel("flock_coherent").launch(
                width, group, pos_out, vel_out, self._start, np.int32(n), c, pos, vel, keys,
                ranks, counts))
            self._ids.reverse()
            self._in_boid_order = False
            self._unsort = program.kernel("flock_unsort")
        # The coherent rule kernel wrote the next keys, ranks and counts; the other searches
        # leave none (the sort overwrites keys[0] and order[0], and the state moved).
        self._ranked_for = grid if search == "coherent-grid" else None
        if search != "coherent-grid":
            self._pos.reverse()
            self._vel.reverse()
        self._events = events
        self._in_flight.add(events["rules"][-1])  # the step's last kernel
        self._last = (search, cells, keyed)

    @property
    def timing(self) -> dict:
        """Device seconds of the last step's phases: grid (keys, the ordering and, on the
        scattered search, the cell table), sort (the ordering: the key sort on the scattered
        search, the scan of the cell counts, which is the cell table, on the coherent one),
        gather (the coherent search's placement), rules. Waits for the step to finish."""
        seconds = {name: sum(event.seconds() for event in events)
                   for name, events in self._events.items()}
        seconds["grid"] += seconds["sort"]
        return seconds

    @property
    def traffic(self) -> dict:
        """Bytes each phase of the last step reads and writes in device memory at least (the
        model benchmarks divide by the phase's time): every array a kernel streams once, its
        own boid's rows included; neighbour reads, which the caches serve, are not counted.
        Rows are float4 (16 bytes), keys and order entries 4, the cell table 4 per cell."""
        if self._last is None:
            return {}
        search, cells, keyed = self._last
        n, table = self._n, 4 * (cells + 1)
        if search == "naive":
            return {"grid": 0, "sort": 0, "gather": 0, "rules": n * (32 + 32)}
        if search == "scattered-grid":
            # keys: a position in, a key and an order entry out; the sort's model; the cell
            # table from the sorted keys; rules: the boid's row pair and its sorted order entry
            # in, the cell table, rows out
            keys = n * (16 + 4 + 4)
            sort = self._sort.traffic(n, np.uint32, max(1, (cells - 1).bit_length()))
            return {"grid": keys + n * 4 + table + sort, "sort": sort, "gather": 0,
                    "rules": n * (32 + 4 + 32) + table}
        # keys (a run's first step): counts cleared, a position in, a key and a rank out, a
        # count incremented; the scan reads the counts twice and writes the table; placing: a
        # key, a rank and the table in, a row pair and an id moved, the counts cleared; rules:
        # the placed row pair and the table in, rows out in the same slots, the next key and
        # rank out, a count incremented
        counts = 4 * cells
        keys = (counts + n * (16 + 4 + 4) + 2 * counts) if keyed else 0
        scan = 2 * counts + table
        return {"grid": keys + scan, "sort": scan,
                "gather": n * (4 + 4 + 2 * (32 + 4)) + table + counts,
                "rules": n * (32 + 32 + 4 + 4) + table + 2 * counts}

    def synchronize(self) -> None:
        self.context.synchronize()

    def _boid_order(self, rows: list) -> np.ndarray:
        """The (n, 3) state ``rows[0]`` in boid order, put there in ``rows[1]`` (the spare)
        when the state is in cell order."""
        if self._in_boid_order:
            return np.ascontiguousarray(rows[0].download()[:, :3])
        self._unsort.launch(_round_up(self._n, self.group), self.group, rows[0], self._ids[0],
                            np.int32(self._n), rows[1])
        return np.ascontiguousarray(rows[1].download()[:, :3])

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        return self._boid_order(self._pos), self._boid_order(self._vel)

    def positions(self) -> np.ndarray:
        return self._boid_order(self._pos)

    def describe(self) -> str:
        return f"{self.device}, work-group {self.group}"
