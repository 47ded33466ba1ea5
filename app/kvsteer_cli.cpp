// kvsteer — the headless command line: generate, inspect, make-random, extract, steer, sweep
// and the demo model's commands. `kvsteer --help` and `kvsteer COMMAND --help` print usage and
// exit 0 (1, and a line naming it, if a command's help leaves out an option its parser accepts);
// a usage error exits 2 with one line and "see: kvsteer COMMAND --help"; every other failure prints
// "kvsteer: error: <what, where, what was expected>" and exits 1.
#include "CliOptions.h"
#include "kernels/ComputeReport.h"
#include "ColorFlipCommand.h"
#include "CommandLine.h"
#include "SteerCommands.h"
#include "DemoCommands.h"
#include "EvalCommands.h"
#include "StudyCommands.h"
#include "TokenizeCommand.h"
#include "VectorsCommand.h"
#include "HeatmapsCommand.h"
#include "Usage.h"
#include "Error.h"
#include "cache/SpanCells.h"
#include "models/ModelRegistry.h"
#include "models/llava/RandomCheckpoint.h"
#include "models/llava_next/RandomLlavaNext.h"
#include "models/qwen25vl/RandomQwen25Vl.h"
#include "models/qwen3vl/RandomQwen3Vl.h"
#include "io/SafeTensors.h"
#include "nn/Linear.h"
#include "models/Prompt.h"
#include "generate/Session.h"

#include <ATen/ops/tensor.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

using namespace kvsteer;

namespace {

// A core error's remedy, as the flag to type.
const char* remedyFlag(Remedy r) {
    switch (r) {
    case Remedy::RawPrompt: return "--raw-prompt places the image tag where the prompt has it (no template)";
    case Remedy::KeepStoredDtype: return "--dtype auto keeps the checkpoint's own dtypes";
    case Remedy::FewerNewTokens: return "a shorter --max-new-tokens shrinks the KV cache";
    case Remedy::MatchingKeySpace: return "extract the vectors again with the matching --key-space";
    case Remedy::SkipBadItems: return "--skip-bad records bad lines and items in the output and evaluates the rest";
    case Remedy::SmallerImageBudget:
        return "--max-pixels 1003520 caps an image at about a megapixel: 1280 tokens on Qwen2-VL and Qwen2.5-VL, 980 on Qwen3-VL "
               "(the processor scales larger ones down)";
    }
    return "";
}

// Logits of the full prompt's last token and the cache of all L prompt tokens, as a dump.
void dumpPrefill(const Session& session, const std::string& path) {
    KVCache cache = session.snapshot().clone();
    at::Tensor logits = session.feed(cache, {session.lastPromptToken()});
    const Prompt& p = session.prompt();
    std::vector<NamedTensor> tensors;
    tensors.push_back({"input_ids", at::tensor(p.ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0)});
    if (p.hasImage) tensors.push_back({"pixel_values", p.pixels});
    tensors.push_back({"prefill_last_logits", logits.unsqueeze(0).cpu()});
    for (int l = 0; l < cache.numLayers(); ++l) {
        tensors.push_back({"past_key." + std::to_string(l), cache.keys(l).to(at::kCPU, at::kFloat).contiguous()});
        tensors.push_back({"past_value." + std::to_string(l), cache.values(l).to(at::kCPU, at::kFloat).contiguous()});
    }
    writeSafeTensors(path, tensors, {{"model", session.model().config().name}, {"producer", "kvsteer " KVSTEER_VERSION}});
}

int commandGenerate(int argc, char** argv) {
    CommandLine cl(withOptions(withOptions({"image", "prompt", "dump-prefill"}, modelOptionNames()), generationOptionNames()), {"raw-prompt", "json"});
    cl.parse(argc, argv, 2);
    if (!cl.has("prompt")) throw UsageError("generate needs --prompt TEXT");
    GenerationOptions gen = generationOptions(cl, 64);
    auto model = loadModel(cl);
    ImageU8 image;
    if (cl.has("image")) image = loadImage(cl.get("image"));
    const Prompt prompt = buildPrompt(*model, cl.get("prompt"), cl.has("raw-prompt"), cl.has("image") ? &image : nullptr);
    const int asked = gen.maxNewTokens;
    gen.maxNewTokens = std::max(1, newTokensThatFit(model->config().text, static_cast<int64_t>(prompt.ids.size()), asked));
    if (gen.maxNewTokens < asked)
        noteBudgetCut(asked, gen.maxNewTokens, int64_t(prompt.ids.size()), model->config().text.maxPositionEmbeddings);

    Session session(model);
    session.prefill(prompt, gen.maxNewTokens);
    if (cl.has("dump-prefill")) dumpPrefill(session, cl.get("dump-prefill"));

    const bool json = cl.has("json");
    const Generation g = session.generate(gen, [&](const TokenEvent& ev) {
        if (!json && !ev.text.empty()) {
            std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
            std::fflush(stdout);
        }
    });
    if (json) {
        nlohmann::ordered_json out = {
            {"input_ids", prompt.ids},
            {"generated_ids", g.ids},
            {"text", g.text},
            {"stopped_at_eos", g.stoppedAtEos},
            {"image_encode_ms", session.imageEncodeMs()},
            {"prefill_ms", session.imageEncodeMs() + session.prefillMs()},
            {"decode_tokens_per_s", g.tokensPerSecond()},
        };
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    } else {
        std::cout << std::endl;
    }
    return 0;
}

int commandInspect(int argc, char** argv) {
    CommandLine cl(withOptions(modelOptionNames(), {"image"}), {});
    cl.parse(argc, argv, 2);
    auto model = loadModel(cl);
    std::cout << model->describe();
    if (cl.has("image")) {
        const ImageU8 image = loadImage(cl.get("image"));
        std::cout << "image        " << image.width << "x" << image.height << ": " << describeLayout(imageSpan(*model, image)) << "\n";
    }
    const kernels::ComputeReport compute = kernels::computeReport();
    std::cout << kernels::kernelsLine(compute) << "\n" << kernels::blasLine(compute) << "\n";
    if (const std::string w = kernels::blasWarning(compute); !w.empty()) std::cout << w << "\n";
    return 0;
}

int commandMakeRandom(int argc, char** argv) {
    CommandLine cl({"preset", "dtype", "out", "tokenizer-from", "seed", "shard-gb"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("preset") || !cl.has("out")) throw UsageError("make-random needs --preset NAME and --out DIR");
    const std::string preset = cl.get("preset");
    const bool qwen = preset == kQwen25VlPreset, qwen3 = isQwen3VlPreset(preset), next = isLlavaNextPreset(preset);
    if ((qwen || qwen3) && !cl.has("tokenizer-from"))
        throw UsageError(preset + " needs --tokenizer-from DIR: a Qwen VL directory (e.g. ../shared/reference/" +
                         (qwen ? "tiny-qwen25vl" : "tiny-qwen3vl") + ")");
    ModelConfig config;
    try {
        if (!qwen && !qwen3 && !next) config = randomPreset(preset);
    } catch (const Error& e) {
        std::string others = kQwen25VlPreset;
        for (const std::string& n : qwen3VlPresetNames()) others += ", " + n;
        for (const std::string& n : llavaNextPresetNames()) others += ", " + n;
        throw UsageError(std::string("--preset: ") + e.what() + " or " + others);
    }
    const c10::ScalarType dtype = parseDtype(cl.get("dtype", "f16"));
    if (dtype == c10::ScalarType::Undefined) throw UsageError("make-random --dtype: expected f32, f16 or bf16 (a new file has no stored dtype to keep)");
    const std::string tokenizerFrom = cl.get("tokenizer-from", KVSTEER_DEMO_MODEL_DIR);
    const double shardGb = cl.getDouble("shard-gb", 2.0);
    if (shardGb <= 0) throw UsageError("option --shard-gb must be > 0");
    std::cerr << "writing " << cl.get("preset") << " (" << cl.get("dtype", "f16") << ") to " << cl.get("out") << " ...\n";
    const auto shardBytes = static_cast<int64_t>(shardGb * 1024 * 1024 * 1024);
    if (qwen) writeRandomQwen25Vl(dtype, cl.get("out"), tokenizerFrom, cl.getU64("seed", 0), shardBytes);
    else if (qwen3) writeRandomQwen3Vl(preset, dtype, cl.get("out"), tokenizerFrom, cl.getU64("seed", 0), shardBytes);
    else if (next) writeRandomLlavaNext(cl.get("preset"), dtype, cl.get("out"), tokenizerFrom, cl.getU64("seed", 0), shardBytes);
    else writeRandomCheckpoint(config, dtype, cl.get("out"), tokenizerFrom, cl.getU64("seed", 0), shardBytes);
    std::cerr << "done\n";
    return 0;
}

using Command = int (*)(int, char**);

int evalDemo(int argc, char** argv) { return commandEvalDemo(argc, argv, KVSTEER_DEMO_MODEL_DIR); }

// Every command by name; usage for each lives in Usage.cpp.
Command findCommand(const std::string& name) {
    static const std::vector<std::pair<std::string, Command>> table = {
        {"generate", commandGenerate},   {"inspect", commandInspect},       {"make-random", commandMakeRandom},
        {"extract", commandExtract},     {"steer", commandSteer},           {"sweep", commandSweep},
        {"demo-steer", commandDemoSteer}, {"train-demo", commandTrainDemo}, {"eval-demo", evalDemo},
        {"demo-corpus", commandDemoCorpus}, {"demo-images", commandDemoImages}, {"eval", commandEval},
        {"eval-merge", commandEvalMerge},   {"demo-pope", commandDemoPope},     {"tokenize", commandTokenize},
        {"vectors", commandVectors},     {"heatmaps", commandHeatmaps},     {"study", commandStudy},
        {"study-merge", commandStudyMerge}, {"demo-study", commandDemoStudy},
    };
    for (const auto& [n, f] : table)
        if (n == name) return f;
    return nullptr;
}

} // namespace

int main(int argc, char** argv) {
    const std::string command = argc < 2 ? "" : argv[1];
    if (command == "help" && argc > 2 && !commandUsage(argv[2]).empty()) {   // kvsteer help COMMAND
        std::cout << commandUsage(argv[2]);
        return 0;
    }
    if (command.empty() || command == "--help" || command == "-h" || command == "help") {
        std::cout << fullUsage();
        return command.empty() ? 2 : 0;
    }
    if (command == "--version" || command == "version") {
        std::cout << "kvsteer " KVSTEER_VERSION "\n";
        return 0;
    }
    const Command run = findCommand(command);
    if (!run) {
        std::cerr << "kvsteer: unknown command '" << command << "'\nsee: kvsteer --help\n";
        return 2;
    }
    try {
        return run(argc, argv);
    } catch (const HelpRequested& help) {
        const std::string usage = commandUsage(command);
        std::cout << usage;
        // The help must describe every option the command's parser accepts: a miss is a
        // developer's bug (Usage.cpp / CommandHelp.cpp drifted from the parser), said and failed.
        const std::vector<std::string> missing = undescribedOptions(usage, help.options, help.flags);
        for (const std::string& name : missing) std::cerr << "kvsteer: --help of " << command << " does not describe --" << name << "\n";
        return missing.empty() ? 0 : 1;
    } catch (const UsageError& e) {
        // One line, and where the whole usage is: a wall of help would bury the mistake.
        std::cerr << "kvsteer " << command << ": " << e.what() << "\nsee: kvsteer " << command << " --help\n";
        return 2;
    } catch (const Error& e) {
        std::cerr << "kvsteer: error: " << e.what() << "\n";
        for (Remedy r : e.remedies()) std::cerr << "  try: " << remedyFlag(r) << "\n";
        return 1;
    } catch (const c10::Error& e) {
        std::cerr << "kvsteer: error: " << e.what_without_backtrace() << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "kvsteer: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "kvsteer: error: " << e.what() << "\n";
        return 1;
    }
}
