// SentencePieceBpe — see SentencePieceBpe.h.
//
// Transcribed from sentencepiece 0.1.97: model_interface.cc (InitializePieces, PieceToId,
// PieceToByte), normalizer.cc, bpe_model.cc and sentencepiece_processor.cc (Encode, Decode),
// checked against spm_encode/spm_decode.
#include "text/SentencePieceBpe.h"

#include "Error.h"
#include "text/Utf8.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace kvsteer::detail {
namespace {

// sentencepiece's PieceToByte: exactly "<0x%02X>" (upper-case hex), else -1.
int byteOfPiece(const std::string& text) {
    static const std::string kHex = "0123456789ABCDEF";
    if (text.size() != 6 || !startsWith(text, "<0x") || text[5] != '>') return -1;
    const size_t hi = kHex.find(text[3]), lo = kHex.find(text[4]);
    if (hi == std::string::npos || lo == std::string::npos) return -1;
    return static_cast<int>(hi * 16 + lo);
}

// sentencepiece's ModelInterface::InitializePieces checks, reported with the file path.
void validatePieces(const ParsedModel& m, const std::string& where) {
    if (m.pieces.empty()) throw Error(where + ": not a SentencePiece model (no pieces, protobuf field 1)");
    if (m.pieces.size() > static_cast<size_t>(INT32_MAX)) throw Error(where + ": too many pieces");
    for (size_t i = 0; i < m.pieces.size(); ++i) {
        const SpPiece& p = m.pieces[i];
        if (p.text.empty()) throw Error(where + ": piece " + std::to_string(i) + " is empty");
        if (p.text.find('\0') != std::string::npos) throw Error(where + ": piece " + std::to_string(i) + " contains a NUL byte");
    }
}

void validateSpecs(const ParsedModel& m, const std::string& where) {
    if (!m.hasTrainerSpec)
        throw Error(where + ": not a SentencePiece model or truncated (no trainer_spec, protobuf field 2, after " +
                    std::to_string(m.pieces.size()) + " pieces)");
    if (m.modelType != 2) {
        const char* names[] = {"?", "UNIGRAM", "BPE", "WORD", "CHAR"};
        const std::string name = m.modelType >= 1 && m.modelType <= 4 ? names[m.modelType] : std::to_string(m.modelType);
        throw Error(where + ": model_type is " + name + " (TrainerSpec field 3); only BPE SentencePiece models are supported");
    }
    if (m.treatWhitespaceAsSuffix)
        throw Error(where + ": treat_whitespace_as_suffix (TrainerSpec field 24) is not supported");
    if (!m.precompiledCharsmap.empty())
        throw Error(where + ": normalizer '" + m.normalizerName +
                    "' uses a precompiled_charsmap (NormalizerSpec field 2); only identity normalization is supported "
                    "(train with --normalization_rule_name=identity)");
    if (!m.denormalizerCharsmap.empty())
        throw Error(where + ": a denormalizer_spec with a precompiled_charsmap (ModelProto field 5) is not supported");
}

} // namespace

void SentencePieceBpe::buildSentencePiece(ParsedModel&& m) {
    const std::string where = "tokenizer.model at " + modelPath;
    validatePieces(m, where);
    validateSpecs(m, where);
    pieces = std::move(m.pieces);
    byteFallback = m.byteFallback;
    addDummyPrefix = m.addDummyPrefix;
    removeExtraWhitespaces = m.removeExtraWhitespaces;
    escapeWhitespaces = m.escapeWhitespaces;
    if (m.unkSurface) unkSurface = *m.unkSurface;

    byteIds.fill(-1);
    for (size_t i = 0; i < pieces.size(); ++i) {
        const SpPiece& p = pieces[i];
        const int id = static_cast<int>(i);
        const bool isMergeable = p.type == PieceType::Normal || p.type == PieceType::UserDefined || p.type == PieceType::Unused;
        auto& table = isMergeable ? mergeable : reserved;
        if (!table.emplace(p.text, id).second)
            throw Error(where + ": piece \"" + p.text + "\" (id " + std::to_string(i) + ") is defined twice");
        if (p.type == PieceType::UserDefined) userDefinedByFirstByte[static_cast<unsigned char>(p.text[0])].push_back(id);
        if (p.type == PieceType::Unknown) {
            if (spUnkId >= 0) throw Error(where + ": more than one UNKNOWN piece (ids " + std::to_string(spUnkId) + " and " + std::to_string(i) + ")");
            spUnkId = id;
        }
        if (p.type == PieceType::Byte) {
            if (!byteFallback)
                throw Error(where + ": byte piece \"" + p.text + "\" found although byte_fallback (TrainerSpec field 35) is false");
            const int value = byteOfPiece(p.text);
            if (value < 0) throw Error(where + ": byte piece \"" + p.text + "\" is not of the form <0xXX> (upper-case hex)");
            byteIds[static_cast<size_t>(value)] = id;
        }
    }
    if (spUnkId < 0) throw Error(where + ": no UNKNOWN piece (type 2) is defined");
    if (byteFallback && std::find(byteIds.begin(), byteIds.end(), -1) != byteIds.end())
        throw Error(where + ": byte_fallback is true but the 256 byte pieces <0x00>..<0xFF> are not all present");
    for (auto& bucket : userDefinedByFirstByte)
        std::stable_sort(bucket.begin(), bucket.end(), [&](int a, int b) { return pieces[a].text.size() > pieces[b].text.size(); });
}

// ---------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------

// sentencepiece's PieceToId: reserved pieces first, then mergeable ones, else <unk>.
int SentencePieceBpe::spPieceToId(std::string_view piece) const {
    if (auto it = reserved.find(piece); it != reserved.end()) return it->second;
    if (auto it = mergeable.find(piece); it != mergeable.end()) return it->second;
    return spUnkId;
}

unsigned char SentencePieceBpe::byteValue(int id) const {
    return static_cast<unsigned char>(byteOfPiece(pieces[static_cast<size_t>(id)].text));  // validated at load
}

// ---------------------------------------------------------------------------------------
// Normalizer
// ---------------------------------------------------------------------------------------

// Length of the longest user-defined piece at the start of `input`, or 0.
size_t SentencePieceBpe::userDefinedPrefix(std::string_view input) const {
    if (input.empty()) return 0;
    for (int id : userDefinedByFirstByte[static_cast<unsigned char>(input[0])])
        if (startsWith(input, pieces[static_cast<size_t>(id)].text)) return pieces[static_cast<size_t>(id)].text.size();
    return 0;
}

// Normalizer::NormalizePrefix without a charsmap: user-defined pieces pass as one unit,
// other valid characters as themselves, and each invalid byte becomes U+FFFD.
std::pair<std::string_view, size_t> SentencePieceBpe::normalizePrefix(std::string_view input) const {
    if (const size_t n = userDefinedPrefix(input)) return {input.substr(0, n), n};
    size_t n = 1;
    if (!decodeUtf8Char(input, &n)) return {kReplacementChar, 1};
    return {input.substr(0, n), n};
}

// Normalizer::Normalize (identity rules): optional removal of leading/trailing/repeated
// spaces, the dummy "▁" prefix, and ' ' -> "▁".
std::string SentencePieceBpe::normalize(std::string_view input, bool dummyPrefix) const {
    if (removeExtraWhitespaces) {
        while (!input.empty()) {
            const auto p = normalizePrefix(input);
            if (p.first != " ") break;
            input.remove_prefix(p.second);
        }
    }
    if (input.empty()) return {};

    std::string out;
    out.reserve(input.size() * 3 + 3);
    const std::string_view space = escapeWhitespaces ? kSpaceSymbol : std::string_view(" ");
    if (dummyPrefix) out.append(space);

    bool isPrevSpace = removeExtraWhitespaces;
    while (!input.empty()) {
        const auto p = normalizePrefix(input);
        std::string_view sp = p.first;
        while (isPrevSpace && startsWith(sp, " ")) sp.remove_prefix(1);  // collapse runs of spaces
        if (!sp.empty()) {
            for (char c : sp) {
                if (c == ' ') out.append(space);
                else out.push_back(c);
            }
            isPrevSpace = endsWith(sp, " ");
        }
        input.remove_prefix(p.second);
        if (!removeExtraWhitespaces) isPrevSpace = false;
    }
    if (removeExtraWhitespaces)
        while (endsWith(out, space)) out.resize(out.size() - space.size());
    return out;
}

// ---------------------------------------------------------------------------------------
// BPE (bpe::Model::SampleEncode with alpha = 0)
// ---------------------------------------------------------------------------------------

namespace {

struct BpeSymbol {
    int prev;      // -1 at the start
    int next;      // -1 at the end
    bool freeze;   // user-defined pieces are never merged
    size_t begin;  // into the normalized text
    size_t size;   // 0 once merged into its left neighbour
};

struct BpePair {
    int left;
    int right;
    float score;
    size_t size;  // bytes of the merged piece, to detect stale queue entries
};

// Highest score first; on ties the leftmost pair (sentencepiece's SymbolPairComparator).
struct BpePairOrder {
    bool operator()(const BpePair& a, const BpePair& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

} // namespace

std::vector<std::pair<std::string_view, int>> SentencePieceBpe::bpe(std::string_view text) const {
    std::vector<BpeSymbol> sym;
    sym.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t n = userDefinedPrefix(text.substr(pos));
        const bool freeze = n > 0;
        if (!freeze) n = std::min(text.size() - pos, oneCharLen(static_cast<unsigned char>(text[pos])));
        const int index = static_cast<int>(sym.size());
        sym.push_back({index - 1, pos + n < text.size() ? index + 1 : -1, freeze, pos, n});
        pos += n;
    }
    if (sym.empty()) return {};

    std::priority_queue<BpePair, std::vector<BpePair>, BpePairOrder> agenda;
    // Merges that produced UNUSED pieces, to split them back at the end (resegmentation).
    std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> revMerge;
    const auto view = [&](int i) { return text.substr(sym[i].begin, sym[i].size); };

    const auto maybeAddPair = [&](int left, int right) {
        if (left < 0 || right < 0 || sym[left].freeze || sym[right].freeze) return;
        const std::string_view merged = text.substr(sym[left].begin, sym[left].size + sym[right].size);
        const auto it = mergeable.find(merged);
        if (it == mergeable.end()) return;
        agenda.push({left, right, pieces[static_cast<size_t>(it->second)].score, merged.size()});
        if (spType(it->second) == PieceType::Unused) revMerge[merged] = {view(left), view(right)};
    };

    for (size_t i = 1; i < sym.size(); ++i) maybeAddPair(static_cast<int>(i) - 1, static_cast<int>(i));

    while (!agenda.empty()) {
        const BpePair top = agenda.top();
        agenda.pop();
        BpeSymbol& l = sym[top.left];
        BpeSymbol& r = sym[top.right];
        if (l.size == 0 || r.size == 0 || l.size + r.size != top.size) continue;  // stale
        l.size += r.size;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = top.left;
        r.size = 0;
        maybeAddPair(l.prev, top.left);
        maybeAddPair(top.left, l.next);
    }

    std::vector<std::pair<std::string_view, int>> out;
    std::function<void(std::string_view)> resegment = [&](std::string_view w) {
        const int id = spPieceToId(w);
        const auto it = spType(id) == PieceType::Unused ? revMerge.find(w) : revMerge.end();
        if (it == revMerge.end()) {
            out.emplace_back(w, id);
            return;
        }
        resegment(it->second.first);
        resegment(it->second.second);
    };
    for (int i = 0; i != -1; i = sym[i].next) resegment(view(i));
    return out;
}

// SentencePieceProcessor::Encode: normalize, BPE, then unknown pieces become their UTF-8
// bytes (byte fallback) or, without it, a run of unknown pieces collapses into one <unk>.
std::vector<int64_t> SentencePieceBpe::spEncode(std::string_view text, bool dummyPrefix) const {
    const std::string normalized = normalize(text, dummyPrefix);
    std::vector<int64_t> ids;
    bool prevUnk = false;
    for (const auto& [piece, id] : bpe(normalized)) {
        const bool isUnk = id == spUnkId;
        if (isUnk && byteFallback) {
            for (char c : piece) ids.push_back(byteIds[static_cast<unsigned char>(c)]);
        } else if (!(isUnk && prevUnk)) {
            ids.push_back(id);
        }
        prevUnk = isUnk;
    }
    return ids;
}

// ---------------------------------------------------------------------------------------
// Decoder (SentencePieceProcessor::Decode on piece strings)
// ---------------------------------------------------------------------------------------

// One non-byte piece. Returns its text and whether it consumed the leading "▁". The first
// "▁" is stripped only for models that add a dummy prefix or remove extra whitespace; the
// non-legacy HF tokenizer loads the model with add_dummy_prefix forced off
// (HfSentencePiece::hfDummyPrefix).
std::pair<std::string, bool> SentencePieceBpe::decodePiece(std::string_view piece, int id, bool isBosWs,
                                                           bool dummyPrefix) const {
    if (spType(id) == PieceType::Control) return {"", false};
    if (spType(id) == PieceType::Unknown)
        return {piece == pieces[static_cast<size_t>(id)].text ? unkSurface : std::string(piece), false};
    bool hasBosWs = false;
    if (isBosWs && (dummyPrefix || removeExtraWhitespaces)) {
        if (startsWith(piece, kSpaceSymbol)) {
            piece.remove_prefix(kSpaceSymbol.size());
            hasBosWs = true;
        }
        // With remove_extra_whitespaces every leading whitespace piece is stripped.
        if (removeExtraWhitespaces) hasBosWs = false;
    }
    return {replaceAll(piece, kSpaceSymbol, " "), hasBosWs};
}

// Pieces are strings, as in the slow tokenizer (its first token may have lost its "▁" and
// no longer be a piece: it then decodes as the literal text of an unknown piece).
std::string SentencePieceBpe::spDecode(const std::vector<std::string>& pieceTexts, bool dummyPrefix) const {
    std::string text, bytes;
    bool isBosWs = true, bosWsSeen = false;
    for (const std::string& p : pieceTexts) {
        const int id = spPieceToId(p);
        if (spType(id) == PieceType::Byte) {
            bytes.push_back(static_cast<char>(byteValue(id)));
            continue;
        }
        text += bytesToText(bytes);
        bytes.clear();
        if (bosWsSeen || !text.empty()) isBosWs = false;
        auto [decoded, seen] = decodePiece(p, id, isBosWs, dummyPrefix);
        bosWsSeen = seen;
        text += decoded;
    }
    return text + bytesToText(bytes);
}

} // namespace kvsteer::detail
