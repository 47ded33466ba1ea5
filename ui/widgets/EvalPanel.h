#pragma once
// EvalPanel: the Evaluate dock — which dataset and where its results go, which cells to steer
// (each item's box or mask, or the painted map), Evaluate / Stop with a progress bar, the metrics
// as bars (unsteered beside steered, the steered bar's whisker the 95 % interval of the
// difference), and a table of the items whose correctness steering changed, filterable. Settings
// and signals only; the EvalController runs it.
#include "types/EvalTypes.h"
#include "widgets/JobForm.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QTableWidget;

namespace kvsteer::ui {

class EvalPanel : public QWidget {
    Q_OBJECT
public:
    explicit EvalPanel(QWidget* parent = nullptr);

    QString dataset() const { return form_->input(); }
    void setDataset(const QString& path) { form_->setInput(path); }   // also proposes a results folder beside it
    QString outDir() const { return form_->outDir(); }
    void setOutDir(const QString& dir) { form_->setOutDir(dir); }
    QString proposeFreshOutDir() { return form_->proposeFreshOutDir(); }   // JobForm::proposeFreshOutDir
    bool itemRegions() const;                  // each item's box or mask (else the painted map)
    QString metric() const;                    // pope | exact | contains
    int maxNewTokens() const { return form_->maxNewTokens(); }

    QPushButton* evaluateButton() const { return form_->runButton(); }
    QPushButton* stopButton() const { return form_->stopButton(); }
    QTableWidget* table() const { return table_; }
    QComboBox* filter() const { return filter_; }
    QProgressBar* progressBar() const { return form_->progressBar(); }
    QString status() const { return form_->status(); }

    void setRunning(bool running) { form_->setRunning(running); }
    void setProgress(int done, int total) { form_->setProgress(done, total); }
    void setStatus(const QString& text) { form_->setStatus(text); }
    void clearResults();
    void addItem(const EvalItemRow& row);      // kept; shown when its correctness changed
    void showSummary(const EvalFinished& f);
    QCustomPlot* plot() const { return plot_; }
    const QVector<EvalItemRow>& changedItems() const { return changed_; }

Q_SIGNALS:
    void evaluateRequested();
    void stopRequested();
    void browseRequested();
    void itemActivated(const kvsteer::ui::EvalItemRow& row);   // double-click: open it on the canvas

private:
    void refreshTable();
    void fitMetricLabels();   // slanted when side by side they would overlap

    JobForm* form_ = nullptr;              // dataset, results folder, budget, Evaluate / Stop
    QComboBox* regions_ = nullptr;
    QComboBox* metric_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QComboBox* filter_ = nullptr;
    QTableWidget* table_ = nullptr;
    QVector<EvalItemRow> changed_;             // items whose correctness steering changed
    QStringList metricNames_;                  // the summary's, on the chart's axis
};

} // namespace kvsteer::ui
