#include "EvalCommands.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "JobProgress.h"
#include "PlanFlags.h"
#include "demo/DemoPope.h"
#include "eval/Chair.h"
#include "eval/EvalJob.h"
#include "eval/EvalReport.h"
#include "eval/EvalRun.h"
#include "io/TextFile.h"
#include "models/ModelRegistry.h"
#include "steer/SteeringOperator.h"
#include "steer/StudioSession.h"

#include <ATen/ops/count_nonzero.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <unistd.h>

namespace kvsteer {

namespace {

} // namespace

Shard parseShard(const std::string& text) {
    const auto slash = text.find('/');
    try {
        if (slash != std::string::npos) {
            size_t a = 0, b = 0;
            const int k = std::stoi(text.substr(0, slash), &a), n = std::stoi(text.substr(slash + 1), &b);
            if (a == slash && b == text.size() - slash - 1 && n >= 1 && k >= 0 && k < n) return {k, n};
        }
    } catch (const std::exception&) {
    }
    throw UsageError("--shard '" + text + "': expected K/N with 0 <= K < N (e.g. 0/8)");
}

namespace {

// The steering spec as text whose hash a resumed run and a shard must match: every plan flag, the
// vector file's bytes, the mask, the session's plan, map and vectors, and how the answers are chosen.
std::string steeringHash(const CommandLine& cl, const GenerationOptions& g, const StudioSession* session) {
    nlohmann::ordered_json spec;
    for (const char* flag : {"operator", "layers", "heads", "ck", "cv", "ablate-to", "mask"}) spec[flag] = cl.get(flag, "");
    spec["propagate"] = cl.has("propagate");
    spec["vectors"] = cl.has("vectors") ? hexHash(stableHash(readTextFile(cl.get("vectors")))) : "";
    if (session) {   // its steering, not the file's bytes: re-saving a session (new answers, time) keeps the hash
        const PlanOptions& p = session->plan;
        const at::Tensor map = session->strength.contiguous();
        // The names, as before the plan was typed: a run begun then resumes now.
        spec["session"] = {operatorName(*p.op), p.ck, p.cv, *p.layers, p.heads, p.propagate, ablateTargetName(p.ablateTo), map.size(0), map.size(1),
                           hexHash(stableHash(std::string(static_cast<const char*>(map.data_ptr()), size_t(map.numel()) * sizeof(float)))),
                           hexHash(stableHash(session->vectorsBytes))};
    }
    spec["sampling"] = {g.sampling.temperature, g.sampling.topK, g.sampling.topP, g.sampling.seed};
    return hexHash(stableHash(spec.dump()));
}

// The plan: the session's, with every plan flag given on the command line winning over it.
PlanOptions sessionPlan(const StudioSession& session, const CommandLine& cl, const PlanOptions& flags) {
    PlanOptions p = session.plan;
    if (cl.has("operator")) p.op = flags.op;
    if (cl.has("layers")) p.layers = flags.layers;
    if (cl.has("heads")) p.heads = flags.heads;
    if (cl.has("ck")) p.ck = flags.ck;
    if (cl.has("cv")) p.cv = flags.cv;
    if (cl.has("propagate")) p.propagate = true;
    if (cl.has("ablate-to")) p.ablateTo = flags.ablateTo;
    return p;
}

// The session's embedded vector file, read through a temporary file (the reader maps files).
SteeringVectors sessionVectors(const StudioSession& session, const Model& model, SteeringFileInfo* info) {
    const std::filesystem::path tmp =
        std::filesystem::temp_directory_path() / ("kvsteer-session-vectors-" + std::to_string(::getpid()) + ".safetensors");
    writeTextAtomically(tmp.string(), session.vectorsBytes);
    try {
        SteeringVectors v = loadSteeringFile(tmp.string(), model, info);
        std::filesystem::remove(tmp);
        return v;
    } catch (const Error& e) {
        std::filesystem::remove(tmp);
        throw Error("session " + session.path + ", its vectors: " + e.what());
    }
}

// The model: --model, else the session's own, else the bundled demo model.
std::shared_ptr<Model> evalModel(const CommandLine& cl) {
    if (!cl.has("model") && cl.has("session")) {
        const std::string dir = studioSessionModelDirectory(cl.get("session"));
        if (!dir.empty()) return loadModelFrom(dir, cl);
    }
    return loadModel(cl);
}

// Where an item without its own mask or box gets its cells.
std::string cellsSource(const EvalSteering& s) {
    if (!s.mask.empty()) return "--mask " + s.mask;
    if (s.strength.defined())
        return "the session's painted map (" + std::to_string(at::count_nonzero(s.strength).item<int64_t>()) + " of " +
               std::to_string(s.strength.numel()) + " cells)";
    return "the vector file's mask, else every cell";
}

// --metric chair: every item names the image's objects, each one the table knows (before any item).
void checkChairItems(const EvalDataset& dataset, const SynonymTable& table) {
    for (const EvalItem& item : dataset.items) {
        const std::string where = "dataset " + dataset.path + " line " + std::to_string(item.line) + ": ";
        if (item.objects.empty()) throw Error(where + "--metric chair needs \"objects\" (the objects the image holds) on every item");
        for (const std::string& o : item.objects) try {
                categoryOf(table, o);
            } catch (const Error& e) {
                throw Error(where + e.what());
            }
    }
}

// The resolved plan as run.json and summary.json record it.
nlohmann::ordered_json resolvedPlanJson(const PlanOptions& plan, const std::string& vectors, const std::string& cells) {
    return {{"operator", operatorName(*plan.op)},
            {"ck", plan.ck},
            {"cv", plan.cv},
            {"layers", plan.layers->empty() ? nlohmann::ordered_json("all") : nlohmann::ordered_json(*plan.layers)},
            {"heads", plan.heads.empty() ? nlohmann::ordered_json("all") : nlohmann::ordered_json(plan.heads)},
            {"mode", plan.propagate ? "propagate" : "edit-only"},
            {"vectors", vectors},
            {"cells", "an item's mask or box, else " + cells}};
}

// What will be applied, said once on stderr before the run.
void echoPlan(const EvalSteering& s, const EvalOptions& o, const Model& model, size_t items, const Shard& shard, size_t done) {
    const PlanOptions plan = resolvePlanOptions(s.plan, s.vectorsInfo);
    auto list = [](const auto& v) {
        std::string t;
        for (auto x : v) t += (t.empty() ? "" : ",") + nlohmann::json(x).dump();
        return t;
    };
    const std::string layers = plan.layers->empty() ? "all" : list(*plan.layers);
    std::cerr << "eval: " << items << " items" << (shard.count > 1 ? " in shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) : "")
              << (done ? " (" + std::to_string(done) + " done before: continuing)" : "") << ", model " << model.config().name << ", metric "
              << evalMetricName(o.metric) << "\n      operator " << operatorName(*plan.op) << ", c_k " << list(plan.ck) << ", c_v " << list(plan.cv) << ", layers "
              << layers << (s.plan.propagate ? ", propagate" : ", edit-only") << "\n      cells: an item's mask or box, else "
              << cellsSource(s) << "; prefix reuse "
              << (o.prefixReuse ? "on" : "off") << ", " << o.batchRows << " rows per batch, up to " << o.generation.maxNewTokens << " new tokens\n";
}

void printSummary(const nlohmann::ordered_json& s) {
    std::printf("| metric | unsteered | steered | steered - unsteered | 95 %% CI |\n|---|---|---|---|---|\n");
    for (auto it = s.at("unsteered").begin(); it != s.at("unsteered").end(); ++it) {
        const auto& d = s.at("difference").at(it.key());
        std::printf("| %s | %.3f | %.3f | %+.3f | [%+.3f, %+.3f] |\n", it.key().c_str(), it.value().get<double>(),
                    s.at("steered").at(it.key()).get<double>(), d.at("value").get<double>(), d.at("ci95")[0].get<double>(),
                    d.at("ci95")[1].get<double>());
    }
    const auto& o = s.at("outcomes");
    std::printf("\n%lld items; steering changed %.1f %% of the answers (same %lld, different %lld, degenerate %lld); McNemar p = %.4g "
                "(item-level)\nintervals: paired bootstrap resampling the %lld images (an image's questions together)\n",
                static_cast<long long>(s.at("items").get<int64_t>()), 100 * s.at("changed_fraction").get<double>(),
                static_cast<long long>(o.at("same").get<int64_t>()), static_cast<long long>(o.at("different").get<int64_t>()),
                static_cast<long long>(o.at("degenerate").get<int64_t>()), s.at("mcnemar_p").get<double>(),
                static_cast<long long>(s.at("bootstrap").value("clusters", int64_t(0))));
}

} // namespace

int commandEval(int argc, char** argv) {
    std::set<std::string> options = withOptions(planOptionNames(), {"data", "images", "out", "metric", "synonyms", "batch", "shard", "session"});
    options.erase("image");
    options.erase("prompt");
    CommandLine cl(withOptions(options, modelOptionNames()), {"propagate", "no-prefix-reuse", "skip-bad", "json"});
    cl.parse(argc, argv, 2);
    if (!cl.has("data") || !cl.has("out")) throw UsageError("eval needs --data FILE.jsonl and --out DIR");
    EvalOptions o;
    try {
        o.metric = parseEvalMetric(cl.get("metric", "pope"));
    } catch (const Error& e) {
        throw UsageError(std::string("--metric: ") + e.what());
    }
    o.batchRows = cl.getInt("batch", 8);
    if (o.batchRows < 2 || o.batchRows > 8) throw UsageError("--batch must be 2..8 (rows per forward pass, two per question)");
    o.prefixReuse = !cl.has("no-prefix-reuse");
    o.skipBad = cl.has("skip-bad");
    o.generation = generationOptions(cl, 32);
    const Shard shard = cl.has("shard") ? parseShard(cl.get("shard")) : Shard();

    const EvalDataset dataset = loadEvalDataset(cl.get("data"), cl.get("images", ""), o.skipBad);
    std::optional<SynonymTable> chairTable;
    if (o.metric == EvalMetric::Chair) {
        chairTable = resolveSynonymTable(cl.get("synonyms", "coco"), KVSTEER_CHAIR_DIR);
        o.chairTable = &*chairTable;
        checkChairItems(dataset, *chairTable);
    } else if (cl.has("synonyms")) {
        throw UsageError("--synonyms is for --metric chair");
    }
    auto model = evalModel(cl);
    const int layers = model->config().text.numLayers;
    std::optional<StudioSession> session;
    if (cl.has("session")) {
        session = readStudioSession(cl.get("session"), layers);
        const std::string& hash = session->modelConfigHash;
        if (!hash.empty() && hash != model->config().configHash)
            throw Error("session " + session->path + ": made with model '" + session->modelName + "' (config hash " + hash +
                        "), but the loaded model is '" + model->config().name + "' (config hash " + model->config().configHash + ")");
    }
    EvalSteering steering;
    std::optional<SteeringVectors> vectors;
    if (cl.has("vectors")) vectors = loadSteeringFile(cl.get("vectors"), *model, &steering.vectorsInfo);
    else if (session && !session->vectorsBytes.empty()) vectors = sessionVectors(*session, *model, &steering.vectorsInfo);
    steering.vectors = vectors ? &*vectors : nullptr;
    steering.plan = planOptionsFromFlags(cl, layers);
    if (session) steering.plan = sessionPlan(*session, cl, steering.plan);
    steering.mask = cl.get("mask", "");
    if (session && steering.mask.empty()) steering.strength = session->strength;
    const PlanOptions resolved = resolvePlanOptions(steering.plan, steering.vectorsInfo);
    if (operatorNeedsVectors(*resolved.op) && !vectors) throw UsageError("operator '" + operatorName(*resolved.op) + "' needs --vectors FILE");
    try {   // a plan that cannot apply to this model is refused before any item
        checkPlanChoices(resolved, steering.vectors, *model);
    } catch (const Error& e) {
        throw UsageError(std::string("the plan does not fit model '") + model->config().name + "': " + e.what());
    }

    std::vector<const EvalItem*> todo;
    for (const EvalItem& item : dataset.items)
        if (inShard(item, shard.index, shard.count)) todo.push_back(&item);
    RunIdentity identity = runIdentity(dataset, *model, steeringHash(cl, o.generation, session ? &*session : nullptr),
                                       evalMetricName(o.metric), o.generation.maxNewTokens, int64_t(todo.size()));
    identity.shardIndex = shard.index;
    identity.shardCount = shard.count;
    identity.plan = resolvedPlanJson(resolved, cl.get("vectors", session ? "(the session's)" : ""), cellsSource(steering));
    EvalJob job;
    job.outDir = cl.get("out");
    job.identity = identity;
    job.items = todo;
    job.badLines = dataset.bad;

    installStopHandlers();
    std::optional<Progress> progress;
    EvalJobCallbacks callbacks;
    callbacks.onStart = [&](size_t total, size_t done) {
        echoPlan(steering, o, *model, total, shard, done);
        progress.emplace(total, done);
    };
    callbacks.onItem = [&](const EvalItemResult&) { progress->item(); };
    callbacks.onSkipped = [&](const EvalItem&, const std::string& error) { std::cerr << "skipped: " << error << "\n"; };
    callbacks.stopRequested = [] { return stopFlag().load(); };
    const EvalJobResult result = runEvalJob(model, job, steering, o, callbacks);
    const std::string& out = job.outDir;
    if (result.stopped) {
        std::cerr << "\neval: stopped after " << result.totals.items << " more items; " << out
                  << " holds every finished item. Run the same command again to continue.\n";
        return 130;
    }
    const nlohmann::ordered_json& summary = result.summary;
    if (cl.has("json")) {
        std::cout << summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    } else {
        printSummary(summary);
        std::cout << "wrote " << out << "/{items.jsonl, summary.json, summary.csv, metrics.svg}\n";
    }
    return 0;
}

int commandEvalMerge(int argc, char** argv) {
    CommandLine cl({"out"}, {"json"});
    cl.acceptPositional();
    cl.parse(argc, argv, 2);
    if (!cl.has("out") || cl.positional().empty()) throw UsageError("eval-merge needs --out DIR and the shard folders");
    const nlohmann::ordered_json summary = mergeShards(cl.positional(), cl.get("out"));
    if (cl.has("json")) std::cout << summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    else printSummary(summary);
    return 0;
}

int commandDemoPope(int argc, char** argv) {
    CommandLine cl({"out", "images", "seed"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("out")) throw UsageError("demo-pope needs --out DIR");
    demo::DemoPopeOptions o;
    o.images = cl.getInt("images", o.images);
    o.seed = cl.getU64("seed", o.seed);
    if (o.images < 1) throw UsageError("--images must be >= 1");
    const int items = demo::writeDemoPope(cl.get("out"), o);
    std::cerr << "wrote " << items << " questions about " << o.images << " scenes to " << cl.get("out") << "/pope.jsonl\n";
    return 0;
}

} // namespace kvsteer
