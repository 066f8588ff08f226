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
  # 750 frames reach the tidal tails (the galaxies pass at step ~520); the picture is the frame
  # whose tails reach furthest, with the panel folded to its title bar.
  frames=750
  echo "Now the viewer, off-screen under Xvfb: $frames frames of the same collision, then a screenshot."
  # The viewer's statistics (a JSON line every half second) give a progress line every 10 s.
  stats=$(mktemp)
  trap 'rm -f "$stats"' EXIT
  xvfb-run -a -s '-screen 0 1280x720x24' \
    orrery-viewer --scenario galaxy-collision --n 30000 --frames "$frames" --panel collapsed \
    --screenshot-at longest-tails --screenshot galaxy-collision.png --stats "$stats" &
  viewer=$!
  waited=0
  while kill -0 "$viewer" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    [ $((waited % 10)) -eq 0 ] || continue
    last=$(tail -n 1 "$stats")
    if [ -z "$last" ]; then
      echo "  viewer: starting (building the galaxies, opening the window), ${waited} s"
    else
      # the record read as JSON (its keys' order is not part of it)
      read -r drawn fps < <(python -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["frames"], round(r["render_fps"]))' "$last" 2>/dev/null) || true
      printf '  viewer: frame %s of %s, %s fps, %s s\n' "${drawn:-0}" "$frames" "${fps:-0}" "$waited"
    fi
  done
  wait "$viewer"
  echo "Saved the viewer's picture of the collision as galaxy-collision.png"
fi
