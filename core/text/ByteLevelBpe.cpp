// ByteLevelBpe — see ByteLevelBpe.h. Follows transformers 4.45's GPT2Tokenizer /
// Qwen2Tokenizer: bytes_to_unicode, bpe() and the byte_decoder used by
// convert_tokens_to_string. Symbols are handled as vocabulary ids rather than strings; the
// two are interchangeable because every merge result is checked to be a token.
#include "text/ByteLevelBpe.h"

#include "Error.h"
#include "text/Utf8.h"

#include <algorithm>
#include <climits>

namespace kvsteer::detail {
namespace {

bool printableLatin1(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

std::string utf8Of(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {  // the alphabet stays below U+0800: two bytes
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// Code point of the alphabet -> byte, or -1 for a character outside the alphabet.
const std::array<int, 0x144>& symbolBytes() {
    static const std::array<int, 0x144> table = [] {
        std::array<int, 0x144> t;
        t.fill(-1);
        for (unsigned b = 0; b < 256; ++b) t[byteLevelSymbol(static_cast<unsigned char>(b))] = static_cast<int>(b);
        return t;
    }();
    return table;
}

// A token in the byte alphabet -> its bytes; false if a character is outside the alphabet.
bool tokenBytes(std::string_view token, std::string* out) {
    out->clear();
    while (!token.empty()) {
        size_t n = 1;
        if (!decodeUtf8Char(token, &n)) return false;
        uint32_t cp = static_cast<unsigned char>(token[0]);
        if (n == 2) cp = ((cp & 0x1Fu) << 6) | (static_cast<unsigned char>(token[1]) & 0x3Fu);
        if (n > 2 || cp >= symbolBytes().size() || symbolBytes()[cp] < 0) return false;
        out->push_back(static_cast<char>(symbolBytes()[cp]));
        token.remove_prefix(n);
    }
    return true;
}

} // namespace

uint32_t byteLevelSymbol(unsigned char byte) {
    if (printableLatin1(byte)) return byte;
    uint32_t shifted = 0;  // how many non-printable bytes come before this one
    for (unsigned b = 0; b < byte; ++b) shifted += printableLatin1(b) ? 0 : 1;
    return 0x100 + shifted;
}

ByteLevelBpe::ByteLevelBpe(const BpeFiles& files) {
    addVocabulary(files);
    addMerges(files);
}

void ByteLevelBpe::addVocabulary(const BpeFiles& files) {
    int64_t end = 0;
    for (const auto& [token, id] : files.vocab) end = std::max(end, id + 1);
    tokens_.assign(static_cast<size_t>(end), std::string());
    bytes_.assign(static_cast<size_t>(end), std::string());
    for (const auto& [token, id] : files.vocab) {
        std::string& slot = tokens_[static_cast<size_t>(id)];
        if (!slot.empty())
            throw Error(files.vocabWhere + ": id " + std::to_string(id) + " is given to both \"" + slot + "\" and \"" + token + "\"");
        if (!tokenBytes(token, &bytes_[static_cast<size_t>(id)]))
            throw Error(files.vocabWhere + ": token \"" + token + "\" (id " + std::to_string(id) +
                        ") has a character outside the byte-level alphabet (GPT-2 bytes_to_unicode)");
        slot = token;
        ids_.emplace(token, static_cast<int32_t>(id));
    }
    for (unsigned b = 0; b < 256; ++b) {
        const std::string symbol = utf8Of(byteLevelSymbol(static_cast<unsigned char>(b)));
        const auto it = ids_.find(symbol);
        if (it == ids_.end())
            throw Error(files.vocabWhere + ": the byte symbol \"" + symbol + "\" (byte " + std::to_string(b) +
                        ") is missing; a byte-level BPE vocabulary has all 256");
        byteIds_[b] = it->second;
    }
}

int32_t ByteLevelBpe::symbolId(const std::string& symbol, const BpeMerge& m, const BpeFiles& files) const {
    const auto it = ids_.find(symbol);
    if (it == ids_.end())
        throw Error(m.where + ": merge \"" + m.first + " " + m.second + "\": \"" + symbol + "\" is not a token of " + files.vocabWhere);
    return it->second;
}

// Ranks count from 0 in file order. A pair listed twice keeps its last rank, as the Python
// dict(zip(merges, range(...))) does.
void ByteLevelBpe::addMerges(const BpeFiles& files) {
    if (files.merges.size() > static_cast<size_t>(INT32_MAX)) throw Error(files.vocabWhere + ": too many merges");
    merges_.reserve(files.merges.size());
    for (size_t rank = 0; rank < files.merges.size(); ++rank) {
        const BpeMerge& m = files.merges[rank];
        const int32_t left = symbolId(m.first, m, files), right = symbolId(m.second, m, files);
        const int32_t joined = symbolId(m.first + m.second, m, files);
        merges_[pairKey(left, right)] = Merge{static_cast<int32_t>(rank), joined};
    }
}

int64_t ByteLevelBpe::idOfBytes(std::string_view bytes) const {
    std::string token;
    for (char c : bytes) token += utf8Of(byteLevelSymbol(static_cast<unsigned char>(c)));
    return idOf(token);
}

std::vector<int64_t> ByteLevelBpe::encodeBytes(std::string_view bytes) const {
    std::vector<int32_t> word;
    word.reserve(bytes.size());
    for (char c : bytes) word.push_back(byteIds_[static_cast<unsigned char>(c)]);
    while (word.size() > 1) {
        const Merge* best = nullptr;
        uint64_t bestKey = 0;
        for (size_t i = 0; i + 1 < word.size(); ++i) {
            const uint64_t key = pairKey(word[i], word[i + 1]);
            const auto it = merges_.find(key);
            if (it != merges_.end() && (!best || it->second.rank < best->rank)) best = &it->second, bestKey = key;
        }
        if (!best) break;
        std::vector<int32_t> merged;
        merged.reserve(word.size());
        for (size_t i = 0; i < word.size(); ++i) {
            if (i + 1 < word.size() && pairKey(word[i], word[i + 1]) == bestKey) {
                merged.push_back(best->result);
                ++i;
            } else {
                merged.push_back(word[i]);
            }
        }
        word.swap(merged);
    }
    return std::vector<int64_t>(word.begin(), word.end());
}

bool ByteLevelBpe::contains(int64_t id) const {
    return id >= 0 && id < endId() && !tokens_[static_cast<size_t>(id)].empty();
}

int64_t ByteLevelBpe::idOf(std::string_view token) const {
    const auto it = ids_.find(std::string(token));
    return it == ids_.end() ? -1 : it->second;
}

const std::string& ByteLevelBpe::token(int64_t id) const { return tokens_[static_cast<size_t>(id)]; }
const std::string& ByteLevelBpe::bytesOf(int64_t id) const { return bytes_[static_cast<size_t>(id)]; }

} // namespace kvsteer::detail
