#pragma once
// A study's result files, from its summary (study/StudySummary.h):
//   summary.json    the summary as is
//   summary.csv     a row per plan x dataset x category (category "(all)" = the whole set)
//   frontier.json   the plans on the frontier, best target success last, with their settings
//   frontier.svg    every plan as a point (preservation across, target success up) with both
//                   95 % intervals, the frontier joined
//   grid.svg        per dataset, a strength (c_v) x layers heatmap of its headline number
//                   (success or preservation), one panel per vectors / operator / c_k
// Each is written atomically.
#include <nlohmann/json.hpp>

#include <string>

namespace kvsteer {

void writeStudyFiles(const std::string& dir, const nlohmann::ordered_json& summary);

std::string studySummaryCsv(const nlohmann::ordered_json& summary);
nlohmann::ordered_json studyFrontierJson(const nlohmann::ordered_json& summary);
std::string frontierSvg(const nlohmann::ordered_json& summary);
std::string gridSvg(const nlohmann::ordered_json& summary);

} // namespace kvsteer
