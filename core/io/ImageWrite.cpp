// PNG writing (stb_image_write), kept apart from decoding so only one file carries stb's code.
#include "io/Image.h"

#include "Error.h"

#define STB_IMAGE_WRITE_STATIC   // private copy: tests or tools may embed their own
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <cstdio>
#include <unistd.h>

namespace kvsteer {

void savePng(const std::string& path, const ImageU8& img) {
    if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * img.height * 3)
        throw Error("savePng " + path + ": image is empty or its buffer does not match its size");
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    if (!stbi_write_png(tmp.c_str(), img.width, img.height, 3, img.rgb.data(), img.width * 3)) {
        std::remove(tmp.c_str());
        throw Error("cannot write PNG " + path);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot move " + tmp + " to " + path);
    }
}

} // namespace kvsteer
