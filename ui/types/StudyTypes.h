#pragma once
// The Evaluate dock's Study tab, plain data between the studio and the Worker (core/study computes
// it; docs/study.md): the setup — a suite, an output folder and the grid's axes as the CLI's flags
// take them — and what comes back: progress, and the summary read into rows: per plan its two
// axes (target success, preservation) with their 95 % intervals, whether it is on the frontier
// and its resolved settings (so a click can apply it); per plan × dataset × category its headline
// number. One reader (studyResultsFromJson) serves a finished run and a summary.json on disk.
#include "types/StudioTypes.h"

#include <QJsonObject>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <limits>

namespace kvsteer::ui {

// What the Study tab holds and a session keeps. The axes are typed as `kvsteer study` takes its
// flags: comma lists, an empty axis left to the vector file's suggestion, then the defaults. With
// every axis empty the suite's own "plans" list is the grid.
struct StudySetup {
    QString suite;                    // the suite file (suite.json)
    QString outDir;                   // the study's folder: the same folder continues a stopped study
    QString vectors;                  // vector files, comma-separated
    QString operators;                // add,norm,...
    QString ck, cv;                   // numbers, comma-separated
    QString layers;                   // all,early,middle,late,A-B
    int maxNewTokens = 32;

    bool gridGiven() const;           // any axis typed: the grid replaces the suite's plans
    bool isEmpty() const { return suite.isEmpty() && outDir.isEmpty() && !gridGiven(); }
    bool operator==(const StudySetup& o) const;
};

struct StudyRequest {
    quint64 id = 0;
    StudySetup setup;
};

struct StudyStarted {
    quint64 studyId = 0;
    int total = 0;                    // items over the suite's sets (each judged under every plan)
    int alreadyDone = 0;              // done by an earlier run in the same folder
    QStringList planLabels;
};

struct StudyProgress {
    quint64 studyId = 0;
    int done = 0, total = 0;
};

// A number with its 95 % interval; NaN where the summary has null (an axis with no set).
struct StudyValue {
    double value = std::numeric_limits<double>::quiet_NaN();
    double low = std::numeric_limits<double>::quiet_NaN();
    double high = std::numeric_limits<double>::quiet_NaN();
    bool defined() const { return value == value; }
};

// One plan as the study resolved it (plans.jsonl, the summary's "settings").
struct StudyPlanSettings {
    int index = 0;
    QString label;                    // "red-to-blue add c_k 0 c_v 16 all"
    QString vectors;                  // the vector file ("" = none)
    SteeringOperator op = SteeringOperator::Add;
    QVector<double> ck, cv;           // one value, or one per layer
    QString layers;                   // as given: all, early, 3-5, ...
    QVector<int> layerList;           // resolved; empty = every layer
    QVector<int> heads;               // empty = all
    bool propagate = false;
    AblateTarget ablateTo = AblateTarget::Mean;

    // The steering panel's plan for it: the first c_k / c_v (a grid's are one strength each) and
    // the layer list's span (a grid's layer choices are ranges).
    PlanSettings planSettings() const;
};

struct StudyPlanResult {
    StudyPlanSettings settings;
    StudyValue targetSuccess, preservation;
    bool onFrontier = false;
};

// A row of summary.csv: one plan, one dataset, one category ("(all)" = the whole set).
struct StudyCategoryRow {
    int plan = 0;
    QString dataset, role, metric, category;
    int items = 0;
    QString headline;                 // success (target sets) or preservation (preserve sets)
    StudyValue value;
};

struct StudyResults {
    QVector<StudyPlanResult> plans;   // in plan order
    QVector<StudyCategoryRow> rows;   // plan, then dataset (the suite's order), then category
    QStringList datasets;             // the suite's sets, in order
    QString suitePath;                // the suite file the study ran
    QVector<int> frontier;            // plan indices, by rising target success
    int clusters = 0;                 // images the intervals resample
    double itemsPerSecond = 0;
    bool valid() const { return !plans.isEmpty(); }
    const StudyPlanResult* plan(int index) const;
};

struct StudyFinished {
    quint64 studyId = 0;
    bool stopped = false;             // Stop: the folder holds every finished item; Study continues
    int items = 0;
    QString outDir;
    StudyResults results;             // empty when stopped
};

// A summary.json (core/study/StudySummary.cpp) read into rows; false with *error when it is not one.
bool studyResultsFromJson(const QJsonObject& summary, StudyResults* out, QString* error);
// The same from a study folder's summary.json.
bool readStudyResults(const QString& outDir, StudyResults* out, QString* error);

void registerStudyTypes();

} // namespace kvsteer::ui

Q_DECLARE_METATYPE(kvsteer::ui::StudySetup)
Q_DECLARE_METATYPE(kvsteer::ui::StudyRequest)
Q_DECLARE_METATYPE(kvsteer::ui::StudyStarted)
Q_DECLARE_METATYPE(kvsteer::ui::StudyProgress)
Q_DECLARE_METATYPE(kvsteer::ui::StudyPlanSettings)
Q_DECLARE_METATYPE(kvsteer::ui::StudyFinished)
