#include "study/StudySummary.h"

#include "Error.h"
#include "eval/PairedStatistics.h"
#include "eval/Scoring.h"
#include "study/Frontier.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace kvsteer {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const double kNaN = std::nan("");

// What the statistics read of one item line.
struct Row {
    size_t set = 0;                  // its dataset, as study.json lists them
    std::string image, category;
    bool hasTarget = false;
    ScoredAnswer u, s;               // correct, said_yes, label_yes, the chair counts
    bool uHit = false, sHit = false;
    double kl = kNaN, lpU = kNaN, lpS = kNaN;
    bool degenerate = false, changed = false;
};

double numberOr(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN; }

Row rowOf(const json& l) {
    Row r;
    r.image = l.value("image", "");
    if (r.image.empty()) r.image = "item " + l.at("id").get<std::string>();
    r.category = l.value("category", "");
    r.hasTarget = l.contains("target");
    for (auto [cond, score, hit] : {std::tuple{"unsteered", &r.u, &r.uHit}, std::tuple{"steered", &r.s, &r.sHit}}) {
        const json& c = l.at(cond);
        score->correct = c.at("correct").get<bool>();
        score->saidYes = c.value("said_yes", false);
        score->labelYes = l.value("label_yes", false);
        const json chair = c.value("chair", json::object());
        score->mentions = chair.value("mentions", 0);
        score->hallucinated = chair.value("hallucinated", 0);
        score->groundTruth = chair.value("ground_truth", 0);
        score->recalled = chair.value("recalled", 0);
        *hit = c.value("hits_target", false);
    }
    r.kl = numberOr(l, "first_step_kl");
    if (l.contains("target_logprob")) {
        r.lpU = numberOr(l["target_logprob"], "unsteered");
        r.lpS = numberOr(l["target_logprob"], "steered");
    }
    r.degenerate = l.value("outcome", "") == "degenerate";
    r.changed = l.at("unsteered").at("ids") != l.at("steered").at("ids");
    return r;
}

using Rows = std::vector<const Row*>;

double fraction(const Rows& rows, const std::function<bool(const Row&)>& yes, const std::function<bool(const Row&)>& counted = {}) {
    double n = 0, k = 0;
    for (const Row* r : rows)
        if (!counted || counted(*r)) {
            ++n;
            k += yes(*r);
        }
    return n > 0 ? k / n : kNaN;
}

double mean(const Rows& rows, const std::function<double(const Row&)>& value) {
    double n = 0, sum = 0;
    for (const Row* r : rows) {
        const double v = value(*r);
        if (std::isnan(v)) continue;
        ++n;
        sum += v;
    }
    return n > 0 ? sum / n : kNaN;
}

// The set's metric values for one condition.
std::map<std::string, double> metricOf(EvalMetric metric, const Rows& rows, bool steered) {
    std::vector<ScoredAnswer> answers;
    for (const Row* r : rows) answers.push_back(steered ? r->s : r->u);
    return metricValues(metric, answers);
}

// Statistics of a set of rows, all filled at once (one value each; the metric's values are
// computed once per resample for all its names).
using Statistics = std::function<void(const Rows&, std::vector<double>& values)>;

json valueJson(double v) { return std::isnan(v) ? json() : json(v); }

ordered_json withInterval(double value, const Interval& ci) {
    return {{"value", valueJson(value)}, {"ci95", {valueJson(ci.lo), valueJson(ci.hi)}}};
}

// The `count` statistics over `rows` with their intervals, resampling the rows' images.
std::vector<ordered_json> measure(const Rows& rows, size_t count, const Statistics& statistics) {
    std::vector<std::string> images;
    for (const Row* r : rows) images.push_back(r->image);
    Rows sample;
    const std::vector<Interval> ci = clusteredBootstrap(clusterIndices(images), count, [&](const std::vector<size_t>& idx, std::vector<double>& v) {
        sample.clear();
        for (size_t i : idx) sample.push_back(rows[i]);
        statistics(sample, v);
    });
    std::vector<double> values(count, kNaN);
    statistics(rows, values);
    std::vector<ordered_json> out;
    for (size_t k = 0; k < count; ++k) out.push_back(withInterval(values[k], ci[k]));
    return out;
}

// A degenerate steered answer ("blue blue blue blue") never counts as a success or as kept, even
// where the metric would read it so (contains finds "blue" in it; POPE reads no "no" as yes).
const auto kSuccess = [](const Rows& r) { return fraction(r, [](const Row& x) { return x.sHit && !x.degenerate; }); };
const auto kPreservation = [](const Rows& r) {
    return fraction(r, [](const Row& x) { return x.s.correct && !x.degenerate; }, [](const Row& x) { return x.u.correct; });
};

// The scores of one set of rows (a dataset, or one category of it) under a plan.
ordered_json setScores(const Rows& rows, EvalMetric metric, bool target, bool withMetrics) {
    // In order: each metric's steered - unsteered (withMetrics), success or preservation, the
    // first step's KL, the target's log-prob difference.
    const std::vector<std::string> names = metricNames(metric);
    const size_t metrics = withMetrics ? names.size() : 0;
    const std::vector<ordered_json> measured = measure(rows, metrics + 3, [&](const Rows& r, std::vector<double>& v) {
        if (withMetrics) {
            const auto mu = metricOf(metric, r, false), ms = metricOf(metric, r, true);
            for (size_t k = 0; k < metrics; ++k) v[k] = ms.at(names[k]) - mu.at(names[k]);
        }
        v[metrics] = target ? kSuccess(r) : kPreservation(r);
        v[metrics + 1] = mean(r, [](const Row& x) { return x.kl; });
        v[metrics + 2] = mean(r, [](const Row& x) { return x.lpS - x.lpU; });
    });
    std::set<std::string> images;
    for (const Row* r : rows) images.insert(r->image);
    ordered_json j = {{"items", int64_t(rows.size())}, {"clusters", int64_t(images.size())}};
    size_t k = 0;
    if (withMetrics) {
        ordered_json u, s, d;
        const auto mu = metricOf(metric, rows, false), ms = metricOf(metric, rows, true);
        for (const std::string& name : names) {
            u[name] = mu.at(name);
            s[name] = ms.at(name);
            d[name] = measured[k++];
        }
        j["unsteered"] = u;
        j["steered"] = s;
        j["difference"] = d;
    } else {
        j["unsteered_correct"] = fraction(rows, [](const Row& x) { return x.u.correct; });
        j["steered_correct"] = fraction(rows, [](const Row& x) { return x.s.correct; });
    }
    if (target) {
        j["success"] = measured[k++];
        j["success"]["unsteered"] = valueJson(fraction(rows, [](const Row& x) { return x.uHit; }));
    } else {
        j["preservation"] = measured[k++];
        j["preservation"]["base"] = int64_t(std::count_if(rows.begin(), rows.end(), [](const Row* x) { return x->u.correct; }));
    }
    j["first_step_kl"] = measured[k++];
    j["target_logprob_difference"] = measured[k++];
    j["degenerate_fraction"] = fraction(rows, [](const Row& x) { return x.degenerate; });
    j["changed_fraction"] = fraction(rows, [](const Row& x) { return x.changed; });
    int64_t b = 0, c = 0;
    for (const Row* r : rows) {
        b += r->u.correct && !r->s.correct;
        c += !r->u.correct && r->s.correct;
    }
    j["mcnemar_p"] = mcnemarExactP(b, c);
    j["discordant"] = {{"right_to_wrong", b}, {"wrong_to_right", c}};
    return j;
}

struct SetInfo {
    std::string name, role, metric;
};

} // namespace

std::vector<json> sortedStudyLines(const json& identity, std::vector<json> items) {
    std::map<std::string, size_t> order;
    for (const json& d : identity.at("datasets")) order.emplace(d.at("name").get<std::string>(), order.size());
    auto key = [&](const json& l) {
        const auto it = order.find(l.at("dataset").get<std::string>());
        return std::tuple(it == order.end() ? order.size() : it->second, l.at("index").get<int64_t>(), l.at("plan").get<int>());
    };
    std::stable_sort(items.begin(), items.end(), [&](const json& a, const json& b) { return key(a) < key(b); });
    return items;
}

ordered_json summarizeStudy(const json& identity, const std::vector<json>& plans, const std::vector<json>& lines, const RunTimings& timings,
                            const std::vector<json>& skipped) {
    std::vector<SetInfo> sets;
    for (const json& d : identity.at("datasets")) sets.push_back({d.at("name"), d.at("role"), d.at("metric")});
    // rows[plan][set]: the lines of that plan and set, in suite order.
    std::vector<Row> all;
    all.reserve(lines.size());
    for (const json& l : sortedStudyLines(identity, lines)) all.push_back(rowOf(l));
    std::vector<std::vector<Rows>> rows(plans.size(), std::vector<Rows>(sets.size()));
    std::map<std::string, size_t> setIndex;
    for (size_t k = 0; k < sets.size(); ++k) setIndex[sets[k].name] = k;
    std::set<std::string> images;
    const std::vector<json> sorted = sortedStudyLines(identity, lines);
    for (size_t i = 0; i < sorted.size(); ++i) {
        const size_t p = size_t(sorted[i].at("plan").get<int>());
        const auto set = setIndex.find(sorted[i].at("dataset").get<std::string>());
        if (p >= plans.size() || set == setIndex.end()) throw Error("study summary: item line " + sorted[i].at("id").dump() + " names a plan or dataset the study does not have");
        all[i].set = set->second;
        rows[p][set->second].push_back(&all[i]);
        images.insert(all[i].image);
    }
    ordered_json results = ordered_json::array();
    std::vector<FrontierPoint> points;
    for (size_t p = 0; p < plans.size(); ++p) {
        ordered_json perSet = ordered_json::array();
        for (size_t k = 0; k < sets.size(); ++k) {
            const bool target = sets[k].role == "target";
            ordered_json s = {{"dataset", sets[k].name}, {"role", sets[k].role}, {"metric", sets[k].metric}};
            s.update(setScores(rows[p][k], parseEvalMetric(sets[k].metric), target, true));
            std::map<std::string, Rows> byCategory;
            for (const Row* r : rows[p][k]) byCategory[r->category].push_back(r);
            ordered_json categories = ordered_json::array();
            for (const auto& [category, members] : byCategory) {
                ordered_json c = {{"category", category}};
                c.update(setScores(members, parseEvalMetric(sets[k].metric), target, false));
                categories.push_back(c);
            }
            s["categories"] = categories;
            perSet.push_back(s);
        }
        // The plan's two axes, over all its items: images resampled across the sets together.
        Rows planRows;
        for (const Rows& r : rows[p]) planRows.insert(planRows.end(), r.begin(), r.end());
        // Mean success over the target sets (v[0]) and mean preservation over the preserve sets (v[1]).
        const std::vector<ordered_json> axes = measure(planRows, 2, [&](const Rows& sample, std::vector<double>& v) {
            std::vector<Rows> bySet(sets.size());
            for (const Row* r : sample) bySet[r->set].push_back(r);
            double sum[2] = {0, 0}, n[2] = {0, 0};
            for (size_t k = 0; k < sets.size(); ++k) {
                const size_t axis = sets[k].role == "target" ? 0 : 1;
                const double x = axis == 0 ? kSuccess(bySet[k]) : kPreservation(bySet[k]);
                if (std::isnan(x)) continue;
                sum[axis] += x;
                ++n[axis];
            }
            for (size_t axis = 0; axis < 2; ++axis) v[axis] = n[axis] > 0 ? sum[axis] / n[axis] : kNaN;
        });
        points.push_back({axes[0]["value"].is_null() ? kNaN : axes[0]["value"].get<double>(),
                          axes[1]["value"].is_null() ? kNaN : axes[1]["value"].get<double>()});
        results.push_back({{"plan", plans[p].at("index")},
                           {"label", plans[p].at("label")},
                           {"hash", plans[p].value("hash", "")},
                           {"settings", plans[p]},
                           {"target_success", axes[0]},
                           {"preservation", axes[1]},
                           {"datasets", perSet}});
    }
    ordered_json frontier = ordered_json::array();
    for (int p : paretoFrontier(points)) frontier.push_back(p);
    return {{"kvsteer_version", KVSTEER_VERSION},
            {"suite", identity.at("suite")},
            {"datasets", identity.at("datasets")},
            {"model", identity.at("model")},
            {"max_new_tokens", identity.at("max_new_tokens")},
            {"plans", int64_t(plans.size())},
            {"item_lines", int64_t(lines.size())},
            {"clusters", int64_t(images.size())},
            {"bootstrap", {{"resamples", kBootstrapResamples}, {"seed", kBootstrapSeed}, {"clustered_by", "image"}}},
            {"mcnemar", "exact, item-level (discordant items counted one by one)"},
            {"preservation_means", "of the items the unsteered model answered right, the fraction still right steered"},
            {"frontier", frontier},
            {"results", results},
            {"skipped", skipped},
            {"timings",
             {{"seconds", timings.seconds},
              {"items_timed", timings.itemsTimed},
              {"items_per_s", timings.seconds > 0 ? double(timings.itemsTimed) / timings.seconds : 0.0},
              {"item_plans_per_s", timings.seconds > 0 ? double(timings.itemsTimed * int64_t(plans.size())) / timings.seconds : 0.0},
              {"prefill_ms", timings.prefillMs},
              {"decode_ms", timings.decodeMs},
              {"per_shard", timings.perShard}}}};
}

} // namespace kvsteer
