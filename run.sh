#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install the dependencies, build, and start kvsteer
# on the bundled demo model (the studio when a display is available, else the CLI).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
# The apps only: the test executables are built by scripts/test.sh.
KVSTEER_TARGETS="kvsteer kvsteer-studio bench" scripts/build.sh
if [ -x build/app/kvsteer-studio ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
  exec build/app/kvsteer-studio "$@"
fi
image=resources/demo-images/red_circle.png
if [ -f "$image" ]; then
  exec build/app/kvsteer generate --image "$image" --prompt "What color is the circle?" "$@"
fi
exec build/app/kvsteer inspect "$@"
