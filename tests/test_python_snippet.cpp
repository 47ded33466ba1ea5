// The plan as a Python script (core/steer/PythonSnippet.h), the one writer behind `kvsteer steer
// --python` and the studio's Copy as Python:
//   - every family × every operator: the family's transformers class and first release, its span,
//     the operator's math as the core computes it, or a NotImplementedError with the reason;
//   - from the CLI on every reference checkpoint: absolute paths that exist, the run's max new
//     tokens, both answers printed as JSON lines, what to pip install (tokenizers where the
//     checkpoint has only a tokenizer.json); on the demo model, per-layer coefficients as lists;
//   - with KVSTEER_TEST_PYTHON (a Python with torch and transformers) set, each family's script run
//     from a temporary folder prints the ids `kvsteer steer --json` gives; skipped, saying so,
//     without one.
#include "TestSupport.h"
#include "steer/PythonSnippet.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// c_k 2, c_v 4 on every layer of 4, the grid's last cell painted (a text prompt's strip: its last token).
PythonSnippetInputs snippetCase(const char* family, const char* promptTemplate, bool vision) {
    PythonSnippetInputs in;
    in.family = family;
    in.modelName = "tiny";
    in.modelDirectory = "/models/tiny";
    in.numLayers = 4;
    in.promptTemplate = promptTemplate;
    in.vectorsPath = "/tmp/v.safetensors";
    in.imagePath = vision ? "/images/red.png" : "";
    in.question = "What color is the circle?";
    in.rows = vision ? 16 : 1;
    in.cols = vision ? 16 : 12;
    in.strength.assign(size_t(in.rows * in.cols), 0.0f);
    in.strength.back() = 1.0f;
    in.ck = {2};
    in.cv = {4};
    in.maxNewTokens = 9;
    return in;
}

// A reference checkpoint and how the CLI steers it for the script.
struct CliCase {
    const char* name;
    std::string dir;
    const char* image;    // nullptr: a text prompt
    const char* release;  // the transformers release the script asks for
};

std::vector<CliCase> cliCases() {
    const std::string ref = referenceDir();
    return {{"llava", ref + "/tiny-llava", "red_square_336x336.png", "4.45"},
            {"llava-next", ref + "/tiny-llava-next", "gradient_500x300.png", "4.45"},
            {"paligemma", ref + "/tiny-paligemma", "red_square_336x336.png", "4.45"},
            {"qwen2-vl", ref + "/tiny-qwen2vl", "gradient_500x300.png", "4.45"},
            {"qwen2.5-vl", ref + "/tiny-qwen25vl", "gradient_500x300.png", "4.49"},
            {"qwen3-vl", ref + "/tiny-qwen3vl", "gradient_500x300.png", "4.57"},
            {"qwen2", ref + "/tiny-qwen2", nullptr, "4.45"},
            {"llama-3", ref + "/tiny-llama3", nullptr, "4.45"}};
}

// `kvsteer steer` on a case with the scale operator (no vector file needed), c_k 1.5, c_v 3,
// 7 new tokens; `extra` after them.
std::vector<std::string> steerArgs(const CliCase& c, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"steer", "--model", c.dir, "--prompt", "What is shown?", "--operator", "scale",
                                     "--ck", "1.5", "--cv", "3", "--max-new-tokens", "7"};
    if (c.image) args.insert(args.end(), {"--image", referenceDir() + "/images/" + c.image});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// The value of `name = "..."` in the script.
std::string assigned(const std::string& py, const std::string& name) {
    const std::regex line(name + R"( = "([^"]*)\")");
    std::smatch m;
    return std::regex_search(py, m, line) ? std::string(m[1]) : std::string();
}

} // namespace

class TestPythonSnippet : public QObject {
    Q_OBJECT

private slots:
    // Every family × every operator: the script loads the family's class, finds the steered
    // positions the family's way and writes the operator's math as the core computes it, or raises
    // NotImplementedError with the reason — never a silently wrong edit.
    void everyFamilyAndOperator() {
        struct Family {
            const char* name;
            const char* modelClass;
            const char* release;
            const char* span;
            const char* promptTemplate;
            bool vision;
        };
        const Family families[] = {
            {"LLaVA-1.5", "LlavaForConditionalGeneration", "4.45", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "USER: <image>\n{question} ASSISTANT:", true},
            {"LLaVA-NeXT", "LlavaNextForConditionalGeneration", "4.45", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "USER: <image>\n{question} ASSISTANT:", true},
            {"PaliGemma", "PaliGemmaForConditionalGeneration", "4.45", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "<image><bos>{question}\n", true},
            {"Qwen2-VL", "Qwen2VLForConditionalGeneration", "4.45", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
             "{question}<|im_end|>\n<|im_start|>assistant\n",
             true},
            {"Qwen2.5-VL", "Qwen2_5_VLForConditionalGeneration", "4.49", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
             "{question}<|im_end|>\n<|im_start|>assistant\n",
             true},
            {"Qwen3-VL", "Qwen3VLForConditionalGeneration", "4.57", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>{question}<|im_end|>\n<|im_start|>assistant\n", true},
            {"Qwen2", "AutoModelForCausalLM", "4.45", "span = torch.arange(ids.shape[1] - 1)", "", false},
            {"Llama-3", "AutoModelForCausalLM", "4.45", "span = torch.arange(ids.shape[1] - 1)", "", false},
            {"Llama", "AutoModelForCausalLM", "4.45", "span = torch.arange(ids.shape[1] - 1)", "", false},
        };
        // core/steer/SteeringPlan.cpp's edits, as Python on the painted positions x (f = s(p)·c, d = Δ).
        const std::map<std::string, std::vector<std::string>> math = {
            {"add", {"X[:, h, span[sel]] = x + f * d"}},
            {"norm", {"y = x + f * d", "X[:, h, span[sel]] = torch.where(n > 0, y * (x.norm(dim=-1, keepdim=True) / n), x)"}},
            {"scale", {"X[:, h, span[sel]] = x * (1 + f)"}},
            {"ablate", {"target = X[:, h, span].mean(1, keepdim=True)", "X[:, h, span[sel]] = x + f * (target - x)"}},
        };
        for (const Family& family : families) {
            PythonSnippetInputs in = snippetCase(family.name, family.promptTemplate, family.vision);
            for (const char* op : {"add", "norm", "scale", "ablate", "prerope", "spotlight"}) {
                in.op = parseOperator(op);
                const std::string py = pythonSnippet(in);
                const std::string what = std::string(family.name) + " / " + op + ":\n" + py;
                QVERIFY2(has(py, std::string("(Hugging Face transformers >= ") + family.release + ","), what.c_str());
                if (!math.count(op)) {   // prerope, spotlight: refused with the reason
                    QVERIFY2(has(py, std::string("raise NotImplementedError(\"kvsteer: the '") + op + "' operator"), what.c_str());
                    QVERIFY2(!has(py, "from_pretrained") && !has(py, "generate("), what.c_str());
                    continue;
                }
                QVERIFY2(!has(py, "NotImplementedError"), what.c_str());
                QVERIFY2(has(py, std::string("model = ") + family.modelClass + ".from_pretrained(model_id"), what.c_str());
                QVERIFY2(has(py, family.span), what.c_str());
                const bool anyres = std::string(family.name) == "LLaVA-NeXT";   // its ablate mean skips the newline tokens
                for (std::string line : math.at(op)) {
                    if (anyres) line = std::regex_replace(line, std::regex(R"(span\])"), "span[cells]]");
                    QVERIFY2(has(py, line), what.c_str());
                }
                const bool vectors = std::string(op) == "add" || std::string(op) == "norm";   // scale and ablate read no file
                QCOMPARE(has(py, "with safe_open(vectors_path"), vectors);
                QVERIFY2(has(py, "ck, cv = 2, 4\n") && has(py, "layers = range(4)") && has(py, "max_new_tokens = 9\n"), what.c_str());
                QVERIFY2(has(py, "assert s.numel() == span.numel()") && has(py, "cache.crop(ids.shape[1] - 1)"), what.c_str());
                QVERIFY2(has(py, "pristine = copy.deepcopy(cache)") && has(py, "for name, kv in ((\"unsteered\", pristine), (\"steered\", cache)):"),
                         what.c_str());
            }
            in.op = SteeringOperator::Add;
            const std::string py = pythonSnippet(in);
            QCOMPARE(has(py, "from PIL import Image"), family.vision);
            QCOMPARE(has(py, "image_path = \"/images/red.png\"\n"), family.vision);
            const bool mrope = has(family.name, "Qwen") && family.vision;
            QCOMPARE(has(py, "model(**inputs, position_ids=rope_pos, past_key_values=cache"), mrope);   // M-RoPE given explicitly
            QCOMPARE(has(py, "model.generate("), !mrope);
            if (!family.vision) QVERIFY2(has(py, "mask = torch.zeros(1, 12)") && has(py, "mask[0:1, 11:12] = 1"), py.c_str());

            // Propagate: recomputed from the edited cache on a causal prompt; PaliGemma's bidirectional recompute is refused.
            in.propagate = true;
            const std::string propagated = pythonSnippet(in);
            if (std::string(family.name) == "PaliGemma") {
                QVERIFY2(has(propagated, "raise NotImplementedError(\"kvsteer: propagate mode on PaliGemma"), propagated.c_str());
            } else {
                QVERIFY2(has(propagated, "if edited and end < ids.shape[1] - 1:") && has(propagated, "cache.crop(end)"), propagated.c_str());
                QVERIFY2(has(propagated, family.vision ? "end = int(span[-1]) + 1" : "end = int(span[sel].max()) + 1"), propagated.c_str());
                QVERIFY2(has(propagated, mrope ? "model(input_ids=ids[:, end:-1], position_ids=rope_pos[..., end:-1], past_key_values=cache"
                                               : "model(input_ids=ids[:, end:-1], past_key_values=cache"),
                         propagated.c_str());
            }
            in.propagate = false;

            // One coefficient per layer is a list the edit indexes by layer.
            in.cv = {2, 4, 8, 16};
            const std::string byLayer = pythonSnippet(in);
            QVERIFY2(has(byLayer, "ck, cv = 2, [2, 4, 8, 16]   # a list: one per layer") && has(byLayer, "c_v 2, 4, 8, 16 by layer"), byLayer.c_str());
            QVERIFY2(has(byLayer, "return c[l] if isinstance(c, list) else c"), byLayer.c_str());
            in.cv = {4};

            // Ablate to zero; pre-RoPE key vectors are refused for add and norm (kvsteer refuses them too), not for scale.
            in.op = SteeringOperator::Ablate;
            in.ablateTo = AblateTarget::Zero;
            QVERIFY(has(pythonSnippet(in), "target = 0"));
            in.keySpace = "pre-rope";
            for (SteeringOperator op : {SteeringOperator::Add, SteeringOperator::NormPreserving}) {
                in.op = op;
                QVERIFY(has(pythonSnippet(in), "raise NotImplementedError(\"kvsteer: the file's key vectors are pre-RoPE"));
            }
            in.op = SteeringOperator::Scale;
            QVERIFY(!has(pythonSnippet(in), "NotImplementedError"));
        }
        // A family the snippet does not know is named, not guessed.
        const std::string other = pythonSnippet(snippetCase("Gemma3", "<image>{question}", true));
        QVERIFY2(has(other, "raise NotImplementedError(\"kvsteer: the Gemma3 family is not one this snippet knows"), other.c_str());
        // A painted map that is not rectangular is written cell by cell.
        QVERIFY(has(pythonMask(2, 2, {0.5f, 0, 0, 1}), "for r, c, v in [(0, 0, 0.5), (1, 1, 1)]:"));
    }

    // `kvsteer steer --python` on every reference checkpoint: a script that runs from any folder.
    void cliScriptPerFamily_data() {
        QTest::addColumn<int>("index");
        const std::vector<CliCase> cases = cliCases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].name) << int(i);
    }
    void cliScriptPerFamily() {
        QFETCH(int, index);
        const CliCase c = cliCases()[size_t(index)];
        const ProcessResult r = runCli(steerArgs(c, {"--python"}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const std::string& py = r.out;
        QVERIFY2(!has(py, "NotImplementedError"), py.c_str());
        const std::string model = assigned(py, "model_id");
        QVERIFY2(fs::path(model).is_absolute() && fs::is_directory(model), ("model_id " + model).c_str());
        QCOMPARE(fs::canonical(model), fs::canonical(c.dir));
        if (c.image) {
            const std::string image = assigned(py, "image_path");
            QVERIFY2(fs::path(image).is_absolute() && fs::exists(image), ("image_path " + image).c_str());
        }
        QVERIFY2(has(py, "max_new_tokens = 7\n") && has(py, "ck, cv = 1.5, 3\n"), py.c_str());
        QVERIFY2(has(py, "print(json.dumps({name: {\"ids\": got, \"text\":"), py.c_str());   // both answers, one JSON line each
        QVERIFY2(has(py, std::string("# Needs: pip install torch 'transformers>=") + c.release + "'"), py.c_str());
        // transformers builds a tokenizer without the `tokenizers` package only from slow files.
        const bool onlyFast = fs::exists(fs::path(c.dir) / "tokenizer.json") && !fs::exists(fs::path(c.dir) / "vocab.json") &&
                              !fs::exists(fs::path(c.dir) / "tokenizer.model");
        QCOMPARE(has(py, " tokenizers"), onlyFast);
        // --python prints and runs nothing: no answers, and it refuses --json beside it.
        QVERIFY(!has(py, "unsteered:"));
        const ProcessResult both = runCli(steerArgs(c, {"--python", "--json"}));
        QCOMPARE(both.exitCode, 2);
        QVERIFY2(has(both.err, "--python"), both.err.c_str());
    }

    // The demo model with the shipped vectors and one coefficient per layer: the script names them
    // per layer, as the run does.
    void demoCoefficientsPerLayer() {
        const ProcessResult r = runCli({"steer", "--image", std::string(KVSTEER_DEMO_IMAGE), "--prompt", "What color is the circle?",
                                        "--vectors", std::string(KVSTEER_DEMO_VECTORS), "--mask", "rect:6,9,15,18", "--ck", "0,0,1,1",
                                        "--cv", "2,4,8,16", "--max-new-tokens", "5", "--python"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY2(has(r.out, "ck, cv = [0, 0, 1, 1], [2, 4, 8, 16]   # a list: one per layer"), r.out.c_str());
        QVERIFY2(has(r.out, "c_k 0, 0, 1, 1 by layer · c_v 2, 4, 8, 16 by layer"), r.out.c_str());
        QVERIFY2(has(r.out, "vectors_path = \"" + fs::absolute(KVSTEER_DEMO_VECTORS).lexically_normal().string() + "\""), r.out.c_str());
        QVERIFY2(has(r.out, "mask[6:16, 9:19] = 1"), r.out.c_str());
    }

    // With a Python that has torch and transformers (KVSTEER_TEST_PYTHON=/path/to/python), each
    // family's script, run from a temporary folder, prints the ids `kvsteer steer --json` gives.
    void scriptRunsAsWritten_data() { cliScriptPerFamily_data(); }
    void scriptRunsAsWritten() {
        QFETCH(int, index);
        const QString python = qEnvironmentVariable("KVSTEER_TEST_PYTHON");
        if (python.isEmpty())
            QSKIP("KVSTEER_TEST_PYTHON is not set: no Python with torch and transformers to run the script with (set it to one to run this check)");
        const CliCase c = cliCases()[size_t(index)];
        const ProcessResult script = runCli(steerArgs(c, {"--python"}));
        QVERIFY2(script.exitCode == 0, script.err.c_str());
        const ProcessResult steer = runCli(steerArgs(c, {"--json"}));
        QVERIFY2(steer.exitCode == 0, steer.err.c_str());
        const nlohmann::json expected = nlohmann::json::parse(steer.out);
        QTemporaryDir folder;
        std::ofstream(folder.filePath(QStringLiteral("plan.py")).toStdString()) << script.out;
        QProcess p;
        p.setWorkingDirectory(folder.path());   // not the checkout: every path in the script is absolute
        p.start(python, {QStringLiteral("plan.py")});
        QVERIFY(p.waitForFinished(600000));
        const std::string out = p.readAllStandardOutput().toStdString();
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        std::istringstream lines(out);
        std::string line;
        int seen = 0;
        while (std::getline(lines, line)) {
            const nlohmann::json j = nlohmann::json::parse(line);
            for (const char* stream : {"unsteered", "steered"})
                if (j.contains(stream)) {
                    QCOMPARE(j[stream]["ids"].get<std::vector<int64_t>>(), expected[stream]["ids"].get<std::vector<int64_t>>());
                    ++seen;
                }
        }
        QCOMPARE(seen, 2);
    }
};

QTEST_GUILESS_MAIN(TestPythonSnippet)
#include "test_python_snippet.moc"
