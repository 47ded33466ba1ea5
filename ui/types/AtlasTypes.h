#pragma once
// The atlas's plain data between the studio and the Worker (see core/steer/Atlas.h for what the
// core computes): the request — the current image, prompt, painted map and plan, with the
// strengths and layer ranges to sweep — and, per finished cell, its answer and outcome.
#include "types/StudioTypes.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

namespace kvsteer::ui {

struct AtlasRequest {
    quint64 id = 0;
    QString prompt;
    StrengthGrid strength;
    PlanSettings plan;                // everything but the swept coefficient and layers
    QVector<double> strengths;        // empty: 5 log-spaced values from c/4 to 4c around the plan's
    QStringList layerRanges;          // "all", "early", "middle", "late", "A-B"
    int maxNewTokens = 8;
    int batchRows = 8;
};

struct AtlasStarted {
    quint64 atlasId = 0;
    QStringList layerLabels;          // the rows
    QVector<double> strengths;        // the columns
    bool setsKeys = false;            // a strength value is c_k (spotlight, or a plan that edits keys)
    bool setsValues = true;           // a strength value is c_v
    QString unsteeredText;
};

enum class AtlasOutcome { Pending = -1, Same = 0, Different, Degenerate };

struct AtlasCellResult {
    quint64 atlasId = 0;
    int index = -1;                   // row * columns + column
    int row = 0, column = 0;
    QString layers;                   // the row's label
    QVector<int> layerIds;            // empty = all layers
    double ck = 0, cv = 0;
    AtlasOutcome outcome = AtlasOutcome::Pending;
    QString text;                     // the whole answer
    QString signalsText;              // "repetition 0.40 (3 distinct of 5 tokens), a word repeated"
    int tokens = 0;
    bool stoppedAtEos = false;
    bool valid() const { return index >= 0; }
};

struct AtlasFinished {
    quint64 atlasId = 0;
    bool cancelled = false;
    int cells = 0;
    double ms = 0;
};

QString outcomeTitle(AtlasOutcome o);   // "same as unsteered", "different answer", "degenerate"
void registerAtlasTypes();

} // namespace kvsteer::ui

Q_DECLARE_METATYPE(kvsteer::ui::AtlasRequest)
Q_DECLARE_METATYPE(kvsteer::ui::AtlasStarted)
Q_DECLARE_METATYPE(kvsteer::ui::AtlasCellResult)
Q_DECLARE_METATYPE(kvsteer::ui::AtlasFinished)
