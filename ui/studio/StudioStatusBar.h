#pragma once
// StudioStatusBar: the window's status bar — the hovered cell, the Worker's progress, the loaded
// model (name, size, dtype, device, threads), the canvas's grid and the studio's resident memory, refreshed every 2 s.
#include "types/StudioTypes.h"

#include <QObject>

class QProgressBar;
class QStatusBar;
class QTimer;

namespace kvsteer::ui {

class ElidedLabel;

// 1234567 -> "1.2M" (parameter counts).
QString formatCount(qint64 n);

class StudioStatusBar : public QObject {
    Q_OBJECT
public:
    explicit StudioStatusBar(QStatusBar* bar);

    void message(const QString& text, int timeoutMs = 0);
    void showHover(const QString& text);
    void showModel(const ModelInfo& model, bool loading, const QString& loadingDirectory);
    void showGrid(int rows, int cols);   // the canvas's grid (rows 1: a text prompt's tokens)
    // A picture in views (LLaVA-NeXT): named with their grids instead ("base 24×24", "crops 24×40").
    void showViews(const QStringList& views);
    bool showsViews() const { return views_.size() > 1; }
    QString modelText() const;           // what the model field says (for tests)
    void showProgress(const QString& stage, int value, int maximum);
    void hideProgress();

private:
    void updateMemory();

    QStatusBar* bar_;
    ElidedLabel* hover_ = nullptr;
    QProgressBar* progress_ = nullptr;
    ElidedLabel* model_ = nullptr;
    ElidedLabel* dtype_ = nullptr;
    ElidedLabel* threads_ = nullptr;
    ElidedLabel* memory_ = nullptr;
    QString modelText_, gridText_;
    int gridRows_ = 0, gridCols_ = 0;
    QStringList views_;
    bool valid_ = false;
    QTimer* memoryTimer_ = nullptr;
};

} // namespace kvsteer::ui
