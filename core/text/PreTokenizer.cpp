// PreTokenizer — see PreTokenizer.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/PreTokenizer.h"

#include "Error.h"

#include <pcre2.h>

#include <algorithm>

namespace kvsteer::detail {
namespace {

std::string pcre2Message(int code) {
    PCRE2_UCHAR buffer[256];
    if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(code);
    return reinterpret_cast<const char*>(buffer);
}

struct MatchData {
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (!data) throw Error("pre-tokenizer: out of memory for PCRE2 match data");
    }
    ~MatchData() { pcre2_match_data_free(data); }
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
    pcre2_match_data* data;
};

// \s -> \p{White_Space}, \S -> \P{White_Space}, other escapes kept as they are (see the header).
std::string withWhiteSpaceProperty(const std::string& pattern) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '\\' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        const char next = pattern[++i];
        if (next == 's') out += "\\p{White_Space}";
        else if (next == 'S') out += "\\P{White_Space}";
        else out += std::string("\\") + next;
    }
    return out;
}

} // namespace

struct PreTokenizer::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::string& pattern, bool keepUnmatched)
    : compiled_(std::make_unique<Compiled>()), keepUnmatched_(keepUnmatched) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const std::string translated = withWhiteSpaceProperty(pattern);
    compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), PCRE2_UTF | PCRE2_UCP,
                                    &error, &offset, nullptr);
    if (!compiled_->code)
        throw Error("pre-tokenizer regex \"" + translated + "\" rejected by PCRE2 at offset " + std::to_string(offset) + ": " +
                    pcre2Message(error));
    // JIT is only an optimisation: when it is unavailable pcre2_match interprets the pattern.
    pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces;
    MatchData match(compiled_->code);  // per call: the compiled pattern is shared, match data is not
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    // The subject's UTF-8 is checked on the first match only; later matches start at a
    // character boundary of the same subject.
    uint32_t options = 0;
    size_t covered = 0;   // the end of the last match
    for (size_t start = 0; start < text.size();) {
        const int rc = pcre2_match(compiled_->code, subject, text.size(), start, options, match.data, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error("pre-tokenizer: PCRE2 match failed: " + pcre2Message(rc));
        options = PCRE2_NO_UTF_CHECK;
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
        const size_t begin = ovector[0], end = ovector[1];
        if (keepUnmatched_ && begin > covered) pieces.push_back(text.substr(covered, begin - covered));
        if (end > begin) pieces.push_back(text.substr(begin, end - begin));
        covered = std::max(covered, end);
        // An empty match (none in Qwen2's pattern) moves on by one character, as findall does.
        start = end > begin ? end : end + 1;
        while (end == begin && start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
    if (keepUnmatched_ && covered < text.size()) pieces.push_back(text.substr(covered));
    return pieces;
}

} // namespace kvsteer::detail
