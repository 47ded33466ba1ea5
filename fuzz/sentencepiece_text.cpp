// The encoders and decoders on arbitrary bytes: the first byte picks the tokenizer (Tokenizers.h:
// SentencePiece with LlamaTokenizer or GemmaTokenizer rules, byte-level BPE), the rest is the
// text — encoded with and without special tokens and as plain SentencePiece, then decoded.
#include "FuzzSupport.h"
#include "Tokenizers.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const Tokenizer& tok = fuzz::textTokenizer(data[0]);
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    // Any text encodes: invalid UTF-8 included (byte fallback / U+FFFD), so no Error is expected.
    const std::vector<int64_t> ids = tok.encode(text, true);
    for (int64_t id : ids)
        if (id < 0 || id >= tok.vocabSize()) __builtin_trap();
    (void)tok.decode(ids, false);
    (void)tok.decode(tok.encode(text, false), true);
    if (tok.sentencePieceSize() > 0) {
        const std::vector<int64_t> sp = tok.encodeSentencePiece(text);
        (void)tok.decodeSentencePiece(sp);
    }
    return 0;
}
