#pragma once
// PreferencesDialog: how models are loaded — device, dtype, threads. Takes effect on the next
// model load (the dialog offers to reload the current model).
#include "types/StudioTypes.h"

#include <QDialog>

class QComboBox;
class QSpinBox;

namespace kvsteer::ui {

class PreferencesDialog : public QDialog {
    Q_OBJECT
public:
    explicit PreferencesDialog(const LoadSettings& current, QWidget* parent = nullptr);
    LoadSettings settings() const;

private:
    QComboBox* device_ = nullptr;
    QComboBox* dtype_ = nullptr;
    QSpinBox* threads_ = nullptr;
};

} // namespace kvsteer::ui
