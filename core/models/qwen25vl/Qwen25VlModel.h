#pragma once
// A Qwen2.5-VL directory (model_type "qwen2_5_vl") loads as the Qwen2-VL family's model
// (qwen2vl/Qwen2VlModel.h) with the config read by Qwen25VlConfig.h: the decoder, M-RoPE, the
// processor and the grid are Qwen2-VL's; the tower is Qwen2.5-VL's (window attention, RMSNorm,
// SwiGLU), which Qwen2VisionTower builds from that config. This folder depends on qwen2vl/,
// never the reverse.
#include "models/Model.h"

#include <memory>
#include <string>

namespace kvsteer {

std::shared_ptr<Model> loadQwen25Vl(const std::string& directory, const LoadOptions& options = {});

} // namespace kvsteer
