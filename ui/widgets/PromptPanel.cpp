#include "PromptPanel.h"

#include "Icons.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvsteer::ui {

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(6);

    auto* promptRow = new QHBoxLayout;
    promptRow->setSpacing(4);
    prompt_ = new QLineEdit(this);
    prompt_->setPlaceholderText(tr("Ask about the image, e.g. What color is the circle?"));
    prompt_->setClearButtonEnabled(true);
    setTemplate(QString(), QString());
    QFont pf = prompt_->font();
    pf.setPointSizeF(pf.pointSizeF() * 1.1);
    prompt_->setFont(pf);
    prompt_->setMinimumHeight(30);
    examples_ = new QToolButton(this);
    examples_->setText(tr("Examples"));
    examples_->setPopupMode(QToolButton::InstantPopup);
    examples_->setToolTip(tr("Questions the demo model was trained to answer"));
    examples_->setMenu(new QMenu(examples_));
    promptRow->addWidget(prompt_, 1);
    promptRow->addWidget(examples_);
    v->addLayout(promptRow);

    auto* settings = new QHBoxLayout;
    settings->setSpacing(6);
    maxTokens_ = new QSpinBox(this);
    maxTokens_->setRange(1, 2048);
    maxTokens_->setValue(32);
    maxTokens_->setToolTip(tr("Most tokens each stream generates (it stops earlier at end of answer)"));
    decoding_ = new QComboBox(this);
    decoding_->addItem(tr("Greedy"), false);
    decoding_->addItem(tr("Sample"), true);
    decoding_->setToolTip(tr("Greedy picks the most likely token; Sample draws with temperature and top-p (seeded, reproducible)"));
    temperature_ = new QDoubleSpinBox(this);
    temperature_->setRange(0.05, 5.0);
    temperature_->setSingleStep(0.05);
    temperature_->setValue(0.7);
    temperature_->setPrefix(tr("T "));
    temperature_->setToolTip(tr("Temperature"));
    topP_ = new QDoubleSpinBox(this);
    topP_->setRange(0.01, 1.0);
    topP_->setSingleStep(0.05);
    topP_->setValue(0.9);
    topP_->setPrefix(tr("top-p "));
    topP_->setToolTip(tr("Nucleus sampling: keep the smallest set of tokens whose probability reaches p"));
    seed_ = new QSpinBox(this);
    seed_->setRange(0, 999999);
    seed_->setPrefix(tr("seed "));
    seed_->setToolTip(tr("Random seed; both streams use it, so with no edit they sample the same answer"));
    settings->addWidget(new QLabel(tr("Max tokens"), this));
    settings->addWidget(maxTokens_);
    settings->addSpacing(4);
    settings->addWidget(decoding_);
    settings->addWidget(temperature_);
    settings->addWidget(topP_);
    settings->addWidget(seed_);
    settings->addStretch(1);
    stopAtEos_ = new QCheckBox(tr("Stop at end"), this);
    stopAtEos_->setChecked(true);
    stopAtEos_->setToolTip(tr("Stop a stream at the model's end-of-answer token; uncheck to see what it would say next"));
    settings->addWidget(stopAtEos_);
    v->addLayout(settings);

    auto* actions = new QHBoxLayout;
    live_ = new QCheckBox(tr("Live"), this);
    live_->setChecked(true);
    live_->setToolTip(tr("Re-run the steered answer on every stroke and setting change (from the kept prefill)"));
    stop_ = new QPushButton(icons::get(icons::Id::Stop), tr("Stop"), this);
    stop_->setToolTip(tr("Stop the run: the prefill or the decoding (Esc)"));
    run_ = new QPushButton(icons::get(icons::Id::Run), tr("Run"), this);
    run_->setToolTip(tr("Prefill (once per image and prompt), apply the plan and stream both answers (Ctrl+R)"));
    run_->setDefault(true);
    run_->setObjectName(QStringLiteral("runButton"));
    run_->setMinimumWidth(96);
    stop_->setMinimumWidth(80);
    actions->addWidget(live_);
    actions->addStretch(1);
    actions->addWidget(stop_);
    actions->addWidget(run_);
    v->addLayout(actions);

    connect(prompt_, &QLineEdit::returnPressed, this, [this] {
        if (run_->isEnabled()) Q_EMIT runRequested();
    });
    connect(prompt_, &QLineEdit::textEdited, this, &PromptPanel::promptEdited);
    connect(prompt_, &QLineEdit::textChanged, this, &PromptPanel::promptChanged);
    connect(run_, &QPushButton::clicked, this, &PromptPanel::runRequested);
    connect(stop_, &QPushButton::clicked, this, &PromptPanel::stopRequested);
    connect(live_, &QCheckBox::toggled, this, &PromptPanel::liveToggled);
    auto changed = [this] {
        updateSamplingUi();
        Q_EMIT generationChanged(generation());
    };
    connect(maxTokens_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(decoding_, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(temperature_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(topP_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(seed_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(stopAtEos_, &QCheckBox::toggled, this, changed);
    updateSamplingUi();
    setRunning(false);
    setCanRun(false);
}

QString PromptPanel::prompt() const { return prompt_->text(); }

void PromptPanel::setPrompt(const QString& text) {
    if (text != prompt_->text()) prompt_->setText(text);
}

GenerationSettings PromptPanel::generation() const {
    GenerationSettings g;
    g.maxNewTokens = maxTokens_->value();
    g.sample = decoding_->currentData().toBool();
    g.temperature = temperature_->value();
    g.topP = topP_->value();
    g.seed = quint64(seed_->value());
    g.stopAtEos = stopAtEos_->isChecked();
    return g;
}

void PromptPanel::setGeneration(const GenerationSettings& g) {
    const QSignalBlocker b1(maxTokens_), b2(decoding_), b3(temperature_), b4(topP_), b5(seed_), b6(stopAtEos_);
    maxTokens_->setValue(g.maxNewTokens);
    decoding_->setCurrentIndex(g.sample ? 1 : 0);
    temperature_->setValue(g.temperature);
    topP_->setValue(g.topP);
    seed_->setValue(int(g.seed));
    stopAtEos_->setChecked(g.stopAtEos);
    updateSamplingUi();
}

bool PromptPanel::live() const { return live_->isChecked(); }
void PromptPanel::setLive(bool live) { live_->setChecked(live); }

void PromptPanel::setRunning(bool running) {
    running_ = running;
    stop_->setEnabled(running);
    run_->setEnabled(canRun_);
}

void PromptPanel::setCanRun(bool canRun, const QString& why) {
    canRun_ = canRun;
    run_->setEnabled(canRun);
    run_->setToolTip(canRun ? tr("Prefill (once per image and prompt), apply the plan and stream both answers (Ctrl+R)") : why);
}

void PromptPanel::setExamples(const QStringList& prompts) {
    QMenu* m = examples_->menu();
    m->clear();
    for (const QString& p : prompts)
        m->addAction(p, this, [this, p] {
            prompt_->setText(p);
            Q_EMIT promptEdited(p);
        });
    examples_->setVisible(!prompts.isEmpty());
}

QStringList PromptPanel::examples() const {
    QStringList out;
    for (const QAction* a : examples_->menu()->actions()) out << a->text();
    return out;
}

void PromptPanel::setTemplate(const QString& family, const QString& promptTemplate) {
    template_ = promptTemplate;
    if (promptTemplate.isEmpty()) {
        prompt_->setToolTip(tr("The question; the model's family wraps it in its own prompt template. Enter runs."));
        return;
    }
    QString shown = promptTemplate;
    shown.replace(QLatin1Char('\n'), QStringLiteral("\\n"));   // a newline the template ends with stays visible
    // Rich text on purpose: a template's "<image>" would otherwise be read as a tag and vanish.
    prompt_->setToolTip(tr("<p>The question; %1 reads it as <code>%2</code>. Enter runs.</p>").arg(family.toHtmlEscaped(), shown.toHtmlEscaped()));
}

void PromptPanel::updateSamplingUi() {
    const bool sample = decoding_->currentData().toBool();
    temperature_->setVisible(sample);
    topP_->setVisible(sample);
    seed_->setVisible(sample);
}

} // namespace kvsteer::ui
