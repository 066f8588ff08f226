#!/usr/bin/env bash
# The main job: the galaxy-collision demo in the viewer. Without a display it runs the same demo
# headless (progress bar and summary), then renders the viewer off-screen under Xvfb and saves a
# screenshot, so every machine shows something.
set -euo pipefail
source "$(dirname "$0")/_env.sh"
use_orrery_env

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec orrery-viewer --scenario galaxy-collision "$@"
fi

echo "No display: running the galaxy-collision demo headless."
orrery run --scenario galaxy-collision --n 30000 --steps 600
if command -v xvfb-run >/dev/null; then
  xvfb-run -a -s '-screen 0 1280x720x24' \
    orrery-viewer --scenario galaxy-collision --n 30000 --frames 600 --screenshot galaxy-collision.png
  echo "Saved the viewer's picture of the collision as galaxy-collision.png"
fi
