#!/usr/bin/env bash
# Trains the bundled demo model from scratch, in one command:
#   ShapeWorld text corpus -> spm_train (SentencePiece BPE) -> kvsteer train-demo -> resources/demo-model
# then writes resources/demo-images and prints eval-demo on 500 fresh scenes.
#
# Needs: a built kvsteer (cmake --build build --target kvsteer) and spm_train (Debian: sentencepiece).
# Environment overrides: BUILD (build dir), OUT (model dir), MINUTES (wall-clock training budget),
# STEPS (optimizer steps; the schedule follows whichever of STEPS/MINUTES runs out first), SEED,
# VISION_STEPS, VISION_FRACTION (stage 0), VISION_LR_SCALE, BATCH (images per step), THREADS (training threads; 1 = deterministic and polite), EVAL_N.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
KVSTEER="${KVSTEER:-$BUILD/app/kvsteer}"
OUT="${OUT:-$ROOT/resources/demo-model}"
IMAGES="${IMAGES:-$ROOT/resources/demo-images}"
MINUTES="${MINUTES:-60}"
STEPS="${STEPS:-0}"
SEED="${SEED:-4}"                      # the shipped model's seed (seeds differ in which skill they learn last)
BATCH="${BATCH:-4}"
THREADS="${THREADS:-1}"
EVAL_N="${EVAL_N:-500}"
VOCAB="${VOCAB:-450}"
VISION_STEPS="${VISION_STEPS:-6000}"        # stage 0 (vision tower pretraining): at most this many steps
VISION_FRACTION="${VISION_FRACTION:-0.25}"   # ... and at most this share of MINUTES
VISION_LR_SCALE="${VISION_LR_SCALE:-0}"     # stage 1: the tower's learning rate relative to the rest (0 = frozen)

command -v spm_train >/dev/null || { echo "spm_train not found (apt install sentencepiece)" >&2; exit 1; }
[ -x "$KVSTEER" ] || { echo "$KVSTEER not found: build it first (cmake --build build --target kvsteer)" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kvsteer-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# Train from a private copy of the binary: a rebuild during the run cannot pull it away.
cp "$KVSTEER" "$WORK/kvsteer"
K="$WORK/kvsteer"

echo "== 1/5 corpus"
"$K" demo-corpus --out "$WORK/corpus.txt" --scenes 20000 --seed 0

echo "== 2/5 tokenizer (spm_train, BPE, $VOCAB pieces, byte fallback)"
mkdir -p "$WORK/tokenizer"
spm_train --input="$WORK/corpus.txt" --model_prefix="$WORK/tokenizer/tokenizer" \
  --model_type=bpe --vocab_size="$VOCAB" --hard_vocab_limit=false \
  --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true \
  --byte_fallback=true --split_digits=true --allow_whitespace_only_pieces=true --character_coverage=1.0 \
  --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=1 > "$WORK/spm_train.log" 2>&1 \
  || { cat "$WORK/spm_train.log" >&2; exit 1; }
rm -f "$WORK/tokenizer/tokenizer.vocab"

echo "== 3/5 training (budget ${MINUTES} min, steps ${STEPS}, seed ${SEED}, batch ${BATCH}, threads ${THREADS})"
"$K" train-demo --out "$WORK/model" --tokenizer-dir "$WORK/tokenizer" --minutes "$MINUTES" --steps "$STEPS" \
  --seed "$SEED" --batch "$BATCH" --threads "$THREADS" \
  --vision-steps "$VISION_STEPS" --vision-fraction "$VISION_FRACTION" --vision-lr-scale "$VISION_LR_SCALE" 2>&1 | tee "$WORK/train.log"
cp "$WORK/train.log" "$WORK/model/training_log.txt"

echo "== 4/5 install into $OUT"
rm -rf "$OUT.new"
cp -r "$WORK/model" "$OUT.new"
rm -rf "$OUT"
mv "$OUT.new" "$OUT"
du -sh "$OUT"
"$K" demo-images --out "$IMAGES" --pair-seed 1 --pair-index 2   # the pair the README and the studio test use

echo "== 5/5 eval-demo (${EVAL_N} fresh scenes, eval seed 0)"
"$K" eval-demo --model "$OUT" --n "$EVAL_N" --seed 0 --threads "$THREADS" | tee "$OUT/eval.txt"
