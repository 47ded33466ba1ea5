#include "studio/ModelController.h"

#include "studio/ErrorReporter.h"
#include "widgets/PreferencesDialog.h"
#include "worker/Worker.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>

namespace kvsteer::ui {

ModelController::ModelController(Worker* worker, ErrorReporter* errors, QWidget* window)
    : QObject(window), errors_(errors), window_(window), worker_(worker) {
    connect(this, &ModelController::loadRequested, worker, &Worker::loadModel, Qt::QueuedConnection);
    connect(worker, &Worker::modelLoaded, this, &ModelController::onLoaded);
    connect(worker, &Worker::modelFailed, this, &ModelController::onFailed);
    connect(worker, &Worker::modelLoadCancelled, this, &ModelController::onCancelled);
}

void ModelController::open(const QString& directory) {
    Q_EMIT aboutToLoad();
    loading_ = true;
    loadingDir_ = directory;
    Q_EMIT stateChanged();
    Q_EMIT loadRequested(directory, settings_);
}

void ModelController::openDialog() {
    const QString start = info_.valid() ? QFileInfo(info_.directory).absolutePath() : QDir::homePath();
    const QString dir = QFileDialog::getExistingDirectory(window_, tr("Open Model Directory"), start);
    if (!dir.isEmpty()) open(dir);
}

void ModelController::cancelLoad() {
    if (loading_) worker_->cancelLoad();
}

bool ModelController::editPreferences() {
    PreferencesDialog dlg(settings_, window_);
    if (dlg.exec() != QDialog::Accepted) return false;
    const LoadSettings before = settings_;
    settings_ = dlg.settings();
    settings_.maxPixels = before.maxPixels;   // set on the command line, not in the dialog
    if (info_.valid() && (before.device != settings_.device || before.dtype != settings_.dtype || before.threads != settings_.threads)) {
        if (QMessageBox::question(window_, tr("Reload model?"), tr("Reload %1 with the new settings now?").arg(info_.name)) == QMessageBox::Yes)
            open(info_.directory);
    }
    return true;
}

void ModelController::onLoaded(const ModelInfo& info) {
    info_ = info;
    loading_ = false;
    Q_EMIT loaded(info);
}

void ModelController::onFailed(const QString& directory, const QString& message) {
    loading_ = false;
    Q_EMIT stateChanged();
    errors_->show(tr("Cannot load model"),
                  tr("The model in %1 could not be loaded.\n\n%2\n\nChoose a model directory in the Hugging Face layout "
                     "(%3: config.json, model*.safetensors, tokenizer) with File → Open Model Directory…")
                      .arg(QDir::toNativeSeparators(directory), message, Worker::supportedFamilies().join(QStringLiteral(", "))));
    Q_EMIT loadFailed(directory);
}

void ModelController::onCancelled(const QString& directory) {
    if (directory != loadingDir_) return;   // a load superseded by a newer one: that one goes on
    loading_ = false;
    Q_EMIT stateChanged();
    Q_EMIT loadCancelled(directory);
}

} // namespace kvsteer::ui
