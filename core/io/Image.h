#pragma once
// kvsteer image loading and CLIP preprocessing.
//
// Reproduces, bit for bit, what Hugging Face's CLIPImageProcessor (transformers 4.45 with
// Pillow 9.4) does for LLaVA-1.5:
//   convert("RGB") -> resize shortest edge (PIL BICUBIC on uint8) -> center crop ->
//   float32(u8 * rescale_factor) -> (x - mean) / std in float32 -> CHW.
//
// Decoding uses stb_image (PNG, JPEG, BMP, GIF first frame). PNG, BMP and GIF decode to the same
// pixels as Pillow; JPEG decoders differ (stb_image vs libjpeg-turbo), so JPEG pixels may differ
// from Pillow's by a few levels. Every failure throws kvsteer::Error naming the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

// 8-bit RGB image, HWC, row-major: rgb[(y * width + x) * 3 + c].
struct ImageU8 {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;

    ImageU8() = default;
    ImageU8(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 0) {}

    bool empty() const { return width <= 0 || height <= 0; }
    uint8_t at(int y, int x, int c) const { return rgb[(static_cast<size_t>(y) * width + x) * 3 + c]; }
    uint8_t& at(int y, int x, int c) { return rgb[(static_cast<size_t>(y) * width + x) * 3 + c]; }
};

// Largest image (width * height) accepted by the decoder and the resizer; Pillow's
// DecompressionBombError threshold (2 * Image.MAX_IMAGE_PIXELS).
constexpr long long kMaxImagePixels = 178956970LL;

// Reads and decodes an image file (PNG, JPEG, BMP, GIF first frame) into RGB. Grey is replicated,
// alpha is dropped (like PIL's convert("RGB")); 16-bit grey PNGs are clipped to 0..255 like
// Pillow's mode "I" -> "RGB" conversion, other 16-bit PNGs keep the high byte.
ImageU8 loadImage(const std::string& path);

// Same as loadImage for an in-memory encoded file; nameForErrors is used in error messages.
ImageU8 decodeImage(const uint8_t* data, size_t size, const std::string& nameForErrors);

// Pillow's Image.resize((newWidth, newHeight), Image.BICUBIC) on an 8-bit RGB image, bit-exact
// (two-pass fixed-point convolution, horizontal first; a pass is skipped when that dimension is
// unchanged; same size returns a copy).
// Throws kvsteer::Error (prefixed with `what`) for an empty image or a buffer that does not
// hold width * height * 3 bytes.
void requireRgbImage(const ImageU8& img, const char* what);

ImageU8 resizeBicubic(const ImageU8& img, int newWidth, int newHeight);

// transformers.image_transforms.center_crop: top = (H - cropH) // 2, left = (W - cropW) // 2;
// an image smaller than the crop is padded with zeros (centred like transformers does).
ImageU8 centerCrop(const ImageU8& img, int cropWidth, int cropHeight);

struct ResizeSize {
    int width = 0;
    int height = 0;
};

// transformers' get_resize_output_image_size(default_to_square=False): the short edge becomes
// shortestEdge, the long edge int(shortestEdge * long / short). Throws Error for non-positive sizes.
ResizeSize shortestEdgeResizeSize(int width, int height, int shortestEdge);

struct ClipPreprocessConfig {
    // "size": {"shortest_edge": N} (or a bare integer) -> shortestEdge = N.
    // "size": {"height": H, "width": W} -> shortestEdge = 0 and resizeWidth/resizeHeight = W/H
    // (exact resize, as CLIPImageProcessor does for such a size dict).
    int shortestEdge = 336;
    int resizeWidth = 0;
    int resizeHeight = 0;
    int cropWidth = 336;
    int cropHeight = 336;
    bool doResize = true, doCenterCrop = true, doRescale = true, doNormalize = true;
    double rescaleFactor = 1.0 / 255.0;
    float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    float std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

    // Parses a preprocessor_config.json. Missing keys keep the CLIP defaults above; a missing or
    // unparsable file, or a malformed field, throws Error naming the file and the field.
    // "resample" must be 3 (BICUBIC), the only filter implemented.
    static ClipPreprocessConfig fromJsonFile(const std::string& path);
    // Same, from JSON text; nameForErrors is used in messages.
    static ClipPreprocessConfig fromJsonString(const std::string& text, const std::string& nameForErrors);
};

struct PreprocessedImage {
    ImageU8 resized;            // after resize (== input when doResize is false)
    ImageU8 cropped;            // after center crop (== resized when doCenterCrop is false)
    std::vector<float> pixels;  // CHW float32, 3 * cropped.height * cropped.width
    // Families that show the model several views of one picture (LLaVA-NeXT: a base view, then
    // crops) keep `views` images of viewSize x viewSize in `pixels`, one after the other, and
    // the picture's own size; `cropped` is then the picture as the strength map lies on it.
    int views = 1;
    int viewSize = 0;
    int sourceWidth = 0, sourceHeight = 0;
};

// The full CLIPImageProcessor pipeline for one RGB image. Throws Error for an empty image, a bad
// config, or a resize target larger than kMaxImagePixels (e.g. an absurd aspect ratio).
PreprocessedImage clipPreprocess(const ImageU8& img, const ClipPreprocessConfig& cfg);

// Writes an RGB image as PNG, atomically (temporary file + rename). Throws kvsteer::Error.
void savePng(const std::string& path, const ImageU8& img);

} // namespace kvsteer
