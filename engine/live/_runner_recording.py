"""The recording a live run may be making: started and stopped by controls, fed by the solver
thread every ``every`` steps. A recording that fails (an existing file, an unwritable folder, a
full disk) ends with a message in ``error`` and the run goes on; it stops by itself when the run
restarts or changes solver, since a file describes one run with one solver."""

from __future__ import annotations

from ..contracts import SteppedSimulation
from ..errors import OrreryError
from ..recording import Recorder


class LiveRecording:
    def __init__(self):
        self._recorder: Recorder | None = None
        self._every = 1
        self.error: str | None = None  # why the last recording stopped early

    def begin(self, path: str, every: int, encoding: str, sim: SteppedSimulation, *,
              scenario: str, source: dict | None) -> None:
        """Record ``sim`` into ``path`` from its current step, one frame every ``every`` steps,
        positions in ``encoding`` (``frame_encoding``)."""
        self.finish()
        self.error = None
        try:
            self._recorder = Recorder.for_simulation(path, sim, scenario=scenario, source=source,
                                                     dtype=encoding)
            self._every = every
            self._recorder.append_simulation(sim)
        except Exception as error:  # noqa: BLE001 - a recording must not stop the run
            self._failed(error)

    def stepped(self, sim: SteppedSimulation) -> None:
        """``sim`` made a step: recorded if it is one of the recording's."""
        if self._recorder is None or sim.steps % self._every:
            return
        try:
            self._recorder.append_simulation(sim)
        except Exception as error:  # noqa: BLE001 - a full disk must not stop the run
            self._failed(error)

    def finish(self) -> None:
        """Finish the recording, if one is being made (every frame queued so far is written)."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except Exception as error:  # noqa: BLE001 - the last frames failed: say so, run on
            self.error = f"recording ended with an error: {_describe(error)}"

    @property
    def progress(self) -> tuple[str, int] | None:
        """(path, frames appended) while recording, else None."""
        recorder = self._recorder
        return None if recorder is None else (str(recorder.path), recorder.frames_appended)

    def stats(self) -> dict | None:
        """``Recorder.stats()`` while recording: frames narrowed on the device, and how often the
        run waited for the disk."""
        recorder = self._recorder
        return None if recorder is None else recorder.stats()

    def _failed(self, error: Exception) -> None:
        recorder, self._recorder = self._recorder, None
        self.error = f"recording stopped: {_describe(error)}"
        if recorder is not None:
            try:
                recorder.close()
            except Exception:  # noqa: BLE001 - the first error is the one to show
                pass


def _describe(error: Exception) -> str:
    return str(error) if isinstance(error, (OrreryError, OSError)) and str(error) else \
        f"{type(error).__name__}: {error}"
