#!/usr/bin/env bash
# Configures and builds kvsteer into build/ (Release, ccache, 2 jobs). Extra arguments go to cmake,
# e.g. scripts/build.sh -DKVSTEER_GUI=OFF. KVSTEER_TARGETS="kvsteer bench" builds only those
# (./run.sh builds the apps alone; scripts/test.sh builds everything).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
# shellcheck disable=SC2086  # the targets are words
cmake --build build -j"${KVSTEER_JOBS:-2}" ${KVSTEER_TARGETS:+--target $KVSTEER_TARGETS}
