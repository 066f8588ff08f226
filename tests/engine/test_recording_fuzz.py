"""Fuzzing the reader: truncated files, flipped bits and h5py-edited metadata, from a cleanly
closed recording and from one whose writer was killed. Every case must end within seconds in
either a readable recording or a RecordingError, within bounded memory: never a hang, a crash,
another exception or a huge allocation. The files are read in a child process
(recording_fuzz_cases.py) under a per-case timeout and an address-space limit."""

import importlib.util
import json
import select
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

WORKER = Path(__file__).with_name("recording_fuzz_cases.py")
_spec = importlib.util.spec_from_file_location("recording_fuzz_cases", WORKER)
fuzz_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_cases)
CASE_SECONDS = 3.0  # a clear error within seconds, on a busy 2-core CI machine
HANG_SECONDS = 15.0
PEAK_BYTES = 320 << 20
SIGNATURES = (b"HDF", b"OHDR", b"OCHK", b"FRHP", b"FHDB", b"FHIB", b"FSHD", b"FSSE", b"BTHD",
              b"BTIN", b"BTLF", b"EAHD", b"EAIB", b"EASB", b"EADB", b"GCOL", b"TREE", b"HEAP",
              b"SNOD")


def metadata_offsets(path: Path, swmr: bool) -> np.ndarray:
    """Byte offsets of the file outside its datasets' raw data: where HDF5 keeps its metadata."""
    size = path.stat().st_size
    is_data = np.zeros(size, bool)
    with h5py.File(path, "r", swmr=swmr) as file:
        for dataset in file.values():
            if dataset.chunks is None:
                offset = dataset.id.get_offset()
                if offset is not None:
                    is_data[offset:offset + dataset.id.get_storage_size()] = True
            else:
                for index in range(dataset.id.get_num_chunks()):
                    info = dataset.id.get_chunk_info(index)
                    is_data[info.byte_offset:info.byte_offset + info.size] = True
    return np.flatnonzero(~is_data)


def cases(bases: Path) -> list[dict]:
    rng = np.random.default_rng(18)
    specs = [{"base": "clean.h5", "edit": name} for name in fuzz_cases.EDITS]
    for base, swmr in (("clean.h5", False), ("killed.h5", True)):
        path = bases / base
        data = path.read_bytes()
        size = len(data)
        cuts = {0, 1, 7, 8, 9, 40, 47, 48, 100, 500, 1000, 2000, 4000, size - 1, size - 100}
        cuts |= set(rng.integers(0, size, 25).tolist())
        specs += [{"base": base, "truncate": int(cut)} for cut in sorted(cuts) if 0 <= cut < size]
        offsets = set()
        for signature in SIGNATURES:  # the fields right behind each structure's signature
            start = data.find(signature)
            while start >= 0:
                offsets |= set(range(start, min(start + len(signature) + 24, size), 3))
                start = data.find(signature, start + 1)
        metadata = metadata_offsets(path, swmr)
        offsets |= set(rng.choice(metadata, 120, replace=False).tolist())
        for offset in sorted(offsets):
            mask = 0xFF if offset % 2 else 1 << (offset % 8)
            specs.append({"base": base, "flip": [int(offset), mask]})
    return specs


class Child:
    """The reading process; restarted after a case that hangs."""

    def __init__(self, bases: Path, scratch: Path):
        self.arguments = [sys.executable, str(WORKER), str(bases), str(scratch)]
        self.process = None

    def run(self, spec: dict) -> dict | None:
        if self.process is None:
            self.process = subprocess.Popen(self.arguments, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE)
        self.process.stdin.write((json.dumps(spec) + "\n").encode())
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], HANG_SECONDS)
        line = self.process.stdout.readline() if ready else b""
        if not line:
            self.close()
            return None
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None


def test_damaged_files_give_a_clear_error_within_seconds_and_bounded_memory(tmp_path):
    bases = tmp_path / "bases"
    bases.mkdir()
    fuzz_cases.make_clean(bases / "clean.h5")
    fuzz_cases.make_killed(bases / "killed.h5")
    specs = cases(bases)
    assert len(specs) > 300
    child = Child(bases, tmp_path / "case.h5")
    failures, outcomes = [], []
    try:
        for spec in specs:
            result = child.run(spec)
            if result is None:
                failures.append((spec, f"no answer within {HANG_SECONDS} s (hang or crash)"))
                continue
            outcome = result["outcome"]
            outcomes.append(outcome)
            if outcome != "ok" and not outcome.startswith("RecordingError: "):
                failures.append((spec, outcome))
            elif result["seconds"] > CASE_SECONDS:
                failures.append((spec, f"took {result['seconds']:.1f} s: {outcome}"))
            elif result["peak_bytes"] > PEAK_BYTES:
                failures.append((spec, f"peak memory {result['peak_bytes'] / 2**20:.0f} MiB"))
    finally:
        child.close()
    assert not failures, f"{len(failures)} of {len(specs)} cases failed, e.g.\n" + "\n".join(
        f"{spec}: {why}" for spec, why in failures[:8])
    # The fuzz reaches the reader's checks, not just HDF5's: most cases are refused, with a
    # message naming the file.
    refused = [outcome for outcome in outcomes if outcome != "ok"]
    assert len(refused) > len(specs) // 2
    assert all("case.h5" in outcome for outcome in refused)
