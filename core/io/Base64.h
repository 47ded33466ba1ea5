#pragma once
// Base64 (RFC 4648, the standard alphabet, '=' padding): how the studio's session files carry
// binary parts (the image, the vector file) inside JSON.
#include <optional>
#include <string>

namespace kvsteer {

// The decoded bytes, or nothing when `text` is not base64 (a character outside the alphabet, a
// length that is not a multiple of 4, padding anywhere but at the end). Line breaks are skipped.
std::optional<std::string> decodeBase64(const std::string& text);

} // namespace kvsteer
