#include "io/Checkpoint.h"

#include "Error.h"
#include "io/SafeTensors.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

} // namespace

std::string canonicalTensorName(const std::string& n) {
    // Order matters: the more specific prefixes first.
    static const std::vector<std::pair<std::string, std::string>> rules = {
        {"language_model.model.", "text."},                 // llava-hf (transformers < 4.52)
        {"language_model.lm_head.", "lm_head."},
        {"model.language_model.", "text."},                 // newer transformers
        {"vision_tower.vision_model.", "vision."},
        {"model.vision_tower.vision_model.", "vision."},
        {"multi_modal_projector.", "projector."},
        {"model.multi_modal_projector.", "projector."},
        {"lm_head.", "lm_head."},
        {"image_newline", "image_newline"},                 // LLaVA-NeXT's learned row end
        {"model.image_newline", "image_newline"},
        {"visual.", "vision."},                             // Qwen2-VL (transformers < 4.52)
        {"model.visual.", "vision."},                       // Qwen2-VL (newer transformers); before "model."
        {"model.", "text."},                                // plain Llama / Qwen2, Qwen2-VL's decoder before 4.52
    };
    for (const auto& [from, to] : rules)
        if (startsWith(n, from)) return to + n.substr(from.size());
    return "";
}

Checkpoint Checkpoint::open(const std::string& directory) {
    Checkpoint ckpt;
    ckpt.directory_ = directory;
    const fs::path dir(directory);
    if (!fs::is_directory(dir)) throw Error("model directory " + directory + ": does not exist or is not a directory");

    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    std::vector<std::string> shardNames;
    std::map<std::string, std::string> expectedShardOf;   // disk name -> shard, from the index
    if (fs::exists(index)) {
        nlohmann::json j;
        try {
            std::ifstream in(index);
            j = nlohmann::json::parse(in);
        } catch (const std::exception& e) {
            throw Error("index " + index.string() + ": not valid JSON (" + e.what() + ")");
        }
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw Error("index " + index.string() + ": expected an object with a 'weight_map' object");
        std::set<std::string> seen;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it->is_string()) throw Error("index " + index.string() + ": weight_map['" + it.key() + "'] must be a file name");
            const std::string shard = it->get<std::string>();
            if (shard.find('/') != std::string::npos)
                throw Error("index " + index.string() + ": shard name '" + shard + "' must be a plain file name");
            expectedShardOf[it.key()] = shard;
            if (seen.insert(shard).second) shardNames.push_back(shard);
        }
        for (const auto& shard : shardNames)
            if (!fs::exists(dir / shard))
                throw Error("model directory " + directory + ": shard " + shard + " listed in model.safetensors.index.json is missing");
    } else if (fs::exists(single)) {
        shardNames.push_back("model.safetensors");
    } else {
        throw Error("model directory " + directory + ": no model.safetensors or model.safetensors.index.json");
    }

    for (const auto& shard : shardNames) {
        auto file = std::make_shared<SafeTensorsFile>((dir / shard).string());
        const size_t fileIndex = ckpt.files_.size();
        ckpt.files_.push_back(file);
        for (const auto& name : file->names()) {
            const std::string canonical = canonicalTensorName(name);
            if (canonical.empty()) continue;
            if (ckpt.entries_.count(canonical))
                throw Error("model directory " + directory + ": tensor '" + name + "' appears twice (" + shard + " and " +
                            ckpt.files_[ckpt.entries_[canonical].file]->path() + ")");
            ckpt.entries_[canonical] = {fileIndex, name};
        }
    }
    for (const auto& [name, shard] : expectedShardOf) {
        const std::string canonical = canonicalTensorName(name);
        if (canonical.empty()) continue;
        auto it = ckpt.entries_.find(canonical);
        if (it == ckpt.entries_.end())
            throw Error("model directory " + directory + ": tensor '" + name + "' listed in the index is not in " + shard);
    }
    return ckpt;
}

bool Checkpoint::has(const std::string& canonicalName) const { return entries_.count(canonicalName) != 0; }

std::string Checkpoint::diskName(const std::string& canonicalName) const {
    auto it = entries_.find(canonicalName);
    return it == entries_.end() ? canonicalName : it->second.diskName;
}

std::vector<std::string> Checkpoint::canonicalNames() const {
    std::vector<std::string> names;
    for (const auto& [n, e] : entries_) names.push_back(n);
    return names;
}

at::Tensor Checkpoint::load(const std::string& canonicalName, const std::vector<int64_t>& expectedShape) const {
    auto it = entries_.find(canonicalName);
    if (it == entries_.end())
        throw Error("model directory " + directory_ + ": missing tensor for '" + canonicalName + "' (checked the llava-hf, transformers and llama naming schemes)");
    const SafeTensorsFile& file = *files_[it->second.file];
    const TensorInfo& info = file.info(it->second.diskName);
    if (info.dtype != "F32" && info.dtype != "F16" && info.dtype != "BF16")
        throw Error(file.path() + ": tensor '" + info.name + "' has dtype " + info.dtype + " (expected F32, F16 or BF16)");
    if (info.shape != expectedShape)
        throw Error(file.path() + ": tensor '" + info.name + "' has shape " + shapeText(info.shape) + " but the config implies " +
                    shapeText(expectedShape));
    at::Tensor t = file.tensor(it->second.diskName);
    if (observer_) observer_(static_cast<int64_t>(info.end - info.begin));
    return t;
}

void Checkpoint::releasePages(const std::string& canonicalName) const {
    auto it = entries_.find(canonicalName);
    if (it != entries_.end()) files_[it->second.file]->releasePages(it->second.diskName);
}

int64_t Checkpoint::bytes(const std::string& canonicalName, c10::ScalarType dtype) const {
    auto it = entries_.find(canonicalName);
    if (it == entries_.end()) return 0;
    const TensorInfo& info = files_[it->second.file]->info(it->second.diskName);
    if (dtype == c10::ScalarType::Undefined) return static_cast<int64_t>(info.end - info.begin);
    return info.numel() * static_cast<int64_t>(c10::elementSize(dtype));
}

std::string Checkpoint::diskDtype(const std::string& canonicalName) const {
    auto it = entries_.find(canonicalName);
    return it == entries_.end() ? std::string() : files_[it->second.file]->info(it->second.diskName).dtype;
}

int64_t Checkpoint::storedBytes() const {
    int64_t n = 0;
    for (const auto& [canonical, e] : entries_) n += bytes(canonical, c10::ScalarType::Undefined);
    return n;
}

int64_t Checkpoint::parameterCount() const {
    int64_t n = 0;
    for (const auto& [canonical, e] : entries_) n += files_[e.file]->info(e.diskName).numel();
    return n;
}

std::map<std::string, int64_t> Checkpoint::parametersByDtype() const {
    std::map<std::string, int64_t> counts;
    for (const auto& [canonical, e] : entries_) {
        const TensorInfo& i = files_[e.file]->info(e.diskName);
        counts[i.dtype] += i.numel();
    }
    return counts;
}

} // namespace kvsteer
