#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan, into build-fuzz/) and runs each one
# over its committed seed corpus (fuzz/corpus/<target>) plus new inputs.
#
#   scripts/fuzz.sh [--seconds N | --runs N] [--smoke] [--make-seeds] [TARGET...]
#
#   --seconds N   fuzz each target for N seconds
#   --runs N      fuzz each target for N executions (default 10000); with --seconds, whichever
#                 comes first
#   --smoke       what CI runs: every target over its corpus plus 2000 new runs (seed 1)
#   --make-seeds  rewrite fuzz/corpus/ from the project's own writers, then stop
#   TARGET...     only these (names without fuzz_, e.g. image mask); default all
#
# Every run uses -timeout=10 and -rss_limit_mb=2048: a crash, a sanitizer report, an exception
# other than kvsteer::Error, a run over 10 s or 2 GB fails the script; the input is kept in
# build-fuzz/artifacts/<target>/. New corpus entries go to build-fuzz/corpus/<target>/ (not
# committed). The per-target numbers (executions, coverage, features) end up in
# build-fuzz/fuzz-summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=()
make_seeds=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) mode+=(-max_total_time="$2"); shift 2 ;;
    --runs) mode+=(-runs="$2"); shift 2 ;;
    --smoke) mode=(-runs=2000 -seed=1); shift ;;   # a fixed seed: CI runs the same inputs every time
    --make-seeds) make_seeds=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

all=(safetensors shard_index model_config sentencepiece_model tokenizer_json sentencepiece_text detokenizer
     image mask steering_vectors text_pairs session)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
[ ${#mode[@]} -gt 0 ] || mode=(-runs=10000)

scripts/install-deps.sh   # clang, libFuzzer and the sanitizer runtimes (idempotent)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$root")}"
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S fuzz -B build-fuzz
fi
cmake --build build-fuzz -j"${KVSTEER_JOBS:-2}"

if [ "$make_seeds" = 1 ]; then
  rm -rf fuzz/corpus && mkdir -p fuzz/corpus
  build-fuzz/fuzz_make_seeds fuzz/corpus
  [ -x build-fuzz/fuzz_make_session_seeds ] && build-fuzz/fuzz_make_session_seeds fuzz/corpus/session
  # stb decodes four formats; the project writes PNG, ImageMagick converts its seed to the rest.
  src=fuzz/corpus/image/gradient-rgb.png
  convert "$src" -quality 80 fuzz/corpus/image/gradient.jpg
  convert "$src" -colorspace Gray -quality 90 -interlace JPEG fuzz/corpus/image/progressive-grey.jpg
  convert "$src" BMP3:fuzz/corpus/image/gradient-24.bmp
  convert "$src" -alpha on BMP:fuzz/corpus/image/gradient-32.bmp
  convert "$src" -colors 16 fuzz/corpus/image/gradient.gif
  convert "$src" -depth 16 -colorspace Gray fuzz/corpus/image/grey16.png
  convert "$src" -alpha on -colors 8 PNG8:fuzz/corpus/image/palette.png
  du -sh fuzz/corpus/*
  exit 0
fi

# Reports from inside third-party code are suppressed one by one in scripts/sanitizers/*.supp
# (shared with scripts/test-sanitized.sh), each with why.
# allocator_release_to_os_interval_ms: freed memory goes back to the OS, so -rss_limit_mb measures
# what an input holds, not what ASan's allocator kept from earlier large images.
export ASAN_OPTIONS="abort_on_error=1:allocator_release_to_os_interval_ms=500:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/scripts/sanitizers/ubsan.supp:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitizers/lsan.supp:${LSAN_OPTIONS:-}"

summary=${KVSTEER_FUZZ_SUMMARY:-build-fuzz/fuzz-summary.md}
{
  echo "| target | executions | seconds | cov (edges) | ft (features) | corpus | peak RSS MB | result |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$summary"
failed=()
for t in "${targets[@]}"; do
  exe=build-fuzz/fuzz_$t
  if [ ! -x "$exe" ]; then
    echo "fuzz.sh: $exe was not built (session needs Qt 6)" >&2
    failed+=("$t")
    continue
  fi
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  log=build-fuzz/fuzz-$t.log
  echo "== fuzz_$t ${mode[*]}"
  start=$(date +%s)
  rc=0
  "$exe" "build-fuzz/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" "${mode[@]}" \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$t/" > "$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
  rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  corp=$(echo "$last" | grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' | sed 's/corp: //' || echo "?")
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (rc $rc, see $log)"
    failed+=("$t")
    tail -40 "$log"
  fi
  echo "| $t | $execs | $secs | $cov | $ft | $corp | $rss | $result |" >> "$summary"
  echo "   $execs runs in ${secs}s, cov $cov ft $ft: $result"
done
cat "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in: ${failed[*]} (inputs in build-fuzz/artifacts/)" >&2
  exit 1
fi
