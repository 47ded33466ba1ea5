// model.safetensors.index.json: Checkpoint::open on a directory whose index is the input, beside
// two small valid shards (a.safetensors, b.safetensors) it may or may not name correctly.
#include "FuzzSupport.h"
#include "io/Checkpoint.h"
#include "io/SafeTensors.h"

#include <ATen/ops/arange.h>
#include <filesystem>

using namespace kvsteer;

namespace {

std::string modelDir() {
    static const std::string dir = [] {
        const std::string d = fuzz::scratchDir() + "/model";
        std::filesystem::create_directories(d);
        writeSafeTensors(d + "/a.safetensors", {{"model.embed_tokens.weight", at::arange(12, at::kFloat).reshape({3, 4})},
                                                {"lm_head.weight", at::arange(8, at::kFloat).reshape({2, 4})}});
        writeSafeTensors(d + "/b.safetensors", {{"model.norm.weight", at::arange(4, at::kFloat)},
                                                {"visual.patch_embed.proj.weight", at::arange(6, at::kHalf)}});
        return d;
    }();
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string dir = modelDir();
    fuzz::writeScratch("model/model.safetensors.index.json", data, size);
    fuzz::expectError([&] {
        const Checkpoint ckpt = Checkpoint::open(dir);
        // What a model load asks of the checkpoint before touching any weight.
        for (const std::string& name : ckpt.canonicalNames()) {
            (void)ckpt.diskName(name);
            (void)ckpt.diskDtype(name);
            (void)ckpt.bytes(name, c10::ScalarType::Undefined);
        }
        (void)ckpt.parameterCount();
        (void)ckpt.storedBytes();
    });
    return 0;
}
