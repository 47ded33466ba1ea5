// kvsteer::Tokenizer — see Tokenizer.h.
//
// Layout of this file, bottom-up:
//   1. UTF-8 helpers with SentencePiece's exact validity rules
//   2. a bounds-checked protobuf wire-format reader and the ModelProto parser
//   3. the HF JSON files (tokenizer_config.json, added_tokens.json)
//   4. Impl: vocabulary tables built from both
//   5. SentencePiece: normalizer, BPE merge loop, byte fallback, decoder
//   6. the HF slow LlamaTokenizer layer: added-token splitting, encode, decode
//   7. the public Tokenizer / StreamingDetokenizer methods
//
// References transcribed: sentencepiece normalizer.cc, bpe_model.cc, model_interface.cc,
// sentencepiece_processor.cc (0.1.97 behaviour, checked against spm_encode/spm_decode);
// transformers 4.45 tokenization_utils.py (tokenize, _decode) and tokenization_llama.py.
#include "text/Tokenizer.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace kvsteer {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";        // U+2581 "▁"
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";    // U+FFFD
constexpr const char* kDefaultUnkSurface = " \xE2\x81\x87 ";     // " ⁇ ", TrainerSpec default

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

// ---------------------------------------------------------------------------------------
// 1. UTF-8 with SentencePiece's rules
// ---------------------------------------------------------------------------------------

// SentencePiece's string_util::OneCharLen: the length a lead byte announces (1 for
// continuation bytes), used to step through text that is already known to be valid.
size_t oneCharLen(unsigned char lead) {
    static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

// SentencePiece's DecodeUTF8 + IsValidDecodeUTF8: is the character at the start of `s`
// valid? `length` receives its size, or 1 for an invalid byte. Invalid means: bad lead
// byte, missing/bad continuation bytes, overlong, surrogate or above U+10FFFF. Note that a
// truncated sequence (E2 82 then end) is invalid byte by byte — SentencePiece emits one
// U+FFFD per byte there, unlike Python's errors='replace' which emits one for the whole
// maximal prefix. The slow HF tokenizer returns SentencePiece's string, so we follow it.
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

// Bytes -> text the way SentencePiece's decoder treats a run of byte pieces.
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

// True when `b` is a proper prefix of some well-formed UTF-8 character, i.e. more bytes
// could still make it valid. (Well-formedness per Unicode Table 3-7, which is exactly what
// decodeUtf8Char accepts.) Used by the streaming detokenizer to hold bytes back.
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

// ---------------------------------------------------------------------------------------
// 2. Protobuf wire format (proto2), bounds-checked
// ---------------------------------------------------------------------------------------

// Internal parse failure; loadFromDirectory turns it into a kvsteer::Error naming the file.
struct ProtoError {
    std::string detail;
};

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct WireField {
    uint32_t number = 0;
    int wireType = 0;
    uint64_t varint = 0;
    uint32_t fixed32 = 0;
    std::string_view bytes;
    size_t offset = 0;  // absolute file offset of the tag, for error messages
};

class WireReader {
public:
    WireReader(std::string_view data, size_t baseOffset, std::string what)
        : data_(data), base_(baseOffset), what_(std::move(what)) {}

    bool atEnd() const { return pos_ >= data_.size(); }

    WireField next() {
        WireField f;
        f.offset = base_ + pos_;
        const uint64_t tag = readVarint("field tag");
        f.number = static_cast<uint32_t>(tag >> 3);
        f.wireType = static_cast<int>(tag & 7);
        if (f.number == 0 || (tag >> 3) > 0x1FFFFFFFu) fail(f.offset, "invalid field number " + std::to_string(tag >> 3));
        switch (f.wireType) {
        case kVarint: f.varint = readVarint("varint field " + std::to_string(f.number)); break;
        case kFixed64: f.bytes = take(8, f.number); break;
        case kFixed32: {
            const std::string_view raw = take(4, f.number);
            f.fixed32 = static_cast<uint32_t>(static_cast<unsigned char>(raw[0])) |
                        static_cast<uint32_t>(static_cast<unsigned char>(raw[1])) << 8 |
                        static_cast<uint32_t>(static_cast<unsigned char>(raw[2])) << 16 |
                        static_cast<uint32_t>(static_cast<unsigned char>(raw[3])) << 24;
            break;
        }
        case kLengthDelimited: {
            const uint64_t len = readVarint("length of field " + std::to_string(f.number));
            if (len > data_.size() - pos_)
                fail(f.offset, "field " + std::to_string(f.number) + " declares " + std::to_string(len) +
                                   " bytes but only " + std::to_string(data_.size() - pos_) + " remain");
            f.bytes = take(static_cast<size_t>(len), f.number);
            break;
        }
        default:
            fail(f.offset, "field " + std::to_string(f.number) + " has unsupported wire type " +
                               std::to_string(f.wireType));
        }
        return f;
    }

    [[noreturn]] void fail(size_t offset, const std::string& msg) const {
        throw ProtoError{what_ + ": " + msg + " (at byte " + std::to_string(offset) + ")"};
    }

    void expectWireType(const WireField& f, int wireType, const char* fieldName) const {
        if (f.wireType != wireType)
            fail(f.offset, std::string("field ") + std::to_string(f.number) + " (" + fieldName + ") has wire type " +
                               std::to_string(f.wireType) + ", expected " + std::to_string(wireType));
    }

    size_t absoluteOffsetOf(std::string_view inner) const { return base_ + static_cast<size_t>(inner.data() - data_.data()); }

private:
    uint64_t readVarint(const std::string& what) {
        uint64_t value = 0;
        const size_t start = base_ + pos_;
        for (int shift = 0; shift < 70; shift += 7) {
            if (pos_ >= data_.size()) fail(start, "truncated " + what);
            const auto byte = static_cast<unsigned char>(data_[pos_++]);
            if (shift == 63 && byte > 1) fail(start, what + " overflows 64 bits");
            value |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) return value;
        }
        fail(start, what + " is longer than 10 bytes");
    }

    std::string_view take(size_t n, uint32_t number) {
        if (n > data_.size() - pos_) fail(base_ + pos_, "truncated field " + std::to_string(number));
        const std::string_view out = data_.substr(pos_, n);
        pos_ += n;
        return out;
    }

    std::string_view data_;
    size_t base_;
    std::string what_;
    size_t pos_ = 0;
};

enum class PieceType : uint8_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct SpPiece {
    std::string text;
    float score = 0.0f;
    PieceType type = PieceType::Normal;
};

// The subset of ModelProto that encoding/decoding depends on. Defaults are proto2's.
struct ParsedModel {
    std::vector<SpPiece> pieces;
    bool hasTrainerSpec = false;
    int modelType = 1;  // TrainerSpec.model_type: UNIGRAM=1 BPE=2 WORD=3 CHAR=4
    bool treatWhitespaceAsSuffix = false;
    bool byteFallback = false;
    int32_t unkId = 0, bosId = 1, eosId = 2, padId = -1;
    std::optional<std::string> unkSurface;
    std::string normalizerName;
    std::string precompiledCharsmap;
    bool addDummyPrefix = true, removeExtraWhitespaces = true, escapeWhitespaces = true;
    std::string denormalizerCharsmap;
};

float floatFromBits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

SpPiece parsePiece(std::string_view bytes, const WireReader& outer, size_t index) {
    WireReader r(bytes, outer.absoluteOffsetOf(bytes), "ModelProto.pieces[" + std::to_string(index) + "]");
    SpPiece p;
    while (!r.atEnd()) {
        const WireField f = r.next();
        if (f.number == 1) {
            r.expectWireType(f, kLengthDelimited, "piece");
            p.text.assign(f.bytes);
        } else if (f.number == 2) {
            r.expectWireType(f, kFixed32, "score");
            p.score = floatFromBits(f.fixed32);
        } else if (f.number == 3) {
            r.expectWireType(f, kVarint, "type");
            if (f.varint < 1 || f.varint > 6) r.fail(f.offset, "unknown piece type " + std::to_string(f.varint));
            p.type = static_cast<PieceType>(f.varint);
        }
    }
    return p;
}

void parseTrainerSpec(std::string_view bytes, const WireReader& outer, ParsedModel& m) {
    WireReader r(bytes, outer.absoluteOffsetOf(bytes), "ModelProto.trainer_spec");
    const auto asInt32 = [](uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); };
    while (!r.atEnd()) {
        const WireField f = r.next();
        switch (f.number) {
        case 3: r.expectWireType(f, kVarint, "model_type"); m.modelType = asInt32(f.varint); break;
        case 24: r.expectWireType(f, kVarint, "treat_whitespace_as_suffix"); m.treatWhitespaceAsSuffix = f.varint != 0; break;
        case 35: r.expectWireType(f, kVarint, "byte_fallback"); m.byteFallback = f.varint != 0; break;
        case 40: r.expectWireType(f, kVarint, "unk_id"); m.unkId = asInt32(f.varint); break;
        case 41: r.expectWireType(f, kVarint, "bos_id"); m.bosId = asInt32(f.varint); break;
        case 42: r.expectWireType(f, kVarint, "eos_id"); m.eosId = asInt32(f.varint); break;
        case 43: r.expectWireType(f, kVarint, "pad_id"); m.padId = asInt32(f.varint); break;
        case 44: r.expectWireType(f, kLengthDelimited, "unk_surface"); m.unkSurface = std::string(f.bytes); break;
        default: break;  // training-only options
        }
    }
}

void parseNormalizerSpec(std::string_view bytes, const WireReader& outer, ParsedModel& m, bool denormalizer) {
    WireReader r(bytes, outer.absoluteOffsetOf(bytes),
                 denormalizer ? "ModelProto.denormalizer_spec" : "ModelProto.normalizer_spec");
    while (!r.atEnd()) {
        const WireField f = r.next();
        if (denormalizer) {
            if (f.number == 2) {
                r.expectWireType(f, kLengthDelimited, "precompiled_charsmap");
                m.denormalizerCharsmap.assign(f.bytes);
            }
            continue;
        }
        switch (f.number) {
        case 1: r.expectWireType(f, kLengthDelimited, "name"); m.normalizerName.assign(f.bytes); break;
        case 2: r.expectWireType(f, kLengthDelimited, "precompiled_charsmap"); m.precompiledCharsmap.assign(f.bytes); break;
        case 3: r.expectWireType(f, kVarint, "add_dummy_prefix"); m.addDummyPrefix = f.varint != 0; break;
        case 4: r.expectWireType(f, kVarint, "remove_extra_whitespaces"); m.removeExtraWhitespaces = f.varint != 0; break;
        case 5: r.expectWireType(f, kVarint, "escape_whitespaces"); m.escapeWhitespaces = f.varint != 0; break;
        default: break;
        }
    }
}

// ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//              NormalizerSpec normalizer_spec = 3; SelfTestData self_test_data = 4;
//              NormalizerSpec denormalizer_spec = 5; }
ParsedModel parseModelProto(std::string_view data) {
    ParsedModel m;
    WireReader r(data, 0, "ModelProto");
    while (!r.atEnd()) {
        const WireField f = r.next();
        switch (f.number) {
        case 1:
            r.expectWireType(f, kLengthDelimited, "pieces");
            m.pieces.push_back(parsePiece(f.bytes, r, m.pieces.size()));
            break;
        case 2:
            r.expectWireType(f, kLengthDelimited, "trainer_spec");
            m.hasTrainerSpec = true;
            parseTrainerSpec(f.bytes, r, m);
            break;
        case 3: r.expectWireType(f, kLengthDelimited, "normalizer_spec"); parseNormalizerSpec(f.bytes, r, m, false); break;
        case 5: r.expectWireType(f, kLengthDelimited, "denormalizer_spec"); parseNormalizerSpec(f.bytes, r, m, true); break;
        default: break;  // self_test_data and extensions
        }
    }
    return m;
}

std::string readWholeFile(const fs::path& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(what + " at " + path.string() + ": cannot be opened for reading");
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw Error(what + " at " + path.string() + ": read error");
    return buf.str();
}

// ---------------------------------------------------------------------------------------
// 3. Hugging Face JSON files
// ---------------------------------------------------------------------------------------

struct AddedToken {
    std::string content;
    int64_t id = -1;
    bool lstrip = false, rstrip = false, singleWord = false, special = false;
};

// A special-token slot of tokenizer_config.json: absent (use the LlamaTokenizer default),
// null (no such token) or a string/AddedToken dict.
struct TokenSlot {
    bool present = false;
    std::optional<std::string> content;
};

struct HfConfig {
    std::vector<AddedToken> decoderTokens;   // tokenizer_config.json added_tokens_decoder
    bool hasDecoder = false;
    std::vector<AddedToken> jsonTokens;      // added_tokens.json
    std::map<std::string, TokenSlot> slots;  // bos_token, eos_token, ...
    std::vector<std::string> additionalSpecial;
    bool addBos = true, addEos = false, legacy = true, addPrefixSpace = true;
};

nlohmann::json readJson(const fs::path& path, const std::string& name) {
    const std::string text = readWholeFile(path, name);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(name + " at " + path.string() + ": invalid JSON (" + e.what() + ")");
    }
}

bool optionalBool(const nlohmann::json& obj, const char* key, bool fallback, const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false, got " + it->dump());
    return it->get<bool>();
}

// "<s>" or {"content": "<s>", ...} -> "<s>"; null -> nullopt. Empty texts are rejected: an
// empty added token would match everywhere when splitting.
std::optional<std::string> tokenContent(const nlohmann::json& v, const std::string& where) {
    if (v.is_null()) return std::nullopt;
    const nlohmann::json* text = &v;
    if (v.is_object()) {
        const auto it = v.find("content");
        if (it != v.end()) text = &*it;
    }
    if (text->is_string() && !text->get<std::string>().empty()) return text->get<std::string>();
    throw Error(where + ": expected a non-empty token string or an object with a non-empty \"content\" string, got " + v.dump());
}

int64_t parseTokenId(const std::string& text, const std::string& where) {
    if (text.empty() || text.size() > 10 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw Error(where + ": token id \"" + text + "\" is not a non-negative integer");
    const int64_t id = std::stoll(text);
    if (id > INT32_MAX) throw Error(where + ": token id " + text + " is too large");
    return id;
}

void parseAddedTokensDecoder(const nlohmann::json& decoder, const std::string& where, HfConfig& cfg) {
    if (!decoder.is_object()) throw Error(where + ": \"added_tokens_decoder\" must be an object of id -> token");
    cfg.hasDecoder = true;
    for (const auto& [key, value] : decoder.items()) {
        const std::string entryWhere = where + ": added_tokens_decoder[\"" + key + "\"]";
        AddedToken t;
        t.id = parseTokenId(key, entryWhere);
        if (!value.is_object()) throw Error(entryWhere + " must be an object with \"content\"");
        const auto content = tokenContent(value, entryWhere);
        if (!content) throw Error(entryWhere + " has no content");
        t.content = *content;
        t.lstrip = optionalBool(value, "lstrip", false, entryWhere);
        t.rstrip = optionalBool(value, "rstrip", false, entryWhere);
        t.singleWord = optionalBool(value, "single_word", false, entryWhere);
        t.special = optionalBool(value, "special", false, entryWhere);
        cfg.decoderTokens.push_back(std::move(t));
    }
}

void readTokenizerConfig(const fs::path& path, HfConfig& cfg) {
    const std::string where = "tokenizer_config.json at " + path.string();
    const nlohmann::json j = readJson(path, "tokenizer_config.json");
    if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
    cfg.addBos = optionalBool(j, "add_bos_token", true, where);
    cfg.addEos = optionalBool(j, "add_eos_token", false, where);
    cfg.legacy = optionalBool(j, "legacy", true, where);  // HF: None means legacy
    cfg.addPrefixSpace = optionalBool(j, "add_prefix_space", true, where);
    for (const char* slot : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        const auto it = j.find(slot);
        if (it == j.end()) continue;
        cfg.slots[slot] = TokenSlot{true, tokenContent(*it, where + ": \"" + slot + "\"")};
    }
    if (const auto it = j.find("additional_special_tokens"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) throw Error(where + ": \"additional_special_tokens\" must be a list");
        for (const auto& v : *it)
            if (auto c = tokenContent(v, where + ": \"additional_special_tokens\"")) cfg.additionalSpecial.push_back(*c);
    }
    if (const auto it = j.find("added_tokens_decoder"); it != j.end() && !it->is_null())
        parseAddedTokensDecoder(*it, where, cfg);
}

void readAddedTokensJson(const fs::path& path, HfConfig& cfg) {
    const std::string where = "added_tokens.json at " + path.string();
    const nlohmann::json j = readJson(path, "added_tokens.json");
    if (!j.is_object()) throw Error(where + ": expected an object mapping token text to integer id, got " + j.type_name());
    for (const auto& [content, value] : j.items()) {
        if (content.empty()) throw Error(where + ": empty token text");
        if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
            throw Error(where + ": id of \"" + content + "\" must be a non-negative integer, got " + value.dump());
        AddedToken t;
        t.content = content;
        t.id = value.get<int64_t>();
        cfg.jsonTokens.push_back(std::move(t));
    }
}

} // namespace

// ---------------------------------------------------------------------------------------
// 4. Impl: the immutable tables
// ---------------------------------------------------------------------------------------

struct Tokenizer::Impl {
    std::string modelPath;

    // SentencePiece model.
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

    // Hugging Face layer.
    std::map<int64_t, AddedToken> addedById;
    std::unordered_map<std::string, int64_t> addedByContent;
    std::array<std::vector<const AddedToken*>, 256> addedByFirstByte;  // longest first
    std::unordered_set<int64_t> hfSpecial;  // HF all_special_ids (skipped by skip_special_tokens)
    std::unordered_set<int64_t> splitOff;   // HF legacy_added_tokens: decoded as separate " "-joined texts
    bool addBos = true, addEos = false, legacy = true, addPrefixSpace = true;
    std::string unkTokenText = "<unk>";
    int64_t bos = -1, eos = -1, unk = -1, pad = -1, image = -1;
    int64_t vocabSize = 0;

    // --- construction
    void buildSentencePiece(ParsedModel&& m);
    void buildHuggingFace(const HfConfig& cfg);
    void addToken(const AddedToken& t);
    int64_t resolveSpecial(const std::string& content);

    // --- lookups
    int spPieceToId(std::string_view piece) const;
    PieceType spType(int id) const { return pieces[static_cast<size_t>(id)].type; }
    int64_t lookup(const std::string& piece) const;
    bool validId(int64_t id) const;
    void checkId(int64_t id) const;
    const std::string& tokenText(int64_t id) const;
    unsigned char byteValue(int id) const;

    // --- SentencePiece
    std::pair<std::string_view, size_t> normalizePrefix(std::string_view input) const;
    size_t userDefinedPrefix(std::string_view input) const;
    std::string normalize(std::string_view input, bool dummyPrefix) const;
    std::vector<std::pair<std::string_view, int>> bpe(std::string_view normalized) const;
    std::vector<int64_t> spEncode(std::string_view text, bool dummyPrefix) const;
    bool hfDummyPrefix() const { return legacy && addDummyPrefix; }
    std::pair<std::string, bool> decodePiece(std::string_view piece, int id, bool isBosWs, bool dummyPrefix) const;
    std::string spDecode(const std::vector<std::string>& pieces, bool dummyPrefix) const;

    // --- Hugging Face
    std::vector<std::string> splitOnAddedTokens(const std::string& text) const;
    void applyAddedTokenStripping(std::vector<std::string>& parts) const;
    std::vector<int64_t> tokenizeLegacy(const std::string& text) const;
    std::vector<int64_t> tokenizeNonLegacy(const std::string& text) const;
    std::string convertTokensToString(const std::vector<int64_t>& ids) const;
    std::string hfDecode(const std::vector<int64_t>& ids, bool skipSpecial) const;
};

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

void Tokenizer::Impl::buildSentencePiece(ParsedModel&& m) {
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

// Registers an added token by id (the first definition of an id wins). HF's
// added_tokens_encoder is built in ascending id order, so for a content listed twice the
// highest id is the one text maps to.
void Tokenizer::Impl::addToken(const AddedToken& t) {
    if (!addedById.emplace(t.id, t).second) return;
    const auto [it, inserted] = addedByContent.emplace(t.content, t.id);
    if (!inserted && it->second < t.id) it->second = t.id;
    vocabSize = std::max(vocabSize, t.id + 1);
}

// HF registers every configured special token as an added token: it keeps the id it
// already has (added token or piece), or is appended at the end of the vocabulary.
int64_t Tokenizer::Impl::resolveSpecial(const std::string& content) {
    int64_t id = lookup(content);
    if (id < 0) {
        AddedToken t;
        t.content = content;
        t.id = vocabSize;
        t.special = true;
        addToken(t);
        id = t.id;
    } else if (!addedByContent.count(content)) {
        AddedToken t;  // a piece of the model used as a special token: split on it too
        t.content = content;
        t.id = id;
        t.special = true;
        addedByContent.emplace(content, id);
        addedById.emplace(id, t);
    }
    hfSpecial.insert(id);
    return id;
}

void Tokenizer::Impl::buildHuggingFace(const HfConfig& cfg) {
    vocabSize = static_cast<int64_t>(pieces.size());
    addBos = cfg.addBos;
    addEos = cfg.addEos;
    legacy = cfg.legacy;
    addPrefixSpace = cfg.addPrefixSpace;

    // HF reads added_tokens.json only when tokenizer_config.json has no added_tokens_decoder.
    for (const AddedToken& t : cfg.decoderTokens) addToken(t);
    if (!cfg.hasDecoder) {
        for (AddedToken t : cfg.jsonTokens) {
            t.special = std::find(cfg.additionalSpecial.begin(), cfg.additionalSpecial.end(), t.content) != cfg.additionalSpecial.end();
            addToken(t);
        }
    }
    for (const auto& [id, t] : addedById)
        if (t.special) hfSpecial.insert(id);

    // LlamaTokenizer defaults, overridden by tokenizer_config.json (null = no such token).
    const std::map<std::string, std::optional<std::string>> defaults = {
        {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}};
    const auto slotContent = [&](const std::string& slot) -> std::optional<std::string> {
        if (auto it = cfg.slots.find(slot); it != cfg.slots.end()) return it->second.content;
        if (auto it = defaults.find(slot); it != defaults.end()) return it->second;
        return std::nullopt;
    };
    std::map<std::string, int64_t> slotIds;
    for (const char* slot : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
        if (auto c = slotContent(slot)) slotIds[slot] = resolveSpecial(*c);
    for (const std::string& c : cfg.additionalSpecial) {
        const int64_t id = resolveSpecial(c);
        if (id >= static_cast<int64_t>(pieces.size())) splitOff.insert(id);
    }
    for (const auto& [id, t] : addedById)
        if (!hfSpecial.count(id)) splitOff.insert(id);

    const auto slotId = [&](const char* slot) { auto it = slotIds.find(slot); return it == slotIds.end() ? int64_t{-1} : it->second; };
    bos = slotId("bos_token");
    eos = slotId("eos_token");
    unk = slotId("unk_token");
    if (unk < 0) unk = spUnkId;
    if (auto c = slotContent("unk_token")) unkTokenText = *c;
    pad = slotId("pad_token");
    if (pad < 0) pad = lookup("<pad>");
    image = lookup("<image>");

    for (const auto& [id, t] : addedById) addedByFirstByte[static_cast<unsigned char>(t.content[0])].push_back(&t);
    for (auto& bucket : addedByFirstByte)
        std::stable_sort(bucket.begin(), bucket.end(), [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
}

// ---------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------

// sentencepiece's PieceToId: reserved pieces first, then mergeable ones, else <unk>.
int Tokenizer::Impl::spPieceToId(std::string_view piece) const {
    if (auto it = reserved.find(piece); it != reserved.end()) return it->second;
    if (auto it = mergeable.find(piece); it != mergeable.end()) return it->second;
    return spUnkId;
}

// HF convert_tokens_to_ids without the <unk> fallback: added tokens first.
int64_t Tokenizer::Impl::lookup(const std::string& piece) const {
    if (auto it = addedByContent.find(piece); it != addedByContent.end()) return it->second;
    if (auto it = reserved.find(piece); it != reserved.end()) return it->second;
    if (auto it = mergeable.find(piece); it != mergeable.end()) return it->second;
    return -1;
}

bool Tokenizer::Impl::validId(int64_t id) const {
    return id >= 0 && (id < static_cast<int64_t>(pieces.size()) || addedById.count(id));
}

void Tokenizer::Impl::checkId(int64_t id) const {
    if (!validId(id))
        throw Error("token id " + std::to_string(id) + " is out of range for the tokenizer at " + modelPath + " (" +
                    std::to_string(pieces.size()) + " pieces, " + std::to_string(vocabSize) + " ids with added tokens)");
}

const std::string& Tokenizer::Impl::tokenText(int64_t id) const {
    if (auto it = addedById.find(id); it != addedById.end()) return it->second.content;
    return pieces[static_cast<size_t>(id)].text;
}

unsigned char Tokenizer::Impl::byteValue(int id) const {
    return static_cast<unsigned char>(byteOfPiece(pieces[static_cast<size_t>(id)].text));  // validated at load
}

// ---------------------------------------------------------------------------------------
// 5. SentencePiece: normalizer
// ---------------------------------------------------------------------------------------

// Length of the longest user-defined piece at the start of `input`, or 0.
size_t Tokenizer::Impl::userDefinedPrefix(std::string_view input) const {
    if (input.empty()) return 0;
    for (int id : userDefinedByFirstByte[static_cast<unsigned char>(input[0])])
        if (startsWith(input, pieces[static_cast<size_t>(id)].text)) return pieces[static_cast<size_t>(id)].text.size();
    return 0;
}

// Normalizer::NormalizePrefix without a charsmap: user-defined pieces pass as one unit,
// other valid characters as themselves, and each invalid byte becomes U+FFFD.
std::pair<std::string_view, size_t> Tokenizer::Impl::normalizePrefix(std::string_view input) const {
    if (const size_t n = userDefinedPrefix(input)) return {input.substr(0, n), n};
    size_t n = 1;
    if (!decodeUtf8Char(input, &n)) return {kReplacementChar, 1};
    return {input.substr(0, n), n};
}

// Normalizer::Normalize (identity rules): optional removal of leading/trailing/repeated
// spaces, the dummy "▁" prefix, and ' ' -> "▁".
std::string Tokenizer::Impl::normalize(std::string_view input, bool dummyPrefix) const {
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
// 5. SentencePiece: BPE (bpe::Model::SampleEncode with alpha = 0)
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

std::vector<std::pair<std::string_view, int>> Tokenizer::Impl::bpe(std::string_view text) const {
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
std::vector<int64_t> Tokenizer::Impl::spEncode(std::string_view text, bool dummyPrefix) const {
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
// 5. SentencePiece: decoder (SentencePieceProcessor::Decode on piece strings)
// ---------------------------------------------------------------------------------------

// One non-byte piece. Returns its text and whether it consumed the leading "▁". The first
// "▁" is stripped only for models that add a dummy prefix or remove extra whitespace; the
// non-legacy HF tokenizer loads the model with add_dummy_prefix forced off (hfDummyPrefix).
std::pair<std::string, bool> Tokenizer::Impl::decodePiece(std::string_view piece, int id, bool isBosWs,
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
std::string Tokenizer::Impl::spDecode(const std::vector<std::string>& pieceTexts, bool dummyPrefix) const {
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

// ---------------------------------------------------------------------------------------
// 6. Hugging Face slow tokenizer: encode
// ---------------------------------------------------------------------------------------

// tokens_trie.split: cut the text around added tokens, leftmost match first and the
// longest one at a position. No empty parts.
std::vector<std::string> Tokenizer::Impl::splitOnAddedTokens(const std::string& text) const {
    std::vector<std::string> parts;
    size_t plainStart = 0, pos = 0;
    while (pos < text.size()) {
        const AddedToken* match = nullptr;
        for (const AddedToken* t : addedByFirstByte[static_cast<unsigned char>(text[pos])])
            if (text.compare(pos, t->content.size(), t->content) == 0) { match = t; break; }
        if (!match) {
            pos += std::min(text.size() - pos, oneCharLen(static_cast<unsigned char>(text[pos])));
            continue;
        }
        if (pos > plainStart) parts.push_back(text.substr(plainStart, pos - plainStart));
        parts.push_back(match->content);
        pos += match->content.size();
        plainStart = pos;
    }
    if (plainStart < text.size()) parts.push_back(text.substr(plainStart));
    return parts;
}

// The lstrip/rstrip/single_word handling of PreTrainedTokenizer.tokenize, applied in place
// to neighbouring parts exactly as HF does (in order, on the already-modified list).
void Tokenizer::Impl::applyAddedTokenStripping(std::vector<std::string>& parts) const {
    for (size_t i = 0; i < parts.size(); ++i) {
        const auto it = addedByContent.find(parts[i]);
        if (it == addedByContent.end()) continue;
        const AddedToken& tok = addedById.at(it->second);
        std::string* left = i > 0 ? &parts[i - 1] : nullptr;
        std::string* right = i + 1 < parts.size() ? &parts[i + 1] : nullptr;
        if (tok.rstrip && right && !right->empty()) *right = pythonLstrip(*right);
        if (tok.lstrip && left && !left->empty()) *left = pythonRstrip(*left);
        if (tok.singleWord && left && !left->empty() && left->back() != ' ') {
            *left += parts[i];
            parts[i].clear();
        } else if (tok.singleWord && right && !right->empty() && right->front() != ' ') {
            parts[i] += *right;
            right->clear();
        }
    }
}

// legacy=true: every non-special part is encoded by SentencePiece on its own.
std::vector<int64_t> Tokenizer::Impl::tokenizeLegacy(const std::string& text) const {
    std::vector<std::string> parts = splitOnAddedTokens(text);
    applyAddedTokenStripping(parts);
    std::vector<int64_t> ids;
    for (const std::string& part : parts) {
        if (part.empty()) continue;
        if (auto it = addedByContent.find(part); it != addedByContent.end()) {
            ids.push_back(it->second);
            continue;
        }
        const auto chunk = spEncode(part, addDummyPrefix);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    return ids;
}

// legacy=false (LlamaTokenizer.tokenize/_tokenize): the model runs without the dummy
// prefix; one "▁" is put in front of the whole text instead, and a part starting with a
// space is encoded behind the unk token text (then those pieces are dropped) so that
// SentencePiece does not eat its leading "▁".
std::vector<int64_t> Tokenizer::Impl::tokenizeNonLegacy(const std::string& input) const {
    if (input.empty()) return {};
    std::string text = replaceAll(input, kSpaceSymbol, " ");
    if (addPrefixSpace) text.insert(0, kSpaceSymbol);
    std::vector<std::string> parts = splitOnAddedTokens(text);
    applyAddedTokenStripping(parts);

    const size_t unkLength = spEncode(unkTokenText, false).size();
    std::vector<int64_t> ids;
    std::vector<bool> fromAdded;
    for (const std::string& part : parts) {
        if (part.empty()) continue;
        if (auto it = addedByContent.find(part); it != addedByContent.end()) {
            ids.push_back(it->second);
            fromAdded.push_back(true);
            continue;
        }
        std::vector<int64_t> chunk;
        if (startsWith(part, kSpaceSymbol) || startsWith(part, " ")) {
            chunk = spEncode(unkTokenText + part, false);
            if (chunk.size() >= unkLength) chunk.erase(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(unkLength));
        } else {
            chunk = spEncode(part, false);
        }
        ids.insert(ids.end(), chunk.begin(), chunk.end());
        fromAdded.insert(fromAdded.end(), chunk.size(), false);
    }
    // A lone "▁" in front of a special token is dropped.
    if (ids.size() > 1 && !fromAdded[0] && ids[0] < static_cast<int64_t>(pieces.size()) &&
        pieces[static_cast<size_t>(ids[0])].text == kSpaceSymbol && fromAdded[1] && hfSpecial.count(ids[1]))
        ids.erase(ids.begin());
    return ids;
}

// ---------------------------------------------------------------------------------------
// 6. Hugging Face slow tokenizer: decode
// ---------------------------------------------------------------------------------------

// LlamaTokenizer.convert_tokens_to_string.
std::string Tokenizer::Impl::convertTokensToString(const std::vector<int64_t>& ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int64_t id : ids) tokens.push_back(tokenText(id));
    // The prefix space HF (or the dummy prefix) put in front is removed from the first token.
    if (addPrefixSpace && startsWith(tokens[0], kSpaceSymbol)) tokens[0].erase(0, kSpaceSymbol.size());

    std::string out;
    std::vector<std::string> sub;
    bool prevIsSpecial = false;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (hfSpecial.count(ids[i])) {
            if (!prevIsSpecial && i != 0 && legacy) out += ' ';
            out += spDecode(sub, hfDummyPrefix()) + tokens[i];
            prevIsSpecial = true;
            sub.clear();
        } else {
            if (prevIsSpecial && i == 1 && addPrefixSpace && !startsWith(tokens[i], kSpaceSymbol)) out += ' ';
            sub.push_back(tokens[i]);
            prevIsSpecial = false;
        }
    }
    return out + spDecode(sub, hfDummyPrefix());
}

// PreTrainedTokenizer._decode with spaces_between_special_tokens=True (HF's default; the
// value stored in tokenizer_config.json is not consulted by decode()).
std::string Tokenizer::Impl::hfDecode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    std::vector<std::string> subTexts;
    std::vector<int64_t> current;
    for (int64_t id : ids) {
        checkId(id);
        if (skipSpecial && hfSpecial.count(id)) continue;
        if (!splitOff.count(id)) {
            current.push_back(id);
            continue;
        }
        if (!current.empty()) {
            std::string s = convertTokensToString(current);
            if (!s.empty()) subTexts.push_back(std::move(s));
            current.clear();
        }
        subTexts.push_back(tokenText(id));
    }
    if (!current.empty()) subTexts.push_back(convertTokensToString(current));

    std::string out;
    for (size_t i = 0; i < subTexts.size(); ++i) {
        if (i > 0) out += ' ';
        out += subTexts[i];
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// 7. Public API
// ---------------------------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::loadFromDirectory(const std::string& dir) {
    const fs::path root(dir);
    const fs::path modelPath = root / "tokenizer.model";
    std::error_code ec;
    if (!fs::is_regular_file(modelPath, ec))
        throw Error("missing tokenizer: " + modelPath.string() + " does not exist" +
                    (fs::exists(modelPath, ec) ? " as a regular file" : ""));

    auto impl = std::make_shared<Impl>();
    impl->modelPath = modelPath.string();
    const std::string bytes = readWholeFile(modelPath, "tokenizer.model");
    ParsedModel parsed;
    try {
        parsed = parseModelProto(bytes);
    } catch (const ProtoError& e) {
        throw Error("tokenizer.model at " + impl->modelPath + ": not a SentencePiece model (protobuf: " + e.detail + ")");
    }
    impl->buildSentencePiece(std::move(parsed));

    HfConfig cfg;
    if (fs::exists(root / "tokenizer_config.json", ec)) readTokenizerConfig(root / "tokenizer_config.json", cfg);
    if (fs::exists(root / "added_tokens.json", ec)) readAddedTokensJson(root / "added_tokens.json", cfg);
    impl->buildHuggingFace(cfg);
    return Tokenizer(std::move(impl));
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool addBos) const {
    std::vector<int64_t> ids = impl_->legacy ? impl_->tokenizeLegacy(text) : impl_->tokenizeNonLegacy(text);
    if (addBos && impl_->addBos && impl_->bos >= 0) ids.insert(ids.begin(), impl_->bos);
    if (addBos && impl_->addEos && impl_->eos >= 0) ids.push_back(impl_->eos);
    return ids;
}

std::vector<int64_t> Tokenizer::encodeSentencePiece(const std::string& text) const {
    return impl_->spEncode(text, impl_->addDummyPrefix);
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    return impl_->hfDecode(ids, skipSpecial);
}

std::string Tokenizer::decodeSentencePiece(const std::vector<int64_t>& ids) const {
    std::vector<std::string> pieceTexts;
    pieceTexts.reserve(ids.size());
    for (int64_t id : ids) {
        if (id < 0 || id >= sentencePieceSize())
            throw Error("token id " + std::to_string(id) + " is not a piece of " + impl_->modelPath + " (" +
                        std::to_string(sentencePieceSize()) + " pieces)");
        pieceTexts.push_back(impl_->pieces[static_cast<size_t>(id)].text);
    }
    return impl_->spDecode(pieceTexts, impl_->addDummyPrefix);
}

std::string Tokenizer::piece(int64_t id) const {
    impl_->checkId(id);
    return impl_->tokenText(id);
}

int64_t Tokenizer::pieceToId(const std::string& piece) const { return impl_->lookup(piece); }
int64_t Tokenizer::vocabSize() const { return impl_->vocabSize; }
int64_t Tokenizer::sentencePieceSize() const { return static_cast<int64_t>(impl_->pieces.size()); }
int64_t Tokenizer::bosId() const { return impl_->bos; }
int64_t Tokenizer::eosId() const { return impl_->eos; }
int64_t Tokenizer::unkId() const { return impl_->unk; }
int64_t Tokenizer::imageTokenId() const { return impl_->image; }
int64_t Tokenizer::padId() const { return impl_->pad; }
bool Tokenizer::addBosToken() const { return impl_->addBos; }
bool Tokenizer::addEosToken() const { return impl_->addEos; }
bool Tokenizer::legacy() const { return impl_->legacy; }

bool Tokenizer::isSpecial(int64_t id) const {
    if (!impl_->validId(id)) return false;
    if (impl_->hfSpecial.count(id)) return true;
    if (impl_->addedById.count(id)) return false;
    const PieceType t = impl_->spType(static_cast<int>(id));
    return t == PieceType::Control || t == PieceType::Unknown;
}

// ---------------------------------------------------------------------------------------
// 7. StreamingDetokenizer: Impl::hfDecode(skipSpecial=true) computed incrementally.
// Special tokens vanish; non-special added tokens close the current run of ordinary
// tokens (HF decodes each run separately and joins the parts with " "); inside a run we
// replay SentencePiece's decoder state (leading-"▁" stripping, byte-piece runs).
// ---------------------------------------------------------------------------------------

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok) : tok_(tok) {}

// Output of the current run; the " " that joins it to the previous part is written only
// once the run turns out to be non-empty (HF drops empty runs before a split-off token).
std::string StreamingDetokenizer::emit(const std::string& text) {
    if (text.empty()) return {};
    std::string out = (!segmentHasText_ && subTextCount_ > 0) ? " " : "";
    segmentHasText_ = true;
    return out + text;
}

std::string StreamingDetokenizer::flushBytes() {
    std::string text = bytesToText(pendingBytes_);
    pendingBytes_.clear();
    return emit(text);
}

// Emit the pending bytes whose fate is already sealed; keep an incomplete character.
std::string StreamingDetokenizer::drainDecidableBytes() {
    std::string text;
    std::string_view rest = pendingBytes_;
    while (!rest.empty() && !isIncompleteUtf8(rest)) {
        size_t n = 1;
        if (decodeUtf8Char(rest, &n)) text.append(rest.substr(0, n));
        else text.append(kReplacementChar);
        rest.remove_prefix(n);
    }
    pendingBytes_ = std::string(rest);
    return emit(text);
}

std::string StreamingDetokenizer::pushPieceToken(int64_t id) {
    const Tokenizer::Impl& impl = *tok_.impl_;
    std::string piece = impl.tokenText(id);
    if (segmentTokens_ == 0 && impl.addPrefixSpace && startsWith(piece, kSpaceSymbol)) piece.erase(0, kSpaceSymbol.size());
    ++segmentTokens_;

    const int spId = impl.spPieceToId(piece);
    if (impl.spType(spId) == PieceType::Byte) {
        pendingBytes_.push_back(static_cast<char>(impl.byteValue(spId)));
        return drainDecidableBytes();
    }
    std::string out = flushBytes();
    if (bosWsSeen_ || segmentHasText_) isBosWs_ = false;
    auto [decoded, seen] = impl.decodePiece(piece, spId, isBosWs_, impl.hfDummyPrefix());
    bosWsSeen_ = seen;
    return out + emit(decoded);
}

std::string StreamingDetokenizer::pushSplitToken(int64_t id) {
    std::string out = flushBytes();
    if (segmentHasText_) ++subTextCount_;
    resetSegment();
    if (subTextCount_ > 0) out += ' ';
    out += tok_.impl_->tokenText(id);
    ++subTextCount_;
    return out;
}

void StreamingDetokenizer::resetSegment() {
    segmentTokens_ = 0;
    segmentHasText_ = false;
    isBosWs_ = true;
    bosWsSeen_ = false;
    pendingBytes_.clear();
}

std::string StreamingDetokenizer::push(int64_t id) {
    const Tokenizer::Impl& impl = *tok_.impl_;
    impl.checkId(id);
    if (impl.hfSpecial.count(id)) return {};
    if (impl.splitOff.count(id)) return pushSplitToken(id);
    return pushPieceToken(id);
}

std::string StreamingDetokenizer::finish() {
    std::string out = flushBytes();
    // HF keeps a trailing run even when it decodes to "", so the joining " " still appears.
    if (segmentTokens_ > 0 && !segmentHasText_ && subTextCount_ > 0) out += ' ';
    resetSegment();
    subTextCount_ = 0;
    return out;
}

} // namespace kvsteer
