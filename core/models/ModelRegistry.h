#pragma once
// Which family reads a model directory: config.json's model_type, looked up in one table.
// Adding a family is a folder under models/ plus one line in ModelRegistry.cpp.
#include "models/Model.h"

#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

struct ModelFamily {
    std::string modelType;   // config.json's model_type
    std::string name;        // the family's name ("PaliGemma")
    bool vision;             // reads images (false: a text-only decoder)
    std::string summary;     // for --help and errors: its grid and prompt layout
    ModelConfig (*parseConfig)(const std::string& jsonText, const std::string& where);
    std::shared_ptr<Model> (*load)(const std::string& directory, const LoadOptions& options);
};

const std::vector<ModelFamily>& modelFamilies();

// Parses a config.json text with the family its model_type names. Throws Error naming `where`
// and the supported types for anything else.
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& where);

// Loads DIR with its family. Throws Error (bad files, unsupported model_type, not enough
// memory) or LoadCancelled.
std::shared_ptr<Model> loadModel(const std::string& directory, const LoadOptions& options = {});

} // namespace kvsteer
