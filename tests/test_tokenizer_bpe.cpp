// Tests for core/text's byte-level BPE tokenizer (Qwen2Tokenizer rules) on the Qwen2-VL reference
// tokenizer (tiny-qwen2vl: vocab.json + merges.txt, 3014 ids): the README's examples, the prompt ids
// transformers 4.45 produced for every case in expected-qwen2vl, the greedy texts, round trips on a
// varied and a random corpus (NFC computed by Qt, independently of the ICU the tokenizer uses),
// streaming against decode, tokenizer.json directories, and every kind of bad file. The
// SentencePiece tokenizers are covered by test_tokenizer and test_tokenizer_gemma.
#include "TestSupport.h"  // torch headers before Qt

#include "Error.h"
#include "io/SafeTensors.h"
#include "text/PreTokenizer.h"
#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using kvsteer::StreamingDetokenizer;
using kvsteer::Tokenizer;
namespace fs = std::filesystem;

namespace {

using kvsteer::test::errorOf;

const std::string kFffd = "\xEF\xBF\xBD";
const std::string kSystem = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";

QByteArray qbytes(const std::string& s) { return QByteArray::fromStdString(s); }

std::string joinIds(const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
    return s;
}

std::string utf8(uint32_t cp) { return QString::fromUcs4(reinterpret_cast<const char32_t*>(&cp), 1).toUtf8().toStdString(); }

// NFC by Qt's own Unicode tables: an implementation independent of the ICU the tokenizer uses.
std::string qtNfc(const std::string& s) {
    return QString::fromUtf8(qbytes(s)).normalized(QString::NormalizationForm_C).toUtf8().toStdString();
}

bool validUtf8(const std::string& s) { return QString::fromUtf8(qbytes(s)).toUtf8() == qbytes(s); }

// GPT-2's bytes_to_unicode, written out again here so that the byte ids are not taken from the
// code under test.
std::string byteSymbol(unsigned char byte) {
    const auto printable = [](unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    if (printable(byte)) return utf8(byte);
    uint32_t n = 0;
    for (unsigned b = 0; b < byte; ++b) n += printable(b) ? 0 : 1;
    return utf8(0x100 + n);
}

std::string streamDecode(const Tokenizer& tok, const std::vector<int64_t>& ids, std::vector<std::string>* pieces = nullptr) {
    StreamingDetokenizer d(tok);
    std::string text;
    for (int64_t id : ids) {
        const std::string piece = d.push(id);
        if (pieces) pieces->push_back(piece);
        text += piece;
    }
    return text + d.finish();
}


std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// The chat template of the README with its default system message; one <|image_pad|> for an image.
std::string chatPrompt(const std::string& userText, bool image) {
    return kSystem + "<|im_start|>user\n" + (image ? "<|vision_start|><|image_pad|><|vision_end|>" : "") + userText +
           "<|im_end|>\n<|im_start|>assistant\n";
}

// A varied corpus: scripts, emoji, combining marks (decomposed and precomposed), CRLF, tabs,
// punctuation and digit runs, contractions, special-token texts inside words.
std::vector<std::string> variedCorpus() {
    return {"", " ", "  ", "\t", "\n", "\r\n", "\r\n\r\n  \r\n", "a\r\nb", "line one\nline two\n\n\nend", "\t\tindented\tcode\t",
            "Hello, world!!! ... ???", "(a) [b] {c} <d> --- ___ *** ///", "1234567890", "3.14159 and 2,718 and 1e-9",
            "I'm you're we've they'll he'd it's DON'T I'M", "'s 'S 'll", "naïve café résumé Straße über",
            "Cafe\xCC\x81 vs Caf\xC3\xA9", "e\xCC\x81\xCC\x81 a\xCC\x8A\xCC\x81 o\xCC\x88\xCC\x84", "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",
            "Привет, мир!", "Ελληνικά κείμενα", "你好，世界。东京タワー こんにちは", "안녕하세요", "مرحبا بالعالم", "שלום עולם",
            "नमस्ते दुनिया", "สวัสดีครับ", "😀 🚀🚀 👩‍💻 👍🏽 🇫🇷", " 🙂", "∑∫√ → ⇒ ╔═╗ ½ Ⅻ ① ﬁ", "ｶﾀｶﾅ ＡＢＣ", "\xEF\xBF\xBD",
            "mixed: English, русский, 中文, العربية and 123 emojis 😀!", "x\x01y\x7Fz\x1b[31mred\x1b[0m", "tab\tsep\tvalues\r\n",
            "trailing spaces   ", "   leading spaces", "a  b   c    d", "<|im_start|>user\nHi<|im_end|>\n",
            "word<|im_end|>word", "<|endoftext|><|endoftext|>", "<|image_pad|> <|vision_start|>", "<|im_start", "|>", "<||>",
            "http://example.com/a?b=c&d=e#frag", "foo_bar(x, y) { return x+y; }", "don't stop", "ĠĊ Ā literal symbols"};
}

// Seeded random strings of valid UTF-8 from long-established blocks (so that the two Unicode
// versions of ICU and Qt agree), with spaces, newlines and CRLF mixed in.
std::vector<std::string> randomCorpus(uint32_t seed, size_t count) {
    std::mt19937 rng(seed);
    const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    const std::vector<std::pair<uint32_t, uint32_t>> blocks = {
        {0x20, 0x7E},     {0x20, 0x7E},     {0xA0, 0x24F},    {0x300, 0x36F},   {0x370, 0x3FF},  {0x400, 0x4FF},
        {0x590, 0x5FF},   {0x600, 0x6FF},   {0x900, 0x97F},   {0xE00, 0xE7F},   {0x1100, 0x11FF}, {0x1E00, 0x1EFF},
        {0x2000, 0x206F}, {0x2190, 0x22FF}, {0x3040, 0x30FF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xFB00, 0xFB4F},
        {0xFF00, 0xFFEF}, {0x1F300, 0x1F64F}, {0x0, 0x1F}};
    const std::vector<std::string> glue = {" ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "<|im_end|>", "12", "!!"};
    std::vector<std::string> out;
    while (out.size() < count) {
        std::string s;
        const size_t length = 1 + pick(30);
        for (size_t i = 0; i < length; ++i) {
            if (pick(5) == 0) {
                s += glue[pick(glue.size())];
                continue;
            }
            const auto& block = blocks[pick(blocks.size())];
            s += utf8(block.first + static_cast<uint32_t>(pick(block.second - block.first + 1)));
        }
        out.push_back(s);
    }
    return out;
}

// The reference tokenizer files as a tokenizer.json (merges as "a b" strings or as pairs) in `dir`.
void writeTokenizerJson(const std::string& from, const std::string& dir, bool pairMerges) {
    nlohmann::json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                            {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}};
    model["vocab"] = nlohmann::json::parse(readFile(from + "/vocab.json"));
    model["merges"] = nlohmann::json::array();
    std::istringstream merges(readFile(from + "/merges.txt"));
    for (std::string line; std::getline(merges, line);) {
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        const size_t space = line.find(' ');
        if (pairMerges) model["merges"].push_back({line.substr(0, space), line.substr(space + 1)});
        else model["merges"].push_back(line);
    }
    nlohmann::json added = nlohmann::json::array();
    const nlohmann::json addedTokens = nlohmann::json::parse(readFile(from + "/added_tokens.json"));
    for (const auto& [content, id] : addedTokens.items())
        added.push_back({{"id", id}, {"content", content}, {"special", true}, {"lstrip", false}, {"rstrip", false},
                         {"single_word", false}, {"normalized", false}});
    // Around the model, what Qwen2's own tokenizer.json states: NFC, its regex split, byte-level.
    const nlohmann::json preTokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kvsteer::detail::kQwen2PreTokenizePattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
    const nlohmann::json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    const nlohmann::json tokenizer = {{"version", "1.0"},          {"added_tokens", added},      {"normalizer", {{"type", "NFC"}}},
                                      {"pre_tokenizer", preTokenizer}, {"post_processor", byteLevel}, {"decoder", byteLevel},
                                      {"model", model}};
    writeFile(dir + "/tokenizer.json", tokenizer.dump());
}

} // namespace

class TestTokenizerBpe : public QObject {
    Q_OBJECT

private:
    std::string modelDir_;
    std::optional<Tokenizer> tok_;
    nlohmann::json summary_;

    const Tokenizer& tok() const { return *tok_; }
    int64_t byteId(unsigned char b) const { return tok().pieceToId(byteSymbol(b)); }
    void checkRoundTrips(const Tokenizer& t, const std::vector<std::string>& texts);

private slots:
    void initTestCase();
    void vocabularyAndSpecialIds();
    void readmeExamples();
    void referencePromptIds();
    void greedyDecode();
    void roundTripVariedCorpus();
    void roundTripRandomCorpus();
    void decodeReplacesIllFormedBytes();
    void streamingEqualsDecode();
    void tokenizerJsonDirectory();
    void outOfRangeIdsThrow();
    void badFilesThrow();
};

void TestTokenizerBpe::initTestCase() {
    modelDir_ = kvsteer::test::referenceDir() + "/tiny-qwen2vl";
    tok_ = Tokenizer::loadFromDirectory(modelDir_);
    summary_ = nlohmann::json::parse(readFile(kvsteer::test::referenceDir() + "/expected-qwen2vl/summary.json"));
    QVERIFY(summary_["cases"].size() == 5);
}

void TestTokenizerBpe::vocabularyAndSpecialIds() {
    QCOMPARE(tok().vocabSize(), int64_t(3014));
    QCOMPARE(tok().sentencePieceSize(), int64_t(0));
    QCOMPARE(tok().bosId(), int64_t(-1));    // bos_token null
    QCOMPARE(tok().eosId(), int64_t(3002));  // tokenizer_config eos_token <|im_end|>
    QCOMPARE(tok().padId(), int64_t(3000));  // pad_token <|endoftext|>
    QCOMPARE(tok().unkId(), int64_t(-1));    // unk_token null
    QCOMPARE(tok().imageTokenId(), int64_t(3012));
    QVERIFY(!tok().addBosToken() && !tok().addEosToken() && !tok().legacy());
    const std::vector<std::string> added = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                                            "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                                            "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"};
    for (size_t i = 0; i < added.size(); ++i) {
        QCOMPARE(tok().pieceToId(added[i]), int64_t(3000 + i));
        QCOMPARE(qbytes(tok().piece(3000 + static_cast<int64_t>(i))), qbytes(added[i]));
        QVERIFY(tok().isSpecial(3000 + static_cast<int64_t>(i)));
    }
    QVERIFY(!tok().isSpecial(0) && !tok().isSpecial(2999) && !tok().isSpecial(3014));
    // The byte symbols sit at the README's ids.
    QCOMPARE(byteId('!'), int64_t(0));
    QCOMPARE(byteId('~'), int64_t(93));
    QCOMPARE(byteId(0xA1), int64_t(94));
    QCOMPARE(byteId(0x00), int64_t(188));
    QCOMPARE(byteId('\t'), int64_t(197));
    QCOMPARE(byteId('\n'), int64_t(198));
    QCOMPARE(byteId('\r'), int64_t(201));
    QCOMPARE(byteId(' '), int64_t(220));
    QCOMPARE(qbytes(tok().piece(220)), QByteArray("\xC4\xA0"));  // "Ġ"
    QCOMPARE(qbytes(tok().piece(1912)), QByteArray("\xC4\xA0" "color"));
    QCOMPARE(tok().pieceToId("no such token"), int64_t(-1));
    // Nothing is added around the text, with or without addBos.
    QCOMPARE(tok().encode("Hello world", true), tok().encode("Hello world", false));
    QVERIFY(errorOf([&] { tok().encodeSentencePiece("x"); }).find("not SentencePiece") != std::string::npos);
    QVERIFY(errorOf([&] { tok().decodeSentencePiece({1}); }).find("not SentencePiece") != std::string::npos);
}

void TestTokenizerBpe::readmeExamples() {
    const std::vector<std::pair<std::string, std::string>> table = {
        {"What color is the square?", "1474 1912 340 267 1099 30"},
        {"Hello world", "39 1517 78 2358"},
        {" Hello world", "575 1517 78 2358"},
        {"Hello, world!  12345", "39 1517 78 11 2358 0 220 220 16 17 18 19 20"},
        {"\t\n  x", "197 198 220 1897"},
        {"a  b", "64 220 294"},
        {"\n\n", "357"},
        {"Caf\xC3\xA9", "34 2648 1484"},
        {"Cafe\xCC\x81", "34 2648 1484"},
        {" \xF0\x9F\x99\x82", "1485 247 224"},
        {"<|im_start|>user\nHi<|im_end|>\n", "3001 1404 198 39 72 3002 198"}};
    for (const auto& [text, ids] : table) {
        const std::vector<int64_t> got = tok().encode(text);
        QCOMPARE(qbytes(joinIds(got)), qbytes(ids));
        QCOMPARE(qbytes(tok().decode(got, false)), qbytes(qtNfc(text)));
        QCOMPARE(qbytes(streamDecode(tok(), got)), qbytes(tok().decode(got, true)));
    }
    QCOMPARE(qbytes(tok().decode({3001, 1404, 198, 39, 72, 3002, 198}, true)), QByteArray("user\nHi\n"));
    const std::vector<std::string> pieces = {"What", "\xC4\xA0" "color", "\xC4\xA0" "is", "\xC4\xA0" "the", "\xC4\xA0" "square", "?"};
    for (size_t i = 0; i < pieces.size(); ++i) QCOMPARE(qbytes(tok().piece(tok().encode("What color is the square?")[i])), qbytes(pieces[i]));
}

void TestTokenizerBpe::referencePromptIds() {
    struct Case {
        std::string name, text, modelDir, idsTensor;
        bool image;
    };
    std::vector<Case> cases;
    for (const auto& c : summary_["cases"]) {
        const bool image = !c["image"].is_null();
        cases.push_back({c["name"].get<std::string>(), c["user_text"].get<std::string>(), modelDir_,
                         image ? "input_ids_unexpanded" : "input_ids", image});
        QCOMPARE(qbytes(chatPrompt(c["user_text"].get<std::string>(), image)), qbytes(c["prompt"].get<std::string>()));
    }
    cases.push_back({"qwen2_text_only", cases[4].text, kvsteer::test::referenceDir() + "/tiny-qwen2", "input_ids", false});
    QCOMPARE(cases.size(), size_t(6));
    for (const Case& c : cases) {
        const Tokenizer t = Tokenizer::loadFromDirectory(c.modelDir);
        const kvsteer::SafeTensorsFile file(kvsteer::test::referenceDir() + "/expected-qwen2vl/" + c.name + ".safetensors");
        const std::vector<int64_t> expected = kvsteer::test::toIds(file.tensor(c.idsTensor));
        const std::vector<int64_t> ids = t.encode(chatPrompt(c.text, c.image));
        QVERIFY2(ids == expected, (c.name + ": " + joinIds(ids) + " vs " + joinIds(expected)).c_str());
        if (!c.image) continue;
        // The processor's expansion of the one <|image_pad|> gives the model's input_ids.
        const std::vector<int64_t> full = kvsteer::test::toIds(file.tensor("input_ids"));
        std::vector<int64_t> expanded;
        for (int64_t id : ids) expanded.insert(expanded.end(), id == t.imageTokenId() ? full.size() - ids.size() + 1 : 1, id);
        QVERIFY2(expanded == full, c.name.c_str());
    }
}

void TestTokenizerBpe::greedyDecode() {
    for (const auto& c : summary_["cases"]) {
        const std::string name = c["name"].get<std::string>();
        const kvsteer::SafeTensorsFile file(kvsteer::test::referenceDir() + "/expected-qwen2vl/" + name + ".safetensors");
        const std::vector<int64_t> greedy = kvsteer::test::toIds(file.tensor("greedy_ids"));
        QCOMPARE(qbytes(joinIds(greedy)), qbytes(joinIds(c["greedy_ids"].get<std::vector<int64_t>>())));
        QVERIFY2(c.contains("greedy_text"), name.c_str());
        const std::string expected = c["greedy_text"].get<std::string>();
        QCOMPARE(qbytes(tok().decode(greedy)), qbytes(expected));
        QCOMPARE(qbytes(tok().decode(greedy, false)), qbytes(expected));
        QCOMPARE(qbytes(streamDecode(tok(), greedy)), qbytes(expected));
        if (c["greedy_tokens"].is_array())
            for (size_t i = 0; i < greedy.size(); ++i) QCOMPARE(qbytes(tok().piece(greedy[i])), qbytes(c["greedy_tokens"][i].get<std::string>()));
    }
}

void TestTokenizerBpe::checkRoundTrips(const Tokenizer& t, const std::vector<std::string>& texts) {
    for (const std::string& text : texts) {
        const std::vector<int64_t> ids = t.encode(text);
        const std::string back = t.decode(ids, false);
        QVERIFY2(back == qtNfc(text), ("round trip of \"" + text + "\": \"" + back + "\" (" + joinIds(ids) + ")").c_str());
        QVERIFY2(streamDecode(t, ids) == t.decode(ids, true), text.c_str());
    }
}

void TestTokenizerBpe::roundTripVariedCorpus() {
    checkRoundTrips(tok(), variedCorpus());
    // Pieces the regex must keep apart: digits one by one, a run of spaces leaves its last space
    // to the next word, "\r\n" runs stay together.
    QCOMPARE(tok().encode("12").size(), size_t(2));
    QCOMPARE(qbytes(joinIds(tok().encode("a  b"))), QByteArray("64 220 294"));
    QCOMPARE(qbytes(joinIds(tok().encode("a<|im_end|>b"))), QByteArray("64 3002 65"));
    // Whitespace is Unicode White_Space, as in Python's `regex` (which Qwen2Tokenizer uses):
    // U+180E and U+001C..U+001F are not whitespace, U+0085 and U+3000 are. (Ids from a Python
    // re-implementation of Qwen2Tokenizer on the `regex` module, cross-checked on 25,000 random texts.)
    QCOMPARE(qbytes(joinIds(tok().encode("\xE1\xA0\x8E't"))), QByteArray("157 254 236 6 83"));
    QCOMPARE(qbytes(joinIds(tok().encode("a \xE1\xA0\x8E b"))), QByteArray("64 220 157 254 236 294"));
    QCOMPARE(qbytes(joinIds(tok().encode("\x1C\x1D 's"))), QByteArray("216 217 2095 82"));
    QCOMPARE(qbytes(joinIds(tok().encode("\xC2\x85\xE3\x80\x80x"))), QByteArray("126 227 2734 222 87"));
    QCOMPARE(qbytes(joinIds(tok().encode("It'S '\xC5\xBFix"))), QByteArray("2634 6 50 2095 129 123 1025"));
    // Ill-formed input is read as U+FFFD, as ICU converts it.
    QCOMPARE(qbytes(tok().decode(tok().encode("x\xFFy"))), qbytes("x" + kFffd + "y"));
}

void TestTokenizerBpe::roundTripRandomCorpus() {
    const std::vector<std::string> corpus = randomCorpus(20240613, 2000);
    checkRoundTrips(tok(), corpus);
    // Plain text never produces an added token unless its text is there.
    for (const std::string& text : corpus) {
        if (text.find("<|") != std::string::npos) continue;
        for (int64_t id : tok().encode(text)) QVERIFY2(id >= 0 && id < 3000, text.c_str());
    }
}

void TestTokenizerBpe::decodeReplacesIllFormedBytes() {
    const auto bytes = [&](std::initializer_list<unsigned char> bs) {
        std::vector<int64_t> ids;
        for (unsigned char b : bs) ids.push_back(byteId(b));
        return ids;
    };
    // Python's bytes.decode("utf-8", errors="replace"): one U+FFFD per maximal ill-formed subpart.
    QCOMPARE(qbytes(tok().decode(bytes({0xE2, 0x82, 0xAC}))), QByteArray("\xE2\x82\xAC"));
    QCOMPARE(qbytes(tok().decode(bytes({0xE2}))), qbytes(kFffd));
    QCOMPARE(qbytes(tok().decode(bytes({0xE2, 0x82}))), qbytes(kFffd));
    QCOMPARE(qbytes(tok().decode(bytes({0xE2, 0x82, 'A'}))), qbytes(kFffd + "A"));
    QCOMPARE(qbytes(tok().decode(bytes({0xF0, 0x9F, 0x98}))), qbytes(kFffd));
    QCOMPARE(qbytes(tok().decode(bytes({0xED, 0xA0, 0x80}))), qbytes(kFffd + kFffd + kFffd));
    QCOMPARE(qbytes(tok().decode(bytes({0xE0, 0x80, 0x80}))), qbytes(kFffd + kFffd + kFffd));
    QCOMPARE(qbytes(tok().decode(bytes({0xC0, 0xAF, 0xFF, 0x80}))), qbytes(kFffd + kFffd + kFffd + kFffd));
    // A special token between the bytes: skipped, the run goes on; kept, it splits the run.
    std::vector<int64_t> split = bytes({0xE2});
    split.push_back(3002);
    for (int64_t id : bytes({0x82, 0xAC})) split.push_back(id);
    QCOMPARE(qbytes(tok().decode(split, true)), QByteArray("\xE2\x82\xAC"));
    QCOMPARE(qbytes(tok().decode(split, false)), qbytes(kFffd + "<|im_end|>" + kFffd + kFffd));
}

void TestTokenizerBpe::streamingEqualsDecode() {
    // "€" one byte at a time: nothing until the character is complete.
    StreamingDetokenizer d(tok());
    QCOMPARE(qbytes(d.push(byteId(0xE2))), QByteArray());
    QCOMPARE(qbytes(d.push(3002)), QByteArray());  // special: skipped, the bytes wait on
    QCOMPARE(qbytes(d.push(byteId(0x82))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId(0xAC))), QByteArray("\xE2\x82\xAC"));
    QCOMPARE(qbytes(d.push(byteId(0xF0))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId('x'))), qbytes(kFffd + "x"));  // the 'x' decides the U+FFFD
    QCOMPARE(qbytes(d.push(byteId(0xC3))), QByteArray());
    QCOMPARE(qbytes(d.finish()), qbytes(kFffd));
    StreamingDetokenizer copy = d;  // copies carry their own state
    QCOMPARE(qbytes(copy.push(byteId(0xC3))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId('y'))), QByteArray("y"));
    QCOMPARE(qbytes(copy.finish()), qbytes(kFffd));

    // Random ids over the whole vocabulary, biased towards the byte tokens that split
    // characters (ids 94..255 hold the non-ASCII bytes) and towards the special tokens.
    std::mt19937 rng(7);
    for (int seq = 0; seq < 400; ++seq) {
        std::vector<int64_t> ids;
        const int length = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < length; ++i) {
            const unsigned kind = rng() % 4;
            ids.push_back(kind == 0 ? 94 + rng() % 162 : kind == 1 ? 3000 + rng() % 14 : rng() % 3014);
        }
        std::vector<std::string> pieces;
        QCOMPARE(qbytes(streamDecode(tok(), ids, &pieces)), qbytes(tok().decode(ids, true)));
        for (const std::string& p : pieces) QVERIFY2(validUtf8(p), joinIds(ids).c_str());
    }
    // Encoded multilingual text, streamed token by token, comes out whole.
    for (const std::string& text : randomCorpus(99, 200)) {
        const std::vector<int64_t> ids = tok().encode(text);
        std::vector<std::string> pieces;
        QCOMPARE(qbytes(streamDecode(tok(), ids, &pieces)), qbytes(tok().decode(ids, true)));
        for (const std::string& p : pieces) QVERIFY(validUtf8(p));
    }
}

void TestTokenizerBpe::tokenizerJsonDirectory() {
    const std::vector<std::string> prompts = {chatPrompt("What color is the square?", true), "Hello, world!  12345",
                                              "Cafe\xCC\x81 \xF0\x9F\x99\x82 \r\n\t x"};
    for (bool pairs : {false, true}) {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString();
        writeTokenizerJson(modelDir_, path, pairs);
        fs::copy_file(modelDir_ + "/tokenizer_config.json", path + "/tokenizer_config.json");
        const Tokenizer t = Tokenizer::loadFromDirectory(path);
        QCOMPARE(t.vocabSize(), int64_t(3014));
        QCOMPARE(t.eosId(), int64_t(3002));
        QCOMPARE(t.imageTokenId(), int64_t(3012));
        for (const std::string& p : prompts) QCOMPARE(qbytes(joinIds(t.encode(p))), qbytes(joinIds(tok().encode(p))));
        checkRoundTrips(t, variedCorpus());
    }
    // tokenizer.json alone: Qwen2Tokenizer's defaults (eos / unk / pad <|endoftext|>, no bos).
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString();
    writeTokenizerJson(modelDir_, path, false);
    const Tokenizer t = Tokenizer::loadFromDirectory(path);
    QCOMPARE(t.eosId(), int64_t(3000));
    QCOMPARE(t.padId(), int64_t(3000));
    QCOMPARE(t.unkId(), int64_t(3000));
    QCOMPARE(t.bosId(), int64_t(-1));
    QVERIFY(t.isSpecial(3012));
    QCOMPARE(qbytes(joinIds(t.encode(prompts[0]))), qbytes(joinIds(tok().encode(prompts[0]))));
}

void TestTokenizerBpe::outOfRangeIdsThrow() {
    for (int64_t bad : {int64_t(-1), int64_t(3014), int64_t(3071), int64_t(1) << 40}) {
        const std::string id = std::to_string(bad);
        QVERIFY(errorOf([&] { tok().decode({1, bad}); }).find(id) != std::string::npos);
        QVERIFY(errorOf([&] { tok().decode({bad}, false); }).find("out of range") != std::string::npos);
        QVERIFY(errorOf([&] { tok().piece(bad); }).find(id) != std::string::npos);
        QVERIFY(errorOf([&] { StreamingDetokenizer d(tok()); d.push(bad); }).find(id) != std::string::npos);
    }
}

void TestTokenizerBpe::badFilesThrow() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString();
    const auto reset = [&] {
        for (const auto& entry : fs::directory_iterator(path)) fs::remove(entry.path());
        for (const char* name : {"vocab.json", "merges.txt", "added_tokens.json", "tokenizer_config.json", "special_tokens_map.json"})
            fs::copy_file(modelDir_ + "/" + name, path + "/" + name);
    };
    const auto loadError = [&] { return errorOf([&] { Tokenizer::loadFromDirectory(path); }); };
    QTemporaryDir qwenJson;   // the reference files as Qwen2's own tokenizer.json
    const std::string qwenJsonDir = qwenJson.path().toStdString();
    writeTokenizerJson(modelDir_, qwenJsonDir, false);
    const auto expect = [&](const std::string& msg, std::initializer_list<std::string> parts) {
        QVERIFY2(!msg.empty(), "no error");
        for (const std::string& part : parts) QVERIFY2(msg.find(part) != std::string::npos, (msg + "  [expected: " + part + "]").c_str());
    };
    const std::string vocab = readFile(modelDir_ + "/vocab.json"), merges = readFile(modelDir_ + "/merges.txt");
    nlohmann::json vocabJson = nlohmann::json::parse(vocab);

    reset();
    QVERIFY(loadError().empty());
    expect(errorOf([&] { Tokenizer::loadFromDirectory(path + "/nope"); }), {"missing tokenizer", "does not exist"});
    fs::remove(path + "/vocab.json");
    expect(loadError(), {path + "/vocab.json", "does not exist", "merges.txt"});
    reset();
    fs::remove(path + "/merges.txt");
    expect(loadError(), {path + "/merges.txt", "does not exist"});
    reset();
    writeFile(path + "/vocab.json", vocab.substr(0, vocab.size() / 2));
    expect(loadError(), {"vocab.json at " + path, "invalid JSON"});
    writeFile(path + "/vocab.json", "[1, 2]");
    expect(loadError(), {"vocab.json", "expected an object"});
    writeFile(path + "/vocab.json", R"({"a": "x"})");
    expect(loadError(), {"vocab.json", "\"a\"", "integer"});
    nlohmann::json v = vocabJson;
    v.erase("!");
    writeFile(path + "/vocab.json", v.dump());
    expect(loadError(), {"vocab.json", "byte symbol \"!\"", "missing"});
    v = vocabJson;
    v["extra"] = 5;
    writeFile(path + "/vocab.json", v.dump());
    expect(loadError(), {"vocab.json", "id 5", "\"extra\""});
    v = vocabJson;
    v["a b"] = 3050;
    writeFile(path + "/vocab.json", v.dump());
    expect(loadError(), {"vocab.json", "\"a b\"", "outside the byte-level alphabet"});
    reset();
    writeFile(path + "/merges.txt", merges + "a b c\n");
    expect(loadError(), {"merges.txt at " + path, "line 2746", "two symbols"});
    writeFile(path + "/merges.txt", "#version: 0.2\nzzqq x\n");
    expect(loadError(), {"merges.txt", "line 2", "\"zzqq\" is not a token"});
    writeFile(path + "/merges.txt", "#version: 0.2\n\xC4\x80 \xC4\x80\n");  // "Ā Ā": "ĀĀ" is no token
    expect(loadError(), {"merges.txt", "line 2", "\"\xC4\x80\xC4\x80\" is not a token"});
    reset();
    writeFile(path + "/tokenizer_config.json", "{\"eos_token\": ");
    expect(loadError(), {"tokenizer_config.json at " + path, "invalid JSON"});
    reset();
    writeFile(path + "/added_tokens.json", "{\"<x>\": -3}");
    fs::remove(path + "/tokenizer_config.json");  // added_tokens.json counts only without added_tokens_decoder
    expect(loadError(), {"added_tokens.json", "\"<x>\"", "non-negative"});

    // tokenizer.json directories.
    for (const auto& entry : fs::directory_iterator(path)) fs::remove(entry.path());
    writeFile(path + "/tokenizer.json", "{\"model\": ");
    expect(loadError(), {"tokenizer.json at " + path, "invalid JSON"});
    writeFile(path + "/tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
    expect(loadError(), {"tokenizer.json", "\"Unigram\"", "only a \"BPE\" model"});
    // Qwen2's pre-tokenizer around each model below, so that the model's own fault is the one named.
    const auto withModel = [&](const nlohmann::json& model) {
        nlohmann::json j = nlohmann::json::parse(readFile(qwenJsonDir + "/tokenizer.json"));
        j["model"] = model;
        j.erase("added_tokens");
        return j;
    };
    writeFile(path + "/tokenizer.json", withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", {"a"}}}).dump());
    expect(loadError(), {"tokenizer.json", "model.merges[0]", "\"a b\""});
    writeFile(path + "/tokenizer.json", withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", {"q zzqqx"}}}).dump());
    expect(loadError(), {"tokenizer.json", "model.merges[0]", "\"zzqqx\" is not a token"});
    writeFile(path + "/tokenizer.json",
              withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", nlohmann::json::array()}, {"byte_fallback", true}}).dump());
    expect(loadError(), {"tokenizer.json", "byte_fallback"});
    // What surrounds the model: only what this reader follows exactly.
    nlohmann::json other = withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", nlohmann::json::array()}});
    other["pre_tokenizer"] = {{"type", "Whitespace"}};
    writeFile(path + "/tokenizer.json", other.dump());
    expect(loadError(), {"tokenizer.json", "pre_tokenizer", "Whitespace", "not supported"});
    other = withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", nlohmann::json::array()}});
    other["normalizer"] = {{"type", "NFKC"}};
    writeFile(path + "/tokenizer.json", other.dump());
    expect(loadError(), {"tokenizer.json", "normalizer", "NFKC", "not supported"});
    other = withModel({{"type", "BPE"}, {"vocab", vocabJson}, {"merges", nlohmann::json::array()}});
    other["decoder"] = {{"type", "WordPiece"}};
    writeFile(path + "/tokenizer.json", other.dump());
    expect(loadError(), {"tokenizer.json", "decoder", "WordPiece", "not supported"});
    writeFile(path + "/tokenizer.json", nlohmann::json({{"added_tokens", {{{"id", "x"}}}},
                                                        {"model", {{"type", "BPE"}, {"vocab", vocabJson}, {"merges", nlohmann::json::array()}}}}).dump());
    expect(loadError(), {"tokenizer.json", "added_tokens[0]", "\"id\""});
}

QTEST_GUILESS_MAIN(TestTokenizerBpe)
#include "test_tokenizer_bpe.moc"
