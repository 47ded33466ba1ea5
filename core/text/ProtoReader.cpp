// tokenizer.model's ModelProto from the proto2 wire format — see ProtoReader.h.
#include "text/ProtoReader.h"

#include <cstring>
#include <utility>

namespace kvsteer::detail {
namespace {

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

} // namespace

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

} // namespace kvsteer::detail
