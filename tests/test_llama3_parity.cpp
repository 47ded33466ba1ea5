// Parity with Hugging Face transformers' own Llama-3 (LlamaForCausalLM) on tiny-llama3: the real
// 128k tokenizer, the checkpoint's chat template (with and without a system message, several
// turns, Llama-3.1's knowledge-date system block), llama3 RoPE scaling with all three frequency
// bands, GQA, a tied head and eos_token_id as a list. On every case: ids identical, embeddings,
// hidden states and K/V within 1e-4 relative, logits within 1e-3, cache reuse equal to the full
// prefill, 20 greedy ids identical, rope_inv_freq within 1e-6. A bfloat16 copy in three shards
// with an untied head and a trimmed config gives, on every case, what float32 gives on the same
// rounded weights (those are not the reference's: bfloat16 rounding moves a random model's
// logits by more than the tolerances). And through the CLI: `generate --system` and `tokenize`.
#include "TestSupport.h"
#include "Error.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "models/llama3/Llama3ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;
using json = nlohmann::json;

namespace {

const json& tokenizerReference() {
    static const json j = [] {
        std::ifstream in(referenceDir() + "/expected-llama3/tokenizer_ref.json");
        return json::parse(in);
    }();
    return j;
}

// How each case's prompt is made: the template with a question (and a system message), or the
// reference's rendered text given raw.
struct CasePrompt {
    std::string question, system;
    int rawChat = -1;   // index into tokenizer_ref.json's "chat" when raw
};
const std::map<std::string, CasePrompt>& casePrompts() {
    static const std::map<std::string, CasePrompt> cases = {
        {"chat_user", {"What color is the circle?", "", -1}},
        {"chat_system", {"Tell me about the weather", "You are a terse assistant.", -1}},
        {"chat_multi_turn", {"", "", 2}},
        {"llama31_preamble", {"", "", 3}},
    };
    return cases;
}

void writeTemplateDir(const std::string& dir, const std::string& chatTemplate) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/tokenizer_config.json") << json{{"bos_token", "<|begin_of_text|>"}, {"chat_template", chatTemplate}}.dump();
}

} // namespace

class TestLlama3Parity : public QObject {
    Q_OBJECT
    ReferenceCases ref_{"expected-llama3"};
    QTemporaryDir tmp_;
    // f32: the reference; rounded: float32 on bfloat16-rounded weights; bf16: the sharded copy of those.
    std::map<std::string, std::shared_ptr<Model>> models_, withSystem_;

    Prompt promptFor(const std::string& variant, const std::string& caseName) {
        const CasePrompt& c = casePrompts().at(caseName);
        if (c.rawChat >= 0) return buildPrompt(*models_[variant], tokenizerReference()["chat"][c.rawChat]["text"], true, nullptr);
        const auto& models = c.system.empty() ? models_ : withSystem_;
        return buildPrompt(*models.at(variant), c.question, false, nullptr);
    }

    static void addRows() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("variant");
        for (const char* v : {"f32", "bf16"})
            for (const auto& [c, unused] : casePrompts()) QTest::newRow((c + "/" + v).c_str()) << QString::fromStdString(c) << QString(v);
    }

    // The expected tensors of a case for a variant: the reference's for f32; for bf16, the same
    // computation on float32 with the rounded weights.
    struct Expected {
        at::Tensor hidden, logits;
        std::vector<at::Tensor> keys, values;
    };
    Expected computed(const Model& model, const Prompt& p) {
        const TextConfig& t = model.config().text;
        KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, int64_t(p.ids.size()), at::kFloat);
        Expected e;
        e.hidden = model.decoder().forward(model.embedPrompt(p.ids, at::Tensor()), cache);
        e.logits = model.decoder().logits(e.hidden.select(1, e.hidden.size(1) - 1));
        for (int l = 0; l < t.numLayers; ++l) {
            e.keys.push_back(cache.keys(l).clone());
            e.values.push_back(cache.values(l).clone());
        }
        return e;
    }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string rounded = tmp_.filePath("rounded").toStdString(), bf16 = tmp_.filePath("bf16").toStdString();
        writeConvertedLlama3(rounded, at::kFloat, int64_t(1) << 40, at::kBFloat16);
        writeConvertedLlama3(bf16, at::kBFloat16, 1 << 20);   // the embeddings | the layers | the head
        for (const auto& [name, dir] : std::map<std::string, std::string>{{"f32", referenceLlama3Dir()}, {"rounded", rounded}, {"bf16", bf16}}) {
            models_[name] = loadModel(dir);
            LoadOptions o;
            o.systemMessage = "You are a terse assistant.";
            withSystem_[name] = loadModel(dir, o);
        }
    }

    void familyAndConfig() {
        const Model& m = *models_["f32"];
        QCOMPARE(m.familyName(), std::string("Llama-3"));
        QVERIFY(!m.hasVision() && m.takesSystemMessage());
        const TextConfig& t = m.config().text;
        QCOMPARE(t.ropeScaling.type, std::string("llama3"));
        QCOMPARE(t.ropeScaling.factor, 8.0);
        QCOMPARE(t.ropeScaling.originalMaxPositions, int64_t(8192));
        QCOMPARE(t.eosTokenIds, (std::vector<int64_t>{128001, 128008, 128009}));
        QVERIFY(t.tieWordEmbeddings);
        const Model& b = *models_["bf16"];
        QCOMPARE(b.weightsDtype(), std::string("bfloat16"));
        QVERIFY(!b.config().text.tieWordEmbeddings);
        QVERIFY(b.config().configHash != m.config().configHash);   // untied: another model
        int shards = 0;
        for (const auto& e : std::filesystem::directory_iterator(tmp_.filePath("bf16").toStdString()))
            shards += e.path().extension() == ".safetensors";
        QCOMPARE(shards, 3);
        QVERIFY(m.describe().find("Llama-3 header layout from") != std::string::npos);   // inspect names the template
    }

    void ropeFrequencies() {
        for (const auto& [name, model] : models_) {
            const SafeTensorsFile expected(ref_.tensorsPath("chat_user"));
            const at::Tensor ref = expected.tensor("rope_inv_freq");
            QVERIFY2(relativeDiff(model->decoder().ropeInvFreq(), ref) <= 1e-6, name.c_str());
        }
    }

    void idsAndCache_data() { addRows(); }
    void idsAndCache() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const std::string c = caseName.toStdString(), v = variant.toStdString();
        const SafeTensorsFile expected(ref_.tensorsPath(c));
        const Prompt p = promptFor(v, c);
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        QCOMPARE(p.span.gridHeight, 1);   // text only: the token strip
        const Expected got = computed(*(casePrompts().at(c).system.empty() ? models_ : withSystem_)[v], p);
        if (v == "f32") {
            QVERIFY2(relativeDiff(got.hidden, expected.tensor("last_hidden_state")) <= 1e-4, "last_hidden_state");
            QVERIFY2(maxAbsDiff(got.logits, expected.tensor("prefill_last_logits")) <= 1e-3, "prefill_last_logits");
            for (size_t l = 0; l < got.keys.size(); ++l) {
                QVERIFY2(relativeDiff(got.keys[l], expected.tensor("past_key." + std::to_string(l))) <= 1e-4, "past_key");
                QVERIFY2(relativeDiff(got.values[l], expected.tensor("past_value." + std::to_string(l))) <= 1e-4, "past_value");
            }
            return;
        }
        const Expected twin = computed(*(casePrompts().at(c).system.empty() ? models_ : withSystem_)["rounded"], p);
        QVERIFY2(relativeDiff(got.hidden, twin.hidden) <= 1e-4, "last_hidden_state");
        QVERIFY2(maxAbsDiff(got.logits, twin.logits) <= 1e-3, "logits");
        for (size_t l = 0; l < got.keys.size(); ++l) {
            QVERIFY2(relativeDiff(got.keys[l], twin.keys[l]) <= 1e-4, "past_key");
            QVERIFY2(relativeDiff(got.values[l], twin.values[l]) <= 1e-4, "past_value");
        }
    }

    void cacheReuseAndGreedy_data() { addRows(); }
    void cacheReuseAndGreedy() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const std::string c = caseName.toStdString(), v = variant.toStdString();
        const SafeTensorsFile expected(ref_.tensorsPath(c));
        const auto& models = casePrompts().at(c).system.empty() ? models_ : withSystem_;
        Session session(models.at(v));
        session.prefill(promptFor(v, c), 20);
        KVCache cache = session.snapshot().clone();
        const at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        if (v == "f32") {
            QVERIFY2(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3, "cache_reuse.last_logits");
            QVERIFY2(maxAbsDiff(reuse, expected.tensor("prefill_last_logits").squeeze(0)) <= 1e-3, "= full prefill");
            const GreedyAgainstReference g = greedyAgainstReference(session, expected);
            QCOMPARE(g.ids, toIds(expected.tensor("greedy_ids")));
            QVERIFY2(g.worstTop5 <= 1e-3, ("top-5 logits differ by " + std::to_string(g.worstTop5)).c_str());
            return;
        }
        // bf16: the rounded float32 twin's own greedy run.
        Session twin(models.at("rounded"));
        twin.prefill(promptFor("rounded", c), 20);
        GenerationOptions g;
        g.maxNewTokens = 20;
        g.stopAtEos = false;
        QCOMPARE(session.generate(g).ids, twin.generate(g).ids);
    }

    // The template renders what HF's apply_chat_template renders; what it cannot render is an
    // error that points to a raw prompt, which still works.
    void chatTemplates() {
        const json& chat = tokenizerReference()["chat"];
        const Llama3ChatTemplate own = Llama3ChatTemplate::fromDirectory(referenceLlama3Dir());
        QVERIFY(own.recognised());
        std::vector<ChatMessage> turns;
        for (const json& m : chat[2]["messages"]) turns.push_back({m["role"], m["content"]});
        QCOMPARE(own.render(turns), chat[2]["text"].get<std::string>());   // three turns, the last one trimmed

        // Llama-3.1's layout: the knowledge-date block, written with and without a system message.
        const std::string dir31 = tmp_.filePath("template-3.1").toStdString();
        writeTemplateDir(dir31, "{{- bos_token }}{%- if not date_string is defined %}{%- set date_string = \"26 Jul 2024\" %}{%- endif %}"
                                "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}{{- \"Cutting Knowledge Date: December 2023\\n\" }}"
                                "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}{{- system_message }}{{- \"<|eot_id|>\" }}"
                                "{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
                                "message['content'] | trim + '<|eot_id|>' }}{%- endfor %}");
        const Llama3ChatTemplate t31 = Llama3ChatTemplate::fromDirectory(dir31);
        QVERIFY(t31.recognised());
        QCOMPARE(t31.render({{"user", "What color is the circle?"}}), chat[3]["text"].get<std::string>());
        QVERIFY(t31.render({{"system", " Be brief. "}, {"user", "Hi"}}).find("Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|>") != std::string::npos);

        const std::string other = tmp_.filePath("template-other").toStdString();
        writeTemplateDir(other, "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}");
        const std::string error = errorOf([&] { Llama3ChatTemplate::fromDirectory(other).render({{"user", "Hi"}}); });
        QVERIFY2(error.find("not the Llama-3 header layout") != std::string::npos, error.c_str());
        const std::string none = tmp_.filePath("template-none").toStdString();
        std::filesystem::create_directories(none);
        QVERIFY(errorOf([&] { Llama3ChatTemplate::fromDirectory(none).render({{"user", "Hi"}}); }).find("has no chat template") != std::string::npos);
    }

    void cli() {
        const ProcessResult g = runCli({"generate", "--model", referenceLlama3Dir(), "--system", "You are a terse assistant.", "--prompt",
                                        "Tell me about the weather", "--max-new-tokens", "20", "--json"});
        QVERIFY2(g.exitCode == 0, g.err.c_str());
        const json out = json::parse(g.out);
        const SafeTensorsFile expected(ref_.tensorsPath("chat_system"));
        QCOMPARE(out["input_ids"].get<std::vector<int64_t>>(), toIds(expected.tensor("input_ids")));
        QCOMPARE(out["generated_ids"].get<std::vector<int64_t>>(), toIds(expected.tensor("greedy_ids")));

        const ProcessResult plain = runCli({"tokenize", "--model", referenceLlama3Dir(), "--text", "Hello world"});
        QVERIFY2(plain.exitCode == 0, plain.err.c_str());
        QCOMPARE(json::parse(plain.out)["ids"].get<std::vector<int64_t>>(), (std::vector<int64_t>{9906, 1917}));
        QCOMPARE(json::parse(plain.out)["pieces"].get<std::vector<std::string>>(), (std::vector<std::string>{"Hello", " world"}));
        const ProcessResult special = runCli({"tokenize", "--model", referenceLlama3Dir(), "--text", "Hello world", "--special"});
        QCOMPARE(json::parse(special.out)["ids"].get<std::vector<int64_t>>(), (std::vector<int64_t>{128000, 9906, 1917}));
        // A family without a system message refuses --system as a usage error.
        const ProcessResult llava = runCli({"generate", "--model", referenceModelDir(), "--system", "x", "--prompt", "Hi"});
        QCOMPARE(llava.exitCode, 2);
        QVERIFY(llava.err.find("no system message") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestLlama3Parity)
#include "test_llama3_parity.moc"
