#pragma once
// The Help menu's dialogs: the five-step quick guide and About (version, libraries, model).
#include "types/StudioTypes.h"

class QWidget;

namespace kvsteer::ui {

void showQuickGuide(QWidget* parent);
void showAbout(QWidget* parent, const ModelInfo& model);

} // namespace kvsteer::ui
