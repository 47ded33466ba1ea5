// kvsteer heatmaps: what the studio's heatmap panel shows, for scripts. The run is the studio's
// own: runSteered on the prompt and plan, attention captured at every decode step, then core's
// runHeatmaps on the kept snapshot, the edited cache and the chosen stream's attention — so the
// file holds the very numbers the panel paints.
#include "HeatmapsCommand.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "PlanFlags.h"
#include "analysis/HeatmapFiles.h"
#include "analysis/Heatmaps.h"
#include "generate/Session.h"
#include "models/ModelRegistry.h"
#include "steer/SteeredRun.h"

#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <array>
#include <iostream>

namespace kvsteer {

namespace {

// One stream's captured attention at the step the maps show.
struct KeptAttention {
    std::vector<at::Tensor> layers;   // per layer [1, H, S]
    int step = -1;
    int64_t id = -1;
};

int headFlag(const CommandLine& cl, int64_t kvHeads) {
    const std::string text = cl.get("head", "mean");
    if (text == "mean") return -1;
    const int head = cl.getInt("head", -1);
    if (head < 0 || head >= kvHeads)
        throw UsageError("--head must be mean or a KV head index 0.." + std::to_string(kvHeads - 1) + ", not " + text);
    return head;
}

} // namespace

// --view NAME: which view of a picture shown in several (LLaVA-NeXT) the maps are of; the
// span's grid (its finest view) by default.
static size_t viewFlag(const CommandLine& cl, const VisualSpan& span) {
    if (!cl.has("view")) return kSpanGrid;
    std::string names;
    for (size_t v = 0; v < viewCount(span); ++v) {
        if (viewName(span, v) == cl.get("view")) return v;
        names += (names.empty() ? "" : ", ") + viewName(span, v);
    }
    throw UsageError("--view " + cl.get("view") + ": this prompt's image has the view" + (viewCount(span) > 1 ? "s " : " ") + names);
}

int commandHeatmaps(int argc, char** argv) {
    CommandLine cl(withOptions(withOptions(planOptionNames(), {"metric", "head", "stream", "step", "out", "view"}), modelOptionNames()),
                   {"propagate", "raw-prompt"});
    cl.parse(argc, argv, 2);
    if (!cl.has("out")) throw UsageError("heatmaps needs --out FILE.npy|.csv|.png");
    if (!cl.has("image")) throw UsageError("heatmaps needs --image FILE: the maps lie over the image's grid");
    HeatMetric metric;
    try {
        metric = parseHeatMetric(cl.get("metric", "value-delta"));
    } catch (const Error& e) {
        throw UsageError(std::string("--metric: ") + e.what());
    }
    const std::string stream = cl.get("stream", "steered");
    if (stream != "steered" && stream != "unsteered") throw UsageError("--stream must be steered or unsteered, not " + stream);
    const bool steeredRow = stream == "steered";
    const int wantedStep = cl.has("step") ? cl.getInt("step", 0) : -1;   // -1: the stream's last step
    if (cl.has("step") && metric != HeatMetric::Attention) throw UsageError("--step picks a decode step's attention: use it with --metric attention");
    if (cl.has("step") && wantedStep < 0) throw UsageError("--step must be 0 or more");
    if (metric == HeatMetric::ValueCosine && !cl.has("vectors")) throw UsageError("--metric value-cosine compares V with the steering vectors: it needs --vectors FILE");
    requireHeatmapFormat(cl.get("out"));   // before the model loads, not after the run

    GenerationOptions gen = generationOptions(cl, 8);
    if (wantedStep >= gen.maxNewTokens)
        throw UsageError("--step " + std::to_string(wantedStep) + " is past the answer's budget: --max-new-tokens " +
                         std::to_string(gen.maxNewTokens) + " decodes steps 0.." + std::to_string(gen.maxNewTokens - 1));
    auto model = loadModel(cl);
    const int64_t kvHeads = model->config().text.numKvHeads;
    const int head = headFlag(cl, kvHeads);
    gen.captureAttention = metric == HeatMetric::Attention;
    const Prompt prompt = promptFromOptions(cl, *model);
    const PlanInputs in = planFromOptions(cl, *model, prompt.span, true);
    const size_t view = viewFlag(cl, prompt.span);
    const bool hasVectors = in.plan.vectors.numLayers() > 0;
    if (hasVectors || cl.has("operator")) echoPlan(in);
    else std::cerr << "plan: none (no --vectors): both streams read the unsteered cache, and the delta maps are zero\n";

    c10::NoGradGuard noGrad;
    Session session(model);
    std::array<KeptAttention, 2> kept;   // 0 unsteered, 1 steered
    SteeredRunCallbacks callbacks;
    callbacks.onStep = [&](const PairEvent& ev) {
        if (!ev.attention || (wantedStep >= 0 && ev.step != wantedStep)) return;
        for (size_t i = 0; i < ev.rows->size(); ++i) {   // a stream that ended has left the batch
            KeptAttention& k = kept[size_t((*ev.rows)[i])];
            k.layers.clear();
            for (const at::Tensor& l : *ev.attention) k.layers.push_back(l.narrow(0, int64_t(i), 1).cpu().clone());
            k.step = ev.step;
            k.id = (*ev.rows)[i] == 1 ? ev.steered.id : ev.unsteered.id;
        }
    };
    const SteeredRunResult run = runSteered(session, prompt, in.plan, gen, callbacks);
    std::cerr << "unsteered: " << run.pair.unsteered.text << "\nsteered:   " << run.pair.steered.text << "\n";

    const KeptAttention& attention = kept[steeredRow ? 1 : 0];
    if (metric == HeatMetric::Attention && attention.layers.empty())
        throw Error("heatmaps: the " + stream + " answer has no step " + std::to_string(wantedStep) + " (it ended after " +
                    std::to_string((steeredRow ? run.pair.steered : run.pair.unsteered).ids.size()) + " tokens)");
    const at::Tensor maps = runHeatmaps(metric, session.snapshot(), run.start.steered.cache, steeredRow, hasVectors ? &in.plan.vectors : nullptr,
                                        attention.layers, kvHeads, head, view);
    saveHeatmaps(cl.get("out"), maps);
    std::cerr << "wrote " << cl.get("out") << ": " << heatMetricName(metric) << " of the " << stream << " run, " << maps.size(0) << " layers x "
              << maps.size(1) << "x" << maps.size(2) << " cells";
    if (prompt.span.hasViews()) std::cerr << " of the " << viewName(prompt.span, view == kSpanGrid ? viewCount(prompt.span) - 1 : view) << " view";
    std::cerr << ", " << (head < 0 ? std::string("mean over KV heads") : "KV head " + std::to_string(head));
    if (metric == HeatMetric::Attention)
        std::cerr << ", attention of step " << attention.step << " (token " << attention.id << " '" << tokenText(model->tokenizer(), attention.id) << "')";
    std::cerr << "\n";
    return 0;
}

} // namespace kvsteer
