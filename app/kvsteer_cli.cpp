// kvsteer — the headless command line: generate, inspect, make-random, extract, steer, sweep.
// Every failure prints "kvsteer: error: <what, where, what was expected>" and exits non-zero.
#include "CliOptions.h"
#include "ColorFlipCommand.h"
#include "CommandLine.h"
#include "SteerCommands.h"
#include "DemoCommands.h"
#include "Error.h"
#include "models/ModelRegistry.h"
#include "models/llava/RandomCheckpoint.h"
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

const char* kUsage = R"(usage: kvsteer <command> [options]

commands:
  generate     --model DIR [--image FILE] --prompt TEXT [--raw-prompt] [--max-new-tokens N]
               [--dtype auto|f32|bf16|f16] [--device cpu|cuda] [--threads N]
               [--seed S --temperature T --top-p P --top-k K] [--json] [--dump-prefill FILE.safetensors]
  inspect      --model DIR
  extract      --model DIR --recipe image-pair|region|text-pairs [--pca] [--per-position] [--key-space post|pre]
               --prompt TEXT (--image-a FILE --image-b FILE | --image FILE --mask MASK | --pairs FILE.jsonl)
               --out VECTORS.safetensors [--operator OP] [--ck X] [--cv Y] [--layers A-B]
  steer        --model DIR --image FILE --prompt TEXT [--vectors FILE] [--mask MASK] [--layers A-B] [--heads LIST]
               [--ck X] [--cv Y] [--operator add|norm|prerope|scale|spotlight|ablate] [--ablate-to mean|zero]
               [--propagate] [--max-new-tokens N] [--json]
  sweep        (the steer options) --ck LIST --cv LIST --layers A-B,C-D,... [--csv]: one row per setting
  demo-steer   [--model DIR] [--pairs K] [--n N] [--seed S] [--ck LIST] [--cv LIST] [--mode edit-only|propagate|both]
               [--save-vectors FILE]: the demo model's red->blue flip, painted on the circle vs on background
  make-random  --preset NAME --dtype f32|f16|bf16 --out DIR [--tokenizer-from DIR] [--seed S] [--shard-gb G]

MASK: rect:r0,c0,r1,c1 (grid cells, inclusive), a grayscale image (white = 1), a .npy or a .safetensors.
--model defaults to the bundled demo model. --prompt is the question; it is wrapped in the
LLaVA-1.5 template "USER: <image>\n{q} ASSISTANT:" unless --raw-prompt is given.
With --json, stdout holds only the final JSON object.
)";

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
    gen.maxNewTokens = newTokensThatFit(model->config().text, static_cast<int64_t>(prompt.ids.size()), gen.maxNewTokens);

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
    CommandLine cl(modelOptionNames(), {});
    cl.parse(argc, argv, 2);
    auto model = loadModel(cl);
    std::cout << model->describe();
    return 0;
}

int commandMakeRandom(int argc, char** argv) {
    CommandLine cl({"preset", "dtype", "out", "tokenizer-from", "seed", "shard-gb"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("preset") || !cl.has("out")) throw UsageError("make-random needs --preset NAME and --out DIR");
    const ModelConfig config = randomPreset(cl.get("preset"));
    const c10::ScalarType dtype = parseDtype(cl.get("dtype", "f16"));
    if (dtype == c10::ScalarType::Undefined) throw UsageError("make-random --dtype: expected f32, f16 or bf16 (a new file has no stored dtype to keep)");
    const std::string tokenizerFrom = cl.get("tokenizer-from", KVSTEER_DEMO_MODEL_DIR);
    const double shardGb = cl.getDouble("shard-gb", 2.0);
    if (shardGb <= 0) throw UsageError("option --shard-gb must be > 0");
    std::cerr << "writing " << cl.get("preset") << " (" << cl.get("dtype", "f16") << ") to " << cl.get("out") << " ...\n";
    writeRandomCheckpoint(config, dtype, cl.get("out"), tokenizerFrom, cl.getU64("seed", 0),
                     static_cast<int64_t>(shardGb * 1024 * 1024 * 1024));
    std::cerr << "done\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        std::cout << kUsage << "\ndemo model:\n" << kDemoUsage;
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    try {
        if (command == "generate") return commandGenerate(argc, argv);
        if (command == "inspect") return commandInspect(argc, argv);
        if (command == "make-random") return commandMakeRandom(argc, argv);
        if (command == "extract") return commandExtract(argc, argv);
        if (command == "steer") return commandSteer(argc, argv);
        if (command == "sweep") return commandSweep(argc, argv);
        if (command == "demo-steer") return commandDemoSteer(argc, argv);
        if (command == "train-demo") return commandTrainDemo(argc, argv);
        if (command == "eval-demo") return commandEvalDemo(argc, argv, KVSTEER_DEMO_MODEL_DIR);
        if (command == "demo-corpus") return commandDemoCorpus(argc, argv);
        if (command == "demo-images") return commandDemoImages(argc, argv);
        if (command == "--version" || command == "version") {
            std::cout << "kvsteer " KVSTEER_VERSION "\n";
            return 0;
        }
        throw UsageError("unknown command '" + command + "'");
    } catch (const UsageError& e) {
        std::cerr << "kvsteer: " << e.what() << "\n\n" << kUsage;
        return 2;
    } catch (const Error& e) {
        std::cerr << "kvsteer: error: " << e.what() << "\n";
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
