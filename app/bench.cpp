// bench — speed and memory of the prefill -> decode loop, one row per model and thread count, as a
// table or JSON.
//   bench [--model DIR]... [--dtype auto|f32|bf16|f16] [--device cpu|cuda] [--threads N[,N...]]
//         [--beside-busy] [--new-tokens N] [--repeat R] [--eval-images N] [--study-plans P] [--json]
//         [--max-pixels N] [--image-size WxH]
// Without --model it measures the reference checkpoint (../shared/reference/tiny-llava) and the
// bundled demo model, whichever exist. Timings are the best of --repeat runs. Each row is measured
// in a process of its own when there are several, so peak RSS is that row's alone. --beside-busy
// keeps one other process spinning for the whole run: with --threads 1,2 it shows what the
// threads cost on a shared machine. Speed and memory targets live here (BenchTable.cpp), printed
// beside the numbers, never in timed tests.
#include "BenchAtlas.h"
#include "BenchEval.h"
#include "BenchProcesses.h"
#include "BenchRow.h"
#include "BenchTable.h"
#include "CommandLine.h"
#include "Error.h"
#include "MemoryBudget.h"
#include "Runtime.h"
#include "io/NumberList.h"
#include "kernels/ComputeReport.h"
#include "kernels/Kernels.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/PlanOptions.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringPlan.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

using namespace kvsteer;

namespace {

constexpr const char* kUsage =
    "usage: bench [--model DIR]... [--dtype auto|f32|bf16|f16] [--device cpu|cuda] [--threads N[,N...] (0 = all cores)]\n"
    "             [--beside-busy (one other process spins on a core meanwhile)]\n"
    "             [--new-tokens N] [--repeat R] [--eval-images N (default 3; 0 skips eval)] [--study-plans P (default 8)] [--json]\n"
    "             [--max-pixels N (Qwen: the image budget the memory check assumes)]\n"
    "             [--image-size WxH (the synthetic image's size; default 640x480)]\n";

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

// The bandwidth at which the kernels' threads read the weights of one decode step, in GB/s: the
// same pages a decode step streams (usually the mmap'd checkpoint), split over the threads as the
// skinny kernel splits them, with no arithmetic; best of three. Measured right before each decode
// it times, because this machine's bandwidth may drift from one minute to the next. CPU only.
double decodeWeightsReadGBs(const Model& model) {
    const std::vector<const LinearWeight*> weights = model.decoder().decodeStepWeights();
    const double bytes = double(model.decoder().weightBytesPerToken());
    static volatile uint64_t checksum = 0;   // the reads' result goes somewhere, so they stay
    double best = 0;
    for (int r = 0; r < 3; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        checksum = checksum ^ readWeights(weights);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, bytes / s / 1e9);
    }
    return best;
}

// On CUDA the memory roofline comes from a device-to-device copy of 1 GiB instead, in GB/s of
// bytes read plus bytes written (how a card's bandwidth is quoted); best of five.
double deviceCopyGBs(const c10::Device& device) {
    const int64_t bytes = int64_t(1) << 30;
    const auto options = at::TensorOptions().dtype(at::kByte).device(device);
    const at::Tensor src = at::empty({bytes}, options);
    at::Tensor dst = at::empty({bytes}, options);
    dst.copy_(src);   // the first copy pays for whatever is set up lazily
    double best = 0;
    for (int r = 0; r < 5; ++r) {
        waitForDevice(device);
        const auto t0 = std::chrono::steady_clock::now();
        dst.copy_(src);
        waitForDevice(device);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, 2.0 * double(bytes) / s / 1e9);
    }
    return best;
}

BenchRow measure(const std::string& dir, const LoadOptions& options, int newTokens, int repeat, int evalImages, int studyPlans, ResizeSize imageSize) {
    BenchRow row;
    LoadOptions o = options;
    o.reserveTokens = newTokens;
    auto model = loadModel(dir, o);
    warmUpEdits(*model);   // as the CLI and the studio do after loading
    row.model = model->config().name;
    row.threads = currentThreads();
    row.weights = model->weightsDtype();
    row.parameters = model->parameterCount();
    row.loadS = model->loadMs() / 1000.0;
    row.weightBytesPerToken = model->decoder().weightBytesPerToken();
    const ImageU8 image = syntheticImage(imageSize.width, imageSize.height);
    const bool vision = model->hasVision();
    const Prompt prompt = buildPrompt(*model, "Describe the image in detail.", false, vision ? &image : nullptr);
    row.promptTokens = static_cast<int64_t>(prompt.ids.size());
    GenerationOptions gen;
    gen.maxNewTokens = newTokens;
    gen.stopAtEos = false;   // always decode the full budget so runs are comparable
    Session session(model);
    const c10::Device device = model->format().device;
    row.device = device.str();
    auto noteDeviceMemory = [&] { row.deviceMemGB = std::max(row.deviceMemGB, double(deviceMemoryInUse(device)) / 1e9); };
    if (device.is_cuda()) row.readGBs = deviceCopyGBs(device);
    double bestPrefill = 1e300, bestEncode = 1e300, bestDecode = 0;
    for (int r = 0; r < repeat; ++r) {
        session.prefill(prompt, newTokens);
        bestEncode = std::min(bestEncode, session.imageEncodeMs());
        bestPrefill = std::min(bestPrefill, session.imageEncodeMs() + session.prefillMs());
        if (device.is_cpu()) row.readGBs = std::max(row.readGBs, decodeWeightsReadGBs(*model));
        bestDecode = std::max(bestDecode, session.generate(gen).tokensPerSecond());
        noteDeviceMemory();
    }
    if (row.readGBs > 0) row.rooflineTokS = row.readGBs * 1e9 / double(row.weightBytesPerToken);
    // Peak RSS after the prompt and the new tokens of one stream (what `generate` holds: the kept
    // snapshot and the copy it decodes in), then after the side-by-side pair (its batch of two).
    row.peakRssGB = peakResidentBytes() / 1e9;
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
            const SteeredRunResult run = runSteered(session, prompt, plan, gen);
            best = std::max(best, 1000.0 * run.pair.steered.ids.size() / run.pair.decodeMs);
            // The first edit after loading pays whatever is set up lazily (on a GPU: kernel loading).
            if (r == 0) row.firstEditMs = run.start.steered.editMs;
            else row.editMs = row.editMs > 0 ? std::min(row.editMs, run.start.steered.editMs) : run.start.steered.editMs;
        }
        row.pairStepsS = best;
        noteDeviceMemory();
        row.pairRssGB = peakResidentBytes() / 1e9;   // before the atlas's and eval's wider batches
        measureAtlas(session, plan, repeat, row);
        measureDemoAtlas(model, repeat, row);
        if (evalImages > 0) measureEval(model, evalImages, studyPlans, repeat, row);
    }
    row.encodeMs = vision ? bestEncode : 0;
    // Prefill throughput counts the image encode: it is part of getting the first token out.
    row.prefillTokS = 1000.0 * (row.promptTokens - 1) / bestPrefill;
    row.decodeTokS = bestDecode;
    return row;
}

} // namespace

int main(int argc, char** argv) {
    try {
        CommandLine cl({"model", "dtype", "device", "threads", "new-tokens", "repeat", "eval-images", "study-plans", "max-pixels", "image-size"},
                       {"json", "beside-busy"});
        // --model may be repeated: collect them before handing the rest to the parser.
        std::vector<std::string> models;
        std::vector<char*> rest = {argv[0]};
        for (int i = 1; i < argc; ++i) {
            if (std::string(argv[i]) == "--model" && i + 1 < argc) models.push_back(argv[++i]);
            else rest.push_back(argv[i]);
        }
        cl.parse(static_cast<int>(rest.size()), rest.data(), 1);   // --help / -h: HelpRequested
        if (models.empty())
            for (const char* d : {KVSTEER_REFERENCE_MODEL_DIR, KVSTEER_DEMO_MODEL_DIR})
                if (std::filesystem::exists(std::string(d) + "/config.json")) models.push_back(d);
        if (models.empty()) throw Error("no model to measure: pass --model DIR");
        LoadOptions options;
        options.dtype = cl.get("dtype", "auto");
        options.device = cl.get("device", "cpu");
        const std::vector<int> threadCounts = parseIndexList(cl.get("threads", "0"), "--threads");
        options.maxPixels = cl.getInt("max-pixels", 0);
        if (options.maxPixels < 0) throw Error("--max-pixels must be a positive number of pixels");
        const int newTokens = cl.getInt("new-tokens", 32), repeat = cl.getInt("repeat", 2), evalImages = cl.getInt("eval-images", 3);
        const int studyPlans = cl.getInt("study-plans", 8);
        if (studyPlans < 1) throw UsageError("--study-plans must be >= 1");
        const bool json = cl.has("json");
        const std::string sizeText = cl.get("image-size", "640x480");
        ResizeSize imageSize;
        if (std::sscanf(sizeText.c_str(), "%dx%d", &imageSize.width, &imageSize.height) != 2 || imageSize.width <= 0 ||
            imageSize.height <= 0 || imageSize.width > 8192 || imageSize.height > 8192)
            throw UsageError("--image-size " + sizeText + ": expected WxH, e.g. 672x672 (each side 1..8192)");

        // Started before any thread of ours: the child only spins.
        std::optional<BusyNeighbour> busy;
        if (cl.has("beside-busy")) busy.emplace();
        std::vector<BenchRow> rows;
        int failures = 0;
        for (const auto& dir : models)
            for (int threads : threadCounts) {
                BenchRow r;
                if (models.size() == 1 && threadCounts.size() == 1) {
                    options.threads = threads;
                    setThreads(threads);
                    r = measure(dir, options, newTokens, repeat, evalImages, studyPlans, imageSize);
                } else if (!measureInChild({argv[0], "--model", dir, "--json", "--dtype", options.dtype, "--device", options.device,
                                            "--threads", std::to_string(threads), "--new-tokens", std::to_string(newTokens), "--repeat",
                                            std::to_string(repeat), "--eval-images", std::to_string(evalImages), "--study-plans",
                                            std::to_string(studyPlans), "--max-pixels", std::to_string(options.maxPixels),
                                            "--image-size", sizeText},
                                           r)) {
                    ++failures;
                    continue;
                }
                r.besideBusy = busy.has_value();
                rows.push_back(r);
            }
        if (json) {
            nlohmann::json out = nlohmann::json::array();
            for (const BenchRow& r : rows) {
                nlohmann::json j = toJson(r);
                j["kernels"] = kernels::isaName(kernels::activeIsa());
                const kernels::ComputeReport compute = kernels::computeReport();
                j["blas"] = {{"library", compute.blas}, {"core", compute.blasCore}, {"coretype_variable", compute.coreTypeVariable},
                             {"older_than_cpu", compute.blasCoreOlderThanCpu}};
                j["new_tokens"] = newTokens;
                out.push_back(j);
            }
            std::cout << out.dump(2) << "\n";
        } else {
            std::printf("kvsteer bench  (device %s, dtype %s, kernels %s, %d new tokens, best of %d%s)\n\n", options.device.c_str(),
                        options.dtype.c_str(), kernels::isaName(kernels::activeIsa()), newTokens, repeat,
                        busy ? ", beside one busy process" : "");
            const kernels::ComputeReport compute = kernels::computeReport();
            std::printf("%s\n%s\n", kernels::kernelsLine(compute).c_str(), kernels::blasLine(compute).c_str());
            if (const std::string w = kernels::blasWarning(compute); !w.empty()) std::printf("%s\n", w.c_str());
            std::printf("\n");
            printTable(rows);
            printTargets(rows);
        }
        return failures == 0 ? 0 : 1;
    } catch (const HelpRequested&) {
        std::cout << kUsage;
        return 0;
    } catch (const UsageError& e) {
        std::cerr << "bench: " << e.what() << "\n" << kUsage;
        return 2;
    } catch (const c10::Error& e) {
        std::cerr << "bench: error: " << e.what_without_backtrace() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "bench: error: " << e.what() << "\n";
    }
    return 1;
}
