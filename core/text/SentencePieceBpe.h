#pragma once
// SentencePieceBpe: the BPE model of tokenizer.model — its lookup tables, the normalizer
// (identity rules only), the merge loop with byte fallback, and the decoder. It is
// re-implemented rather than linked (libsentencepiece crashes inside our libtorch process)
// and must stay bit-exact with sentencepiece 0.1.97, i.e. with `spm_encode`/`spm_decode`,
// which the reference uses. It knows nothing of Hugging Face: HfSentencePiece derives from
// it and adds that layer on top.
#include "text/ProtoReader.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvsteer::detail {

inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";     // U+2581 "▁"
inline constexpr const char* kDefaultUnkSurface = " \xE2\x81\x87 ";  // " ⁇ ", TrainerSpec default

struct SentencePieceBpe {
    std::string modelPath;  // named in every error

    std::vector<SpPiece> pieces;
    // sentencepiece's pieces_: NORMAL, USER_DEFINED and UNUSED pieces — the only pieces BPE
    // may produce by merging. Keys view into `pieces` (never resized after indexing).
    std::unordered_map<std::string_view, int> mergeable;
    // sentencepiece's reserved_id_map_: CONTROL, UNKNOWN and BYTE pieces.
    std::unordered_map<std::string_view, int> reserved;
    std::array<std::vector<int>, 256> userDefinedByFirstByte;  // longest first
    std::array<int, 256> byteIds{};
    int spUnkId = -1;
    bool byteFallback = false;
    bool addDummyPrefix = true, removeExtraWhitespaces = true, escapeWhitespaces = true;
    std::string unkSurface = kDefaultUnkSurface;

    // --- construction: validates the model (throws kvsteer::Error naming modelPath) and
    // builds the tables. Set modelPath first.
    void buildSentencePiece(ParsedModel&& m);

    // --- lookups
    int spPieceToId(std::string_view piece) const;
    PieceType spType(int id) const { return pieces[static_cast<size_t>(id)].type; }
    unsigned char byteValue(int id) const;

    // --- encode
    std::pair<std::string_view, size_t> normalizePrefix(std::string_view input) const;
    size_t userDefinedPrefix(std::string_view input) const;
    std::string normalize(std::string_view input, bool dummyPrefix) const;
    std::vector<std::pair<std::string_view, int>> bpe(std::string_view normalized) const;
    std::vector<int64_t> spEncode(std::string_view text, bool dummyPrefix) const;

    // --- decode
    std::pair<std::string, bool> decodePiece(std::string_view piece, int id, bool isBosWs, bool dummyPrefix) const;
    std::string spDecode(const std::vector<std::string>& pieces, bool dummyPrefix) const;
};

} // namespace kvsteer::detail
