// nfc — see UnicodeNormalize.h. ICU's C API (unorm2) normalises UTF-16, so the text makes a
// round trip through UTF-16; ASCII, which is always NFC, skips it.
#include "text/UnicodeNormalize.h"

#include "Error.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <climits>
#include <vector>

namespace kvsteer::detail {
namespace {

void check(UErrorCode err, const char* step) {
    if (U_FAILURE(err)) throw Error(std::string("Unicode NFC normalisation failed in ICU ") + step + ": " + u_errorName(err));
}

std::vector<UChar> toUtf16(std::string_view utf8) {
    if (utf8.size() > static_cast<size_t>(INT32_MAX / 2)) throw Error("text too long to normalise (" + std::to_string(utf8.size()) + " bytes)");
    std::vector<UChar> out(utf8.size() + 1);  // UTF-16 never needs more units than UTF-8 bytes
    int32_t length = 0;
    UErrorCode err = U_ZERO_ERROR;
    u_strFromUTF8WithSub(out.data(), static_cast<int32_t>(out.size()), &length, utf8.data(),
                         static_cast<int32_t>(utf8.size()), 0xFFFD, nullptr, &err);
    check(err, "u_strFromUTF8WithSub");
    out.resize(static_cast<size_t>(length));
    return out;
}

std::string toUtf8(const std::vector<UChar>& utf16) {
    std::string out(utf16.size() * 3 + 1, '\0');  // at most 3 bytes per UTF-16 unit
    int32_t length = 0;
    UErrorCode err = U_ZERO_ERROR;
    u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &length, utf16.data(), static_cast<int32_t>(utf16.size()), &err);
    check(err, "u_strToUTF8");
    out.resize(static_cast<size_t>(length));
    return out;
}

} // namespace

std::string nfc(std::string_view utf8) {
    if (std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        return std::string(utf8);
    UErrorCode err = U_ZERO_ERROR;
    const UNormalizer2* normalizer = unorm2_getNFCInstance(&err);
    check(err, "unorm2_getNFCInstance");
    const std::vector<UChar> source = toUtf16(utf8);
    const auto sourceLength = static_cast<int32_t>(source.size());
    // Preflight for the length, then normalise into a buffer of that size.
    int32_t length = unorm2_normalize(normalizer, source.data(), sourceLength, nullptr, 0, &err);
    if (err == U_BUFFER_OVERFLOW_ERROR) err = U_ZERO_ERROR;
    check(err, "unorm2_normalize");
    std::vector<UChar> composed(static_cast<size_t>(length));
    length = unorm2_normalize(normalizer, source.data(), sourceLength, composed.data(), length, &err);
    if (err == U_STRING_NOT_TERMINATED_WARNING) err = U_ZERO_ERROR;
    check(err, "unorm2_normalize");
    return toUtf8(composed);
}

} // namespace kvsteer::detail
