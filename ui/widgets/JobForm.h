#pragma once
// JobForm: what the Evaluate dock's Dataset and Study tabs share — the input file with Browse…,
// the results folder (proposed beside the input, "input.eval" / "input.study", until the person
// types another), the answer budget, and Run / Stop with a progress bar and a status line. Each
// panel adds its own rows between the folder and the budget, and its results below the form.
#include <QWidget>

class QFormLayout;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace kvsteer::ui {

// The words of one tab's form.
struct JobFormText {
    QString inputLabel, inputPlaceholder;   // "Suite", "suite.json: the datasets and their roles"
    QString outTip;                         // what goes into the results folder
    QString outSuffix;                      // ".study": the proposed folder's name ends so
    QString runLabel, runTip;               // "Study", what a click does
    int maxNewTokens = 32;
};

class JobForm : public QWidget {
    Q_OBJECT
public:
    explicit JobForm(const JobFormText& text, QWidget* parent = nullptr);

    void addRow(const QString& label, QWidget* field);   // above the budget
    void addRow(const QString& label, QLayout* fields);

    QString input() const;
    void setInput(const QString& path);   // also proposes a results folder beside it
    QString outDir() const;
    void setOutDir(const QString& dir);
    // The results folder, when it is the one proposed beside the input and a job refused it
    // (another job's files are there), moved to the next free name beside it: NAME-2<suffix>,
    // NAME-3<suffix>, ... Returns the new folder; empty for a folder the person chose (theirs to change).
    QString proposeFreshOutDir();
    // Whether a job's error says that its results folder holds another job (the core's wording,
    // core/eval/EvalReport.cpp and core/study/StudyJob.cpp: "... (use a new folder)").
    static bool folderTaken(const QString& error) { return error.endsWith(QLatin1String("(use a new folder)")); }
    int maxNewTokens() const;
    void setMaxNewTokens(int tokens);
    QLineEdit* inputEdit() const { return input_; }
    QLineEdit* outDirEdit() const { return outDir_; }
    QSpinBox* tokensBox() const { return tokens_; }

    QPushButton* runButton() const { return run_; }
    QPushButton* stopButton() const { return stop_; }
    QProgressBar* progressBar() const { return progress_; }
    QString status() const;
    void setRunning(bool running);
    void setProgress(int done, int total);
    void setStatus(const QString& text);

Q_SIGNALS:
    void runRequested();
    void stopRequested();
    void browseRequested();

private:
    JobFormText text_;
    QFormLayout* form_ = nullptr;
    QLineEdit* input_ = nullptr;
    QLineEdit* outDir_ = nullptr;
    QSpinBox* tokens_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* stop_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
};

} // namespace kvsteer::ui
