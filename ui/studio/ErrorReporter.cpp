#include "studio/ErrorReporter.h"

#include <QMessageBox>

namespace kvsteer::ui {

ErrorReporter::ErrorReporter(QWidget* window) : QObject(window), window_(window) {}

void ErrorReporter::show(const QString& title, const QString& text) {
    last_ = text;
    ++count_;
    Q_EMIT shown(title, text);
    openBox(QMessageBox::Warning, title, text);
}

void ErrorReporter::openBox(int icon, const QString& title, const QString& text) {
    if (box_ && box_->isVisible() && box_->text() == text) return;   // no pile of identical dialogs
    auto* box = new QMessageBox(QMessageBox::Icon(icon), title, text, QMessageBox::Ok, window_);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    box->open();   // not exec(): the studio keeps running (and streaming) behind the dialog
    box_ = box;
}

} // namespace kvsteer::ui
