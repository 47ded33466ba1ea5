#pragma once
// PromptPanel: the question, the decoding settings (max tokens, greedy by default, or sampling
// with temperature / top-p / seed), the live toggle, and Run / Stop.
#include "types/StudioTypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace kvsteer::ui {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);

    QString prompt() const;
    void setPrompt(const QString& text);
    GenerationSettings generation() const;
    void setGeneration(const GenerationSettings& g);
    bool live() const;
    void setLive(bool live);
    void setRunning(bool running);
    void setCanRun(bool canRun, const QString& why = QString());
    void setExamples(const QStringList& prompts);
    QStringList examples() const;
    // The loaded model's family and its prompt around "{question}" (Model::applyTemplate), shown
    // in the question's tooltip: what the model reads is the family's choice, not the studio's.
    void setTemplate(const QString& family, const QString& promptTemplate);
    QString promptTemplate() const { return template_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* stopButton() const { return stop_; }
    QLineEdit* promptEdit() const { return prompt_; }

Q_SIGNALS:
    void runRequested();
    void stopRequested();
    void promptEdited(const QString& text);        // by the user
    void promptChanged(const QString& text);       // by anyone
    void generationChanged(const kvsteer::ui::GenerationSettings& g);
    void liveToggled(bool live);

private:
    void updateSamplingUi();

    QLineEdit* prompt_ = nullptr;
    QToolButton* examples_ = nullptr;
    QSpinBox* maxTokens_ = nullptr;
    QComboBox* decoding_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QDoubleSpinBox* topP_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QCheckBox* stopAtEos_ = nullptr;
    QCheckBox* live_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* stop_ = nullptr;
    QString template_;
    bool running_ = false;
    bool canRun_ = false;
};

} // namespace kvsteer::ui
