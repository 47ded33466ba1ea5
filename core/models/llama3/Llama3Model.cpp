#include "models/llama3/Llama3Model.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "models/llava/LlavaConfig.h"

#include <filesystem>

namespace kvsteer {

namespace fs = std::filesystem;

std::shared_ptr<Llama3Model> Llama3Model::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    std::shared_ptr<Llama3Model> m(new Llama3Model());
    const std::string where = "config " + (fs::path(directory) / "config.json").string();
    ModelConfig config = parseLlavaConfig(readConfigJson(directory), where);
    if (config.modelType != "llama") throw Error(where + ": model_type '" + config.modelType + "' is not a Llama-3 config (expected \"llama\")");
    Checkpoint ckpt = m->beginLoad(directory, config, options);
    m->chatTemplate_ = Llama3ChatTemplate::fromDirectory(directory);
    m->systemMessage_ = options.systemMessage;
    m->decoder_ = std::make_unique<TransformerDecoder>(m->config_.text, ckpt, m->format_);
    m->finishLoad();
    return m;
}

std::string Llama3Model::applyTemplate(const std::string& question, bool withImage) const {
    if (withImage) throw Error("model " + config_.name + " is a text-only Llama-3: it takes no image");
    std::vector<ChatMessage> messages;
    if (systemMessage_) messages.push_back({"system", *systemMessage_});
    messages.push_back({"user", question});
    return chatTemplate_.render(messages);
}

PreprocessedImage Llama3Model::preprocessImage(const ImageU8&) const {
    throw Error("model " + config_.name + " is a text-only Llama-3: it takes no image");
}

at::Tensor Llama3Model::encodeImage(const at::Tensor&) const {
    throw Error("model " + config_.name + " is a text-only Llama-3: it takes no image");
}

} // namespace kvsteer
