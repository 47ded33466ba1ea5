// UTF-8 with SentencePiece's rules — see Utf8.h. Follows sentencepiece 0.1.97's
// string_util (OneCharLen, DecodeUTF8, IsValidDecodeUTF8) and Python's str.isspace().
#include "text/Utf8.h"

#include <cstdint>

namespace kvsteer::detail {
namespace {

// Python's str.isspace() for one code point (what str.strip() removes). Used for the
// lstrip/rstrip flags of added tokens.
bool isPythonWhitespace(uint32_t cp) {
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

uint32_t codepointOf(std::string_view ch) {
    const auto c0 = static_cast<unsigned char>(ch[0]);
    if (ch.size() == 1) return c0;
    uint32_t cp = c0 & (0xFF >> (ch.size() + 1));
    for (size_t i = 1; i < ch.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(ch[i]) & 0x3F);
    return cp;
}

} // namespace

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string replaceAll(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (true) {
        const size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos)).append(to);
        pos = hit + from.size();
    }
    out.append(s.substr(pos));
    return out;
}

size_t oneCharLen(unsigned char lead) {
    static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

bool decodeUtf8Char(std::string_view s, size_t* length) {
    *length = 1;
    if (s.empty()) return false;
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto isTrail = [&](size_t i) { return (b(i) & 0xC0) == 0x80; };
    const auto validCodepoint = [](uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); };
    const unsigned char c0 = b(0);
    if (c0 < 0x80) return true;
    if (s.size() >= 2 && (c0 & 0xE0) == 0xC0) {
        const uint32_t cp = ((c0 & 0x1Fu) << 6) | (b(1) & 0x3Fu);
        if (isTrail(1) && cp >= 0x80 && validCodepoint(cp)) { *length = 2; return true; }
    } else if (s.size() >= 3 && (c0 & 0xF0) == 0xE0) {
        const uint32_t cp = ((c0 & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
        if (isTrail(1) && isTrail(2) && cp >= 0x800 && validCodepoint(cp)) { *length = 3; return true; }
    } else if (s.size() >= 4 && (c0 & 0xF8) == 0xF0) {
        const uint32_t cp = ((c0 & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
        if (isTrail(1) && isTrail(2) && isTrail(3) && cp >= 0x10000 && validCodepoint(cp)) {
            *length = 4;
            return true;
        }
    }
    return false;
}

std::string bytesToText(std::string_view bytes) {
    std::string out;
    while (!bytes.empty()) {
        size_t n = 1;
        if (decodeUtf8Char(bytes, &n)) out.append(bytes.substr(0, n));
        else out.append(kReplacementChar);
        bytes.remove_prefix(n);
    }
    return out;
}

bool isIncompleteUtf8(std::string_view b) {
    if (b.empty()) return false;
    const auto c0 = static_cast<unsigned char>(b[0]);
    size_t need = 0;
    unsigned char lo1 = 0x80, hi1 = 0xBF;
    if (c0 >= 0xC2 && c0 <= 0xDF) {
        need = 2;
    } else if (c0 >= 0xE0 && c0 <= 0xEF) {
        need = 3;
        if (c0 == 0xE0) lo1 = 0xA0;  // no overlongs
        if (c0 == 0xED) hi1 = 0x9F;  // no surrogates
    } else if (c0 >= 0xF0 && c0 <= 0xF4) {
        need = 4;
        if (c0 == 0xF0) lo1 = 0x90;  // no overlongs
        if (c0 == 0xF4) hi1 = 0x8F;  // nothing above U+10FFFF
    } else {
        return false;
    }
    if (b.size() >= need) return false;
    for (size_t k = 1; k < b.size(); ++k) {
        const auto c = static_cast<unsigned char>(b[k]);
        if (c < (k == 1 ? lo1 : 0x80) || c > (k == 1 ? hi1 : 0xBF)) return false;
    }
    return true;
}

size_t pythonUtf8Step(std::string_view s, bool* valid) {
    size_t n = 1;
    *valid = decodeUtf8Char(s, &n);
    if (*valid) return n;
    // The longest proper prefix of a well-formed character is what one U+FFFD replaces.
    size_t k = 1;
    while (k < s.size() && isIncompleteUtf8(s.substr(0, k + 1))) ++k;
    return k;
}

std::string pythonUtf8Decode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    while (!bytes.empty()) {
        bool valid = false;
        const size_t n = pythonUtf8Step(bytes, &valid);
        if (valid) out.append(bytes.substr(0, n));
        else out.append(kReplacementChar);
        bytes.remove_prefix(n);
    }
    return out;
}

std::string pythonLstrip(std::string_view s) {
    size_t n = 0;
    while (!s.empty() && decodeUtf8Char(s, &n) && isPythonWhitespace(codepointOf(s.substr(0, n))))
        s.remove_prefix(n);
    return std::string(s);
}

std::string pythonRstrip(std::string_view s) {
    while (!s.empty()) {
        size_t start = s.size() - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && s.size() - start < 4) --start;
        size_t n = 0;
        const std::string_view last = s.substr(start);
        if (!decodeUtf8Char(last, &n) || n != last.size() || !isPythonWhitespace(codepointOf(last))) break;
        s.remove_suffix(last.size());
    }
    return std::string(s);
}

} // namespace kvsteer::detail
