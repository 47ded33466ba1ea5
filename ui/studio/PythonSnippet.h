#pragma once
// PythonSnippet: the current plan as a ready Python snippet — the Hugging Face DynamicCache form of
// docs/steering.md (prefill the prompt, keep all but its last position, edit the cached K/V at the
// image's positions or the painted tokens of a text prompt's strip, decode from the last token)
// filled in with the model directory, the vector file, the painted mask, c_k, c_v, the layers, the
// KV heads and the operator. One layout for every family (LLaVA-1.5, PaliGemma, Qwen2-VL, Qwen2,
// Llama-3, Llama); a small table says what differs: the transformers class, how the inputs are made,
// where the visual span is, PaliGemma's prefix-LM prefill, Qwen2-VL's explicit M-RoPE positions.
// Operators add, norm, scale and ablate are written as core/steer/SteeringPlan.cpp computes them,
// propagate mode for causal prompts. What a few lines cannot express faithfully (prerope,
// spotlight, propagate on PaliGemma, pre-RoPE key vectors with add or norm, a family it does not
// know) becomes a NotImplementedError naming why — never a wrong edit.
#include "types/StudioTypes.h"

#include <QString>

namespace kvsteer::ui {

struct SnippetInputs {
    ModelInfo model;
    QString vectorsPath;       // the imported file; empty: the vectors exist only in the studio
    QString keySpace;          // post-rope | pre-rope
    QString imageName;         // the open image's file name (or path)
    QString question;
    PlanSettings plan;
    StrengthGrid strength;
};

QString pythonSnippet(const SnippetInputs& in);
// "mask[6:16, 9:19] = 1.0" for a uniform rectangle, else one line per painted cell.
QString pythonMask(const StrengthGrid& g);

} // namespace kvsteer::ui
