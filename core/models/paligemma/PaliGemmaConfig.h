#pragma once
// config.json of a PaliGemma directory (model_type "paligemma", transformers'
// PaliGemmaConfig), and its SiglipImageProcessor preprocessor_config.json. transformers saves
// PaliGemma configs with every sub-config key equal to its class default left out (the real
// google/paligemma-3b-* files are trimmed that way), so the defaults below are part of the
// format: Gemma's head_dim 256, rope_theta 10000, rms_norm_eps 1e-6, tied embeddings, the tanh
// GELU; SigLIP's 224 px / patch 16, layer_norm_eps 1e-6.
#include "io/Config.h"
#include "io/Image.h"

#include <string>

namespace kvsteer {

struct PaliGemmaConfig {
    ModelConfig model;
    // The top-level hidden_size: image features are divided by its square root before they
    // enter the prompt (transformers 4.45; Gemma then scales every row by sqrt(text hidden)).
    int64_t featureScaleHidden = 2048;
};

PaliGemmaConfig parsePaliGemmaConfig(const std::string& jsonText, const std::string& where);

// preprocessor_config.json (SiglipImageProcessor: a direct resize to size, no crop, mean and std
// 0.5) or, when the file is absent, its defaults for the tower's image_size. The resize must
// give the tower's image_size.
ClipPreprocessConfig siglipPreprocessConfig(const std::string& directory, int imageSize);

} // namespace kvsteer
