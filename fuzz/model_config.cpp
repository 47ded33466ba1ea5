// config.json of every supported model_type (ModelRegistry::parseModelConfig picks the family by
// model_type, then that family's parser runs), plus the two image-processor configs read beside
// it (preprocessor_config.json: CLIP/SigLIP and Qwen2-VL). The same bytes go to each parser.
#include "FuzzSupport.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/qwen2vl/Qwen2VlImageProcessor.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz::expectError([&] {
        const ModelConfig cfg = parseModelConfig(text, "config.json");
        // What loading derives from a parsed config must not misbehave either.
        if (cfg.hasVision) (void)cfg.imageSeqLength();
        (void)cfg.visionLayersNeeded();
    });
    fuzz::expectError([&] { (void)ClipPreprocessConfig::fromJsonString(text, "preprocessor_config.json"); });
    fuzz::expectError([&] { (void)Qwen2VlImageProcessorConfig::fromJsonString(text, "preprocessor_config.json"); });
    return 0;
}
