// bench — speed and memory of the prefill -> decode loop, printed as a table.
//   bench [--model DIR]... [--dtype f32|bf16|f16] [--device cpu|cuda] [--threads N] [--new-tokens N] [--repeat R]
// Without --model it measures the reference checkpoint (../shared/reference/tiny-llava) and the
// bundled demo model, whichever exist. Timings are the best of --repeat runs.
#include "CommandLine.h"
#include "Error.h"
#include "Runtime.h"
#include "model/LlavaModel.h"
#include "pipeline/Prompt.h"
#include "pipeline/Session.h"
#include "pipeline/SideBySide.h"
#include "steer/SteeringPlan.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sys/resource.h>

using namespace kvsteer;

namespace {

double peakRssMiB() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024.0;   // ru_maxrss is in KiB on Linux
}

// A deterministic synthetic photo-like image (smooth gradients), so the bench needs no files.
ImageU8 syntheticImage(int width, int height) {
    ImageU8 img;
    img.width = width;
    img.height = height;
    img.rgb.resize(size_t(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &img.rgb[(size_t(y) * width + x) * 3];
            p[0] = uint8_t(255 * x / std::max(1, width - 1));
            p[1] = uint8_t(255 * y / std::max(1, height - 1));
            p[2] = uint8_t((x * 7 + y * 3) % 256);
        }
    return img;
}

struct Row {
    std::string model;
    double loadMs = 0, encodeMs = 0, prefillTokS = 0, decodeTokS = 0, pairStepsS = 0, rssMiB = 0;
    int64_t promptTokens = 0;
};

Row measure(const std::string& dir, const LoadOptions& options, int newTokens, int repeat) {
    Row row;
    auto model = LlavaModel::load(dir, options);
    row.model = model->config().name;
    row.loadMs = model->loadMs();
    const ImageU8 image = syntheticImage(640, 480);
    const bool vision = model->hasVision();
    const Prompt prompt = buildPrompt(*model, "Describe the image in detail.", false, vision ? &image : nullptr);
    row.promptTokens = static_cast<int64_t>(prompt.ids.size());
    GenerationOptions gen;
    gen.maxNewTokens = newTokens;
    gen.stopAtEos = false;   // always decode the full budget so runs are comparable
    Session session(model);
    double bestPrefill = 1e300, bestEncode = 1e300, bestDecode = 0;
    for (int r = 0; r < repeat; ++r) {
        session.prefill(prompt, newTokens);
        bestEncode = std::min(bestEncode, session.imageEncodeMs());
        bestPrefill = std::min(bestPrefill, session.imageEncodeMs() + session.prefillMs());
        bestDecode = std::max(bestDecode, session.generate(gen).tokensPerSecond());
    }
    if (vision) {
        // Side by side: the unsteered and a steered stream (add on every layer) as one batch of 2.
        const TextConfig& t = model->config().text;
        SteeringPlan plan;
        plan.strength = at::ones({prompt.span.gridHeight, prompt.span.gridWidth});
        for (int l = 0; l < t.numLayers; ++l) {
            plan.vectors.keys.push_back(at::randn({t.numKvHeads, t.headDim}));
            plan.vectors.values.push_back(at::randn({t.numKvHeads, t.headDim}));
        }
        double best = 0;
        for (int r = 0; r < repeat; ++r) {
            const GenerationPair pair = decodeSideBySide(session, applyPlan(session, plan), gen);
            best = std::max(best, 1000.0 * pair.steered.ids.size() / pair.decodeMs);
        }
        row.pairStepsS = best;
    }
    row.encodeMs = vision ? bestEncode : 0;
    // Prefill throughput counts the image encode: it is part of getting the first token out.
    row.prefillTokS = 1000.0 * (row.promptTokens - 1) / bestPrefill;
    row.decodeTokS = bestDecode;
    row.rssMiB = peakRssMiB();
    return row;
}

} // namespace

int main(int argc, char** argv) {
    try {
        CommandLine cl({"model", "dtype", "device", "threads", "new-tokens", "repeat"}, {});
        // --model may be repeated: collect them before handing the rest to the parser.
        std::vector<std::string> models;
        std::vector<char*> rest = {argv[0]};
        for (int i = 1; i < argc; ++i) {
            if (std::string(argv[i]) == "--model" && i + 1 < argc) models.push_back(argv[++i]);
            else rest.push_back(argv[i]);
        }
        cl.parse(static_cast<int>(rest.size()), rest.data(), 1);
        if (models.empty())
            for (const char* d : {KVSTEER_REFERENCE_MODEL_DIR, KVSTEER_DEMO_MODEL_DIR})
                if (std::filesystem::exists(std::string(d) + "/config.json")) models.push_back(d);
        if (models.empty()) throw Error("no model to measure: pass --model DIR");
        LoadOptions options;
        options.dtype = cl.get("dtype", "f32");
        options.device = cl.get("device", "cpu");
        options.threads = cl.getInt("threads", 0);
        const int newTokens = cl.getInt("new-tokens", 32), repeat = cl.getInt("repeat", 2);

        std::printf("kvsteer bench  (device %s, dtype %s, threads %d, %d new tokens, best of %d)\n\n", options.device.c_str(),
                    options.dtype.c_str(), options.threads > 0 ? options.threads : (setThreads(0), currentThreads()), newTokens,
                    repeat);
        std::printf("| %-28s | %8s | %7s | %10s | %14s | %12s | %15s | %9s |\n", "model", "load ms", "prompt", "encode ms",
                    "prefill tok/s", "decode tok/s", "2-stream step/s", "peak RSS");
        std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(30, '-').c_str(), std::string(10, '-').c_str(),
                    std::string(9, '-').c_str(), std::string(12, '-').c_str(), std::string(16, '-').c_str(),
                    std::string(14, '-').c_str(), std::string(17, '-').c_str(), std::string(11, '-').c_str());
        for (const auto& dir : models) {
            const Row r = measure(dir, options, newTokens, repeat);
            std::printf("| %-28s | %8.0f | %7lld | %10.1f | %14.1f | %12.2f | %15.2f | %5.0f MiB |\n", r.model.c_str(), r.loadMs,
                        static_cast<long long>(r.promptTokens), r.encodeMs, r.prefillTokS, r.decodeTokS, r.pairStepsS, r.rssMiB);
            std::fflush(stdout);
        }
        std::printf("\nprefill tok/s = (prompt tokens - 1) / (image encode + prefill); 2-stream step/s = steps of the\n"
                    "side-by-side batch (each step yields one unsteered and one steered token); peak RSS is the process's so far.\n");
        return 0;
    } catch (const c10::Error& e) {
        std::cerr << "bench: error: " << e.what_without_backtrace() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "bench: error: " << e.what() << "\n";
    }
    return 1;
}
