#pragma once
// Qwen2.5-VL's window attention regroups the image before its vision blocks: the grid of merged
// cells (one visual token each, 2x2 patches) is cut into square windows of `windowSide` cells a
// side, row-major from the top left, so windows at the right and bottom edges are partial. The
// cells are then listed window by window (row-major inside each window), and a windowed block
// lets each patch attend only to the patches of its own window. After the merger the tokens go
// back to row-major order. Example, a 10 x 18 grid with 4-cell windows: 3 x 5 windows, rows of
// 4, 4, 2 cells and columns of 4, 4, 4, 4, 2.
#include <cstdint>
#include <vector>

namespace kvsteer {

struct VisionWindows {
    // cellOrder[i]: the row-major index of the cell listed i-th (frames one after another).
    std::vector<int64_t> cellOrder;
    // How many cells each window holds, in that order (only non-empty windows).
    std::vector<int64_t> cellsPerWindow;
};

// `frames` x `gridHeight` x `gridWidth` merged cells; `windowSide` cells a window side (>= 1).
VisionWindows visionWindows(int64_t frames, int64_t gridHeight, int64_t gridWidth, int64_t windowSide);

} // namespace kvsteer
