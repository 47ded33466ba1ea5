#pragma once
// StudyPanel: the Evaluate dock's Study tab (`kvsteer study` in the studio, docs/study.md) — the
// suite and where the study goes, the grid typed as the CLI's flags take it (vector files,
// operators, c_k and c_v values, layer choices; comma lists), Study / Stop with a progress bar,
// the frontier plot (FrontierPlot) and a table with one row per plan × dataset × category: its
// headline number (success on a target set, preservation on a preserve set), interval, role, items.
// A click on a point, or a double-click on a row, chooses that plan (planChosen). Settings and
// signals only; the StudyController runs it.
#include "types/StudyTypes.h"
#include "widgets/JobForm.h"

#include <QWidget>

class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace kvsteer::ui {

class FrontierPlot;

class StudyPanel : public QWidget {
    Q_OBJECT
public:
    explicit StudyPanel(QWidget* parent = nullptr);

    StudySetup setup() const;
    void setSetup(const StudySetup& s);          // as saved: nothing is proposed
    void setSuite(const QString& path) { form_->setInput(path); }   // also proposes a study folder beside it
    void proposeVectors(const QString& path);    // the steering panel's file, unless another was typed
    QString proposeFreshOutDir() { return form_->proposeFreshOutDir(); }   // JobForm::proposeFreshOutDir
    // What that file suggests (empty: nothing), for the c_k / c_v placeholders to say what an
    // empty field means while the Vectors field names it.
    void setFileSuggestions(const QString& path, const QVector<double>& ck, const QVector<double>& cv);

    QPushButton* studyButton() const { return form_->runButton(); }
    QPushButton* stopButton() const { return form_->stopButton(); }
    QProgressBar* progressBar() const { return form_->progressBar(); }
    FrontierPlot* plot() const { return plot_; }
    QTableWidget* table() const { return table_; }
    QLineEdit* vectorsEdit() const { return vectors_; }
    QLineEdit* ckEdit() const { return ck_; }
    QLineEdit* cvEdit() const { return cv_; }
    QString status() const { return form_->status(); }
    const StudyResults& results() const { return results_; }

    void setRunning(bool running) { form_->setRunning(running); }
    void setProgress(int done, int total) { form_->setProgress(done, total); }
    void setStatus(const QString& text) { form_->setStatus(text); }
    void clearResults();
    void showResults(const StudyResults& results);

public Q_SLOTS:
    void choosePlan(int plan);                   // what a click on its point does: planChosen

Q_SIGNALS:
    void studyRequested();
    void stopRequested();
    void browseRequested();
    void setupEdited();
    void planChosen(const kvsteer::ui::StudyPlanSettings& settings);

private:
    void selectPlanRows(int plan);
    void sayWhatEmptyMeans();

    JobForm* form_ = nullptr;                    // suite, results folder, budget, Study / Stop
    QLineEdit* vectors_ = nullptr;
    QLineEdit* operators_ = nullptr;
    QLineEdit* ck_ = nullptr;
    QLineEdit* cv_ = nullptr;
    QLineEdit* layers_ = nullptr;
    FrontierPlot* plot_ = nullptr;
    QTableWidget* table_ = nullptr;
    StudyResults results_;
    QString proposedVectors_;                    // the last file proposed (replaced by the next one)
    QString suggestionsOf_;                      // the file whose suggestions these are
    QVector<double> suggestedCk_, suggestedCv_;
};

} // namespace kvsteer::ui
