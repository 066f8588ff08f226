"""The exceptions Orrery raises on purpose: one family, so callers can catch them together."""


class OrreryError(Exception):
    """Base class of every error Orrery raises deliberately."""


class InvalidInputError(OrreryError, ValueError):
    """Input that cannot be simulated: bad shapes, NaN positions, negative masses, ..."""


class UnknownSolverError(InvalidInputError):
    """A solver name or solver option that does not exist."""


class SolverUnavailableError(OrreryError, RuntimeError):
    """A solver that exists but cannot run here (its package or device is missing)."""


class RecordingError(OrreryError):
    """A recording that cannot be written or read: not HDF5, truncated, damaged, from a newer
    Orrery, or declaring sizes its file cannot hold."""


class NotARecordingError(RecordingError):
    """A path that is no Orrery recording at all (missing, not a file, not HDF5, or HDF5 without
    the recording's ``format`` mark), as opposed to a recording that is damaged."""


class CalibrationCacheError(OrreryError, OSError):
    """The calibration cache cannot be written (its folder is missing, read-only or full)."""


class OutputFileError(OrreryError, OSError):
    """A file Orrery was asked to write (a table, a report) cannot be written: its folder is
    missing or read-only, or the disk is full."""
