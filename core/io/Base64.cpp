#include "io/Base64.h"

#include <cstdint>

namespace kvsteer {

namespace {

// The 6-bit value of a base64 character, or -1.
int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

} // namespace

std::optional<std::string> decodeBase64(const std::string& text) {
    std::string clean;
    clean.reserve(text.size());
    for (char c : text)
        if (c != '\n' && c != '\r') clean += c;
    if (clean.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(clean.size() / 4 * 3);
    for (size_t i = 0; i < clean.size(); i += 4) {
        const bool last = i + 4 == clean.size();
        // Padding: "xx==" or "xxx=", only in the last group.
        const int pad = (clean[i + 3] == '=') + (clean[i + 2] == '=' && clean[i + 3] == '=');
        if (pad > 0 && !last) return std::nullopt;
        uint32_t group = 0;
        for (int k = 0; k < 4; ++k) {
            const int v = k >= 4 - pad ? 0 : sextet(clean[i + size_t(k)]);
            if (v < 0) return std::nullopt;
            group = (group << 6) | uint32_t(v);
        }
        out += char((group >> 16) & 0xFF);
        if (pad < 2) out += char((group >> 8) & 0xFF);
        if (pad < 1) out += char(group & 0xFF);
    }
    return out;
}

} // namespace kvsteer
