#pragma once
// Scoring an answer, and the metrics of a set of answers.
//   pope      the answer's yes/no, read the way POPE's own evaluation reads it: only the first
//             sentence (up to the first '.'), commas dropped, split on spaces; "no", "No" or "not"
//             among the words is no, anything else yes. Then, yes being the positive class:
//             accuracy (TP+TN)/n, precision TP/(TP+FP), recall TP/(TP+FN), F1 2PR/(P+R),
//             yes_ratio (TP+FP)/n. A ratio with a zero denominator is 0.
//   exact     the normalised answer equals one of the normalised references
//   contains  one of the normalised references occurs in the normalised answer, as whole words
// Normalising: lower case, punctuation to spaces, the articles a / an / the dropped, runs of
// spaces collapsed. exact and contains report accuracy only.
#include <map>
#include <string>
#include <vector>

namespace kvsteer {

enum class EvalMetric { Pope, Exact, Contains };
std::string evalMetricName(EvalMetric m);          // pope | exact | contains
EvalMetric parseEvalMetric(const std::string& name);   // throws kvsteer::Error

bool popeSaysYes(const std::string& answer);
std::string normalizeAnswer(const std::string& text);
// Whether `answer` is right against `references` under `metric` (pope: the reference is yes/no).
bool answerCorrect(EvalMetric metric, const std::string& answer, const std::vector<std::string>& references);

// One scored answer: what the metrics need.
struct ScoredAnswer {
    bool correct = false;
    bool saidYes = false;     // pope only
    bool labelYes = false;    // pope only
};

// The metric values of a set of answers, by name (pope: accuracy, precision, recall, f1,
// yes_ratio; exact / contains: accuracy).
std::map<std::string, double> metricValues(EvalMetric metric, const std::vector<ScoredAnswer>& answers);

} // namespace kvsteer
