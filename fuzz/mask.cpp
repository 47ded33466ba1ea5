// Masks, through loadMask: the first byte picks the form (bits 0-1: rect: string, image file,
// .npy, .safetensors) and the grid (bit 2: 16x16 or the non-square 12x20); the rest is the
// spec's text after "rect:" or the file.
#include "FuzzSupport.h"
#include "steer/Mask.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const int gh = (data[0] & 4) ? 12 : 16, gw = (data[0] & 4) ? 20 : 16;
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    std::string spec;
    switch (data[0] & 3) {
    case 0: spec = "rect:" + rest; break;
    case 1: spec = fuzz::writeScratch("mask.png", rest); break;
    case 2: spec = fuzz::writeScratch("mask.npy", rest); break;
    default: spec = fuzz::writeScratch("mask.safetensors", rest); break;
    }
    fuzz::expectError([&] {
        const at::Tensor m = loadMask(spec, gh, gw);
        if (m.dim() != 2 || m.size(0) != gh || m.size(1) != gw) __builtin_trap();
    });
    return 0;
}
