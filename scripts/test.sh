#!/usr/bin/env bash
# The one command that runs all tests: installs what is missing, builds, runs CTest.
# Tests read the reference data from ../shared/reference (beside the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
cd build
QT_QPA_PLATFORM=offscreen ctest --output-on-failure --timeout 1500
