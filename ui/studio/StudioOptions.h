#pragma once
// StudioOptions: how a studio window starts — what the command line (app/studio_main.cpp) or a
// test asks for: the model, the image, the mask, the vectors, a run, and where state is kept.
#include "types/StudioTypes.h"

#include <QString>
#include <QVector>

#include <optional>

namespace kvsteer::ui {

struct StudioOptions {
    QString modelDirectory;           // empty: the bundled demo model, else the most recent one
    LoadSettings load;
    bool loadOverride = false;        // `load` given on the command line (else from QSettings)
    QString imagePath;
    QString prompt;
    QString maskSpec;                 // PNG / .npy / .safetensors / rect:r0,c0,r1,c1
    QString vectorsPath;
    QString targetImagePath;          // compute image-pair vectors toward this image at start
    QString sessionPath;
    QString studyDir;                 // a study's folder to show in the Evaluate dock's Study tab
    // A plan on the command line is applied whole: what it leaves out takes the defaults (or the
    // vector file's suggestions), never the last session's settings.
    std::optional<SteeringOperator> op;
    QString layers;                   // "A-B" or "N"
    QVector<double> ck, cv;           // one value, or one per layer; empty: not given
    std::optional<AblateTarget> ablateTo;
    int maxTokens = 0;
    int heatmapMetric = -1;
    int heatmapLayer = -1;
    bool perPosition = false;         // --steer-toward computes one direction per patch
    std::optional<bool> propagate;    // --propagate / --no-propagate; unset: not given
    bool run = false;                 // run once everything above is ready
    QString readyFile;                // written when that run (and its heatmap) has finished
    bool atlas = false;               // after that run, run the atlas too (before the ready file)
    bool demoScene = true;            // no session to recover, no image chosen, the demo model: open the demo scene
    bool offerRecovery = true;
    QString recoveryPath;             // empty: AppDataLocation/recovery.kvsession
    bool confirmClose = true;         // ask about unsaved changes on close
    bool useSettings = true;          // read and write QSettings (off in tests)
};

} // namespace kvsteer::ui
