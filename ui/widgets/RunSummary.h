#pragma once
// RunSummary: the panel under the prompt that says what the next run will do and what the last
// one took — the plan (operator, coefficients, mode, layers, heads), the painted mask, the
// vectors, and the last prefill/edit/decode timings.
#include "types/StudioTypes.h"

#include <QLabel>

namespace kvsteer::ui {

struct RunSummaryInput {
    PlanSettings plan;
    StrengthGrid mask;
    QString maskNote;                 // said after the mask's line (a resample), "" for none
    int modelLayers = 0;              // 0: no model loaded
    VectorsInfo vectors;
    RunStarted lastPrefill;           // the last run that prefilled (runId 0: none yet)
    RunStarted lastStarted;
    RunFinished lastFinished;
};

class RunSummary : public QLabel {
    Q_OBJECT
public:
    explicit RunSummary(QWidget* parent = nullptr);
    void show(const RunSummaryInput& in);
};

} // namespace kvsteer::ui
