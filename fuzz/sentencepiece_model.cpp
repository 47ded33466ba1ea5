// tokenizer.model: the hand-written proto2 reader (ProtoReader) and everything
// Tokenizer::loadFromDirectory builds from it; a model that loads is then used once (encode,
// decode, plain SentencePiece both ways, streaming) so tables built from hostile bytes are read.
#include "FuzzSupport.h"
#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"

#include <filesystem>

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string dir = [] {
        std::filesystem::create_directories(fuzz::scratchDir() + "/spm");
        return fuzz::scratchDir() + "/spm";
    }();
    fuzz::writeScratch("spm/tokenizer.model", data, size);
    fuzz::expectError([&] {
        const Tokenizer tok = Tokenizer::loadFromDirectory(dir);
        const std::vector<int64_t> ids = tok.encode("Hello wörld <image> 123  \xe2\x96\x81x\n\xf0\x9f\x98\x80", true);
        (void)tok.decode(ids, false);
        (void)tok.decodeSentencePiece(tok.encodeSentencePiece(" a  b\tc"));
        std::vector<int64_t> all;
        for (int64_t id = 0; id < std::min<int64_t>(tok.sentencePieceSize(), 64); ++id) all.push_back(id);
        (void)tok.decodeSentencePiece(all);
        StreamingDetokenizer stream(tok);
        for (int64_t id : ids) (void)stream.push(id);
        (void)stream.finish();
    });
    return 0;
}
