#include "StreamView.h"

#include "ElidedLabel.h"
#include "TokenFlow.h"

#include <QApplication>
#include <QClipboard>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvsteer::ui {

namespace {
const QColor kUnsteeredAccent(0x4A, 0x7F, 0xC1);
const QColor kSteeredAccent(0xF0, 0x7A, 0x1A);
}

StreamView::StreamView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(6);

    auto* panes = new QHBoxLayout;
    panes->setSpacing(8);
    panes->addWidget(makePane(tr("Unsteered"), tr("Decoded from the pristine cache of the prefill"), kUnsteeredAccent, &unsteered_,
                              &unsteeredStatus_, &unsteeredScroll_));
    panes->addWidget(makePane(tr("Steered"), tr("Decoded from the cache after the plan's edit"), kSteeredAccent, &steered_, &steeredStatus_,
                              &steeredScroll_));
    outer->addLayout(panes, 1);

    note_ = new QLabel(this);
    note_->setWordWrap(true);
    note_->setObjectName(QStringLiteral("streamNote"));
    note_->setStyleSheet(QStringLiteral("QLabel#streamNote { background: #FFF4E0; border: 1px solid #F3C98B; border-radius: 4px;"
                                        " padding: 4px 8px; color: #6B4A12; }"));
    note_->hide();
    outer->addWidget(note_);

    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("streamSummary"));
    summary_->setTextFormat(Qt::RichText);
    summary_->setWordWrap(true);
    summary_->setStyleSheet(QStringLiteral("QLabel#streamSummary { color: palette(placeholder-text); padding: 0 2px; }"));
    outer->addWidget(summary_);

    unsteered_->setPlaceholder(tr("Press Run (Ctrl+R) to generate. The unsteered answer comes from the model as it is."));
    steered_->setPlaceholder(tr("The steered answer appears here, token by token. Tokens that differ from the unsteered "
                                "answer are highlighted; hover a token for its top-5 alternatives."));
    updateSummary();
}

QWidget* StreamView::makePane(const QString& title, const QString& subtitle, const QColor& accent, TokenFlow** flow, ElidedLabel** status,
                              QScrollArea** scroll) {
    auto* frame = new QFrame(this);
    frame->setObjectName(QStringLiteral("streamPane"));
    frame->setStyleSheet(QStringLiteral("QFrame#streamPane { background: palette(base); border: 1px solid palette(mid);"
                                        " border-radius: 6px; border-top: 3px solid %1; }")
                             .arg(accent.name()));
    auto* v = new QVBoxLayout(frame);
    v->setContentsMargins(1, 6, 1, 1);
    v->setSpacing(2);

    auto* header = new QHBoxLayout;
    header->setContentsMargins(10, 0, 6, 0);
    auto* titleLabel = new QLabel(QStringLiteral("<b>%1</b>").arg(title), frame);
    titleLabel->setToolTip(subtitle);
    header->addWidget(titleLabel);
    *status = new ElidedLabel(frame);
    (*status)->setStyleSheet(QStringLiteral("color: #8a929c;"));
    header->addWidget(*status, 1);
    auto* copy = new QToolButton(frame);
    copy->setText(tr("Copy"));
    copy->setAutoRaise(true);
    copy->setToolTip(tr("Copy this answer to the clipboard"));
    header->addWidget(copy);
    v->addLayout(header);

    *flow = new TokenFlow(frame);
    (*flow)->setAccent(accent);
    TokenFlow* f = *flow;
    connect(copy, &QToolButton::clicked, this, [f] { QApplication::clipboard()->setText(f->text()); });

    *scroll = new QScrollArea(frame);
    (*scroll)->setWidget(f);
    (*scroll)->setWidgetResizable(true);
    (*scroll)->setFrameShape(QFrame::NoFrame);
    (*scroll)->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    (*scroll)->viewport()->setAutoFillBackground(false);
    f->setAutoFillBackground(false);
    v->addWidget(*scroll, 1);
    return frame;
}

void StreamView::clear() {
    unsteered_->clear();
    steered_->clear();
    runId_ = 0;
    running_ = false;
    firstDivergence_ = -1;
    steps_ = 0;
    decodeMs_ = 0;
    cancelled_ = false;
    finishedU_ = finishedS_ = false;
    note_->hide();
    for (ElidedLabel* status : {unsteeredStatus_, steeredStatus_}) {
        status->setFullText(QString());
        status->setDescription(QString());   // the last run's speed
    }
    updateSummary();
}

void StreamView::beginRun(const RunStarted& info) {
    clear();
    runId_ = info.runId;
    running_ = true;
    if (!info.note.isEmpty()) {
        note_->setText(info.note);
        note_->show();
    }
    for (ElidedLabel* status : {unsteeredStatus_, steeredStatus_}) {
        status->setFullText(tr("generating…"));
        status->setDescription(QString());   // the last run's speed
    }
    updateSummary();
}

void StreamView::addPair(const TokenPair& pair) {
    if (pair.runId != runId_) return;
    const bool both = pair.unsteered.valid() && pair.steered.valid();
    const bool differ = both ? pair.unsteered.id != pair.steered.id : (pair.unsteered.valid() != pair.steered.valid());
    if (differ && firstDivergence_ < 0) firstDivergence_ = pair.step;
    if (pair.unsteered.valid()) unsteered_->append(pair.unsteered, differ);
    if (pair.steered.valid()) steered_->append(pair.steered, differ);
    if (pair.unsteered.eos) finishedU_ = true;
    if (pair.steered.eos) finishedS_ = true;
    steps_ = pair.step + 1;
    unsteeredStatus_->setFullText(tr("%n token(s)", nullptr, unsteered_->count()) + (finishedU_ ? tr(" · done") : QString()));
    steeredStatus_->setFullText(tr("%n token(s)", nullptr, steered_->count()) + (finishedS_ ? tr(" · done") : QString()));
    // Keep the newest tokens in view while streaming.
    for (QScrollArea* s : {unsteeredScroll_, steeredScroll_}) s->verticalScrollBar()->setValue(s->verticalScrollBar()->maximum());
    updateSummary();
    Q_EMIT tokensAppended(pair.step);
}

void StreamView::finishRun(const RunFinished& info) {
    if (info.runId != runId_) return;
    running_ = false;
    cancelled_ = info.cancelled;
    decodeMs_ = info.decodeMs;
    // The speed is the pair's (one batch of two) and the run summary says it too: here, in the tooltip.
    const double tps = info.decodeMs > 0 ? 1000.0 * info.steps / info.decodeMs : 0;
    const QString speed = tps > 0 ? tr("Both answers decoded at %1 tok/s, as one batch of two").arg(tps, 0, 'f', tps >= 100 ? 0 : 1) : QString();
    const QString tail = info.cancelled ? tr(" · stopped") : QString();
    unsteeredStatus_->setFullText(tr("%n token(s)", nullptr, unsteered_->count()) + tail);
    steeredStatus_->setFullText(tr("%n token(s)", nullptr, steered_->count()) + tail);
    unsteeredStatus_->setDescription(speed);
    steeredStatus_->setDescription(speed);
    updateSummary();
    Q_EMIT finished(info.cancelled);
}

void StreamView::failRun(const QString& message) {
    running_ = false;
    unsteeredStatus_->setFullText(tr("failed"));
    steeredStatus_->setFullText(tr("failed"));
    note_->setText(message);
    note_->show();
    updateSummary();
}

void StreamView::setStale(bool stale) {
    unsteered_->setStale(stale && !running_);
    steered_->setStale(stale && !running_);
    updateSummary();
}

int StreamView::tokenCount(bool steered) const { return flow(steered)->count(); }
QString StreamView::text(bool steered) const { return flow(steered)->text(); }
QVector<StreamToken> StreamView::tokens(bool steered) const { return flow(steered)->tokens(); }

void StreamView::restore(const QVector<StreamToken>& unsteered, const QVector<StreamToken>& steered) {
    clear();
    QVector<bool> du(unsteered.size()), ds(steered.size());
    const int n = std::max(unsteered.size(), steered.size());
    for (int i = 0; i < n; ++i) {
        const bool hasU = i < unsteered.size(), hasS = i < steered.size();
        const bool differ = hasU && hasS ? unsteered[i].id != steered[i].id : hasU != hasS;
        if (hasU) du[i] = differ;
        if (hasS) ds[i] = differ;
        if (differ && firstDivergence_ < 0) firstDivergence_ = i;
    }
    unsteered_->setTokens(unsteered, du);
    steered_->setTokens(steered, ds);
    steps_ = n;
    if (n == 0) return;   // a session saved before any run: the panes as clear() left them
    unsteeredStatus_->setFullText(tr("%n token(s)", nullptr, unsteered.size()));
    steeredStatus_->setFullText(tr("%n token(s)", nullptr, steered.size()));
    updateSummary();
}

QString StreamView::statusText() const { return summary_->text(); }

void StreamView::updateSummary() {
    QString s;
    const int u = unsteered_->count(), st = steered_->count();
    if (u == 0 && st == 0) {
        s = running_ ? tr("Waiting for the first token…") : QString();
    } else if (firstDivergence_ < 0) {
        s = tr("Identical so far (%n token(s)): this edit has not changed the answer.", nullptr, std::max(u, st));
    } else {
        s = tr("The streams part at token <b>%1</b>; %2 of %3 tokens differ.")
                .arg(firstDivergence_ + 1)
                .arg(steered_->differingCount())
                .arg(std::max(u, st));
    }
    if (unsteered_->isStale()) s += tr(" <i>(settings changed since: press Run)</i>");
    summary_->setText(s);
}

} // namespace kvsteer::ui
