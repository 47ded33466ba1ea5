#include "StudyCommands.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "EvalCommands.h"
#include "JobProgress.h"
#include "demo/DemoStudy.h"
#include "io/NumberList.h"
#include "study/StudyJob.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace kvsteer {

namespace {

const char* const kGridFlags[] = {"vectors", "operator", "ck", "cv", "layers", "heads"};

// The grid from the flags; `given` says whether any grid flag was there.
PlanGrid gridFromFlags(const CommandLine& cl, bool* given) {
    *given = false;
    for (const char* f : kGridFlags) *given = *given || cl.has(f);
    *given = *given || cl.has("propagate");
    PlanGrid g;
    try {
        g = planGridFromLists(cl.get("vectors", ""), cl.get("operator", ""), cl.get("ck", ""), cl.get("cv", ""), cl.get("layers", ""));
        if (cl.has("heads")) g.heads = parseIndexList(cl.get("heads"), "--heads");
        if (cl.has("ablate-to")) g.ablateTo = parseAblateTarget(cl.get("ablate-to"), "--ablate-to");
    } catch (const Error& e) {
        throw UsageError(std::string("the grid: ") + e.what());
    }
    g.propagate = cl.has("propagate");
    return g;
}

std::string cell(const nlohmann::json& v) {
    if (!v.is_number()) return "–";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v.get<double>());
    return buf;
}

std::string withInterval(const nlohmann::json& j) {
    return cell(j["value"]) + " [" + cell(j["ci95"][0]) + ", " + cell(j["ci95"][1]) + "]";
}

// The plans as a table: the two axes, then each set's headline.
void printStudy(const nlohmann::ordered_json& s) {
    std::cout << "| plan | target success | preservation |";
    for (const auto& d : s.at("datasets")) std::cout << " " << d.at("name").get<std::string>() << " |";
    std::cout << "\n|---|---|---|";
    for (size_t i = 0; i < s.at("datasets").size(); ++i) std::cout << "---|";
    std::cout << "\n";
    std::set<int> frontier;
    for (const auto& f : s.at("frontier")) frontier.insert(f.get<int>());
    for (const auto& p : s.at("results")) {
        const int index = p.at("plan").get<int>();
        std::cout << "| " << (frontier.count(index) ? "**" : "") << index << " " << p.at("label").get<std::string>() << (frontier.count(index) ? "**" : "")
                  << " | " << withInterval(p.at("target_success")) << " | " << withInterval(p.at("preservation")) << " |";
        for (const auto& d : p.at("datasets")) {
            const auto& h = d.contains("success") ? d["success"] : d["preservation"];
            std::cout << " " << cell(h["value"]) << " |";
        }
        std::cout << "\n";
    }
    std::cout << "\n" << s.at("item_lines").get<int64_t>() << " item x plan lines over " << s.at("clusters").get<int64_t>()
              << " images; target sets: success (steered answer = target), preserve sets: preservation (right unsteered and still right "
                 "steered); a degenerate answer is neither; intervals resample images; **bold** = on the frontier\n";
}

} // namespace

int commandStudy(int argc, char** argv) {
    CommandLine cl(withOptions(withOptions({"suite", "images", "out", "batch", "shard", "synonyms", "vectors", "operator", "ck", "cv", "layers", "heads", "ablate-to"},
                                           generationOptionNames()),
                               modelOptionNames()),
                   {"propagate", "no-prefix-reuse", "skip-bad", "json"});
    cl.parse(argc, argv, 2);
    if (!cl.has("suite") || !cl.has("out")) throw UsageError("study needs --suite SUITE.json and --out DIR");
    EvalOptions o;
    o.batchRows = cl.getInt("batch", 8);
    if (o.batchRows < 2 || o.batchRows > 8) throw UsageError("--batch must be 2..8 (rows per forward pass)");
    o.prefixReuse = !cl.has("no-prefix-reuse");
    o.skipBad = cl.has("skip-bad");
    o.generation = generationOptions(cl, 32);
    const Shard shard = cl.has("shard") ? parseShard(cl.get("shard")) : Shard();

    const StudySuite suite = loadStudySuite(cl.get("suite"), cl.get("images", ""), o.skipBad, KVSTEER_CHAIR_DIR, cl.get("synonyms", ""));
    auto model = loadModel(cl);
    bool flagsGiven = false;
    const PlanGrid flags = gridFromFlags(cl, &flagsGiven);
    std::vector<PlanGrid> grids;
    if (flagsGiven) {
        grids = {flags};
        if (!suite.plans.is_null()) std::cerr << "study: the grid flags replace the suite's \"plans\"\n";
    } else if (!suite.plans.is_null()) {
        grids = planGridsFromJson(suite.plans, std::filesystem::path(suite.path).parent_path().string(), suite.path);
    } else {
        throw UsageError("study needs plans: the grid flags (--vectors A,B --cv 1,2,4 --layers all,early ...) or a \"plans\" list in the suite");
    }
    StudyJob job;
    job.outDir = cl.get("out");
    job.suite = &suite;
    try {
        job.plans = expandPlans(grids, *model);
    } catch (const Error& e) {
        throw UsageError(std::string("the grid does not fit model '") + model->config().name + "': " + e.what());
    }
    job.shardIndex = shard.index;
    job.shardCount = shard.count;

    installStopHandlers();
    std::optional<Progress> progress;
    StudyJobCallbacks callbacks;
    callbacks.onStart = [&](size_t total, size_t done) {
        std::cerr << "study: " << total << " items x " << job.plans.size() << " plans over " << suite.datasets.size() << " sets"
                  << (shard.count > 1 ? " in shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) : "")
                  << (done ? " (" + std::to_string(done) + " items done before: continuing)" : "") << ", model " << model->config().name << "\n";
        for (const StudyPlan& p : job.plans) std::cerr << "  plan " << p.index << ": " << p.label << "\n";
        progress.emplace(total, done);
    };
    callbacks.onItem = [&] { progress->item(); };
    callbacks.onSkipped = [&](const EvalItem&, const std::string& error) { std::cerr << "skipped: " << error << "\n"; };
    callbacks.stopRequested = [] { return stopFlag().load(); };
    const StudyJobResult result = runStudyJob(model, job, o, callbacks);
    if (result.stopped) {
        std::cerr << "\nstudy: stopped; " << job.outDir << " holds every finished item. Run the same command again to continue.\n";
        return 130;
    }
    if (cl.has("json")) std::cout << result.summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    else {
        printStudy(result.summary);
        std::cout << "wrote " << job.outDir << "/{plans.jsonl, items.jsonl, summary.json, summary.csv, frontier.json, frontier.svg, grid.svg}\n";
    }
    return 0;
}

int commandStudyMerge(int argc, char** argv) {
    CommandLine cl({"out"}, {"json"});
    cl.acceptPositional();
    cl.parse(argc, argv, 2);
    if (!cl.has("out") || cl.positional().empty()) throw UsageError("study-merge needs --out DIR and the shard folders");
    const nlohmann::ordered_json summary = mergeStudyShards(cl.positional(), cl.get("out"));
    if (cl.has("json")) std::cout << summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    else printStudy(summary);
    return 0;
}

int commandDemoStudy(int argc, char** argv) {
    CommandLine cl({"out", "images", "seed", "pairs"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("out")) throw UsageError("demo-study needs --out DIR");
    demo::DemoStudyOptions o;
    o.images = cl.getInt("images", o.images);
    o.seed = cl.getU64("seed", o.seed);
    o.pairs = cl.getInt("pairs", o.pairs);
    if (o.images < 1) throw UsageError("--images must be >= 1");
    if (o.pairs < 0) throw UsageError("--pairs must be >= 0");
    const demo::DemoStudyCounts counts = demo::writeDemoStudy(cl.get("out"), o);
    std::cerr << "wrote " << counts.images << " scenes to " << cl.get("out") << ":";
    for (const auto& [name, items] : counts.datasets) std::cerr << " " << name << " (" << items << ")";
    std::cerr << "; suite.json" << (counts.pairs ? ", pairs/pairs.jsonl (" + std::to_string(counts.pairs) + " pairs)" : "") << "\n";
    return 0;
}

} // namespace kvsteer
