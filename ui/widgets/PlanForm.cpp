#include "PlanForm.h"

#include "steer/SteeringOperator.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QRadioButton>
#include <QSpinBox>
#include <QToolButton>

#include <algorithm>

namespace kvsteer::ui {

namespace {

// What the form says of each core operator (core/steer/SteeringOperator.h names them).
struct OperatorDoc {
    const char* title;
    const char* help;
};

OperatorDoc operatorDoc(SteeringOperator op) {
    switch (op) {
    case SteeringOperator::Add:
        return {QT_TRANSLATE_NOOP("PlanForm", "Add"), QT_TRANSLATE_NOOP("PlanForm", "K += s·c_k·ΔK and V += s·c_v·ΔV at every painted patch.")};
    case SteeringOperator::NormPreserving:
        return {QT_TRANSLATE_NOOP("PlanForm", "Norm-preserving"), QT_TRANSLATE_NOOP("PlanForm", "Moves K and V toward the direction, keeping their norms.")};
    case SteeringOperator::PreRope:
        return {QT_TRANSLATE_NOOP("PlanForm", "Pre-RoPE keys"),
                QT_TRANSLATE_NOOP("PlanForm", "Rotates ΔK to each patch's RoPE angle before adding; needs pre-RoPE vectors.")};
    case SteeringOperator::Scale:
        return {QT_TRANSLATE_NOOP("PlanForm", "Scale"), QT_TRANSLATE_NOOP("PlanForm", "V ×= 1 + s·c_v and K ×= 1 + s·c_k. Needs no vectors.")};
    case SteeringOperator::Spotlight:
        return {QT_TRANSLATE_NOOP("PlanForm", "Spotlight"),
                QT_TRANSLATE_NOOP("PlanForm", "Adds s·c_k to the attention logits of painted patches while decoding. Needs no vectors.")};
    case SteeringOperator::Ablate:
        return {QT_TRANSLATE_NOOP("PlanForm", "Ablate"),
                QT_TRANSLATE_NOOP("PlanForm", "Pulls K/V of painted patches toward the image mean (or zero). Needs no vectors.")};
    }
    return {"", ""};
}

QLabel* note(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setStyleSheet(QStringLiteral("color: #6b737d;"));
    return l;
}

QString numbers(const QVector<double>& v) {
    QStringList parts;
    for (double c : v) parts << QString::number(c, 'g', 6);
    return parts.join(QStringLiteral(", "));
}

} // namespace

PlanForm::PlanForm(QWidget* parent) : QGroupBox(tr("Plan"), parent) {
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);

    op_ = new QComboBox(this);
    for (const auto& [op, name] : kSteeringOperators) {
        op_->addItem(tr(operatorDoc(op).title), int(op));   // the item's data: the operator itself
        op_->setItemData(op_->count() - 1, tr(operatorDoc(op).help), Qt::ToolTipRole);
    }
    form->addRow(tr("Operator"), op_);
    opHelp_ = note(this);
    form->addRow(QString(), opHelp_);
    ablateTarget_ = new QComboBox(this);
    ablateTarget_->addItem(tr("Mean over the image"), int(AblateTarget::Mean));
    ablateTarget_->addItem(tr("Zero"), int(AblateTarget::Zero));
    ablateLabel_ = new QLabel(tr("Ablate to"), this);
    form->addRow(ablateLabel_, ablateTarget_);
    form->addRow(tr("Mode"), buildModeRow());
    form->addRow(tr("Strength"), buildStrengthRow());
    byLayer_ = note(this);
    oneValue_ = new QToolButton(this);
    oneValue_->setText(tr("One value"));
    oneValue_->setToolTip(tr("Drop the per-layer coefficients: the spin boxes' values apply to every layer"));
    auto* byLayerRow = new QHBoxLayout;
    byLayerRow->addWidget(byLayer_, 1);
    byLayerRow->addWidget(oneValue_);
    form->addRow(QString(), byLayerRow);
    form->addRow(tr("Layers"), buildLayerRow());
    headsBox_ = new QWidget(this);
    headsGrid_ = new QGridLayout(headsBox_);
    headsGrid_->setContentsMargins(0, 0, 0, 0);
    headsGrid_->setHorizontalSpacing(8);
    headsGrid_->setVerticalSpacing(2);
    form->addRow(tr("KV heads"), headsBox_);
    restoredNote_ = note(this);
    restoredNote_->hide();
    form->addRow(restoredNote_);

    connect(op_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        updateOperatorUi();
        emitPlan();
    });
    connect(ablateTarget_, qOverload<int>(&QComboBox::currentIndexChanged), this, &PlanForm::emitPlan);
    connect(oneValue_, &QToolButton::clicked, this, [this] {
        ckByLayer_.clear();
        cvByLayer_.clear();
        updateByLayer();
        emitPlan();
    });
    setModel(0, 0);
    updateOperatorUi();
    updateByLayer();
}

QWidget* PlanForm::buildModeRow() {
    auto* row = new QWidget(this);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    editOnly_ = new QRadioButton(tr("Edit only"), row);
    editOnly_->setToolTip(tr("Edit the image's K/V only; the prompt text after the image keeps the K/V it got from the unedited image"));
    propagate_ = new QRadioButton(tr("Propagate"), row);
    propagate_->setToolTip(tr("After the edit, recompute the prompt text that follows the image, so the question itself sees the steered image"));
    editOnly_->setChecked(true);
    auto* group = new QButtonGroup(row);
    group->addButton(editOnly_);
    group->addButton(propagate_);
    layout->addWidget(editOnly_);
    layout->addWidget(propagate_);
    layout->addStretch(1);
    connect(propagate_, &QRadioButton::toggled, this, &PlanForm::emitPlan);
    return row;
}

QWidget* PlanForm::buildStrengthRow() {
    auto makeCoef = [this](const QString& tip) {
        auto* s = new QDoubleSpinBox(this);
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
    auto* row = new QWidget(this);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(QStringLiteral("c<sub>k</sub>"), row));
    layout->addWidget(ck_, 1);
    layout->addSpacing(8);
    layout->addWidget(new QLabel(QStringLiteral("c<sub>v</sub>"), row));
    layout->addWidget(cv_, 1);
    // A value typed into a spin box is one value for every layer: it replaces that coefficient's list.
    connect(ck_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
        if (!quiet_) ckByLayer_.clear();
        updateByLayer();
        emitPlan();
    });
    connect(cv_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
        if (!quiet_) cvByLayer_.clear();
        updateByLayer();
        emitPlan();
    });
    return row;
}

QWidget* PlanForm::buildLayerRow() {
    auto* row = new QWidget(this);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layerFrom_ = new QSpinBox(row);
    layerTo_ = new QSpinBox(row);
    layerFrom_->setToolTip(tr("First decoder layer whose cache is edited"));
    layerTo_->setToolTip(tr("Last decoder layer whose cache is edited"));
    auto* all = new QToolButton(row);
    all->setText(tr("All"));
    all->setToolTip(tr("Edit every layer"));
    layout->addWidget(layerFrom_, 1);
    layout->addWidget(new QLabel(QStringLiteral("–"), row));
    layout->addWidget(layerTo_, 1);
    layout->addWidget(all);
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
    return row;
}

void PlanForm::updateOperatorUi() {
    const SteeringOperator op = currentOperator();
    opHelp_->setText(tr(operatorDoc(op).help));
    const bool ablate = op == SteeringOperator::Ablate;
    ablateTarget_->setVisible(ablate);
    ablateLabel_->setVisible(ablate);
    cv_->setEnabled(op != SteeringOperator::Spotlight && cvByLayer_.isEmpty());
    Q_EMIT operatorChanged(op);
}

QString PlanForm::byLayerText() const {
    QStringList parts;
    if (!ckByLayer_.isEmpty()) parts << tr("c_k %1").arg(numbers(ckByLayer_));
    if (!cvByLayer_.isEmpty()) parts << tr("c_v %1").arg(numbers(cvByLayer_));
    return parts.isEmpty() ? QString() : tr("%1 by layer").arg(parts.join(QStringLiteral(" · ")));
}

void PlanForm::updateByLayer() {
    const QString text = byLayerText();
    byLayer_->setText(text.isEmpty() ? QString() : tr("%1 (one per layer; these run, not the boxes above)").arg(text));
    byLayer_->setVisible(!text.isEmpty());
    oneValue_->setVisible(!text.isEmpty());
    ck_->setEnabled(ckByLayer_.isEmpty());
    cv_->setEnabled(cvByLayer_.isEmpty() && currentOperator() != SteeringOperator::Spotlight);
}

void PlanForm::rebuildHeads(int kvHeads) {
    for (QCheckBox* c : heads_) delete c;
    heads_.clear();
    const int perRow = kvHeads <= 8 ? kvHeads : 8;
    for (int h = 0; h < kvHeads; ++h) {
        auto* c = new QCheckBox(QString::number(h), headsBox_);
        c->setChecked(true);
        c->setToolTip(tr("Edit KV head %1 (uncheck to leave it untouched)").arg(h));
        connect(c, &QCheckBox::toggled, this, &PlanForm::emitPlan);
        headsGrid_->addWidget(c, h / std::max(1, perRow), h % std::max(1, perRow));
        heads_.push_back(c);
    }
    for (int col = 0; col <= 8; ++col) headsGrid_->setColumnStretch(col, col == perRow ? 1 : 0);
}

void PlanForm::setModel(int layers, int kvHeads) {
    quiet_ = true;
    const bool wasAll = layers_ == 0 || (layerFrom_->value() == 0 && layerTo_->value() == layerTo_->maximum());
    if (layers_ > 0 && layers != layers_) {   // another model: per-layer lists were for the old one's layers
        ckByLayer_.clear();
        cvByLayer_.clear();
    }
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
    updateByLayer();
    quiet_ = false;
}

SteeringOperator PlanForm::currentOperator() const { return SteeringOperator(op_->currentData().toInt()); }

PlanSettings PlanForm::planSettings() const {
    PlanSettings s;
    s.op = currentOperator();
    s.propagate = propagate_->isChecked();
    s.ablateTarget = AblateTarget(ablateTarget_->currentData().toInt());
    s.ck = ck_->value();
    s.cv = cv_->value();
    s.ckByLayer = ckByLayer_;
    s.cvByLayer = cvByLayer_;
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

void PlanForm::setPlanSettings(const PlanSettings& s) {
    quiet_ = true;
    op_->setCurrentIndex(op_->findData(int(s.op)));
    (s.propagate ? propagate_ : editOnly_)->setChecked(true);
    ablateTarget_->setCurrentIndex(ablateTarget_->findData(int(s.ablateTarget)));
    ck_->setValue(s.ck);
    cv_->setValue(s.cv);
    ckByLayer_ = s.ckByLayer;
    cvByLayer_ = s.cvByLayer;
    layerFrom_->setValue(s.layerFrom);
    layerTo_->setValue(s.layerTo < 0 ? layerTo_->maximum() : s.layerTo);
    for (int h = 0; h < heads_.size(); ++h) heads_[h]->setChecked(s.heads.isEmpty() || s.heads.contains(h));
    settle();
}

void PlanForm::applySuggestions(const VectorsInfo& info) {
    quiet_ = true;
    if (info.suggestedOperator) op_->setCurrentIndex(op_->findData(int(*info.suggestedOperator)));
    // One value sets the spin box; one per layer (a list as long as the model's layers) runs as a list.
    auto adopt = [&](const QVector<double>& suggested, QDoubleSpinBox* box, QVector<double>& byLayer) {
        if (suggested.size() == 1) {
            box->setValue(suggested.front());
            byLayer.clear();
        } else if (suggested.size() > 1 && suggested.size() == layers_) {
            byLayer = suggested;
        }
    };
    adopt(info.suggestedCk, ck_, ckByLayer_);
    adopt(info.suggestedCv, cv_, cvByLayer_);
    if (!info.suggestedLayers.isEmpty()) {
        layerFrom_->setValue(*std::min_element(info.suggestedLayers.begin(), info.suggestedLayers.end()));
        layerTo_->setValue(*std::max_element(info.suggestedLayers.begin(), info.suggestedLayers.end()));
    }
    settle();
}

// After several fields were set quietly: the operator's and the lists' widgets follow, one planChanged.
void PlanForm::settle() {
    quiet_ = false;
    updateOperatorUi();
    updateByLayer();
    emitPlan();
}

void PlanForm::setRestored(const PlanSettings& restored) {
    restored_ = restored;
    updateRestoredNote();
}

void PlanForm::forgetRestored() {
    restored_.reset();
    updateRestoredNote();
}

// The restored settings a fresh studio would not have, while the plan still has them.
void PlanForm::updateRestoredNote() {
    QStringList still;
    if (restored_) {
        const PlanSettings fresh, now = planSettings(), &r = *restored_;
        if (r.op != fresh.op && now.op == r.op) still << tr("operator %1").arg(operatorText(r.op));
        if (r.propagate != fresh.propagate && now.propagate == r.propagate) still << tr("propagate");
        if (r.ablateTarget != fresh.ablateTarget && now.ablateTarget == r.ablateTarget) still << tr("ablate to %1").arg(ablateTargetText(r.ablateTarget));
        if (r.ck != fresh.ck && now.ckValues() == QVector<double>{r.ck}) still << tr("c_k %1").arg(r.ck);
        if (r.cv != fresh.cv && now.cvValues() == QVector<double>{r.cv}) still << tr("c_v %1").arg(r.cv);
    }
    restoredNote_->setText(still.isEmpty() ? QString() : tr("Restored from the last session: %1").arg(still.join(QStringLiteral(", "))));
    restoredNote_->setVisible(!still.isEmpty());
}

QString PlanForm::restoredNote() const { return restoredNote_->isVisible() ? restoredNote_->text() : QString(); }

void PlanForm::emitPlan() {
    if (quiet_) return;
    updateRestoredNote();
    Q_EMIT planChanged(planSettings());
}

} // namespace kvsteer::ui
