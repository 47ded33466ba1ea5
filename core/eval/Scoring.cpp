#include "eval/Scoring.h"

#include "Error.h"

#include <cctype>
#include <sstream>

namespace kvsteer {

std::string evalMetricName(EvalMetric m) {
    switch (m) {
    case EvalMetric::Pope: return "pope";
    case EvalMetric::Exact: return "exact";
    case EvalMetric::Contains: return "contains";
    case EvalMetric::Chair: return "chair";
    }
    return "?";
}

EvalMetric parseEvalMetric(const std::string& name) {
    for (EvalMetric m : {EvalMetric::Pope, EvalMetric::Exact, EvalMetric::Contains, EvalMetric::Chair})
        if (evalMetricName(m) == name) return m;
    throw Error("metric '" + name + "' is not known (expected pope, exact, contains or chair)");
}

bool popeSaysYes(const std::string& answer) {
    std::string first = answer.substr(0, answer.find('.'));
    std::string words;
    for (char c : first)
        if (c != ',') words += c;
    std::istringstream in(words);
    for (std::string w; std::getline(in, w, ' ');)
        if (w == "no" || w == "No" || w == "not") return false;
    return true;
}

std::string normalizeAnswer(const std::string& text) {
    std::string spaced;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        spaced += std::ispunct(u) ? ' ' : char(std::tolower(u));
    }
    std::istringstream in(spaced);
    std::string out;
    for (std::string w; in >> w;) {
        if (w == "a" || w == "an" || w == "the") continue;
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
}

bool answerCorrect(EvalMetric metric, const std::string& answer, const std::vector<std::string>& references) {
    if (metric == EvalMetric::Chair) throw Error("chair scores a caption against its synonym table and objects (scoreAnswer)");
    if (metric == EvalMetric::Pope) return !references.empty() && popeSaysYes(answer) == (normalizeAnswer(references.front()) == "yes");
    const std::string a = normalizeAnswer(answer);
    for (const std::string& r : references) {
        const std::string n = normalizeAnswer(r);
        if (metric == EvalMetric::Exact && a == n) return true;
        if (metric == EvalMetric::Contains && !n.empty() && (" " + a + " ").find(" " + n + " ") != std::string::npos) return true;
    }
    return false;
}

std::map<std::string, double> metricValues(EvalMetric metric, const std::vector<ScoredAnswer>& answers) {
    const double n = double(answers.size());
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    double correct = 0, tp = 0, fp = 0, fn = 0;
    for (const ScoredAnswer& s : answers) {
        correct += s.correct;
        tp += s.saidYes && s.labelYes;
        fp += s.saidYes && !s.labelYes;
        fn += !s.saidYes && s.labelYes;
    }
    std::map<std::string, double> m{{"accuracy", ratio(correct, n)}};
    if (metric == EvalMetric::Chair) {   // summed over the captions, as chairValues does
        double mentions = 0, hallucinated = 0, withHallucination = 0, truth = 0, recalled = 0;
        for (const ScoredAnswer& s : answers) {
            mentions += s.mentions;
            hallucinated += s.hallucinated;
            withHallucination += s.hallucinated > 0;
            truth += s.groundTruth;
            recalled += s.recalled;
        }
        m["chair_i"] = ratio(hallucinated, mentions);
        m["chair_s"] = ratio(withHallucination, n);
        m["recall"] = ratio(recalled, truth);
    }
    if (metric != EvalMetric::Pope) return m;
    const double precision = ratio(tp, tp + fp), recall = ratio(tp, tp + fn);
    m["precision"] = precision;
    m["recall"] = recall;
    m["f1"] = ratio(2 * precision * recall, precision + recall);
    m["yes_ratio"] = ratio(tp + fp, n);
    return m;
}

} // namespace kvsteer

namespace kvsteer {

std::vector<std::string> metricNames(EvalMetric metric) {
    if (metric == EvalMetric::Pope) return {"accuracy", "precision", "recall", "f1", "yes_ratio"};
    if (metric == EvalMetric::Chair) return {"chair_i", "chair_s", "recall", "accuracy"};
    return {"accuracy"};
}

} // namespace kvsteer
