#pragma once
// The studio's Copy as Python: what the panes show, in Qt types, handed to the core's
// pythonSnippet (core/steer/PythonSnippet.h: the one writer of the script, which `kvsteer steer
// --python` calls too), so the studio and the command line write the same script for the same plan.
#include "types/StudioTypes.h"

#include <QString>

namespace kvsteer::ui {

struct SnippetInputs {
    ModelInfo model;
    QString vectorsPath;       // the imported file; empty: the vectors exist only in the studio
    QString keySpace;          // post-rope | pre-rope
    QString imagePath;         // the open image's file, absolute; its name when it came from no file
    QString question;
    PlanSettings plan;
    StrengthGrid strength;
    int maxNewTokens = 32;     // the Prompt panel's Max tokens
};

QString pythonSnippet(const SnippetInputs& in);
// "mask[6:16, 9:19] = 1" for a uniform rectangle, else one entry per painted cell.
QString pythonMask(const StrengthGrid& g);

} // namespace kvsteer::ui
