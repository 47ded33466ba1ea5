#include "study/StudyFiles.h"

#include "io/TextFile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string number(const json& v, int digits = 3) {
    if (!v.is_number()) return "";
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(digits);
    s << v.get<double>();
    return s.str();
}

std::string csvText(const std::string& t) {
    if (t.find_first_of(",\"\n") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string xml(const std::string& t) {
    std::string out;
    for (char c : t) out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : std::string(1, c);
    return out;
}

// A set's (or category's) headline: success for a target set, preservation for a preserve set.
const ordered_json& headline(const ordered_json& scores) { return scores.contains("success") ? scores["success"] : scores["preservation"]; }

double valueOr(const json& j, double fallback) { return j.is_number() ? j.get<double>() : fallback; }

} // namespace

std::string studySummaryCsv(const ordered_json& summary) {
    std::ostringstream o;
    o << "plan,label,dataset,role,metric,category,items,clusters,unsteered_correct,steered_correct,headline,headline_value,headline_ci95_lo,"
         "headline_ci95_hi,first_step_kl,target_logprob_difference,degenerate_fraction,changed_fraction,mcnemar_p\n";
    for (const ordered_json& plan : summary.at("results"))
        for (const ordered_json& set : plan.at("datasets")) {
            auto row = [&](const std::string& category, const ordered_json& s, double uCorrect, double sCorrect) {
                const ordered_json& h = headline(s);
                o << plan.at("plan").get<int>() << "," << csvText(plan.at("label")) << "," << csvText(set.at("dataset")) << "," << set.at("role").get<std::string>()
                  << "," << set.at("metric").get<std::string>() << "," << csvText(category) << "," << s.at("items").get<int64_t>() << ","
                  << s.at("clusters").get<int64_t>() << "," << uCorrect << "," << sCorrect << ","
                  << (s.contains("success") ? "success" : "preservation") << "," << number(h["value"], 6) << "," << number(h["ci95"][0], 6) << ","
                  << number(h["ci95"][1], 6) << "," << number(s["first_step_kl"]["value"], 6) << "," << number(s["target_logprob_difference"]["value"], 6)
                  << "," << s.at("degenerate_fraction").get<double>() << "," << s.at("changed_fraction").get<double>() << ","
                  << s.at("mcnemar_p").get<double>() << "\n";
            };
            row("(all)", set, valueOr(set.at("unsteered").value("accuracy", json()), NAN), valueOr(set.at("steered").value("accuracy", json()), NAN));
            for (const ordered_json& c : set.at("categories"))
                row(c.at("category"), c, valueOr(c["unsteered_correct"], NAN), valueOr(c["steered_correct"], NAN));
        }
    return o.str();
}

ordered_json studyFrontierJson(const ordered_json& summary) {
    ordered_json list = ordered_json::array();
    for (const ordered_json& p : summary.at("frontier")) {
        const ordered_json& plan = summary.at("results").at(p.get<size_t>());
        list.push_back({{"plan", plan.at("plan")},
                        {"label", plan.at("label")},
                        {"target_success", plan.at("target_success")},
                        {"preservation", plan.at("preservation")},
                        {"settings", plan.at("settings")}});
    }
    return {{"axes", "target_success: mean success over the target sets; preservation: mean preservation over the preserve sets"},
            {"frontier", list}};
}

std::string frontierSvg(const ordered_json& summary) {
    const int left = 70, top = 50, size = 420, width = left + size + 300, height = top + size + 70;
    auto px = [&](double v) { return left + int(std::lround(std::clamp(v, 0.0, 1.0) * size)); };
    auto py = [&](double v) { return top + size - int(std::lround(std::clamp(v, 0.0, 1.0) * size)); };
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"22\" font-size=\"14\">" << xml(summary.at("suite").at("name").get<std::string>()) << ": "
      << summary.at("plans").get<int64_t>() << " plans, " << summary.at("clusters").get<int64_t>() << " images (95 % intervals resample images)</text>\n"
      << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << size << "\" height=\"" << size << "\" fill=\"none\" stroke=\"#444\"/>\n";
    for (int t = 0; t <= 4; ++t) {
        const double v = t / 4.0;
        o << "<text x=\"" << px(v) << "\" y=\"" << top + size + 16 << "\" text-anchor=\"middle\">" << number(v, 2) << "</text>\n"
          << "<text x=\"" << left - 6 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">" << number(v, 2) << "</text>\n";
    }
    o << "<text x=\"" << left + size / 2 << "\" y=\"" << top + size + 36 << "\" text-anchor=\"middle\">preservation (mean over preserve sets)</text>\n"
      << "<text x=\"18\" y=\"" << top + size / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << top + size / 2
      << ")\">target success (mean over target sets)</text>\n";
    const ordered_json& results = summary.at("results");
    std::set<size_t> onFrontier;
    std::string path;
    for (const ordered_json& f : summary.at("frontier")) {
        const ordered_json& p = results.at(f.get<size_t>());
        onFrontier.insert(f.get<size_t>());
        path += (path.empty() ? "M" : " L") + std::to_string(px(p["preservation"]["value"])) + " " + std::to_string(py(p["target_success"]["value"]));
    }
    if (!path.empty()) o << "<path d=\"" << path << "\" fill=\"none\" stroke=\"#d93025\" stroke-width=\"2\"/>\n";
    int legend = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const ordered_json& p = results[i];
        const json &t = p["target_success"], &s = p["preservation"];
        if (!t["value"].is_number() || !s["value"].is_number()) continue;
        const int x = px(s["value"]), y = py(t["value"]);
        const char* color = onFrontier.count(i) ? "#d93025" : "#1a73e8";
        if (t["ci95"][0].is_number())
            o << "<line x1=\"" << x << "\" y1=\"" << py(t["ci95"][0]) << "\" x2=\"" << x << "\" y2=\"" << py(t["ci95"][1]) << "\" stroke=\"" << color
              << "\" stroke-opacity=\"0.5\"/>\n";
        if (s["ci95"][0].is_number())
            o << "<line x1=\"" << px(s["ci95"][0]) << "\" y1=\"" << y << "\" x2=\"" << px(s["ci95"][1]) << "\" y2=\"" << y << "\" stroke=\"" << color
              << "\" stroke-opacity=\"0.5\"/>\n";
        o << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"4\" fill=\"" << color << "\"/>\n"
          << "<text x=\"" << x + 6 << "\" y=\"" << y - 6 << "\" font-size=\"10\">" << p["plan"].get<int>() << "</text>\n";
        if (legend < 30)
            o << "<text x=\"" << left + size + 20 << "\" y=\"" << top + 12 + 14 * legend++ << "\" font-size=\"10\" fill=\"" << color << "\">"
              << p["plan"].get<int>() << ": " << xml(p["label"].get<std::string>()) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
}

std::string gridSvg(const ordered_json& summary) {
    // A matrix of panels: a row per dataset, a column per vectors / operator / c_k / mode; inside a
    // panel, layers down and c_v across, each cell the set's headline under that plan.
    std::vector<std::string> groups, layers, sets;
    std::vector<double> strengths;
    std::map<std::tuple<std::string, std::string, std::string, double>, json> value;   // (set, group, layers, c_v)
    auto addOnce = [](auto& list, const auto& v) {
        if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
    };
    std::map<std::string, std::string> setTitle;
    for (const ordered_json& plan : summary.at("results")) {
        const ordered_json& st = plan.at("settings");
        const std::string vectors = st.value("vectors", "");
        const std::string group = (vectors.empty() ? "no vectors" : fs::path(vectors).stem().string()) + " · " + st.value("operator", "") +
                                  " · c_k " + number(st.at("ck").at(0), 2) + " · " + st.value("mode", "");
        const std::string layer = st.value("layers", "all");
        const double cv = st.at("cv").at(0).get<double>();
        addOnce(groups, group);
        addOnce(layers, layer);
        addOnce(strengths, cv);
        for (const ordered_json& set : plan.at("datasets")) {
            const std::string name = set.at("dataset");
            addOnce(sets, name);
            setTitle[name] = set.at("role").get<std::string>() + ", " + (set.contains("success") ? "success" : "preservation");
            value[{name, group, layer, cv}] = headline(set)["value"];
        }
    }
    std::sort(strengths.begin(), strengths.end());
    const int cell = 40, left = 150, top = 70, gap = 24;
    const int panelW = std::max(int(strengths.size()) * cell + 60, 260), panelH = int(layers.size()) * cell + 18;
    const int width = left + int(groups.size()) * (panelW + gap), height = top + int(sets.size()) * (panelH + gap) + 20;
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"20\" font-size=\"14\">" << xml(summary.at("suite").at("name").get<std::string>())
      << ": each set's success (target) or preservation (preserve), c_v across, layers down</text>\n";
    for (size_t g = 0; g < groups.size(); ++g)
        o << "<text x=\"" << left + int(g) * (panelW + gap) << "\" y=\"" << top - 26 << "\" font-size=\"12\">" << xml(groups[g]) << "</text>\n";
    for (size_t k = 0; k < sets.size(); ++k) {
        const int y0 = top + int(k) * (panelH + gap);
        o << "<text x=\"10\" y=\"" << y0 + 24 << "\" font-size=\"12\">" << xml(sets[k]) << "</text>\n"
          << "<text x=\"10\" y=\"" << y0 + 40 << "\" fill=\"#555\">" << xml(setTitle[sets[k]]) << "</text>\n";
        for (size_t g = 0; g < groups.size(); ++g) {
            const int x0 = left + int(g) * (panelW + gap) + 50;
            if (k == 0)
                for (size_t c = 0; c < strengths.size(); ++c)
                    o << "<text x=\"" << x0 + int(c) * cell + cell / 2 << "\" y=\"" << top - 8 << "\" text-anchor=\"middle\">c_v "
                      << strengths[c] << "</text>\n";
            for (size_t r = 0; r < layers.size(); ++r) {
                const int y = y0 + int(r) * cell;
                o << "<text x=\"" << x0 - 6 << "\" y=\"" << y + cell / 2 + 4 << "\" text-anchor=\"end\">" << xml(layers[r]) << "</text>\n";
                for (size_t c = 0; c < strengths.size(); ++c) {
                    const auto it = value.find({sets[k], groups[g], layers[r], strengths[c]});
                    const bool has = it != value.end() && it->second.is_number();
                    const double v = has ? it->second.get<double>() : 0;
                    const int shade = int(std::lround(255 - 200 * std::clamp(v, 0.0, 1.0)));   // white (0) to blue (1)
                    o << "<rect x=\"" << x0 + int(c) * cell << "\" y=\"" << y << "\" width=\"" << cell - 2 << "\" height=\"" << cell - 2
                      << "\" fill=\"" << (has ? "rgb(" + std::to_string(shade) + "," + std::to_string(shade) + ",255)" : std::string("#eee")) << "\"/>\n"
                      << "<text x=\"" << x0 + int(c) * cell + cell / 2 - 1 << "\" y=\"" << y + cell / 2 + 3 << "\" text-anchor=\"middle\" fill=\""
                      << (v > 0.6 ? "white" : "black") << "\">" << (has ? number(it->second, 2) : "–") << "</text>\n";
                }
            }
        }
    }
    o << "</svg>\n";
    return o.str();
}

void writeStudyFiles(const std::string& dir, const ordered_json& summary) {
    auto file = [&](const char* name) { return (fs::path(dir) / name).string(); };
    writeTextAtomically(file("summary.json"), summary.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    writeTextAtomically(file("summary.csv"), studySummaryCsv(summary));
    writeTextAtomically(file("frontier.json"), studyFrontierJson(summary).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    writeTextAtomically(file("frontier.svg"), frontierSvg(summary));
    writeTextAtomically(file("grid.svg"), gridSvg(summary));
}

} // namespace kvsteer
