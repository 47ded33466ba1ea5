// Images: decodeImage, what loadImage runs on a file's bytes — the format sniffing, the project's
// own pre-checks (JPEG Huffman tables, truncated BMPs, the pixel cap) and stb_image's PNG, JPEG,
// BMP and GIF decoders behind them.
#include "FuzzSupport.h"
#include "io/Image.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::expectError([&] {
        const ImageU8 img = decodeImage(data, size, "input");
        if (img.empty()) __builtin_trap();
        requireRgbImage(img, "decoded image");
    });
    return 0;
}
