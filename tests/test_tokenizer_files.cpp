// Tests for core/text's SentencePiece model reader on files built here: a hand-built model (merge
// order, unknown runs, decoding) and broken or unsupported model directories, each refused with an
// error that names the file and what was wrong. The reference tokenizer and SentencePiece's own
// tools are in test_tokenizer.
#include "TestSupport.h"  // torch headers before Qt
#include "Error.h"
#include "text/Tokenizer.h"

#include <QtTest>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using kvsteer::Tokenizer;

namespace {

using kvsteer::test::errorOf;

const std::string kReferenceDir = KVSTEER_REFERENCE_DIR;
const std::string kModelFile = kReferenceDir + "/tiny-llava/tokenizer.model";

QByteArray qbytes(const std::string& s) { return QByteArray::fromStdString(s); }

std::string joinIds(const std::vector<int64_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
    return s;
}


void writeFile(const QString& path, const std::string& bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << bytes;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Minimal protobuf writer, to build small SentencePiece models by hand.
std::string pbVarint(uint64_t v) {
    std::string s;
    do {
        const auto byte = static_cast<unsigned char>(v & 0x7F);
        v >>= 7;
        s += static_cast<char>(v ? (byte | 0x80) : byte);
    } while (v);
    return s;
}
std::string pbBytes(uint32_t field, const std::string& payload) { return pbVarint(field << 3 | 2) + pbVarint(payload.size()) + payload; }
std::string pbInt(uint32_t field, uint64_t v) { return pbVarint(field << 3) + pbVarint(v); }
std::string pbFloat(uint32_t field, float f) {
    std::string s = pbVarint(field << 3 | 5);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int i = 0; i < 4; ++i) s += static_cast<char>((bits >> (8 * i)) & 0xFF);
    return s;
}
std::string pbPiece(const std::string& text, float score, int type) {
    return pbBytes(1, pbBytes(1, text) + pbFloat(2, score) + pbInt(3, static_cast<uint64_t>(type)));
}

// <unk> <s> </s> ▁ a b ▁a ab — BPE, identity normalizer, no byte fallback.
std::string tinyModel(int modelType = 2, const std::string& charsmap = "") {
    std::string m = pbPiece("<unk>", 0, 2) + pbPiece("<s>", 0, 3) + pbPiece("</s>", 0, 3) + pbPiece("\xE2\x96\x81", -0.5f, 1) +
                    pbPiece("a", -0.1f, 1) + pbPiece("b", -0.2f, 1) + pbPiece("\xE2\x96\x81" "a", -1, 1) + pbPiece("ab", -2, 1);
    m += pbBytes(2, pbInt(3, static_cast<uint64_t>(modelType)));
    m += pbBytes(3, pbBytes(1, charsmap.empty() ? "identity" : "nmt_nfkc") + pbBytes(2, charsmap) + pbInt(3, 1) + pbInt(4, 0));
    return m;
}

} // namespace

class TestTokenizerFiles : public QObject {
    Q_OBJECT

private slots:
    void handBuiltModel();
    void errorMissingModel();
    void errorCorruptModel();
    void errorUnsupportedModel();
    void errorBadAddedTokensJson();
    void errorBadTokenizerConfig();
};

void TestTokenizerFiles::handBuiltModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.filePath("tokenizer.model"), tinyModel());
    const Tokenizer t = Tokenizer::loadFromDirectory(dir.path().toStdString());
    QCOMPARE(t.vocabSize(), int64_t(8));
    // "▁ab▁a": the best merge is "▁a" (leftmost of two equal scores), which makes the pending
    // "ab" stale; then the second "▁a". Result ▁a b ▁a.
    QCOMPARE(qbytes(joinIds(t.encodeSentencePiece("ab a"))), QByteArray("6 5 6"));
    // Without byte fallback a run of unknown characters becomes one <unk>.
    QCOMPARE(qbytes(joinIds(t.encodeSentencePiece("ccc a"))), QByteArray("3 0 6"));
    QCOMPARE(qbytes(t.decodeSentencePiece({3, 0, 6})), QByteArray(" \xE2\x81\x87  a"));
    QCOMPARE(qbytes(t.decode({1, 6, 5, 6, 2})), QByteArray("ab a"));
}

void TestTokenizerFiles::errorMissingModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.path().toStdString();
    const std::string msg = errorOf([&] { Tokenizer::loadFromDirectory(path); });
    QVERIFY2(msg.find("missing tokenizer") != std::string::npos && msg.find(path + "/tokenizer.model") != std::string::npos, msg.c_str());
    const std::string msg2 = errorOf([&] { Tokenizer::loadFromDirectory(path + "/does-not-exist"); });
    QVERIFY2(msg2.find("does not exist") != std::string::npos, msg2.c_str());
}

void TestTokenizerFiles::errorCorruptModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString model = dir.filePath("tokenizer.model");
    const std::string original = readFile(kModelFile);
    QVERIFY(original.size() > 100000);
    const auto loadError = [&](const std::string& bytes) {
        writeFile(model, bytes);
        return errorOf([&] { Tokenizer::loadFromDirectory(dir.path().toStdString()); });
    };
    // Truncated in the middle of a piece, of the trainer spec, or after a few bytes.
    for (size_t cut : {size_t(1), size_t(7), size_t(1000), original.size() / 2, original.size() - 5}) {
        const std::string msg = loadError(original.substr(0, cut));
        QVERIFY2(msg.find("tokenizer.model at " + model.toStdString()) != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("not a SentencePiece model") != std::string::npos, msg.c_str());
    }
    // A JSON file, random bytes and an empty file.
    for (const std::string& junk : {std::string("{\"pieces\": []}"), std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 11), std::string()}) {
        const std::string msg = loadError(junk);
        QVERIFY2(msg.find("not a SentencePiece model") != std::string::npos, msg.c_str());
    }
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) {  // never a crash: either it loads or it throws kvsteer::Error
        std::string bytes = original.substr(0, 4000 + rng() % 4000);
        for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] = char(rng());
        writeFile(model, bytes);
        try {
            Tokenizer::loadFromDirectory(dir.path().toStdString());
        } catch (const kvsteer::Error&) {
        }
    }
}

void TestTokenizerFiles::errorUnsupportedModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto loadError = [&](const std::string& bytes) {
        writeFile(dir.filePath("tokenizer.model"), bytes);
        return errorOf([&] { Tokenizer::loadFromDirectory(dir.path().toStdString()); });
    };
    std::string msg = loadError(tinyModel(1));
    QVERIFY2(msg.find("UNIGRAM") != std::string::npos && msg.find("only BPE") != std::string::npos, msg.c_str());
    msg = loadError(tinyModel(2, std::string("\x04\x00\x00\x00xxxxyy", 10)));
    QVERIFY2(msg.find("precompiled_charsmap") != std::string::npos && msg.find("identity") != std::string::npos, msg.c_str());
    msg = loadError(pbPiece("a", 0, 1) + pbBytes(2, pbInt(3, 2)));
    QVERIFY2(msg.find("UNKNOWN piece") != std::string::npos, msg.c_str());
    msg = loadError(pbPiece("<unk>", 0, 2) + pbPiece("a", 0, 1) + pbPiece("a", 0, 1) + pbBytes(2, pbInt(3, 2)));
    QVERIFY2(msg.find("defined twice") != std::string::npos, msg.c_str());
    msg = loadError(pbPiece("<unk>", 0, 2) + pbPiece("<0x41>", 0, 6) + pbBytes(2, pbInt(3, 2) + pbInt(35, 1)));
    QVERIFY2(msg.find("256 byte pieces") != std::string::npos, msg.c_str());
}

void TestTokenizerFiles::errorBadAddedTokensJson() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QFile::copy(QString::fromStdString(kModelFile), dir.filePath("tokenizer.model")));
    const auto loadError = [&](const std::string& json) {
        writeFile(dir.filePath("added_tokens.json"), json);
        return errorOf([&] { Tokenizer::loadFromDirectory(dir.path().toStdString()); });
    };
    std::string msg = loadError("{\"<image>\": 32000,");
    QVERIFY2(msg.find("added_tokens.json") != std::string::npos && msg.find("invalid JSON") != std::string::npos, msg.c_str());
    msg = loadError("[\"<image>\"]");
    QVERIFY2(msg.find("added_tokens.json") != std::string::npos && msg.find("object") != std::string::npos, msg.c_str());
    msg = loadError("{\"<image>\": \"32000\"}");
    QVERIFY2(msg.find("\"<image>\"") != std::string::npos && msg.find("integer") != std::string::npos, msg.c_str());
    msg = loadError("{\"<image>\": -5}");
    QVERIFY2(msg.find("non-negative") != std::string::npos, msg.c_str());
    // A good one (no tokenizer_config.json here, so HF would use it).
    QVERIFY(loadError("{\"<image>\": 32000, \"<pad>\": 32001}").empty());
    const Tokenizer t = Tokenizer::loadFromDirectory(dir.path().toStdString());
    QCOMPARE(t.imageTokenId(), int64_t(32000));
    QCOMPARE(t.padId(), int64_t(32001));
    QCOMPARE(t.vocabSize(), int64_t(32002));
}

void TestTokenizerFiles::errorBadTokenizerConfig() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QFile::copy(QString::fromStdString(kModelFile), dir.filePath("tokenizer.model")));
    const auto loadError = [&](const std::string& json) {
        writeFile(dir.filePath("tokenizer_config.json"), json);
        return errorOf([&] { Tokenizer::loadFromDirectory(dir.path().toStdString()); });
    };
    std::string msg = loadError("not json");
    QVERIFY2(msg.find("tokenizer_config.json") != std::string::npos && msg.find("invalid JSON") != std::string::npos, msg.c_str());
    msg = loadError(R"({"add_bos_token": "yes"})");
    QVERIFY2(msg.find("add_bos_token") != std::string::npos, msg.c_str());
    msg = loadError(R"({"added_tokens_decoder": {"x": {"content": "<image>"}}})");
    QVERIFY2(msg.find("added_tokens_decoder") != std::string::npos && msg.find("\"x\"") != std::string::npos, msg.c_str());
    msg = loadError(R"({"added_tokens_decoder": {"32000": {"special": true}}})");
    QVERIFY2(msg.find("content") != std::string::npos, msg.c_str());
    msg = loadError(R"({"bos_token": ""})");  // an empty token would match everywhere
    QVERIFY2(msg.find("bos_token") != std::string::npos && msg.find("non-empty") != std::string::npos, msg.c_str());
    msg = loadError(R"({"additional_special_tokens": "<image>"})");
    QVERIFY2(msg.find("additional_special_tokens") != std::string::npos, msg.c_str());
}

QTEST_GUILESS_MAIN(TestTokenizerFiles)
#include "test_tokenizer_files.moc"
