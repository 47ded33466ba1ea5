#pragma once
// Scoring an answer, and the metrics of a set of answers.
//   pope      the answer's yes/no, read the way POPE's own evaluation reads it: only the first
//             sentence (up to the first '.'), commas dropped, split on spaces; "no", "No" or "not"
//             among the words is no, anything else yes. Then, yes being the positive class:
//             accuracy (TP+TN)/n, precision TP/(TP+FP), recall TP/(TP+FN), F1 2PR/(P+R),
//             yes_ratio (TP+FP)/n. A ratio with a zero denominator is 0.
//   exact     the normalised answer equals one of the normalised references
//   contains  one of the normalised references occurs in the normalised answer, as whole words
//   chair     a caption against the item's "objects" (eval/Chair.h): right when it mentions no
//             object the image does not hold; chair_i, chair_s and recall over the set
// Normalising: lower case, punctuation to spaces, the articles a / an / the dropped, runs of
// spaces collapsed. exact and contains report accuracy only.
#include <map>
#include <string>
#include <vector>

namespace kvsteer {

enum class EvalMetric { Pope, Exact, Contains, Chair };
std::string evalMetricName(EvalMetric m);          // pope | exact | contains | chair
EvalMetric parseEvalMetric(const std::string& name);   // throws kvsteer::Error

bool popeSaysYes(const std::string& answer);
std::string normalizeAnswer(const std::string& text);
// Whether `answer` is right against `references` under `metric` (pope: the reference is yes/no;
// chair needs its table and is scored by eval/EvalRun.h's scoreAnswer instead: an Error here).
bool answerCorrect(EvalMetric metric, const std::string& answer, const std::vector<std::string>& references);

// One scored answer: what the metrics need.
struct ScoredAnswer {
    bool correct = false;
    bool saidYes = false;     // pope only
    bool labelYes = false;    // pope only
    // chair only: the caption's object mentions, the hallucinated ones, the image's objects and
    // how many of them it names
    int mentions = 0, hallucinated = 0, groundTruth = 0, recalled = 0;
};

// The metric values of a set of answers, by name (pope: accuracy, precision, recall, f1,
// yes_ratio; exact / contains: accuracy; chair: chair_i, chair_s, recall, accuracy).
std::map<std::string, double> metricValues(EvalMetric metric, const std::vector<ScoredAnswer>& answers);
// Their names in the order summaries list them.
std::vector<std::string> metricNames(EvalMetric metric);

} // namespace kvsteer
