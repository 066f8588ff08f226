"""``python -m orrery.app.cli``: the ``orrery`` command (what MPI launchers and tests start)."""

import sys

from . import main

sys.exit(main())
