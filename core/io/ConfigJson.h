#pragma once
// The readers every family's config parser is built from: typed optional keys that name the
// field when its type is wrong, and the vision / decoder sub-configs with transformers'
// defaults. A present key of the wrong type is an error (a silently ignored typo would give a
// silently wrong model).
#include "Error.h"
#include "io/Config.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>

namespace kvsteer::configjson {

using nlohmann::json;

// Parses `text` as a JSON object; throws Error naming `where` otherwise.
json parseObject(const std::string& text, const std::string& where);

template <typename T>
void readKey(const json& obj, const char* key, T& out, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return;
    try {
        out = it->get<T>();
    } catch (const std::exception&) {
        throw Error(where + ": field '" + key + "' has the wrong type (got " + it->type_name() + ")");
    }
}

void requirePositive(int64_t value, const char* key, const std::string& where);
void requireOneOf(const std::string& value, std::initializer_list<const char*> allowed, const char* key, const std::string& where);

// vision_config / text_config over the given defaults (the family's config class defaults).
VisionConfig parseVision(const json& j, const std::string& where, VisionConfig defaults);
TextConfig parseText(const json& j, const std::string& where, TextConfig defaults);

// The sub-object `key` of `j` (absent or null: an empty object, so every default applies).
const json& subObject(const json& j, const char* key, const std::string& where);

} // namespace kvsteer::configjson
