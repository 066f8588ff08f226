"""Level of detail: which particles a frame draws. While the picture changes (the camera moves,
a new frame arrives) a frame draws a fair subsample, the first ``max_drawn`` particles of a
fixed order of them all (a permutation any prefix of which is spread evenly over the frame);
while it stays still, each frame adds the next stretch of the order to the light already
drawn, sized to what a frame has time for, until every particle is in. The light of ``drawn``
particles stands for all of them: it is scaled by ``represents / drawn``, so the picture's total
light does not change with the detail (ADR 0290)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ...engine.errors import InvalidInputError

# What the viewer and the server draw of a frame while the picture changes: a few milliseconds
# of a GPU's compute splat (the host splat's one thread took about 0.25 s for it at 1280x720
# on this 2-core machine: lower it there).
DEFAULT_MAX_DRAWN = 1_000_000
# Wall time a refining frame aims for: the rate of a moving camera (30 frames a second).
FRAME_BUDGET_S = 1.0 / 30.0
# Most a refining frame's stretch grows over the last one's: a slow frame is never more than
# twice the last.
MOST_GROWTH = 2.0
# The seed of the order's starting particle: the same particles stand for the frame on every run.
ORDER_SEED = 46
# Order entries made at once (bounds the temporary arrays: 16 MB of uint64).
ORDER_CHUNK = 1 << 21


@dataclass(frozen=True)
class DrawnStretch:
    """What one draw adds: the particles at ``order[start:stop]`` of the scene's ``total``,
    which stand for ``represents`` particles (more than ``total`` where the frame is itself a
    fair sample: a priority-ordered recording's prefix). ``start`` 0 clears the light first;
    otherwise the stretch adds to the light of ``order[:start]``."""

    start: int
    stop: int
    total: int
    represents: int

    @property
    def light_scale(self) -> float:
        """What the light drawn so far is multiplied by to stand for every particle."""
        return self.represents / self.stop if self.stop else 1.0

    @property
    def whole(self) -> bool:
        """Every particle in one draw (no permutation needed)."""
        return self.start == 0 and self.stop == self.total


class LevelOfDetail:
    """Plan each draw of one renderer: :meth:`plan` returns the :class:`DrawnStretch` of the next
    draw, given what the picture depends on.

    Parameters
    ----------
    max_drawn : particles a changing picture draws, >= 1; None: every particle, always.
    clock : seconds, for how long a refining frame took (``time.perf_counter``).
    """

    def __init__(self, max_drawn: int | None, *, clock=time.perf_counter):
        if max_drawn is not None and not (isinstance(max_drawn, (int, np.integer))
                                          and max_drawn >= 1):
            raise InvalidInputError(f"max_drawn must be a whole number >= 1, got {max_drawn!r}")
        self.max_drawn = None if max_drawn is None else int(max_drawn)
        self._clock = clock
        self._picture = None   # what the light drawn so far depends on
        self._drawn = 0
        self._total = 0
        self._represents = 0
        self._last_at = 0.0    # when the last draw was planned
        self._stretch = 0      # particles the last draw added
        self._order = np.zeros(0, np.uint32)
        self._ordered = 0  # entries of the order made so far

    @property
    def drawn(self) -> int:
        """Particles in the light drawn so far."""
        return self._drawn

    @property
    def total(self) -> int:
        """Particles of the frame drawn."""
        return self._total

    @property
    def represents(self) -> int:
        """Particles the frame drawn stands for (its own count, or the whole frame of which it
        is a fair sample)."""
        return self._represents

    @property
    def refining(self) -> bool:
        """Whether another draw of the same picture would add particles."""
        return self._drawn < self._total

    def whole(self, count: int, represents: int | None = None) -> None:
        """Note a draw of every particle by a pass without levels of detail (density images):
        the next :meth:`plan` starts again."""
        self._picture, self._drawn, self._total = None, count, count
        self._represents = count if represents is None else represents

    def order(self, count: int, stop: int) -> np.ndarray:
        """The fixed order of ``count`` particles (uint32 (count,), the same array for the same
        count), made up to ``stop``: entries past the largest ``stop`` asked for are not made
        yet, so a frame of 1e9 particles costs only what is drawn of it.

        Entry k is (k * step + start) mod count (:func:`weyl_order`)."""
        if len(self._order) != count:
            self._order, self._ordered = np.empty(count, np.uint32), 0
        step, start = weyl_order(count)
        for begin in range(self._ordered, min(stop, count), ORDER_CHUNK):
            end = min(stop, count, begin + ORDER_CHUNK)
            entries = np.arange(begin, end, dtype=np.uint64)  # k * step < 2^64 for k < 2^32
            entries *= np.uint64(step)
            entries += np.uint64(start)
            entries %= np.uint64(count)
            self._order[begin:end] = entries
            self._ordered = end
        return self._order

    def plan(self, picture, count: int, *, represents: int | None = None) -> DrawnStretch:
        """The next draw of a frame of ``count`` particles, which stand for ``represents``
        (default ``count``). ``picture``: anything comparable that changes with what the light
        depends on (frame, camera, style, size); a new one starts again from the subsample.

        1. A new picture, or a count the light was not drawn for: draw the first
           ``min(count, max_drawn)``.
        2. The same picture, not yet complete: the next stretch, the last one scaled by
           FRAME_BUDGET_S over the wall time since the last plan (a whole frame, so a GPU's
           queued work counts), at most MOST_GROWTH times the last, at least ``max_drawn``.
        3. The same picture, complete: nothing to draw (stop == start == count).
        """
        now = self._clock()
        self._represents = count if represents is None else represents
        if picture != self._picture or count != self._total or self.max_drawn is None:
            self._picture, self._total = picture, count
            first = count if self.max_drawn is None else min(count, self.max_drawn)
            self._drawn, self._stretch, self._last_at = first, first, now
            return DrawnStretch(0, first, count, self._represents)
        if not self.refining:
            return DrawnStretch(count, count, count, self._represents)
        seconds = max(now - self._last_at, 1e-9)
        self._stretch = max(int(self._stretch * min(MOST_GROWTH, FRAME_BUDGET_S / seconds)),
                            self.max_drawn)
        start, stop = self._drawn, min(count, self._drawn + self._stretch)
        self._drawn, self._last_at = stop, now
        return DrawnStretch(start, stop, count, self._represents)


def weyl_order(count: int) -> tuple[int, int]:
    """(step, start) of the level-of-detail order of ``count`` particles, whose entry k is
    (k * step + start) mod count: step the integer nearest count / golden ratio that shares no
    factor with count (so the order is a permutation), start drawn from ORDER_SEED. A Weyl
    sequence: every prefix is spread evenly over the frame's particles as the golden ratio's
    multiples are over a circle, and takes each residue of a short period (populations stored
    alternately) in turn. The compute splat makes its entries on the device (``splat.cl``)."""
    step = max(round(count * (math.sqrt(5.0) - 1.0) / 2.0), 1)
    while math.gcd(step, count) > 1:
        step += 1
    return step, int(np.random.default_rng(ORDER_SEED).integers(max(count, 1)))


def represented_count(count: int, labels: np.ndarray) -> int:
    """Particles a frame of ``count`` stands for, given its source's population ``labels``
    (one for every particle of the run): a frame shorter than them is the first ``count`` of a
    recording stored in priority order (``Player.max_particles``), a fair sample of them all."""
    return max(count, len(labels))


def sample_labels(labels: np.ndarray, count: int) -> np.ndarray:
    """The population labels of a frame of ``count`` particles (the first ``count`` where the
    frame is a prefix: :func:`represented_count`)."""
    return labels if len(labels) <= count else labels[:count]


def sample_masses(masses, count: int):
    """The masses of a frame of ``count`` particles for the density image: where the frame is a
    prefix, the first ``count`` scaled up so they hold the whole frame's mass (None stays
    None: equal masses)."""
    if masses is None or len(masses) <= count:
        return masses
    return np.asarray(masses[:count], np.float64) * (len(masses) / max(count, 1))


def drawn_sentence(drawn: int, total: int) -> str:
    """How many particles the picture holds, for the panel: "drawn 1.0M of 1.0B"."""
    return f"drawn {_short(drawn)} of {_short(total)}"


def _short(count: int) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if count >= size:
            return f"{count / size:.1f}{suffix}"
    return str(count)
