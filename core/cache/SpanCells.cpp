#include "cache/SpanCells.h"

#include "Error.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>

namespace kvsteer {

namespace {

// Shared edges do not count as overlap: a cell boundary that coincides with another's (in
// floating point, within this) touches without covering.
constexpr double kEdge = 1e-9;

const SpanView& gridView(const VisualSpan& span) { return span.views.back(); }

// The grid columns (or rows) a [from, to) stretch of the picture overlaps: first, last inclusive.
std::pair<int, int> gridRange(double from, double to, double origin, double cell, int count) {
    const int first = std::max(0, int(std::floor((from - origin) / cell + kEdge)));
    const int last = std::min(count - 1, int(std::ceil((to - origin) / cell - kEdge)) - 1);
    return {first, last};
}

void requireView(const VisualSpan& span, size_t view) {
    if (view >= viewCount(span))
        throw Error("span: view " + std::to_string(view) + " does not exist (the span shows " + std::to_string(viewCount(span)) + ")");
}

} // namespace

std::string describeLayout(const VisualSpan& span) {
    if (!span.hasViews()) return span.grid().text() + " grid, " + std::to_string(span.length) + " tokens";
    std::string text;
    for (const SpanView& v : span.views) {
        const int64_t first = v.offset, last = v.offset + int64_t(v.rows) * v.rowStride - 1;
        text += (text.empty() ? "" : " + ") + v.name + " " + std::to_string(v.rows) + "x" + std::to_string(v.cols) +
                (v.rowStride > v.cols ? ", a newline after each row" : "") + " (tokens " + std::to_string(first) + "-" + std::to_string(last) + ")";
    }
    return text + "; maps are painted on the " + span.views.back().name + "' grid";
}

size_t viewCount(const VisualSpan& span) { return span.hasViews() ? span.views.size() : 1; }

std::string viewName(const VisualSpan& span, size_t view) {
    requireView(span, view);
    return span.hasViews() ? span.views[view].name : "grid";
}

std::vector<int64_t> gridCellsUnder(const VisualSpan& span, size_t view, int row, int col) {
    requireView(span, view);
    if (!span.hasViews() || view + 1 == span.views.size()) return {int64_t(row) * span.gridWidth + col};
    const SpanView& v = span.views[view];
    const SpanView& g = gridView(span);
    const auto [c0, c1] = gridRange(v.left + col * v.cellWidth, v.left + (col + 1) * v.cellWidth, g.left, g.cellWidth, g.cols);
    const auto [r0, r1] = gridRange(v.top + row * v.cellHeight, v.top + (row + 1) * v.cellHeight, g.top, g.cellHeight, g.rows);
    std::vector<int64_t> cells;
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) cells.push_back(int64_t(r) * g.cols + c);
    return cells;
}

at::Tensor strengthPerToken(const VisualSpan& span, const at::Tensor& strength) {
    const at::Tensor map = strength.to(at::kCPU).to(at::kFloat).contiguous();
    if (map.dim() != 2 || map.size(0) != span.gridHeight || map.size(1) != span.gridWidth)
        throw Error("strength map must be [" + std::to_string(span.gridHeight) + ", " + std::to_string(span.gridWidth) + "] (the span's grid)");
    if (!span.hasViews()) return map.reshape({-1});
    const float* s = map.data_ptr<float>();
    std::vector<float> out(size_t(span.length), 0.0f);   // newline tokens stay 0
    for (size_t v = 0; v < span.views.size(); ++v) {
        const SpanView& view = span.views[v];
        for (int r = 0; r < view.rows; ++r)
            for (int c = 0; c < view.cols; ++c) {
                float strongest = 0.0f;
                for (int64_t cell : gridCellsUnder(span, v, r, c)) strongest = std::max(strongest, s[cell]);
                out[size_t(view.offset + int64_t(r) * view.rowStride + c)] = strongest;
            }
    }
    return at::tensor(out, at::kFloat);
}

at::Tensor cellTokens(const VisualSpan& span) {
    if (!span.hasViews()) return at::arange(span.length, at::kLong);
    std::vector<int64_t> tokens;
    for (const SpanView& view : span.views)
        for (int r = 0; r < view.rows; ++r)
            for (int c = 0; c < view.cols; ++c) tokens.push_back(view.offset + int64_t(r) * view.rowStride + c);
    return at::tensor(tokens, at::kLong);
}

at::Tensor viewMap(const VisualSpan& span, const at::Tensor& perToken, size_t view) {
    requireView(span, view);
    if (perToken.size(-1) != span.length)
        throw Error("span: " + std::to_string(perToken.size(-1)) + " values for " + std::to_string(span.length) + " tokens");
    std::vector<int64_t> shape(perToken.sizes().begin(), perToken.sizes().end() - 1);
    if (!span.hasViews()) {
        shape.insert(shape.end(), {span.gridHeight, span.gridWidth});
        return perToken.reshape(shape);
    }
    const SpanView& v = span.views[view];
    // Rows of rowStride tokens, the first `cols` of each.
    at::Tensor rows = perToken.narrow(-1, v.offset, int64_t(v.rows) * v.rowStride);
    std::vector<int64_t> strided = shape;
    strided.insert(strided.end(), {v.rows, v.rowStride});
    return rows.reshape(strided).narrow(-1, 0, v.cols);
}

at::Tensor gridCoverageOfPictureRect(const VisualSpan& span, double x0, double y0, double x1, double y1) {
    if (!span.hasViews()) throw Error("span: picture rectangles need a span with views (LLaVA-NeXT)");
    const SpanView& g = gridView(span);
    at::Tensor coverage = at::zeros({g.rows, g.cols}, at::kFloat);
    float* out = coverage.data_ptr<float>();
    auto overlap = [](double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); };
    for (int r = 0; r < g.rows; ++r) {
        const double top = g.top + r * g.cellHeight;
        const double oy = overlap(y0, y1, top, top + g.cellHeight) / g.cellHeight;
        for (int c = 0; c < g.cols; ++c) {
            const double left = g.left + c * g.cellWidth;
            out[r * g.cols + c] = float(oy * overlap(x0, x1, left, left + g.cellWidth) / g.cellWidth);
        }
    }
    return coverage;
}

at::Tensor gridMaskOfPictureRect(const VisualSpan& span, double x0, double y0, double x1, double y1) {
    // Overlaps thinner than a rounding error are shared edges, not cover.
    return (gridCoverageOfPictureRect(span, x0, y0, x1, y1) > 1e-6).to(at::kFloat);
}

} // namespace kvsteer
