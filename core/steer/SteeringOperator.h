#pragma once
// The steering operators, the ablate targets and their names: one list for the core, the CLI and
// the studio, which parse text into these types where it comes in (flags, JSON, widgets). Header
// only, with no ATen and no Qt, so the studio's plain-Qt panels can read it too (through
// kvsteer_core_words). What each operator does is in SteeringPlan.h.
#include "Error.h"

#include <array>
#include <string>
#include <utility>

namespace kvsteer {

enum class SteeringOperator { Add, NormPreserving, PreRope, Scale, Spotlight, Ablate };

// In the order people are offered them.
inline constexpr std::array<std::pair<SteeringOperator, const char*>, 6> kSteeringOperators = {{
    {SteeringOperator::Add, "add"},
    {SteeringOperator::NormPreserving, "norm"},
    {SteeringOperator::PreRope, "prerope"},
    {SteeringOperator::Scale, "scale"},
    {SteeringOperator::Spotlight, "spotlight"},
    {SteeringOperator::Ablate, "ablate"},
}};

inline std::string operatorName(SteeringOperator op) {
    for (const auto& [o, name] : kSteeringOperators)
        if (o == op) return name;
    return "?";
}

// Throws kvsteer::Error naming the known operators, after `where` (a file and field, a flag).
inline SteeringOperator parseOperator(const std::string& name, const std::string& where = "") {
    for (const auto& [o, n] : kSteeringOperators)
        if (name == n) return o;
    std::string known;
    for (const auto& [o, n] : kSteeringOperators) known += (known.empty() ? "" : ", ") + std::string(n);
    throw Error((where.empty() ? "" : where + ": ") + "operator '" + name + "' is not known (expected one of " + known + ")");
}

// add, norm and prerope move the cache along steering vectors; the others need none.
inline bool operatorNeedsVectors(SteeringOperator op) {
    return op == SteeringOperator::Add || op == SteeringOperator::NormPreserving || op == SteeringOperator::PreRope;
}

// What the ablate operator moves the painted positions towards.
enum class AblateTarget { Mean, Zero };

inline std::string ablateTargetName(AblateTarget target) { return target == AblateTarget::Zero ? "zero" : "mean"; }

// Throws kvsteer::Error naming the two targets, after `where`.
inline AblateTarget parseAblateTarget(const std::string& name, const std::string& where = "") {
    if (name == "mean") return AblateTarget::Mean;
    if (name == "zero") return AblateTarget::Zero;
    throw Error((where.empty() ? "" : where + ": ") + "ablate target '" + name + "' is not known (expected mean or zero)");
}

} // namespace kvsteer
