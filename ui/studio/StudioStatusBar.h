#pragma once
// StudioStatusBar: the window's status bar — the hovered cell, the Worker's progress, the loaded
// model (name, size, dtype, device, threads) and the studio's resident memory, refreshed every 2 s.
#include "types/StudioTypes.h"

#include <QObject>

class QLabel;
class QProgressBar;
class QStatusBar;
class QTimer;

namespace kvsteer::ui {

// 1234567 -> "1.2M" (parameter counts).
QString formatCount(qint64 n);

class StudioStatusBar : public QObject {
    Q_OBJECT
public:
    explicit StudioStatusBar(QStatusBar* bar);

    void message(const QString& text, int timeoutMs = 0);
    void showHover(const QString& text);
    void showModel(const ModelInfo& model, bool loading, const QString& loadingDirectory);
    void showProgress(const QString& stage, int value, int maximum);
    void hideProgress();

private:
    void updateMemory();

    QStatusBar* bar_;
    QLabel* hover_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* model_ = nullptr;
    QLabel* dtype_ = nullptr;
    QLabel* threads_ = nullptr;
    QLabel* memory_ = nullptr;
    QTimer* memoryTimer_ = nullptr;
};

} // namespace kvsteer::ui
