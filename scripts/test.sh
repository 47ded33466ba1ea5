#!/usr/bin/env bash
# The one command that runs all tests: installs what is missing, builds, runs CTest.
# Tests read the reference data from ../shared/reference (beside the checkout). Then the fuzz
# smoke: every libFuzzer target (fuzz/, built with clang into build-fuzz/) over its committed
# corpus plus 2000 new runs, so a parser regression fails CI too.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
cd build
# Two tests at a time (KVSTEER_TEST_JOBS): most of a test's time is starting processes, loading
# models and waiting on files, so the two cores are busy more of the time. Each test has its own
# home (tests/CMakeLists.txt); the kernels' bits do not depend on what else runs.
QT_QPA_PLATFORM=offscreen ctest --output-on-failure --timeout 1500 -j"${KVSTEER_TEST_JOBS:-2}"
cd ..
scripts/fuzz.sh --smoke
