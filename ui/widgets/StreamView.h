#pragma once
// StreamView: the unsteered and the steered answer side by side, streaming token by token.
// Tokens that differ between the two streams at the same step are highlighted in both panes;
// hovering any token shows its top-5 alternatives. A summary line says where the streams part.
#include "types/StudioTypes.h"

#include <QWidget>

class QLabel;
class QScrollArea;

namespace kvsteer::ui {

class ElidedLabel;
class TokenFlow;

class StreamView : public QWidget {
    Q_OBJECT
public:
    explicit StreamView(QWidget* parent = nullptr);

    void beginRun(const RunStarted& info);
    void addPair(const TokenPair& pair);
    void finishRun(const RunFinished& info);
    void failRun(const QString& message);
    void clear();
    void setStale(bool stale);   // settings changed since these answers were produced

    quint64 runId() const { return runId_; }
    bool running() const { return running_; }
    int tokenCount(bool steered) const;
    QString text(bool steered) const;
    QVector<StreamToken> tokens(bool steered) const;
    int firstDivergence() const { return firstDivergence_; }   // -1: none yet
    TokenFlow* flow(bool steered) const { return steered ? steered_ : unsteered_; }
    QString statusText() const;

    // Restores finished answers (e.g. from a session file).
    void restore(const QVector<StreamToken>& unsteered, const QVector<StreamToken>& steered);

Q_SIGNALS:
    void tokensAppended(int step);
    void finished(bool cancelled);

private:
    QWidget* makePane(const QString& title, const QString& subtitle, const QColor& accent, TokenFlow** flow, ElidedLabel** status,
                      QScrollArea** scroll);
    void updateSummary();

    TokenFlow* unsteered_ = nullptr;
    TokenFlow* steered_ = nullptr;
    ElidedLabel* unsteeredStatus_ = nullptr;
    ElidedLabel* steeredStatus_ = nullptr;
    QScrollArea* unsteeredScroll_ = nullptr;
    QScrollArea* steeredScroll_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* note_ = nullptr;

    quint64 runId_ = 0;
    bool running_ = false;
    int firstDivergence_ = -1;
    int steps_ = 0;
    double decodeMs_ = 0;
    bool cancelled_ = false;
    bool finishedU_ = false, finishedS_ = false;
};

} // namespace kvsteer::ui
