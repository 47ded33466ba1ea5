// The streaming detokenizer on arbitrary ids: the first byte picks the tokenizer (Tokenizers.h),
// every following 3 bytes are one id (a little past both ends of the vocabulary, so out-of-range
// ids occur). Asserted: streaming gives exactly decode(ids, skipSpecial=true), and refuses
// (kvsteer::Error) exactly when decode does.
#include "FuzzSupport.h"
#include "Tokenizers.h"
#include "text/StreamingDetokenizer.h"

using namespace kvsteer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const Tokenizer& tok = fuzz::textTokenizer(data[0]);
    const int64_t span = tok.vocabSize() + 4;
    std::vector<int64_t> ids;
    for (size_t i = 1; i + 3 <= size; i += 3) {
        const int64_t raw = int64_t(data[i]) | int64_t(data[i + 1]) << 8 | int64_t(data[i + 2]) << 16;
        ids.push_back(raw % span - 2);
    }
    bool decodeRefused = false;
    std::string whole;
    try {
        whole = tok.decode(ids, true);
    } catch (const Error&) {
        decodeRefused = true;
    }
    StreamingDetokenizer stream(tok);
    std::string streamed;
    bool streamRefused = false;
    try {
        for (int64_t id : ids) streamed += stream.push(id);
        streamed += stream.finish();
    } catch (const Error&) {
        streamRefused = true;
    }
    if (decodeRefused != streamRefused) __builtin_trap();
    if (!decodeRefused && streamed != whole) __builtin_trap();
    return 0;
}
