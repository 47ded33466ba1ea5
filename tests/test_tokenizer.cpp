// Tests for core/text (the Tokenizer): our own SentencePiece BPE reader/encoder/decoder and the HF slow
// LlamaTokenizer layer, against the Hugging Face reference in KVSTEER_REFERENCE_DIR and against
// SentencePiece's own command-line tools (spm_encode / spm_decode / spm_train, installed by the
// project's install script: a missing tool is a failure, not a skip). Hand-built and broken model
// files are in test_tokenizer_files.
#include "TestSupport.h"  // torch headers before Qt
#include "Error.h"
#include "text/StreamingDetokenizer.h"
#include "text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using kvsteer::StreamingDetokenizer;
using kvsteer::Tokenizer;

namespace {

using kvsteer::test::errorOf;

const std::string kReferenceDir = KVSTEER_REFERENCE_DIR;
const std::string kModelDir = kReferenceDir + "/tiny-llava";
const std::string kModelFile = kModelDir + "/tokenizer.model";

QByteArray qbytes(const std::string& s) { return QByteArray::fromStdString(s); }

std::string joinIds(const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
    return s;
}

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += char(0xE0 | (cp >> 12));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xF0 | (cp >> 18));
        s += char(0x80 | ((cp >> 12) & 0x3F));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

// A varied, deterministic corpus of single lines (spm tools are line based: no '\n' or '\r'):
// words in many scripts, emoji and ZWJ sequences, combining marks, RTL text, runs of spaces and
// tabs, leading/trailing spaces, long numbers, code, literal "▁" and special-token text, random
// code points from many blocks, and invalid UTF-8 (SentencePiece maps each bad byte to U+FFFD).
std::vector<std::string> makeCorpus(uint32_t seed, size_t count) {
    std::mt19937 rng(seed);
    const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    const std::vector<std::string> words = {
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "WORLD", "tokenizer", "steering",
        "ASSISTANT:", "USER:", "image", "What", "is", "shown", "in", "this", "?", "!", "...", "--", "(x)", "[1]",
        "naïve", "café", "Straße", "über", "Привет", "мир", "Население", "你好", "世界", "東京タワー", "こんにちは",
        "안녕하세요", "مرحبا", "שלום", "नमस्ते", "สวัสดี", "Ελληνικά", "😀", "🚀🚀", "👩‍💻", "👍🏽", "🇫🇷", "e\xCC\x81",
        "a\xCC\x8A\xCC\x81", "½", "∑∫√", "→⇒", "╔═╗", "ℕ", "ﬁ", "Ⅻ", "①", "0", "42", "3.14159", "1e-9", "100000000000",
        "2026-11-22", "$5.00", "€9", "£", "¥", "foo_bar(x, y)", "{ return x+y; }", "#include", "<vector>",
        "std::map<int,int>", "a->b", "x==y", "i++", "/* c */", "// note", "'quote'", "\"dq\"", "`tick`", "\\n",
        "http://example.com/a?b=c&d=e", "<s>", "</s>", "<unk>", "<image>", "<pad>", "▁", "▁▁", "\xEF\xBF\xBD", "\t",
        "ǅ", "ß", "İ", "ﬀ", "ｶﾀｶﾅ", "ＡＢＣ"};
    const std::vector<std::pair<uint32_t, uint32_t>> blocks = {
        {0x20, 0x7E}, {0xA0, 0x24F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x590, 0x6FF}, {0x900, 0x97F},
        {0xE00, 0xE7F}, {0x1100, 0x11FF}, {0x2000, 0x206F}, {0x2190, 0x22FF}, {0x2500, 0x257F}, {0x3040, 0x30FF},
        {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xE000, 0xE0FF}, {0xFB00, 0xFFFD}, {0x10000, 0x1007F},
        {0x1F300, 0x1FAFF}, {0x20000, 0x2A6DF}, {0xF0000, 0xF00FF}, {0x10FF00, 0x10FFFF}, {0x300, 0x36F}, {0x1, 0x1F}};
    const std::vector<std::string> invalidUtf8 = {"\xFF", "\xFE", "\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xED\xA0\x80",
                                                  "\xC0\x80", "\x80", "\xBF\xBF", "\xF4\x90\x80\x80", "\xE0\x80\x80"};
    std::vector<std::string> lines = {"", " ", "  ", "\t", "a", " a", "a ", "  a  b   c  ", "\t\tx\t", "   leading",
                                      "trailing   ", "▁", "▁▁x", " ▁ ", "<s>", "<unk>", "</s>x", "<image>",
                                      "\xEF\xBF\xBD", "\xFF", "\xE2\x82\xACx", "\xE2\x82x", "0123456789",
                                      "99999999999999999999999", "x\x01y\x7Fz", "\x1b[31mred\x1b[0m"};
    while (lines.size() < count) {
        std::string line;
        const size_t kind = pick(6);
        const size_t length = 1 + pick(kind == 5 ? 3 : 25);
        for (size_t i = 0; i < length; ++i) {
            if (kind == 0 || (kind <= 2 && pick(3) > 0)) {  // words with varied spacing
                const size_t sp = pick(10);
                line += sp < 6 ? " " : sp < 8 ? "" : sp == 8 ? "   " : "\t ";
                line += words[pick(words.size())];
            } else if (kind == 1 || kind == 3) {  // random code points
                const auto& block = blocks[pick(blocks.size())];
                uint32_t cp = block.first + static_cast<uint32_t>(pick(block.second - block.first + 1));
                if (cp == '\n' || cp == '\r') cp = ' ';
                line += utf8(cp);
                if (pick(5) == 0) line += ' ';
            } else if (kind == 2 || kind == 4) {  // digits, punctuation runs, spaces, invalid bytes
                const size_t what = pick(6);
                if (what == 0) line += std::to_string(rng());
                else if (what == 1) line += invalidUtf8[pick(invalidUtf8.size())];
                else if (what == 2) line += std::string(1 + pick(4), " .,;:!?-_=+*/\\|@#%^&"[pick(21)]);
                else if (what == 3) line += std::string(1 + pick(5), ' ');
                else line += words[pick(words.size())];
            } else {  // long runs of one character
                line += std::string(1 + pick(40), " x9-"[pick(4)]);
            }
        }
        lines.push_back(line);
    }
    return lines;
}

// Runs a SentencePiece command-line tool with `lines` on stdin; returns its stdout lines.
std::vector<std::string> runSpmTool(const QString& tool, const QStringList& args, const std::vector<std::string>& lines) {
    QByteArray input;
    for (const std::string& l : lines) input += qbytes(l) + '\n';
    QProcess p;
    p.start(tool, args);
    if (!p.waitForStarted(30000)) {
        QTest::qFail(qPrintable(tool + " could not be started (is sentencepiece installed?)"), __FILE__, __LINE__);
        return {};
    }
    p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(300000);
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        QTest::qFail(qPrintable(tool + " failed: " + QString::fromUtf8(p.readAllStandardError().right(2000))), __FILE__, __LINE__);
        return {};
    }
    std::vector<std::string> out;
    QList<QByteArray> parts = p.readAllStandardOutput().split('\n');
    if (!parts.isEmpty() && parts.back().isEmpty()) parts.pop_back();
    for (const QByteArray& part : parts) out.push_back(part.toStdString());
    return out;
}

std::string streamDecode(const Tokenizer& tok, const std::vector<int64_t>& ids) {
    StreamingDetokenizer d(tok);
    std::string text;
    for (int64_t id : ids) text += d.push(id);
    return text + d.finish();
}


void writeFile(const QString& path, const std::string& bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << bytes;
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private:
    std::optional<Tokenizer> tok_;
    std::vector<std::string> corpus_;
    nlohmann::json summary_;

    const Tokenizer& tok() const { return *tok_; }
    void compareWithSpm(const Tokenizer& t, const std::string& modelPath, const std::vector<std::string>& lines,
                        const char* label);

private slots:
    void initTestCase();
    void vocabularyAndSpecialIds();
    void referencePromptIds();
    void referenceGreedyDecode();
    void hfDocumentedExamples();
    void nonLegacyConfig();
    void corpusMatchesSpmEncodeAndDecode();
    void trainedModelsMatchSpm();
    void streamingEqualsDecode();
    void streamingHoldsBackSplitCharacters();
};

void TestTokenizer::initTestCase() {
    QVERIFY2(!QStandardPaths::findExecutable("spm_encode").isEmpty(),
             "spm_encode is not on PATH: install the sentencepiece command-line tools (the project's install script does)");
    QVERIFY2(!QStandardPaths::findExecutable("spm_decode").isEmpty(), "spm_decode is not on PATH");
    QVERIFY2(!QStandardPaths::findExecutable("spm_train").isEmpty(), "spm_train is not on PATH");
    tok_ = Tokenizer::loadFromDirectory(kModelDir);
    std::ifstream in(kReferenceDir + "/expected/summary.json");
    QVERIFY2(in.good(), qPrintable(QString::fromStdString("cannot read " + kReferenceDir + "/expected/summary.json")));
    summary_ = nlohmann::json::parse(in);
    corpus_ = makeCorpus(1234, 400);
}

void TestTokenizer::vocabularyAndSpecialIds() {
    QCOMPARE(tok().sentencePieceSize(), int64_t(32000));
    QCOMPARE(tok().vocabSize(), int64_t(32002));
    QCOMPARE(tok().bosId(), int64_t(1));
    QCOMPARE(tok().eosId(), int64_t(2));
    QCOMPARE(tok().unkId(), int64_t(0));
    QCOMPARE(tok().imageTokenId(), int64_t(32000));
    QCOMPARE(tok().padId(), int64_t(32001));
    QVERIFY(tok().addBosToken());
    QVERIFY(!tok().addEosToken());
    QVERIFY(tok().legacy());
    QCOMPARE(qbytes(tok().piece(29871)), QByteArray("\xE2\x96\x81"));
    QCOMPARE(qbytes(tok().piece(13)), QByteArray("<0x0A>"));
    QCOMPARE(qbytes(tok().piece(32000)), QByteArray("<image>"));
    QCOMPARE(tok().pieceToId("<image>"), int64_t(32000));
    QCOMPARE(tok().pieceToId("<pad>"), int64_t(32001));
    QCOMPARE(tok().pieceToId("\xE2\x96\x81the"), int64_t(278));
    QCOMPARE(tok().pieceToId("no such piece"), int64_t(-1));
    for (int64_t id : {0, 1, 2, 32000, 32001}) QVERIFY2(tok().isSpecial(id), qPrintable(QString::number(id)));
    for (int64_t id : {3, 13, 278, 29871, 31999, 32002, -1}) QVERIFY2(!tok().isSpecial(id), qPrintable(QString::number(id)));
    QVERIFY(errorOf([&] { tok().piece(32002); }).find("32002") != std::string::npos);
    QVERIFY(errorOf([&] { tok().piece(-1); }).find("out of range") != std::string::npos);
    QVERIFY(errorOf([&] { tok().decode({1, 40000}); }).find("40000") != std::string::npos);
    QVERIFY(errorOf([&] { StreamingDetokenizer d(tok()); d.push(32064); }).find("32064") != std::string::npos);
    QVERIFY(tok().encodeSentencePiece("").empty());
    QCOMPARE(qbytes(joinIds(tok().encode("", true))), QByteArray("1"));
    QCOMPARE(qbytes(joinIds(tok().encode("", false))), QByteArray(""));
    // Copies share the immutable tables.
    const Tokenizer copy = tok();
    QCOMPARE(qbytes(joinIds(copy.encode("USER: hi"))), qbytes(joinIds(tok().encode("USER: hi"))));
}

void TestTokenizer::referencePromptIds() {
    QCOMPARE(summary_["cases"].size(), size_t(3));
    for (const auto& c : summary_["cases"]) {
        const auto want = c["input_ids_unexpanded"].get<std::vector<int64_t>>();
        const auto got = tok().encode(c["prompt"].get<std::string>(), true);
        QCOMPARE(qbytes(joinIds(got)), qbytes(joinIds(want)));
    }
    // The ids stated in the brief, explicitly.
    QCOMPARE(qbytes(joinIds(tok().encode("USER: <image>\nWhat is shown in this image?\nASSISTANT:"))),
             QByteArray("1 3148 1001 29901 29871 32000 29871 13 5618 338 4318 297 445 1967 29973 13 22933 9047 13566 29901"));
    QCOMPARE(qbytes(joinIds(tok().encode("USER: Write a short poem about the sea.\nASSISTANT:"))),
             QByteArray("1 3148 1001 29901 14350 263 3273 26576 1048 278 7205 29889 13 22933 9047 13566 29901"));
}

void TestTokenizer::referenceGreedyDecode() {
    for (const auto& c : summary_["cases"]) {
        const auto greedy = c["greedy_ids"].get<std::vector<int64_t>>();
        QCOMPARE(qbytes(tok().decode(greedy, true)), qbytes(c["greedy_text"].get<std::string>()));
        QCOMPARE(qbytes(tok().decode(greedy, false)), qbytes(c["greedy_text_with_special"].get<std::string>()));
        QCOMPARE(qbytes(streamDecode(tok(), greedy)), qbytes(c["greedy_text"].get<std::string>()));
        // The whole sequence (prompt with the image token expanded to 576 copies, then the reply).
        std::vector<int64_t> full;
        for (int64_t id : c["input_ids_unexpanded"].get<std::vector<int64_t>>()) {
            if (id == 32000) full.insert(full.end(), c["n_image_tokens"].get<size_t>(), id);
            else full.push_back(id);
        }
        full.insert(full.end(), greedy.begin(), greedy.end());
        QCOMPARE(qbytes(tok().decode(full, true)), qbytes(c["full_text_skip_special"].get<std::string>()));
        QCOMPARE(qbytes(streamDecode(tok(), full)), qbytes(c["full_text_skip_special"].get<std::string>()));
    }
    // <0xFE> alone is invalid UTF-8 and becomes U+FFFD.
    QCOMPARE(qbytes(tok().decode({773, 23104, 29591, 14713, 104, 11868, 5415, 6769, 17559, 1990, 3828, 14961, 1063, 31218,
                                  29735, 31324, 257, 16799, 11601, 1935})),
             QByteArray("using gdzie periodic EricePaobj Governtzclassства gram beenয sheepា\xEF\xBF\xBD" "franNU ter"));
}

// Expectations from transformers' own tests of the slow LlamaTokenizer (same 32000 pieces).
void TestTokenizer::hfDocumentedExamples() {
    const auto ids = [&](const std::string& s) { return qbytes(joinIds(tok().encode(s))); };
    QCOMPARE(ids("This is a test"), QByteArray("1 910 338 263 1243"));
    QCOMPARE(qbytes(tok().decode({1, 910, 338, 263, 1243})), QByteArray("This is a test"));
    QCOMPARE(ids("生活的真谛是"), QByteArray("1 29871 30486 31704 30210 30848 235 179 158 30392"));
    QCOMPARE(qbytes(tok().decode({1, 29871, 30486, 31704, 30210, 30848, 235, 179, 158, 30392})), qbytes("生活的真谛是"));
    QCOMPARE(ids("Hi  Hello"), QByteArray("1 6324 29871 15043"));
    QCOMPARE(qbytes(tok().decode({1, 6324, 29871, 15043})), QByteArray("Hi  Hello"));
    QCOMPARE(ids("Hi   Hello"), QByteArray("1 6324 259 15043"));
    QCOMPARE(ids(" "), QByteArray("1 259"));
    QCOMPARE(ids("  "), QByteArray("1 1678"));
    QCOMPARE(ids(" Hello"), QByteArray("1 29871 15043"));
    QCOMPARE(ids("<s>"), QByteArray("1 1"));
    QCOMPARE(ids("Hello <s>."), QByteArray("1 15043 29871 1 869"));
    QCOMPARE(ids("The following string should be properly encoded: Hello."),
             QByteArray("1 450 1494 1347 881 367 6284 18511 29901 15043 29889"));
    QCOMPARE(qbytes(tok().decode({869}, false)), QByteArray("."));
    QCOMPARE(qbytes(tok().decode({30112, 869}, false)), qbytes("ا ."));
    // With special tokens kept: HF's spacing around split-off added tokens.
    QCOMPARE(qbytes(tok().decode(tok().encode("USER: <image>\nHi"), false)), QByteArray("<s>USER:  <image> \nHi"));
}

void TestTokenizer::nonLegacyConfig() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QFile::copy(QString::fromStdString(kModelFile), dir.filePath("tokenizer.model")));
    writeFile(dir.filePath("tokenizer_config.json"), R"({"legacy": false})");
    const Tokenizer nl = Tokenizer::loadFromDirectory(dir.path().toStdString());
    QVERIFY(!nl.legacy());
    const auto ids = [&](const std::string& s, bool bos) { return qbytes(joinIds(nl.encode(s, bos))); };
    QCOMPARE(ids("Hello <s>.", true), QByteArray("1 15043 29871 1 29889"));
    QCOMPARE(ids("<s>>", false), qbytes("1 " + std::to_string(nl.pieceToId(">"))));
    QCOMPARE(ids(" ", false), QByteArray("259"));
    QCOMPARE(ids("\xE2\x96\x81", false), QByteArray("259"));
    QCOMPARE(ids(" \xE2\x96\x81", false), QByteArray("1678"));
    QCOMPARE(ids("Hey how are you doing", true), QByteArray("1 18637 920 526 366 2599"));
    QCOMPARE(ids("<s> Hello<s>how", false), QByteArray("1 15043 1 3525"));
    QCOMPARE(qbytes(nl.decode({1, 15043, 1, 3525}, false)), QByteArray("<s> Hello<s>how"));
    QCOMPARE(qbytes(nl.decode({1, 22172}, false)), QByteArray("<s> hello"));
    QCOMPARE(qbytes(nl.decode({1, 18637, 920, 526, 366, 2599})), QByteArray("Hey how are you doing"));

    writeFile(dir.filePath("tokenizer_config.json"), R"({"legacy": false, "add_prefix_space": false, "add_eos_token": true})");
    const Tokenizer np = Tokenizer::loadFromDirectory(dir.path().toStdString());
    QCOMPARE(qbytes(joinIds(np.encode("Hey how are you doing"))), QByteArray("1 29950 1032 920 526 366 2599 2"));
    QCOMPARE(qbytes(np.decode({1, 29950, 1032, 920, 526, 366, 2599})), QByteArray("Hey how are you doing"));
    QCOMPARE(qbytes(np.decode({1, 12199}, false)), QByteArray("<s>hello"));
}

void TestTokenizer::compareWithSpm(const Tokenizer& t, const std::string& modelPath, const std::vector<std::string>& lines,
                                   const char* label) {
    const QString model = "--model=" + QString::fromStdString(modelPath);
    const auto expected = runSpmTool("spm_encode", {model, "--output_format=id"}, lines);
    QCOMPARE(expected.size(), lines.size());
    std::vector<std::string> idLines;
    size_t identical = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
        idLines.push_back(joinIds(t.encodeSentencePiece(lines[i])));
        if (idLines.back() == expected[i]) ++identical;
        else qWarning("%s line %zu [%s]\n  spm_encode: %s\n  ours:       %s", label, i, lines[i].c_str(), expected[i].c_str(), idLines.back().c_str());
    }
    QCOMPARE(identical, lines.size());

    const auto decoded = runSpmTool("spm_decode", {model, "--input_format=id"}, idLines);
    QCOMPARE(decoded.size(), lines.size());
    size_t same = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
        const auto ids = t.encodeSentencePiece(lines[i]);
        const std::string ours = t.decodeSentencePiece(ids);
        if (ours == decoded[i]) ++same;
        else qWarning("%s decode line %zu\n  spm_decode: [%s]\n  ours:       [%s]", label, i, decoded[i].c_str(), ours.c_str());
        // The HF decode equals spm_decode except that it may drop more leading spaces (it strips the
        // first token's "▁" itself, then SentencePiece strips one more) and drops <unk> (special).
        if (std::find(ids.begin(), ids.end(), t.unkId()) == ids.end()) {
            const std::string hf = t.decode(ids, true);
            const std::string& spm = decoded[i];
            const bool ok = spm.size() >= hf.size() && spm.compare(spm.size() - hf.size(), hf.size(), hf) == 0 &&
                            spm.find_first_not_of(' ') >= spm.size() - hf.size();
            QVERIFY2(ok, qPrintable(QString("%1 line %2: HF decode [%3] vs spm_decode [%4]").arg(label).arg(i)
                                        .arg(QString::fromStdString(hf), QString::fromStdString(spm))));
        }
    }
    QCOMPARE(same, lines.size());
    qInfo("%s: %zu/%zu lines identical to spm_encode and spm_decode", label, identical, lines.size());
}

void TestTokenizer::corpusMatchesSpmEncodeAndDecode() {
    QVERIFY(corpus_.size() >= 300);
    compareWithSpm(tok(), kModelFile, corpus_, "llama");
    // Random id sequences (byte pieces, "▁", control and unknown pieces) decode like spm_decode.
    std::mt19937 rng(7);
    std::vector<std::vector<int64_t>> soups;
    std::vector<std::string> soupLines;
    for (int i = 0; i < 300; ++i) {
        std::vector<int64_t> ids;
        for (int k = 1 + int(rng() % 30); k > 0; --k) {
            int64_t id = 0;
            switch (rng() % 5) {
            case 0: id = 3 + rng() % 256; break;          // byte pieces
            case 1: id = rng() % 3; break;                // <unk> <s> </s>
            case 2: id = 29871; break;                    // "▁"
            case 3: id = 3 + 0xE2 + rng() % 2; break;     // lead/continuation bytes
            default: id = rng() % 32000;
            }
            if (id != 13 && id != 16) ids.push_back(id);  // no '\n' / '\r': spm_decode is line based
        }
        soupLines.push_back(joinIds(ids));
        soups.push_back(ids);
    }
    const auto decoded = runSpmTool("spm_decode", {"--model=" + QString::fromStdString(kModelFile), "--input_format=id"}, soupLines);
    QCOMPARE(decoded.size(), soups.size());
    for (size_t i = 0; i < soups.size(); ++i)
        QCOMPARE(qbytes(tok().decodeSentencePiece(soups[i])), qbytes(decoded[i]));
}

void TestTokenizer::trainedModelsMatchSpm() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    std::mt19937 rng(11);
    const std::vector<std::string> words = {"the", "quick", "brown", "fox", "über", "Straße", "привет", "你好", "世界",
                                            "😀", "12345", "foo_bar(x,", "y);", "a", "an", "and", "tokenizer", "café"};
    std::string text;
    for (int i = 0; i < 3000; ++i) {
        for (int k = 3 + int(rng() % 12); k > 0; --k) text += words[rng() % words.size()] + (rng() % 7 ? " " : "  ");
        text += "\n";
    }
    writeFile(dir.filePath("train.txt"), text);
    struct Variant { const char* name; QStringList extra; };
    const std::vector<Variant> variants = {
        {"keep_ws", {"--remove_extra_whitespaces=false"}},
        {"remove_ws", {"--remove_extra_whitespaces=true"}},
        {"no_dummy", {"--remove_extra_whitespaces=false", "--add_dummy_prefix=false"}},
        {"user_defined", {"--remove_extra_whitespaces=false", "--user_defined_symbols=<image>,foo_bar", "--control_symbols=<ctl>"}},
    };
    for (const Variant& v : variants) {
        const QString sub = dir.filePath(v.name);
        QVERIFY(QDir().mkpath(sub));
        QStringList args = {"--input=" + dir.filePath("train.txt"), "--model_prefix=" + sub + "/tokenizer", "--model_type=bpe",
                            "--byte_fallback=true", "--normalization_rule_name=identity", "--vocab_size=400",
                            "--character_coverage=0.99", "--minloglevel=2"};
        args += v.extra;
        QProcess p;
        p.start("spm_train", args);
        QVERIFY2(p.waitForFinished(300000) && p.exitCode() == 0,
                 qPrintable(QString("spm_train %1 failed: %2").arg(v.name, QString::fromUtf8(p.readAllStandardError().right(2000)))));
        const Tokenizer t = Tokenizer::loadFromDirectory(sub.toStdString());
        compareWithSpm(t, (sub + "/tokenizer.model").toStdString(), corpus_, v.name);
    }
}

void TestTokenizer::streamingEqualsDecode() {
    size_t identical = 0;
    for (const std::string& line : corpus_) {
        const auto ids = tok().encode("USER: <image>\n" + line + "\nASSISTANT:", true);
        if (streamDecode(tok(), ids) == tok().decode(ids, true)) ++identical;
        else qWarning("streaming differs for [%s]", line.c_str());
        const auto plain = tok().encode(line, false);
        if (streamDecode(tok(), plain) != tok().decode(plain, true)) qWarning("streaming differs (no BOS) for [%s]", line.c_str());
        else ++identical;
    }
    QCOMPARE(identical, 2 * corpus_.size());
    // Random generated-looking sequences, with specials and split-off tokens sprinkled in.
    std::mt19937 rng(5);
    for (int i = 0; i < 500; ++i) {
        std::vector<int64_t> ids;
        for (int k = 1 + int(rng() % 40); k > 0; --k) {
            switch (rng() % 6) {
            case 0: ids.push_back(3 + rng() % 256); break;
            case 1: ids.push_back(rng() % 3); break;
            case 2: ids.push_back(29871); break;
            case 3: ids.push_back(32000 + rng() % 2); break;
            case 4: ids.push_back(3 + 0xF0 + rng() % 2); break;
            default: ids.push_back(rng() % 32000);
            }
        }
        QCOMPARE(qbytes(streamDecode(tok(), ids)), qbytes(tok().decode(ids, true)));
    }
}

void TestTokenizer::streamingHoldsBackSplitCharacters() {
    StreamingDetokenizer d(tok());
    const auto byteId = [&](const char* piece) { return tok().pieceToId(piece); };
    QCOMPARE(qbytes(d.push(tok().pieceToId("\xE2\x96\x81" "Hi"))), QByteArray("Hi"));  // dummy-prefix space dropped
    // U+1F99C (parrot), F0 9F A6 9C, fed byte by byte: nothing until the last byte.
    QCOMPARE(qbytes(d.push(byteId("<0xF0>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0x9F>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0xA6>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0x9C>"))), QByteArray("\xF0\x9F\xA6\x9C"));
    // A lead byte followed by a non-continuation byte: U+FFFD as soon as that is certain.
    QCOMPARE(qbytes(d.push(byteId("<0xE2>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0x41>"))), QByteArray("\xEF\xBF\xBD" "A"));
    // A lone continuation byte can never become valid: emitted at once.
    QCOMPARE(qbytes(d.push(byteId("<0x80>"))), QByteArray("\xEF\xBF\xBD"));
    // Special tokens vanish and do not break up a byte sequence (HF drops them first).
    QCOMPARE(qbytes(d.push(byteId("<0xE2>"))), QByteArray());
    QCOMPARE(qbytes(d.push(tok().eosId())), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0x82>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0xAC>"))), QByteArray("\xE2\x82\xAC"));
    // An ordinary piece ends a byte run: the incomplete bytes are replaced one by one.
    QCOMPARE(qbytes(d.push(byteId("<0xE2>"))), QByteArray());
    QCOMPARE(qbytes(d.push(byteId("<0x82>"))), QByteArray());
    QCOMPARE(qbytes(d.push(tok().pieceToId("\xE2\x96\x81the"))), QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD the"));
    // finish() flushes what is held back.
    QCOMPARE(qbytes(d.push(byteId("<0xF0>"))), QByteArray());
    QCOMPARE(qbytes(d.finish()), QByteArray("\xEF\xBF\xBD"));
    // After finish() the detokenizer starts a new sequence (leading space dropped again).
    QCOMPARE(qbytes(d.push(tok().pieceToId("\xE2\x96\x81the"))), QByteArray("the"));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
