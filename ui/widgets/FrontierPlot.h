#pragma once
// FrontierPlot: a study's plans as points, preservation across (of what the unsteered model got
// right, the fraction still right steered) and target success up, both 0..1, each with its two 95 %
// intervals as error bars; the frontier (the plans no other plan beats on both) joined in red.
// Each point is labelled with what sets its plan apart (c_v 16, early, ...; plans drawn at one spot
// share a label: "c_v 1 all +3"; a label that would cover another is left out); hovering shows the whole plans, a click on a point says which
// plan (planClicked; where several share the spot, a menu asks which). A plan with an undefined
// axis (no target set, nothing to preserve) is not drawn.
#include "types/StudyTypes.h"

#include <qcustomplot.h>

namespace kvsteer::ui {

class FrontierPlot : public QCustomPlot {
    Q_OBJECT
public:
    explicit FrontierPlot(QWidget* parent = nullptr);

    void setResults(const StudyResults& results);
    void clearResults();
    void setSelectedPlan(int plan);            // ringed; -1: none

    int pointCount() const;                    // the plans drawn
    QPointF pointPixel(int plan) const;        // where a plan's point is drawn; (-1, -1) when it is not
    int planAt(const QPointF& pixel) const;    // the plan whose point is nearest, within 12 px; else -1
    QVector<int> plansAt(const QPointF& pixel) const;   // every plan drawn within 12 px, nearest first
    QString pointLabel(int plan) const;        // what sets its plan apart (c_v 16, early, ...)

Q_SIGNALS:
    void planClicked(int plan);

private:
    void onMouseMove(QMouseEvent* event);
    void hideCrowdedLabels();                  // a label over an earlier one is hidden (hover still tells)

    StudyResults results_;
    QVector<int> drawn_;                       // plan indices, in the order the points graph holds them
    QMap<int, QString> labels_;
    QVector<QCPItemText*> texts_;              // frontier plans' labels first: they win a crowded spot
    QCPGraph* points_ = nullptr;
    QCPGraph* frontier_ = nullptr;
    QCPGraph* selected_ = nullptr;
    QCPErrorBars* xBars_ = nullptr;
    QCPErrorBars* yBars_ = nullptr;
};

// What sets each label apart from the others: the words every label shares are dropped, except a
// name whose value differs ("red-to-blue add c_k 0 c_v 4 all", "… c_v 16 all" -> "c_v 4", "c_v 16").
// Labels of different lengths are kept whole.
QStringList distinguishingLabels(const QStringList& labels);

} // namespace kvsteer::ui
