#include "models/llava_next/AnyresGrid.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace kvsteer {

Resolution selectBestResolution(Resolution picture, const std::vector<Resolution>& pinpoints) {
    Resolution best;
    int64_t mostKept = 0, leastWasted = std::numeric_limits<int64_t>::max();
    for (const Resolution& r : pinpoints) {
        // In double, as the processor does: int() of the scaled sides.
        const double scale = std::min(double(r.width) / picture.width, double(r.height) / picture.height);
        const int64_t w = int64_t(picture.width * scale), h = int64_t(picture.height * scale);
        const int64_t kept = std::min(w * h, int64_t(picture.width) * picture.height);
        const int64_t wasted = int64_t(r.width) * r.height - kept;
        if (kept > mostKept || (kept == mostKept && wasted < leastWasted)) {
            mostKept = kept;
            leastWasted = wasted;
            best = r;
        }
    }
    return best;
}

Resolution fitInside(Resolution picture, Resolution target) {
    const double scaleW = double(target.width) / picture.width, scaleH = double(target.height) / picture.height;
    if (scaleW < scaleH) return {std::min(int(std::ceil(picture.height * scaleW)), target.height), target.width};
    return {target.height, std::min(int(std::ceil(picture.width * scaleH)), target.width)};
}

AnyresGrid anyresGrid(Resolution picture, const std::vector<Resolution>& pinpoints, int viewSize, int patchSize) {
    if (picture.height <= 0 || picture.width <= 0) throw Error("anyres: the picture is empty");
    if (pinpoints.empty()) throw Error("anyres: image_grid_pinpoints is empty");
    if (viewSize <= 0 || patchSize <= 0 || viewSize % patchSize != 0)
        throw Error("anyres: view size " + std::to_string(viewSize) + " is not a multiple of the patch size " + std::to_string(patchSize));
    for (const Resolution& r : pinpoints)
        if (r.height <= 0 || r.width <= 0 || r.height % viewSize != 0 || r.width % viewSize != 0)
            throw Error("anyres: image_grid_pinpoints entry [" + std::to_string(r.height) + ", " + std::to_string(r.width) +
                        "] is not a positive multiple of the view size " + std::to_string(viewSize));
    AnyresGrid g;
    g.picture = picture;
    g.viewSize = viewSize;
    g.cellsPerView = viewSize / patchSize;
    g.best = selectBestResolution(picture, pinpoints);
    g.fitted = fitInside(picture, g.best);
    // Padding is split evenly, the odd pixel after (below / right).
    g.padTop = (g.best.height - g.fitted.height) / 2;
    g.padLeft = (g.best.width - g.fitted.width) / 2;
    g.cropRows = g.best.height / viewSize;
    g.cropCols = g.best.width / viewSize;

    // Unpadding, in whole cells and integer arithmetic (the processor's token count): the side
    // the picture does not fill loses the padding's cells, evenly from both ends.
    const int64_t h = int64_t(g.cropRows) * g.cellsPerView, w = int64_t(g.cropCols) * g.cellsPerView;
    g.rows = int(h);
    g.cols = int(w);
    if (int64_t(picture.width) * h > w * picture.height) {   // wider than the grid: rows of padding
        const int64_t kept = picture.height * w / picture.width;
        g.rowOffset = int((h - kept) / 2);
        g.rows = int(h - 2 * g.rowOffset);
    } else {
        const int64_t kept = picture.width * h / picture.height;
        g.colOffset = int((w - kept) / 2);
        g.cols = int(w - 2 * g.colOffset);
    }
    return g;
}

} // namespace kvsteer
