#include "PreferencesDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

namespace kvsteer::ui {

PreferencesDialog::PreferencesDialog(const LoadSettings& current, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Preferences"));
    auto* v = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    device_ = new QComboBox(this);
    device_->setEditable(true);
    device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda"), QStringLiteral("cuda:1")});
    device_->setCurrentText(current.device);
    device_->setToolTip(tr("Where the model runs: cpu, or cuda[:N] with a CUDA build of libtorch"));
    dtype_ = new QComboBox(this);
    dtype_->addItem(tr("as stored in the checkpoint"), QStringLiteral("auto"));
    dtype_->addItem(tr("float32 (widened copy)"), QStringLiteral("f32"));
    dtype_->addItem(tr("float16"), QStringLiteral("f16"));
    dtype_->addItem(tr("bfloat16"), QStringLiteral("bf16"));
    dtype_->setCurrentIndex(std::max(0, dtype_->findData(current.dtype)));
    dtype_->setToolTip(tr("On CPU the dtype the weights are kept in (compute is float32 either way: 16-bit weights are widened inside the matmul, exactly); on CUDA the compute dtype"));
    threads_ = new QSpinBox(this);
    threads_->setRange(0, 256);
    threads_->setSpecialValueText(tr("all cores (%1)").arg(QThread::idealThreadCount()));
    threads_->setValue(current.threads);
    threads_->setToolTip(tr("Threads for the matrix multiplications"));
    form->addRow(tr("Device"), device_);
    form->addRow(tr("Weights"), dtype_);
    form->addRow(tr("Threads"), threads_);
    v->addLayout(form);
    auto* note = new QLabel(tr("These settings apply the next time a model is loaded."), this);
    note->setStyleSheet(QStringLiteral("color: #6b737d;"));
    v->addWidget(note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    v->addWidget(buttons);
}

LoadSettings PreferencesDialog::settings() const {
    LoadSettings s;
    s.device = device_->currentText().trimmed().isEmpty() ? QStringLiteral("cpu") : device_->currentText().trimmed();
    s.dtype = dtype_->currentData().toString();
    s.threads = threads_->value();
    return s;
}

} // namespace kvsteer::ui
