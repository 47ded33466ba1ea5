// parity-check — the reference parity and the demo steer, on any device, as one table: what
// scripts/gpu-check.sh runs on a GPU machine, where the Qt Test executables are not built.
//   parity-check [--device cpu|cuda] [--reference DIR] [--tolerance-scale K] [--repeat N] [--threads LIST]
// For tiny-llava, tiny-paligemma, tiny-qwen2vl and tiny-qwen3vl (float32), every case of the reference's
// summary.json: the prompt's ids; the prefill's K/V (<= K x 1e-4 x max(1, max|ref|)); the
// logits of the last prompt token (<= K x 1e-3); the 20 greedy ids as decode runs them — on
// CUDA through the CUDA graph, then again eagerly (KVSTEER_CUDA_GRAPHS=0): both must equal the
// reference's. Then the demo scene (red circle, the shipped red->blue vectors, the circle
// painted) steered on the device and on CPU: the same unsteered and steered answers.
// K defaults to 10 on CUDA (its kernels sum in other orders) and 1 on CPU. Exit status 1 when
// any line fails.
// Bit-identity (docs/internals.md "Determinism"): with --repeat N and --threads LIST (default: the
// machine's cores) every case runs N times at each thread count in one process, a few odd-sized
// buffers allocated between runs so the tensors land at other addresses; each case's K/V,
// logits and greedy ids must have the same bits every time. The last line, "digest HEX", is a hash
// of those bits: two processes (other thread counts, another machine of the same ISA) compare it.
#include "CommandLine.h"
#include "Error.h"
#include "Runtime.h"
#include "io/NumberList.h"
#include "generate/Session.h"
#include "io/Image.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

using namespace kvsteer;

namespace {

constexpr const char* kUsage =
    "usage: parity-check [--device cpu|cuda] [--reference DIR] [--tolerance-scale K] [--repeat N] [--threads LIST]\n";

// One reference checkpoint: its folder, its expected outputs, and how a case becomes a prompt.
struct Family {
    const char* model;
    const char* expected;
    const char* textField;   // the case's text: a raw prompt (LLaVA) or what the template wraps
    bool raw;
};
constexpr Family kFamilies[] = {
    {"tiny-llava", "expected", "prompt", true},
    {"tiny-paligemma", "expected-paligemma", "prefix", false},
    {"tiny-qwen2vl", "expected-qwen2vl", "user_text", false},
    {"tiny-qwen3vl", "expected-qwen3vl", "user_text", false},   // DeepStack, q/k norm, interleaved M-RoPE
};

double maxAbs(const at::Tensor& t) { return t.numel() ? t.abs().max().item<double>() : 0.0; }
double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) { return maxAbs(a.to(at::kCPU).to(at::kDouble) - b.to(at::kCPU).to(at::kDouble)); }

std::vector<int64_t> idsOf(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous().reshape({-1});
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// FNV-1a over a tensor's bytes (on the CPU, contiguous): equal hashes, equal bits.
uint64_t hashBits(const at::Tensor& t, uint64_t h = 1469598103934665603ull) {
    const at::Tensor c = t.to(at::kCPU).contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t i = 0; i < size_t(c.nbytes()); ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

std::vector<int64_t> greedy(Session& session, bool graphs) {
    setenv("KVSTEER_CUDA_GRAPHS", graphs ? "1" : "0", 1);   // DecodeGraph reads it per decode
    GenerationOptions gen;
    gen.maxNewTokens = 20;
    gen.stopAtEos = false;
    return session.generate(gen).ids;
}

struct Checks {
    int failures = 0;
    void line(const std::string& what, bool ok, const std::string& detail) {
        std::printf("| %-38s | %-4s | %s\n", what.c_str(), ok ? "ok" : "FAIL", detail.c_str());
        if (!ok) ++failures;
    }
};

// Checks one case against the reference (lines printed when `report`) and returns the hash of its
// bits: the prefill's K/V, the last prompt token's logits, the greedy ids.
uint64_t checkCase(const std::shared_ptr<Model>& model, const Family& f, const nlohmann::json& c, const std::string& reference, double k,
                   Checks& checks, bool report) {
    Checks quiet;
    Checks& out = report ? checks : quiet;
    const std::string name = std::string(f.model) + " " + c["name"].get<std::string>();
    const SafeTensorsFile expected(reference + "/" + f.expected + "/" + c["name"].get<std::string>() + ".safetensors");
    ImageU8 image;
    if (!c["image"].is_null()) image = loadImage(reference + "/images/" + c["image"].get<std::string>());
    const Prompt prompt = buildPrompt(*model, c[f.textField].get<std::string>(), f.raw, c["image"].is_null() ? nullptr : &image);
    out.line(name + ": ids", prompt.ids == idsOf(expected.tensor("input_ids")), std::to_string(prompt.ids.size()) + " tokens");

    Session session(model);
    session.prefill(prompt, 20);
    const KVCache& kv = session.snapshot();
    double worst = 0;
    uint64_t bits = 1469598103934665603ull;
    for (int l = 0; l < kv.numLayers(); ++l)
        for (const auto& [got, key] : {std::make_pair(kv.keys(l), "past_key."), std::make_pair(kv.values(l), "past_value.")}) {
            const at::Tensor ref = expected.tensor(key + std::to_string(l)).narrow(2, 0, kv.size());
            worst = std::max(worst, maxAbsDiff(got, ref) / std::max(1.0, maxAbs(ref)));
            bits = hashBits(got, bits);
        }
    char detail[96];
    std::snprintf(detail, sizeof detail, "max rel %.2e (limit %.0e)", worst, k * 1e-4);
    out.line(name + ": K/V", worst <= k * 1e-4, detail);

    KVCache copy = kv.clone();
    const at::Tensor ids = at::tensor(std::vector<int64_t>{session.lastPromptToken()}, at::kLong).view({1, 1});
    const at::Tensor lastLogits = session.forwardIds(copy, ids).reshape({-1});
    const double logits = maxAbsDiff(lastLogits, expected.tensor("prefill_last_logits").reshape({-1}));
    bits = hashBits(lastLogits, bits);
    std::snprintf(detail, sizeof detail, "max abs %.2e (limit %.0e)", logits, k * 1e-3);
    out.line(name + ": logits", logits <= k * 1e-3, detail);

    const std::vector<int64_t> want = c["greedy_ids"].get<std::vector<int64_t>>();
    const bool cuda = model->format().device.is_cuda();
    const std::vector<int64_t> got = greedy(session, true);
    out.line(name + (cuda ? ": 20 greedy (graph)" : ": 20 greedy"), got == want, "");
    if (cuda) out.line(name + ": 20 greedy (eager)", greedy(session, false) == want, "");
    checks.failures += report ? 0 : quiet.failures;   // a later run outside tolerance still fails
    return hashBits(at::tensor(got, at::kLong), bits);
}

// The demo scene steered with the shipped vectors: the unsteered and steered answers.
GenerationPair demoSteer(const std::string& device) {
    LoadOptions o;
    o.device = device;
    auto model = loadModel(KVSTEER_DEMO_MODEL_DIR, o);
    const ImageU8 image = loadImage(KVSTEER_DEMO_IMAGE);
    Session session(model);
    const Prompt prompt = buildPrompt(*model, "What color is the circle?", false, &image);
    session.prefill(prompt, 16);
    SteeringFileInfo info;
    const SteeringVectors vectors = loadSteeringFile(KVSTEER_DEMO_VECTORS, *model, &info);
    const VisualSpan& span = session.snapshot().visualSpan;
    const SteeringPlan plan = makePlan(PlanOptions(), &vectors, info, loadMask("rect:6,9,15,18", span.gridHeight, span.gridWidth), span,
                                       model->config().text.numLayers);
    GenerationOptions gen;
    gen.maxNewTokens = 16;
    return runSteered(session, prompt, plan, gen).pair;
}

} // namespace

int main(int argc, char** argv) {
    try {
        CommandLine cl({"device", "reference", "tolerance-scale", "repeat", "threads"}, {});
        cl.parse(argc, argv, 1);
        const std::string device = cl.get("device", "cpu");
        const std::string reference = cl.get("reference", KVSTEER_REFERENCE_DIR);
        const double k = std::stod(cl.get("tolerance-scale", device == "cpu" ? "1" : "10"));
        const int repeat = std::stoi(cl.get("repeat", "1"));
        if (repeat < 1) throw UsageError("--repeat: at least 1 run expected");
        std::vector<int> threadCounts = cl.has("threads") ? parseIndexList(cl.get("threads", ""), "--threads")
                                                          : std::vector<int>{int(std::max(1u, std::thread::hardware_concurrency()))};
        std::printf("parity-check  (device %s, float32, tolerances x%g, reference %s; %d run(s) at %zu thread count(s))\n\n", device.c_str(),
                    k, reference.c_str(), repeat, threadCounts.size());
        std::printf("| %-38s | %-4s | %s\n|%s|%s|%s\n", "check", "", "", std::string(40, '-').c_str(), std::string(6, '-').c_str(),
                    std::string(30, '-').c_str());
        Checks checks;
        std::vector<std::pair<const Family*, std::shared_ptr<Model>>> models;
        std::vector<nlohmann::json> summaries;
        for (const Family& f : kFamilies) {
            std::ifstream in(reference + "/" + f.expected + "/summary.json");
            if (!in) throw Error(reference + "/" + f.expected + "/summary.json: cannot open (is --reference the shared/reference folder?)");
            summaries.push_back(nlohmann::json::parse(in));
            LoadOptions o;
            o.device = device;
            o.dtype = "f32";
            models.emplace_back(&f, loadModel(reference + "/" + f.model, o));
        }
        // Every case at every thread count, `repeat` times; the first run's bits are the baseline.
        std::map<std::string, uint64_t> baseline;
        std::map<std::string, std::string> firstDifference;
        std::vector<at::Tensor> ballast;   // odd-sized buffers between runs: the tensors move
        for (int threads : threadCounts) {
            setThreads(threads);
            for (int run = 0; run < repeat; ++run) {
                ballast.push_back(at::empty({int64_t(1 + 97 * baseline.size() + 13 * run)}, at::kFloat));
                for (size_t i = 0; i < models.size(); ++i)
                    for (const auto& c : summaries[i]["cases"]) {
                        const std::string name = std::string(models[i].first->model) + " " + c["name"].get<std::string>();
                        const bool first = !baseline.count(name);
                        const uint64_t bits = checkCase(models[i].second, *models[i].first, c, reference, k, checks, first);
                        if (first) baseline[name] = bits;
                        else if (bits != baseline[name] && !firstDifference.count(name))
                            firstDifference[name] = "differs at " + std::to_string(threads) + " threads, run " + std::to_string(run + 1);
                    }
            }
        }
        const int runs = repeat * int(threadCounts.size());
        uint64_t digest = 1469598103934665603ull;
        for (const auto& [name, bits] : baseline) {
            digest = hashBits(at::tensor(std::vector<int64_t>{int64_t(bits)}, at::kLong), digest);
            if (runs > 1)
                checks.line(name + ": same bits", !firstDifference.count(name),
                            firstDifference.count(name) ? firstDifference[name] : "in all " + std::to_string(runs) + " runs");
        }
        const GenerationPair onDevice = demoSteer(device), onCpu = device == "cpu" ? onDevice : demoSteer("cpu");
        checks.line("demo steer: unsteered = CPU's", onDevice.unsteered.ids == onCpu.unsteered.ids, "\"" + onDevice.unsteered.text + "\"");
        checks.line("demo steer: steered = CPU's", onDevice.steered.ids == onCpu.steered.ids, "\"" + onDevice.steered.text + "\"");
        std::printf("\n%s\n", checks.failures ? (std::to_string(checks.failures) + " check(s) failed").c_str() : "all checks passed");
        if (device == "cpu") std::printf("digest %016llx\n", static_cast<unsigned long long>(digest));
        return checks.failures ? 1 : 0;
    } catch (const HelpRequested&) {
        std::cout << kUsage;
        return 0;
    } catch (const UsageError& e) {
        std::cerr << "parity-check: " << e.what() << "\n" << kUsage;
        return 2;
    } catch (const c10::Error& e) {
        std::cerr << "parity-check: error: " << e.what_without_backtrace() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "parity-check: error: " << e.what() << "\n";
    }
    return 1;
}
