#pragma once
// The studio's icons, drawn as vectors with QPainter so they are crisp at every size and follow
// the palette (disabled icons turn grey). The application icon comes from resources/icons/.
#include <QIcon>

namespace kvsteer::ui::icons {

enum class Id {
    OpenImage, OpenModel, OpenSession, SaveSession, Paste,
    Run, Stop,
    Brush, Eraser, Rectangle, Fill, Clear, Invert, Grid,
    Undo, Redo,
    ExportVectors, ImportVectors, ExportMask, SavePlot, Compute,
    About,
};

QIcon get(Id id);
QIcon application();   // :/icons/kvsteer-*.png

} // namespace kvsteer::ui::icons
