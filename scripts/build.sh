#!/usr/bin/env bash
# Configures and builds kvsteer into build/ (Release, ccache, 2 jobs). Extra arguments go to cmake,
# e.g. scripts/build.sh -DKVSTEER_GUI=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"${KVSTEER_JOBS:-2}"
