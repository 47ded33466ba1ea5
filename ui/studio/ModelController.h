#pragma once
// ModelController: the model the studio runs — the one loaded (ModelInfo), the load in flight
// (Stop cancels it; the model loaded before stays), and the settings loads use (device, dtype,
// threads; Edit → Preferences).
#include "types/StudioTypes.h"

#include <QObject>

class QWidget;

namespace kvsteer::ui {

class ErrorReporter;
class Worker;

class ModelController : public QObject {
    Q_OBJECT
public:
    ModelController(Worker* worker, ErrorReporter* errors, QWidget* window);

    const ModelInfo& info() const { return info_; }
    bool loading() const { return loading_; }
    QString loadingDirectory() const { return loadingDir_; }
    const LoadSettings& loadSettings() const { return settings_; }
    void setLoadSettings(const LoadSettings& s) { settings_ = s; }

    void open(const QString& directory);
    void openDialog();
    void cancelLoad();
    // Edit → Preferences; true when the settings changed (the caller remembers them).
    bool editPreferences();

Q_SIGNALS:
    void aboutToLoad();                 // the run in progress belongs to the old model: stop it
    void loadRequested(const QString& directory, const kvsteer::ui::LoadSettings& settings);
    void stateChanged();                // a load began or ended
    void loaded(const kvsteer::ui::ModelInfo& info);
    void loadFailed(const QString& directory);
    void loadCancelled(const QString& directory);

private:
    void onLoaded(const ModelInfo& info);
    void onFailed(const QString& directory, const QString& message);
    void onCancelled(const QString& directory);

    ErrorReporter* errors_;
    QWidget* window_;
    ModelInfo info_;
    LoadSettings settings_;
    QString loadingDir_;
    bool loading_ = false;
    Worker* worker_;
};

} // namespace kvsteer::ui
