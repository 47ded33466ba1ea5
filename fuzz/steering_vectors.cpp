// Steering vector files, read and checked against a loaded model (the bundled demo model:
// LLaVA layout, 4 layers, 2 KV heads of 32, a 24x24 grid) by loadSteeringFile.
#include "FuzzSupport.h"
#include "models/ModelRegistry.h"
#include "steer/SteeringVectors.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::shared_ptr<Model> model = loadModel(fuzz::demoModelDir());
    const std::string path = fuzz::writeScratch("vectors.safetensors", data, size);
    fuzz::expectError([&] {
        SteeringFileInfo info;
        const SteeringVectors v = loadSteeringFile(path, *model, &info);
        if (v.numLayers() != model->config().text.numLayers) __builtin_trap();
        for (int l = 0; l < v.numLayers(); ++l) {
            fuzz::touchBytes(v.keys[l]);
            fuzz::touchBytes(v.values[l]);
        }
        fuzz::touchBytes(v.mask);
    });
    return 0;
}
