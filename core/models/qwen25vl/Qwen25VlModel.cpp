#include "models/qwen25vl/Qwen25VlModel.h"

#include "Error.h"
#include "models/qwen25vl/Qwen25VlConfig.h"
#include "models/qwen2vl/Qwen2VlModel.h"

#include <filesystem>

namespace kvsteer {

std::shared_ptr<Model> loadQwen25Vl(const std::string& directory, const LoadOptions& options) {
    if (!std::filesystem::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    const std::string where = "config " + (std::filesystem::path(directory) / "config.json").string();
    return Qwen2VlModel::loadParsed(directory, options, parseQwen25VlConfig(readConfigJson(directory), where));
}

} // namespace kvsteer
