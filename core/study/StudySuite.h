#pragma once
// A study's suite: the datasets a steering setting is judged on, each with its role.
//   {"name": "demo-study",
//    "datasets": [
//      {"name": "colour", "data": "colour.jsonl", "role": "target", "metric": "contains"},
//      {"name": "others", "data": "others.jsonl", "role": "preserve", "metric": "pope", "mask": "rect:0,0,3,3"},
//      {"name": "caption", "data": "caption.jsonl", "role": "preserve", "metric": "chair", "synonyms": "shapes"}],
//    "plans": [{"vectors": "v.safetensors", "cv": [1, 2, 4]}]}          (optional: study/StudyPlan.h)
// Roles:
//   target    steering should move the answer to the item's "target" (every item needs one);
//             success = the steered answer matches it under the set's metric
//   preserve  the answer should stay right; preservation = of the items the unsteered model got
//             right, the fraction still right steered
// Metrics: pope, exact, contains (eval/Scoring.h) and chair (eval/Chair.h: items need "objects";
// an answer is right when it mentions no object the image does not hold). "mask" is the cells of
// the set's items that carry no mask or box of their own. Paths are relative to the suite file.
// The datasets keep eval's JSONL formats (eval/EvalDataset.h).
#include "eval/EvalDataset.h"
#include "eval/Scoring.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

struct SynonymTable;

enum class StudyRole { Target, Preserve };
std::string studyRoleName(StudyRole role);

struct StudyDataset {
    std::string name;
    StudyRole role = StudyRole::Preserve;
    EvalMetric metric = EvalMetric::Exact;
    std::string mask;                              // the set's default cells ("" = the plan's)
    std::string synonyms;                          // chair: the table's name or file
    std::shared_ptr<const SynonymTable> table;     // chair: loaded
    EvalDataset data;
};

struct StudySuite {
    std::string path, name, hash;                  // hash: the suite file's and every dataset's
    std::vector<StudyDataset> datasets;
    nlohmann::json plans;                          // the "plans" list, or null
};

// Reads and checks the suite and its datasets. Every problem found is listed, one line each,
// naming the file, the field or line, and what was expected; then it throws kvsteer::Error with
// them all (with skipBad, a dataset's bad lines are recorded as eval records them). `chairTablesDir`
// holds the shipped synonym tables (resources/chair); `synonyms`, when given (a shipped table's
// name or a file), is the table of every chair set instead of the suite's.
StudySuite loadStudySuite(const std::string& path, const std::string& imagesDir, bool skipBad, const std::string& chairTablesDir,
                          const std::string& synonyms = "");

// Whether an answer matches the item's target under the set's metric (chair: the target's words
// occur in the caption).
bool studyAnswerHitsTarget(const StudyDataset& set, const std::string& answer, const EvalItem& item);

} // namespace kvsteer
