#pragma once
// SteeringPanel: where the steering vectors come from (a second image, the painted region, text
// pairs, or a file), the plan's settings (PlanForm: operator, edit-only vs propagate, c_k and
// c_v, layer range, KV-head mask), export / import of vector files and export of the mask as PNG.
// The panel holds settings only; the Worker computes, loads and saves.
#include "types/StudioTypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QTableWidget;
class QToolButton;

namespace kvsteer::ui {

class PlanForm;

class SteeringPanel : public QWidget {
    Q_OBJECT
public:
    explicit SteeringPanel(QWidget* parent = nullptr);

    void setModel(int layers, int kvHeads);
    PlanSettings planSettings() const;
    void setPlanSettings(const PlanSettings& s);   // emits planChanged once

    // Recipe inputs (what "Compute vectors" uses).
    VectorSource source() const;
    void setSource(VectorSource s);
    RecipeRequest recipe() const;                 // prompt and region are filled in by the caller
    void setTargetImage(const QString& path, const QByteArray& bytes);
    QString targetImagePath() const { return targetPath_; }
    QVector<TextPairItem> textPairs() const;
    void setTextPairs(const QVector<TextPairItem>& pairs);
    bool preRope() const;
    void setRecipeOptions(bool preRope, bool perPosition, bool pca);

    void setVectorsInfo(const VectorsInfo& info);   // invalid info = none
    void showProposal(const QString& howChosen);    // the strength proposed for new vectors, and why ("": none)
    QString proposalText() const;
    const VectorsInfo& vectorsInfo() const { return vectors_; }
    void applySuggestions(const VectorsInfo& info); // operator / c_k / c_v / layers stored in a file
    PlanForm* planForm() const { return plan_; }
    void setPaintedCells(int cells, int total);
    void setBusy(bool busy);

Q_SIGNALS:
    void planChanged(const kvsteer::ui::PlanSettings& settings);
    void computeRequested(const kvsteer::ui::RecipeRequest& partial);
    void chooseTargetImageRequested();
    void importVectorsRequested();
    void exportVectorsRequested();
    void clearVectorsRequested();
    void exportMaskRequested();
    void importMaskRequested();
    void loadTextPairsRequested();
    void copyPythonRequested();

private:
    void showSourcePage(int sourceIndex);
    QWidget* buildVectorsGroup();
    QWidget* buildMaskGroup();

    // vectors
    QComboBox* source_ = nullptr;
    QStackedWidget* pages_ = nullptr;
    QLabel* targetLabel_ = nullptr;
    QLabel* targetThumb_ = nullptr;
    QTableWidget* pairs_ = nullptr;
    QComboBox* keySpace_ = nullptr;
    QCheckBox* perPosition_ = nullptr;
    QCheckBox* pca_ = nullptr;
    QPushButton* compute_ = nullptr;
    QLabel* vectorsStatus_ = nullptr;
    QLabel* proposal_ = nullptr;
    QToolButton* export_ = nullptr;
    QToolButton* import_ = nullptr;
    QToolButton* clearVectors_ = nullptr;
    PlanForm* plan_ = nullptr;
    // mask
    QLabel* maskStatus_ = nullptr;

    QString targetPath_;
    QByteArray targetBytes_;
    VectorsInfo vectors_;
    bool busy_ = false;
};

} // namespace kvsteer::ui
