#pragma once
// The Evaluate dock's plain data between the studio and the Worker (core/eval computes it): the
// request — a dataset, an output folder, and the current steering (the panel's plan, the painted
// map, the held vectors) or each item's own box — and what comes back: progress, one row per
// item, and the summary's metrics with their intervals.
#include "types/StudioTypes.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

namespace kvsteer::ui {

struct EvalRequest {
    quint64 id = 0;
    QString dataset;                  // a JSONL file (POPE's or the general form)
    QString outDir;                   // the run's folder: the same folder continues a stopped run
    QString metric = QStringLiteral("pope");
    bool itemRegions = true;          // each item's box or mask; false: the painted map for every item
    StrengthGrid strength;            // the painted map
    PlanSettings plan;
    int maxNewTokens = 8;
};

struct EvalStarted {
    quint64 evalId = 0;
    int total = 0;                    // items in the dataset
    int alreadyDone = 0;              // done by an earlier run in the same folder
};

struct EvalItemRow {
    quint64 evalId = 0;
    QString id, question, image;      // image: the resolved path ("" for a text prompt)
    QStringList answers;
    QString unsteeredText, steeredText;
    bool unsteeredCorrect = false, steeredCorrect = false;
    bool hasBox = false;
    double box[4] = {0, 0, 0, 0};     // x0, y0, x1, y1 in the image's pixels
    QString mask;                     // the item's MASK, if it has one
};

struct EvalFinished {
    quint64 evalId = 0;
    bool stopped = false;             // Stop: the folder holds every finished item; Evaluate continues
    int items = 0;
    QString metric;
    QStringList metricNames;          // accuracy, precision, ... (pope) or accuracy
    QVector<double> unsteered, steered, difference, low, high;   // low/high: the difference's 95 % interval
    double changedFraction = 0;
    double mcnemarP = 1;
    double itemsPerSecond = 0;
    QString outDir;
};

void registerEvalTypes();

} // namespace kvsteer::ui

Q_DECLARE_METATYPE(kvsteer::ui::EvalRequest)
Q_DECLARE_METATYPE(kvsteer::ui::EvalStarted)
Q_DECLARE_METATYPE(kvsteer::ui::EvalItemRow)
Q_DECLARE_METATYPE(kvsteer::ui::EvalFinished)
