#pragma once
// TokenStripController: with a text-only model the canvas is the prompt's token strip. Every
// prompt edit asks the Worker for the tokens the cache will hold (the newest request wins) and
// hands them to the canvas, whose paint follows the tokens the old and new prompts share; the
// header above the canvas says what the strip is. A model with a vision tower leaves strip mode.
#include <QObject>

class QLabel;

namespace kvsteer::ui {

class ModelController;
class PatchCanvas;
class PromptPanel;
class Worker;

class TokenStripController : public QObject {
    Q_OBJECT
public:
    TokenStripController(Worker* worker, const ModelController* model, PromptPanel* prompt, PatchCanvas* canvas, QLabel* header,
                         QObject* parent = nullptr);
    // True while the scene is a text prompt (a text-only model is loaded): runs need no image.
    bool active() const;

Q_SIGNALS:
    void tokenizeRequested(quint64 id, const QString& prompt);

private:
    void onModelLoaded();
    void refresh();
    void onTokens(quint64 id, const QString& prompt, const QStringList& pieces);

    const ModelController* model_;
    PromptPanel* prompt_;
    PatchCanvas* canvas_;
    QLabel* header_;
    quint64 lastId_ = 0;
};

} // namespace kvsteer::ui
