#include "widgets/JobForm.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace kvsteer::ui {

JobForm::JobForm(const JobFormText& text, QWidget* parent) : QWidget(parent), text_(text) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    form_ = new QFormLayout;
    form_->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    auto* pick = new QHBoxLayout;
    input_ = new QLineEdit(this);
    input_->setPlaceholderText(text.inputPlaceholder);
    auto* browse = new QPushButton(tr("Browse…"), this);
    pick->addWidget(input_, 1);
    pick->addWidget(browse);
    form_->addRow(text.inputLabel, pick);
    outDir_ = new QLineEdit(this);
    outDir_->setToolTip(text.outTip);
    form_->addRow(tr("Results"), outDir_);
    tokens_ = new QSpinBox(this);
    tokens_->setRange(1, 256);
    tokens_->setValue(text.maxNewTokens);
    form_->addRow(tr("Max tokens"), tokens_);
    v->addLayout(form_);

    auto* buttons = new QHBoxLayout;
    run_ = new QPushButton(text.runLabel, this);
    run_->setToolTip(text.runTip);
    stop_ = new QPushButton(tr("Stop"), this);
    stop_->setEnabled(false);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    buttons->addWidget(run_);
    buttons->addWidget(stop_);
    buttons->addWidget(progress_, 1);
    v->addLayout(buttons);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    v->addWidget(status_);

    connect(input_, &QLineEdit::editingFinished, this, [this] { setInput(input()); });
    connect(browse, &QPushButton::clicked, this, &JobForm::browseRequested);
    connect(run_, &QPushButton::clicked, this, &JobForm::runRequested);
    connect(stop_, &QPushButton::clicked, this, &JobForm::stopRequested);
}

void JobForm::addRow(const QString& label, QWidget* field) { form_->insertRow(form_->rowCount() - 1, label, field); }
void JobForm::addRow(const QString& label, QLayout* fields) { form_->insertRow(form_->rowCount() - 1, label, fields); }

QString JobForm::input() const { return input_->text().trimmed(); }

void JobForm::setInput(const QString& path) {
    input_->setText(path);
    // A folder beside the input, unless the person chose another (a proposed one ends in the suffix).
    const QFileInfo f(path);
    if (!path.isEmpty() && (outDir().isEmpty() || outDir().endsWith(text_.outSuffix)))
        setOutDir(f.absolutePath() + QLatin1Char('/') + f.completeBaseName() + text_.outSuffix);
}

QString JobForm::outDir() const { return outDir_->text().trimmed(); }

QString JobForm::proposeFreshOutDir() {
    const QFileInfo in(input());
    const QString base = in.absolutePath() + QLatin1Char('/') + in.completeBaseName();
    const QString current = outDir();
    if (input().isEmpty() || !current.startsWith(base) || !current.endsWith(text_.outSuffix)) return {};
    for (int n = 2;; ++n) {
        const QString candidate = base + QStringLiteral("-%1").arg(n) + text_.outSuffix;
        if (QFileInfo::exists(candidate)) continue;
        setOutDir(candidate);
        return candidate;
    }
}

void JobForm::setOutDir(const QString& dir) { outDir_->setText(dir); }
int JobForm::maxNewTokens() const { return tokens_->value(); }
void JobForm::setMaxNewTokens(int tokens) { tokens_->setValue(tokens); }
QString JobForm::status() const { return status_->text(); }
void JobForm::setStatus(const QString& text) { status_->setText(text); }

void JobForm::setRunning(bool running) {
    run_->setEnabled(!running);
    stop_->setEnabled(running);
}

void JobForm::setProgress(int done, int total) {
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
}

} // namespace kvsteer::ui
