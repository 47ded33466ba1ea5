#pragma once
// From a strength map on the span's grid to the span's tokens, and from values per token back to
// a view's map. For a plain span both are reshapes. For a span with views (LLaVA-NeXT) the map is
// painted on the finest view; every other view's cell takes the largest strength among the grid
// cells it overlaps on the picture (any overlap with area counts: a region reaches every cell
// whose pixels it covers), and tokens that are no cell (image_newline) take 0, so they are never
// steered.
#include "cache/VisualSpan.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace kvsteer {

// strength [gridHeight, gridWidth] -> [length] float32 (CPU).
at::Tensor strengthPerToken(const VisualSpan& span, const at::Tensor& strength);

// values [..., length] (any leading dims) -> [..., rows, cols] of view `view` (0 for a plain span,
// whose one view is its grid).
constexpr size_t kSpanGrid = size_t(-1);   // "the span's grid": the last, finest view
at::Tensor viewMap(const VisualSpan& span, const at::Tensor& perToken, size_t view);

// The span tokens that are cells of some view ([n] int64): all of a plain span; with views, all
// but the newline tokens.
at::Tensor cellTokens(const VisualSpan& span);

// The grid cells (row-major indices) that cell (row, col) of `view` overlaps on the picture.
std::vector<int64_t> gridCellsUnder(const VisualSpan& span, size_t view, int row, int col);

// A rectangle on the picture, in fractions of its width and height ([x0, x1) x [y0, y1)), on the
// span's grid (a span with views): the fraction of each grid cell it covers, and the mask that is
// 1 on every grid cell it overlaps.
at::Tensor gridCoverageOfPictureRect(const VisualSpan& span, double x0, double y0, double x1, double y1);
at::Tensor gridMaskOfPictureRect(const VisualSpan& span, double x0, double y0, double x1, double y1);

// The span's layout for people: "24x24 grid, 576 tokens", or per view "base 24x24 (tokens 0-575)
// + crops 24x40, a newline after each row (tokens 576-1559)".
std::string describeLayout(const VisualSpan& span);

// How many views the span shows (1 for a plain span) and their names ("grid" for a plain span).
size_t viewCount(const VisualSpan& span);
std::string viewName(const VisualSpan& span, size_t view);

} // namespace kvsteer
