#pragma once
// PythonSnippet: a steering plan as a Python script for Hugging Face transformers that runs as
// written, from any folder — the DynamicCache form of docs/steering.md: prefill the prompt, keep
// all but its last position, copy that snapshot for the unsteered answer, edit the cached K/V at
// the image's positions (or the painted tokens of a text prompt's strip), optionally recompute the
// text after the edit, decode both answers from the last prompt token, and print each as one JSON
// line, {"unsteered": {"ids": [...], "text": "..."}} then {"steered": ...}, the ids and text that
// `kvsteer steer --json` gives under the same keys.
//
// One layout for every family; a small table (PythonSnippet.cpp) says what differs: the
// transformers class and the first release that has it, how the inputs are made, where the span
// is, PaliGemma's prefix-LM prefill, the Qwen VL families' explicit M-RoPE positions, LLaVA-NeXT's
// views. Operators add, norm, scale and ablate are written as core/steer/SteeringPlan.cpp computes
// them, with one coefficient or one per layer; propagate for causal prompts. What a few lines
// cannot express faithfully (prerope, spotlight, propagate on PaliGemma, pre-RoPE key vectors with
// add or norm, a raw prompt for a family whose processor lays the prompt out, a family it does not
// know) becomes a NotImplementedError naming why — never a wrong edit.
//
// The CLI (`kvsteer steer ... --python`) and the studio (Copy as Python) both fill the inputs
// below, from the plan they would run.
#include "steer/SteeringOperator.h"

#include <string>
#include <vector>

namespace kvsteer {

struct PythonSnippetInputs {
    // The model, as Model::familyName(), its directory (absolute), its decoder's layer count and
    // its prompt layout around "{question}" (Model::applyTemplate with an image, or without one).
    std::string family;
    std::string modelName;
    std::string modelDirectory;
    int numLayers = 0;
    std::string promptTemplate;
    // The input: an absolute image path ("" for a text prompt) and the question; with rawPrompt the
    // question is the whole prompt text as given (--raw-prompt).
    std::string imagePath;
    std::string question;
    bool rawPrompt = false;
    // The vectors: the file's absolute path ("" when they exist only in the studio) and key space
    // (post-rope | pre-rope).
    std::string vectorsPath;
    std::string keySpace = "post-rope";
    // The plan as it runs (PlanOptions resolved against the file's suggestions).
    SteeringOperator op = SteeringOperator::Add;
    std::vector<double> ck{1.0}, cv{1.0};   // one value, or one per layer
    std::vector<int> layers;             // empty: every layer
    std::vector<int> heads;              // KV heads; empty: every head
    bool propagate = false;
    AblateTarget ablateTo = AblateTarget::Mean;
    // The painted map, row-major rows x cols (1 x N on a token strip).
    int rows = 0, cols = 0;
    std::vector<float> strength;
    int maxNewTokens = 32;
};

std::string pythonSnippet(const PythonSnippetInputs& in);

// "mask[6:16, 9:19] = 1" for a uniform rectangle, else one entry per painted cell.
std::string pythonMask(int rows, int cols, const std::vector<float>& strength);

// What the snippet needs installed for this model directory: "pip install torch
// 'transformers>=4.57' safetensors pillow", with `tokenizers` when the checkpoint's tokenizer is
// only a tokenizer.json and `sentencepiece` when it is only a tokenizer.model.
std::string pythonRequirements(const std::string& family, const std::string& modelDirectory, bool vectors, bool image);

} // namespace kvsteer
