#include "models/qwen2vl/VisionWindows.h"

#include "Error.h"

#include <algorithm>
#include <string>

namespace kvsteer {

VisionWindows visionWindows(int64_t frames, int64_t gridHeight, int64_t gridWidth, int64_t windowSide) {
    if (frames < 1 || gridHeight < 1 || gridWidth < 1 || windowSide < 1)
        throw Error("vision windows: a grid of " + std::to_string(frames) + " x " + std::to_string(gridHeight) + " x " +
                    std::to_string(gridWidth) + " cells in windows of " + std::to_string(windowSide) + " has no window");
    VisionWindows w;
    const int64_t frameCells = gridHeight * gridWidth;
    for (int64_t t = 0; t < frames; ++t)
        for (int64_t r0 = 0; r0 < gridHeight; r0 += windowSide)
            for (int64_t c0 = 0; c0 < gridWidth; c0 += windowSide) {
                const int64_t r1 = std::min(gridHeight, r0 + windowSide), c1 = std::min(gridWidth, c0 + windowSide);
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t c = c0; c < c1; ++c) w.cellOrder.push_back(t * frameCells + r * gridWidth + c);
                w.cellsPerWindow.push_back((r1 - r0) * (c1 - c0));
            }
    return w;
}

} // namespace kvsteer
