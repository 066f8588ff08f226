"""Type stub of ``orrery._native``, the C++ core (pybind11; sources in ``native/``).

Installed next to the extension so editors and type checkers see its API. Precision is in the
name: ``_f32``/``_f64`` for functions, ``TreeF32``/``TreeF64`` for the classes. ``threads=0``
means every hardware thread; ``simd=""`` means ``ORRERY_SIMD``, else the widest level this CPU
has. Keep in step with the ``m.def`` calls of ``native/*.cpp``
(``tests/engine/test_native_stub.py`` checks the names).
"""

from typing import Any

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# Most particles sharing one cpu-tree walk (native/tree_walk.hpp, kDefaultGroupCapacity).
TREE_GROUP_CAPACITY: int


def build_info() -> dict[str, Any]:
    """How this module was built: compiler, build_type, flags, simd_compiled, simd_flags,
    simd_cpu, simd_env, threads."""


def hardware_threads() -> int:
    """Threads the machine offers (the default thread count)."""


def simd_levels() -> list[str]:
    """The SIMD levels this CPU can run, lowest first."""


def simd_level(simd: str = "") -> dict[str, Any]:
    """The level a call with this ``simd`` would use (level, block_f32, block_f64, rsqrt_f32,
    rsqrt_f64). ValueError for an unknown name, RuntimeError for a level this CPU lacks."""


def direct_accelerations_f32(pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float,
                             threads: int = 0, potential: bool = False, simd: str = "",
                             first: int = 0, count: int = -1) -> tuple[F32, F32 | None]:
    """Softened accelerations and, with ``potential``, potentials by direct summation (G = 1)
    of the targets ``first .. first + count - 1`` (``count=-1``: to the end) from every source;
    each target's bits are those of a call over all."""


def direct_accelerations_f64(pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float,
                             threads: int = 0, potential: bool = False, simd: str = "",
                             first: int = 0, count: int = -1) -> tuple[F64, F64 | None]:
    """As :func:`direct_accelerations_f32`, in float64."""


def direct_vjp_f64(pos: npt.ArrayLike, mass: npt.ArrayLike, acc_bar: npt.ArrayLike,
                   pot_bar: npt.ArrayLike | None, softening: float, threads: int = 0,
                   simd: str = "", forces: bool = False) -> tuple[F64, F64, F64 | None]:
    """The VJP of the softened direct sum in float64: (pos_bar (n, 3), mass_bar (n,), acc) from
    the cotangents of the accelerations (n, 3) and potentials (n,) or None; with forces=True acc
    is the accelerations (n, 3), the same bits as :func:`direct_accelerations_f64` at the same
    level, else None. The same bits for any thread count."""


def reference_accelerations(pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float,
                            threads: int = 0, potential: bool = False) -> tuple[F64, F64 | None]:
    """Double-precision compensated direct summation: (acc (n, 3), potential (n,) or None)."""


def narrow_to_half(source: F32, out: npt.NDArray[np.float16], simd: str = "") -> None:
    """float32 ``source`` into float16 ``out`` (same size, C-contiguous), round to nearest even:
    numpy's ``astype(float16)`` bits, with F16C/AVX-512 where present; releases the GIL."""


def kernel_inverse_sqrt_f32(x: npt.ArrayLike, simd: str = "") -> F32:
    """1/sqrt(x) exactly as the float32 direct kernel's potential gets it."""


def kernel_inverse_sqrt_f64(x: npt.ArrayLike, simd: str = "") -> F64:
    """1/sqrt(x) exactly as the float64 direct kernel's potential gets it."""


def kernel_inverse_cube_f32(x: npt.ArrayLike, simd: str = "") -> F32:
    """x^(-3/2) exactly as the float32 direct kernel's accelerations get it (unit mass)."""


def kernel_inverse_cube_f64(x: npt.ArrayLike, simd: str = "") -> F64:
    """x^(-3/2) exactly as the float64 direct kernel's accelerations get it (unit mass)."""


def probe_operations(probe: str, precision: str, rounds: int, threads: int = 0,
                     simd: str = "") -> float:
    """Run a throughput probe ('fma': flop, 'sqrt_div': sqrt+divide pairs, 'rsqrt_estimate':
    approximate 1/sqrt) on every thread; returns the operations performed."""


def probe_read_bytes(buffer: npt.ArrayLike, threads: int = 0, simd: str = "") -> float:
    """Read a float64 buffer once across the threads; returns the bytes read."""


def build_tree_f32(pos: npt.ArrayLike, mass: npt.ArrayLike, leaf_capacity: int = 16,
                   quadrupole: bool = False, theta: float = 0.5,
                   threads: int = 0) -> dict[str, Any]:
    """Host octree build: order, keys, nodes (ADR-0010 layout), leaves, cell_level,
    quadrupoles ((nodes, 6) or None), cube_min, cube_side, depth."""


def build_tree_f64(pos: npt.ArrayLike, mass: npt.ArrayLike, leaf_capacity: int = 16,
                   quadrupole: bool = False, theta: float = 0.5,
                   threads: int = 0) -> dict[str, Any]:
    """As :func:`build_tree_f32`, in float64."""


class TreeF32:
    """Barnes-Hut tree solver state (buffers reused across evaluations), float32."""

    def __init__(self) -> None: ...

    def evaluate(self, pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float, theta: float,
                 quadrupole: bool, leaf_capacity: int, group_capacity: int = 256,
                 threads: int = 0, potential: bool = False,
                 simd: str = "") -> tuple[F32, F32 | None]:
        """Accelerations (n, 3) and potentials (n,) or None, in the caller's order."""

    @property
    def stats(self) -> dict[str, Any]:
        """Last evaluation: stage seconds, interaction counts, node/leaf counts, depth."""


class TreeF64:
    """As :class:`TreeF32`, float64."""

    def __init__(self) -> None: ...

    def evaluate(self, pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float, theta: float,
                 quadrupole: bool, leaf_capacity: int, group_capacity: int = 256,
                 threads: int = 0, potential: bool = False,
                 simd: str = "") -> tuple[F64, F64 | None]:
        """Accelerations (n, 3) and potentials (n,) or None, in the caller's order."""

    @property
    def stats(self) -> dict[str, Any]:
        """Last evaluation: stage seconds, interaction counts, node/leaf counts, depth."""


FMM_MAX_ORDER: int
"""Highest expansion order the FMM tables are built for."""


class FmmF32:
    """Fast multipole solver state (buffers reused across evaluations), float32."""

    def __init__(self) -> None: ...

    def evaluate(self, pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float, theta: float,
                 order: int, leaf_capacity: int, threads: int = 0, potential: bool = False,
                 simd: str = "", expansions: str = "f64",
                 heavy_share: float = 0.0) -> tuple[F32, F32 | None]:
        """Accelerations (n, 3) and potentials (n,) or None, in the caller's order; ``expansions``
        "f32" runs M2L in float lanes (the other expansion stages stay in double)."""

    @property
    def stats(self) -> dict[str, Any]:
        """Last evaluation: stage seconds, interaction counts, node/leaf counts."""

    @property
    def lists(self) -> dict[str, np.ndarray]:
        """Last evaluation's interaction lists, depth order and centres, as arrays."""


class FmmF64:
    """As :class:`FmmF32`, float64."""

    def __init__(self) -> None: ...

    def evaluate(self, pos: npt.ArrayLike, mass: npt.ArrayLike, softening: float, theta: float,
                 order: int, leaf_capacity: int, threads: int = 0, potential: bool = False,
                 simd: str = "", expansions: str = "f64",
                 heavy_share: float = 0.0) -> tuple[F64, F64 | None]:
        """Accelerations (n, 3) and potentials (n,) or None, in the caller's order."""

    @property
    def stats(self) -> dict[str, Any]: ...

    @property
    def lists(self) -> dict[str, np.ndarray]: ...


def fmm_tables(order: int) -> dict[str, np.ndarray]:
    """The FMM index tables of one expansion order (fmm_expansions.hpp), as arrays."""


def fmm_lists(skip: npt.ArrayLike, leaf_box: npt.ArrayLike, cube_min: npt.ArrayLike,
              cube_side: float, theta: float, count: npt.ArrayLike, order: int,
              heavy_share: float = 0.0, threads: int = 0) -> dict[str, np.ndarray]:
    """The FMM dual walk's interaction lists of a depth-first node array, as arrays: count holds
    each node's bodies (the root's: all), order the expansion order the heavy angles follow."""


def fmm_opening(theta: float, order: int, heavy_share: float, bodies: int) -> dict[str, Any]:
    """The walk's squared angles (fmm_lists.hpp's FmmOpening): theta2, heavy (0: no node is
    heavy) and heavy_theta2, so that a device walk decides with the host's values."""


def flock_step(pos: npt.ArrayLike, vel: npt.ArrayLike, pos_out: F32, vel_out: F32,
               constants: dict[str, Any], search: str, cell_width: int, threads: int = 0,
               simd: str = "") -> dict[str, float]:
    """One boids step (native/flock.cpp) from float32 (n, 3) positions and velocities into
    ``pos_out``/``vel_out``, with ``constants`` from ``FlockParameters.constants()`` and search
    naive, scattered-grid or coherent-grid; returns the seconds of grid, sort, gather, rules."""


def splat_points(position: F32, previous: F32, population: npt.NDArray[np.uint8], palette: F32,
                 colour_mode: int, speed_scale: float, point_size: float, intensity: float,
                 view_projection: F32, fixed_one: float, fixed_cap: float, light: F32,
                 threads: int = 0, simd: str = "") -> None:
    """Gaussian point sprites added into ``light`` ((height, width, 4) float32, bottom row
    first, overwritten) with 64-bit fixed-point sums as kernels/splat.cl does (native/splat.cpp):
    colour_mode 0 population, 1 speed, 2 heading; the same bits for any thread count and level."""

TONE_TABLE_SHIFT: int

def tone_map_rgbx(light: F32, table: npt.NDArray[np.uint8], picture: npt.NDArray[np.uint8],
                  flip: bool) -> None:
    """``light`` ((height, width, 4) float32) tone mapped through ``table`` (one uint8 per
    float32 bits >> TONE_TABLE_SHIFT) into ``picture``, (height, width, 4) uint8 RGBX with the
    fourth byte 255, its rows in the light's order or, with ``flip``, reversed
    (native/tone_map.cpp). Releases the GIL."""

def tone_map_yuv420(light: F32, table: npt.NDArray[np.uint8], frame: npt.NDArray[np.uint8]) -> None:
    """``light`` ((height, width, 4) float32, bottom row first, even sides) tone mapped through
    ``table`` (one uint8 per float32 bits >> TONE_TABLE_SHIFT) into ``frame``, a (height * 3 / 2,
    width) yuv420p frame, top row first, BT.709 limited range, chroma sited as yuv420.frag
    (native/tone_map.cpp). Releases the GIL."""
