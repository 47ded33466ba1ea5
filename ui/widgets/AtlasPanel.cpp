#include "widgets/AtlasPanel.h"

#include "widgets/AtlasView.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace kvsteer::ui {

AtlasPanel::AtlasPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 4, 6, 4);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    strengths_ = new QLineEdit(this);
    strengths_->setPlaceholderText(tr("auto: 5 log-spaced, c/4 … 4c"));
    strengths_->setToolTip(tr("The strengths to try (c_v; c_k when the operator uses keys), comma-separated. Empty: five "
                              "log-spaced values from a quarter to four times the Steering panel's."));
    form->addRow(tr("Strengths"), strengths_);
    layers_ = new QLineEdit(QStringLiteral("all, early, middle, late"), this);
    layers_->setToolTip(tr("Layer ranges, comma-separated: all, early, middle, late (the model's thirds) or A-B."));
    form->addRow(tr("Layers"), layers_);
    tokens_ = new QSpinBox(this);
    tokens_->setRange(1, 64);
    tokens_->setValue(8);
    tokens_->setToolTip(tr("Greedy tokens per cell: an answer that has not ended by then counts as degenerate."));
    form->addRow(tr("Tokens"), tokens_);
    v->addLayout(form);

    auto* buttons = new QHBoxLayout;
    run_ = new QPushButton(tr("Run Atlas"), this);
    run_->setToolTip(tr("Decode every strength × layer range from the kept prefill, several cells per forward pass"));
    stop_ = new QPushButton(tr("Stop"), this);
    stop_->setEnabled(false);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    buttons->addWidget(run_);
    buttons->addWidget(stop_);
    buttons->addWidget(status_, 1);
    v->addLayout(buttons);
    view_ = new AtlasView(this);
    v->addWidget(view_, 1);
    connect(run_, &QPushButton::clicked, this, &AtlasPanel::runRequested);
    connect(stop_, &QPushButton::clicked, this, &AtlasPanel::stopRequested);
    setCanRun(false, tr("Load a model and open an image first"));
}

QVector<double> AtlasPanel::strengths(QString* error) const {
    QVector<double> out;
    for (const QString& item : strengths_->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const double v = item.trimmed().toDouble(&ok);
        if (!ok) {
            if (error) *error = tr("'%1' is not a number").arg(item.trimmed());
            return {};
        }
        out << v;
    }
    return out;
}

void AtlasPanel::setStrengths(const QVector<double>& values) {
    QStringList parts;
    for (double v : values) parts << QString::number(v, 'g', 6);
    strengths_->setText(parts.join(QStringLiteral(", ")));
}

QStringList AtlasPanel::layerRanges() const {
    QStringList out;
    for (const QString& item : layers_->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) out << item.trimmed();
    return out;
}

void AtlasPanel::setLayerRanges(const QStringList& ranges) { layers_->setText(ranges.join(QStringLiteral(", "))); }
int AtlasPanel::maxNewTokens() const { return tokens_->value(); }
void AtlasPanel::setMaxNewTokens(int n) { tokens_->setValue(n); }

void AtlasPanel::setRunning(bool running) {
    running_ = running;
    stop_->setEnabled(running);
    run_->setEnabled(canRun_ && !running);
}

void AtlasPanel::setCanRun(bool can, const QString& why) {
    canRun_ = can;
    run_->setEnabled(can && !running_);
    run_->setToolTip(can ? tr("Decode every strength × layer range from the kept prefill, several cells per forward pass") : why);
}

void AtlasPanel::setStatus(const QString& text) { status_->setText(text); }
QString AtlasPanel::status() const { return status_->text(); }

} // namespace kvsteer::ui
