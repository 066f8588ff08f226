"""Opening a recording: every check a damaged or hostile file needs, made before anything large
is allocated, then fast frame reads.

Frames are read straight from the file into the caller's buffer when their storage allows it
(unfiltered chunks or contiguous storage, little-endian): no HDF5 call, and where the platform
has ``os.preadv`` (``engine.portable``) no intermediate copy, the GIL released while the bytes
arrive. Other layouts (a file
rewritten by another tool with compression, say) go through h5py.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from .. import frame_encoding as encodings
from .. import portable
from ..errors import InvalidInputError, NotARecordingError, RecordingError
from ..input_files import not_a_regular_file, reading
from . import _format as fmt
from ._hdf5 import (H5_ERRORS, LIVE_READ_ATTEMPTS, STILL_READ_ATTEMPTS, error_text,
                    marked_open_for_writing, open_swmr)
from ._writer_lock import writer_is_active


_ACCEPTED_KINDS = {"f": "f", "i": "iu", "u": "ui", "O": "OSU"}
_KIND_NAMES = {"f": "floating point", "i": "integers", "u": "integers", "O": "strings"}


@dataclass(frozen=True)
class _Layout:
    """Where frame ``i`` starts: ``chunk_offsets[i // per_chunk] + (i % per_chunk) * frame_bytes``."""

    chunk_offsets: np.ndarray
    per_chunk: int


class RecordingFile:
    """A validated, open recording. Raises :class:`RecordingError` for anything it cannot trust.

    Attributes: ``path``, ``n`` (particles), ``frame_count`` (committed frames), ``dtype`` (of
    the frames :meth:`read` gives: float16 or float32; a fixed16 recording decodes to float32),
    ``encoding`` (how positions are stored: float32, float16 or fixed16), ``compression``,
    ``has_velocities``, ``attributes`` (dict), ``format_version``, ``closed_cleanly`` (False
    while a Recorder writes the file, or when its writer died or stopped on a write error),
    ``being_written`` (a live Recorder holds the file now: :meth:`refresh` takes in the frames
    it commits), ``times``/``steps`` (arrays of length
    ``frame_count``), ``masses``, ``population``, ``population_names``, ``file_size`` (bytes),
    ``frames_per_chunk``; ``keyframe_count``, ``keyframe_steps``/``keyframe_times`` and
    ``keyframe_dtype`` (None without keyframes: format version 1, or none recorded);
    ``order`` (``"natural"``, or ``"priority"``: every per-particle dataset, frames, masses and
    population alike, holds row i for the run's particle ``permutation[i]``, and the first K
    rows of a frame are a fair sample of it) and :attr:`permutation` (None in the natural
    order).
    """

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_file():
            kind = not_a_regular_file(self.path)
            raise NotARecordingError(f"{self.path}: no such file" if kind is None
                                     else f"{self.path} is {kind}, not a recording")
        self.file_size = self.path.stat().st_size
        self._fd = -1
        self._h5 = None
        try:
            with _damage_reported(self.path), reading(self.path, "recording"):
                self._h5, self.closed_cleanly = _open_hdf5(self.path)
                self.being_written = not self.closed_cleanly and writer_is_active(self.path)
                self._validate()
            self._fd = os.open(self.path, os.O_RDONLY)
        except BaseException:
            self.close()
            raise

    # -- validation ----------------------------------------------------------------------------

    def _validate(self) -> None:
        self._check_format()
        self._check_datasets()
        self._read_particles()
        self._read_order()
        self.frame_count = self.keyframe_count = 0
        self.keyframe_dtype = None
        self.keyframe_steps = np.zeros(0, np.int64)
        self.keyframe_times = np.zeros(0, np.float64)
        self._read_series()
        self._read_keyframes()
        self._find_layouts()
        self.frames_per_chunk = self._positions.chunks[0] if self._positions.chunks else None

    def _check_format(self) -> None:
        where = str(self.path)
        with _damage_reported(self.path, "its attributes cannot be read"):
            attributes = fmt.decode_attributes(self._h5.attrs)
        name = attributes.get("format")
        if not isinstance(name, str) or name != fmt.FORMAT_NAME:
            raise NotARecordingError(f"{where} is an HDF5 file but not an Orrery recording "
                                 f"(its 'format' attribute is {attributes.get('format')!r})")
        version = attributes.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise RecordingError(f"{where}: format_version {version!r} is not a valid version")
        if version > fmt.FORMAT_VERSION:
            raise RecordingError(f"{where} uses recording format version {version}, written by a "
                                 f"newer Orrery ({attributes.get('orrery_version', '?')}); this "
                                 f"Orrery reads versions up to {fmt.FORMAT_VERSION}: upgrade it")
        self.format_version = version
        self.attributes = attributes

    def _check_datasets(self) -> None:
        h5, where = self._h5, str(self.path)
        missing = [name for name in fmt.REQUIRED_DATASETS if _dataset(h5, name, where) is None]
        if missing:
            raise RecordingError(f"{where}: damaged recording, missing dataset(s) {missing}")

        positions = h5[fmt.POSITIONS]
        self.encoding = self._position_encoding()
        stored, self.n = _frame_shape(positions, where, self.encoding)
        self.dtype = np.dtype("<f4") if self.encoding == encodings.FIXED16 else stored
        self.frame_bytes = self.n * 3 * stored.itemsize
        if self.encoding == encodings.FIXED16 and _dataset(h5, fmt.POSITION_BOX, where) is None:
            raise RecordingError(f"{where}: damaged recording, fixed16 positions without "
                                 f"'{fmt.POSITION_BOX}'")
        if positions.id.get_create_plist().get_nfilters() > 0:
            _load_filters()
        velocities = _dataset(h5, fmt.VELOCITIES, where)
        self.has_velocities = velocities is not None
        if self.has_velocities and (_frame_shape(velocities, where, encodings.FLOAT32
                                                 if stored.itemsize == 4 else encodings.FLOAT16)
                                    != (stored, self.n)):
            raise RecordingError(f"{where}: velocities {velocities.shape} {velocities.dtype} do "
                                 f"not match positions {positions.shape} {positions.dtype}")
        self._positions = positions
        self._velocities = velocities if self.has_velocities else None

    def _position_encoding(self) -> str:
        """How positions are stored: the version-3 attribute, else (an older file, or one
        written by another tool without it) what the dtype says."""
        self.compression = str(self.attributes.get(fmt.COMPRESSION, "none"))
        if self.format_version < fmt.FIRST_VERSION_WITH_ENCODINGS \
                or fmt.POSITION_ENCODING not in self.attributes:
            return encodings.FLOAT16 if self._h5[fmt.POSITIONS].dtype.itemsize == 2 \
                else encodings.FLOAT32
        encoding = self.attributes.get(fmt.POSITION_ENCODING)
        if encoding not in encodings.ENCODINGS:
            raise RecordingError(f"{self.path}: position encoding {encoding!r} is none of "
                                 f"{encodings.ENCODINGS}: damaged")
        return encoding

    def _read_particles(self) -> None:
        self.masses = self._small_array(fmt.MASSES, (self.n,), "f")
        labels = self._small_array(fmt.POPULATION, (self.n,), "u")
        names = self._h5[fmt.POPULATION_NAMES]
        if names.ndim != 1 or not 0 < names.shape[0] <= fmt.MAX_POPULATIONS:
            raise RecordingError(f"{self.path}: dataset 'population_names' has shape "
                                 f"{names.shape}, expected 1 to {fmt.MAX_POPULATIONS} names")
        if names.dtype.kind == "S" and names.dtype.itemsize > fmt.MAX_NAME_BYTES:
            raise RecordingError(f"{self.path}: population names of {names.dtype.itemsize} bytes "
                                 f"each, more than the limit of {fmt.MAX_NAME_BYTES}: damaged")
        names = self._small_array(fmt.POPULATION_NAMES, None, "O")
        with _rule_reported(self.path, "population names"):
            self.population_names = fmt.check_population_names(list(names))
        with _rule_reported(self.path, "population labels exceed the "
                                       f"{len(self.population_names)} population name(s)"):
            fmt.check_population(labels, len(self.population_names))
        self.population = labels.astype(np.uint8)

    def _read_order(self) -> None:
        """The particles' order: the version-4 attribute (an older file, or one without it, is
        in the run's order) and, in the priority order, that its permutation is there. Its
        values are read when first needed (:attr:`permutation`): a player never needs them,
        and at 1e8 particles they are 400 MB."""
        order = self.attributes.get(fmt.ORDER, fmt.NATURAL) \
            if self.format_version >= fmt.FIRST_VERSION_WITH_ORDERS else fmt.NATURAL
        if not isinstance(order, str) or order not in fmt.ORDERS:
            raise RecordingError(f"{self.path}: particle order {order!r:.80} is none of "
                                 f"{fmt.ORDERS}: damaged")
        self.order, self._permutation = order, None
        if order == fmt.PRIORITY \
                and _dataset(self._h5, fmt.PARTICLE_PERMUTATION, str(self.path)) is None:
            raise RecordingError(f"{self.path}: damaged recording, {order} order without "
                                 f"'{fmt.PARTICLE_PERMUTATION}'")

    @property
    def permutation(self) -> np.ndarray | None:
        """Row i of every per-particle dataset is the run's particle ``permutation[i]`` (intp
        indices; None in the natural order). Read and checked on first use, while the file is
        open; a damaged one raises :class:`RecordingError` then."""
        if self.order == fmt.NATURAL:
            return None
        if self._permutation is None:
            permutation = self._small_array(fmt.PARTICLE_PERMUTATION, (self.n,), "u")
            with _rule_reported(self.path, "damaged"):
                fmt.check_particle_permutation(permutation, self.n)
            self._permutation = permutation.astype(np.intp)
        return self._permutation

    def in_run_order(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` of this file's order (one per particle: masses, a frame, a keyframe) put
        back in the run's order: the same array in a natural file, else a new one."""
        permutation = self.permutation
        if permutation is None:
            return rows
        ordered = np.empty_like(rows)
        ordered[permutation] = rows
        return ordered

    def _find_layouts(self) -> None:
        self._layouts = {name: self._direct_layout(dataset)
                         for name, dataset in ((fmt.POSITIONS, self._positions),
                                               (fmt.VELOCITIES, self._velocities))
                         if dataset is not None}

    def refresh(self) -> int:
        """Take in the frames (and keyframes) a live writer committed since this file was opened
        or last refreshed; returns how many frames are new (0 for a file nobody writes). Frames
        already read never change: a writer only appends."""
        if self.closed_cleanly or self._h5 is None:
            return 0
        before = self.frame_count
        with _damage_reported(self.path, "it changed in a way its writer never does"):
            # Each open handle keeps the shape it last read: refresh the ones held, and the
            # series and keyframes (opened afresh by each read).
            for dataset in (self._positions, self._velocities):
                if dataset is not None:
                    dataset.refresh()
            for name in (fmt.TIME, fmt.STEP, fmt.POSITION_BOX, *fmt.KEYFRAME_DATASETS):
                if name in self._h5:
                    self._h5[name].refresh()
            self.file_size = self.path.stat().st_size
            self._read_series(start=before)
            self._read_keyframes()
            if self.frame_count != before:
                self._find_layouts()
        self.being_written = writer_is_active(self.path)
        return self.frame_count - before

    def _read_series(self, start: int = 0) -> None:
        """Times and steps of the committed frames (see the Recorder's commit protocol), read
        from frame ``start`` on (the frames before it were read already)."""
        h5, where, positions = self._h5, str(self.path), self._positions
        if h5[fmt.TIME].ndim != 1 or h5[fmt.STEP].ndim != 1:
            raise RecordingError(f"{where}: 'time' and 'step' must be one-dimensional")
        length = min(positions.shape[0], h5[fmt.TIME].shape[0], h5[fmt.STEP].shape[0])
        if length > fmt.MAX_FRAMES:
            raise RecordingError(f"{where} declares {length} frames, more than the limit of "
                                 f"{fmt.MAX_FRAMES}: damaged")
        if self._velocities is not None:
            length = min(length, self._velocities.shape[0])
        steps = self._small_array(fmt.STEP, None, "i", rows=length, start=start)
        times = self._small_array(fmt.TIME, None, "f", rows=length, start=start)
        uncommitted = np.flatnonzero(steps == fmt.STEP_FILL)
        count = start + (int(uncommitted[0]) if uncommitted.size else len(steps))
        steps = steps[:count - start].astype(np.int64)
        times = times[:count - start].astype(np.float64)
        if start:
            steps = np.concatenate([self.steps, steps])
            times = np.concatenate([self.times, times])
        with _rule_reported(self.path, "damaged"):
            fmt.check_series(steps[max(start - 1, 0):], times[max(start - 1, 0):])
        stored = count * self.frame_bytes * (2 if self.has_velocities else 1)
        compressed = positions.id.get_create_plist().get_nfilters() > 0
        if not compressed and not self._reaches(stored):
            raise RecordingError(f"{where} declares {count} frames of {self.n} particles "
                                 f"({stored / 1e9:.3g} GB) but the file holds only "
                                 f"{self.file_size / 1e9:.3g} GB: truncated or damaged")
        if self.encoding == encodings.FIXED16:
            boxes = self._h5[fmt.POSITION_BOX]
            if boxes.ndim != 3 or boxes.shape[1:] != (3, 3) or boxes.shape[0] < count:
                raise RecordingError(f"{where}: '{fmt.POSITION_BOX}' has shape {boxes.shape}, "
                                     f"expected ({count}, 3, 3) or more: damaged")
            self._boxes = self._small_array(fmt.POSITION_BOX, None, "f", rows=count) \
                .astype(np.float32)
        self.steps, self.times = steps, times
        self.frame_count = count  # last: a reader on another thread sees the arrays first

    def _read_keyframes(self) -> None:
        """The committed keyframes, by the same rules as frames; none in a version-1 file."""
        h5, where = self._h5, str(self.path)
        present = [name for name in fmt.KEYFRAME_DATASETS if _dataset(h5, name, where) is not None]
        if not present or self.format_version < fmt.FIRST_VERSION_WITH_KEYFRAMES:
            return
        if len(present) != len(fmt.KEYFRAME_DATASETS):
            missing = sorted(set(fmt.KEYFRAME_DATASETS) - set(present))
            raise RecordingError(f"{where}: damaged recording, missing dataset(s) {missing}")
        states = [h5[fmt.KEYFRAME_POSITIONS], h5[fmt.KEYFRAME_VELOCITIES]]
        for state in states:
            if state.ndim != 3 or state.shape[1:] != (self.n, 3) \
                    or state.dtype.str not in ("<f4", "<f8") or state.dtype != states[0].dtype:
                raise RecordingError(f"{where}: '{state.name}' must be little-endian float32 or "
                                     f"float64 of shape (keyframes, {self.n}, 3), got "
                                     f"{state.shape} {state.dtype}")
            _check_chunks(state, f"{where}: '{state.name}'", state.dtype.itemsize,
                          max(fmt.MAX_CHUNK_BYTES, self.n * 3 * state.dtype.itemsize))
        length = min(states[0].shape[0], states[1].shape[0], h5[fmt.KEYFRAME_TIME].shape[0],
                     h5[fmt.KEYFRAME_STEP].shape[0])
        if length > fmt.MAX_FRAMES:
            raise RecordingError(f"{where} declares {length} keyframes: damaged")
        steps = self._small_array(fmt.KEYFRAME_STEP, None, "i", rows=length)
        times = self._small_array(fmt.KEYFRAME_TIME, None, "f", rows=length)
        uncommitted = np.flatnonzero(steps == fmt.STEP_FILL)
        count = int(uncommitted[0]) if uncommitted.size else length
        steps, times = steps[:count].astype(np.int64), times[:count].astype(np.float64)
        with _rule_reported(self.path, "damaged keyframes"):
            fmt.check_series(steps, times)
        self.keyframe_steps, self.keyframe_times = steps, times
        self.keyframe_count, self.keyframe_dtype = count, np.dtype(states[0].dtype)

    def _small_array(self, name, shape, kind, rows=None, start=0) -> np.ndarray:
        """Read a dataset that must be small, refusing before reading if its size is not
        plausible for this file."""
        dataset = self._h5[name]
        where = f"{self.path}: dataset '{name}'"
        if shape is not None and dataset.shape != shape:
            raise RecordingError(f"{where} has shape {dataset.shape}, expected {shape}")
        if dataset.dtype.kind not in _ACCEPTED_KINDS[kind]:
            raise RecordingError(f"{where} has type {dataset.dtype}, expected {_KIND_NAMES[kind]}")
        selection = np.s_[start:rows] if rows is not None else ()
        count = rows - start if rows is not None else int(np.prod(dataset.shape, dtype=np.int64))
        if kind != "O" and not self._reaches(count * dataset.dtype.itemsize):
            raise RecordingError(f"{where} declares {count} values, more than the file's "
                                 f"{self.file_size} bytes can hold: damaged")
        if kind == "O" and count > fmt.MAX_POPULATIONS:
            raise RecordingError(f"{where} declares {count} names: damaged")
        _check_chunks(dataset, where, dataset.dtype.itemsize)
        with _damage_reported(self.path, f"dataset '{name}' cannot be read"):
            return np.asarray(dataset[selection])

    def _reaches(self, end: int) -> bool:
        """Whether the file holds ``end`` bytes: by the size last looked up, else by its size
        now. A live writer extends the file before it commits the frames stored there, so a
        size looked up before a commit this reader has since seen is stale, not a truncation."""
        if end <= self.file_size:
            return True
        self.file_size = self.path.stat().st_size
        return end <= self.file_size

    def _direct_layout(self, dataset) -> _Layout | None:
        """Where each committed frame lies in the file, checked against the file's size; None
        when the storage is not plain bytes (h5py then decodes)."""
        if self.frame_count == 0 or dataset.dtype.byteorder == ">":
            return None
        plist = dataset.id.get_create_plist()
        if plist.get_nfilters() > 0:
            return None
        if dataset.chunks is None:
            offset = dataset.id.get_offset()
            if offset is None:
                raise RecordingError(f"{self.path}: frames have no storage: damaged")
            offsets, per_chunk = np.array([offset], dtype=np.int64), max(1, dataset.shape[0])
            chunk_bytes = per_chunk * self.frame_bytes
        else:
            per_chunk = dataset.chunks[0]
            if dataset.chunks[1:] != (self.n, 3):
                return None
            chunks_needed = -(-self.frame_count // per_chunk)
            offsets = np.full(chunks_needed, -1, dtype=np.int64)
            chunk_bytes = per_chunk * self.frame_bytes

            def note(info):
                index = info.chunk_offset[0] // per_chunk
                if index < chunks_needed and info.size == chunk_bytes:
                    offsets[index] = info.byte_offset

            if hasattr(dataset.id, "chunk_iter"):  # HDF5 >= 1.14: one pass over the index
                dataset.id.chunk_iter(note)
            else:
                for chunk in range(chunks_needed):
                    info = dataset.id.get_chunk_info_by_coord((chunk * per_chunk, 0, 0))
                    if info.byte_offset is not None:
                        note(info)
            if (offsets < 0).any():
                first = int(np.flatnonzero(offsets < 0)[0]) * per_chunk
                raise RecordingError(f"{self.path}: frame {first} has no stored data: damaged")
        last = int(offsets.max()) + chunk_bytes
        if not self._reaches(last):
            raise RecordingError(f"{self.path}: frame data reaches byte {last} but the file has "
                                 f"{self.file_size}: truncated")
        return _Layout(offsets, per_chunk)

    # -- reading -------------------------------------------------------------------------------

    def read_into(self, index: int, out: np.ndarray, *, velocities: bool = False) -> np.ndarray:
        """Read frame ``index`` into ``out`` and return it. ``out`` has shape (k, 3), k from 1
        to n, and the recording's dtype: it receives the frame's first k particles in the
        file's order (a fair sample of the frame in a priority file; k = n: the whole frame),
        and only their bytes are read."""
        name = fmt.VELOCITIES if velocities else fmt.POSITIONS
        if velocities and not self.has_velocities:
            raise RecordingError(f"{self.path} holds no velocities")
        if not 0 <= index < self.frame_count:
            raise IndexError(f"frame {index} outside 0..{self.frame_count - 1}")
        if out.ndim != 2 or out.shape[1] != 3 or not 0 < out.shape[0] <= self.n:
            raise InvalidInputError(f"a frame is read into an array of shape (k, 3), k from 1 "
                                    f"to {self.n}, not {out.shape}")
        if name == fmt.POSITIONS and self.encoding == encodings.FIXED16:
            stored = self._read_stored(index, name, np.empty(out.shape, "<u2"))
            return encodings.fixed16_decode(stored, self._boxes[index], out)
        return self._read_stored(index, name, out)

    def position_error(self, index: int) -> np.ndarray | None:
        """The stated absolute error bound per axis of frame ``index``'s positions (fixed16),
        or None where the error is relative (float16: 2**-11 of each value; float32)."""
        if self.encoding != encodings.FIXED16:
            return None
        return encodings.fixed16_error(self._boxes[index])

    def _read_stored(self, index: int, name: str, out: np.ndarray) -> np.ndarray:
        layout = self._layouts.get(name)
        count = out.shape[0]
        if layout is None:
            dataset = self._positions if name == fmt.POSITIONS else self._velocities
            with _damage_reported(self.path, f"frame {index} cannot be read"):
                dataset.read_direct(out, source_sel=np.s_[index, :count])
            return out
        chunk, within = divmod(index, layout.per_chunk)
        offset = int(layout.chunk_offsets[chunk]) + within * self.frame_bytes
        view = memoryview(out.reshape(-1).view(np.uint8))
        size = len(view)
        done = 0
        while done < size:
            try:
                got = portable.read_into(self._fd, view[done:], offset + done)
            except OSError as error:
                raise RecordingError(f"{self.path}: frame {index} cannot be read "
                                     f"({error.strerror or error})") from error
            if got <= 0:
                raise RecordingError(f"{self.path}: file ended inside frame {index}: truncated")
            done += got
        return out

    def read(self, index: int, *, velocities: bool = False, count: int | None = None) \
            -> np.ndarray:
        """Frame ``index`` as a new (n, 3) array of the recording's dtype, in the file's order;
        with ``count``, only its first ``count`` particles (see :meth:`read_into`)."""
        rows = self.n if count is None else count
        return self.read_into(index, np.empty((rows, 3), self.dtype), velocities=velocities)

    def read_keyframe(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Keyframe ``index``'s (positions, velocities), (n, 3) arrays of ``keyframe_dtype``
        exactly as the run held them, in the run's order (a priority file's rows put back,
        :meth:`in_run_order`); its time and step are ``keyframe_times[index]`` and
        ``keyframe_steps[index]``."""
        if not 0 <= index < self.keyframe_count:
            raise IndexError(f"keyframe {index} outside 0..{self.keyframe_count - 1}"
                             if self.keyframe_count else f"{self.path} holds no keyframes")
        state = []
        for name in (fmt.KEYFRAME_POSITIONS, fmt.KEYFRAME_VELOCITIES):
            out = np.empty((self.n, 3), self.keyframe_dtype)
            with _damage_reported(self.path, f"keyframe {index} cannot be read"):
                self._h5[name].read_direct(out, source_sel=np.s_[index])
            state.append(self.in_run_order(out))
        return state[0], state[1]

    def keyframe_before(self, frame: int | None = None) -> int:
        """The index of the last keyframe at or before frame ``frame``'s step (default: the
        last keyframe of the file)."""
        if self.keyframe_count == 0:
            version = "" if self.format_version >= fmt.FIRST_VERSION_WITH_KEYFRAMES else \
                f" (it uses format version {self.format_version}, from before keyframes)"
            raise RecordingError(f"{self.path} holds no keyframes{version}: a run cannot be "
                                 "continued from it")
        if frame is None:
            return self.keyframe_count - 1
        if not 0 <= frame < self.frame_count:
            raise InvalidInputError(f"frame {frame} outside 0..{self.frame_count - 1}")
        index = int(np.searchsorted(self.keyframe_steps, self.steps[frame], side="right")) - 1
        if index < 0:
            raise RecordingError(f"{self.path}: no keyframe at or before frame {frame} "
                                 f"(step {self.steps[frame]})")
        return index

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __enter__(self) -> RecordingFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _open_hdf5(path: Path) -> tuple[h5py.File, bool]:
    """Open read-only; a file whose writer was killed is still marked open for writing, which
    HDF5 only lets a SWMR reader past. A live Recorder's file may be mid-write when read, so a
    failed metadata read is retried for a moment; any other file is not going to change, so
    damage is reported at once (see ``_hdf5``)."""
    try:
        h5 = h5py.File(path, "r")
        # In the process that writes it, HDF5 hands back the writer's own open file (mode r+)
        # instead of refusing it as already open for write: a file still being written.
        return h5, h5.mode == "r"
    except OSError as error:
        text = str(error)
        # A writer that stopped on a full disk can leave a file shorter than the end its
        # superblock names; HDF5 lets only a SWMR reader past that (every committed frame lies
        # before the end; the reader checks that later).
        if "already open for write" in text or ("truncated" in text
                                                and marked_open_for_writing(path)):
            attempts = LIVE_READ_ATTEMPTS if writer_is_active(path) else STILL_READ_ATTEMPTS
            try:
                return open_swmr(path, attempts=attempts), False
            except H5_ERRORS as swmr_error:
                if "already open for write" in text:
                    raise RecordingError(f"{path}: unreadable after an unclean stop "
                                         f"({error_text(swmr_error)}): damaged") from swmr_error
        if isinstance(error, BlockingIOError) or "unable to lock" in text:
            if writer_is_active(path):
                raise RecordingError(f"{path} is a recording that is just starting; try again "
                                     "in a moment") from error
            raise RecordingError(f"{path} is locked by another program writing it with HDF5 "
                                 "(not as a live recording); try again when it is done") from error
        if "signature" in text or "not an HDF5" in text.lower():
            raise NotARecordingError(f"{path} is not an HDF5 file, so not an Orrery recording") \
                from error
        if "truncated" in text:
            raise RecordingError(f"{path} is truncated (shorter than its HDF5 header says): "
                                 "the copy or download was cut short") from error
        raise RecordingError(f"{path} cannot be opened as a recording: {error_text(error)}") \
            from error


@contextlib.contextmanager
def _damage_reported(path, what: str = ""):
    """HDF5's own errors (a bad checksum, a broken index, a link that leads nowhere) as a
    RecordingError naming the file."""
    try:
        yield
    except H5_ERRORS as error:
        what = f"{what}; the file is damaged" if what else "the file is damaged"
        raise RecordingError(f"{path}: {what} ({error_text(error)})") from error


@contextlib.contextmanager
def _rule_reported(path, what: str):
    """A broken format rule (``_format``) as a RecordingError naming the file."""
    try:
        yield
    except InvalidInputError as error:
        raise RecordingError(f"{path}: {what}: {error}") from None


def _dataset(h5, name: str, where: str):
    """The dataset ``name`` stored in the file itself, or None when it is absent. A link (soft,
    external) is refused: a recording holds its datasets, and a link may lead in circles or out
    of the file."""
    link = h5.get(name, getlink=True)
    if link is None:
        return None
    if not isinstance(link, h5py.HardLink):
        raise RecordingError(f"{where}: '{name}' is a {type(link).__name__}, not a dataset: "
                             "damaged or not written by Orrery")
    dataset = h5.get(name)
    return dataset if isinstance(dataset, h5py.Dataset) else None


def _check_chunks(dataset, where: str, itemsize: int, allowed: int = fmt.MAX_CHUNK_BYTES) -> None:
    if dataset.chunks is not None:
        chunk_bytes = int(np.prod(dataset.chunks, dtype=np.int64)) * itemsize
        if chunk_bytes > allowed:
            raise RecordingError(f"{where}: chunks of {chunk_bytes} bytes, more than the "
                                 f"{allowed} a reader decompresses at once: damaged")


def _load_filters() -> None:
    """Register hdf5plugin's filters (Blosc2, zfp) with HDF5 before compressed frames are read."""
    try:
        import hdf5plugin  # noqa: F401 - importing it registers the filters
    except ImportError:
        raise RecordingError("this recording's frames are compressed: reading them needs "
                             "hdf5plugin (pip install hdf5plugin)") from None


def _frame_shape(dataset, where: str, encoding: str) -> tuple[np.dtype, int]:
    if dataset.ndim != 3 or dataset.shape[2] != 3:
        raise RecordingError(f"{where}: '{dataset.name}' must have shape (frames, n, 3), got "
                             f"{dataset.shape}")
    expected = encodings.STORED_DTYPES[encoding]
    if dataset.dtype.kind != expected.kind or dataset.dtype.itemsize != expected.itemsize:
        raise RecordingError(f"{where}: '{dataset.name}' must be {expected} for {encoding} "
                             f"positions, got {dataset.dtype}")
    n = dataset.shape[1]
    with _rule_reported(where, "damaged"):
        fmt.check_particle_count(n)
    _check_chunks(dataset, f"{where}: '{dataset.name}'", dataset.dtype.itemsize,
                  max(fmt.MAX_CHUNK_BYTES, n * 3 * dataset.dtype.itemsize))
    return np.dtype(dataset.dtype.newbyteorder("<")) if dataset.dtype.byteorder == ">" else \
        np.dtype(dataset.dtype), n
