#include "SteeringPanel.h"

#include "FlowLayout.h"
#include "Icons.h"
#include "steer/SteeringOperator.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvsteer::ui {

namespace {

// What the panel says of each core operator (core/steer/SteeringOperator.h names them).
struct OperatorDoc {
    const char* title;
    const char* help;
};

OperatorDoc operatorDoc(SteeringOperator op) {
    switch (op) {
    case SteeringOperator::Add:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Add"),
                QT_TRANSLATE_NOOP("SteeringPanel", "K += s·c_k·ΔK and V += s·c_v·ΔV at every painted patch.")};
    case SteeringOperator::NormPreserving:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Norm-preserving"),
                QT_TRANSLATE_NOOP("SteeringPanel", "Moves K and V toward the direction, keeping their norms.")};
    case SteeringOperator::PreRope:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Pre-RoPE keys"),
                QT_TRANSLATE_NOOP("SteeringPanel", "Rotates ΔK to each patch's RoPE angle before adding; needs pre-RoPE vectors.")};
    case SteeringOperator::Scale:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Scale"),
                QT_TRANSLATE_NOOP("SteeringPanel", "V ×= 1 + s·c_v and K ×= 1 + s·c_k. Needs no vectors.")};
    case SteeringOperator::Spotlight:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Spotlight"),
                QT_TRANSLATE_NOOP("SteeringPanel", "Adds s·c_k to the attention logits of painted patches while decoding. Needs no vectors.")};
    case SteeringOperator::Ablate:
        return {QT_TRANSLATE_NOOP("SteeringPanel", "Ablate"),
                QT_TRANSLATE_NOOP("SteeringPanel", "Pulls K/V of painted patches toward the image mean (or zero). Needs no vectors.")};
    }
    return {"", ""};
}

QLabel* hint(const QString& text, QWidget* parent) {
    auto* l = new QLabel(text, parent);
    l->setWordWrap(true);
    l->setStyleSheet(QStringLiteral("color: #6b737d;"));
    return l;
}

QToolButton* toolButton(icons::Id icon, const QString& text, const QString& tip, QWidget* parent) {
    auto* b = new QToolButton(parent);
    b->setIcon(icons::get(icon));
    b->setText(text);
    b->setToolTip(tip);
    b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    return b;
}

} // namespace

SteeringPanel::SteeringPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(8, 6, 8, 8);
    v->setSpacing(10);
    v->addWidget(buildVectorsGroup());
    v->addWidget(buildPlanGroup());
    v->addWidget(buildMaskGroup());
    v->addStretch(1);
    setModel(0, 0);
    updateOperatorUi();
}

// ---- vectors -------------------------------------------------------------------------------------

QWidget* SteeringPanel::buildVectorsGroup() {
    auto* box = new QGroupBox(tr("Steering vectors"), this);
    auto* v = new QVBoxLayout(box);
    v->setSpacing(6);

    source_ = new QComboBox(box);
    source_->addItem(tr("Toward a second image"), int(VectorSource::SecondImage));
    source_->addItem(tr("Painted region vs the rest"), int(VectorSource::PaintedRegion));
    source_->addItem(tr("Contrastive text pairs"), int(VectorSource::TextPairs));
    source_->addItem(tr("From a vector file"), int(VectorSource::File));
    source_->setToolTip(tr("Where the direction ΔK, ΔV comes from"));
    v->addWidget(source_);

    pages_ = new QStackedWidget(box);
    // Second image.
    {
        auto* page = new QWidget(pages_);
        auto* g = new QGridLayout(page);
        g->setContentsMargins(0, 0, 0, 0);
        targetThumb_ = new QLabel(page);
        targetThumb_->setFixedSize(56, 56);
        targetThumb_->setAlignment(Qt::AlignCenter);
        targetThumb_->setStyleSheet(QStringLiteral("border: 1px solid palette(mid); border-radius: 3px; background: palette(base);"));
        targetLabel_ = new QLabel(tr("No target image"), page);
        targetLabel_->setWordWrap(true);
        auto* choose = new QPushButton(tr("Choose…"), page);
        choose->setToolTip(tr("The image whose look the steered answer should take on (e.g. the same scene with a blue circle)"));
        connect(choose, &QPushButton::clicked, this, &SteeringPanel::chooseTargetImageRequested);
        g->addWidget(targetThumb_, 0, 0, 2, 1);
        g->addWidget(targetLabel_, 0, 1);
        g->addWidget(choose, 1, 1, Qt::AlignLeft);
        g->addWidget(hint(tr("Δ = mean over patches of (target − current image), same prompt."), page), 2, 0, 1, 2);
        g->setColumnStretch(1, 1);
        pages_->addWidget(page);
    }
    // Painted region.
    {
        auto* page = new QWidget(pages_);
        auto* l = new QVBoxLayout(page);
        l->setContentsMargins(0, 0, 0, 0);
        l->addWidget(hint(tr("Δ = mean over the painted patches − mean over the rest of the current image. "
                             "Paint the region first, compute, then paint where to apply it."),
                          page));
        pages_->addWidget(page);
    }
    // Text pairs.
    {
        auto* page = new QWidget(pages_);
        auto* l = new QVBoxLayout(page);
        l->setContentsMargins(0, 0, 0, 0);
        pairs_ = new QTableWidget(3, 2, page);
        pairs_->setHorizontalHeaderLabels({tr("Positive prompt"), tr("Negative prompt")});
        pairs_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
        pairs_->verticalHeader()->setVisible(false);
        pairs_->setMinimumHeight(110);
        pairs_->setToolTip(tr("Full prompts; Δ is the mean K/V difference at their last token (cache steering)"));
        l->addWidget(pairs_);
        auto* row = new QHBoxLayout;
        auto* add = new QPushButton(tr("Add pair"), page);
        auto* remove = new QPushButton(tr("Remove"), page);
        auto* load = new QPushButton(tr("Load JSONL…"), page);
        load->setToolTip(tr("One {\"positive\": …, \"negative\": …} object per line"));
        row->addWidget(add);
        row->addWidget(remove);
        row->addStretch(1);
        row->addWidget(load);
        l->addLayout(row);
        connect(add, &QPushButton::clicked, this, [this] { pairs_->insertRow(pairs_->rowCount()); });
        connect(remove, &QPushButton::clicked, this, [this] {
            const int r = pairs_->currentRow() >= 0 ? pairs_->currentRow() : pairs_->rowCount() - 1;
            if (r >= 0) pairs_->removeRow(r);
        });
        connect(load, &QPushButton::clicked, this, &SteeringPanel::loadTextPairsRequested);
        pages_->addWidget(page);
    }
    // File.
    {
        auto* page = new QWidget(pages_);
        auto* l = new QVBoxLayout(page);
        l->setContentsMargins(0, 0, 0, 0);
        l->addWidget(hint(tr("A kvsteer vector file (.safetensors) made for this model, e.g. by `kvsteer extract` "
                             "or exported here. Its operator, coefficients and layers are adopted."),
                          page));
        pages_->addWidget(page);
    }
    v->addWidget(pages_);

    auto* options = new QHBoxLayout;
    keySpace_ = new QComboBox(box);
    keySpace_->addItem(tr("Post-RoPE keys"), false);
    keySpace_->addItem(tr("Pre-RoPE keys"), true);
    keySpace_->setToolTip(tr("Keys as cached (post-RoPE), or rotated back to position-free space (for the Pre-RoPE operator)"));
    perPosition_ = new QCheckBox(tr("Per position"), box);
    perPosition_->setToolTip(tr("Keep one direction per patch instead of the mean over patches (image pair only)"));
    pca_ = new QCheckBox(tr("PCA"), box);
    pca_->setToolTip(tr("Use the first principal direction of the individual differences instead of their mean"));
    options->addWidget(keySpace_);
    options->addWidget(perPosition_);
    options->addWidget(pca_);
    options->addStretch(1);
    v->addLayout(options);

    compute_ = new QPushButton(icons::get(icons::Id::Compute), tr("Compute vectors"), box);
    compute_->setToolTip(tr("Run the recipe on the model (prefills the images or prompts it needs)"));
    v->addWidget(compute_);

    vectorsStatus_ = new QLabel(box);
    vectorsStatus_->setWordWrap(true);
    vectorsStatus_->setObjectName(QStringLiteral("vectorsStatus"));
    v->addWidget(vectorsStatus_);
    proposal_ = new QLabel(box);
    proposal_->setWordWrap(true);
    proposal_->setObjectName(QStringLiteral("strengthProposal"));
    proposal_->setStyleSheet(QStringLiteral("color: #3A404A; background: #EEF4FC; border-radius: 4px; padding: 4px;"));
    proposal_->hide();
    v->addWidget(proposal_);

    auto* io = new FlowLayout(nullptr, 4, 4);   // one line in a wide dock, two in a narrow one
    import_ = toolButton(icons::Id::ImportVectors, tr("Import…"), tr("Import a vector file (Ctrl+I)"), box);
    export_ = toolButton(icons::Id::ExportVectors, tr("Export…"), tr("Export the vectors with the current plan settings and mask (Ctrl+E)"), box);
    clearVectors_ = toolButton(icons::Id::Clear, tr("Clear"), tr("Forget the current vectors"), box);
    io->addWidget(import_);
    io->addWidget(export_);
    io->addWidget(clearVectors_);
    auto* python = toolButton(icons::Id::ExportVectors, tr("Copy as Python"), tr("Put a Hugging Face snippet for this plan on the clipboard"), box);
    python->setObjectName(QStringLiteral("copyPython"));
    io->addWidget(python);
    v->addLayout(io);

    connect(source_, qOverload<int>(&QComboBox::currentIndexChanged), this, &SteeringPanel::showSourcePage);
    connect(compute_, &QPushButton::clicked, this, [this] {
        if (source() == VectorSource::File) Q_EMIT importVectorsRequested();
        else Q_EMIT computeRequested(recipe());
    });
    connect(import_, &QToolButton::clicked, this, &SteeringPanel::importVectorsRequested);
    connect(export_, &QToolButton::clicked, this, &SteeringPanel::exportVectorsRequested);
    connect(clearVectors_, &QToolButton::clicked, this, &SteeringPanel::clearVectorsRequested);
    connect(python, &QToolButton::clicked, this, &SteeringPanel::copyPythonRequested);
    showSourcePage(source_->currentIndex());
    setVectorsInfo(VectorsInfo());
    return box;
}

// The chosen source's page, and the recipe options that apply to it.
void SteeringPanel::showSourcePage(int i) {
    pages_->setCurrentIndex(i);
    // The stack is as tall as the page shown, not as its tallest page: no blank band under a short one.
    for (int p = 0; p < pages_->count(); ++p)
        pages_->widget(p)->setSizePolicy(QSizePolicy::Preferred, p == i ? QSizePolicy::Preferred : QSizePolicy::Ignored);
    pages_->updateGeometry();
    const bool file = VectorSource(source_->itemData(i).toInt()) == VectorSource::File;
    compute_->setText(file ? tr("Import vector file…") : tr("Compute vectors"));
    compute_->setIcon(icons::get(file ? icons::Id::ImportVectors : icons::Id::Compute));
    // A file's vectors are made already: the recipe's options are not shown for it.
    keySpace_->setVisible(!file);
    perPosition_->setVisible(!file);
    pca_->setVisible(!file);
    perPosition_->setEnabled(VectorSource(source_->itemData(i).toInt()) == VectorSource::SecondImage);
}

VectorSource SteeringPanel::source() const { return VectorSource(source_->currentData().toInt()); }

void SteeringPanel::setSource(VectorSource s) { source_->setCurrentIndex(source_->findData(int(s))); }

RecipeRequest SteeringPanel::recipe() const {
    RecipeRequest r;
    r.source = source();
    r.targetImage = targetBytes_;
    r.targetName = QFileInfo(targetPath_).fileName();
    r.pairs = textPairs();
    r.preRope = preRope();
    r.perPosition = perPosition_->isChecked() && r.source == VectorSource::SecondImage;
    r.pca = pca_->isChecked();
    return r;
}

void SteeringPanel::setTargetImage(const QString& path, const QByteArray& bytes) {
    targetPath_ = path;
    targetBytes_ = bytes;
    QImage img;
    img.loadFromData(bytes);
    if (img.isNull() || path.isEmpty()) {
        targetLabel_->setText(path.isEmpty() ? tr("No target image") : tr("%1 (unreadable)").arg(QFileInfo(path).fileName()));
        targetThumb_->clear();
        return;
    }
    targetLabel_->setText(QStringLiteral("<b>%1</b><br><span style='color:#6b737d'>%2×%3</span>")
                              .arg(QFileInfo(path).fileName().toHtmlEscaped())
                              .arg(img.width())
                              .arg(img.height()));
    targetThumb_->setPixmap(QPixmap::fromImage(img.scaled(54, 54, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

QVector<TextPairItem> SteeringPanel::textPairs() const {
    QVector<TextPairItem> out;
    for (int r = 0; r < pairs_->rowCount(); ++r) {
        const QTableWidgetItem* p = pairs_->item(r, 0);
        const QTableWidgetItem* n = pairs_->item(r, 1);
        TextPairItem item{p ? p->text() : QString(), n ? n->text() : QString()};
        if (!item.positive.trimmed().isEmpty() || !item.negative.trimmed().isEmpty()) out.push_back(item);
    }
    return out;
}

void SteeringPanel::setTextPairs(const QVector<TextPairItem>& pairs) {
    pairs_->setRowCount(std::max<int>(3, int(pairs.size())));
    for (int r = 0; r < pairs_->rowCount(); ++r) {
        pairs_->setItem(r, 0, new QTableWidgetItem(r < pairs.size() ? pairs[r].positive : QString()));
        pairs_->setItem(r, 1, new QTableWidgetItem(r < pairs.size() ? pairs[r].negative : QString()));
    }
}

bool SteeringPanel::preRope() const { return keySpace_->currentData().toBool(); }

void SteeringPanel::setRecipeOptions(bool preRope, bool perPosition, bool pca) {
    keySpace_->setCurrentIndex(preRope ? 1 : 0);
    perPosition_->setChecked(perPosition);
    pca_->setChecked(pca);
}

void SteeringPanel::setVectorsInfo(const VectorsInfo& info) {
    vectors_ = info;
    showProposal(QString());   // a proposal was for the vectors before these
    if (!info.valid()) {
        vectorsStatus_->setText(tr("<span style='color:#8a6d1f'>● No vectors yet.</span> Add, Norm-preserving and Pre-RoPE "
                                   "need them; Scale, Spotlight and Ablate do not."));
    } else {
        vectorsStatus_->setText(QStringLiteral("<span style='color:#2e9d5b'>●</span> <b>%1</b><br><span style='color:#6b737d'>%2</span>")
                                    .arg(info.summary().toHtmlEscaped(), info.origin.toHtmlEscaped()));
    }
    export_->setEnabled(info.valid() && !busy_);
    clearVectors_->setEnabled(info.valid() && !busy_);
}

void SteeringPanel::showProposal(const QString& howChosen) {
    proposal_->setText(howChosen);
    proposal_->setVisible(!howChosen.isEmpty());
}

QString SteeringPanel::proposalText() const { return proposal_->isHidden() ? QString() : proposal_->text(); }

void SteeringPanel::applySuggestions(const VectorsInfo& info) {
    quiet_ = true;
    if (!info.suggestedOperator.isEmpty()) {
        const int i = op_->findData(info.suggestedOperator);
        if (i >= 0) op_->setCurrentIndex(i);
    }
    if (info.suggestedCk.size() == 1) ck_->setValue(info.suggestedCk.front());
    if (info.suggestedCv.size() == 1) cv_->setValue(info.suggestedCv.front());
    if (!info.suggestedLayers.isEmpty()) {
        layerFrom_->setValue(*std::min_element(info.suggestedLayers.begin(), info.suggestedLayers.end()));
        layerTo_->setValue(*std::max_element(info.suggestedLayers.begin(), info.suggestedLayers.end()));
    }
    quiet_ = false;
    updateOperatorUi();
    emitPlan();
}

void SteeringPanel::setBusy(bool busy) {
    busy_ = busy;
    compute_->setEnabled(!busy);
    import_->setEnabled(!busy);
    export_->setEnabled(vectors_.valid() && !busy);
    clearVectors_->setEnabled(vectors_.valid() && !busy);
}

// ---- plan --------------------------------------------------------------------------------------

QWidget* SteeringPanel::buildPlanGroup() {
    auto* box = new QGroupBox(tr("Plan"), this);
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);

    op_ = new QComboBox(box);
    for (const auto& [op, name] : kSteeringOperators) {
        op_->addItem(tr(operatorDoc(op).title), QString::fromLatin1(name));
        op_->setItemData(op_->count() - 1, tr(operatorDoc(op).help), Qt::ToolTipRole);
    }
    form->addRow(tr("Operator"), op_);
    opHelp_ = hint(QString(), box);
    form->addRow(QString(), opHelp_);

    ablateTarget_ = new QComboBox(box);
    ablateTarget_->addItem(tr("Mean over the image"), QStringLiteral("mean"));
    ablateTarget_->addItem(tr("Zero"), QStringLiteral("zero"));
    ablateLabel_ = new QLabel(tr("Ablate to"), box);
    form->addRow(ablateLabel_, ablateTarget_);

    auto* modeRow = new QWidget(box);
    auto* modeLayout = new QHBoxLayout(modeRow);
    modeLayout->setContentsMargins(0, 0, 0, 0);
    editOnly_ = new QRadioButton(tr("Edit only"), modeRow);
    editOnly_->setToolTip(tr("Edit the image's K/V only; the prompt text after the image keeps the K/V it got from the unedited image"));
    propagate_ = new QRadioButton(tr("Propagate"), modeRow);
    propagate_->setToolTip(tr("After the edit, recompute the prompt text that follows the image, so the question itself sees the steered image"));
    editOnly_->setChecked(true);
    auto* modeGroup = new QButtonGroup(modeRow);
    modeGroup->addButton(editOnly_);
    modeGroup->addButton(propagate_);
    modeLayout->addWidget(editOnly_);
    modeLayout->addWidget(propagate_);
    modeLayout->addStretch(1);
    form->addRow(tr("Mode"), modeRow);

    auto makeCoef = [box](const QString& tip) {
        auto* s = new QDoubleSpinBox(box);
        s->setRange(-100.0, 100.0);
        s->setDecimals(2);
        s->setSingleStep(0.25);
        s->setValue(1.0);
        s->setAccelerated(true);
        s->setToolTip(tip);
        s->setKeyboardTracking(false);
        return s;
    };
    ck_ = makeCoef(tr("Coefficient for the keys (c_k); the spotlight bias also uses it"));
    cv_ = makeCoef(tr("Coefficient for the values (c_v)"));
    auto* coefRow = new QWidget(box);
    auto* coefLayout = new QHBoxLayout(coefRow);
    coefLayout->setContentsMargins(0, 0, 0, 0);
    coefLayout->addWidget(new QLabel(QStringLiteral("c<sub>k</sub>"), coefRow));
    coefLayout->addWidget(ck_, 1);
    coefLayout->addSpacing(8);
    coefLayout->addWidget(new QLabel(QStringLiteral("c<sub>v</sub>"), coefRow));
    coefLayout->addWidget(cv_, 1);
    form->addRow(tr("Strength"), coefRow);

    auto* layerRow = new QWidget(box);
    auto* layerLayout = new QHBoxLayout(layerRow);
    layerLayout->setContentsMargins(0, 0, 0, 0);
    layerFrom_ = new QSpinBox(layerRow);
    layerTo_ = new QSpinBox(layerRow);
    layerFrom_->setToolTip(tr("First decoder layer whose cache is edited"));
    layerTo_->setToolTip(tr("Last decoder layer whose cache is edited"));
    auto* all = new QToolButton(layerRow);
    all->setText(tr("All"));
    all->setToolTip(tr("Edit every layer"));
    layerLayout->addWidget(layerFrom_, 1);
    layerLayout->addWidget(new QLabel(QStringLiteral("–"), layerRow));
    layerLayout->addWidget(layerTo_, 1);
    layerLayout->addWidget(all);
    form->addRow(tr("Layers"), layerRow);

    headsBox_ = new QWidget(box);
    headsGrid_ = new QGridLayout(headsBox_);
    headsGrid_->setContentsMargins(0, 0, 0, 0);
    headsGrid_->setHorizontalSpacing(8);
    headsGrid_->setVerticalSpacing(2);
    form->addRow(tr("KV heads"), headsBox_);

    connect(op_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        updateOperatorUi();
        emitPlan();
    });
    connect(ablateTarget_, qOverload<int>(&QComboBox::currentIndexChanged), this, &SteeringPanel::emitPlan);
    connect(propagate_, &QRadioButton::toggled, this, &SteeringPanel::emitPlan);
    connect(ck_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &SteeringPanel::emitPlan);
    connect(cv_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &SteeringPanel::emitPlan);
    connect(layerFrom_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) {
        if (layerTo_->value() < v) layerTo_->setValue(v);
        emitPlan();
    });
    connect(layerTo_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) {
        if (layerFrom_->value() > v) layerFrom_->setValue(v);
        emitPlan();
    });
    connect(all, &QToolButton::clicked, this, [this] {
        quiet_ = true;
        layerFrom_->setValue(0);
        layerTo_->setValue(layerTo_->maximum());
        quiet_ = false;
        emitPlan();
    });
    return box;
}

void SteeringPanel::updateOperatorUi() {
    const QString op = op_->currentData().toString();
    for (const auto& [o, name] : kSteeringOperators)
        if (op == QLatin1String(name)) opHelp_->setText(tr(operatorDoc(o).help));
    const bool ablate = op == QLatin1String("ablate");
    ablateTarget_->setVisible(ablate);
    ablateLabel_->setVisible(ablate);
    cv_->setEnabled(op != QLatin1String("spotlight"));
    if (op == QLatin1String("prerope") && !preRope()) keySpace_->setCurrentIndex(1);
}

void SteeringPanel::rebuildHeads(int kvHeads) {
    for (QCheckBox* c : heads_) delete c;
    heads_.clear();
    const int perRow = kvHeads <= 8 ? kvHeads : 8;
    for (int h = 0; h < kvHeads; ++h) {
        auto* c = new QCheckBox(QString::number(h), headsBox_);
        c->setChecked(true);
        c->setToolTip(tr("Edit KV head %1 (uncheck to leave it untouched)").arg(h));
        connect(c, &QCheckBox::toggled, this, &SteeringPanel::emitPlan);
        headsGrid_->addWidget(c, h / std::max(1, perRow), h % std::max(1, perRow));
        heads_.push_back(c);
    }
    for (int col = 0; col <= 8; ++col) headsGrid_->setColumnStretch(col, col == perRow ? 1 : 0);
}

void SteeringPanel::setModel(int layers, int kvHeads) {
    quiet_ = true;
    const bool wasAll = layers_ == 0 || (layerFrom_->value() == 0 && layerTo_->value() == layerTo_->maximum());
    layers_ = layers;
    const int last = std::max(0, layers - 1);
    layerFrom_->setRange(0, last);
    layerTo_->setRange(0, last);
    if (wasAll) {
        layerFrom_->setValue(0);
        layerTo_->setValue(last);
    }
    if (kvHeads != heads_.size()) rebuildHeads(kvHeads);
    setEnabled(layers > 0);
    quiet_ = false;
}

PlanSettings SteeringPanel::planSettings() const {
    PlanSettings s;
    s.op = op_->currentData().toString();
    s.propagate = propagate_->isChecked();
    s.ablateTarget = ablateTarget_->currentData().toString();
    s.ck = ck_->value();
    s.cv = cv_->value();
    s.layerFrom = layerFrom_->value();
    s.layerTo = layerTo_->value() == layerTo_->maximum() ? -1 : layerTo_->value();
    bool all = true;
    QVector<int> heads;
    for (int h = 0; h < heads_.size(); ++h) {
        if (heads_[h]->isChecked()) heads.push_back(h);
        else all = false;
    }
    if (!all) s.heads = heads;
    return s;
}

void SteeringPanel::setPlanSettings(const PlanSettings& s) {
    quiet_ = true;
    const int i = op_->findData(s.op);
    op_->setCurrentIndex(i >= 0 ? i : 0);
    (s.propagate ? propagate_ : editOnly_)->setChecked(true);
    const int a = ablateTarget_->findData(s.ablateTarget);
    ablateTarget_->setCurrentIndex(a >= 0 ? a : 0);
    ck_->setValue(s.ck);
    cv_->setValue(s.cv);
    layerFrom_->setValue(s.layerFrom);
    layerTo_->setValue(s.layerTo < 0 ? layerTo_->maximum() : s.layerTo);
    for (int h = 0; h < heads_.size(); ++h) heads_[h]->setChecked(s.heads.isEmpty() || s.heads.contains(h));
    quiet_ = false;
    updateOperatorUi();
    emitPlan();
}

void SteeringPanel::emitPlan() {
    if (quiet_) return;
    Q_EMIT planChanged(planSettings());
}

// ---- mask --------------------------------------------------------------------------------------

QWidget* SteeringPanel::buildMaskGroup() {
    auto* box = new QGroupBox(tr("Mask"), this);
    auto* v = new QVBoxLayout(box);
    maskStatus_ = new QLabel(box);
    v->addWidget(maskStatus_);
    auto* row = new QHBoxLayout;
    auto* exportMask = toolButton(icons::Id::ExportMask, tr("Export PNG…"), tr("Save the painted strength as a grayscale PNG (white = 1)"), box);
    auto* importMask = toolButton(icons::Id::OpenImage, tr("Import…"),
                                  tr("Load a mask: a grayscale image (any size), .npy or .safetensors, or rect:r0,c0,r1,c1"), box);
    row->addWidget(exportMask);
    row->addWidget(importMask);
    v->addLayout(row);
    connect(exportMask, &QToolButton::clicked, this, &SteeringPanel::exportMaskRequested);
    connect(importMask, &QToolButton::clicked, this, &SteeringPanel::importMaskRequested);
    setPaintedCells(0, 0);
    return box;
}

void SteeringPanel::setPaintedCells(int cells, int total) {
    maskStatus_->setText(cells == 0 ? tr("Nothing painted: the plan edits no patch.")
                                    : tr("%1 of %2 patches painted.").arg(cells).arg(total));
}

} // namespace kvsteer::ui
