// Every command's help: its synopsis, purpose and options list (Usage.h). The option groups that
// several commands share (model, prompt, steering plan, decoding) are written once here, as the
// parsers share them (CliOptions.cpp, PlanFlags.cpp). Each default is the one the command's code
// applies; kvsteer checks at every --help that each option its parser declares is listed.
#include "CommandHelpParts.h"

namespace kvsteer {

const char* const kDemoModel = "the bundled demo model, resources/demo-model";

OptionGroup modelGroup(const std::string& modelMeaning, const std::string& modelDefault) {
    return {"Model",
            {{"--model DIR", modelMeaning, modelDefault},
             {"--dtype auto|f32|bf16|f16",
              "the weights' dtype (float32, bfloat16, float16 too): on CPU how they are stored (compute is float32), on "
              "CUDA the storage and compute dtype; auto keeps each tensor as the checkpoint stores it (CUDA: the checkpoint's "
              "dtype, so a float16 file stays float16)",
              "auto"},
             {"--device cpu|cuda[:N]", "where the model runs", "cpu"},
             {"--threads N", "threads of the CPU pool; 0 = all cores", "0"},
             {"--system TEXT",
              "the system message of a chat template (Qwen, Llama-3); refused for the families without one",
              "the checkpoint's: Qwen2's own, none for Qwen3-VL and Llama-3"},
             {"--max-pixels N",
              "Qwen2-VL, Qwen2.5-VL and Qwen3-VL: the image's pixel budget; a larger image is scaled down to fit, so it caps "
              "the image's tokens (N / 784; Qwen3-VL N / 1024) and the memory the model is checked for; refused for the other families",
              "preprocessor_config.json's max_pixels"}}};
}

namespace {

using Options = std::vector<OptionHelp>;

// --image, --prompt, --raw-prompt as generate, steer, sweep and heatmaps read them.
OptionGroup inputGroup(const std::string& imageFallback, const std::string& imageMeaning = "the image asked about") {
    return {"Input",
            {{"--image FILE", imageMeaning + ": PNG, JPEG, BMP, or a GIF's first frame", imageFallback},
             {"--prompt TEXT", "the question, laid out in the template of the model's family, listed below", "required"},
             {"--raw-prompt",
              "use --prompt as is, without the template: it must then contain \"<image>\" exactly once with an image "
              "(none without)",
              ""}}};
}

// planOptionNames() (but --image/--prompt) and --propagate, read by planOptionsFromFlags into
// core's PlanOptions; what is unset falls back to the vector file's suggestion, then the default.
Options planOptions(const std::string& maskFallback = "the vector file's mask, else every image cell at 1; without an image "
                                                      "tokens:last") {
    return {
        {"--vectors FILE",
         "the steering vectors: a vector file of `extract` or `vectors import`, made for this model (its family and "
         "grid); the operators add, norm and prerope need one",
         "none"},
        {"--mask MASK", "the strength painted on each cell of the grid (MASK forms below)", maskFallback},
        {"--layers LAYERS",
         "the layers edited: all, early, middle or late (thirds of the layers), A-B or A; items joined by commas "
         "are their union (early,10-12)",
         "the vector file's suggestion, else all"},
        {"--heads LIST", "the KV heads edited on every chosen layer, comma-separated indices",
         "every head, or the vector file's head mask"},
        {"--ck X", "c_k, the strength on the keys: one number, or one per layer, comma-separated",
         "the vector file's suggestion, else 1"},
        {"--cv Y", "c_v, the strength on the values, as --ck", "the vector file's suggestion, else 1"},
        {"--operator add|norm|prerope|scale|spotlight|ablate",
         "how a cached vector x at a cell of strength s changes, c being c_k on keys and c_v on values, D the "
         "steering vector: add x += s c D; norm the same, then rescaled to x's norm; prerope keys get D rotated to the "
         "position (pre-RoPE vectors), values as add; scale x *= 1 + s c; spotlight no edit, s c_k is added to the "
         "cells' attention logits while decoding; ablate x += s c (target - x), target per --ablate-to",
         "the vector file's suggestion, else add"},
        {"--ablate-to mean|zero", "ablate's target: the mean over the visual span, or zero", "mean"},
        {"--propagate",
         "recompute the prompt's text after the edit against the edited cache, so the prompt sees the steered image "
         "(mode propagate); without it the text keeps what it saw of the unsteered image (edit-only)",
         ""},
    };
}

OptionGroup planGroup(Options options) {
    return {"Steering plan (what is unset comes from the vector file's suggestions, else the default)", std::move(options)};
}

// generationOptionNames(): the answer's budget and sampling.
OptionGroup decodingGroup(const std::string& maxNewTokens, const std::string& budget = "the answer's budget in tokens, cut "
                                                                                        "(with a note) to what the model's "
                                                                                        "context holds") {
    return {"Decoding",
            {{"--max-new-tokens N", budget, maxNewTokens},
             {"--seed S", "the sampler's seed", "0"},
             {"--temperature T", "the sampling temperature; 0 decodes greedily", "0"},
             {"--top-p P", "sample from the smallest set of tokens whose probability reaches P; 1 = no cut", "1"},
             {"--top-k K", "sample among the K most likely tokens; 0 = no limit", "0"}}};
}

// sweep declares the sampling options with the steer options, but its atlas decodes greedily.
OptionGroup greedyDecodingGroup() {
    OptionGroup g = decodingGroup("32", "each answer's budget in tokens, cut (with a note) to what the context holds");
    for (size_t i = 1; i < g.options.size(); ++i) {
        g.options[i].meaning = "accepted with the steer options, unused: the atlas decodes greedily";
        g.options[i].fallback = "greedy";
    }
    return g;
}

// eval: an item's own mask or box wins over --mask, and a session's plan fills what is unset.
Options evalPlan() {
    Options o = planOptions("the session's painted map, else the vector file's mask, else every cell at 1");
    o[1].meaning = "the strength painted on the cells of items without a mask or box of their own (MASK forms below)";
    return o;
}

// heatmaps steers only when asked: without --vectors and --operator the plan edits nothing.
Options heatmapsPlan() {
    Options o = planOptions("the vector file's mask, else every cell at 1");
    o[0].fallback = "none; without --operator too, the plan edits nothing and the maps are the unsteered cache's";
    return o;
}

} // namespace

CommandHelp command(std::string name, std::string purpose, std::vector<std::string> synopsis, std::vector<OptionGroup> groups,
                    unsigned notes, std::string extra, bool demo) {
    return {std::move(name), std::move(purpose), std::move(synopsis), std::move(groups), notes, std::move(extra), demo};
}

namespace {

std::vector<CommandHelp> build() {
    std::vector<CommandHelp> all;

    all.push_back(command("generate", "Answers a question about an image (or a text prompt), streaming the tokens",
                   {"--model DIR [--image FILE] --prompt TEXT [--raw-prompt] [--system TEXT]",
                    "[--max-new-tokens N] [--seed S --temperature T --top-p P --top-k K] [--json]",
                    "[--dump-prefill FILE.safetensors] [--dtype auto|f32|bf16|f16] [--device cpu|cuda]",
                    "[--threads N]"},
                   {inputGroup("none: a text-only prompt"),
                    decodingGroup("64"),
                    {"Output",
                     {{"--json",
                       "print only one JSON object at the end (input_ids, generated_ids, text, stopped_at_eos, "
                       "image_encode_ms, prefill_ms, decode_tokens_per_s); without it the answer streams",
                       ""},
                      {"--dump-prefill FILE.safetensors",
                       "also write the prefill: input_ids, pixel_values, prefill_last_logits and past_key.<l> / "
                       "past_value.<l> [1, H_kv, L, D] of the full prompt",
                       "none"}}},
                    modelGroup()},
                   kModelNote | kPromptNote | kJsonNote));

    all.push_back(command("inspect", "Prints the model's family, architecture, sizes, dtypes and prompt template",
                   {"--model DIR [--image FILE] [--system TEXT] [--dtype auto|f32|bf16|f16] [--device cpu|cuda] [--threads N]"},
                   {{"Image", {{"--image FILE", "also say how this image is laid out: its grid and tokens (LLaVA-NeXT: each view)", "none: the model alone"}}},
                    modelGroup("the model to describe")},
                   kModelNote));

    all.push_back(command("vectors",
                   "Says what a vector file holds (info), or brings vectors made elsewhere in for a model (import; the "
                   "raw format is in docs/FORMAT.md)",
                   {"info FILE",
                    "import RAW.safetensors --model DIR --out FILE [--key-space post|pre] [--operator OP]",
                    "[--ck X] [--cv Y] [--layers LAYERS]"},
                   {{"Subcommands (one of the two)",
                     {{"info FILE", "print the file's model, family, grid, layers, tensors and suggestions", ""},
                      {"import RAW.safetensors",
                       "read steer.keys.<layer> / steer.values.<layer> float32 [H_kv, D] or [H_kv, grid cells, D] and "
                       "an optional steer.mask [grid_h, grid_w], check them against --model and write them with its "
                       "metadata to --out",
                       ""}}},
                    {"Import",
                     {{"--out FILE", "the vector file to write", "required with import"},
                      {"--key-space post|pre",
                       "the space the raw keys are in: post as cached (after RoPE), pre position-free (before RoPE)",
                       "pre with --operator prerope, else post"},
                      {"--operator OP", "the operator the file suggests (add, norm, prerope, scale, spotlight, ablate)",
                       "prerope for pre-RoPE keys, else add"},
                      {"--ck X", "the c_k the file suggests: one number, or one per layer", "1"},
                      {"--cv Y", "the c_v the file suggests", "1"},
                      {"--layers LAYERS", "the layers the file suggests (all, early, middle, late, A-B, joined by commas)",
                       "all"}}},
                    modelGroup("the model the imported vectors are for (import)")},
                   kModelNote));

    all.push_back(command("tokenize",
                   "Runs the model's tokenizer (no weights loaded) and prints one JSON line per text:\n"
                   "{\"text\", \"ids\", \"pieces\"}, each piece its id decoded alone",
                   {"--model DIR (--text TEXT | --jsonl FILE) [--special]"},
                   {{"",
                     {{"--model DIR", "the model whose tokenizer runs", kDemoModel},
                      {"--text TEXT", "one text to tokenize", "required: --text or --jsonl"},
                      {"--jsonl FILE", "one {\"text\": ...} object per line, one output line each", "required: --text or --jsonl"},
                      {"--special",
                       "add what the family adds to a prompt (BOS where it has one); without it the ids are HF's "
                       "tokenizer(text, add_special_tokens=False)",
                       ""}}}},
                   kModelNote));

    all.push_back(command("extract", "Computes steering vectors with a recipe and writes them to a file that names the model, its family and grid",
         {"--model DIR --recipe image-pair|image-pairs|region|text-pairs [--prompt TEXT]",
          "(--image-a FILE --image-b FILE | --image FILE --mask MASK | --pairs FILE.jsonl)",
          "[--raw-prompt] [--pca] [--per-position] [--key-space post|pre]",
          "--out VECTORS.safetensors [--operator OP] [--ck X] [--cv Y] [--layers LAYERS]"},
         {{"Recipe",
           {{"--recipe image-pair|image-pairs|region|text-pairs",
             "image-pair: one pair of images, A - B over the visual positions; image-pairs: the mean over the pairs of "
             "--pairs; region: one image, the painted region's mean minus the rest's; text-pairs: cache steering, "
             "positive - negative at each pair's last token",
             "required"},
            {"--prompt TEXT",
             "the question the images are asked with, in the family's template (below); image-pairs: the prompt of "
             "lines without one; text-pairs: unused",
             "required for image-pair and region"},
            {"--raw-prompt", "use --prompt as is, without the template (it must contain \"<image>\" once)", ""},
            {"--image-a FILE", "image-pair: the image the vectors point toward (PNG, JPEG, BMP, GIF)",
             "required for image-pair"},
            {"--image-b FILE", "image-pair: the image they point away from", "required for image-pair"},
            {"--image FILE", "region: the image", "required for region"},
            {"--mask MASK", "region: the painted region (MASK forms below)", "required for region"},
            {"--pairs FILE.jsonl",
             "image-pairs: one {\"image_a\": PATH, \"image_b\": PATH, \"prompt\"?: TEXT, \"mask\"?: MASK} per line, "
             "paths relative to the file's folder (resources/examples/red-to-blue/pairs.jsonl); text-pairs: one "
             "{\"positive\": TEXT, \"negative\": TEXT} per line, each a full prompt used as is",
             "required for image-pairs and text-pairs"},
            {"--pca",
             "the first principal direction of the individual differences instead of their mean (per position over "
             "all pairs for images, per pair for text), aligned with the mean and scaled to its length",
             ""},
            {"--per-position", "keep one vector per grid cell ([H_kv, cells, D]) instead of one per head ([H_kv, D])", ""},
            {"--key-space post|pre", "keys as cached (post: after RoPE) or rotated back to position-free (pre)",
             "pre with --operator prerope, else post"}}},
          {"Output",
           {{"--out VECTORS.safetensors", "the vector file: the model's name, family and grid, the recipe and its inputs",
             "required"},
            {"--operator OP", "the operator the file suggests to steer (add, norm, prerope, scale, spotlight, ablate)",
             "prerope for pre-RoPE keys, else add"},
            {"--ck X", "the c_k the file suggests: one number, or one per layer", "1"},
            {"--cv Y", "the c_v the file suggests", "1"},
            {"--layers LAYERS", "the layers the file suggests (all, early, middle, late, A-B, joined by commas)", "all"}}},
          modelGroup()},
         kModelNote | kPromptNote | kMaskNote,
         "image-pairs: the vector is the mean over the pairs of (A - B) over the visual positions (over the line's\n"
         "mask cells when it gives one); a pair whose two images lay out on different grids (or, with --per-position,\n"
         "a pair on another grid than the first) is an error naming the line.\n"));

    all.push_back(command("steer",
                   "Decodes the answer with and without a steering plan, side by side (on the image's cells, or without an "
                   "image on the prompt's tokens)",
                   {"--model DIR [--image FILE] --prompt TEXT [--raw-prompt] [--vectors FILE] [--mask MASK]",
                    "[--layers LAYERS] [--heads LIST] [--ck X] [--cv Y] [--ablate-to mean|zero] [--propagate]",
                    "[--operator add|norm|prerope|scale|spotlight|ablate] [--max-new-tokens N]",
                    "[--json] [--logprobs K] [--target TEXT] [--python]"},
                   {inputGroup("none: a text-only prompt, steered on its tokens"),
                    planGroup(planOptions()),
                    decodingGroup("32"),
                    {"Output",
                     {{"--json",
                       "print only one JSON object: both answers' ids and text, the plan as applied and where each part "
                       "came from, first_step_kl (KL(unsteered || steered) of the first answer token's distributions, in "
                       "nats), max_new_tokens, edit_ms, decode_ms; without it the plan goes to stderr and the steered "
                       "answer streams",
                       ""},
                      {"--logprobs K",
                       "with --json: for each generated step, the top K (0..1000) tokens of each stream with their "
                       "log-probs; 0 leaves them out",
                       "5"},
                      {"--target TEXT",
                       "the log-prob of TEXT as the answer, teacher-forced, under the unsteered and the steered cache, "
                       "and steered minus unsteered (in --json's object, else printed)",
                       "none"},
                      {"--python",
                       "print the plan as a Python script for Hugging Face transformers instead of running it (the studio's "
                       "Copy as Python: absolute paths, the same max new tokens, both answers printed as JSON lines with "
                       "their ids; docs/steering.md)",
                       ""}}},
                    modelGroup()},
                   kModelNote | kPromptNote | kMaskNote | kJsonNote));

    Options sweepPlan;
    for (const OptionHelp& o : planOptions())
        if (o.flag.rfind("--layers", 0) != 0 && o.flag.rfind("--ck", 0) != 0 && o.flag.rfind("--cv", 0) != 0) sweepPlan.push_back(o);
    all.push_back(command("sweep",
                   "Runs the steering atlas: one row per setting (the product of --layers, --ck and --cv items), each\n"
                   "decoded greedily, --batch cells per forward pass, and marked same / different / degenerate against\n"
                   "the unsteered answer (degenerate: no EOS within the budget, a word repeated, half the tokens\n"
                   "repeats, or an empty answer, where the unsteered answer shows none of it)",
                   {"(the steer options) --ck LIST --cv LIST --layers all|early|middle|late|A-B,...",
                    "[--batch 1..8] [--csv | --json]"},
                   {inputGroup("none: a text-only prompt, steered on its tokens"),
                    {"Settings (their product; one row each)",
                     {{"--layers LIST", "one setting per item: all, early, middle, late (thirds of the layers), A-B or A",
                       "all"},
                      {"--ck LIST", "c_k values, one setting each", "the plan's: the vector file's suggestion, else 1"},
                      {"--cv LIST", "c_v values, one setting each", "the plan's: the vector file's suggestion, else 1"},
                      {"--batch N", "cells per forward pass, 1..8; 1 decodes each cell alone", "8"}}},
                    planGroup(sweepPlan),
                    greedyDecodingGroup(),
                    {"Output (default: a Markdown table, the unsteered answer first)",
                     {{"--csv", "CSV instead: layers,ck,cv,outcome,changed,repetition,distinct,eos,text", ""},
                      {"--json", "one JSON object instead: the unsteered answer and every cell (docs/cli.md)", ""}}},
                    modelGroup()},
                   kModelNote | kPromptNote | kMaskNote | kJsonNote));

    all.push_back(command("heatmaps",
                   "Writes the studio's per-layer heatmaps over the image's grid for a prompt and an optional steering plan",
                   {"--model DIR --image FILE --prompt TEXT [--raw-prompt] (the steer plan options)",
                    "[--metric key-norm|value-norm|key-delta|value-delta|value-cosine|attention]",
                    "[--head H] [--stream steered|unsteered] [--step N] [--view base|crops] [--max-new-tokens N]",
                    "--out FILE.npy|.csv|.png"},
                   {inputGroup("required", "the image whose grid is mapped"),
                    planGroup(heatmapsPlan()),
                    {"Heatmap",
                     {{"--metric key-norm|value-norm|key-delta|value-delta|value-cosine|attention",
                       "key-norm, value-norm: |K|, |V| at each cell; key-delta, value-delta: |steered - unsteered|, the "
                       "edit the plan made; value-cosine: the cosine of V with the layer's steering vector (0 without "
                       "one); attention: the attention the decode step pays each cell",
                       "value-delta"},
                      {"--head H", "mean, or a KV head index (attention: the mean over the query heads that share it)",
                       "mean: the mean over heads"},
                      {"--stream steered|unsteered", "which cache the norm, cosine and attention maps read", "steered"},
                      {"--step N", "the decode step (0, 1, ...) whose attention is written", "the last"},
                      {"--view base|crops", "LLaVA-NeXT: which view of the picture the maps are of", "crops (the grid maps are painted on)"},
                      {"--out FILE",
                       ".npy float32 [layers, grid_h, grid_w], .csv with columns layer,row,col,value, or .png: the "
                       "layers as tiles in rows of 8, each scaled to its own max",
                       "required"}}},
                    decodingGroup("8", "the answer decoded to capture attention (both answers go to stderr)"),
                    modelGroup()},
                   kModelNote | kPromptNote | kMaskNote));

    all.push_back(command("eval",
                   "Scores a steering setting on a dataset (JSONL: POPE's question_id/image/text/label, or\n"
                   "id/image/question/answer with an optional mask or box): every item answered unsteered and steered,\n"
                   "both scored, the differences with paired-bootstrap 95 % intervals and McNemar's p. The image's\n"
                   "prefix is computed once for all its questions (causal families); rows of several questions\n"
                   "decode as one batch. Items go to DIR/items.jsonl as they finish: the same command continues a\n"
                   "stopped or killed run; SIGINT/SIGTERM stop after the current batch",
                   {"--data FILE.jsonl [--images DIR] --out DIR [--metric pope|exact|contains|chair] [--synonyms T] [--batch 2..8]",
                    "[--shard K/N] [--session FILE.kvsession] [--no-prefix-reuse] [--skip-bad] [--json]",
                    "(the steer options: --vectors --mask --layers --heads --ck --cv --operator --ablate-to",
                    "--propagate --max-new-tokens)"},
                   {{"Dataset and run",
                     {{"--data FILE.jsonl", "the items, one JSON object a line", "required"},
                      {"--images DIR", "where the items' relative image and mask paths are found", "the data file's folder"},
                      {"--out DIR",
                       "run.json, items.jsonl (as items finish), summary.json, summary.csv, metrics.svg; a folder of the "
                       "same run is continued",
                       "required"},
                      {"--metric pope|exact|contains|chair",
                       "pope: the answer's yes/no against the label (accuracy, precision, recall, F1, yes ratio); exact: "
                       "the normalised answer equals a reference; contains: a reference occurs in it as whole words; chair: "
                       "a caption's object mentions against the item's \"objects\" (CHAIR_i, CHAIR_s, recall; docs/eval.md)",
                       "pope"},
                      {"--synonyms NAME|FILE", "chair: the synonym table, coco, shapes or a table file", "coco"},
                      {"--batch N", "rows per forward pass, 2..8 (two per question)", "8"},
                      {"--shard K/N", "only the items whose id hashes to K mod N (eval-merge joins the shards)",
                       "0/1: every item"},
                      {"--session FILE.kvsession",
                       "a studio session's plan, painted map and vectors (and its model, without --model); a plan "
                       "option given as well wins over the session's value",
                       "none"},
                      {"--no-prefix-reuse", "compute each question's image prefix anew instead of once per image", ""},
                      {"--skip-bad",
                       "record bad lines and items in the output and evaluate the rest, instead of stopping at the first",
                       ""},
                      {"--json", "print the summary as one JSON object instead of the table", ""}}},
                    planGroup(evalPlan()),
                    decodingGroup("32", "each answer's budget in tokens"),
                    modelGroup("the model's directory", "the session's model (--session), else the bundled demo model")},
                   kMaskNote | kJsonNote));

    all.push_back(command("eval-merge",
                   "Merges the folders of an eval's shards into the summary one unsharded run gives (refuses\n"
                   "shards of another run, missing or incomplete shards, and items in two shards)",
                   {"--out DIR SHARD_DIR... [--json]"},
                   {{"",
                     {{"SHARD_DIR...", "the shards' --out folders, every shard 0..N-1 once", ""},
                      {"--out DIR", "the merged run: run.json, the items in dataset order and the summary", "required"},
                      {"--json", "print the summary as one JSON object instead of the table", ""}}}},
                   kJsonNote));

    all.push_back(command("study",
                   "Finds and defends a steering setting: a grid of plans judged on a suite of target sets (the\n"
                   "answer should move to the item's target) and preserve sets (the answer should stay right), in one\n"
                   "pass: an image's prefix and each item's unsteered answer are computed once, each plan edits its own\n"
                   "row of the batched decode, so a plan's answers equal `eval` of that plan alone. Per plan and set:\n"
                   "the metric steered vs unsteered, success or preservation, the first step's KL, the target's\n"
                   "log-prob, per category; intervals resample images; the frontier of plans no other beats on both\n"
                   "target success and preservation. Resumable and sharded like eval",
                   {"--suite SUITE.json --out DIR [--vectors A,B] [--operator OPS] [--ck LIST] [--cv LIST] [--layers LIST]",
                    "[--heads LIST] [--propagate] [--ablate-to mean|zero] [--images DIR] [--synonyms NAME|FILE] [--batch 2..8] [--shard K/N]",
                    "[--no-prefix-reuse] [--skip-bad] [--json] [--max-new-tokens N]"},
                   {{"Suite and run",
                     {{"--suite SUITE.json",
                       "{\"datasets\": [{\"name\", \"data\", \"role\": target|preserve, \"metric\": pope|exact|contains|chair, "
                       "\"mask\"?, \"synonyms\"?}], \"plans\"?: [...]} (docs/study.md)",
                       "required"},
                      {"--images DIR", "where the items' relative image and mask paths are found", "each data file's folder"},
                      {"--synonyms NAME|FILE", "the CHAIR synonym table of every chair set: coco, shapes or a table file (docs/eval.md)",
                       "each set's \"synonyms\""},
                      {"--out DIR",
                       "study.json, plans.jsonl, items.jsonl (one line per item and plan, as items finish), summary.json, "
                       "summary.csv, frontier.json, frontier.svg, grid.svg; a folder of the same study is continued",
                       "required"},
                      {"--batch N", "rows per forward pass, 2..8 (an item's unsteered row and one per plan)", "8"},
                      {"--shard K/N", "only the images whose file name hashes to K mod N (study-merge joins the shards)", "0/1: every item"},
                      {"--no-prefix-reuse", "compute each question's image prefix anew instead of once per image", ""},
                      {"--skip-bad", "record bad lines and items and study the rest, instead of stopping at the first", ""},
                      {"--json", "print the summary as one JSON object instead of the table", ""}}},
                    {"The grid (every combination is one plan; without these flags, the suite's \"plans\")",
                     {{"--vectors A,B", "vector files, one axis", "none"},
                      {"--operator OPS", "operators, one axis (add, norm, prerope, scale, spotlight, ablate)", "each file's suggestion, else add"},
                      {"--ck LIST", "c_k values, one axis (one strength for every layer)", "each file's suggestion, else 1"},
                      {"--cv LIST", "c_v values, one axis", "each file's suggestion, else 1"},
                      {"--layers LIST", "layer choices, one axis: all, early, middle, late, A-B", "each file's suggestion, else all"},
                      {"--heads LIST", "KV heads edited on every chosen layer, for every plan", "the file's mask (all)"},
                      {"--propagate", "every plan recomputes the text after the edit", "edit-only"},
                      {"--ablate-to mean|zero", "what ablate writes", "mean"}}},
                    decodingGroup("32", "each answer's budget in tokens"),
                    modelGroup()},
                   kJsonNote));

    all.push_back(command("study-merge",
                   "Merges the folders of a study's shards into what one unsharded run gives (refuses shards of\n"
                   "another study, missing or incomplete shards, and item lines in two shards)",
                   {"--out DIR SHARD_DIR... [--json]"},
                   {{"",
                     {{"SHARD_DIR...", "the shards' --out folders, every shard 0..N-1 once", ""},
                      {"--out DIR", "the merged study: its files, the items in suite order, the summary", "required"},
                      {"--json", "print the summary as one JSON object instead of the table", ""}}}},
                   kJsonNote));

    addDemoCommandHelps(all);
    return all;
}

} // namespace

const std::vector<CommandHelp>& commandHelps() {
    static const std::vector<CommandHelp> all = build();
    return all;
}

} // namespace kvsteer
