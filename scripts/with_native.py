"""Runs ``orrery`` with ``orrery._native`` loaded from another build of it, so that two builds of
the native module can be timed in turns in one session (A/B interleaved):

    python scripts/with_native.py BUILD/native/_native.cpython-311-x86_64-linux-gnu.so \\
        bench direct --solver cpu-direct --n 8192 --trials 9 --json a1.json

The Python packages are those installed; only the extension module is replaced.
"""

import importlib.util
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
path = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("orrery._native", path)
native = importlib.util.module_from_spec(spec)
sys.modules["orrery._native"] = native
spec.loader.exec_module(native)

from orrery.app.cli import main  # noqa: E402 (after the module it must find is in place)

sys.exit(main())
