#pragma once
// Undo commands for the painted strength map. Each holds the whole map before and after (rows ×
// cols floats: 576 for LLaVA-1.5, 4096 for a 64×64 PaliGemma), so undo and redo restore it exactly.
#include "types/StrengthGrid.h"

#include <QUndoCommand>

namespace kvsteer::ui {

class PatchCanvas;

class StrengthEditCommand : public QUndoCommand {
public:
    // `before` and `after` are the whole map; pushing the command applies `after` (a no-op when
    // the canvas already shows it, as after a live brush stroke).
    StrengthEditCommand(PatchCanvas* canvas, StrengthGrid before, StrengthGrid after, const QString& text);
    void undo() override;
    void redo() override;

    const StrengthGrid& before() const { return before_; }
    const StrengthGrid& after() const { return after_; }

private:
    PatchCanvas* canvas_;
    StrengthGrid before_, after_;
};

} // namespace kvsteer::ui
