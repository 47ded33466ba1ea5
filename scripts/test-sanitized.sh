#!/usr/bin/env bash
# The whole CTest suite built with AddressSanitizer + UndefinedBehaviorSanitizer (into
# build-sanitized/) and run. Only kvsteer's own code is instrumented: libtorch, Qt and the system
# libraries are used as installed. Any report fails its test (UBSan does not recover, ASan aborts).
# Reports inside third-party code are suppressed one by one in scripts/sanitizers/*.supp, each
# entry with the reason; kvsteer's own reports are fixed, never suppressed.
#
#   scripts/test-sanitized.sh [extra cmake arguments]
# KVSTEER_JOBS sets the build's parallelism (default 2); CTEST_ARGS is passed to ctest
# (e.g. CTEST_ARGS="-R test_mask").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/install-deps.sh

flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1"
cmake -S . -B build-sanitized -DCMAKE_BUILD_TYPE=Release -DKVSTEER_BENCH=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" "$@"
cmake --build build-sanitized -j"${KVSTEER_JOBS:-2}"

supp="$root/scripts/sanitizers"
export ASAN_OPTIONS="abort_on_error=1:strict_string_checks=1:check_initialization_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
cd build-sanitized
# ASan makes every test slower (several times for the kernels): a longer per-test limit.
QT_QPA_PLATFORM=offscreen ctest --output-on-failure --timeout 3000 ${CTEST_ARGS:-}
