#pragma once
// How the heatmaps look in QCustomPlot: the colour gradients (sequential for norms and deltas,
// diverging for cosines), axes hidden for the small multiples, square grid cells whatever the
// plot's shape, and the column count that makes each small multiple largest.
#include <qcustomplot.h>

namespace kvsteer::ui {

QCPColorGradient sequentialGradient();   // viridis
QCPColorGradient divergingGradient();    // blue - white - red, for cosines
void hideAxes(QCPAxisRect* rect);
// Keeps grid cells square: the limiting side shows the whole grid; on the other side the map is
// centred horizontally, or kept at the top (under its title) vertically.
void squareCells(QCPAxisRect* rect, int rows, int cols);
// A cell's height over its width as drawn: 1 (square), except for a text prompt's token strip
// (one row), whose cells are drawn up to 4 times taller than wide so a long strip reads as a band.
double cellHeightOverWidth(int rows, int cols);
// Columns of small multiples that make each map of a gridRows × gridCols grid largest in a w×h
// area (titleH above each map): a 10×18 grid's three layers stack in one column where a square
// grid's would sit two by two.
int bestColumns(int layers, double w, double h, double titleH, int gridRows, int gridCols);
// The height one row of maps needs in that layout, laid out in `cols` columns: its title and its
// cells at the size the area allows. The rest of the area is spare (HeatmapPanel packs it below).
double mapRowHeight(int layers, int cols, double w, double h, double titleH, int gridRows, int gridCols);

} // namespace kvsteer::ui
