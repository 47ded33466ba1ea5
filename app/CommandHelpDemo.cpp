// The help of make-random (bench's checkpoints) and the demo model's commands (Usage.h); the
// model, steering and evaluation commands are in CommandHelp.cpp.
#include "CommandHelpParts.h"

namespace kvsteer {

void addDemoCommandHelps(std::vector<CommandHelp>& all) {
    all.push_back(command("make-random", "Writes a model of a preset's real shapes with random weights (for bench)",
                   {"--preset llava-1.5-7b|llava-1.5-13b|llava-tinyllama-1.1b|llava-micro|llama-3.1-8b|qwen2.5-vl-7b|qwen3-vl-2b|qwen3-vl-4b|qwen3-vl-8b|llava-v1.6-vicuna-7b|llava-v1.6-mistral-7b",
                    "--out DIR [--dtype f32|f16|bf16] [--tokenizer-from DIR] [--seed S] [--shard-gb G]"},
                   {{"",
                     {{"--preset llava-1.5-7b|llava-1.5-13b|llava-tinyllama-1.1b|llava-micro|llama-3.1-8b|qwen2.5-vl-7b|qwen3-vl-2b|qwen3-vl-4b|qwen3-vl-8b|llava-v1.6-vicuna-7b|llava-v1.6-mistral-7b",
                       "the shapes to copy", "required"},
                      {"--dtype f32|f16|bf16", "the weights' dtype on disk", "f16"},
                      {"--out DIR", "the model directory to write", "required"},
                      {"--tokenizer-from DIR",
                       "where the tokenizer's files come from; llama-3.1-8b needs a directory with Llama-3's "
                       "tokenizer.json (a Llama-3 checkpoint's, or ../shared/reference/tiny-llama3); qwen2.5-vl-7b and the qwen3-vl "
                       "presets a Qwen VL directory's vocab.json and merges.txt (../shared/reference/tiny-qwen25vl, tiny-qwen3vl)",
                       "the bundled demo model's, for the LLaVA and LLaVA-NeXT presets"},
                      {"--seed S", "the random weights' seed", "0"},
                      {"--shard-gb G", "the largest shard, in GiB (> 0)", "2"}}}}));

    all.push_back(command("demo-steer", "Runs the demo model's red->blue flip, painted on the circle vs on background",
                   {"[--model DIR] [--pairs K] [--n N] [--seed S] [--ck LIST] [--cv LIST]",
                    "[--mode edit-only|propagate|both] [--save-vectors FILE]"},
                   {{"",
                     {{"--pairs K", "image pairs the red->blue vectors are extracted from (extraction seed 0)", "16"},
                      {"--n N", "held-out scenes measured per setting", "100"},
                      {"--seed S", "the held-out scenes' seed (0 is the extraction's and refused)", "1"},
                      {"--ck LIST", "c_k values, comma-separated, one table row each", "0"},
                      {"--cv LIST", "c_v values, comma-separated, one table row each", "8"},
                      {"--mode edit-only|propagate|both", "which modes are measured", "both"},
                      {"--save-vectors FILE",
                       "also write the extracted vectors as a vector file (suggesting add and the first c_k and c_v)",
                       "none"}}},
                    modelGroup()},
                   kModelNote, "", true));

    all.push_back(command("train-demo", "Trains the bundled demo model",
                   {"--out DIR --tokenizer-dir DIR [--minutes M] [--steps N] [--seed S] [--batch B]",
                    "[--lr X] [--threads N] [--validate-every N] [--log-every N] [--curriculum A,B,C]",
                    "[--dtype f32|f16] [--vision-steps N] [--vision-lr X] [--vision-fraction F]",
                    "[--vision-lr-scale X] [--grounding W] [--sizes 9 ints] [--types LIST]"},
                   {{"",
                     {{"--out DIR", "the llava-hf model directory to write", "required"},
                      {"--tokenizer-dir DIR", "holds spm_train's tokenizer.model (its JSON files are written there if absent)",
                       "required"},
                      {"--minutes M", "the wall-clock budget; training stops when it is spent",
                       "60 without --steps, else none"},
                      {"--steps N", "optimizer steps; 0 = as many as the budget allows", "0"},
                      {"--seed S", "the training scenes', init's and order's seed", "0"},
                      {"--batch B", "images per optimizer step, each with all its questions", "8"},
                      {"--lr X", "the peak learning rate (cosine schedule)", "0.002"},
                      {"--threads N", "CPU threads", "1"},
                      {"--validate-every N", "steps between validations (teacher-forced exact match); 0 = never", "200"},
                      {"--log-every N", "steps between progress lines", "10"},
                      {"--curriculum A,B,C",
                       "fractions of the run in [0,1]: one shape until A, at most two until B, big shapes shrinking "
                       "until C",
                       "0.05,0.15,0.1"},
                      {"--dtype f32|f16", "model.safetensors' dtype on disk", "f32"},
                      {"--vision-steps N", "stage 0, the vision tower's pretraining: its steps", "6000"},
                      {"--vision-lr X", "stage 0's peak learning rate", "0.002"},
                      {"--vision-fraction F", "the share of --minutes stage 0 may use at most", "0.25"},
                      {"--vision-lr-scale X", "stage 1: the tower's learning rate relative to the rest; 0 freezes it", "0"},
                      {"--grounding W", "the grounding loss's weight (attention mass on the answer's cells); 0 = off", "1"},
                      {"--sizes LIST",
                       "9 integers: vision hidden,layers,heads,mlp, text hidden,layers,heads,kv heads,mlp",
                       "64,4,2,128,128,4,4,2,352"},
                      {"--types LIST",
                       "train only these question types, comma-separated: color, shape, count, exists, position, describe",
                       "all six"}}}},
                   0, "", true));

    all.push_back(command("eval-demo", "Measures the demo model's accuracy on fresh ShapeWorld scenes",
                   {"[--model DIR] [--n N] [--seed S] [--max-new-tokens N] [--threads N] [--json]",
                    "[--show-failures K]"},
                   {{"",
                     {{"--model DIR", "the demo model's directory", kDemoModel},
                      {"--n N", "scenes (each with its questions)", "500"},
                      {"--seed S", "the eval scenes' seed, < 2^30 (never a training scene)", "0"},
                      {"--max-new-tokens N", "each answer's budget; a cut-off answer counts as wrong", "16"},
                      {"--threads N", "threads of the CPU pool; 0 = all cores", "0"},
                      {"--show-failures K", "misses listed after the table", "10"},
                      {"--json", "print one JSON object: per question type and overall accuracy", ""}}}},
                   kModelNote, "", true));

    all.push_back(command("demo-corpus", "Writes the text spm_train learns the demo tokenizer from",
                   {"--out FILE [--scenes N] [--seed S]"},
                   {{"",
                     {{"--out FILE", "the text file to write", "required"},
                      {"--scenes N", "scenes described", "20000"},
                      {"--seed S", "the scenes' seed", "0"}}}},
                   0, "", true));

    all.push_back(command("demo-images", "Writes a few ShapeWorld PNGs, e.g. the red/blue circle pair",
                   {"--out DIR [--pair-seed S --pair-index N]"},
                   {{"",
                     {{"--out DIR", "red_circle.png, blue_circle.png (the circle's grid mask in index.json), scene_0..3.png",
                       "required"},
                      {"--pair-seed S", "which steering scene becomes the circle pair: its seed", "0"},
                      {"--pair-index N", "and its index", "0"}}}},
                   0, "", true));

    all.push_back(command("demo-study",
                   "Writes a study suite on fresh ShapeWorld scenes, each with one red circle and the mask on it:\n"
                   "target sets (\"What color is the circle?\" -> blue, \"Is there a blue circle?\" -> yes), preserve sets\n"
                   "(the other shapes' existence and colours, the count, \"Is there a red circle?\", a caption scored\n"
                   "with CHAIR) and red/blue circle pairs for masked-pair vectors",
                   {"--out DIR [--images N] [--seed S] [--pairs K]"},
                   {{"",
                     {{"--out DIR", "DIR/images/, one JSONL per set, DIR/suite.json, DIR/pairs/ (paths relative to DIR)", "required"},
                      {"--images N", "scenes, >= 1", "40"},
                      {"--seed S", "the scenes' seed", "7"},
                      {"--pairs K", "red/blue circle pairs written to DIR/pairs (0: none)", "8"}}}},
                   0, "", true));

    all.push_back(command("demo-pope",
                   "Writes a POPE-style set on fresh ShapeWorld scenes: per scene one \"Is there a <colour> <shape>?\" per\n"
                   "shape (yes) and as many absent ones (no: random, popular, adversarial), each with a box",
                   {"--out DIR [--images N] [--seed S]"},
                   {{"",
                     {{"--out DIR", "DIR/images/scene_<i>.png and DIR/pope.jsonl (image paths relative to DIR)", "required"},
                      {"--images N", "scenes, >= 1", "50"},
                      {"--seed S", "the scenes' seed", "1"}}}},
                   0, "", true));
}

} // namespace kvsteer
