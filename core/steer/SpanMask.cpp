#include "steer/SpanMask.h"

#include "Error.h"
#include "cache/SpanCells.h"
#include "steer/Mask.h"

#include <regex>

namespace kvsteer {

namespace {

int number(const std::string& digits, const std::string& spec) {
    try {
        return std::stoi(digits);
    } catch (const std::exception&) {
        throw Error("mask " + spec + ": '" + digits + "' is too large");
    }
}

std::string viewNames(const VisualSpan& span) {
    std::string names;
    for (const SpanView& v : span.views) names += (names.empty() ? "" : ", ") + v.name + " (" + std::to_string(v.rows) + "x" + std::to_string(v.cols) + ")";
    return names;
}

// Cells r0..r1 x c0..c1 of `view` (inclusive, checked against its size) as a grid mask.
at::Tensor viewCellsMask(const VisualSpan& span, const SpanView& view, const std::string& cells, const std::string& spec) {
    static const std::regex pattern(R"((\d+),(\d+),(\d+),(\d+))");
    std::smatch m;
    if (!std::regex_match(cells, m, pattern))
        throw Error("mask '" + spec + "': expected r0,c0,r1,c1 (cells of the " + view.name + " view, inclusive)");
    const int r0 = number(m[1], spec), c0 = number(m[2], spec), r1 = number(m[3], spec), c1 = number(m[4], spec);
    if (r0 > r1 || c0 > c1 || r1 >= view.rows || c1 >= view.cols)
        throw Error("mask " + spec + ": expected r0 <= r1 < " + std::to_string(view.rows) + " and c0 <= c1 < " + std::to_string(view.cols) +
                    " (the " + view.name + " view is " + std::to_string(view.rows) + "x" + std::to_string(view.cols) + " cells)");
    return gridMaskOfPictureRect(span, view.left + c0 * view.cellWidth, view.top + r0 * view.cellHeight, view.left + (c1 + 1) * view.cellWidth,
                                 view.top + (r1 + 1) * view.cellHeight);
}

at::Tensor pixelMask(const VisualSpan& span, const std::string& spec) {
    static const std::regex pattern(R"(px:(\d+),(\d+),(\d+),(\d+))");
    std::smatch m;
    if (!std::regex_match(spec, m, pattern)) throw Error("mask '" + spec + "': expected px:x0,y0,x1,y1 (picture pixels, x1 and y1 exclusive)");
    const int x0 = number(m[1], spec), y0 = number(m[2], spec), x1 = number(m[3], spec), y1 = number(m[4], spec);
    const int w = span.pictureWidth, h = span.pictureHeight;
    if (x0 >= x1 || y0 >= y1 || x1 > w || y1 > h)
        throw Error("mask " + spec + ": expected 0 <= x0 < x1 <= " + std::to_string(w) + " and 0 <= y0 < y1 <= " + std::to_string(h) +
                    " (the picture is " + std::to_string(w) + "x" + std::to_string(h) + " pixels)");
    return gridMaskOfPictureRect(span, double(x0) / w, double(y0) / h, double(x1) / w, double(y1) / h);
}

} // namespace

at::Tensor loadSpanMask(const std::string& spec, const VisualSpan& span) {
    const bool picture = spec.rfind("px:", 0) == 0 || spec.rfind("view:", 0) == 0;
    if (!span.hasViews()) {
        if (picture)
            throw Error("mask " + spec + ": px: and view: masks address a picture shown in several views (LLaVA-NeXT); this prompt's grid is " +
                        span.grid().text() + ": use rect:r0,c0,r1,c1");
        return loadMask(spec, span.gridHeight, span.gridWidth);
    }
    if (spec.rfind("px:", 0) == 0) return pixelMask(span, spec);
    if (spec.rfind("view:", 0) == 0) {
        static const std::regex pattern(R"(view:([a-z]+):(.*))");
        std::smatch m;
        if (!std::regex_match(spec, m, pattern)) throw Error("mask '" + spec + "': expected view:NAME:r0,c0,r1,c1 (NAME: " + viewNames(span) + ")");
        for (const SpanView& v : span.views)
            if (v.name == m[1].str()) return viewCellsMask(span, v, m[2].str(), spec);
        throw Error("mask " + spec + ": no view '" + m[1].str() + "' (this picture's views: " + viewNames(span) + ")");
    }
    if (spec.rfind("rect:", 0) == 0) return viewCellsMask(span, span.views.front(), spec.substr(5), spec);
    return loadMask(spec, span.gridHeight, span.gridWidth);
}

} // namespace kvsteer
