#pragma once
// ErrorReporter: every error the studio shows goes through here — a window-modal warning that
// does not block (the studio keeps streaming behind it), never a pile of identical dialogs, and
// the count and last text that tests and scripts read. Notices (something the studio did on the
// person's behalf, e.g. resampling a mask onto a new grid) need no answer: they go to the status
// bar and beside what they concern, never here.
#include <QObject>
#include <QPointer>
#include <QString>

class QMessageBox;
class QWidget;

namespace kvsteer::ui {

class ErrorReporter : public QObject {
    Q_OBJECT
public:
    explicit ErrorReporter(QWidget* window);

    void show(const QString& title, const QString& text);
    QString lastText() const { return last_; }
    int count() const { return count_; }

Q_SIGNALS:
    void shown(const QString& title, const QString& text);

private:
    void openBox(int icon, const QString& title, const QString& text);

    QWidget* window_;
    QString last_;
    int count_ = 0;
    QPointer<QMessageBox> box_;
};

} // namespace kvsteer::ui
