#pragma once
// The studio's look: the Fusion style, a light palette, a readable minimum font size and the few
// style-sheet touches (group boxes, the Run button, dock titles). kvsteer-studio applies it at start;
// the layout test applies the same, so what it measures is what a person sees.
class QApplication;

namespace kvsteer::ui {

void applyStudioLook(QApplication& app);

} // namespace kvsteer::ui
