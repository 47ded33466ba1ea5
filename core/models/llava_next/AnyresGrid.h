#pragma once
// LLaVA-NeXT's "anyres" geometry: where one picture's pixels and tokens go. The processor and the
// model both follow it, and so do the strength maps (the views of a VisualSpan).
//
//   picture W x H --best of image_grid_pinpoints--> fitted inside best (aspect kept), padded to it
//   best (e.g. 336 x 672) cut into view x view crops (1 x 2)          -> the crops' features
//   the picture squashed to view x view                               -> the base view's features
//
// Tokens: the base view's g x g cells (g = view / patch), then the crops' cells stitched into one
// grid of (cropRows * g) x (cropCols * g), "unpadded" (the rows or columns that fell on padding
// dropped), each of its rows followed by one image_newline token.
#include <cstdint>
#include <vector>

namespace kvsteer {

struct Resolution {
    int height = 0, width = 0;
    bool operator==(const Resolution& o) const { return height == o.height && width == o.width; }
};

// The pinpoint that keeps most of the picture's pixels once fitted inside it, then the one that
// wastes least; the first of equals (as transformers' select_best_resolution).
Resolution selectBestResolution(Resolution picture, const std::vector<Resolution>& pinpoints);

// The picture's size fitted inside `target` with its aspect ratio kept: one side equals the
// target's, the other is rounded up and capped (transformers' get_patch_output_size).
Resolution fitInside(Resolution picture, Resolution target);

struct AnyresGrid {
    Resolution picture;        // the image as given
    Resolution best;           // the pinpoint chosen
    Resolution fitted;         // the picture resized inside `best`
    int padTop = 0, padLeft = 0;   // pixels of padding above and left of it
    int viewSize = 0;          // pixels per view side (336)
    int cellsPerView = 0;      // cells per view side (24)
    int cropRows = 0, cropCols = 0;
    // The crops' stitched feature grid after unpadding, and the cells dropped above / left.
    int rows = 0, cols = 0, rowOffset = 0, colOffset = 0;

    int views() const { return 1 + cropRows * cropCols; }
    int64_t baseTokens() const { return int64_t(cellsPerView) * cellsPerView; }
    int64_t tokens() const { return baseTokens() + int64_t(rows) * (cols + 1); }
};

// Throws Error for an empty picture, no pinpoints, or a pinpoint that is not a multiple of viewSize.
AnyresGrid anyresGrid(Resolution picture, const std::vector<Resolution>& pinpoints, int viewSize, int patchSize);

} // namespace kvsteer
