#pragma once
// EvalPanel: the Evaluate dock — which dataset and where its results go, which cells to steer
// (each item's box or mask, or the painted map), Evaluate / Stop with a progress bar, the metrics
// as bars (unsteered beside steered, the steered bar's whisker the 95 % interval of the
// difference), and a table of the items whose correctness steering changed, filterable. Settings
// and signals only; the EvalController runs it.
#include "types/EvalTypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace kvsteer::ui {

class EvalPanel : public QWidget {
    Q_OBJECT
public:
    explicit EvalPanel(QWidget* parent = nullptr);

    QString dataset() const;
    void setDataset(const QString& path);      // also proposes a results folder beside it
    QString outDir() const;
    void setOutDir(const QString& dir);
    bool itemRegions() const;                  // each item's box or mask (else the painted map)
    QString metric() const;                    // pope | exact | contains
    int maxNewTokens() const;

    QPushButton* evaluateButton() const { return evaluate_; }
    QPushButton* stopButton() const { return stop_; }
    QTableWidget* table() const { return table_; }
    QComboBox* filter() const { return filter_; }
    QProgressBar* progressBar() const { return progress_; }
    QString status() const;

    void setRunning(bool running);
    void setProgress(int done, int total);
    void setStatus(const QString& text);
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

    QLineEdit* dataset_ = nullptr;
    QLineEdit* outDir_ = nullptr;
    QComboBox* regions_ = nullptr;
    QComboBox* metric_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QPushButton* evaluate_ = nullptr;
    QPushButton* stop_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QComboBox* filter_ = nullptr;
    QTableWidget* table_ = nullptr;
    QVector<EvalItemRow> changed_;             // items whose correctness steering changed
    QStringList metricNames_;                  // the summary's, on the chart's axis
};

} // namespace kvsteer::ui
