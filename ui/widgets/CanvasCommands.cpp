#include "CanvasCommands.h"

#include "PatchCanvas.h"

namespace kvsteer::ui {

StrengthEditCommand::StrengthEditCommand(PatchCanvas* canvas, StrengthGrid before, StrengthGrid after, const QString& text)
    : QUndoCommand(text), canvas_(canvas), before_(std::move(before)), after_(std::move(after)) {}

void StrengthEditCommand::undo() { canvas_->applyStrength(before_); }
void StrengthEditCommand::redo() { canvas_->applyStrength(after_); }

} // namespace kvsteer::ui
