#pragma once
// A studio session in one file (.kvsession): the image (original file bytes), the prompt, the
// decoding settings, the painted map, the plan settings, the vector recipe inputs, the steering
// vectors (the core's safetensors file, embedded), the two answers with their top-5s, the
// heatmap view, and the Study tab's setup (optional; its folder holds the results). JSON, binary
// parts base64-encoded; written atomically with QSaveFile. The same format is the crash-recovery
// file. The painted map is stored with its own rows × cols, so a session opened with a model of
// another grid knows what it holds (DocumentController resamples it).
#include "types/StudioTypes.h"
#include "types/StudyTypes.h"

#include <QByteArray>
#include <QString>

namespace kvsteer::ui {

struct SessionDocument {
    QString modelDirectory;
    QString modelName;
    QString modelConfigHash;

    QByteArray imageBytes;            // the image file as opened (empty: none)
    QString imageName;

    QString prompt;
    GenerationSettings generation;
    StrengthGrid strength;
    PlanSettings plan;

    // Vector recipe inputs.
    VectorSource source = VectorSource::SecondImage;
    QString targetImagePath;
    QByteArray targetImageBytes;
    QVector<TextPairItem> textPairs;
    bool preRope = false;
    bool perPosition = false;
    bool pca = false;

    QByteArray vectorsBlob;           // the vector file (safetensors); empty: none
    QString vectorsOrigin;

    QVector<StreamToken> unsteered;   // the answers shown when saved
    QVector<StreamToken> steered;

    HeatmapSettings heatmap;
    int heatmapLayer = 0;
    bool live = true;

    StudySetup study;                 // optional in the file: sessions before it have none

    QString savedAs;                  // recovery files only: the session file the work belongs to
};

class SessionFile {
public:
    static constexpr int kVersion = 1;
    static QString suffix() { return QStringLiteral("kvsession"); }

    static QByteArray toJson(const SessionDocument& s);
    // Throws nothing; returns false with a readable message in *error.
    static bool fromJson(const QByteArray& json, SessionDocument* out, QString* error);

    // Atomic (QSaveFile): the old file stays intact if anything fails.
    static bool save(const QString& path, const SessionDocument& s, QString* error);
    static bool load(const QString& path, SessionDocument* out, QString* error);
};

} // namespace kvsteer::ui
