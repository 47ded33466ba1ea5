// The tokenizer JSON and text files, one per run, chosen by the first byte, each beside valid
// companions: 0 tokenizer.json, 1 vocab.json (+ merges.txt), 2 merges.txt (+ vocab.json),
// 3 tokenizer_config.json and 4 added_tokens.json beside the demo tokenizer.model
// (SentencePiece), 5 tokenizer_config.json and 6 added_tokens.json beside vocab.json + merges.txt
// (byte-level BPE). Everything goes through Tokenizer::loadFromDirectory; a tokenizer that loads
// encodes and decodes once. The Qwen chat template's default system message is read from the same
// directory (tokenizer_config.json's "chat_template").
#include "FuzzSupport.h"
#include "Tokenizers.h"
#include "models/qwen2vl/QwenChatTemplate.h"
#include "text/Tokenizer.h"

#include <filesystem>

using namespace kvsteer;

namespace {

struct Mode {
    const char* dir;
    const char* fuzzed;
};
const Mode kModes[] = {{"tj", "tokenizer.json"},           {"vj", "vocab.json"},
                       {"mt", "merges.txt"},               {"spc", "tokenizer_config.json"},
                       {"spa", "added_tokens.json"},       {"bpc", "tokenizer_config.json"},
                       {"bpa", "added_tokens.json"}};

void prepare() {
    namespace fs = std::filesystem;
    const std::string root = fuzz::scratchDir();
    for (const Mode& m : kModes) fs::create_directories(root + "/" + m.dir);
    fuzz::writeScratch("mt/vocab.json", fuzz::smallVocabJson());
    fuzz::writeScratch("vj/merges.txt", fuzz::smallMergesTxt());
    for (const char* d : {"spc", "spa"})
        fs::copy_file(fuzz::demoModelDir() + "/tokenizer.model", root + "/" + d + "/tokenizer.model",
                      fs::copy_options::overwrite_existing);
    for (const char* d : {"bpc", "bpa"}) {
        fuzz::writeScratch(std::string(d) + "/vocab.json", fuzz::smallVocabJson());
        fuzz::writeScratch(std::string(d) + "/merges.txt", fuzz::smallMergesTxt());
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool ready = (prepare(), true);
    (void)ready;
    if (size == 0) return 0;
    const Mode& mode = kModes[data[0] % (sizeof kModes / sizeof kModes[0])];
    fuzz::writeScratch(std::string(mode.dir) + "/" + mode.fuzzed, data + 1, size - 1);
    fuzz::expectError([&] {
        const Tokenizer tok = Tokenizer::loadFromDirectory(fuzz::scratchDir() + "/" + mode.dir);
        const std::vector<int64_t> ids = tok.encode("the <|endoftext|> <image> Hé\xe2\x80\x83llo\r\n 12", true);
        (void)tok.decode(ids, false);
        (void)tok.decode(ids, true);
        (void)tok.imageTokenId();
        (void)tok.isSpecial(tok.vocabSize() - 1);
    });
    fuzz::expectError([&] { (void)qwenDefaultSystemMessage(fuzz::scratchDir() + "/" + mode.dir); });
    return 0;
}
