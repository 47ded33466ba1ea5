#include "studio/TokenStripController.h"

#include "studio/ModelController.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/TokenStripLayout.h"
#include "worker/Worker.h"

#include <QLabel>

namespace kvsteer::ui {

TokenStripController::TokenStripController(Worker* worker, const ModelController* model, PromptPanel* prompt, PatchCanvas* canvas,
                                           QLabel* header, QObject* parent)
    : QObject(parent), model_(model), prompt_(prompt), canvas_(canvas), header_(header) {
    connect(this, &TokenStripController::tokenizeRequested, worker, &Worker::tokenizePrompt, Qt::QueuedConnection);
    connect(worker, &Worker::promptTokens, this, &TokenStripController::onTokens);
    connect(model, &ModelController::loaded, this, &TokenStripController::onModelLoaded);
    connect(prompt, &PromptPanel::promptChanged, this, [this] {
        if (active()) refresh();
    });
}

bool TokenStripController::active() const { return model_->info().textOnly(); }

void TokenStripController::onModelLoaded() {
    if (!active()) {
        canvas_->setTokenStrip({});
        return;
    }
    canvas_->clearImage();
    refresh();
}

void TokenStripController::refresh() { Q_EMIT tokenizeRequested(++lastId_, prompt_->prompt().trimmed()); }

void TokenStripController::onTokens(quint64 id, const QString&, const QStringList& pieces) {
    if (id != lastId_ || !active()) return;   // a newer prompt is on its way, or the model changed
    canvas_->setTokenStrip(pieces);
    const QString last = pieces.isEmpty() ? QString() : TokenStripLayout::display(pieces.back());
    header_->setText(tr("<b>Prompt tokens</b> <span style='color:#8a929c'>%n token(s) the cache holds, in the model's template · "
                        "paint the ones to steer · the prompt's last token is fed again when decoding, after “%1”</span>",
                        nullptr, int(pieces.size()))
                         .arg(last.toHtmlEscaped()));
}

} // namespace kvsteer::ui
