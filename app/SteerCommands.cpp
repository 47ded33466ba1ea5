#include "SteerCommands.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "PlanFlags.h"
#include "SteerPython.h"
#include "Error.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/LogProbs.h"
#include "generate/Session.h"
#include "steer/Atlas.h"
#include "steer/SpanMask.h"
#include "steer/PlanOptions.h"
#include "steer/Recipes.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringPlan.h"
#include "steer/LayerRange.h"

#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/ones.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>

namespace kvsteer {

namespace {

std::string oneLine(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r' || c == '|') c = ' ';
    return s;
}

void printNotices(const SteeredRunStart& start) {
    if (start.notices.budgetCut) noteBudgetCut(start.notices.askedTokens, start.maxNewTokens, start.promptTokens, start.contextTokens);
    if (start.notices.nothingPainted) std::cerr << "note: the --mask is zero everywhere: the steered answer is the unsteered one\n";
}

// The span a region mask is read onto: the one the prompt gives this image (built, not run).
VisualSpan promptSpan(const CommandLine& cl, const Model& model, const ImageU8& image) {
    return buildPrompt(model, cl.get("prompt"), cl.has("raw-prompt"), &image).span;
}

// kvsteer sweep --json: the unsteered answer and every cell (README, "sweep --json").
nlohmann::ordered_json sweepJson(const AtlasResult& r, const SteeringPlan& base, const AtlasOptions& options) {
    auto generation = [](const Generation& g) {
        const DegenerationSignals s = degenerationSignals(g);
        return nlohmann::ordered_json{{"ids", g.ids},           {"text", g.text},         {"stopped_at_eos", g.stoppedAtEos},
                                      {"repetition", s.repetition}, {"distinct", s.distinct}, {"stutter", s.stutter},
                                      {"empty", s.empty}};
    };
    nlohmann::ordered_json cells = nlohmann::ordered_json::array();
    for (const AtlasCell& c : r.cells) {
        nlohmann::ordered_json cell = {{"layers", c.setting.layers.label},
                                       {"layer_ids", c.setting.layers.layers},
                                       {"ck", c.setting.ck},
                                       {"cv", c.setting.cv},
                                       {"outcome", outcomeName(c.outcome)}};
        cell.update(generation(c.generation));
        cell["edit_ms"] = c.editMs;
        cells.push_back(cell);
    }
    return {{"operator", operatorName(base.op)},
            {"mode", base.mode == PlanMode::Propagate ? "propagate" : "edit-only"},
            {"max_new_tokens", options.maxNewTokens},
            {"batch_rows", options.batchRows},
            {"unsteered", generation(r.unsteered)},
            {"cells", cells},
            {"total_ms", r.totalMs}};
}

} // namespace

int commandExtract(int argc, char** argv) {
    CommandLine cl(withOptions({"recipe", "prompt", "image-a", "image-b", "image", "mask", "pairs", "out", "key-space", "operator",
                                "ck", "cv", "layers"}, modelOptionNames()),
                   {"pca", "per-position", "raw-prompt"});
    cl.parse(argc, argv, 2);
    if (!cl.has("recipe") || !cl.has("out")) throw UsageError("extract needs --recipe and --out");
    const std::string recipe = cl.get("recipe");
    // A pairs file is read (and its images) before the model: a bad line costs no load.
    std::vector<ImagePair> imagePairs;
    if (recipe == "image-pairs") {
        if (!cl.has("pairs")) throw UsageError("image-pairs needs --pairs FILE.jsonl (and --prompt for lines without one)");
        imagePairs = loadImagePairs(cl.get("pairs"), cl.get("prompt"));
    }
    auto model = loadModel(cl);
    ExtractOptions options;
    options.keySpace = keySpaceFlag(cl);
    options.pca = cl.has("pca");
    options.perPosition = cl.has("per-position");
    options.rawPrompt = cl.has("raw-prompt");
    nlohmann::json inputs = {{"pca", options.pca}, {"per_position", options.perPosition}, {"raw_prompt", options.rawPrompt}};
    SteeringVectors vectors;
    if (recipe == "image-pair") {
        if (!cl.has("image-a") || !cl.has("image-b") || !cl.has("prompt")) throw UsageError("image-pair needs --prompt, --image-a and --image-b");
        vectors = extractImagePair(model, cl.get("prompt"), loadImage(cl.get("image-a")), loadImage(cl.get("image-b")), options);
        inputs.update({{"prompt", cl.get("prompt")}, {"image_a", cl.get("image-a")}, {"image_b", cl.get("image-b")}});
    } else if (recipe == "image-pairs") {
        vectors = extractImagePairs(model, imagePairs, options);
        inputs.update({{"pairs", cl.get("pairs")}, {"n_pairs", imagePairs.size()}});
        if (cl.has("prompt")) inputs["prompt"] = cl.get("prompt");
    } else if (recipe == "region") {
        if (!cl.has("image") || !cl.has("mask") || !cl.has("prompt")) throw UsageError("region needs --prompt, --image and --mask");
        const ImageU8 image = loadImage(cl.get("image"));
        vectors = extractRegion(model, cl.get("prompt"), image, loadSpanMask(cl.get("mask"), promptSpan(cl, *model, image)), options);
        inputs.update({{"prompt", cl.get("prompt")}, {"image", cl.get("image")}, {"mask", cl.get("mask")}});
    } else if (recipe == "text-pairs") {
        if (!cl.has("pairs")) throw UsageError("text-pairs needs --pairs FILE.jsonl");
        const auto pairs = loadTextPairs(cl.get("pairs"));
        vectors = extractTextPairs(model, pairs, options);
        inputs.update({{"pairs", cl.get("pairs")}, {"n_pairs", pairs.size()}});
    } else {
        throw UsageError("--recipe must be image-pair, image-pairs, region or text-pairs");
    }
    SteeringFileInfo info = newVectorsFileInfo(*model, recipe, inputs.dump(), options.keySpace);
    // No template: the prompt itself (image-pairs: the first pair's; lines may carry their own).
    if (options.rawPrompt && recipe != "text-pairs") info.promptTemplate = recipe == "image-pairs" ? imagePairs.front().prompt : cl.get("prompt");
    suggestionsFromFlags(cl, model->config().text.numLayers, info);
    saveSteeringFile(cl.get("out"), vectors, info);
    std::cerr << "wrote " << cl.get("out") << " (" << recipe << ", " << keySpaceName(vectors.keySpace) << ", "
              << (vectors.perPosition() ? "per position" : "per head") << ")\n";
    return 0;
}

constexpr int kMaxLogprobs = 1000;

// steer --json's log-probs: per step, each stream's chosen token and the top K (the model's raw
// distribution, before any sampling cut), and the KL between the two first-step distributions.
struct StepLogProbs {
    int topK = 5;
    nlohmann::ordered_json steps[2] = {nlohmann::ordered_json::array(), nlohmann::ordered_json::array()};   // unsteered, steered
    std::optional<double> firstStepKl;

    void add(const PairEvent& ev, const Tokenizer& tokenizer) {
        const TokenEvent* streams[2] = {&ev.unsteered, &ev.steered};
        at::Tensor logProbs[2];   // each stream's, once a step
        for (int s = 0; s < 2; ++s)
            if (streams[s]->id >= 0 && streams[s]->logits) logProbs[s] = logProbabilities(*streams[s]->logits);
        if (ev.step == 0 && logProbs[0].defined() && logProbs[1].defined()) firstStepKl = klDivergence(logProbs[0], logProbs[1]);
        for (int s = 0; s < 2; ++s) {
            const TokenEvent& t = *streams[s];
            if (!logProbs[s].defined()) continue;   // the stream has ended
            nlohmann::ordered_json top = nlohmann::ordered_json::array();
            for (const TokenLogProb& c : topLogProbs(logProbs[s], topK))
                top.push_back({{"id", c.id}, {"token", tokenText(tokenizer, c.id)}, {"logprob", c.logProb}});
            steps[s].push_back({{"step", ev.step}, {"id", t.id}, {"logprob", logProbOf(logProbs[s], t.id)}, {"top", top}});
        }
    }
};

// --target TEXT: its log-prob as the answer under both caches, teacher-forced.
nlohmann::ordered_json targetJson(const Session& session, const SteeredCache& steered, const std::string& target,
                                  const std::vector<int64_t>& ids) {
    auto total = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
    const double unsteered = total(continuationLogProbs(session, session.snapshot(), session.lastPromptToken(), ids));
    const double steeredLp = total(continuationLogProbs(session, steered.cache, session.lastPromptToken(), ids, steered.attentionBias));
    return {{"text", target}, {"ids", ids}, {"unsteered_logprob", unsteered}, {"steered_logprob", steeredLp}, {"difference", steeredLp - unsteered}};
}

int commandSteer(int argc, char** argv) {
    CommandLine cl(withOptions(withOptions(planOptionNames(), {"logprobs", "target"}), modelOptionNames()),
                   {"propagate", "json", "raw-prompt", "python"});
    cl.parse(argc, argv, 2);
    const bool json = cl.has("json");
    if (cl.has("python") && (json || cl.has("logprobs") || cl.has("target")))
        throw UsageError("--python prints the plan as a Python script and runs nothing: leave out --json, --logprobs and --target");
    StepLogProbs logprobs;
    logprobs.topK = cl.getInt("logprobs", 5);
    if (logprobs.topK < 0 || logprobs.topK > kMaxLogprobs)
        throw UsageError("--logprobs must be 0.." + std::to_string(kMaxLogprobs) + " (the top tokens listed per step)");
    if (cl.has("logprobs") && !json) throw UsageError("--logprobs lists the top tokens in --json's output: add --json");
    auto model = loadModel(cl);
    const GenerationOptions gen = generationOptions(cl, 32);
    const Prompt prompt = promptFromOptions(cl, *model);
    const PlanInputs in = planFromOptions(cl, *model, prompt.span);
    if (cl.has("python")) {
        std::cout << steerAsPython(cl, *model, prompt, in, gen);
        return 0;
    }
    // The target's tokens before the run: an empty one is refused before anything is decoded.
    const std::vector<int64_t> targetIds = cl.has("target") ? model->tokenizer().encode(cl.get("target"), false) : std::vector<int64_t>();
    if (cl.has("target") && targetIds.empty()) throw UsageError("--target: the text has no tokens");
    Session session(model);
    SteeredRunCallbacks callbacks;
    if (!json) echoPlan(in);
    callbacks.onStart = printNotices;
    callbacks.onStep = [&](const PairEvent& ev) {
        if (json) logprobs.add(ev, model->tokenizer());
        else if (!ev.steered.text.empty()) {   // stream the steered answer as it comes
            std::fwrite(ev.steered.text.data(), 1, ev.steered.text.size(), stdout);
            std::fflush(stdout);
        }
    };
    const SteeredRunResult run = runSteered(session, prompt, in.plan, gen, callbacks);
    const GenerationPair& pair = run.pair;
    const nlohmann::ordered_json target = cl.has("target") ? targetJson(session, run.start.steered, cl.get("target"), targetIds) : nlohmann::ordered_json();
    if (json) {
        nlohmann::ordered_json out = {
            {"unsteered", {{"ids", pair.unsteered.ids}, {"text", pair.unsteered.text}}},
            {"steered", {{"ids", pair.steered.ids}, {"text", pair.steered.text}}},
            {"operator", operatorName(in.plan.op)},
            {"mode", in.plan.mode == PlanMode::Propagate ? "propagate" : "edit-only"},
            {"plan", planJson(in)},
            {"max_new_tokens", run.start.maxNewTokens},
            {"edit_ms", run.start.steered.editMs},
            {"decode_ms", pair.decodeMs},
        };
        if (logprobs.firstStepKl) out["first_step_kl"] = *logprobs.firstStepKl;
        if (logprobs.topK > 0) {
            out["unsteered"]["steps"] = logprobs.steps[0];
            out["steered"]["steps"] = logprobs.steps[1];
        }
        if (!target.is_null()) out["target"] = target;
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    } else {
        std::cout << "\n\nunsteered: " << pair.unsteered.text << "\nsteered:   " << pair.steered.text << std::endl;
        if (!target.is_null())
            std::cout << "target " << target["text"].dump() << ": log-prob " << target["unsteered_logprob"].get<double>() << " unsteered, "
                      << target["steered_logprob"].get<double>() << " steered (" << std::showpos << target["difference"].get<double>()
                      << std::noshowpos << ")" << std::endl;
    }
    return 0;
}

int commandSweep(int argc, char** argv) {
    CommandLine cl(withOptions(withOptions(planOptionNames(), {"batch"}), modelOptionNames()), {"propagate", "csv", "json", "raw-prompt"});
    cl.parse(argc, argv, 2);
    auto model = loadModel(cl);
    const GenerationOptions gen = generationOptions(cl, 32);
    const Prompt prompt = promptFromOptions(cl, *model);
    Session session(model);
    session.prefill(prompt, gen.maxNewTokens);
    const int layerCount = model->config().text.numLayers;
    // Each comma-separated item of --layers / --ck / --cv is one setting; the sweep is their
    // product, run by the core's atlas (the studio's Atlas dock runs the same code): greedy, the
    // cells decoded --batch at a time from the one snapshot, each classified against the
    // unsteered answer (same / different / degenerate, see core/steer/Atlas.h).
    std::vector<LayerRange> layerSettings;
    try {
        layerSettings = parseLayerRanges(cl.get("layers", "all"), layerCount);
    } catch (const Error& e) {
        throw UsageError(std::string("--layers: ") + e.what());
    }
    // Every setting replaces the plan's layers: its --layers items are not one plan's layer set.
    PlanInputs base = planFromOptions(cl.without("layers"), *model, prompt.span);
    // Unset, c_k and c_v keep the plan's (the vector file's suggestion, else 1): the demo file's
    // c_k 0 stays 0, as in `steer`.
    const std::vector<double> cks = cl.has("ck") ? numbersFlag(cl, "ck") : std::vector<double>{base.plan.ck.front()};
    const std::vector<double> cvs = cl.has("cv") ? numbersFlag(cl, "cv") : std::vector<double>{base.plan.cv.front()};
    std::vector<AtlasSetting> settings;
    for (const auto& layers : layerSettings)
        for (double ck : cks)
            for (double cv : cvs) settings.push_back({layers, ck, cv});
    AtlasOptions options;
    options.maxNewTokens = std::max(1, newTokensThatFit(model->config().text, int64_t(prompt.ids.size()), gen.maxNewTokens));
    if (options.maxNewTokens < gen.maxNewTokens)
        noteBudgetCut(gen.maxNewTokens, options.maxNewTokens, int64_t(prompt.ids.size()), model->config().text.maxPositionEmbeddings);
    options.batchRows = cl.getInt("batch", options.batchRows);
    if (options.batchRows < 1 || options.batchRows > 8) throw UsageError("--batch must be 1..8");

    const bool csv = cl.has("csv"), json = cl.has("json");
    auto print = [&](const std::string& layers, double ck, double cv, const std::string& outcome, const Generation& g, bool changed) {
        const DegenerationSignals s = degenerationSignals(g);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", s.repetition);
        const char* eos = g.stoppedAtEos ? "yes" : "no";
        if (csv) {
            std::string quoted = g.text;
            for (size_t i = 0; (i = quoted.find('"', i)) != std::string::npos; i += 2) quoted.insert(i, "\"");
            std::cout << layers << "," << ck << "," << cv << "," << outcome << "," << (changed ? "yes" : "no") << "," << buf << ","
                      << s.distinct << "," << eos << ",\"" << quoted << "\"\n";
        } else {
            std::cout << "| " << layers << " | " << ck << " | " << cv << " | " << outcome << " | " << (changed ? "yes" : "no") << " | " << buf
                      << " | " << s.distinct << " | " << eos << " | " << oneLine(g.text) << " |\n";
        }
        std::cout.flush();
    };
    if (csv) std::cout << "layers,ck,cv,outcome,changed,repetition,distinct,eos,text\n";
    else if (!json)
        std::cout << "| layers | ck | cv | outcome | changed | repetition | distinct | eos | text |\n|---|---|---|---|---|---|---|---|---|\n";
    // Rows are printed in the grid's order as they come (a batch's rows may finish out of order).
    std::map<int, AtlasCell> waiting;
    int printed = 0;
    Generation unsteered;
    const AtlasResult result = runAtlas(
        session, base.plan, settings, options,
        [&](const AtlasCell& cell) {
            if (json) return;
            waiting[cell.index] = cell;
            for (auto it = waiting.find(printed); it != waiting.end(); it = waiting.find(++printed)) {
                const AtlasCell& c = it->second;
                print(c.setting.layers.label, c.setting.ck, c.setting.cv, outcomeName(c.outcome), c.generation, c.generation.ids != unsteered.ids);
                waiting.erase(it);
            }
        },
        nullptr,
        [&](const Generation& u) {
            unsteered = u;
            if (!json) print("none", 0, 0, "unsteered", u, false);
        });
    if (json) std::cout << sweepJson(result, base.plan, options).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return 0;
}

} // namespace kvsteer
