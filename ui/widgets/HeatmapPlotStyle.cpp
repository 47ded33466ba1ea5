#include "HeatmapPlotStyle.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace kvsteer::ui {

namespace {

// A 256-level gradient through the given (position, colour) stops.
QCPColorGradient gradientThrough(std::initializer_list<std::pair<double, QColor>> stops) {
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& [at, color] : stops) g.setColorStopAt(at, color);
    g.setLevelCount(256);
    return g;
}

} // namespace

QCPColorGradient sequentialGradient() {
    return gradientThrough({{0.00, QColor(0x44, 0x01, 0x54)}, {0.13, QColor(0x48, 0x24, 0x75)}, {0.25, QColor(0x41, 0x44, 0x87)},
                            {0.38, QColor(0x35, 0x5F, 0x8D)}, {0.50, QColor(0x2A, 0x78, 0x8E)}, {0.63, QColor(0x21, 0x91, 0x8C)},
                            {0.75, QColor(0x22, 0xA8, 0x84)}, {0.88, QColor(0x7A, 0xD1, 0x51)}, {1.00, QColor(0xFD, 0xE7, 0x25)}});
}

QCPColorGradient divergingGradient() {
    return gradientThrough({{0.0, QColor(0x3B, 0x4C, 0xC0)}, {0.25, QColor(0x8D, 0xB0, 0xFE)}, {0.5, QColor(0xF2, 0xF2, 0xF2)},
                            {0.75, QColor(0xF4, 0x9A, 0x7B)}, {1.0, QColor(0xB4, 0x04, 0x26)}});
}

void hideAxes(QCPAxisRect* rect) {
    for (QCPAxis* a : rect->axes()) {
        a->setVisible(false);
        a->grid()->setVisible(false);
    }
}

void squareCells(QCPAxisRect* rect, int rows, int cols) {
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);   // reversed: row 0 at the top
    const double w = rect->width(), h = rect->height();
    if (w <= 0 || h <= 0) return;
    const double tall = cellHeightOverWidth(rows, cols);
    const double cell = std::min(w / cols, h / (rows * tall));   // a cell's width on screen
    const double spanX = w / cell, spanY = h / (cell * tall);     // in cells
    x->setRange(QCPRange((cols - 1) / 2.0 - spanX / 2.0, (cols - 1) / 2.0 + spanX / 2.0));
    y->setRange(QCPRange(-0.5, -0.5 + spanY));
}

double cellHeightOverWidth(int rows, int cols) { return rows == 1 ? std::clamp(cols / 4.0, 1.0, 4.0) : 1.0; }

namespace {
// The on-screen width of one cell of a gridRows × gridCols map, in a rows × cols layout of w × h.
double cellSize(int layers, int cols, double w, double h, double titleH, int gridRows, int gridCols) {
    const int rows = (layers + cols - 1) / cols;
    const double tall = cellHeightOverWidth(gridRows, gridCols);
    return std::min(w / cols / std::max(1, gridCols), (h / rows - titleH) / (std::max(1, gridRows) * tall));
}
} // namespace

double mapRowHeight(int layers, int cols, double w, double h, double titleH, int gridRows, int gridCols) {
    const double cell = cellSize(layers, std::max(1, cols), w, h, titleH, gridRows, gridCols);
    return titleH + std::max(0.0, cell) * std::max(1, gridRows) * cellHeightOverWidth(gridRows, gridCols);
}

int bestColumns(int layers, double w, double h, double titleH, int gridRows, int gridCols) {
    // A map of gridRows × gridCols cells drawn `cell` px wide is gridCols·cell wide and
    // gridRows·tall·cell high: the column count whose cells come out largest wins; near-ties
    // (within 5 %) go to the layout with fewer empty slots.
    int best = 1;
    double bestCell = -1;
    int bestEmpty = 0;
    for (int cols = 1; cols <= std::max(1, layers); ++cols) {
        const int rows = (layers + cols - 1) / cols;
        const double cell = cellSize(layers, cols, w, h, titleH, gridRows, gridCols);
        const int empty = rows * cols - layers;
        const bool larger = cell > bestCell * 1.05;
        const bool asLargeAndFuller = cell > bestCell * 0.95 && empty < bestEmpty;
        if (bestCell < 0 || larger || asLargeAndFuller) {
            best = cols;
            bestCell = std::max(bestCell, cell);
            bestEmpty = empty;
        }
    }
    return best;
}

} // namespace kvsteer::ui
