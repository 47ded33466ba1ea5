#pragma once
// ByteLevelBpe: the GPT-2 style byte-level BPE model — every byte is a symbol of a printable
// 256-character alphabet (GPT-2's bytes_to_unicode), the vocabulary maps strings of those
// symbols to ids, and merges.txt ranks the pairs that may be joined. It knows nothing of
// added tokens, normalisation or the pre-tokenizer: ByteLevelBpeTokenizer puts those around it.
#include "text/ByteLevelBpeFiles.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvsteer::detail {

// GPT-2's bytes_to_unicode: the printable Latin-1 bytes ("!".."~", "¡".."¬", "®".."ÿ") stand
// for themselves, the other 68 bytes, in ascending order, for U+0100, U+0101, ... (byte 0x20,
// the space, is "Ġ" U+0120; 0x0A is "Ċ" U+010A). Returns the symbol's code point.
uint32_t byteLevelSymbol(unsigned char byte);

class ByteLevelBpe {
public:
    // Validates and indexes the files: every one of the 256 byte symbols must be in the
    // vocabulary, each id used once, every merge's two symbols and their concatenation must be
    // tokens of the vocabulary. Throws kvsteer::Error naming the file (and line) otherwise.
    explicit ByteLevelBpe(const BpeFiles& files);
    ByteLevelBpe() = default;

    // One pre-tokenized piece (its UTF-8 bytes) to ids: start from one symbol per byte, then
    // repeatedly join the adjacent pair with the lowest merge rank, every occurrence of it from
    // left to right, until no adjacent pair has a rank (GPT2Tokenizer.bpe).
    std::vector<int64_t> encodeBytes(std::string_view bytes) const;

    bool contains(int64_t id) const;
    int64_t idOf(std::string_view token) const;               // -1 if not a token
    int64_t idOfBytes(std::string_view bytes) const;          // the token that stands for exactly these bytes, or -1
    const std::string& token(int64_t id) const;               // in the byte alphabet, e.g. "Ġcolor"
    const std::string& bytesOf(int64_t id) const;             // the bytes it stands for, e.g. " color"
    int64_t endId() const { return static_cast<int64_t>(tokens_.size()); }  // highest id + 1
    size_t mergeCount() const { return merges_.size(); }

private:
    void addVocabulary(const BpeFiles& files);
    void addMerges(const BpeFiles& files);
    int32_t symbolId(const std::string& symbol, const BpeMerge& m, const BpeFiles& files) const;

    struct Merge {
        int32_t rank;
        int32_t result;
    };
    static uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

    std::vector<std::string> tokens_;   // by id; "" where no token has that id
    std::vector<std::string> bytes_;    // by id: the token's bytes
    std::unordered_map<std::string, int32_t> ids_;
    std::array<int32_t, 256> byteIds_{};
    std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, joined id
};

} // namespace kvsteer::detail
