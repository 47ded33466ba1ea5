#pragma once
// The readers every family's config parser is built from: typed optional keys that name the
// field when its type is wrong, and the vision / decoder sub-configs with transformers'
// defaults. A present key of the wrong type is an error (a silently ignored typo would give a
// silently wrong model).
#include "Error.h"
#include "io/Config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace kvsteer::configjson {

using nlohmann::json;

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

// Parses `text` as a JSON object; throws Error naming `where` otherwise.
json parseObject(const std::string& text, const std::string& where);

// nlohmann's get<int>() converts any number with a plain cast: 1e48 (or an integer literal too
// long for 64 bits, which it reads as a double) is undefined behaviour, 3000000000 a silently
// wrapped int, 2.5 a silently truncated one. A number read into an integer field (or a list of
// them) must be a whole number that fits; anything that is not a number is left to get<T>().
template <typename T>
bool fitsField(const json& v) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        static_assert(std::is_signed_v<T>, "integer config fields are signed");
        constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
        if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(hi);
        if (v.is_number_integer()) return v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
        if (v.is_number_float()) {
            const double d = v.get<double>();   // lo is a power of two: -lo is exact as a double
            return d == std::floor(d) && d >= static_cast<double>(lo) && d < -static_cast<double>(lo);
        }
        return true;
    } else if constexpr (IsVector<T>::value) {
        if (!v.is_array()) return true;
        for (const json& e : v)
            if (!fitsField<typename T::value_type>(e)) return false;
        return true;
    } else {
        return true;
    }
}

template <typename T>
void readKey(const json& obj, const char* key, T& out, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return;
    if (!fitsField<T>(*it))
        throw Error(where + ": field '" + key + "' must be a whole number that fits (got " + it->dump().substr(0, 60) + ")");
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
