#include "eval/EvalReport.h"

#include "Error.h"
#include "eval/PairedStatistics.h"
#include "eval/ShardMerge.h"
#include "io/FolderLock.h"
#include "io/TextFile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

ordered_json identityJson(const RunIdentity& id) {
    return {{"kvsteer_version", KVSTEER_VERSION},
            {"dataset", {{"path", id.datasetPath}, {"hash", id.datasetHash}, {"items", id.datasetItems}}},
            {"model", {{"directory", id.modelDirectory}, {"config_hash", id.modelConfigHash}}},
            {"steering_hash", id.steeringHash},
            {"metric", id.metric},
            {"max_new_tokens", id.maxNewTokens},
            {"shard", {{"index", id.shardIndex}, {"count", id.shardCount}, {"items", id.shardItems}}},
            {"plan", id.plan}};
}

RunIdentity identityFrom(const json& j, const std::string& file) {
    try {
        RunIdentity id;
        id.datasetPath = j.at("dataset").at("path").get<std::string>();
        id.datasetHash = j.at("dataset").at("hash").get<std::string>();
        id.datasetItems = j.at("dataset").at("items").get<int64_t>();
        id.modelDirectory = j.at("model").at("directory").get<std::string>();
        id.modelConfigHash = j.at("model").at("config_hash").get<std::string>();
        id.steeringHash = j.at("steering_hash").get<std::string>();
        id.metric = j.at("metric").get<std::string>();
        id.maxNewTokens = j.at("max_new_tokens").get<int>();
        id.shardIndex = j.at("shard").at("index").get<int>();
        id.shardCount = j.at("shard").at("count").get<int>();
        id.shardItems = j.at("shard").at("items").get<int64_t>();
        id.plan = j.value("plan", ordered_json());
        return id;
    } catch (const json::exception& e) {
        throw Error(file + ": not a kvsteer eval run file (" + e.what() + ")");
    }
}

// The fields two runs must share to be one run: what differs, as "dataset (a != b)", ...
std::vector<std::string> differences(const RunIdentity& a, const RunIdentity& b, bool sameShard) {
    std::vector<std::string> d;
    auto check = [&](const char* what, const std::string& x, const std::string& y) {
        if (x != y) d.push_back(std::string(what) + " (" + x + " there, " + y + " here)");
    };
    check("dataset hash", a.datasetHash, b.datasetHash);
    check("model config hash", a.modelConfigHash, b.modelConfigHash);
    if (a.steeringHash != b.steeringHash) {
        // Name the plan's fields that differ; the hash alone when the plans read alike (the
        // vector file's bytes, the mask or the sampling differ) or one was not recorded.
        const size_t before = d.size();
        if (a.plan.is_object() && b.plan.is_object())
            for (auto it = b.plan.begin(); it != b.plan.end(); ++it) {
                const ordered_json there = a.plan.value(it.key(), ordered_json());
                if (there != it.value()) d.push_back("plan " + it.key() + " (" + there.dump() + " there, " + it.value().dump() + " here)");
            }
        if (d.size() == before) check("steering spec hash", a.steeringHash, b.steeringHash);
    }
    check("metric", a.metric, b.metric);
    check("max new tokens", std::to_string(a.maxNewTokens), std::to_string(b.maxNewTokens));
    check("shard count", std::to_string(a.shardCount), std::to_string(b.shardCount));
    if (sameShard) check("shard", std::to_string(a.shardIndex), std::to_string(b.shardIndex));
    return d;
}

// The scores summarize() reads back from an item line.
ScoredAnswer scoredFrom(const json& item, const char* condition) {
    ScoredAnswer s;
    s.correct = item.at(condition).at("correct").get<bool>();
    s.saidYes = item.at(condition).value("said_yes", false);
    s.labelYes = item.value("label_yes", false);
    const json chair = item.at(condition).value("chair", json::object());
    s.mentions = chair.value("mentions", 0);
    s.hallucinated = chair.value("hallucinated", 0);
    s.groundTruth = chair.value("ground_truth", 0);
    s.recalled = chair.value("recalled", 0);
    return s;
}

// An item line's id; `line` names it in the error when it has none.
std::string itemId(const json& item, const std::string& path, size_t line) {
    const auto id = item.find("id");   // end() for a line that is not an object
    if (id == item.end() || !id->is_string()) throw Error(path + ": line " + std::to_string(line) + " has no string \"id\"");
    return id->get<std::string>();
}

// Item k is line k + 1. An id twice means two runs wrote the folder at once (or lines were
// copied in): counting both would weigh the item double, so the folder is refused instead.
void checkOneLinePerId(const std::string& path, const std::vector<json>& items, const std::function<std::string(const json&)>& keyOf) {
    std::map<std::string, size_t> lineOf;
    for (size_t i = 0; i < items.size(); ++i) {
        std::string id;
        try {
            id = keyOf ? keyOf(items[i]) : itemId(items[i], path, i + 1);
        } catch (const json::exception& e) {
            throw Error(path + ": line " + std::to_string(i + 1) + " is not an item line (" + e.what() + ")");
        }
        const auto [it, fresh] = lineOf.emplace(id, i + 1);
        if (!fresh)
            throw Error(path + ": id \"" + id + "\" is on line " + std::to_string(it->second) + " and on line " + std::to_string(i + 1) +
                        "; keep one line per id: the folder was written by two runs at once; delete the folder and rerun, or remove the "
                        "later duplicate lines");
    }
}

std::vector<json> readLines(const std::string& path) {
    std::vector<json> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(json::parse(line));
    return lines;
}

std::string fixed(double v, int digits) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(digits);
    s << v;
    return s.str();
}

// The plan in one line, for a chart's title: "add, c_k [1], c_v [16], layers all, edit-only, red-to-blue.safetensors".
std::string planLine(const ordered_json& plan) {
    if (!plan.is_object()) return "plan not recorded";
    std::string vectors = plan.value("vectors", "");
    vectors = vectors.empty() ? "no vectors" : fs::path(vectors).filename().string();
    const json layers = plan.value("layers", json("all"));
    std::string line = plan.value("operator", "?") + ", c_k " + plan.value("ck", json()).dump() + ", c_v " + plan.value("cv", json()).dump() +
                       ", layers " + (layers.is_string() ? layers.get<std::string>() : layers.dump()) + ", " + plan.value("mode", "") + ", " + vectors;
    std::string escaped;   // SVG text: & and < must be entities
    for (char ch : line) escaped += ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : std::string(1, ch);
    return escaped;
}

// Bars of each metric, unsteered beside steered, and below them each difference with its interval.
std::string metricsSvg(const ordered_json& summary) {
    const ordered_json& u = summary.at("unsteered");
    const ordered_json& s = summary.at("steered");
    const ordered_json& diff = summary.at("difference");
    const int n = int(u.size()), slot = 120, left = 60, top = 50, barH = 200, width = std::max(left + n * slot + 40, 640);
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"470\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"22\" font-size=\"14\">" << summary.at("items").get<int64_t>() << " items, metric "
      << summary.at("metric").get<std::string>() << ": unsteered (grey) and steered (blue)</text>\n"
      << "<text x=\"" << left << "\" y=\"36\" font-size=\"11\" fill=\"#444\">" << planLine(summary.value("plan", ordered_json())) << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top + barH << "\" x2=\"" << width - 20 << "\" y2=\"" << top + barH << "\" stroke=\"#444\"/>\n";
    int i = 0;
    for (auto it = u.begin(); it != u.end(); ++it, ++i) {
        const double a = it.value().get<double>(), b = s.at(it.key()).get<double>();
        const int x = left + i * slot + 20;
        auto bar = [&](int bx, double v, const char* color) {
            const int h = int(v * barH);
            o << "<rect x=\"" << bx << "\" y=\"" << top + barH - h << "\" width=\"36\" height=\"" << h << "\" fill=\"" << color << "\"/>\n"
              << "<text x=\"" << bx + 18 << "\" y=\"" << top + barH - h - 4 << "\" text-anchor=\"middle\">" << fixed(v, 3) << "</text>\n";
        };
        bar(x, a, "#9aa0a6");
        bar(x + 40, b, "#1a73e8");
        o << "<text x=\"" << x + 38 << "\" y=\"" << top + barH + 16 << "\" text-anchor=\"middle\">" << it.key() << "</text>\n";
        // The difference on a -1 .. 1 scale, with its 95 % interval.
        const ordered_json& d = diff.at(it.key());
        const int mid = top + barH + 120, scale = 80;
        auto y = [&](double v) { return mid - int(v * scale); };
        o << "<line x1=\"" << x << "\" y1=\"" << mid << "\" x2=\"" << x + 76 << "\" y2=\"" << mid << "\" stroke=\"#ccc\"/>\n"
          << "<line x1=\"" << x + 38 << "\" y1=\"" << y(d.at("ci95")[0].get<double>()) << "\" x2=\"" << x + 38 << "\" y2=\""
          << y(d.at("ci95")[1].get<double>()) << "\" stroke=\"#d93025\" stroke-width=\"2\"/>\n"
          << "<circle cx=\"" << x + 38 << "\" cy=\"" << y(d.at("value").get<double>()) << "\" r=\"4\" fill=\"#d93025\"/>\n"
          << "<text x=\"" << x + 38 << "\" y=\"" << mid + scale + 16 << "\" text-anchor=\"middle\">" << fixed(d.at("value").get<double>(), 3)
          << " [" << fixed(d.at("ci95")[0].get<double>(), 3) << ", " << fixed(d.at("ci95")[1].get<double>(), 3) << "]</text>\n";
    }
    o << "<text x=\"" << left << "\" y=\"" << top + barH + 40 << "\">steered - unsteered, 95 % paired-bootstrap interval (axis -1 .. 1)</text>\n"
      << "</svg>\n";
    return o.str();
}

std::string summaryCsv(const ordered_json& summary) {
    std::ostringstream o;
    o << "metric,unsteered,steered,difference,ci95_lo,ci95_hi\n";
    for (auto it = summary.at("unsteered").begin(); it != summary.at("unsteered").end(); ++it) {
        const ordered_json& d = summary.at("difference").at(it.key());
        o << it.key() << "," << it.value().get<double>() << "," << summary.at("steered").at(it.key()).get<double>() << ","
          << d.at("value").get<double>() << "," << d.at("ci95")[0].get<double>() << "," << d.at("ci95")[1].get<double>() << "\n";
    }
    o << "changed_fraction," << summary.at("changed_fraction").get<double>() << ",,,,\n";
    o << "mcnemar_p," << summary.at("mcnemar_p").get<double>() << ",,,,\n";
    return o.str();
}

} // namespace

bool inShard(const EvalItem& item, int shardIndex, int shardCount) {
    return shardCount <= 1 || int(stableHash(item.id) % uint64_t(shardCount)) == shardIndex;
}

std::string joinedProblems(const std::vector<std::string>& problems) {
    std::string s;
    for (const std::string& p : problems) s += (s.empty() ? "" : "; ") + p;
    return s;
}

void openRunDirectory(const std::string& dir, const RunIdentity& identity) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) throw Error("output folder " + dir + ": cannot create it");
    const std::string file = (fs::path(dir) / "run.json").string();
    if (fs::exists(file)) {
        const RunIdentity there = readRunIdentity(dir);
        const std::vector<std::string> d = differences(there, identity, true);
        if (!d.empty()) throw Error("output folder " + dir + " holds another run: " + joinedProblems(d) + " (use a new folder)");
        return;
    }
    writeTextAtomically(file, identityJson(identity).dump(2) + "\n");
}

RunIdentity readRunIdentity(const std::string& dir) {
    const std::string file = (fs::path(dir) / "run.json").string();
    json j;
    try {
        j = json::parse(readTextFile(file));
    } catch (const json::exception& e) {
        throw Error(file + ": not valid JSON (" + e.what() + ")");
    }
    return identityFrom(j, file);
}

std::vector<json> readDoneItems(const std::string& dir, bool repairTornLine) { return readDoneItems(dir, repairTornLine, {}); }

std::vector<json> readDoneItems(const std::string& dir, bool repairTornLine, const std::function<std::string(const json&)>& keyOf) {
    const std::string path = (fs::path(dir) / "items.jsonl").string();
    if (!fs::exists(path)) return {};
    const std::string text = readTextFile(path);
    std::vector<json> done;
    size_t at = 0, kept = 0;   // kept: bytes of whole, valid lines
    while (at < text.size()) {
        const size_t end = text.find('\n', at);
        const bool last = end == std::string::npos || end + 1 >= text.size();
        bool whole = end != std::string::npos;   // a line without its newline was cut short
        if (whole) {
            try {
                done.push_back(json::parse(text.substr(at, end - at)));
            } catch (const json::exception&) {
                whole = false;
            }
        }
        if (!whole) {
            if (!last) throw Error(path + ": line " + std::to_string(done.size() + 1) + " is not valid JSON and is not the last line");
            break;
        }
        at = kept = end + 1;
    }
    checkOneLinePerId(path, done, keyOf);
    if (repairTornLine && kept < text.size()) fs::resize_file(path, kept);   // a killed run's torn last line
    return done;
}

std::vector<json> readSkipped(const std::string& dir) {
    const std::string path = (fs::path(dir) / "skipped.jsonl").string();
    return fs::exists(path) ? readLines(path) : std::vector<json>();
}

ItemWriter::ItemWriter(const std::string& dir) : dir_(dir) {
    items_ = std::fopen((fs::path(dir) / "items.jsonl").c_str(), "ab");
    skipped_ = std::fopen((fs::path(dir) / "skipped.jsonl").c_str(), "ab");
    if (!items_ || !skipped_) throw Error("output folder " + dir + ": cannot write items.jsonl / skipped.jsonl");
}

ItemWriter::~ItemWriter() {
    if (items_) std::fclose(items_);
    if (skipped_) std::fclose(skipped_);
}

namespace {

void appendFlushed(std::FILE* f, const std::string& text, const std::string& dir) {
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0 || ::fsync(fileno(f)) != 0)
        throw Error("output folder " + dir + ": cannot append to items.jsonl");
}

} // namespace

void ItemWriter::write(const json& line) { appendFlushed(items_, line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", dir_); }

void ItemWriter::writeTogether(const std::vector<ordered_json>& lines) {
    std::string text;
    for (const ordered_json& l : lines) text += l.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    appendFlushed(items_, text, dir_);
}

void ItemWriter::skipped(const std::string& id, int line, const std::string& error) {
    const std::string s = ordered_json{{"id", id}, {"line", line}, {"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::fwrite(s.data(), 1, s.size(), skipped_);
    std::fflush(skipped_);
}

ordered_json itemJson(const EvalItemResult& r, EvalMetric metric) {
    auto condition = [&](const Generation& g, const ScoredAnswer& s) {
        ordered_json c = {{"ids", g.ids}, {"text", g.text}, {"correct", s.correct}};
        if (metric == EvalMetric::Pope) c["said_yes"] = s.saidYes;
        if (metric == EvalMetric::Chair)
            c["chair"] = {{"mentions", s.mentions}, {"hallucinated", s.hallucinated}, {"ground_truth", s.groundTruth}, {"recalled", s.recalled}};
        return c;
    };
    ordered_json j = {{"index", r.item->index}, {"id", r.item->id}, {"image", r.item->image}, {"category", r.item->category},
                      {"question", r.item->question}, {"answers", r.item->answers}};
    j["cells"] = {{"source", r.cellsSource.empty() ? "vectors' mask or all" : r.cellsSource}, {"count", r.cells}};
    if (r.item->box) j["cells"]["box"] = *r.item->box;
    if (metric == EvalMetric::Pope) j["label_yes"] = r.unsteeredScore.labelYes;
    j["unsteered"] = condition(r.unsteered, r.unsteeredScore);
    j["steered"] = condition(r.steered, r.steeredScore);
    j["outcome"] = outcomeName(r.outcome);
    j["timings"] = {{"prefix_reused", r.prefixReused}, {"prefill_ms", r.prefillMs}, {"edit_ms", r.editMs}, {"decode_ms", r.decodeMs}};
    return j;
}

ordered_json summarize(const RunIdentity& identity, std::vector<json> items, const RunTimings& timings, const std::vector<json>& skipped) {
    std::set<std::string> ids;   // the callers check with line numbers; this is the last guard
    for (const json& item : items)
        if (!ids.insert(item.at("id").get<std::string>()).second)
            throw Error("summary: item \"" + item.at("id").get<std::string>() + "\" is there twice; each item is counted once");
    std::sort(items.begin(), items.end(), [](const json& a, const json& b) { return a.at("index").get<int64_t>() < b.at("index").get<int64_t>(); });
    const EvalMetric metric = parseEvalMetric(identity.metric);
    std::vector<ScoredAnswer> u, s;
    std::vector<std::string> images;   // the bootstrap's clusters; an item without an image is its own
    int64_t changed = 0, b = 0, c = 0;
    std::map<std::string, int64_t> outcomes{{"same", 0}, {"different", 0}, {"degenerate", 0}};
    for (const json& item : items) {
        const std::string image = item.value("image", "");
        images.push_back(image.empty() ? "item " + item.at("id").get<std::string>() : image);
        u.push_back(scoredFrom(item, "unsteered"));
        s.push_back(scoredFrom(item, "steered"));
        changed += item.at("unsteered").at("ids") != item.at("steered").at("ids");
        b += u.back().correct && !s.back().correct;
        c += !u.back().correct && s.back().correct;
        ++outcomes[item.at("outcome").get<std::string>()];
    }
    const auto mu = metricValues(metric, u), ms = metricValues(metric, s);
    int clusters = 0;
    const auto intervals = pairedBootstrap(metric, u, s, clusterIndices(images, &clusters));
    ordered_json unsteered, steered, difference;
    const std::vector<std::string> order = metricNames(metric);
    for (const std::string& name : order) {
        unsteered[name] = mu.at(name);
        steered[name] = ms.at(name);
        const Interval ci = intervals.count(name) ? intervals.at(name) : Interval();
        difference[name] = {{"value", ms.at(name) - mu.at(name)}, {"ci95", {ci.lo, ci.hi}}};
    }
    const double n = double(items.size());
    ordered_json summary = {
        {"kvsteer_version", KVSTEER_VERSION},
        {"items", int64_t(items.size())},
        {"metric", identity.metric},
        {"unsteered", unsteered},
        {"steered", steered},
        {"difference", difference},
        {"plan", identity.plan},
        {"mcnemar_p", mcnemarExactP(b, c)},
        {"mcnemar", "exact, item-level (discordant items counted one by one)"},
        {"discordant", {{"right_to_wrong", b}, {"wrong_to_right", c}}},
        {"changed_fraction", n > 0 ? double(changed) / n : 0.0},
        {"outcomes", outcomes},
        {"bootstrap", {{"resamples", kBootstrapResamples}, {"seed", kBootstrapSeed}, {"clustered_by", "image"}, {"clusters", clusters}}},
        {"hashes",
         {{"dataset", identity.datasetHash},
          {"model_config", identity.modelConfigHash},
          {"steering_spec", identity.steeringHash}}},
        {"dataset", identity.datasetPath},
        {"model_directory", identity.modelDirectory},
        {"max_new_tokens", identity.maxNewTokens},
        {"skipped", skipped},
        {"timings",
         {{"items_per_s", timings.seconds > 0 ? double(timings.itemsTimed) / timings.seconds : 0.0},
          {"prefill_ms", timings.prefillMs},
          {"decode_ms", timings.decodeMs},
          {"seconds", timings.seconds},
          {"items_timed", timings.itemsTimed}}},
    };
    if (!timings.perShard.is_null()) {
        summary["timings"]["per_shard"] = timings.perShard;
        summary["timings"]["note"] = "seconds, prefill_ms and decode_ms add the shards' own (their compute, however they were scheduled)";
    }
    return summary;
}

void writeSummaryFiles(const std::string& dir, const ordered_json& summary) {
    writeTextAtomically((fs::path(dir) / "summary.json").string(), summary.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    writeTextAtomically((fs::path(dir) / "summary.csv").string(), summaryCsv(summary));
    writeTextAtomically((fs::path(dir) / "metrics.svg").string(), metricsSvg(summary));
}

RunTimings runTimingsOf(const EvalTotals& totals, int64_t itemsTimed) {
    RunTimings t;
    t.seconds = totals.totalMs / 1000;
    t.prefillMs = totals.prefillMs;
    t.decodeMs = totals.decodeMs;
    t.itemsTimed = itemsTimed;
    return t;
}

void recordRunTimings(const std::string& dir, const RunTimings& run) {
    const std::string line = ordered_json{{"seconds", run.seconds}, {"items", run.itemsTimed}, {"prefill_ms", run.prefillMs}, {"decode_ms", run.decodeMs}}.dump() + "\n";
    std::FILE* f = std::fopen((fs::path(dir) / "runs.jsonl").c_str(), "ab");
    if (!f) throw Error("output folder " + dir + ": cannot write runs.jsonl");
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
}

RunTimings readRunTimings(const std::string& dir) {
    RunTimings total;
    const std::string path = (fs::path(dir) / "runs.jsonl").string();
    if (!fs::exists(path)) return total;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        try {
            const json j = json::parse(line);
            total.seconds += j.value("seconds", 0.0);
            total.itemsTimed += j.value("items", int64_t(0));
            total.prefillMs += j.value("prefill_ms", 0.0);
            total.decodeMs += j.value("decode_ms", 0.0);
        } catch (const json::exception&) {   // a torn last line of a killed run: its time is lost, not its items
        }
    }
    return total;
}

ordered_json mergeShards(const std::vector<std::string>& shardDirs, const std::string& out) {
    if (shardDirs.empty()) throw Error("eval-merge: no shard folders");
    std::vector<ShardFolder> shards;
    const RunIdentity first = readRunIdentity(shardDirs.front());
    for (const std::string& dir : shardDirs) {
        const RunIdentity id = readRunIdentity(dir);
        const std::vector<std::string> d = differences(first, id, false);
        if (!d.empty()) throw Error("eval-merge: " + dir + " is not a shard of the same run as " + shardDirs[0] + ": " + joinedProblems(d));
        shards.push_back({dir, id.shardIndex, id.shardItems});
    }
    ShardLineRules rules;   // one line per item, by its id
    rules.shardOf = [&](const json& line) { return int(stableHash(line.at("id").get<std::string>()) % uint64_t(first.shardCount)); };
    ShardLines all = gatherShardLines("eval-merge", shards, first.shardCount, rules);
    std::vector<json>& items = all.lines;
    std::sort(items.begin(), items.end(), [](const json& a, const json& b) { return a.at("index").get<int64_t>() < b.at("index").get<int64_t>(); });
    RunIdentity merged = first;
    merged.shardIndex = 0;
    merged.shardCount = 1;
    merged.shardItems = int64_t(items.size());
    const FolderLock lock(out);   // one writer: not two merges, nor a run, into one folder
    writeTextAtomically((fs::path(out) / "run.json").string(), identityJson(merged).dump(2) + "\n");
    std::string lines;
    for (const json& item : items) lines += item.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    writeTextAtomically((fs::path(out) / "items.jsonl").string(), lines);
    const ordered_json summary = summarize(merged, items, all.timings, all.skipped);
    writeSummaryFiles(out, summary);
    return summary;
}

} // namespace kvsteer
