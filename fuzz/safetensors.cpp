// Safetensors: the header (length, JSON, dtypes, shapes, offsets) and the data it points to,
// through SafeTensorsFile — the reader behind every checkpoint, dump and vector file.
#include "FuzzSupport.h"
#include "io/SafeTensors.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::writeScratch("input.safetensors", data, size);
    fuzz::expectError([&] {
        SafeTensorsFile file(path);
        for (const std::string& name : file.names()) {
            const TensorInfo& info = file.info(name);
            // A view the reader accepted must lie inside the mapping: read all of it.
            const at::Tensor t = file.tensor(name);
            if (t.numel() != info.numel()) __builtin_trap();
            fuzz::touchBytes(t);
        }
    });
    return 0;
}
