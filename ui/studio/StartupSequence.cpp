#include "studio/StartupSequence.h"

#include "studio/AtlasController.h"
#include "studio/DemoScene.h"
#include "studio/DocumentController.h"
#include "studio/ErrorReporter.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/SteeringController.h"
#include "studio/StudioSettings.h"
#include "studio/StudioStatusBar.h"
#include "studio/StudyController.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/PlanForm.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"
#include "worker/Worker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QTimer>

#include <algorithm>
#include <cmath>

namespace kvsteer::ui {

StartupSequence::StartupSequence(const StudioOptions& options, const StartupParts& parts, QObject* parent)
    : QObject(parent), options_(options), p_(parts) {
    connect(p_.models, &ModelController::loaded, this, [this] {
        if (heatmapLayer_ >= 0) {
            p_.panes.heatmaps->setSelectedLayer(heatmapLayer_);
            heatmapLayer_ = -1;
        }
        if (waiting_[Model]) settle(Model);
    });
    const auto modelFailed = [this] {
        if (!waiting_[Model]) return;
        waiting_[Model] = false;
        runWanted_ = false;   // no model, no run
    };
    connect(p_.models, &ModelController::loadFailed, this, modelFailed);
    connect(p_.models, &ModelController::loadCancelled, this, modelFailed);
    // A newer image (one dropped meanwhile) settles the image step as well.
    connect(p_.images, &ImageController::shown, this, [this](const ImageInfo& info) {
        if (waiting_[Image] && info.id >= imageRequest_) settle(Image);
    });
    connect(p_.images, &ImageController::failed, this, [this](quint64 id) {
        if (waiting_[Image] && id >= imageRequest_) settle(Image);
    });
    const auto maskSettled = [this](const QString& spec) {
        if (waiting_[Mask] && spec == maskSpec_) settle(Mask);
    };
    connect(p_.steering, &SteeringController::maskLoaded, this, maskSettled);
    connect(p_.steering, &SteeringController::maskLoadFailed, this, maskSettled);
    const auto vectorsSettled = [this] {
        if (!waiting_[Vectors]) return;
        applyPlanOptions();
        settle(Vectors);
    };
    connect(p_.steering, &SteeringController::vectorsReady, this, vectorsSettled);
    connect(p_.steering, &SteeringController::vectorsFailed, this, vectorsSettled);
    connect(p_.runs, &RunController::finished, this, &StartupSequence::onRunFinished);
    connect(p_.document, &DocumentController::restored, this, [this] {
        if (waiting_[Session]) settle(Session);
    });
    // A text-only model's canvas is the prompt's token strip, which arrives after the model.
    connect(p_.panes.canvas, &PatchCanvas::gridSizeChanged, this, &StartupSequence::runIfReady);
}

void StartupSequence::start() {
    const QString dir = chooseModel();
    runWanted_ = options_.run;
    // Until every request below is out, nothing has settled: the recovery offer is a modal dialog,
    // and the model may arrive while it is open, before the image has been asked for.
    waiting_[Setup] = true;
    p_.document->setRestoring(true);   // setting up from the command line is not an edit
    if (!dir.isEmpty()) {
        waiting_[Model] = true;
        p_.models->open(dir);
    } else {
        showNoModel(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR));
        runWanted_ = false;
    }

    // A first run (no session, nothing to recover, no image or vectors asked for, the demo model)
    // opens the demo scene, so the first thing a newcomer sees is steering, not an empty canvas.
    const bool recoverable = options_.offerRecovery && QFileInfo::exists(p_.document->recoveryPath());
    const bool firstRun = options_.demoScene && options_.sessionPath.isEmpty() && !recoverable && options_.imagePath.isEmpty() &&
                          options_.vectorsPath.isEmpty() && options_.targetImagePath.isEmpty() && options_.maskSpec.isEmpty() && options_.prompt.isEmpty() &&
                          demoSceneInstalled() && QDir(dir).canonicalPath() == QDir(demoScenePaths().model).canonicalPath();
    if (!options_.sessionPath.isEmpty()) p_.document->openFrom(options_.sessionPath);
    else p_.document->offerRecoveryIfAny(commandLineNote());
    // What the session or the recovery brought is not an edit, nor is what arrives with it (its
    // image, the model's grid fitting its map): the clean point and --run wait for all of it.
    waiting_[Session] = p_.document->restoringSession();

    if (!options_.studyDir.isEmpty()) p_.study->openFolder(options_.studyDir);   // over a session's study
    applyViewOptions();
    if (options_.heatmapLayer >= 0) heatmapLayer_ = options_.heatmapLayer;
    p_.document->setRestoring(false);
    if (!options_.imagePath.isEmpty()) {
        waiting_[Image] = true;
        imageRequest_ = p_.images->openFile(options_.imagePath);
        if (imageRequest_ == 0) waiting_[Image] = false;   // unreadable: the error is shown
    }
    if (!options_.maskSpec.isEmpty()) {
        waiting_[Mask] = true;
        maskSpec_ = options_.maskSpec;
        p_.steering->importMaskFrom(maskSpec_);
    }
    startVectors();
    if (firstRun) {
        waiting_[Image] = true;   // --run (and the clean point) wait for the scene's image, mask and vectors
        waiting_[Mask] = true;
        waiting_[Vectors] = true;
        imageRequest_ = 0;
        maskSpec_ = demoScenePaths().mask;
        openDemoScene(p_.models, p_.images, p_.steering, p_.panes.prompt, p_.panes.steering);
    }
    settle(Setup);
}

// What the command line will do after the recovery offer, for that dialog to say: the recovered
// work is shown first, then these replace their part of it.
QString StartupSequence::commandLineNote() const {
    QStringList parts;
    if (!options_.imagePath.isEmpty()) parts << tr("the image %1").arg(QFileInfo(options_.imagePath).fileName());
    if (!options_.prompt.isEmpty()) parts << tr("the prompt");
    if (!options_.maskSpec.isEmpty()) parts << tr("the mask %1").arg(QFileInfo(options_.maskSpec).fileName());
    if (!options_.vectorsPath.isEmpty()) parts << tr("the vectors %1").arg(QFileInfo(options_.vectorsPath).fileName());
    if (!options_.targetImagePath.isEmpty()) parts << tr("vectors toward %1").arg(QFileInfo(options_.targetImagePath).fileName());
    if (parts.isEmpty() && !options_.run) return {};
    QString note = parts.isEmpty() ? QString() : tr("Either way, the command line's %1 are applied next").arg(parts.join(QStringLiteral(", ")));
    if (options_.run) note += (note.isEmpty() ? tr("Either way, the command line's run (--run) follows") : tr(", then --run runs"));
    return note + QLatin1Char('.');
}

QString StartupSequence::chooseModel() const {
    // The command line, else the bundled demo model, else the most recent one.
    if (!options_.modelDirectory.isEmpty()) return options_.modelDirectory;
    const QString demo = QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR);
    if (QFileInfo(demo + QStringLiteral("/config.json")).exists()) return demo;
    for (const QString& p : p_.settings->recent(StudioSettings::Recent::Models))
        if (QFileInfo(p + QStringLiteral("/config.json")).exists()) return p;
    return QString();
}

void StartupSequence::showNoModel(const QString& demoDir) {
    p_.status->message(tr("No model loaded — File → Open Model Directory…"));
    auto* box = new QMessageBox(QMessageBox::Information, tr("No model"),
                                tr("The bundled demo model is not installed (expected in %1).\n\n"
                                   "Open a model directory in the Hugging Face layout (%2) with File → Open Model Directory…")
                                    .arg(QDir::toNativeSeparators(demoDir), Worker::supportedFamilies().join(QStringLiteral(", "))),
                                QMessageBox::Close, p_.window);
    QPushButton* open = box->addButton(tr("Open Model Directory…"), QMessageBox::AcceptRole);
    connect(open, &QPushButton::clicked, p_.models, &ModelController::openDialog);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void StartupSequence::applyViewOptions() {
    PromptPanel* prompt = p_.panes.prompt;
    if (!options_.prompt.isEmpty()) prompt->setPrompt(options_.prompt);
    if (options_.maxTokens > 0) {
        GenerationSettings g = prompt->generation();
        g.maxNewTokens = options_.maxTokens;
        prompt->setGeneration(g);
    }
    applyPlanOptions();
    if (options_.heatmapMetric >= 0) {
        HeatmapSettings h = p_.panes.heatmaps->settings();
        h.metric = Metric(std::clamp(options_.heatmapMetric, 0, kMetricCount - 1));
        p_.panes.heatmaps->setSettings(h);
    }
}

// The command line's plan: applied whole at start (what it leaves out takes the defaults, not the
// last session's settings), and again once the vectors arrive, over the file's suggestions, so
// the command line wins over them.
void StartupSequence::applyPlanOptions() {
    const StudioOptions& o = options_;
    if (!o.op && o.ck.isEmpty() && o.cv.isEmpty() && o.layers.isEmpty() && !o.propagate && !o.ablateTo) return;
    PlanSettings p = planOptionsApplied_ ? p_.panes.steering->planSettings() : PlanSettings();
    if (!planOptionsApplied_) p_.panes.steering->planForm()->forgetRestored();   // nothing of the last session's plan runs
    planOptionsApplied_ = true;
    if (o.propagate) p.propagate = *o.propagate;
    if (o.op) p.op = *o.op;
    if (o.ablateTo) p.ablateTarget = *o.ablateTo;
    auto coefficient = [](const QVector<double>& given, double& one, QVector<double>& byLayer) {
        if (given.isEmpty()) return;
        one = given.front();
        byLayer = given.size() > 1 ? given : QVector<double>();
    };
    coefficient(o.ck, p.ck, p.ckByLayer);
    coefficient(o.cv, p.cv, p.cvByLayer);
    if (!o.layers.isEmpty()) {
        const QStringList parts = o.layers.split(QLatin1Char('-'));
        p.layerFrom = parts.value(0).toInt();
        p.layerTo = parts.size() > 1 ? parts.value(1).toInt() : p.layerFrom;
    }
    p_.panes.steering->setPlanSettings(p);
}

void StartupSequence::startVectors() {
    if (!options_.vectorsPath.isEmpty()) {
        waiting_[Vectors] = true;
        p_.steering->importFrom(options_.vectorsPath);
        return;
    }
    if (options_.targetImagePath.isEmpty()) return;
    QFile f(options_.targetImagePath);
    if (!f.open(QIODevice::ReadOnly)) {
        p_.errors->show(tr("Target image"), tr("Cannot read %1: %2").arg(options_.targetImagePath, f.errorString()));
        return;
    }
    SteeringPanel* panel = p_.panes.steering;
    panel->setSource(VectorSource::SecondImage);
    panel->setTargetImage(options_.targetImagePath, f.readAll());
    panel->setRecipeOptions(panel->preRope(), options_.perPosition, false);
    waiting_[Vectors] = true;
    if (!p_.steering->compute(panel->recipe())) waiting_[Vectors] = false;   // refused: the error is shown
}

void StartupSequence::settle(Step step) {
    waiting_[step] = false;
    runIfReady();
}

void StartupSequence::runIfReady() {
    if (std::any_of(std::begin(waiting_), std::end(waiting_), [](bool w) { return w; })) return;
    if (!settled_) {   // what start-up opened is not the person's work: closing now asks nothing
        settled_ = true;
        p_.document->markCleanPoint();
    }
    if (!runWanted_) return;
    if (p_.models->info().textOnly() && !p_.panes.canvas->isTokenStrip()) return;   // its strip is on its way
    runWanted_ = false;
    if (!p_.models->info().valid() || (!p_.images->ready() && !p_.models->info().textOnly())) return;
    p_.runs->run();
    runId_ = p_.runs->activeRunId();
}

void StartupSequence::onRunFinished(const RunFinished& info) {
    if (runId_ == 0 || info.runId != runId_) return;
    runId_ = 0;
    if (options_.atlas && p_.atlas) {   // --atlas: the atlas next, then the ready file
        connect(p_.atlas, &AtlasController::finished, this, &StartupSequence::writeReadyFile, Qt::SingleShotConnection);
        p_.atlas->run();
        return;
    }
    writeReadyFile();
}

void StartupSequence::writeReadyFile() {
    if (options_.readyFile.isEmpty()) return;
    QTimer::singleShot(700, this, [this] {   // let the last heatmap and the panes paint
        QFile f(options_.readyFile);
        StreamView* streams = p_.panes.streams;
        if (f.open(QIODevice::WriteOnly)) f.write(QStringLiteral("unsteered: %1\nsteered: %2\n").arg(streams->text(false), streams->text(true)).toUtf8());
    });
}

} // namespace kvsteer::ui
