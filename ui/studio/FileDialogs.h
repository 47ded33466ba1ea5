#pragma once
// A save dialog that appends `suffix` (".png") when the user typed a name without one; "" when
// cancelled. Shared by the studio's export and save commands.
#include <QString>

class QWidget;

namespace kvsteer::ui {

QString askSavePath(QWidget* parent, const QString& title, const QString& suggested, const QString& filter, const QString& suffix);

} // namespace kvsteer::ui
