#include "studio/FileDialogs.h"

#include <QFileDialog>
#include <QFileInfo>

namespace kvsteer::ui {

QString askSavePath(QWidget* parent, const QString& title, const QString& suggested, const QString& filter, const QString& suffix) {
    QString path = QFileDialog::getSaveFileName(parent, title, suggested, filter);
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += suffix;
    return path;
}

} // namespace kvsteer::ui
