#pragma once
// The plans of a study: a grid of steering settings, every combination one plan, each resolved
// (what the vector file suggests and the defaults filled in) and hashed.
//
// A grid is given per axis, as flags (--vectors A.st,B.st --cv 1,2,4 --ck 0,1 --layers
// all,early --operator add,norm) or as a suite's "plans" list, whose entries name the same axes
// ({"vectors": "a.safetensors", "cv": [1, 2, 4], "layers": "early"}): a list is an axis, a single
// value one setting. In a grid c_k and c_v are one strength each (all layers alike); a layer axis
// item is one of all / early / middle / late / A-B. Axes the grid leaves out take the vector
// file's suggestion, then the defaults, exactly as `eval` would.
#include "steer/PlanOptions.h"
#include "steer/SteeringVectors.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class Model;

// The axes as given. An empty axis is left to the vector file, then the defaults.
struct PlanGrid {
    std::vector<std::string> vectors;     // files; empty = no vectors (operators that need none)
    std::vector<SteeringOperator> operators;
    std::vector<double> ck, cv;
    std::vector<std::string> layers;      // all | early | middle | late | A-B | A
    std::vector<int> heads;               // one head set for every plan; empty = the file's (all)
    bool propagate = false;
    AblateTarget ablateTo = AblateTarget::Mean;
};

// One plan, resolved.
struct StudyPlan {
    int index = 0;
    std::string vectorsPath;              // "" = none
    std::string vectorsHash;              // of the file's bytes
    std::string layersLabel;              // "all", "early", "3-5", or the file's suggestion
    PlanOptions options;                  // resolved: operator, layers, c_k, c_v set
    std::shared_ptr<const SteeringVectors> vectors;
    SteeringFileInfo vectorsInfo;
    std::string hash;                     // of json() without the hash itself
    std::string label;                    // for people: "red-to-blue add c_k 1 c_v 2 all"
    nlohmann::ordered_json json() const;  // a line of plans.jsonl (options resolved: the operator set)
};

// The axes as typed, each a comma-separated list ("a.safetensors,b.safetensors", "add,norm",
// "0,1", "1,2,4", "all,early"); "" leaves that axis to the vector file. What the CLI's flags and
// the studio's Study tab both read. Throws kvsteer::Error naming the axis for a bad number or an
// unknown operator.
PlanGrid planGridFromLists(const std::string& vectors, const std::string& operators, const std::string& ck, const std::string& cv,
                           const std::string& layers);

// The grid from a suite's "plans" list ({"vectors", "operator", "ck", "cv", "layers", "heads",
// "propagate", "ablate_to"}); relative vector paths are the suite folder's. Throws kvsteer::Error
// naming "plans[i].field" and what was expected.
std::vector<PlanGrid> planGridsFromJson(const nlohmann::json& plans, const std::string& baseDir, const std::string& file);

// Every combination of every grid, in order (vectors, operator, layers, c_k, c_v; the last axis
// varies fastest), each resolved against its vector file and checked against `model`. Files are
// loaded once. Throws kvsteer::Error naming the plan and what does not fit the model, before
// anything is run; two plans that resolve to the same settings are an error too.
std::vector<StudyPlan> expandPlans(const std::vector<PlanGrid>& grids, const Model& model);

} // namespace kvsteer
