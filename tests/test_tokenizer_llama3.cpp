// The Llama-3 tokenizer (../shared/reference/tiny-llama3: the real 128k tokenizer.json, read as
// the file states it: no normalizer, the Llama-3 Split regex, ignore_merges, the 256 special
// tokens, <|begin_of_text|> from the post-processor) against HF `tokenizers`
// (expected-llama3/tokenizer_ref.json): the ids of 84 hand and 200 random strings, with and
// without BOS, and their round trips; whole and per-id decodes of random id lists; the streaming
// detokenizer's pieces add up to the whole decode and never split a UTF-8 character; the chat
// renderings' ids; 2000 more random strings round-trip.
#include "TestSupport.h"   // torch headers before Qt

#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"
#include "text/Utf8.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

#include <QtTest>

using namespace kvsteer;
using json = nlohmann::json;

namespace {

std::string llama3Dir() { return test::referenceDir() + "/tiny-llama3"; }

const json& reference() {
    static const json j = [] {
        std::ifstream in(test::referenceDir() + "/expected-llama3/tokenizer_ref.json");
        return json::parse(in);
    }();
    return j;
}

std::vector<int64_t> idsOf(const json& a) { return a.get<std::vector<int64_t>>(); }

// Whole characters only: no piece of the stream may end (or start) inside a UTF-8 sequence.
bool wholeUtf8(std::string_view s) {
    while (!s.empty()) {
        size_t n = 1;
        if (!detail::decodeUtf8Char(s, &n)) return false;
        s.remove_prefix(n);
    }
    return true;
}

// Random text from the same kinds of characters as the reference's random strings.
std::string randomText(std::mt19937& rng) {
    static const std::vector<std::string> atoms = {"a", "Z", "q", "7", "42", "123456", " ", "  ", "\n", "\t", "\r\n", ".", ",", "?", "'s",
                                                   "'RE", "n't", "é", "ü", "Å", "ж", "П", "語", "文", "한", "🏽", "😀", "e\xCC\x81", "∑",
                                                   "—", "$", "`", "<", ">", "<|eot_id|>", "_", "(", "\"", "ß", "ﬁ"};
    std::string s;
    const int n = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int i = 0; i < n; ++i) s += atoms[std::uniform_int_distribution<size_t>(0, atoms.size() - 1)(rng)];
    return s;
}

} // namespace

class TestTokenizerLlama3 : public QObject {
    Q_OBJECT
    std::optional<Tokenizer> tok_;
    const Tokenizer& tok() const { return *tok_; }

private slots:
    void initTestCase() {
        tok_ = Tokenizer::loadFromDirectory(llama3Dir());
        QCOMPARE(tok().vocabSize(), reference()["vocab_size"].get<int64_t>());
        QCOMPARE(tok().bosId(), reference()["bos_id"].get<int64_t>());
        QCOMPARE(tok().eosId(), reference()["eos_id"].get<int64_t>());
        QCOMPARE(tok().sentencePieceSize(), int64_t(0));
    }

    void stringsEncodeAsTheReference() {
        int checked = 0;
        for (const char* set : {"hand", "random"})
            for (const json& e : reference()[set]) {
                const std::string text = e["text"];
                QVERIFY2(tok().encode(text, false) == idsOf(e["ids"]), text.c_str());
                // With BOS: HF's ids, except that a text already starting with BOS gets no second.
                std::vector<int64_t> withBos = idsOf(e["ids_with_special"]);
                if (withBos.size() > 1 && withBos[1] == tok().bosId()) withBos.erase(withBos.begin());
                QVERIFY2(tok().encode(text, true) == withBos, text.c_str());
                QCOMPARE(tok().decode(idsOf(e["ids"]), false), e["roundtrip"].get<std::string>());
                ++checked;
            }
        QCOMPARE(checked, 284);
    }

    void factsOfTheReadme() {
        QCOMPARE(tok().encode("Hello world", false), (std::vector<int64_t>{9906, 1917}));
        QCOMPARE(tok().encode("  Hello  ", false), (std::vector<int64_t>{220, 22691, 256}));
        QCOMPARE(tok().encode("\n\n", false), (std::vector<int64_t>{271}));
        QCOMPARE(tok().encode("1234567", false).size(), size_t(3));   // 123 / 456 / 7
        const std::vector<int64_t> eot = tok().encode("text <|eot_id|> more", false);
        QVERIFY(std::find(eot.begin(), eot.end(), int64_t(128009)) != eot.end());
    }

    void decodesWholeAndByPiece() {
        for (const json& e : reference()["decode"]) {
            const std::vector<int64_t> ids = idsOf(e["ids"]);
            QCOMPARE(tok().decode(ids, false), e["text"].get<std::string>());
            for (size_t i = 0; i < ids.size(); ++i) QCOMPARE(tok().decode({ids[i]}, false), e["pieces"][i].get<std::string>());
            // The stream: its pieces add up to the whole decode, and none ends inside a character.
            StreamingDetokenizer stream(tok());
            std::string streamed;
            for (int64_t id : ids) {
                const std::string piece = stream.push(id);
                QVERIFY(wholeUtf8(piece));
                streamed += piece;
            }
            streamed += stream.finish();
            QCOMPARE(streamed, e["text"].get<std::string>());
        }
    }

    void chatRenderingsEncodeAsTheReference() {
        for (const json& c : reference()["chat"]) QVERIFY2(tok().encode(c["text"], true) == idsOf(c["ids"]), c["text"].get<std::string>().c_str());
    }

    void randomStringsRoundTrip() {
        std::mt19937 rng(20261126);
        for (int i = 0; i < 2000; ++i) {
            const std::string text = randomText(rng);
            QCOMPARE(tok().decode(tok().encode(text, false), false), text);
        }
    }
};

QTEST_APPLESS_MAIN(TestTokenizerLlama3)
#include "test_tokenizer_llama3.moc"
