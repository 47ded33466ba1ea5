// Tests for core/text with the GemmaTokenizer rules: kvsteer's own tokenizer on the PaliGemma reference
// tokenizer (tiny-paligemma: SentencePiece BPE without dummy prefix, <loc>/<seg> added tokens, <image>)
// against what transformers 4.45's slow GemmaTokenizer produced in expected-paligemma/summary.json. The
// LLaVA/Llama rules are covered by test_tokenizer and must not change.
#include "TestSupport.h"  // torch headers before Qt

#include "Error.h"
#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using kvsteer::StreamingDetokenizer;
using kvsteer::Tokenizer;
namespace fs = std::filesystem;

namespace {

using kvsteer::test::errorOf;

const std::string kSpace = "\xE2\x96\x81";  // "▁"

QByteArray qbytes(const std::string& s) { return QByteArray::fromStdString(s); }

std::string joinIds(const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
    return s;
}

std::string repeat(const std::string& s, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += s;
    return out;
}

// summary.json writes the 256 image ids as "2176x256": expand such entries.
std::vector<int64_t> expandCompactIds(const nlohmann::json& compact) {
    std::vector<int64_t> ids;
    for (const auto& v : compact) {
        if (v.is_number_integer()) {
            ids.push_back(v.get<int64_t>());
            continue;
        }
        const std::string s = v.get<std::string>();
        const size_t x = s.find('x');
        ids.insert(ids.end(), std::stoul(s.substr(x + 1)), std::stoll(s.substr(0, x)));
    }
    return ids;
}

// summary.json abbreviates the processor's string as "<image>x256<bos>...\\n" (a count after the
// image token, and the newline escaped): rebuild the real string.
std::string expandProcessorString(const std::string& compact) {
    const std::string image = "<image>x";
    std::string rest = compact;
    std::string out;
    if (rest.rfind(image, 0) == 0) {
        size_t digits = 0;
        const size_t count = std::stoul(rest.substr(image.size()), &digits);
        out = repeat("<image>", count);
        rest = rest.substr(image.size() + digits);
    }
    for (size_t pos = 0; (pos = rest.find("\\n", pos)) != std::string::npos;) rest.replace(pos, 2, "\n");
    return out + rest;
}

std::string streamDecode(const Tokenizer& tok, const std::vector<int64_t>& ids) {
    StreamingDetokenizer d(tok);
    std::string text;
    for (int64_t id : ids) text += d.push(id);
    return text + d.finish();
}


// A copy of the reference tokenizer files in `dir` with tokenizer_config.json's tokenizer_class set
// to `cls` (removed when empty).
void copyWithTokenizerClass(const std::string& from, const std::string& dir, const std::string& cls) {
    for (const char* name : {"tokenizer.model", "added_tokens.json", "special_tokens_map.json"})
        fs::copy_file(from + "/" + name, dir + "/" + name, fs::copy_options::overwrite_existing);
    std::ifstream in(from + "/tokenizer_config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    if (cls.empty()) cfg.erase("tokenizer_class");
    else cfg["tokenizer_class"] = cls;
    std::ofstream(dir + "/tokenizer_config.json") << cfg.dump(2);
}

} // namespace

class TestTokenizerGemma : public QObject {
    Q_OBJECT

private:
    std::string modelDir_;
    std::optional<Tokenizer> tok_;
    nlohmann::json cases_;

    const Tokenizer& tok() const { return *tok_; }
    int64_t byteId(int value) const;

private slots:
    void initTestCase();
    void vocabularyAndSpecialIds();
    void processorPromptIds();
    void greedyDecode();
    void fullSequenceDecode();
    void byteFallbackAndSpaces();
    void streamingEqualsDecodeOnRandomIds();
    void outOfRangeIdsThrow();
    void rulesFollowTokenizerClass();
};

int64_t TestTokenizerGemma::byteId(int value) const {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", value);
    return tok().pieceToId(piece);
}

void TestTokenizerGemma::initTestCase() {
    modelDir_ = kvsteer::test::referenceDir() + "/tiny-paligemma";
    tok_ = Tokenizer::loadFromDirectory(modelDir_);
    const std::string summaryPath = kvsteer::test::referenceDir() + "/expected-paligemma/summary.json";
    std::ifstream in(summaryPath);
    QVERIFY2(in.good(), qPrintable(QString::fromStdString("cannot read " + summaryPath)));
    cases_ = nlohmann::json::parse(in)["cases"];
    QCOMPARE(cases_.size(), size_t(3));
}

void TestTokenizerGemma::vocabularyAndSpecialIds() {
    QCOMPARE(tok().sentencePieceSize(), int64_t(2176));
    QCOMPARE(tok().vocabSize(), int64_t(2177));
    QCOMPARE(tok().bosId(), int64_t(2));
    QCOMPARE(tok().eosId(), int64_t(1));
    QCOMPARE(tok().padId(), int64_t(0));
    QCOMPARE(tok().unkId(), int64_t(3));
    QCOMPARE(tok().imageTokenId(), int64_t(2176));
    QVERIFY(!tok().addBosToken());  // the processor writes <bos> into the string itself
    QVERIFY(!tok().addEosToken());
    QCOMPARE(tok().pieceToId("<loc0000>"), int64_t(1024));
    QCOMPARE(tok().pieceToId("<loc1023>"), int64_t(2047));
    QCOMPARE(tok().pieceToId("<seg000>"), int64_t(2048));
    QCOMPARE(tok().pieceToId("<seg127>"), int64_t(2175));
    QCOMPARE(tok().pieceToId("<image>"), int64_t(2176));
    QCOMPARE(tok().pieceToId("\n"), int64_t(8));
    QCOMPARE(qbytes(tok().piece(2176)), QByteArray("<image>"));
    // all_special_ids are the five named tokens; <loc>/<seg> are added tokens with special=false.
    for (int64_t id : {0, 1, 2, 3, 2176}) QVERIFY2(tok().isSpecial(id), qPrintable(QString::number(id)));
    for (int64_t id : {8, 1024, 2175, 2177}) QVERIFY2(!tok().isSpecial(id), qPrintable(QString::number(id)));
}

void TestTokenizerGemma::processorPromptIds() {
    for (const auto& c : cases_) {
        const std::string prefix = c["prefix"].get<std::string>();
        const std::string prompt = expandProcessorString(c["prompt_string_built_by_processor"].get<std::string>());
        QCOMPARE(qbytes(prompt), qbytes(repeat("<image>", 256) + "<bos>" + prefix + "\n"));  // README's layout
        const auto want = expandCompactIds(c["input_ids_compact"]);
        QCOMPARE(want.size(), c["input_ids_len"].get<size_t>());
        QCOMPARE(qbytes(joinIds(tok().encode(prompt, true))), qbytes(joinIds(want)));

        // The text after the image tokens, piece by piece, and the prefix as plain SentencePiece.
        const auto textPart = c["input_ids_text_part"].get<std::vector<int64_t>>();
        const auto pieces = c["input_ids_text_part_tokens"].get<std::vector<std::string>>();
        QCOMPARE(textPart.size(), pieces.size());
        for (size_t i = 0; i < textPart.size(); ++i) QCOMPARE(qbytes(tok().piece(textPart[i])), qbytes(pieces[i]));
        QCOMPARE(qbytes(joinIds(tok().encodeSentencePiece(prefix + "\n"))),
                 qbytes(joinIds(c["prefix_tokens_plain_sentencepiece"].get<std::vector<int64_t>>())));
    }
}

void TestTokenizerGemma::greedyDecode() {
    for (const auto& c : cases_) {
        const auto greedy = c["greedy_ids"].get<std::vector<int64_t>>();
        const auto pieces = c["greedy_tokens"].get<std::vector<std::string>>();
        const std::string want = c["greedy_text"].get<std::string>();
        for (size_t i = 0; i < greedy.size(); ++i) QCOMPARE(qbytes(tok().piece(greedy[i])), qbytes(pieces[i]));
        // No special id among them: both settings of skip_special_tokens give the reference text.
        QCOMPARE(qbytes(tok().decode(greedy, false)), qbytes(want));
        QCOMPARE(qbytes(tok().decode(greedy, true)), qbytes(want));
        QCOMPARE(qbytes(streamDecode(tok(), greedy)), qbytes(want));
    }
}

// Prompt + answer in one call. Not in the reference, but implied by GemmaTokenizer._decode: added
// tokens are written as their text (or dropped when special and skipped) and nothing is inserted,
// so the prompt string comes back unchanged in front of the answer.
void TestTokenizerGemma::fullSequenceDecode() {
    for (const auto& c : cases_) {
        std::vector<int64_t> full = expandCompactIds(c["input_ids_compact"]);
        const auto greedy = c["greedy_ids"].get<std::vector<int64_t>>();
        full.insert(full.end(), greedy.begin(), greedy.end());
        const std::string prefix = c["prefix"].get<std::string>();
        const std::string answer = c["greedy_text"].get<std::string>();
        QCOMPARE(qbytes(tok().decode(full, false)), qbytes(repeat("<image>", 256) + "<bos>" + prefix + "\n" + answer));
        QCOMPARE(qbytes(tok().decode(full, true)), qbytes(prefix + "\n" + answer));
        QCOMPARE(qbytes(streamDecode(tok(), full)), qbytes(prefix + "\n" + answer));
    }
}

void TestTokenizerGemma::byteFallbackAndSpaces() {
    // No dummy prefix, so no leading space is dropped, at the start or after an added token.
    QCOMPARE(qbytes(tok().decode({tok().pieceToId(kSpace + "only")})), QByteArray(" only"));
    QCOMPARE(qbytes(tok().decode({1237, tok().pieceToId(kSpace + "only")})), QByteArray("<loc0213> only"));
    // <0xE0> alone is invalid UTF-8: U+FFFD (as in the red_square reference).
    QCOMPARE(qbytes(tok().decode({byteId(0x10), byteId(0xE0)})), QByteArray("\x10\xEF\xBF\xBD"));
    // An added token ends a byte run: the incomplete bytes before it are final.
    QCOMPARE(qbytes(tok().decode({byteId(0xC3), 1024, byteId(0xA9)})), QByteArray("\xEF\xBF\xBD<loc0000>\xEF\xBF\xBD"));
    // "▁" assembled from byte pieces is still turned into a space by GemmaTokenizer's final replace.
    const std::vector<int64_t> spaceBytes = {byteId(0xE2), byteId(0x96), byteId(0x81)};
    QCOMPARE(qbytes(tok().decode(spaceBytes)), QByteArray(" "));
    QCOMPARE(qbytes(streamDecode(tok(), spaceBytes)), QByteArray(" "));

    // Streaming holds an incomplete character back until it completes, and flushes at an added token.
    StreamingDetokenizer d(tok());
    QCOMPARE(qbytes(d.push(byteId(0xC3))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId(0xA9))), QByteArray("\xC3\xA9"));
    QCOMPARE(qbytes(d.push(byteId(0xE2))), QByteArray());
    QCOMPARE(qbytes(d.push(tok().bosId())), QByteArray());  // special: skipped, the run goes on
    QCOMPARE(qbytes(d.push(byteId(0x82))), QByteArray());
    QCOMPARE(qbytes(d.push(1237)), QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD<loc0213>"));
    QCOMPARE(qbytes(d.push(tok().pieceToId(kSpace + "only"))), QByteArray(" only"));
    QCOMPARE(qbytes(d.push(byteId(0xF0))), QByteArray());
    QCOMPARE(qbytes(d.finish()), QByteArray("\xEF\xBF\xBD"));
}

// Generated-looking sequences mixing every kind of id: byte pieces (with bytes of multi-byte
// characters and of "▁"), the user-defined pieces 4..10, ordinary pieces, <loc>/<seg>, specials.
void TestTokenizerGemma::streamingEqualsDecodeOnRandomIds() {
    std::mt19937 rng(7);
    const int spaceBytes[] = {0xE2, 0x96, 0x81};
    for (int i = 0; i < 1000; ++i) {
        std::vector<int64_t> ids;
        for (int k = 1 + int(rng() % 40); k > 0; --k) {
            switch (rng() % 7) {
            case 0: ids.push_back(byteId(int(rng() % 256))); break;
            case 1: ids.push_back(byteId(spaceBytes[rng() % 3])); break;
            case 2: ids.push_back(std::vector<int64_t>{0, 1, 2, 3, 2176}[rng() % 5]); break;
            case 3: ids.push_back(4 + int64_t(rng() % 7)); break;
            case 4: ids.push_back(1024 + int64_t(rng() % 1152)); break;
            case 5: ids.push_back(byteId(0xC0 + int(rng() % 64))); break;  // lead bytes
            default: ids.push_back(267 + int64_t(rng() % 757));
            }
        }
        QCOMPARE(qbytes(streamDecode(tok(), ids)), qbytes(tok().decode(ids, true)));
    }
}

// The slow tokenizer raises for ids beyond its 2177 (the embedding has 2240 rows).
void TestTokenizerGemma::outOfRangeIdsThrow() {
    QVERIFY_THROWS_EXCEPTION(kvsteer::Error, tok().decode({2177}));
    QVERIFY_THROWS_EXCEPTION(kvsteer::Error, tok().decode({1237, 2239}, false));
    QVERIFY(errorOf([&] { tok().decode({-1}); }).find("out of range") != std::string::npos);
    QVERIFY(errorOf([&] { tok().piece(2177); }).find("2177") != std::string::npos);
    StreamingDetokenizer d(tok());
    QVERIFY(errorOf([&] { d.push(2177); }).find("2177") != std::string::npos);
}

// The Gemma rules come from tokenizer_config.json's tokenizer_class: the fast class name selects them
// too, and without it the same files decode with LlamaTokenizer's " "-joined added tokens.
void TestTokenizerGemma::rulesFollowTokenizerClass() {
    const auto& c = cases_[0];
    const auto greedy = c["greedy_ids"].get<std::vector<int64_t>>();
    QTemporaryDir fast, none;
    QVERIFY(fast.isValid() && none.isValid());
    copyWithTokenizerClass(modelDir_, fast.path().toStdString(), "GemmaTokenizerFast");
    copyWithTokenizerClass(modelDir_, none.path().toStdString(), "");
    const Tokenizer fastTok = Tokenizer::loadFromDirectory(fast.path().toStdString());
    QCOMPARE(qbytes(fastTok.decode(greedy)), qbytes(c["greedy_text"].get<std::string>()));
    const Tokenizer llamaRules = Tokenizer::loadFromDirectory(none.path().toStdString());
    QVERIFY(llamaRules.decode(greedy).rfind("<loc0213> <seg105> atachties", 0) == 0);
}

QTEST_GUILESS_MAIN(TestTokenizerGemma)
#include "test_tokenizer_gemma.moc"
