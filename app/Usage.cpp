#include "Usage.h"

#include "models/ModelRegistry.h"

#include <vector>

namespace kvsteer {

namespace {

// Which shared notes follow a command's synopsis.
enum Note : unsigned {
    kModelNote = 1,    // --model's default
    kPromptNote = 2,   // --prompt / --raw-prompt and the families' templates
    kMaskNote = 4,     // the MASK forms
    kJsonNote = 8,     // --json
};

struct CommandHelp {
    const char* name;
    const char* purpose;
    std::vector<const char*> synopsis;   // option lines, without indentation
    unsigned notes;
    bool demo;                           // listed under "demo model" in the full usage
};

const std::vector<CommandHelp>& commands() {
    static const std::vector<CommandHelp> all = {
        {"generate", "Answers a question about an image (or a text prompt), streaming the tokens",
         {"--model DIR [--image FILE] --prompt TEXT [--raw-prompt] [--system TEXT] [--max-new-tokens N]",
          "[--dtype auto|f32|bf16|f16] [--device cpu|cuda] [--threads N]",
          "[--seed S --temperature T --top-p P --top-k K] [--json] [--dump-prefill FILE.safetensors]"},
         kModelNote | kPromptNote | kJsonNote, false},
        {"inspect", "Prints the model's family, architecture, sizes, dtypes and prompt template", {"--model DIR [--system TEXT]"}, kModelNote, false},
        {"vectors", "Says what a vector file holds (info: its model, family, grid, layers, tensors and suggestions), or\n"
                    "brings vectors made elsewhere in for a model (import: a safetensors of steer.keys.<layer> /\n"
                    "steer.values.<layer> float32 [H_kv, D] or [H_kv, grid cells, D], and an optional steer.mask [grid_h,\n"
                    "grid_w], checked against the model and written with its metadata; docs/FORMAT.md)",
         {"info FILE", "import RAW.safetensors --model DIR --out FILE [--key-space post|pre] [--operator OP] [--ck X] [--cv Y]",
          "[--layers LAYERS]  (--ck/--cv/--operator/--layers: the suggestions written into the file; default 1, 1, add, all)"},
         kModelNote, false},
        {"tokenize", "Runs the model's tokenizer (no weights loaded) and prints one JSON line per text:\n"
                     "{\"text\", \"ids\", \"pieces\"}, each piece its id decoded alone. --special adds what the family adds\n"
                     "to a prompt (BOS where it has one); without it the ids are HF's tokenizer(text, add_special_tokens=False)",
         {"--model DIR (--text TEXT | --jsonl FILE) [--special]", "--jsonl: one {\"text\": ...} object per line"},
         kModelNote, false},
        {"extract", "Computes steering vectors with a recipe and writes them to a file that names the model, its family and grid",
         {"--model DIR --recipe image-pair|region|text-pairs [--pca] [--per-position] [--key-space post|pre]",
          "--prompt TEXT [--raw-prompt] (--image-a FILE --image-b FILE | --image FILE --mask MASK | --pairs FILE.jsonl)",
          "--out VECTORS.safetensors [--operator OP] [--ck X] [--cv Y] [--layers A-B]"},
         kModelNote | kPromptNote | kMaskNote, false},
        {"steer", "Decodes the answer with and without a steering plan, side by side (on the image's cells, or without an image on the prompt's tokens)",
         {"--model DIR [--image FILE] --prompt TEXT [--raw-prompt] [--vectors FILE] [--mask MASK] [--layers A-B]",
          "[--heads LIST] [--ck X] [--cv Y] [--operator add|norm|prerope|scale|spotlight|ablate] [--ablate-to mean|zero]",
          "[--propagate] [--max-new-tokens N] [--json]"},
         kModelNote | kPromptNote | kMaskNote | kJsonNote, false},
        {"sweep", "Runs the steering atlas: one row per setting (the product of --layers, --ck and --cv items), each\n"
                  "decoded greedily, --batch cells per forward pass, and marked same / different / degenerate against\n"
                  "the unsteered answer (degenerate: no EOS within the budget, a word repeated, half the tokens\n"
                  "repeats, or an empty answer, where the unsteered answer shows none of it)",
         {"(the steer options) --ck LIST --cv LIST --layers all|early|middle|late|A-B,... [--batch 1..8] [--csv | --json]"},
         kModelNote | kPromptNote | kMaskNote | kJsonNote, false},
        {"eval", "Scores a steering setting on a dataset (JSONL: POPE's question_id/image/text/label, or\n"
                 "id/image/question/answer with an optional mask or box): every item answered unsteered and steered,\n"
                 "both scored, the differences with paired-bootstrap 95 % intervals and McNemar's p. The image's\n"
                 "prefix is computed once for all its questions (causal families); rows of several questions\n"
                 "decode as one batch. Items go to DIR/items.jsonl as they finish: the same command continues a\n"
                 "stopped or killed run; SIGINT/SIGTERM stop after the current batch",
         {"--data FILE.jsonl [--images DIR] --out DIR [--metric pope|exact|contains] [--batch 2..8] [--shard K/N]",
          "[--no-prefix-reuse] [--skip-bad] [--json] (the steer options: --vectors --mask --layers --heads --ck --cv",
          "--operator --ablate-to --propagate --max-new-tokens)",
          "--session FILE.kvsession: a studio session's plan, painted map and vectors (and its model, without",
          "--model); a steer option given as well wins over the session's value"},
         kModelNote | kMaskNote | kJsonNote, false},
        {"eval-merge", "Merges the folders of an eval's shards into the summary one unsharded run gives (refuses\n"
                       "shards of another run, missing or incomplete shards, and items in two shards)",
         {"--out DIR SHARD_DIR... [--json]"},
         kJsonNote, false},
        {"make-random", "Writes a model of a preset's real shapes with random weights (for bench)",
         {"--preset llava-1.5-7b|llava-1.5-13b|llava-tinyllama-1.1b|llava-micro|llama-3.1-8b --dtype f32|f16|bf16 --out DIR",
          "[--tokenizer-from DIR] [--seed S] [--shard-gb G]",
          "--tokenizer-from: the demo model's for the LLaVA presets (default); llama-3.1-8b needs a directory with",
          "Llama-3's tokenizer.json (a Llama-3 checkpoint's, or ../shared/reference/tiny-llama3)"},
         0, false},
        {"demo-steer", "Runs the demo model's red->blue flip, painted on the circle vs on background",
         {"[--model DIR] [--pairs K] [--n N] [--seed S] [--ck LIST] [--cv LIST] [--mode edit-only|propagate|both]",
          "[--save-vectors FILE]"},
         kModelNote, true},
        {"train-demo", "Trains the bundled demo model",
         {"--out DIR --tokenizer-dir DIR [--minutes M] [--steps N] [--seed S] [--batch B] [--lr X]",
          "[--threads N] [--validate-every N] [--curriculum A,B,C] [--dtype f32|f16]",
          "[--vision-steps N] [--vision-lr X] [--vision-fraction F] [--vision-lr-scale X]",
          "[--grounding W] [--sizes 9 ints] [--types LIST]"},
         0, true},
        {"eval-demo", "Measures the demo model's accuracy on fresh ShapeWorld scenes",
         {"[--model DIR] [--n N] [--seed S] [--max-new-tokens N] [--threads N] [--json] [--show-failures K]"}, kModelNote, true},
        {"demo-corpus", "Writes the text spm_train learns the demo tokenizer from", {"--out FILE [--scenes N] [--seed S]"}, 0, true},
        {"demo-images", "Writes a few ShapeWorld PNGs, e.g. the red/blue circle pair", {"--out DIR [--pair-seed S --pair-index N]"}, 0, true},
        {"demo-pope", "Writes a POPE-style set on fresh ShapeWorld scenes: per scene one \"Is there a <colour> <shape>?\" per\n"
                      "shape (yes) and as many absent ones (no: random, popular, adversarial), each with a box",
         {"--out DIR [--images N] [--seed S]"},
         0, true},
    };
    return all;
}

std::string padded(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

// The synopsis lines, the first after `lead`, the rest indented to line up under it.
std::string synopsis(const CommandHelp& c, const std::string& lead) {
    std::string out;
    for (size_t i = 0; i < c.synopsis.size(); ++i) out += (i == 0 ? lead : std::string(lead.size(), ' ')) + c.synopsis[i] + "\n";
    return out;
}

// Generated from the registry: each model_type with its family's grid and template.
std::string promptNote() {
    std::string out = "--prompt is the question, laid out in the template of the model's family (config.json's model_type):\n";
    for (const ModelFamily& f : modelFamilies()) out += "  " + padded(f.modelType, 11) + f.name + ": " + f.summary + "\n";
    out += "--raw-prompt uses the text as is: it must then contain \"<image>\" exactly once when an image is given\n"
           "(and none without). `kvsteer inspect --model DIR` prints the model's template. --system TEXT sets the system\n"
           "message of a chat template (Qwen: instead of its default; Llama-3: none by default).\n";
    return out;
}

std::string notes(unsigned which) {
    std::string out;
    if (which & kModelNote) out += "--model defaults to the bundled demo model.\n";
    if (which & kPromptNote) out += promptNote();
    if (which & kMaskNote)
        out += "MASK: rect:r0,c0,r1,c1 (grid cells, inclusive, within the model's grid: rect:0,0,15,15 is all of a 16x16\n"
               "grid), a grayscale image of any size (white = 1, area-averaged onto the grid), or a .npy / .safetensors\n"
               "of the grid's shape. Without an image, steering addresses the prompt's tokens (a 1xN strip of the N tokens\n"
               "the cache holds): tokens:A-B,C,last names them (the default is tokens:last, where cache steering puts its vectors).\n";
    if (which & kJsonNote) out += "With --json, stdout holds only the final JSON object.\n";
    return out;
}

} // namespace

std::string fullUsage() {
    std::string out = "usage: kvsteer <command> [options]      (kvsteer <command> --help: one command)\n\ncommands:\n";
    unsigned all = 0;
    for (const CommandHelp& c : commands())
        if (!c.demo) {
            out += synopsis(c, "  " + padded(c.name, 13));
            all |= c.notes;
        }
    out += "\ndemo model:\n";
    for (const CommandHelp& c : commands())
        if (c.demo) out += synopsis(c, "  " + padded(c.name, 13));
    return out + "\n" + notes(all);
}

std::string commandUsage(const std::string& command) {
    for (const CommandHelp& c : commands())
        if (command == c.name)
            return synopsis(c, "usage: kvsteer " + command + " ") + "\n" + c.purpose + ".\n" + (c.notes ? "\n" + notes(c.notes) : "") +
                   "\nExit status: 0 done; 1 bad input or model (the error names the file or field); 2 usage (an unknown\n"
                   "option, a missing one, or a value of the wrong form).\n";
    return "";
}

} // namespace kvsteer
