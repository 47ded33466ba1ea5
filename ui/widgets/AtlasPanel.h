#pragma once
// AtlasPanel: the atlas dock — what to sweep (strengths, layer ranges, tokens per cell), Run
// Atlas / Stop, a status line, and the AtlasView picture. Settings and signals only; the
// AtlasController runs it.
#include "types/AtlasTypes.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace kvsteer::ui {

class AtlasView;

class AtlasPanel : public QWidget {
    Q_OBJECT
public:
    explicit AtlasPanel(QWidget* parent = nullptr);

    AtlasView* view() const { return view_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* stopButton() const { return stop_; }

    // Empty: the default (log-spaced around the panel's coefficient). Unparsable items are named.
    QVector<double> strengths(QString* error = nullptr) const;
    void setStrengths(const QVector<double>& values);
    QStringList layerRanges() const;
    void setLayerRanges(const QStringList& ranges);
    int maxNewTokens() const;
    void setMaxNewTokens(int n);

    void setRunning(bool running);
    void setCanRun(bool can, const QString& why);
    void setStatus(const QString& text);
    QString status() const;

Q_SIGNALS:
    void runRequested();
    void stopRequested();

private:
    AtlasView* view_ = nullptr;
    QLineEdit* strengths_ = nullptr;
    QLineEdit* layers_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* stop_ = nullptr;
    QLabel* status_ = nullptr;
    bool running_ = false;
    bool canRun_ = false;
};

} // namespace kvsteer::ui
