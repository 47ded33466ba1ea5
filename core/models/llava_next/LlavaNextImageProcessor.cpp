#include "models/llava_next/LlavaNextImageProcessor.h"

#include "Error.h"

#include <algorithm>

namespace kvsteer {

namespace {

// The fitted picture pasted on a black canvas of the pinpoint's size.
ImageU8 padToResolution(const ImageU8& fitted, const AnyresGrid& grid) {
    ImageU8 canvas(grid.best.width, grid.best.height);
    for (int y = 0; y < fitted.height; ++y)
        std::copy_n(&fitted.rgb[size_t(y) * fitted.width * 3], size_t(fitted.width) * 3,
                    &canvas.rgb[(size_t(y + grid.padTop) * canvas.width + grid.padLeft) * 3]);
    return canvas;
}

ImageU8 cutCrop(const ImageU8& canvas, int top, int left, int size) {
    ImageU8 crop(size, size);
    for (int y = 0; y < size; ++y)
        std::copy_n(&canvas.rgb[(size_t(top + y) * canvas.width + left) * 3], size_t(size) * 3, &crop.rgb[size_t(y) * size * 3]);
    return crop;
}

} // namespace

PreprocessedImage llavaNextPreprocess(const ImageU8& picture, const ClipPreprocessConfig& clip, const std::vector<Resolution>& pinpoints,
                                      int patchSize) {
    requireRgbImage(picture, "LLaVA-NeXT image processor");
    const int view = clip.cropHeight;
    if (clip.cropWidth != view || (clip.shortestEdge != 0 && clip.shortestEdge != view))
        throw Error("LLaVA-NeXT image processor: crop_size " + std::to_string(clip.cropWidth) + "x" + std::to_string(clip.cropHeight) +
                    " and size.shortest_edge " + std::to_string(clip.shortestEdge) + " must be one square view size");
    const AnyresGrid grid = anyresGrid({picture.height, picture.width}, pinpoints, view, patchSize);

    const ImageU8 fitted = resizeBicubic(picture, grid.fitted.width, grid.fitted.height);
    const ImageU8 canvas = padToResolution(fitted, grid);
    std::vector<ImageU8> views{resizeBicubic(picture, view, view)};
    for (int r = 0; r < grid.cropRows; ++r)
        for (int c = 0; c < grid.cropCols; ++c) views.push_back(cutCrop(canvas, r * view, c * view, view));

    PreprocessedImage out;
    out.pixels.reserve(views.size() * 3 * view * view);
    for (const ImageU8& v : views) {
        const PreprocessedImage one = clipPreprocess(v, clip);   // a view-sized image: resize and crop keep it
        out.pixels.insert(out.pixels.end(), one.pixels.begin(), one.pixels.end());
    }
    out.resized = fitted;
    out.cropped = fitted;
    out.views = grid.views();
    out.viewSize = view;
    out.sourceWidth = picture.width;
    out.sourceHeight = picture.height;
    return out;
}

} // namespace kvsteer
