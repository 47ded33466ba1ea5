#include "eval/BoxCells.h"

#include "Error.h"
#include "cache/SpanCells.h"

#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdio>

namespace kvsteer {

at::Tensor boxStrength(const std::array<double, 4>& box, const ImageU8& original, const Prompt& prompt) {
    char text[128];
    std::snprintf(text, sizeof text, "box [%g, %g, %g, %g]", box[0], box[1], box[2], box[3]);
    if (!prompt.hasImage || !prompt.span.valid()) throw Error(std::string(text) + ": the prompt has no image");
    if (box[0] < 0 || box[1] < 0 || box[2] > original.width || box[3] > original.height || box[0] >= box[2] || box[1] >= box[3])
        throw Error(std::string(text) + " is outside the " + std::to_string(original.width) + "x" + std::to_string(original.height) + " image");
    // A picture in views (LLaVA-NeXT): the box on the picture, in its fractions, onto the grid.
    if (prompt.span.hasViews())
        return gridCoverageOfPictureRect(prompt.span, box[0] / original.width, box[1] / original.height, box[2] / original.width,
                                         box[3] / original.height);
    // Original pixels -> the resized image -> the crop the grid covers.
    const ImageU8& resized = prompt.image->resized;
    const ImageU8& crop = prompt.image->cropped;
    const double sx = double(resized.width) / original.width, sy = double(resized.height) / original.height;
    const double left = (resized.width - crop.width) / 2, top = (resized.height - crop.height) / 2;   // floor, as the crop
    const double x0 = std::clamp(box[0] * sx - left, 0.0, double(crop.width)), x1 = std::clamp(box[2] * sx - left, 0.0, double(crop.width));
    const double y0 = std::clamp(box[1] * sy - top, 0.0, double(crop.height)), y1 = std::clamp(box[3] * sy - top, 0.0, double(crop.height));
    if (x0 >= x1 || y0 >= y1) throw Error(std::string(text) + " lies outside the part of the image the model sees (its centre crop)");
    const int gh = prompt.span.gridHeight, gw = prompt.span.gridWidth;
    const double ch = double(crop.height) / gh, cw = double(crop.width) / gw;
    at::Tensor s = at::zeros({gh, gw});
    float* p = s.data_ptr<float>();
    for (int r = 0; r < gh; ++r) {
        const double oy = std::max(0.0, std::min(y1, (r + 1) * ch) - std::max(y0, r * ch));
        for (int c = 0; c < gw; ++c) {
            const double ox = std::max(0.0, std::min(x1, (c + 1) * cw) - std::max(x0, c * cw));
            p[r * gw + c] = float(ox * oy / (ch * cw));
        }
    }
    return s;
}

} // namespace kvsteer
