#include "SteeringPanel.h"

#include "FlowLayout.h"
#include "Icons.h"
#include "PlanForm.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStackedWidget>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvsteer::ui {

namespace {

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
    plan_ = new PlanForm(this);
    v->addWidget(plan_);
    v->addWidget(buildMaskGroup());
    v->addStretch(1);
    connect(plan_, &PlanForm::planChanged, this, &SteeringPanel::planChanged);
    // The Pre-RoPE keys operator reads vectors in pre-RoPE space: the recipe computes them so.
    connect(plan_, &PlanForm::operatorChanged, this, [this](SteeringOperator op) {
        if (op == SteeringOperator::PreRope && !preRope()) keySpace_->setCurrentIndex(1);
    });
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

void SteeringPanel::applySuggestions(const VectorsInfo& info) { plan_->applySuggestions(info); }

void SteeringPanel::setBusy(bool busy) {
    busy_ = busy;
    compute_->setEnabled(!busy);
    import_->setEnabled(!busy);
    export_->setEnabled(vectors_.valid() && !busy);
    clearVectors_->setEnabled(vectors_.valid() && !busy);
}

// ---- plan --------------------------------------------------------------------------------------

void SteeringPanel::setModel(int layers, int kvHeads) { plan_->setModel(layers, kvHeads); }
PlanSettings SteeringPanel::planSettings() const { return plan_->planSettings(); }
void SteeringPanel::setPlanSettings(const PlanSettings& s) { plan_->setPlanSettings(s); }

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
