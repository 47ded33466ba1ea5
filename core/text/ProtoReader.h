#pragma once
// tokenizer.model read by hand: the proto2 wire format is parsed with bounds checks on every
// length and varint, because we cannot link libsentencepiece (it crashes inside our libtorch
// process) and a corrupt or truncated file must become an error, never a crash. Only the
// ModelProto fields that encoding and decoding depend on are kept; everything else is
// skipped.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvsteer::detail {

// Internal parse failure; loadFromDirectory turns it into a kvsteer::Error naming the file.
struct ProtoError {
    std::string detail;
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

// ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//              NormalizerSpec normalizer_spec = 3; SelfTestData self_test_data = 4;
//              NormalizerSpec denormalizer_spec = 5; }
// Throws ProtoError for bytes that are not well-formed proto2 or whose known fields have the
// wrong wire type. Whether the model is one we support is checked later (SentencePieceBpe).
ParsedModel parseModelProto(std::string_view data);

} // namespace kvsteer::detail
