#pragma once
// PythonSnippet: the current plan as a ready Python snippet — the README's Hugging Face
// DynamicCache form (prefill all but the last token, edit the cached K/V at the image's positions,
// generate) filled in with the model directory, the vector file, the painted mask, c_k, c_v, the
// layers, the KV heads and the operator. What a few lines cannot express faithfully (operators
// other than add and scale, propagate mode, families other than LLaVA, vectors that exist only in
// the studio) is said in the snippet — as a NotImplementedError or a comment — never emitted wrong.
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
