#pragma once
// PlanForm: the Steering panel's "Plan" group — operator (and ablate target), edit-only vs
// propagate, c_k and c_v (one value each, or one per layer as the command line's --ck 0,1,2 or a
// vector file's suggestion gives them), the layer range and the KV-head mask — and one line that
// names the settings restored from the last session. It holds settings only.
#include "types/StudioTypes.h"

#include <QGroupBox>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QRadioButton;
class QSpinBox;
class QToolButton;

namespace kvsteer::ui {

class PlanForm : public QGroupBox {
    Q_OBJECT
public:
    explicit PlanForm(QWidget* parent = nullptr);

    void setModel(int layers, int kvHeads);
    PlanSettings planSettings() const;
    void setPlanSettings(const PlanSettings& s);    // emits planChanged once
    void applySuggestions(const VectorsInfo& info); // the file's operator, c_k and c_v (one or per layer), layers
    SteeringOperator currentOperator() const;
    // The plan the last session left (QSettings): its settings that a fresh studio would not have
    // are named under the form ("Restored from the last session: propagate, c_v 4") for as long as
    // they are in effect. forgetRestored(): a plan from elsewhere replaced it (the command line).
    void setRestored(const PlanSettings& restored);
    void forgetRestored();
    QString restoredNote() const;
    QString byLayerText() const;                    // "c_v 2, 4, 8 by layer" while a list runs, else ""

Q_SIGNALS:
    void planChanged(const kvsteer::ui::PlanSettings& settings);
    void operatorChanged(kvsteer::SteeringOperator op);

private:
    QWidget* buildModeRow();
    QWidget* buildStrengthRow();
    QWidget* buildLayerRow();
    void updateOperatorUi();
    void updateByLayer();
    void rebuildHeads(int kvHeads);
    void updateRestoredNote();
    void settle();
    void emitPlan();

    QComboBox* op_ = nullptr;
    QLabel* opHelp_ = nullptr;
    QComboBox* ablateTarget_ = nullptr;
    QLabel* ablateLabel_ = nullptr;
    QRadioButton* editOnly_ = nullptr;
    QRadioButton* propagate_ = nullptr;
    QDoubleSpinBox* ck_ = nullptr;
    QDoubleSpinBox* cv_ = nullptr;
    QLabel* byLayer_ = nullptr;           // the per-layer lists that run instead of the spin boxes
    QToolButton* oneValue_ = nullptr;     // drops them: the spin boxes' values run again
    QSpinBox* layerFrom_ = nullptr;
    QSpinBox* layerTo_ = nullptr;
    QWidget* headsBox_ = nullptr;
    QGridLayout* headsGrid_ = nullptr;
    QVector<QCheckBox*> heads_;
    QLabel* restoredNote_ = nullptr;
    std::optional<PlanSettings> restored_;
    QVector<double> ckByLayer_, cvByLayer_;
    int layers_ = 0;
    bool quiet_ = false;   // no planChanged while setting several fields
};

} // namespace kvsteer::ui
